//! GCC in simulated time over cg-link: the scenarios of MMSys16 §6 (and the issue's
//! single-flow check), in both REMB (receiver-side) and send-side modes.
//!
//! Each scenario is deterministic (seeded encoder and link). Metrics come from the
//! bottleneck's per-packet events (`cg_cc::sim::metrics`). Each scenario is judged by a
//! [`Spread`] over [`seeds`]: every figure has a two-sided range, and `SEEDS=a-b` runs other
//! seeds against the same ranges.
//!
//! Rule for the ranges (issue #41): each is the goal where the spread over seeds 1–320
//! (the suite's and 304 it does not run; sixty-four were not enough: seeds 65–320 left ten
//! of the 64-seed ranges) clears it by at least a quarter of that spread's width. A figure
//! without a goal, or whose goal the spread does not clear so, gets the worst of those seeds
//! plus that margin, rounded outward to a whole step (5 ms, 0.01 of utilisation or of a rate
//! ratio, 0.05 % of loss; one step where every seed gave the same value), and says so beside
//! it. A figure over all the seeds at once (a median) is judged the same way on its spread
//! over every run of that many consecutive seeds within 1–64. Physical ends stay as they are:
//! a utilisation at most 1, a rate at most the capacity, Jain's index at most 1, a queue or a
//! loss at least 0, t90 at least 1 s (it measures over a 1 s window).
//! The spread and the ranges chosen are in `docs/notes/2026-12-02-spread-gcc.md`.

mod common;

use std::ops::RangeInclusive;
use std::time::{Duration, Instant};

use cg_cc::gcc::{GccConfig, GccMode};
use cg_cc::sim::{EncoderConfig, SimReceiver, SimSender, metrics};
use cg_link::CapacityConfig;
use cg_link::RateStep;
use cg_link::sim::Sim;
use cg_types::Bitrate;
use common::{MMSYS16_6_1, Spread, gcc_mode_pair, gcc_pair, links, mmsys16_6_1, seeds, t90};

struct Summary {
    utilisation: f64,
    q50: Duration,
    q95: Duration,
    loss: f64,
}

