//! GCC with a camera-like source (issue #14) in simulated time.
//!
//! Each scenario is judged by a [`Spread`] over [`seeds`]: every figure has a two-sided
//! range, and `SEEDS=a-b` runs other seeds against the same ranges.
//!
//! Rule for the ranges (issue #41): each is the issue's goal where the spread over seeds 1–320
//! (the suite's and 304 it does not run) clears it by at least a quarter of that spread's
//! width. A figure without a goal, or whose goal the spread does not clear so, gets the worst
//! of those seeds plus that margin, rounded outward to a whole step (5 ms, 0.01 of
//! utilisation, 0.05 % of loss, 0.5 s, one decrease), and says so beside it. A figure over
//! all the seeds at once (a mean) is judged the same way on its spread over every run of that
//! many consecutive seeds within 1–64. Physical ends stay as they are: a utilisation at most
//! 1, a queue or a loss at least 0, t90 at least 1 s (it measures over a 1 s window). Sixty-four
//! seeds were not enough: seeds 65–320 left the 64-seed ranges in five figures.
//! The spread and the ranges chosen are in `docs/notes/2026-12-02-spread-gcc.md`.

mod common;

use std::ops::RangeInclusive;
use std::time::{Duration, Instant};

use cg_cc::gcc::{GccConfig, GccMode};
use cg_cc::sim::{EncoderConfig, SimReceiver, SimSender, metrics};
use cg_link::CapacityConfig;
use cg_link::sim::Sim;
use cg_types::Bitrate;
use common::{MMSYS16_6_1, Spread, gcc_pair, links, mmsys16_6_1, seeds, t90};

fn pair(cfg: &GccConfig, seed: u64, now: Instant) -> (SimSender, SimReceiver) {
    let encoder = EncoderConfig {
        seed,
        max_rate: cfg.max_bitrate,
        ..EncoderConfig::camera()
    };
    gcc_pair(cfg, encoder, now)
}

fn camera_config(mode: GccMode) -> GccConfig {
    GccConfig {
        mode,
        // libwebrtc's default maximum (shared/notes/picture-adaptation.md §6): with the
        // papers' 2 Mbit/s VP8 cap the 2 and 2.5 Mbit/s links could not be filled.
        max_bitrate: Bitrate::mbps(5),
        ..GccConfig::default()
    }
}

/// One flow over a constant link for `secs`.
fn constant_run(
    cfg: &GccConfig,
    seed: u64,
    cap: Bitrate,
    secs: u64,
) -> (Sim<SimSender, SimReceiver>, Instant) {
    let start = Instant::now();
    let (f, r) = links(CapacityConfig::constant(cap), cap);
    let mut s = Sim::new(f, r, start);
    let (tx, rx) = pair(cfg, seed, start);
    s.add_pair(tx, rx);
    s.run_until(start + Duration::from_secs(secs));
    (s, start)
}

/// Target decreases of more than 7 % between two 100 ms samples, each with the largest
/// bottleneck sojourn time in the 700 ms before it (time from start, from, to, queue).
fn decreases(
    s: &Sim<SimSender, SimReceiver>,
    start: Instant,
) -> Vec<(f64, Bitrate, Bitrate, Duration)> {
    let ev = s.forward().events();
    s.sender(0)
        .samples()
        .windows(2)
        .filter(|w| w[1].stats.target.as_bps_f64() < 0.93 * w[0].stats.target.as_bps_f64())
        .map(|w| {
            let at = w[1].time;
            let q = metrics::queuing_delays(ev.iter(), None, at - Duration::from_millis(700), at);
            (
                (at - start).as_secs_f64(),
                w[0].stats.target,
                w[1].stats.target,
                q.last().copied().unwrap_or_default(),
            )
        })
        .collect()
}

