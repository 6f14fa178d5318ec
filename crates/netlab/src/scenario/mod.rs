//! Scenarios: TOML files describing topology, bottleneck, traffic and metrics.
//!
//! [`Scenario::load`] parses and checks a file completely before anything is created; every
//! problem is a [`ScenarioError`] naming the file, line, column and field. Shipped presets
//! (papers' experiments) are in [`presets`].
//!
//! The file is read into [`schema`]'s raw types, then each section is checked into its
//! checked type, one module each: the hosts (`hosts`), each link's capacity, impairments
//! and queue (`link`, `capacity`, `impair`, `qdisc`), the flows (`flows`) and the load
//! (`load`); `error` places every problem in the file.

mod capacity;
mod error;
mod flows;
mod hosts;
mod impair;
mod link;
mod load;
pub mod presets;
mod qdisc;
pub mod schema;
#[cfg(test)]
mod testing;
pub mod units;

use std::path::Path;
use std::time::Duration;

use cg_types::Bitrate;

pub use capacity::MAX_OUTAGE;
pub(crate) use error::line_col;
use error::{Ctx, key_before};
pub use error::{Origin, ScenarioError};
pub use flows::{BASE_PORT, Direction, FlowSpec};
pub use hosts::Host;
pub use impair::MAX_DELAY;
pub use link::LinkSpec;
pub use load::Load;
use schema::RawScenario;
pub use schema::{Backend, EcnSetting, Fallback, FlowKind, TcpCc, WebRtcMode};

/// A checked scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Run length.
    pub duration: Duration,
    /// Seed.
    pub seed: u64,
    /// Backend.
    pub backend: Backend,
    /// Kernel fallback policy.
    pub fallback: Fallback,
    /// Hosts: senders first, then receivers.
    pub hosts: Vec<Host>,
    /// Forward bottleneck.
    pub forward: LinkSpec,
    /// Reverse link.
    pub reverse: LinkSpec,
    /// Flow instances.
    pub flows: Vec<FlowSpec>,
    /// Metric bin.
    pub bin: Duration,
    /// Warm-up excluded from statistics.
    pub warmup: Duration,
    /// Where statistics end (`[metrics] until`, default the run's end).
    pub until: Duration,
    /// CPU load beside the endpoints (`[load]`).
    pub load: Option<Load>,
    /// The TOML text it came from (copied into the output directory).
    pub source: String,
}

impl Scenario {
    /// Reads and checks a scenario file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            file: file.clone(),
            line: 0,
            column: 0,
            field: String::new(),
            message: format!("cannot read: {e}"),
        })?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let default_name = path
            .file_stem()
            .map_or("scenario".into(), |s| s.to_string_lossy().into_owned());
        Scenario::parse(&text, &file, &default_name, &base)
    }

    /// Parses and checks scenario text; `file` names it in errors, `base` resolves trace paths.
    pub fn parse(
        text: &str,
        file: &str,
        default_name: &str,
        base: &Path,
    ) -> Result<Scenario, ScenarioError> {
        let cx = Ctx { file, text };
        let raw: RawScenario = toml::from_str(text).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            let field = key_before(text, span.start);
            cx.err(span, &field, e.message().trim().to_owned())
        })?;
        build(&cx, raw, default_name, base)
    }
}

fn build(
    cx: &Ctx<'_>,
    raw: RawScenario,
    default_name: &str,
    base: &Path,
) -> Result<Scenario, ScenarioError> {
    let duration = raw.duration.get_ref().0;
    if duration.is_zero() {
        return Err(cx.err(raw.duration.span(), "duration", "must be above zero"));
    }
    let hosts = hosts::hosts(cx, &raw.topology)?;
    // Links.
    let forward = link::link(
        cx,
        raw.forward.get_ref(),
        raw.forward.span(),
        "forward",
        base,
    )?;
    let reverse = match &raw.reverse {
        Some(r) => link::link(cx, r.get_ref(), r.span(), "reverse", base)?,
        None => (
            LinkSpec::wire(Bitrate::mbps(1000), forward.0.delay.base),
            Vec::new(),
        ),
    };
    // Flows.
    let mut flows = Vec::new();
    for (idx, f) in raw.flows.iter().enumerate() {
        flows::flow_instances(cx, idx, f, &hosts, duration, &mut flows)?;
    }
    if flows.len() > 2000 {
        return Err(cx.err(0..0, "flows", "more than 2000 flow instances"));
    }
    let forward = link::with_flow_rules(forward, "forward", &flows)?;
    let reverse = link::with_flow_rules(reverse, "reverse", &flows)?;
    let until = match &raw.metrics.until {
        None => duration,
        Some(u) => {
            let u_d = u.get_ref().0;
            if u_d > duration || u_d <= raw.metrics.warmup.0 {
                return Err(cx.err(
                    u.span(),
                    "metrics.until",
                    format!(
                        "must lie after the warm-up ({}) and within the run ({})",
                        humantime::format_duration(raw.metrics.warmup.0),
                        humantime::format_duration(duration)
                    ),
                ));
            }
            u_d
        }
    };
    let bin = raw.metrics.bin.get_ref().0;
    if bin < Duration::from_millis(10) {
        return Err(cx.err(
            raw.metrics.bin.span(),
            "metrics.bin",
            "must be at least 10ms",
        ));
    }
    let load = match &raw.load {
        Some(l) => Some(load::load(cx, l.get_ref())?),
        None => None,
    };
    Ok(Scenario {
        name: raw.name.clone().unwrap_or_else(|| default_name.to_owned()),
        description: raw.description.clone(),
        duration,
        seed: raw.seed,
        backend: raw.backend,
        fallback: raw.kernel_fallback,
        hosts,
        forward,
        reverse,
        flows,
        bin,
        warmup: raw.metrics.warmup.0,
        until,
        load,
        source: cx.text.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use testing::{OK, parse};

    #[test]
    fn a_valid_scenario_is_checked_into_flows_and_hosts() {
        let s = parse(OK).unwrap();
        assert_eq!(s.hosts.len(), 2);
        assert_eq!(s.flows[0].direction, Direction::Forward);
        assert_eq!(s.flows[0].stop, Duration::from_secs(10));
        assert_eq!(s.forward.delay.base, Duration::from_millis(25));
        assert_eq!(s.reverse.delay.base, Duration::from_millis(25));
    }

    #[test]
    fn negative_rate_names_its_line() {
        let e = parse(&OK.replace("\"1Mbit\"", "\"-1Mbit\"")).unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (4, "capacity"), "{e}");
        assert!(e.message.contains("negative"), "{e}");
    }

    #[test]
    fn unknown_field_is_named() {
        let e = parse(&OK.replace("delay =", "dleay =")).unwrap_err();
        assert_eq!(e.line, 5, "{e}");
        assert!(e.message.contains("dleay"), "{e}");
    }

    #[test]
    fn the_metrics_window_may_end_before_the_run() {
        let s = parse(&format!("{OK}[metrics]\nwarmup = \"2s\"\nuntil = \"8s\"\n")).unwrap();
        assert_eq!(
            (s.warmup, s.until),
            (Duration::from_secs(2), Duration::from_secs(8))
        );
        assert_eq!(parse(OK).unwrap().until, parse(OK).unwrap().duration);
        for bad in ["until = \"11s\"", "warmup = \"5s\"\nuntil = \"5s\""] {
            let e = parse(&format!("{OK}[metrics]\n{bad}\n")).unwrap_err();
            assert_eq!(e.field, "metrics.until", "{e}");
        }
    }
}
