//! A scenario in simulated time (`netlab reproduce --sim`): the same controllers (cg-cc), the
//! same bottleneck (cg-link, built from the scenario exactly as the emulator builds it), the
//! model encoder's frame sizes (RFC 8593, `cg_video_model`) and cg-cc's simulated
//! TCP — no namespaces, sockets or processes, so a 400 s scenario runs in seconds.
//!
//! The run writes what a namespace run writes (`raw/bottleneck.log` in the forwarder's record
//! format, `raw/flows.json`, `raw/run.json`, `raw/cg-send-<flow>.jsonl`), and
//! [`crate::report::finish`] turns it into the same metrics, CSVs, plots and `summary.json`
//! ([`crate::report::run_simulated`] does both); the backend says `simulated`.
//!
//! What a scenario may use here:
//! - flows of kind `cg` (GCC-REMB, GCC, SCReAM; their `send_args` give `--start-bitrate`,
//!   `--min-bitrate`, `--max-bitrate`, `--fps`, `--key-interval`, `--scream-variant`, for
//!   the size profile
//!   `--pattern camera|game`; GCC's `--gcc-*` settings ([`SIM_GCC_ARGS`]) are read where the
//!   real programs take them — `recv_args` for GCC-REMB, `send_args` for send-side GCC — and
//!   refused on the other side, as cg-send and cg-recv refuse them; `--gcc-variant`, which
//!   with GCC-REMB both programs take, must then be the same in both);
//! - `tcp` (CUBIC, Reno, or BBR v1 as the kernel's `tcp_bbr.c`, with `start`, `stop`,
//!   `on`/`off` periods and `rate`/`rate_steps` as an application limit);
//! - `udp` (constant bit rate with its `rate`/`rate_steps`, `size`, `ecn`, `start`, `stop`);
//! - in either direction: a flow from a receiver host to a sender host crosses the reverse
//!   link, and its ACKs or feedback the forward one.
//!
//! Refused with the reason: WebRTC flows, a `cg` flow that stops before the end.

use std::io::Write as _;
use std::net::IpAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use cg_cc::ControllerKind;
use cg_cc::gcc::GccTuning;
use cg_cc::sim::{
    self, AnyReceiver, AnySender, CbrConfig, EncoderConfig, ReceiverConfig, SenderConfig, TcpConfig,
};
use cg_link::sim::Sim;
use cg_link::{FlowId, Link, Protocol};
use cg_types::{Bitrate, Ecn};

use crate::emu::record::{Dir, FlowEntry};
use crate::runner::RunInfo;
use crate::scenario::{Direction, FlowKind, FlowSpec, Scenario, TcpCc, WebRtcMode};
use crate::{Error, Result};

/// The cg-send options the simulator reads from `send_args` (others are ignored: the
/// picture, the codec and the like have no meaning for the model encoder).
pub const SIM_SEND_ARGS: [&str; 7] = [
    "--scream-variant",
    "--start-bitrate",
    "--min-bitrate",
    "--max-bitrate",
    "--fps",
    "--key-interval",
    "--pattern",
];

/// GCC's settings (cg-send's and cg-recv's `--gcc-*` options), read from the side whose
/// program runs GCC's delay-based estimator.
pub const SIM_GCC_ARGS: [&str; 8] = [
    "--gcc-variant",
    "--gcc-threshold",
    "--gcc-ku",
    "--gcc-kd",
    "--gcc-static-gamma-ms",
    "--gcc-kalman-q",
    "--gcc-arrival-burst",
    "--gcc-filter",
];

/// cg-send's defaults for what `send_args` may set.
struct CgArgs {
    start: Bitrate,
    min: Bitrate,
    max: Bitrate,
    fps: u32,
    key_interval: u32,
    camera_like: bool,
    /// GCC's settings, from the side that runs the estimator.
    gcc: GccTuning,
    /// SCReAM's published variant (`--scream-variant`).
    scream_variant: cg_cc::scream::ScreamVariant,
}

/// `(option, value)` pairs of `args` for the options in `known` (`--x v` or `--x=v`).
fn options<'a>(args: &'a [String], known: &[&str]) -> Vec<(&'a str, String)> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(k) = it.next() {
        let (k, inline) = match k.split_once('=') {
            Some((k, v)) => (k, Some(v.to_owned())),
            None => (k.as_str(), None),
        };
        if known.contains(&k) {
            let v = inline.unwrap_or_else(|| it.next().cloned().unwrap_or_default());
            out.push((k, v));
        }
    }
    out
}