/// Issue #14: "GCC decreases on single large frames". With 10× key frames and 3–5× delta
/// frames at a constant 2 Mbit/s, every decrease of the target must follow a bottleneck
/// queue of at least 5 ms, or a target at or above the capacity (an over-use, whose queue
/// the pacer capped at the link-capacity estimate holds at the sender): large frames alone
/// (an encoder giving their bytes back makes the 500 ms receive rate `R` fall far below
/// `Ar`) must not cut the rate. The other side: the controller still decreases at all (one
/// that never backed off would pass the first check).
fn no_backoff_without_queue(mode: GccMode, decreases_within: RangeInclusive<f64>) {
    let cfg = camera_config(mode);
    let cap = Bitrate::mbps(2);
    let mut spread = Spread::new(format!("{mode:?} camera 2 Mbit/s decreases"));
    for seed in seeds() {
        let (s, start) = constant_run(&cfg, seed, cap, 60);
        let d = decreases(&s, start);
        let small: Vec<_> = d
            .iter()
            .filter(|(_, from, _, q)| *q < Duration::from_millis(5) && *from < cap)
            .collect();
        for (t, a, b, q) in &small {
            eprintln!("seed {seed} at {t:.1} s: {a} -> {b}, bottleneck queue ≤ {q:?}");
        }
        spread.check(seed, "decreases", d.len() as f64, decreases_within.clone());
        // Range: the goal, none, lies inside the spread (a finding: seeds beyond the suite's
        // decrease once or twice, docs/notes/2026-12-02.md); above it the check still fails
        // a controller that backs off on large frames, as the one of issue #14 did.
        spread.check(
            seed,
            "decreases below the capacity with a queue under 5 ms",
            small.len() as f64,
            0.0..=2.0,
        );
    }
    spread.judge();
}

#[test]
fn no_backoff_on_large_frames_remb() {
    // Range: at least one decrease, inside the rule's margin below the spread (which would
    // reach 0 and check nothing); above, the spread with the rule's margin.
    no_backoff_without_queue(GccMode::ReceiverSideRemb, 1.0..=12.0);
}

#[test]
fn no_backoff_on_large_frames_send_side() {
    // Range: the spread with the rule's margin.
    no_backoff_without_queue(GccMode::SendSideTwcc, 1.0..=13.0);
}

struct StepsResult {
    u: f64,
    q95: Duration,
    loss: f64,
    t90: Vec<Option<f64>>,
}

/// MMSys16 §6.1 with the camera-like source: 1 → 2.5 → 0.5 → 1 Mbit/s, 50 s each.
fn camera_steps(cfg: &GccConfig, seed: u64) -> StepsResult {
    let start = Instant::now();
    let caps = MMSYS16_6_1.map(Bitrate::kbps);
    let (schedule, mean) = mmsys16_6_1();
    let (f, r) = links(schedule, mean);
    let mut s = Sim::new(f, r, start);
    let (tx, rx) = pair(cfg, seed, start);
    s.add_pair(tx, rx);
    let end = start + Duration::from_secs(200);
    s.run_until(end);
    let ev = s.forward().events();
    if let Ok(w) = std::env::var("TRACE") {
        let (lo, hi) = w.split_once('-').expect("TRACE=from-to");
        let (lo, hi): (f64, f64) = (lo.parse().unwrap(), hi.parse().unwrap());
        for smp in s.sender(0).samples() {
            let t = (smp.time - start).as_secs_f64();
            if t < lo || t > hi {
                continue;
            }
            let get = |n: &str| smp.stats.extra_value(n).unwrap_or(f64::NAN);
            eprintln!(
                "{t:6.1} tgt {:5.0} ar {:5.0} as {:5.0} r {:5.0} q {:?} sig {} st {} pr {} enc {:.0} m {:.3} g {:.3} nv {:.1} k {:.4}",
                smp.stats.target.as_kbps_f64(),
                get("a_r") / 1e3,
                get("a_s") / 1e3,
                get("r") / 1e3,
                smp.stats.queue_delay,
                get("signal"),
                get("state"),
                get("probe_results"),
                smp.encoder_rate.as_kbps_f64(),
                get("m"),
                get("gamma"),
                get("noise_var"),
                get("gain")
            );
        }
    }
    if std::env::var("PHASES").is_ok() {
        for i in 0..4u64 {
            let (a, b) = (
                start + Duration::from_secs(50 * i),
                start + Duration::from_secs(50 * i + 50),
            );
            let q = metrics::queuing_delays(ev.iter(), None, a, b);
            eprintln!(
                "phase {i}: thr {} q50 {:?} q95 {:?} loss {:.4}",
                metrics::throughput(ev.iter(), None, a, b),
                common::percentile(&q, 50.0),
                common::percentile(&q, 95.0),
                common::loss_ratio(ev.iter(), None, a, b)
            );
        }
    }
    let q = metrics::queuing_delays(ev.iter(), None, start, end);
    // Increases: at 0 s (from the start rate), 50 s and 150 s.
    let t90 = [(0, 0usize), (50, 1), (150, 3)]
        .iter()
        .map(|&(at, i)| {
            t90(
                s.forward(),
                start + Duration::from_secs(at),
                caps[i],
                Duration::from_secs(50),
            )
        })
        .collect();
    StepsResult {
        u: metrics::utilisation(ev.iter(), mean, start, end),
        q95: common::percentile(&q, 95.0),
        loss: common::loss_ratio(ev.iter(), None, start, end),
        t90,
    }
}

