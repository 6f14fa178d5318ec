//! The runner: inside the isolated namespaces (see [`crate::isolate`]) it builds the topology,
//! starts the bottleneck (TUN forwarder or kernel `tc`), checks the RTT, starts the traffic at
//! the run's t0, shows progress, stops everything and leaves raw results in `OUT/raw/`.
//!
//! The phases read top-down in [`run`]; `backend` sets up the bottleneck, `rtt` checks the
//! path, `launch` starts each flow's processes, `procs` watches and stops them, `info` holds
//! the options and the run's record.

mod backend;
mod info;
mod launch;
mod procs;
mod rtt;

use std::io::Write;
use std::time::{Duration, Instant};

pub use backend::kernel_shapes_reverse;
pub use info::{RunInfo, RunOptions, read_info};
pub use rtt::expected_rtt_ms;

use crate::scenario::{Backend, Scenario};
use crate::sys::mono_ns;
use crate::topology::Topology;
use crate::{Error, Result};
use backend::{backend_name, choose_backend, start_forwarder};
use launch::Launch;
use procs::{Procs, s, spawn_in, wait_for_end};
use rtt::check_rtt;

/// Runs the scenario inside the isolation; called as `netlab __runner`. The phases: set-up
/// (topology, backend, forwarder, RTT check), traffic started at t0, the run waited out,
/// everything stopped, `raw/run.json` written.
pub fn run(opts: &RunOptions) -> Result<()> {
    let setup_start = Instant::now();
    let sc = Scenario::load(&opts.scenario)?;
    let raw = opts.out.join("raw");
    std::fs::create_dir_all(&raw).map_err(|e| Error::io("mkdir raw", e))?;
    crate::isolate::private_netns_dir()?;
    let prefix = format!("nl{:x}-", std::process::id() ^ (mono_ns() as u32 & 0xffff));
    let mut tcp_ecn = vec![false; sc.hosts.len()];
    for f in sc.flows.iter().filter(|f| f.tcp_ecn) {
        tcp_ecn[f.from] = true;
    }
    let topo = Topology::create(&sc, &prefix, &tcp_ecn)?;
    let kernel_qdiscs = crate::kernel::probe(&topo.router()).unwrap_or_default();
    let (backend, backend_note) = choose_backend(&sc, &topo, &kernel_qdiscs)?;
    // t0 leaves time for the forwarder, the RTT check and spawning every helper (≈ 20 ms
    // per flow on a loaded 2-core machine).
    let lead_ns = 2_500_000_000 + 20_000_000 * sc.flows.len() as u64;
    let t0_ns = mono_ns() + lead_ns;
    let forwarder = match backend {
        Backend::Emulated => Some(start_forwarder(opts, &sc, &topo, &raw, t0_ns)?),
        Backend::Kernel => None,
    };
    let mut procs = Procs::default();
    for (i, _) in sc.hosts.iter().enumerate().filter(|(_, h)| h.is_receiver) {
        procs
            .helpers
            .push(spawn_in(&topo.ns(i), &[s("__echo")], "echo", false)?);
    }
    std::thread::sleep(Duration::from_millis(100));
    let rtt = check_rtt(opts, &sc, &topo, backend)?;
    if mono_ns() + 100_000_000 + 20_000_000 * sc.flows.len() as u64 > t0_ns {
        return Err(Error::Process(format!(
            "set-up took longer than the {:.1} s planned before t0; the machine is overloaded",
            lead_ns as f64 / 1e9
        )));
    }
    let setup_s = setup_start.elapsed().as_secs_f64();

    // The load runs from before t0 to the end, beside everything (the RTT check above ran
    // without it: it checks the path, not the host).
    if let Some(l) = sc.load {
        for i in 0..l.hogs {
            let args = [s("__hog"), s("--nice"), s(l.nice), s("--duty"), s(l.duty)];
            procs
                .helpers
                .push(spawn_in(&topo.ns(0), &args, &format!("hog {i}"), false)?);
        }
    }
    let launch = Launch {
        sc: &sc,
        topo: &topo,
        raw: &raw,
        t0_ns,
    };
    // Sinks first, then senders.
    for f in &sc.flows {
        launch.sink(f, &mut procs)?;
    }
    std::thread::sleep(Duration::from_millis(100));
    for f in &sc.flows {
        launch.source(f, &mut procs)?;
    }
    if opts.progress {
        eprintln!(
            "netlab: running `{}` for {:.0} s ({} flows, backend {})",
            sc.name,
            sc.duration.as_secs_f64(),
            sc.flows.len(),
            backend_name(backend)
        );
    }
    wait_for_end(opts, &sc, &mut procs, t0_ns, forwarder.is_none())?;
    procs.stop();
    let tun_drops = if forwarder.is_some() {
        topo.tun_drops()
    } else {
        [0, 0]
    };
    if let Some(mut f) = forwarder {
        f.stdin.take();
        let st = f.child.wait().map_err(|e| Error::io("wait forwarder", e))?;
        if !st.success() {
            return Err(Error::Process(format!("forwarder failed: {st}")));
        }
    }
    let info = RunInfo {
        t0_ns,
        backend: backend_name(backend).into(),
        backend_note,
        kernel_qdiscs: kernel_qdiscs.into_iter().collect(),
        rtt_expected_ms: rtt.expected_ms,
        rtt_measured_ms: rtt.probe.median_ms().unwrap_or(f64::NAN),
        rtt_min_ms: rtt.probe.min_ms().unwrap_or(f64::NAN),
        tun_drops,
        udp_rcvbuf_errors: (0..sc.hosts.len())
            .map(|i| udp_rcvbuf_errors(&topo.ns(i)))
            .sum(),
        prefix,
        setup_s,
    };
    let text = serde_json::to_string_pretty(&info).expect("RunInfo serialises");
    std::fs::write(raw.join("run.json"), text).map_err(|e| Error::io("write run.json", e))?;
    std::io::stderr().flush().ok();
    Ok(())
}

fn udp_rcvbuf_errors(ns: &str) -> u64 {
    let Ok(text) = crate::sys::run("ip", &["netns", "exec", ns, "cat", "/proc/net/snmp"]) else {
        return 0;
    };
    let udp: Vec<&str> = text.lines().filter(|l| l.starts_with("Udp:")).collect();
    if udp.len() < 2 {
        return 0;
    }
    let names: Vec<&str> = udp[0].split_whitespace().collect();
    let vals: Vec<&str> = udp[1].split_whitespace().collect();
    names
        .iter()
        .position(|n| *n == "RcvbufErrors")
        .and_then(|i| vals.get(i))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}