/// GCC's `--gcc-*` settings in `args`.
fn gcc_tuning(f: &FlowSpec, args: &[String]) -> Result<GccTuning> {
    let mut t = GccTuning::default();
    for (k, v) in options(args, &SIM_GCC_ARGS) {
        let bad = || Error::NotAvailable(format!("flow {}: {k} {v:?} does not parse", f.name));
        let num = || v.parse::<f64>().map_err(|_| bad());
        match k {
            "--gcc-variant" => t.variant = Some(v.parse().map_err(|_| bad())?),
            "--gcc-threshold" => t.threshold = Some(v.parse().map_err(|_| bad())?),
            "--gcc-ku" => t.k_up = Some(num()?),
            "--gcc-kd" => t.k_down = Some(num()?),
            "--gcc-static-gamma-ms" => t.static_gamma_ms = Some(num()?),
            "--gcc-filter" => t.filter = Some(v.parse().map_err(|_| bad())?),
            "--gcc-arrival-burst" => {
                t.arrival_burst = Some(cg_cc::gcc::parse_on_off(&v).map_err(|_| bad())?)
            }
            _ => t.kalman_q = Some(num()?),
        }
    }
    Ok(t)
}

fn cg_args(f: &FlowSpec, kind: ControllerKind) -> Result<CgArgs> {
    // Where the real programs take GCC's settings, and where they refuse them.
    let (here, there, program, side) = if kind.delay_estimator_at_receiver() {
        (&f.recv_args, &f.send_args, "cg-send", "recv")
    } else {
        (&f.send_args, &f.recv_args, "cg-recv", "send")
    };
    let (mine, theirs) = (gcc_tuning(f, here)?, gcc_tuning(f, there)?);
    // The variant: in REMB mode both programs run part of it and take it (the simulator
    // builds both ends from one config, so they must agree); send-side, cg-recv refuses it.
    let refused = if kind.delay_estimator_at_receiver() {
        !theirs.estimator_settings().is_default() || theirs.variant != mine.variant
    } else {
        !theirs.is_default()
    };
    if refused {
        return Err(Error::NotAvailable(format!(
            "flow {}: {program} refuses these --gcc-* settings with controller {kind}: they \
             belong to the {side} args{}",
            f.name,
            if kind.delay_estimator_at_receiver() {
                " (--gcc-variant to both, the same)"
            } else {
                ""
            }
        )));
    }
    let mut a = CgArgs {
        start: Bitrate::kbps(300),
        min: Bitrate::kbps(50),
        max: Bitrate::mbps(5),
        fps: 30,
        key_interval: 3000,
        camera_like: false,
        gcc: mine,
        scream_variant: cg_cc::scream::ScreamVariant::Cg,
    };
    let bad = |what: &str, v: &str| {
        Error::NotAvailable(format!(
            "flow {}: {what} {v:?} in send_args does not parse",
            f.name
        ))
    };
    for (k, v) in options(&f.send_args, &SIM_SEND_ARGS) {
        let rate = |v: &str| v.parse::<Bitrate>().map_err(|_| bad(k, v));
        match k {
            "--start-bitrate" => a.start = rate(&v)?,
            "--min-bitrate" => a.min = rate(&v)?,
            "--max-bitrate" => a.max = rate(&v)?,
            "--fps" => a.fps = v.parse().map_err(|_| bad(k, &v))?,
            "--key-interval" => a.key_interval = v.parse().map_err(|_| bad(k, &v))?,
            "--scream-variant" => a.scream_variant = v.parse().map_err(|_| bad(k, &v))?,
            _ => a.camera_like = matches!(v.as_str(), "camera" | "game"),
        }
    }
    if kind != ControllerKind::Scream && a.scream_variant != cg_cc::scream::ScreamVariant::Cg {
        return Err(Error::NotAvailable(format!(
            "flow {}: cg-send refuses --scream-variant with controller {kind}",
            f.name
        )));
    }
    Ok(a)
}

