//! `[[flows]]`, checked: each entry expanded into its instances (`count`), with endpoints,
//! direction, timing, rates and a port of its own.

use std::time::Duration;

use cg_types::Bitrate;
use toml::Spanned;

use super::error::{Ctx, ScenarioError};
use super::hosts::Host;
use super::schema::{EcnSetting, FlowKind, RawFlow, TcpCc, WebRtcMode};

/// Which bottleneck a flow crosses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Sender host → receiver host (the forward bottleneck).
    Forward,
    /// Receiver host → sender host (the reverse link).
    Reverse,
}

/// One flow instance, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowSpec {
    /// Unique name.
    pub name: String,
    /// Traffic kind.
    pub kind: FlowKind,
    /// Index into [`crate::scenario::Scenario::hosts`].
    pub from: usize,
    /// Index into [`crate::scenario::Scenario::hosts`].
    pub to: usize,
    /// Which bottleneck.
    pub direction: Direction,
    /// Start, from run start.
    pub start: Duration,
    /// Stop, from run start.
    pub stop: Duration,
    /// On/off periods.
    pub on_off: Option<(Duration, Duration)>,
    /// TCP congestion control.
    pub cc: TcpCc,
    /// TCP ECN negotiation.
    pub tcp_ecn: bool,
    /// Rate steps (UDP rate; TCP application cap); empty = unlimited TCP.
    pub rate_steps: Vec<(Duration, Bitrate)>,
    /// UDP payload bytes.
    pub size: u32,
    /// UDP ECN.
    pub ecn: EcnSetting,
    /// Destination port (unique per flow).
    pub port: u16,
    /// cg flows: the controller passed to cg-send/cg-recv `--cc` (default `gcc`).
    pub controller: String,
    /// cg flows: extra cg-send arguments.
    pub send_args: Vec<String>,
    /// cg flows: extra cg-recv arguments.
    pub recv_args: Vec<String>,
    /// cg flows: plain RTP, or WebRTC mode with its viewer.
    pub webrtc: WebRtcMode,
}

/// First destination port; flow i uses `BASE_PORT + i`.
pub const BASE_PORT: u16 = 5201;

