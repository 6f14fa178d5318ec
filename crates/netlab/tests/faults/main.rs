//! Issue #17's fault suite: real `cg-send` and `cg-recv` through netlab's emulated bottleneck
//! with the faults real access networks have (an outage, reordering with duplication, burst
//! loss, jitter, a feedback blackout) and hostile datagrams, for each controller (send-side
//! GCC, GCC-REMB, SCReAM), each judged on what the link carried and what the viewer saw, and a
//! receiver killed with `kill -9` and started anew.
//!
//! Every case is 640×360 at 30 fps of the `camera` picture through 2 Mbit/s DropTail
//! (300 ms), RTT 50 ms, unless it says otherwise. Like `cg_flows`, they judge rates and
//! delays of real processes, so they run in release only (`cargo xtask test` does), one at a
//! time, each judged on the spread of its runs (one unless `RUNS` asks for more; `common`).
//!
//! One test binary; its modules by fault: `link` (outage, reordering, loss, jitter),
//! `endpoints` (feedback blackout, killed receiver), `hostile` (junk datagrams); here what they
//! share.

#[path = "../common/mod.rs"]
mod common;
mod endpoints;
mod hostile;
mod link;

use std::path::Path;
use std::sync::Mutex;

use common::*;
use serde_json::Value;

/// The three controllers, as `netlab`'s flow `controller` names them.
const CONTROLLERS: [&str; 3] = ["gcc", "gcc-remb", "scream"];

/// One cg flow of `controller` through `forward` (a `[forward]` table's body; the one-way
/// delay is 25 ms both ways), `secs` long, warm-up 5 s.
fn fault_scenario(name: &str, controller: &str, forward: &str, secs: u32, video: &str) -> String {
    with_reverse(
        name,
        controller,
        forward,
        r#"capacity = "100Mbit""#,
        secs,
        video,
    )
}

/// [`fault_scenario`] with the reverse path's table body (`reverse`) too.
fn with_reverse(
    name: &str,
    controller: &str,
    forward: &str,
    reverse: &str,
    secs: u32,
    video: &str,
) -> String {
    format!(
        r#"name = "{name}"
duration = "{secs}s"
seed = 1

[forward]
delay = "25ms"
qdisc = {{ kind = "droptail", limit = "300ms" }}
{forward}

[reverse]
delay = "25ms"
{reverse}

[metrics]
warmup = "5s"

[[flows]]
name = "cg"
kind = "cg"
controller = "{controller}"
from = "s1"
to = "r1"
send_args = [{video}]
"#
    )
}

/// 640×360 at 30 fps of the camera picture, up to `max` (cg-send's `--max-bitrate`).
fn camera_360p(max: &str) -> String {
    format!(
        r#""--pattern", "camera", "--width", "640", "--height", "360", "--fps", "30", "--max-bitrate", "{max}""#
    )
}

/// A controller quantity of a stats line (`extra`), NaN when absent.
fn extra(line: &Value, name: &str) -> f64 {
    line["extra"][name].as_f64().unwrap_or(f64::NAN)
}

/// The growth of the controller counter `name` (in `extra`) over the samples from run time
/// `from` s to the end.
fn counted_since(samples: &[Value], t0: u64, from: f64, name: &str) -> f64 {
    let at = samples
        .iter()
        .find(|l| run_t(l, t0) >= from)
        .map_or(0.0, |l| extra(l, name));
    samples.last().map_or(0.0, |l| extra(l, name)) - at
}

/// The back-offs a controller made from `from` s on, as it counts them: GCC's over-use signals
/// (the sender's estimator in send-side mode, the receiver's in REMB mode) and SCReAM's window
/// reductions of the kinds `scream` names (`loss_backoffs`, `delay_backoffs`).
fn backoffs_since(controller: &str, out: &Path, from: f64, scream: &[&str]) -> f64 {
    let t0 = t0(out);
    let sent = lines(&out.join("raw/cg-send-cg.jsonl"));
    let recv = lines(&out.join("raw/cg-recv-cg.jsonl"));
    match controller {
        "gcc" => counted_since(&sent, t0, from, "overuses"),
        "gcc-remb" => counted_since(&recv, t0, from, "overuses"),
        _ => scream
            .iter()
            .map(|k| counted_since(&sent, t0, from, k))
            .sum(),
    }
}

/// What reordering could be mistaken for: a loss (SCReAM's window reductions for loss; GCC's
/// over-uses, which also count the delay gradient of a held-back packet).
const REORDER_BACKOFFS: &[&str] = &["loss_backoffs"];

/// cg-send ran on through the fault: its last statistics at a run time within `to` (s) and
/// no circuit-breaker trip, recorded for controller `cc` of `run`.
fn ran_on(
    spread: &mut Spread,
    run: u64,
    cc: &str,
    last: &Value,
    t0: u64,
    to: std::ops::RangeInclusive<f64>,
) {
    spread.check(
        run,
        format!("{cc}: cg-send ran to (s)"),
        run_t(last, t0),
        to,
    );
    spread.check(
        run,
        format!("{cc}: breaker trips"),
        num(last, "breaker_trips"),
        0.0..=0.0,
    );
}

/// The link's utilisation from `summary.json` (IP bytes over capacity, after the warm-up).
fn utilisation(summary: &Value) -> f64 {
    num(&summary["metrics"]["link"], "utilisation")
}

/// The clean run the reordering and hostile-datagram cases compare with (2 Mbit/s, 25 s) on
/// seed `run`: its utilisation and its back-offs after 5 s, NaN when it failed (which the
/// comparisons then miss). Run once per controller and run in a test process, from a case's
/// check, which holds the netlab lock already.
fn clean_run(cc: &'static str, run: u64) -> (f64, f64) {
    /// (controller, run) → (utilisation, back-offs).
    type Made = ((&'static str, u64), (f64, f64));
    static CLEAN: Mutex<Vec<Made>> = Mutex::new(Vec::new());
    if let Some(&(_, r)) = CLEAN.lock().unwrap().iter().find(|(k, _)| *k == (cc, run)) {
        return r;
    }
    let toml = fault_scenario(
        &format!("clean-{cc}"),
        cc,
        r#"capacity = "2Mbit""#,
        25,
        &camera_360p("10M"),
    );
    let r = match run_netlab(&format!("clean-{cc}-{run}"), &with_seed(&toml, run), |_| {}) {
        Ok((s, out)) => {
            let r = (
                utilisation(&s),
                backoffs_since(cc, &out, 5.0, REORDER_BACKOFFS),
            );
            eprintln!(
                "clean {cc}, run {run}: U {:.3}, back-offs after 5 s {}",
                r.0, r.1
            );
            let _ = std::fs::remove_dir_all(out.parent().expect("out is in a scratch dir"));
            r
        }
        Err(e) => {
            eprintln!("clean {cc}, run {run}: {e}");
            (f64::NAN, f64::NAN)
        }
    };
    CLEAN.lock().unwrap().push(((cc, run), r));
    r
}