/// One pair to add at `at` (from the run's start): its scenario flow, its 5-tuple, and how
/// to make it.
struct Planned {
    at: Duration,
    flow: usize,
    id: FlowId,
    /// From a receiver host to a sender host: across the reverse link.
    reversed: bool,
    make: Make,
}

enum Make {
    Cg(Box<dyn Fn(Instant) -> Result<(AnySender, AnyReceiver)>>),
    Tcp(TcpConfig),
    Cbr(CbrConfig),
}

fn unsupported(f: &FlowSpec, why: &str) -> Error {
    Error::NotAvailable(format!(
        "flow {} cannot run in simulated time: {why}",
        f.name
    ))
}

fn five_tuple(sc: &Scenario, f: &FlowSpec, sub: u16, proto: Protocol) -> FlowId {
    FlowId {
        src: IpAddr::V4(sc.hosts[f.from].addr),
        dst: IpAddr::V4(sc.hosts[f.to].addr),
        src_port: 40_000u16
            .wrapping_add(f.port)
            .wrapping_add(sub.wrapping_mul(97)),
        dst_port: f.port,
        protocol: proto,
    }
}

/// Whether `sc` can run in simulated time (the reason when not), without running it.
pub fn check(sc: &Scenario) -> Result<()> {
    plan(sc).map(|_| ())
}

