//! A run from the outside: check the scenario, start the isolated runner, then turn its raw
//! results into `summary.json`, per-flow CSV time series, PNG plots and a summary table.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::emu::forwarder::ForwarderStats;
use crate::metrics::{self, Metrics};
use crate::runner::{self, RunInfo};
use crate::scenario::{Backend, Fallback, FlowKind, Scenario};
use crate::{Error, Result};

/// What `netlab run` was asked.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// Output directory.
    pub out: PathBuf,
    /// Where relative paths in the scenario resolve.
    pub base: PathBuf,
    /// Forwarder wake-up coalescing.
    pub coalesce: Duration,
    /// Skip the RTT check.
    pub skip_rtt_check: bool,
    /// No progress.
    pub quiet: bool,
    /// `SCHED_FIFO` priority for the emulated bottleneck's forwarder (`None`: leave it at
    /// normal priority). Needs root; see [`crate::rt`].
    pub forwarder_rt: Option<u8>,
}

/// `summary.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    /// Scenario name.
    pub scenario: String,
    /// Description.
    pub description: String,
    /// Run facts (backend, RTT check, hidden drops).
    pub run: RunInfo,
    /// The forwarder's own measurements (emulated backend).
    pub forwarder: Option<ForwarderStats>,
    /// Metrics.
    pub metrics: Metrics,
}

/// Everything that can be checked before creating anything.
pub fn preflight(sc: &Scenario) -> Result<()> {
    if let Some(f) = sc.flows.iter().find(|f| f.kind == FlowKind::Cg) {
        crate::traffic::cg::binaries()
            .map_err(|e| Error::NotAvailable(format!("flow `{}`: {e}", f.name)))?;
    }
    if sc.backend == Backend::Emulated || sc.fallback == Fallback::Emulated {
        crate::emu::linkcfg::link_config(&sc.forward, sc.seed, "forward")?;
        crate::emu::linkcfg::link_config(&sc.reverse, sc.seed, "reverse")?;
    } else {
        // What `tc` cannot express whatever the kernel has (jitter, reordering, duplication,
        // schedules, traces) is refused now; missing qdiscs are found by probing at run time.
        let every: std::collections::BTreeSet<String> = crate::kernel::KINDS
            .iter()
            .map(|k| (*k).to_owned())
            .collect();
        crate::kernel::plan(&sc.forward, "forward", "-", &every)?;
        if runner::kernel_shapes_reverse(sc) {
            crate::kernel::plan(&sc.reverse, "reverse", "-", &every)?;
        }
    }
    Ok(())
}

/// Runs `sc` isolated and writes every output into `req.out`.
pub fn run_and_report(sc: &Scenario, req: &RunRequest) -> Result<Summary> {
    preflight(sc)?;
    let out = &req.out;
    std::fs::create_dir_all(out.join("raw")).map_err(|e| Error::output(out, e))?;
    let out = std::fs::canonicalize(out).map_err(|e| Error::io("canonicalize out", e))?;
    let scen_path = out.join("scenario.toml");
    std::fs::write(&scen_path, &sc.source).map_err(|e| Error::output(&scen_path, e))?;
    let base = std::fs::canonicalize(&req.base).unwrap_or_else(|_| req.base.clone());
    let mut args = vec![
        "__runner".to_owned(),
        "--scenario".into(),
        scen_path.display().to_string(),
        "--base".into(),
        base.display().to_string(),
        "--out".into(),
        out.display().to_string(),
        "--coalesce-us".into(),
        req.coalesce.as_micros().to_string(),
    ];
    if req.skip_rtt_check {
        args.push("--skip-rtt-check".into());
    }
    if req.quiet {
        args.push("--quiet".into());
    }
    let mut child = crate::isolate::spawn(&args)?;
    // Only the emulated backend has a forwarder (a kernel run may fall back to it).
    let may_forward = sc.backend == Backend::Emulated || sc.fallback == Fallback::Emulated;
    let promoter = req.forwarder_rt.filter(|_| may_forward).map(|prio| {
        let root = child.id();
        let raw = out.join("raw");
        std::thread::spawn(move || {
            let alive = || std::path::Path::new(&format!("/proc/{root}")).exists();
            // Reported even with --quiet: the run's timing is not a bottleneck's.
            if let Err(why) =
                crate::rt::promote_forwarder(root, &raw, prio, Duration::from_secs(60), alive)
            {
                eprintln!("netlab: forwarder left at normal priority: {why}");
            }
        })
    });
    let st = child.wait().map_err(|e| Error::io("wait runner", e))?;
    if let Some(p) = promoter {
        let _ = p.join();
    }
    if !st.success() {
        return Err(Error::Process(format!(
            "the isolated runner failed ({st}); see the message above"
        )));
    }
    finish(sc, &out)
}