/// The ranges of [`camera_steps_judged`] for one mode: each increase's t90 apart (at 0 s,
/// 50 s and 150 s).
struct StepsRanges {
    u: RangeInclusive<f64>,
    q95_ms: RangeInclusive<f64>,
    loss: RangeInclusive<f64>,
    t90: [RangeInclusive<f64>; 3],
}

/// The issue's goals: t90 ≤ 8 s after each increase, U ≥ 0.88, loss ≤ 0.5 %, the bottleneck
/// queue's p95 ≤ 60 ms.
const STEPS_GOALS: StepsRanges = StepsRanges {
    u: 0.88..=1.0,
    q95_ms: 0.0..=60.0,
    loss: 0.0..=0.005,
    t90: [1.0..=8.0, 1.0..=8.0, 1.0..=8.0],
};

/// MMSys16 §6.1 with the camera-like source, every seed judged on `ranges`.
fn camera_steps_judged(mode: GccMode, what: &str, ranges: StepsRanges) {
    let cfg = camera_config(mode);
    let mut spread = Spread::new(format!("{mode:?} camera §6.1{what}"));
    for seed in seeds() {
        let r = camera_steps(&cfg, seed);
        eprintln!(
            "seed {seed}: U {:.3} q95 {:?} loss {:.4} t90 {:?}",
            r.u, r.q95, r.loss, r.t90
        );
        spread.check(seed, "U", r.u, ranges.u.clone());
        spread.check(
            seed,
            "q95, ms",
            r.q95.as_secs_f64() * 1e3,
            ranges.q95_ms.clone(),
        );
        spread.check(seed, "loss", r.loss, ranges.loss.clone());
        for ((t, at), within) in r.t90.iter().zip(["0 s", "50 s", "150 s"]).zip(&ranges.t90) {
            spread.check(
                seed,
                format!("t90 after the increase at {at}, s"),
                t.unwrap_or(f64::NAN),
                within.clone(),
            );
        }
    }
    spread.judge();
}

/// The issue's goals but the queue's, where the spread clears them.
#[test]
fn camera_capacity_steps_send_side() {
    camera_steps_judged(
        GccMode::SendSideTwcc,
        "",
        StepsRanges {
            // Range: the spread with the rule's margin; it does not clear U ≥ 0.88.
            u: 0.86..=1.0,
            // Range: the spread with the rule's margin (no goal in this test).
            q95_ms: 0.0..=90.0,
            // Range: the spread with the rule's margin; it does not clear the 0.5 % goal.
            loss: 0.0..=0.0055,
            // Ranges: the spread with the rule's margin; it does not clear 8 s (a seed whose
            // probe lands short climbs additively).
            t90: [1.0..=8.5, 1.0..=13.5, 1.0..=13.0],
        },
    );
}

/// The pacer's cap at 1.1× the link-capacity estimate holds a queue at the bottleneck; at
/// 1.0× it starved cg-rtp's pacer (see `GccConfig::pacing_link_capacity_factor`).
#[test]
#[ignore = "issue #14: send-side camera §6.1 does not meet the queue goal (q95 ≤ 60 ms) on every seed; the test prints the spread"]
fn camera_capacity_steps_send_side_queue() {
    camera_steps_judged(GccMode::SendSideTwcc, " (queue goal)", STEPS_GOALS);
}