fn plan(sc: &Scenario) -> Result<Vec<Planned>> {
    if sc.load.is_some() {
        return Err(Error::NotAvailable(
            "[load] needs real processes: CPU load has no meaning in simulated time".into(),
        ));
    }
    let mut out = Vec::new();
    for (i, f) in sc.flows.iter().enumerate() {
        let reversed = f.direction == Direction::Reverse;
        let seed = sc.seed.wrapping_mul(1000).wrapping_add(i as u64);
        if f.webrtc != WebRtcMode::Off {
            return Err(unsupported(
                f,
                "WebRTC flows need a browser or the WebRTC stack",
            ));
        }
        match f.kind {
            FlowKind::Cg => {
                if f.stop < sc.duration {
                    return Err(unsupported(f, "a cg flow that stops before the end"));
                }
                let kind = ControllerKind::from_name(&f.controller)
                    .map_err(|e| unsupported(f, &e.to_string()))?;
                let a = cg_args(f, kind)?;
                // Wrong GCC settings are refused here, before anything runs.
                kind.tuned_config(a.start, a.min, a.max, &a.gcc)
                    .map_err(|e| unsupported(f, &format!("controller: {e}")))?;
                let ecn = f.ecn.ecn();
                let make = move |now: Instant| -> Result<(AnySender, AnyReceiver)> {
                    let fps = a.fps.max(1);
                    let base = if a.camera_like {
                        EncoderConfig::camera()
                    } else {
                        EncoderConfig::default()
                    };
                    let encoder = EncoderConfig {
                        fps: f64::from(fps),
                        min_rate: Bitrate::kbps(10),
                        max_rate: Bitrate::mbps(10_000),
                        key_frame_interval: (a.key_interval > 0).then(|| {
                            Duration::from_secs_f64(f64::from(a.key_interval) / f64::from(fps))
                        }),
                        seed,
                        ..base
                    };
                    let config: Box<dyn cg_cc::ControllerConfig> = match kind {
                        ControllerKind::Scream => {
                            Box::new(a.scream_variant.config(&cg_cc::scream::ScreamConfig {
                                start_bitrate: a.start,
                                min_bitrate: a.min,
                                max_bitrate: a.max,
                                ecn,
                                frame_period: Duration::from_secs(1) / fps,
                                ..cg_cc::scream::ScreamConfig::default()
                            }))
                        }
                        k => k
                            .tuned_config(a.start, a.min, a.max, &a.gcc)
                            .map_err(|e| Error::NotAvailable(format!("controller: {e}")))?,
                    };
                    let err =
                        |e: cg_cc::ConfigError| Error::NotAvailable(format!("controller: {e}"));
                    let controller = config.build(now).map_err(err)?;
                    let estimator = config.build_receive_side(now).map_err(err)?;
                    let sender = SenderConfig {
                        encoder,
                        ecn,
                        ..SenderConfig::default()
                    };
                    let (tx, rx) = sim::pair(
                        sender,
                        ReceiverConfig::default(),
                        controller,
                        estimator,
                        now,
                    );
                    Ok((tx.into(), rx.into()))
                };
                out.push(Planned {
                    at: f.start,
                    flow: i,
                    id: five_tuple(sc, f, 0, Protocol::UDP),
                    reversed,
                    make: Make::Cg(Box::new(make)),
                });
            }
            FlowKind::Tcp => {
                let cc = match f.cc {
                    TcpCc::Cubic => cg_cc::sim::TcpCc::Cubic,
                    TcpCc::Reno => cg_cc::sim::TcpCc::Reno,
                    TcpCc::Bbr => cg_cc::sim::TcpCc::Bbr,
                };
                // Each on period is a connection of its own, as the runner opens them.
                let periods: Vec<(Duration, Duration)> = match f.on_off {
                    None => vec![(f.start, f.stop)],
                    Some((on, off)) if !(on + off).is_zero() => {
                        let mut v = Vec::new();
                        let mut t = f.start;
                        while t < f.stop {
                            v.push((t, (t + on).min(f.stop)));
                            t += on + off;
                        }
                        v
                    }
                    Some(_) => return Err(unsupported(f, "on and off are both zero")),
                };
                for (k, (from, to)) in periods.into_iter().enumerate() {
                    let rate_limit = f
                        .rate_steps
                        .iter()
                        .map(|&(at, r)| (at.saturating_sub(from), r))
                        .collect();
                    let cfg = TcpConfig {
                        cc,
                        ecn: if f.tcp_ecn { Ecn::Ect0 } else { Ecn::NotEct },
                        stop: Some(to.saturating_sub(from).max(Duration::from_millis(1))),
                        rate_limit,
                        seed: seed.wrapping_add(u64::try_from(k).unwrap_or(0) << 32),
                        ..TcpConfig::default()
                    };
                    cfg.validate().map_err(|e| unsupported(f, &e.to_string()))?;
                    let sub = u16::try_from(k).unwrap_or(u16::MAX);
                    out.push(Planned {
                        at: from,
                        flow: i,
                        id: five_tuple(sc, f, sub, Protocol::TCP),
                        reversed,
                        make: Make::Tcp(cfg),
                    });
                }
            }
            FlowKind::Udp => {
                // The scenario's steps count from the run's start; the sender is created at
                // its start time.
                // Steps before the start collapse into the last of them.
                let mut rate: Vec<(Duration, cg_types::Bitrate)> = Vec::new();
                for &(at, r) in &f.rate_steps {
                    let at = at.saturating_sub(f.start);
                    if rate.last().is_some_and(|l| l.0 == at) {
                        rate.pop();
                    }
                    rate.push((at, r));
                }
                let cfg = CbrConfig {
                    rate,
                    size: cg_types::DataSize::bytes(f.size as u64 + 28),
                    ecn: f.ecn.ecn(),
                    start: Duration::ZERO,
                    stop: Some(f.stop.saturating_sub(f.start).max(Duration::from_millis(1))),
                };
                cfg.validate().map_err(|e| unsupported(f, &e.to_string()))?;
                out.push(Planned {
                    at: f.start,
                    flow: i,
                    id: five_tuple(sc, f, 0, Protocol::UDP),
                    reversed,
                    make: Make::Cbr(cfg),
                });
            }
        }
    }
    out.sort_by_key(|p| p.at);
    Ok(out)
}