pub(super) fn flow_instances(
    cx: &Ctx<'_>,
    idx: usize,
    f: &Spanned<RawFlow>,
    hosts: &[Host],
    duration: Duration,
    out: &mut Vec<FlowSpec>,
) -> Result<(), ScenarioError> {
    let r = f.get_ref();
    let field = |k: &str| format!("flows[{idx}].{k}");
    let find = |h: &Option<Spanned<String>>, key: &str| -> Result<usize, ScenarioError> {
        let h = h.as_ref().ok_or_else(|| {
            cx.err(
                f.span(),
                &field(key),
                format!("flow `{}` has no `{key}` endpoint", r.name.get_ref()),
            )
        })?;
        hosts
            .iter()
            .position(|x| &x.name == h.get_ref())
            .ok_or_else(|| {
                let names: Vec<_> = hosts.iter().map(|h| h.name.as_str()).collect();
                cx.err(
                    h.span(),
                    &field(key),
                    format!("no host `{}` (hosts: {})", h.get_ref(), names.join(", ")),
                )
            })
    };
    let from = find(&r.from, "from")?;
    let to = find(&r.to, "to")?;
    let direction = match (hosts[from].is_receiver, hosts[to].is_receiver) {
        (false, true) => Direction::Forward,
        (true, false) => Direction::Reverse,
        _ => {
            return Err(cx.err(
                r.to.as_ref().map_or(f.span(), Spanned::span),
                &field("to"),
                "a flow must cross the bottleneck: from a sender (s*) to a receiver (r*) or back",
            ));
        }
    };
    let stop = r.stop.as_ref().map_or(duration, |s| s.get_ref().0);
    if stop <= r.start.0 {
        return Err(cx.err(
            r.stop.as_ref().map_or(f.span(), Spanned::span),
            &field("stop"),
            "stop must be after start",
        ));
    }
    if stop > duration {
        return Err(cx.err(
            r.stop.as_ref().map_or(f.span(), Spanned::span),
            &field("stop"),
            "stop is after the end of the run",
        ));
    }
    let on_off = match (&r.on, &r.off) {
        (None, None) => None,
        (Some(on), Some(off)) => {
            if on.get_ref().0.is_zero() {
                return Err(cx.err(on.span(), &field("on"), "must be above zero"));
            }
            Some((on.get_ref().0, off.get_ref().0))
        }
        (Some(s), None) | (None, Some(s)) => {
            return Err(cx.err(s.span(), &field("on"), "give both `on` and `off`"));
        }
    };
    let mut rate_steps = Vec::new();
    if let Some(rate) = &r.rate {
        rate_steps.push((Duration::ZERO, rate.get_ref().0));
    }
    if let Some(steps) = &r.rate_steps {
        for s in steps {
            rate_steps.push((s.at.0, s.rate.0));
        }
        if rate_steps.windows(2).any(|w| w[1].0 <= w[0].0) {
            return Err(cx.err(f.span(), &field("rate_steps"), "step times must increase"));
        }
    }
    let kind = *r.kind.get_ref();
    if kind == FlowKind::Udp && rate_steps.is_empty() {
        return Err(cx.err(f.span(), &field("rate"), "a UDP flow needs a `rate`"));
    }
    let size = r.size.as_ref().map_or(1200, |s| *s.get_ref());
    if !(16..=1472).contains(&size) {
        let span = r.size.as_ref().map_or(f.span(), Spanned::span);
        return Err(cx.err(span, &field("size"), "UDP payload must be 16 to 1472 bytes"));
    }
    if r.webrtc != WebRtcMode::Off && kind != FlowKind::Cg {
        return Err(cx.err(
            f.span(),
            &field("webrtc"),
            "only cg flows have a WebRTC mode",
        ));
    }
    let count = *r.count.get_ref();
    if count == 0 || count > 1000 {
        return Err(cx.err(r.count.span(), &field("count"), "must be 1 to 1000"));
    }
    for i in 0..count {
        let name = if count == 1 {
            r.name.get_ref().clone()
        } else {
            format!("{}-{}", r.name.get_ref(), i + 1)
        };
        if out.iter().any(|o: &FlowSpec| o.name == name) {
            return Err(cx.err(
                r.name.span(),
                &field("name"),
                format!("duplicate flow name `{name}`"),
            ));
        }
        let port = BASE_PORT + out.len() as u16;
        let chromium_pair = |o: &FlowSpec| {
            o.kind != FlowKind::Tcp && o.from == from && o.to == to && o.direction == direction
        };
        if (r.webrtc.chromium_views() && (count > 1 || out.iter().any(chromium_pair)))
            || out
                .iter()
                .any(|o| o.webrtc.chromium_views() && chromium_pair(o) && kind != FlowKind::Tcp)
        {
            return Err(cx.err(
                f.span(),
                &field("webrtc"),
                "a Chromium viewer's flow must be the only UDP flow between its two hosts \
                 (Chromium picks its own port, so the metrics tell its flow by the host pair)",
            ));
        }
        out.push(FlowSpec {
            name,
            kind,
            from,
            to,
            direction,
            start: r.start.0,
            stop,
            on_off,
            cc: r.cc.unwrap_or_default(),
            tcp_ecn: r.tcp_ecn,
            rate_steps: rate_steps.clone(),
            size,
            ecn: r.ecn,
            port,
            controller: r.controller.clone().unwrap_or_else(|| "gcc".to_owned()),
            send_args: r.send_args.clone(),
            recv_args: r.recv_args.clone(),
            webrtc: r.webrtc,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::testing::{OK, parse};

    #[test]
    fn flow_without_endpoints_is_rejected() {
        let e = parse(&OK.replace("from = \"s1\"\n", "")).unwrap_err();
        assert_eq!(e.field, "flows[0].from", "{e}");
        assert_eq!(e.line, 7, "{e}");
    }

    #[test]
    fn unknown_host_is_rejected() {
        let e = parse(&OK.replace("to = \"r1\"", "to = \"r7\"")).unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (11, "flows[0].to"), "{e}");
    }

    #[test]
    fn count_expands_to_named_instances_with_unique_ports() {
        let s = parse(&OK.replace("rate = \"2Mbit\"", "rate = \"2Mbit\"\ncount = 3")).unwrap();
        let names: Vec<_> = s.flows.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["u-1", "u-2", "u-3"]);
        assert_eq!(s.flows[2].port, BASE_PORT + 2);
    }
}