/// Runs `sc` in simulated time ([`crate::simrun`]) into `out` and reports it as
/// [`run_and_report`] does.
pub fn run_simulated(sc: &Scenario, out: &Path) -> Result<Summary> {
    crate::simrun::run(sc, out)?;
    finish(sc, out)
}

/// The metrics, CSVs, plots and `summary.json` of a run whose `raw/` is complete (the
/// runner's, or the simulated run's: [`crate::simrun`]).
pub fn finish(sc: &Scenario, out: &Path) -> Result<Summary> {
    let raw = out.join("raw");
    let info = runner::read_info(out)?;
    let forwarder: Option<ForwarderStats> = std::fs::read_to_string(raw.join("forwarder.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    let m = metrics::compute(sc, &raw)?;
    write_csvs(&m, out)?;
    crate::plot::all(&m, sc.duration.as_secs_f64(), out)?;
    let summary = Summary {
        scenario: sc.name.clone(),
        description: sc.description.clone(),
        run: info,
        forwarder,
        metrics: m,
    };
    let p = out.join("summary.json");
    std::fs::write(
        &p,
        serde_json::to_string_pretty(&summary).expect("summary serialises"),
    )
    .map_err(|e| Error::output(p, e))?;
    Ok(summary)
}

fn write_csvs(m: &Metrics, out: &Path) -> Result<()> {
    let w = |name: String, text: String| -> Result<()> {
        let p = out.join(name);
        std::fs::write(&p, text).map_err(|e| Error::output(p, e))
    };
    for f in &m.flows {
        let mut s = String::from(
            "t_s,rate_mbps,qdelay_mean_ms,qdelay_max_ms,arrivals,drops,ce,rtt_ms,owd_ms,target_mbps\n",
        );
        for b in &f.bins {
            let _ = writeln!(
                s,
                "{:.3},{:.4},{:.3},{:.3},{},{},{},{:.3},{:.3}",
                b.t_s,
                b.rate_mbps,
                b.qdelay_ms,
                b.qdelay_max_ms,
                b.arrivals,
                b.drops,
                b.ce,
                b.rtt_ms,
                b.owd_ms
            );
        }
        w(format!("flow-{}.csv", f.name), s)?;
    }
    let mut s = String::from("t_s,capacity_mbps,delivered_mbps\n");
    for (t, c, r) in &m.link.bins {
        let _ = writeln!(s, "{t:.3},{c:.4},{r:.4}");
    }
    w("link.csv".into(), s)
}

/// The summary table printed on stdout.
pub fn table(s: &Summary) -> String {
    let m = &s.metrics;
    let mut t = String::new();
    let _ = writeln!(
        t,
        "scenario {}  (backend {}, window {:.0}–{:.0} s)",
        s.scenario, s.run.backend, m.window_s.0, m.window_s.1
    );
    let _ = writeln!(
        t,
        "RTT check: {:.2} ms measured, {:.2} ms configured",
        s.run.rtt_measured_ms, s.run.rtt_expected_ms
    );
    let l = &m.link;
    let _ = writeln!(
        t,
        "forward link: U = {:.1} %, loss {:.2} %, qdelay p50 {:.1} ms p95 {:.1} ms, CE {}, hidden drops (TUN) {}/{}, UDP rcvbuf drops {}",
        l.utilisation * 100.0,
        l.loss_ratio * 100.0,
        l.qdelay_ms.p50,
        l.qdelay_ms.p95,
        l.ce_marks,
        s.run.tun_drops[0],
        s.run.tun_drops[1],
        s.run.udp_rcvbuf_errors
    );
    if let Some(j) = m.jain {
        let (a, b) = m.jain_window_s.unwrap_or_default();
        let _ = writeln!(
            t,
            "Jain's fairness index {j:.3} (all forward flows active, {a:.0}–{b:.0} s)"
        );
    }
    let _ = writeln!(
        t,
        "{:<16} {:>4} {:>8} {:>9} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>6} {:>8}",
        "flow",
        "kind",
        "dir",
        "Mb/s",
        "loss%",
        "q p5",
        "q p50",
        "q p95",
        "q mean",
        ">100ms",
        "CE",
        "RTT p50"
    );
    for f in &m.flows {
        let _ = writeln!(
            t,
            "{:<16} {:>4} {:>8} {:>9.3} {:>7.2} {:>7.1} {:>7.1} {:>7.1} {:>7.1} {:>6.1}% {:>6} {:>8.1}",
            f.name,
            f.kind,
            f.direction,
            f.throughput_mbps,
            f.loss_ratio * 100.0,
            f.qdelay_ms.p5,
            f.qdelay_ms.p50,
            f.qdelay_ms.p95,
            f.qdelay_ms.mean,
            f.qdelay_ms.share_above_10_20_50_100[3] * 100.0,
            f.ce_marks,
            f.rtt_ms.p50
        );
    }
    for f in m
        .flows
        .iter()
        .filter(|f| f.n_dd.is_some() || f.target_mbps.is_some())
    {
        let _ = writeln!(
            t,
            "{}: controller target {:.3} Mb/s (mean), n_dd {}",
            f.name,
            f.target_mbps.unwrap_or(f64::NAN),
            f.n_dd.map_or("-".into(), |n| n.to_string())
        );
    }
    for (name, v) in m
        .flows
        .iter()
        .filter_map(|f| Some((&f.name, f.viewer.as_ref()?)))
    {
        let opt = |x: Option<f64>| x.map_or("-".into(), |x| format!("{x:.0}"));
        let _ = writeln!(
            t,
            "{name}: viewer ({}) {:.1} fps (lowest {}), {} freezes ({:.2} s frozen, longest {} ms), {} resolution switches, held {}, jitter buffer {} ms ({} after assembly), glass-to-glass median {} ms max {} ms",
            v.viewer,
            v.fps,
            opt(v.fps_min),
            v.freezes,
            v.frozen_s,
            opt(v.longest_freeze_ms),
            v.resolution_switches,
            v.held_size.map_or("-".into(), |(w, h)| format!("{w}×{h}")),
            opt(v.jitter_buffer_ms),
            v.jitter_buffer_hold_ms
                .map_or("-".into(), |x| format!("{x:.1}")),
            opt(v.g2g_ms.as_ref().map(|d| d.p50)),
            opt(v.g2g_max_ms),
        );
        if let (Some(mean), Some(low)) = (v.psnr_db, v.psnr_low_db) {
            let _ = writeln!(
                t,
                "{name}: picture quality: luma PSNR against the source {mean:.1} dB (worst 5 % of pictures down to {low:.1} dB){}",
                v.psnr_scored.map_or(String::new(), |n| format!(
                    ", {n} pictures the page posted back"
                ))
            );
        }
        if let Some(st) = v.stages_ms {
            let _ = writeln!(
                t,
                "{name}: latency by stage (medians, ms): encode {:.1}, queue {:.1}, pacing {:.1}, network {}, arrival {}, jitter buffer {:.1}, decode {:.1}, display {}",
                st.encode,
                st.queue,
                st.pacing,
                opt(st.network),
                opt(st.arrival),
                st.jitter_buffer,
                st.decode,
                opt(st.display),
            );
        }
    }
    if let Some(fw) = &s.forwarder {
        let _ = writeln!(
            t,
            "forwarder ({}): {} wake-ups, CPU {:.1} % of a core, timer lateness p50 {:.0} µs p99 {:.0} µs max {:.0} µs; packets read p99 {:.0} µs max {:.0} µs after they were sent, {:.1} % arriving at their kernel send stamp; the hypervisor took {} of the machine's CPU",
            fw.scheduling,
            fw.wakeups,
            (fw.cpu_user_s + fw.cpu_sys_s) / fw.wall_s.max(1e-9) * 100.0,
            fw.lateness_us[0],
            fw.lateness_us[1],
            fw.lateness_us[3],
            fw.read_delay_us[1],
            fw.read_delay_us[3],
            100.0 * fw.stamped_share(),
            fw.steal_share
                .map_or("an unknown share".to_owned(), |x| format!(
                    "{:.1} %",
                    100.0 * x
                ))
        );
    }
    t
}

/// The demo's scenario: MMSys16 §6.1's capacity schedule (1 → 2.5 → 0.5 → 1 Mb/s), RTT
/// 50 ms, DT/300, one GCC flow of the real cg-send → cg-recv.
pub const DEMO: &str = r#"# netlab demo: MMSys16 §6.1 shortened: one GCC flow (cg-send → cg-recv, VP8 1280x720 at
# 30 fps from videotestsrc, receiver-side GCC with REMB as in the paper), capacity
# 1 → 2.5 → 0.5 → 1 Mb/s, RTT 50 ms, DropTail 300 ms.
# The picture is cg-media's faint zone plate: moving low-contrast rings whose VP8 rate follows
# targets from 0.3 to 4 Mb/s at 720p (the full-contrast zone plate cannot go below ~0.45 Mb/s,
# scrolling SMPTE not below ~2 Mb/s). GCC starts at 800 kb/s: from its 300 kb/s default
# start, eq. (3)'s 5 %/s increase would spend the whole first step ramping up.
name = "demo-mmsys16-6.1-gcc"
description = "MMSys16 §6.1 shortened: one GCC (REMB) flow, VP8 1280x720 at 30 fps, capacity 1 → 2.5 → 0.5 → 1 Mb/s, RTT 50 ms, DT/300"
duration = "@DUR@"
seed = 1

[forward]
schedule = [
  { at = "0s", rate = "1Mbit" },
  { at = "@S1@", rate = "2.5Mbit" },
  { at = "@S2@", rate = "500kbit" },
  { at = "@S3@", rate = "1Mbit" },
]
delay = "25ms"
qdisc = { kind = "droptail", limit = "300ms" }

[reverse]
capacity = "100Mbit"
delay = "25ms"

[[flows]]
name = "gcc"
kind = "cg"
controller = "gcc-remb"
from = "s1"
to = "r1"
send_args = ["--codec", "vp8", "--source", "videotest", "--pattern", "faint-zone-plate", "--width", "1280", "--height", "720", "--fps", "30", "--start-bitrate", "800k", "--min-bitrate", "100k"]
recv_args = ["--start-bitrate", "800k"]
"#;

/// The demo scenario with `step_s` seconds per capacity step.
pub fn demo_scenario(step_s: u64) -> Result<Scenario> {
    let step = step_s.max(2);
    let text = DEMO
        .replace("@DUR@", &format!("{}s", 4 * step))
        .replace("@S1@", &format!("{step}s"))
        .replace("@S2@", &format!("{}s", 2 * step))
        .replace("@S3@", &format!("{}s", 3 * step));
    Ok(Scenario::parse(&text, "<demo>", "demo", Path::new("."))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_scenario_parses_and_passes_preflight() {
        let sc = demo_scenario(20).unwrap();
        assert_eq!(sc.duration, Duration::from_secs(80));
        assert_eq!(sc.flows.len(), 1);
        assert_eq!(sc.flows[0].controller, "gcc-remb");
        // The demo's cg flow needs cg-send/cg-recv next to the binary (not next to a unit
        // test); `cargo xtask demo` builds them.
        match crate::traffic::cg::binaries() {
            Ok(_) => preflight(&sc).unwrap(),
            Err(_) => assert!(preflight(&sc).unwrap_err().to_string().contains("cg-send")),
        }
    }

    #[test]
    fn the_kernel_backend_refuses_what_tc_cannot_express_before_anything_is_created() {
        let text = |fallback: &str| {
            format!(
                "duration = \"5s\"\nbackend = \"kernel\"\nkernel_fallback = \"{fallback}\"\n\
                 [forward]\ncapacity = \"10Mbit\"\nreorder = 0.01\n"
            )
        };
        let sc = Scenario::parse(&text("error"), "t.toml", "t", Path::new(".")).unwrap();
        let e = preflight(&sc).unwrap_err().to_string();
        assert!(e.contains("t.toml:6:11: field `forward.reorder`"), "{e}");
        // With the emulator as fallback the emulator will run it.
        let sc = Scenario::parse(&text("emulated"), "t.toml", "t", Path::new(".")).unwrap();
        preflight(&sc).unwrap();
    }

    #[test]
    fn cg_flows_need_the_cg_binaries_before_anything_is_created() {
        let sc = crate::scenario::presets::load("mmsys16-6.1-variable-capacity")
            .unwrap()
            .unwrap();
        match crate::traffic::cg::binaries() {
            Ok(_) => preflight(&sc).unwrap(),
            Err(_) => {
                let e = preflight(&sc).unwrap_err().to_string();
                assert!(e.contains("cg-send"), "{e}");
            }
        }
    }
}