/// Runs `sc` in simulated time into `out`: its `scenario.toml` and, in `raw/`, what a
/// namespace run leaves there.
pub fn run(sc: &Scenario, out: &Path) -> Result<()> {
    let plan = plan(sc)?;
    let raw = out.join("raw");
    std::fs::create_dir_all(&raw).map_err(|e| Error::output(&raw, e))?;
    let write = |name: &str, bytes: &[u8]| -> Result<()> {
        let p = out.join(name);
        std::fs::write(&p, bytes).map_err(|e| Error::output(p, e))
    };
    write("scenario.toml", sc.source.as_bytes())?;

    let start = Instant::now();
    let link = |spec, seed, what| -> Result<Link<sim::SimPacket>> {
        let mut cfg = crate::emu::linkcfg::link_config(spec, seed, what)?;
        cfg.event_limit = None;
        Link::new(cfg).map_err(|e| Error::NotAvailable(format!("{what} link: {e}")))
    };
    let mut s: Sim<AnySender, AnyReceiver> = Sim::new(
        link(&sc.forward, sc.seed, "forward")?,
        link(&sc.reverse, sc.seed.wrapping_add(1), "reverse")?,
        start,
    );
    // Pair index → (scenario flow, its 5-tuple).
    let mut pairs: Vec<(usize, FlowId)> = Vec::new();
    for p in plan {
        s.run_until(start + p.at);
        let now = s.now();
        let (tx, rx) = match p.make {
            Make::Cg(make) => make(now)?,
            Make::Tcp(cfg) => {
                let (tx, rx) = sim::tcp_pair(cfg, now);
                (tx.into(), rx.into())
            }
            Make::Cbr(cfg) => {
                let (tx, rx) = sim::cbr_pair(cfg, now);
                (tx.into(), rx.into())
            }
        };
        let added = if p.reversed {
            s.add_reversed_pair_with_flow(tx, rx, p.id)
        } else {
            s.add_pair_with_flow(tx, rx, p.id)
        };
        added.ok_or_else(|| Error::Process(format!("two simulated pairs share {:?}", p.id)))?;
        pairs.push((p.flow, p.id));
    }
    s.run_until(start + sc.duration);

    // The flow table: entry 2i is pair i's data (on the forward link, or the reverse one for
    // a reversed pair), 2i+1 its ACKs or feedback.
    let mut table = Vec::new();
    for (i, (_, id)) in pairs.iter().enumerate() {
        let index = u16::try_from(2 * i).unwrap_or(u16::MAX);
        let (data, back) = if s.is_reversed(i) {
            (Dir::Reverse, Dir::Forward)
        } else {
            (Dir::Forward, Dir::Reverse)
        };
        table.push(FlowEntry {
            index,
            dir: data,
            src: id.src,
            dst: id.dst,
            sport: id.src_port,
            dport: id.dst_port,
            proto: id.protocol.0,
        });
        let r = id.reversed();
        table.push(FlowEntry {
            index: index.saturating_add(1),
            dir: back,
            src: r.src,
            dst: r.dst,
            sport: r.src_port,
            dport: r.dst_port,
            proto: r.protocol.0,
        });
    }
    write(
        "raw/flows.json",
        serde_json::to_string(&table)
            .expect("the flow table serialises")
            .as_bytes(),
    )?;
    let by_id: std::collections::HashMap<FlowId, u16> = pairs
        .iter()
        .enumerate()
        .flat_map(|(i, (_, id))| {
            let e = u16::try_from(2 * i).unwrap_or(u16::MAX);
            [(*id, e), (id.reversed(), e.saturating_add(1))]
        })
        .collect();
    let log_path = raw.join("bottleneck.log");
    let file =
        std::fs::File::create(&log_path).map_err(|e| Error::io("create bottleneck.log", e))?;
    let mut log = std::io::BufWriter::new(file);
    for (dir, events) in [
        (Dir::Forward, s.forward().events()),
        (Dir::Reverse, s.reverse().events()),
    ] {
        for ev in events.iter() {
            if let Some(r) = crate::emu::forwarder::record_of(ev, dir, start, &by_id) {
                r.write_to(&mut log)
                    .map_err(|e| Error::io("write bottleneck.log", e))?;
            }
        }
    }
    log.flush()
        .map_err(|e| Error::io("write bottleneck.log", e))?;

    // cg-send's statistics, as the real sender writes them (target and RTT per sample).
    for (i, (flow, _)) in pairs.iter().enumerate() {
        let Some(tx) = s.sender(i).media() else {
            continue;
        };
        let mut text = String::new();
        for smp in tx.samples() {
            let line = serde_json::json!({
                "mono_ns": smp.time.saturating_duration_since(start).as_nanos() as u64,
                "target_bps": smp.stats.target.as_bps_f64(),
                "rtt_ms": smp.stats.rtt.map(|d| d.as_secs_f64() * 1e3),
                "extra": {},
            });
            text.push_str(&line.to_string());
            text.push('\n');
        }
        write(
            &format!("raw/cg-send-{}.jsonl", sc.flows[*flow].name),
            text.as_bytes(),
        )?;
    }
    // The TCP senders' samples, as the kernel generator writes its `TCP_INFO` samples
    // (`t_s,conn,rtt_ms,cwnd,bytes_acked,retrans`; the last two are not modelled and left
    // empty): the metrics take the flows' RTT from them.
    let mut tcp_logs: std::collections::BTreeMap<usize, String> = Default::default();
    for (i, (flow, _)) in pairs.iter().enumerate() {
        let Some(tx) = s.sender(i).tcp() else {
            continue;
        };
        let text = tcp_logs
            .entry(*flow)
            .or_insert_with(|| "t_s,conn,rtt_ms,cwnd,bytes_acked,retrans\n".to_owned());
        let conn = pairs[..=i].iter().filter(|(f, _)| f == flow).count();
        let mss = tx.config().mss.as_bytes_f64();
        for smp in tx.samples() {
            let Some(srtt) = smp.srtt else {
                continue;
            };
            text.push_str(&format!(
                "{:.3},{conn},{:.3},{:.0},,\n",
                smp.time.saturating_duration_since(start).as_secs_f64(),
                srtt.as_secs_f64() * 1e3,
                smp.cwnd.as_bytes_f64() / mss,
            ));
        }
    }
    for (flow, text) in tcp_logs {
        write(
            &format!("raw/send-{}.csv", sc.flows[flow].name),
            text.as_bytes(),
        )?;
    }
    let rtt = (sc.forward.delay.base + sc.reverse.delay.base).as_secs_f64() * 1e3;
    let info = RunInfo {
        t0_ns: 0,
        backend: "simulated".into(),
        backend_note: Some(
            "simulated time: cg-cc's endpoints (model encoder, simulated TCP) through cg-link; \
             no namespaces, so no RTT check (the measured RTT is the configured one)"
                .into(),
        ),
        kernel_qdiscs: Vec::new(),
        rtt_expected_ms: rtt,
        rtt_measured_ms: rtt,
        rtt_min_ms: rtt,
        tun_drops: [0, 0],
        udp_rcvbuf_errors: 0,
        prefix: String::new(),
        setup_s: 0.0,
    };
    write(
        "raw/run.json",
        serde_json::to_string_pretty(&info)
            .expect("run info serialises")
            .as_bytes(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::run_simulated;
    use crate::scenario::Scenario;

    fn scenario(text: &str) -> Scenario {
        Scenario::parse(text, "t.toml", "t", Path::new(".")).unwrap_or_else(|e| panic!("{e}"))
    }

    const GCC_VS_CUBIC: &str = r#"
name = "t"
duration = "40s"
[forward]
capacity = "2Mbit"
delay = "25ms"
qdisc = { kind = "droptail", limit = "300ms" }
[reverse]
capacity = "100Mbit"
delay = "25ms"
[metrics]
warmup = "10s"
[[flows]]
name = "cg"
kind = "cg"
controller = "gcc"
from = "s1"
to = "r1"
send_args = ["--start-bitrate", "300k", "--max-bitrate", "2M"]
[[flows]]
name = "tcp"
kind = "tcp"
cc = "cubic"
from = "s1"
to = "r1"
start = "20s"
rate = "500k"
"#;

    #[test]
    fn a_scenario_runs_in_simulated_time_and_reports_like_a_namespace_run() {
        let dir = std::env::temp_dir().join(format!("netlab-sim-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let sc = scenario(GCC_VS_CUBIC);
        let t = Instant::now();
        let summary = run_simulated(&sc, &dir).unwrap();
        assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
        assert_eq!(summary.run.backend, "simulated");
        let m = &summary.metrics;
        let (cg, tcp) = (&m.flows[0], &m.flows[1]);
        // GCC alone to 20 s, then a TCP flow held to 500 kbit/s by its application.
        assert!(
            cg.throughput_mbps > 1.0 && cg.throughput_mbps < 2.0,
            "{}",
            cg.throughput_mbps
        );
        let tcp_from_20 = tcp.delivered_bytes as f64 * 8.0 / 20.0 / 1e6;
        assert!(
            (tcp_from_20 - 0.5).abs() < 0.1,
            "TCP {tcp_from_20} Mbit/s under a 500k limit"
        );
        assert!(m.link.utilisation > 0.8, "U {}", m.link.utilisation);
        assert!(cg.qdelay_ms.n > 1000 && cg.rtt_ms.n > 100);
        for f in ["summary.json", "flow-cg.csv", "link.csv", "rate.png"] {
            assert!(dir.join(f).exists(), "{f}");
        }
        // `[metrics] until` ends the statistics before the run: GCC alone, 10–20 s.
        let alone = scenario(
            &GCC_VS_CUBIC.replace("warmup = \"10s\"", "warmup = \"10s\"\nuntil = \"20s\""),
        );
        let _ = std::fs::remove_dir_all(&dir);
        let m = run_simulated(&alone, &dir).unwrap().metrics;
        assert_eq!(m.window_s, (10.0, 20.0));
        assert_eq!(m.flows[1].delivered_bytes, 0, "the TCP flow starts at 20 s");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn what_has_no_model_is_refused_with_the_reason() {
        let webrtc = GCC_VS_CUBIC.replace(
            "controller = \"gcc\"",
            "controller = \"gcc\"\nwebrtc = \"cg\"",
        );
        let e = plan(&scenario(&webrtc)).err().unwrap().to_string();
        assert!(e.contains("flow cg") && e.contains("WebRTC"), "{e}");
        let bad = GCC_VS_CUBIC.replace("\"--max-bitrate\", \"2M\"", "\"--max-bitrate\", \"lots\"");
        let e = plan(&scenario(&bad)).err().unwrap().to_string();
        assert!(e.contains("--max-bitrate") && e.contains("lots"), "{e}");
        let loaded = format!("{GCC_VS_CUBIC}\n[load]\n");
        let e = plan(&scenario(&loaded)).err().unwrap().to_string();
        assert!(e.contains("[load]"), "{e}");
    }

    #[test]
    fn bbr_udp_and_reverse_flows_run_and_are_counted_as_in_namespaces() {
        // GCC forward; a 400 kbit/s UDP flow forward from 10 s; a BBR download on a 2 Mbit/s
        // reverse path from 20 s, which the GCC flow's feedback shares.
        let text = GCC_VS_CUBIC
            .replace("[reverse]\ncapacity = \"100Mbit\"", "[reverse]\ncapacity = \"2Mbit\"\nqdisc = { kind = \"droptail\", limit = \"100ms\" }")
            .replace(
                "cc = \"cubic\"\nfrom = \"s1\"\nto = \"r1\"\nstart = \"20s\"\nrate = \"500k\"",
                "cc = \"bbr\"\nfrom = \"r1\"\nto = \"s1\"\nstart = \"20s\"",
            )
            + "[[flows]]\nname = \"cbr\"\nkind = \"udp\"\nrate = \"400k\"\nsize = 972\nfrom = \"s1\"\nto = \"r1\"\nstart = \"10s\"\n";
        let sc = scenario(&text);
        let p = plan(&sc).unwrap();
        assert_eq!(
            p.iter().map(|p| (p.flow, p.reversed)).collect::<Vec<_>>(),
            [(0, false), (2, false), (1, true)]
        );
        let dir = std::env::temp_dir().join(format!("netlab-sim-r-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let m = run_simulated(&sc, &dir).unwrap().metrics;
        std::fs::remove_dir_all(&dir).ok();
        let (cg, bbr, cbr) = (&m.flows[0], &m.flows[1], &m.flows[2]);
        // 400 kbit/s of 1000-byte datagrams from 10 s: 30 s of it, all delivered.
        let cbr_mbps = cbr.delivered_bytes as f64 * 8.0 / 30.0 / 1e6;
        assert!((cbr_mbps - 0.4).abs() < 0.01, "UDP {cbr_mbps} Mbit/s");
        // The BBR download is counted on the reverse link and takes most of it.
        let bbr_mbps = bbr.delivered_bytes as f64 * 8.0 / 20.0 / 1e6;
        assert!(bbr_mbps > 1.5 && bbr_mbps < 2.0, "BBR {bbr_mbps} Mbit/s");
        // GCC still gets the rest of the forward link, its feedback delayed by BBR's queue.
        assert!(cg.throughput_mbps > 1.0, "GCC {}", cg.throughput_mbps);
        assert!(cg.rtt_ms.max > 80.0, "GCC RTT max {} ms", cg.rtt_ms.max);
        // The TCP flow's RTT comes from its sender's samples, as from the kernel's TCP_INFO.
        assert!(
            bbr.rtt_ms.n > 100 && bbr.rtt_ms.p5 >= 50.0,
            "{:?}",
            bbr.rtt_ms
        );
    }

    #[test]
    fn the_threshold_gains_reach_gcc_and_change_the_run() {
        let sc = scenario(GCC_VS_CUBIC);
        let mut f = sc.flows[0].clone();
        f.send_args.extend(
            [
                "--gcc-ku",
                "0.1",
                "--gcc-kd=0.05",
                "--gcc-kalman-q",
                "0.01",
                "--gcc-arrival-burst=on",
            ]
            .map(String::from),
        );
        let a = cg_args(&f, ControllerKind::Gcc).unwrap();
        assert_eq!(
            (
                a.gcc.k_up,
                a.gcc.k_down,
                a.gcc.kalman_q,
                a.gcc.arrival_burst
            ),
            (Some(0.1), Some(0.05), Some(0.01), Some(true))
        );
        // Send-side GCC's estimator runs in cg-send: cg-recv refuses them, and so do we.
        let e = cg_args(&f, ControllerKind::GccRemb)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("cg-send refuses") && e.contains("recv args"),
            "{e}"
        );
        let mut g = sc.flows[0].clone();
        g.recv_args
            .extend(["--gcc-threshold", "static"].map(String::from));
        assert!(cg_args(&g, ControllerKind::Gcc).is_err());
        let t = cg_args(&g, ControllerKind::GccRemb).unwrap().gcc;
        assert_eq!(t.threshold, Some(cg_cc::gcc::ThresholdChoice::Static));
        // The variant: in REMB mode both programs take it, the same; send-side, cg-send.
        let mut v = sc.flows[0].clone();
        v.recv_args
            .extend(["--gcc-variant", "mmsys16"].map(String::from));
        let e = cg_args(&v, ControllerKind::GccRemb)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("--gcc-variant to both"), "{e}");
        v.send_args
            .extend(["--gcc-variant", "mmsys16"].map(String::from));
        let t = cg_args(&v, ControllerKind::GccRemb).unwrap().gcc;
        assert_eq!(t.variant, Some(cg_cc::gcc::GccVariant::Mmsys16));
        assert!(
            cg_args(&v, ControllerKind::Gcc).is_err(),
            "cg-recv refuses it"
        );
        // SCReAM's variant, with SCReAM only.
        let mut w = sc.flows[0].clone();
        w.send_args
            .extend(["--scream-variant", "reference"].map(String::from));
        let a = cg_args(&w, ControllerKind::Scream).unwrap();
        assert_eq!(a.scream_variant, cg_cc::scream::ScreamVariant::Reference);
        assert!(cg_args(&w, ControllerKind::Gcc).is_err());
        f.send_args.extend(["--gcc-kd", "-1"].map(String::from));
        let mut bad = scenario(GCC_VS_CUBIC);
        bad.flows[0] = f.clone();
        let e = plan(&bad).err().unwrap().to_string();
        assert!(e.contains("k_down"), "a negative gain is refused: {e}");
        // The same scenario with other gains runs differently.
        let dir = std::env::temp_dir().join(format!("netlab-sim-k-{}", std::process::id()));
        let rate = |args: &[&str]| {
            let mut sc = scenario(GCC_VS_CUBIC);
            sc.flows[0]
                .send_args
                .extend(args.iter().map(|s| s.to_string()));
            let _ = std::fs::remove_dir_all(&dir);
            run_simulated(&sc, &dir).unwrap().metrics.flows[0]
                .qdelay_ms
                .mean
        };
        let (default, sensitive) = (rate(&[]), rate(&["--gcc-ku", "1e-5", "--gcc-kd", "0.1"]));
        assert!(default != sensitive, "{default} ms both ways");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn on_off_periods_are_connections_of_their_own() {
        let text = GCC_VS_CUBIC.replace(
            "start = \"20s\"\nrate = \"500k\"",
            "start = \"5s\"\non = \"3s\"\noff = \"9s\"",
        );
        let p = plan(&scenario(&text)).unwrap();
        let tcp: Vec<Duration> = p.iter().filter(|p| p.flow == 1).map(|p| p.at).collect();
        assert_eq!(tcp, [5, 17, 29].map(Duration::from_secs));
    }
}