/// REMB mode probes as libwebrtc's receive-side estimator (`GccConfig::probing`: the
/// receiver finds the clusters by their padding), and its receiver forgets the link
/// capacity when the receive rate alone passes it
/// (`GccConfig::remb_capacity_reset_by_receive_rate`). The stall probe
/// (`GccConfig::stall_probe_after`) stays on for the single flow and the three-flow fairness
/// of `gcc_scenarios`, at a cost in this scenario's t90.
#[test]
#[ignore = "issue #19: REMB camera §6.1 does not meet t90 ≤ 8 s and U ≥ 0.88 on every seed; the test prints the spread"]
fn camera_capacity_steps_remb() {
    camera_steps_judged(
        GccMode::ReceiverSideRemb,
        "",
        StepsRanges {
            // Range: the spread with the rule's margin.
            q95_ms: 0.0..=105.0,
            ..STEPS_GOALS
        },
    );
}

#[test]
#[ignore = "issue #14: REMB camera §6.1 does not meet the queue goal (q95 ≤ 60 ms) on every seed; the test prints the spread"]
fn camera_capacity_steps_remb_queue() {
    camera_steps_judged(GccMode::ReceiverSideRemb, " (queue goal)", STEPS_GOALS);
}

/// The ranges of [`camera_constant_utilisation`] with no goal behind them, each the spread
/// with the rule's margin.
struct ConstantRanges {
    u: RangeInclusive<f64>,
    q95_ms: RangeInclusive<f64>,
    loss: RangeInclusive<f64>,
}

/// Issue #14's goal, U ≥ 0.90 with camera content, is judged on the mean over the seeds,
/// each seed on a lower end under it: per seed the utilisation spreads across the goal, so a
/// per-seed 0.90 would be a coin toss on which seeds were chosen. Queue and loss over the run
/// too.
fn camera_constant_utilisation(mode: GccMode, cap: Bitrate, ranges: ConstantRanges) {
    let cfg = camera_config(mode);
    let mut spread = Spread::new(format!("{mode:?} camera {cap}"));
    let mut us = Vec::new();
    for seed in seeds() {
        let (s, start) = constant_run(&cfg, seed, cap, 120);
        let ev = s.forward().events();
        let end = start + Duration::from_secs(120);
        let u = metrics::utilisation(ev.iter(), cap, start, end);
        let q = metrics::queuing_delays(ev.iter(), None, start, end);
        let q95 = common::percentile(&q, 95.0);
        let loss = common::loss_ratio(ev.iter(), None, start, end);
        eprintln!("seed {seed}: U {u:.3} q95 {q95:?} loss {loss:.4}");
        spread.check(seed, "U", u, ranges.u.clone());
        spread.check(
            seed,
            "q95, ms",
            q95.as_secs_f64() * 1e3,
            ranges.q95_ms.clone(),
        );
        spread.check(seed, "loss", loss, ranges.loss.clone());
        us.push(u);
    }
    let mean = us.iter().sum::<f64>() / us.len() as f64;
    spread.check_set("mean U", mean, 0.90..=1.0);
    spread.judge();
}

#[test]
fn camera_constant_2mbps_send_side() {
    let ranges = ConstantRanges {
        u: 0.84..=1.0,
        q95_ms: 0.0..=75.0,
        loss: 0.0..=0.0005,
    };
    camera_constant_utilisation(GccMode::SendSideTwcc, Bitrate::mbps(2), ranges);
}

#[test]
fn camera_constant_1mbps_send_side() {
    let ranges = ConstantRanges {
        u: 0.87..=1.0,
        q95_ms: 0.0..=100.0,
        loss: 0.0..=0.0005,
    };
    camera_constant_utilisation(GccMode::SendSideTwcc, Bitrate::mbps(1), ranges);
}

#[test]
#[ignore = "issue #14: REMB mode does not meet U ≥ 0.90 with camera content at 2 Mbit/s; the test prints the spread"]
fn camera_constant_2mbps_remb() {
    let ranges = ConstantRanges {
        u: 0.84..=1.0,
        q95_ms: 0.0..=90.0,
        loss: 0.0..=0.0005,
    };
    camera_constant_utilisation(GccMode::ReceiverSideRemb, Bitrate::mbps(2), ranges);
}