impl Summary {
    /// The 95th percentile of the bottleneck queue, ms.
    fn q95_ms(&self) -> f64 {
        ms(self.q95)
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn summarise(
    s: &Sim<SimSender, SimReceiver>,
    capacity: Bitrate,
    from: Instant,
    to: Instant,
) -> Summary {
    let ev = s.forward().events();
    let q = metrics::queuing_delays(ev.iter(), None, from, to);
    Summary {
        utilisation: metrics::utilisation(ev.iter(), capacity, from, to),
        q50: common::percentile(&q, 50.0),
        q95: common::percentile(&q, 95.0),
        loss: common::loss_ratio(ev.iter(), None, from, to),
    }
}

/// The single-flow goals: from 30 s U ≥ 0.85 and q95 ≤ 100 ms, no loss.
const SINGLE_U: RangeInclusive<f64> = 0.85..=1.0;

fn single_flow(mode: GccMode, u: RangeInclusive<f64>) {
    let cfg = GccConfig {
        mode,
        ..GccConfig::default()
    };
    let mut spread = Spread::new(format!("{mode:?} single flow 1 Mbit/s"));
    for seed in seeds() {
        single_flow_seed(&cfg, seed, u.clone(), &mut spread);
    }
    spread.judge();
}

/// One flow of `cfg` through 1 Mbit/s DropTail for 90 s, judged from 30 s on utilisation and
/// queue and over the whole run on loss. Returns the sender's last stats.
fn single_flow_seed(
    cfg: &GccConfig,
    seed: u64,
    u: RangeInclusive<f64>,
    spread: &mut Spread,
) -> cg_cc::ControllerStats {
    let start = Instant::now();
    let (f, r) = links(CapacityConfig::constant(Bitrate::mbps(1)), Bitrate::mbps(1));
    let mut s = Sim::new(f, r, start);
    let encoder = EncoderConfig {
        seed,
        ..EncoderConfig::default()
    };
    let (tx, rx) = gcc_pair(cfg, encoder, start);
    s.add_pair(tx, rx);
    let warm = start + Duration::from_secs(30);
    let end = start + Duration::from_secs(90);
    s.run_until(end);
    let all = summarise(&s, Bitrate::mbps(1), start, end);
    let steady = summarise(&s, Bitrate::mbps(1), warm, end);
    let mode = cfg.mode;
    eprintln!(
        "{mode:?} {:?} seed {seed}: whole run U={:.3} q50={:?} q95={:?} loss={:.4}; after 30 s U={:.3} q50={:?} q95={:?} loss={:.4}",
        cfg.filter,
        all.utilisation,
        all.q50,
        all.q95,
        all.loss,
        steady.utilisation,
        steady.q50,
        steady.q95,
        steady.loss
    );
    spread.check(seed, "U after 30 s", steady.utilisation, u);
    spread.check(seed, "q95 after 30 s, ms", steady.q95_ms(), 0.0..=100.0);
    spread.check(seed, "loss over the run", all.loss, 0.0..=0.0);
    s.sender(0).samples().last().expect("samples").stats.clone()
}

/// libwebrtc's trendline detector in place of the Kalman filter holds the same single-flow
/// ranges; its threshold (kept within 6–600, in its own units) is what the stats report as
/// `gamma`.
#[test]
fn single_flow_1mbps_send_side_trendline() {
    let cfg = GccConfig {
        filter: cg_cc::gcc::ArrivalFilterModel::Trendline,
        ..GccConfig::send_side()
    };
    let mut spread = Spread::new("SendSideTwcc trendline single flow 1 Mbit/s");
    for seed in seeds() {
        let last = single_flow_seed(&cfg, seed, SINGLE_U, &mut spread);
        let gamma = common::extra(&last, "gamma");
        spread.check(seed, "trendline threshold γ at the end", gamma, 6.0..=600.0);
    }
    spread.judge();
}

#[test]
fn single_flow_1mbps_remb() {
    // Range: the spread with the rule's margin; it does not clear U ≥ 0.85.
    single_flow(GccMode::ReceiverSideRemb, 0.81..=1.0);
}

#[test]
fn single_flow_1mbps_send_side() {
    single_flow(GccMode::SendSideTwcc, SINGLE_U);
}

/// The mean of a controller stat between `from` and `to` from the sender's samples.
fn mean_target(tx: &SimSender, from: Instant, to: Instant) -> Bitrate {
    let v: Vec<f64> = tx
        .samples()
        .iter()
        .filter(|s| s.time >= from && s.time < to)
        .map(|s| s.stats.target.as_bps_f64())
        .collect();
    Bitrate::from_bps_f64(v.iter().sum::<f64>() / v.len().max(1) as f64)
}

/// MMSys16 §6.1: capacity 1 → 2.5 → 0.5 → 1 Mbit/s, 50 s each.
fn capacity_steps(mode: GccMode, ranges: &StepsRanges) {
    let mut spread = Spread::new(format!("{mode:?} capacity steps"));
    for seed in seeds() {
        capacity_steps_seed(mode, seed, ranges, &mut spread);
    }
    spread.judge();
}

/// The ranges of [`capacity_steps`] with no goal behind them, each the spread with
/// the rule's margin: per phase the bottleneck queue's p95, and the loss over the run.
struct StepsRanges {
    q95_ms: [f64; 4],
    loss: RangeInclusive<f64>,
}

/// Per phase, judged on its second half (the rate must have followed the step): the
/// delivered rate against what is reachable (the capacity, or the encoder's 2 Mbit/s if
/// lower), from the 0.7 up to the capacity; the mean target against the reachable,
/// from the same 0.7 up to the 1.2; the bottleneck queue's p95. Loss over the run.
fn capacity_steps_seed(mode: GccMode, seed: u64, ranges: &StepsRanges, spread: &mut Spread) {
    let start = Instant::now();
    let caps = MMSYS16_6_1.map(Bitrate::kbps);
    let (schedule, mean) = mmsys16_6_1();
    // DT/300 at the schedule's mean rate, as the link converts time limits.
    let (f, r) = links(schedule, mean);
    let mut s = Sim::new(f, r, start);
    let (tx, rx) = gcc_mode_pair(mode, seed, start);
    s.add_pair(tx, rx);
    let end = start + Duration::from_secs(200);
    s.run_until(end);
    let ev = s.forward().events();
    let encoder_max = Bitrate::mbps(2);
    let mut report = Vec::new();
    for (i, &cap) in caps.iter().enumerate() {
        let phase = start + Duration::from_secs(50 * i as u64);
        let from = phase + Duration::from_secs(25);
        let to = phase + Duration::from_secs(50);
        let thr = metrics::throughput(ev.iter(), None, from, to);
        let target = mean_target(s.sender(0), from, to);
        let q = metrics::queuing_delays(ev.iter(), None, from, to);
        let q95 = common::percentile(&q, 95.0);
        let reachable = cap.min(encoder_max);
        report.push(format!(
            "phase {i} cap {cap}: throughput {thr} target {target} q95 {q95:?}"
        ));
        let full = cap.as_bps_f64() / reachable.as_bps_f64();
        spread.check(
            seed,
            format!("phase {i} ({cap}) throughput / reachable"),
            thr.as_bps_f64() / reachable.as_bps_f64(),
            0.7..=full,
        );
        spread.check(
            seed,
            format!("phase {i} ({cap}) target / reachable"),
            target.as_bps_f64() / reachable.as_bps_f64(),
            0.7..=1.2,
        );
        spread.check(
            seed,
            format!("phase {i} ({cap}) q95, ms"),
            ms(q95),
            0.0..=ranges.q95_ms[i],
        );
    }
    let all = summarise(&s, mean, start, end);
    eprintln!(
        "{mode:?} seed {seed} steps: {report:#?}\nwhole run U={:.3} q50={:?} q95={:?} loss={:.4}",
        all.utilisation, all.q50, all.q95, all.loss
    );
    spread.check(seed, "loss over the run", all.loss, ranges.loss.clone());
}

#[test]
fn capacity_steps_remb() {
    let ranges = StepsRanges {
        q95_ms: [95.0, 15.0, 170.0, 95.0],
        loss: 0.0..=0.0065,
    };
    capacity_steps(GccMode::ReceiverSideRemb, &ranges);
}

#[test]
fn capacity_steps_send_side() {
    let ranges = StepsRanges {
        // Phase 1 (the encoder's 2 Mbit/s on 2.5): the same value on every seed, one step.
        q95_ms: [70.0, 5.0, 120.0, 65.0],
        loss: 0.0..=0.0035,
    };
    capacity_steps(GccMode::SendSideTwcc, &ranges);
}

/// MMSys16 §6.2: three flows on 3 Mbit/s, started 30 s apart.
fn three_flows(mode: GccMode, ranges: &FlowsRanges) {
    let mut spread = Spread::new(format!("{mode:?} three flows"));
    for seed in seeds() {
        three_flows_seed(mode, seed, ranges, &mut spread);
    }
    spread.judge();
}

/// The ranges of [`three_flows`] with no goal behind them, each the spread with the
/// rule's margin.
struct FlowsRanges {
    q95_ms: RangeInclusive<f64>,
    loss: RangeInclusive<f64>,
}

/// Jain's index of the flows' rates from 100 s (the 0.9 up to 1); utilisation (the
/// issue's 0.7 up to 1), queue and loss with all three flows on, from 60 s.
fn three_flows_seed(mode: GccMode, seed: u64, ranges: &FlowsRanges, spread: &mut Spread) {
    let start = Instant::now();
    let cap = Bitrate::mbps(3);
    let (f, r) = links(CapacityConfig::constant(cap), cap);
    let mut s = Sim::new(f, r, start);
    for i in 0..3u64 {
        let at = start + Duration::from_secs(30 * i);
        s.run_until(at);
        let (tx, rx) = gcc_mode_pair(mode, seed + i, at);
        s.add_pair(tx, rx);
    }
    let end = start + Duration::from_secs(200);
    s.run_until(end);
    let from = start + Duration::from_secs(100);
    let ev = s.forward().events();
    let rates: Vec<f64> = (0..3)
        .map(|i| metrics::throughput(ev.iter(), Some(s.flow(i)), from, end).as_bps_f64())
        .collect();
    let jain = metrics::jain_index(&rates).unwrap_or(f64::NAN);
    let all = summarise(&s, cap, start + Duration::from_secs(60), end);
    eprintln!(
        "{mode:?} seed {seed} three flows: rates {rates:?} Jain {jain:.3}; with all three U={:.3} q50={:?} q95={:?} loss={:.4}",
        all.utilisation, all.q50, all.q95, all.loss
    );
    spread.check(seed, "Jain from 100 s", jain, 0.9..=1.0);
    spread.check(seed, "U from 60 s", all.utilisation, 0.7..=1.0);
    spread.check(
        seed,
        "q95 from 60 s, ms",
        all.q95_ms(),
        ranges.q95_ms.clone(),
    );
    spread.check(seed, "loss from 60 s", all.loss, ranges.loss.clone());
}

#[test]
fn three_flows_fairness_remb() {
    let ranges = FlowsRanges {
        q95_ms: 0.0..=245.0,
        loss: 0.0..=0.002,
    };
    three_flows(GccMode::ReceiverSideRemb, &ranges);
}

#[test]
fn three_flows_fairness_send_side() {
    let ranges = FlowsRanges {
        q95_ms: 0.0..=285.0,
        loss: 0.0..=0.0045,
    };
    three_flows(GccMode::SendSideTwcc, &ranges);
}

/// Seeds of the capacity-return cases unless `SEED` or `SEEDS` names others.
const RETURN_SEEDS: u64 = 32;

/// Issue #19: GCC recovers a returned capacity at high rates within seconds:
/// 20 → 10 → 20 Mbit/s (40 s, 40 s, 60 s), with the smooth source (the RFC 8593 model, like
/// game content: no large frames that would push the receive rate past the link-capacity
/// estimate by chance) and the camera-like one. Judged on the time the delivered rate takes
/// to reach 90 % of 20 Mbit/s after the return: every seed within 40 s, and over the seeds
/// the median within 6 s and three quarters within 10 s. The time is long-tailed (a seed
/// whose over-uses happen to land just after the return waits for the stall probe,
/// [`GccConfig::stall_probe_after`]), so the 10 s goal is judged on the seeds' 75th
/// percentile rather than on every seed. After the return also utilisation (from the
/// `ranges`) up to 1, and queue; loss over the run.
fn capacity_return(encoder: EncoderConfig, source: &str, ranges: ReturnRanges) {
    capacity_return_in(GccMode::SendSideTwcc, encoder, source, ranges)
}

/// The ranges of [`capacity_return`] with no goal behind them, each the spread with
/// the rule's margin.
struct ReturnRanges {
    u: RangeInclusive<f64>,
    q95_ms: RangeInclusive<f64>,
    loss: RangeInclusive<f64>,
}

/// [`capacity_return`] in `mode`; `source` names the encoder in the output.
fn capacity_return_in(mode: GccMode, encoder: EncoderConfig, source: &str, ranges: ReturnRanges) {
    let mut spread = Spread::new(format!("{mode:?} {source} 20 → 10 → 20 Mbit/s"));
    let mut times = Vec::new();
    let seeds: Vec<u64> = if std::env::var("SEED").is_ok() || std::env::var("SEEDS").is_ok() {
        seeds()
    } else {
        (1..=RETURN_SEEDS).collect()
    };
    for &seed in &seeds {
        let start = Instant::now();
        let step = |secs, mbps| RateStep {
            duration: Duration::from_secs(secs),
            rate: Bitrate::mbps(mbps),
        };
        let schedule = CapacityConfig::Schedule {
            steps: vec![step(40, 20), step(40, 10), step(60, 20)],
            repeat: false,
        };
        let (f, r) = links(schedule, Bitrate::mbps(20));
        let mut s = Sim::new(f, r, start);
        let cfg = GccConfig {
            mode,
            max_bitrate: Bitrate::mbps(30),
            ..GccConfig::default()
        };
        let encoder = EncoderConfig {
            seed,
            max_rate: Bitrate::mbps(30),
            ..encoder
        };
        let (tx, rx) = gcc_pair(&cfg, encoder, start);
        s.add_pair(tx, rx);
        let end = start + Duration::from_secs(140);
        s.run_until(end);
        let back = start + Duration::from_secs(80);
        let t = t90(
            s.forward(),
            back,
            Bitrate::mbps(20),
            Duration::from_secs(60),
        );
        let after = summarise(&s, Bitrate::mbps(20), back, end);
        let loss = common::loss_ratio(s.forward().events().iter(), None, start, end);
        eprintln!(
            "{mode:?} {source} seed {seed}: 90 % of 20 Mbit/s {t:?} s after the return; after it U {:.3} q95 {:?}, run loss {loss:.4}",
            after.utilisation, after.q95,
        );
        // t90 measures over a 1 s window, so it is never under 1 s.
        spread.check(
            seed,
            "t90 after the return, s",
            t.unwrap_or(f64::NAN),
            1.0..=40.0,
        );
        spread.check(
            seed,
            "U after the return",
            after.utilisation,
            ranges.u.clone(),
        );
        spread.check(
            seed,
            "q95 after the return, ms",
            after.q95_ms(),
            ranges.q95_ms.clone(),
        );
        spread.check(seed, "loss over the run", loss, ranges.loss.clone());
        times.push(t.unwrap_or(f64::INFINITY));
    }
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    spread.check_set("median t90, s", at(0.5), 1.0..=6.0);
    spread.check_set("p75 t90, s", at(0.75), 1.0..=10.0);
    spread.judge();
}

#[test]
fn capacity_return_at_20_mbps_send_side_smooth_source() {
    let ranges = ReturnRanges {
        u: 0.74..=1.0,
        q95_ms: 0.0..=70.0,
        loss: 0.0..=0.003,
    };
    capacity_return(EncoderConfig::default(), "smooth source", ranges);
}

#[test]
fn capacity_return_at_20_mbps_send_side_camera() {
    let ranges = ReturnRanges {
        u: 0.78..=1.0,
        q95_ms: 0.0..=150.0,
        loss: 0.0..=0.003,
    };
    capacity_return(EncoderConfig::camera(), "camera", ranges);
}

#[test]
#[ignore = "issue #19: REMB mode with the smooth source does not meet the capacity-return goal yet (the test prints the spread)"]
fn capacity_return_at_20_mbps_remb_smooth_source() {
    let ranges = ReturnRanges {
        u: 0.53..=1.0,
        q95_ms: 0.0..=50.0,
        loss: 0.0..=0.001,
    };
    capacity_return_in(
        GccMode::ReceiverSideRemb,
        EncoderConfig::default(),
        "smooth source",
        ranges,
    );
}

#[test]
fn capacity_return_at_20_mbps_remb_camera() {
    let ranges = ReturnRanges {
        u: 0.77..=1.0,
        q95_ms: 0.0..=150.0,
        loss: 0.0..=0.0045,
    };
    capacity_return_in(
        GccMode::ReceiverSideRemb,
        EncoderConfig::camera(),
        "camera",
        ranges,
    );
}
