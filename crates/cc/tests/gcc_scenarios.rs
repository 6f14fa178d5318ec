//! GCC in simulated time over cg-link: the scenarios of MMSys16 §6 (and the issue's
//! single-flow check), in both REMB (receiver-side) and send-side modes.
//!
//! Each scenario is deterministic (seeded encoder and link). Metrics come from the
//! bottleneck's per-packet events (`cg_cc::sim::metrics`).

mod common;

use std::time::{Duration, Instant};

use cg_cc::gcc::{GccConfig, GccMode};
use cg_cc::sim::{EncoderConfig, SimReceiver, SimSender, metrics};
use cg_link::CapacityConfig;
use cg_link::RateStep;
use cg_link::sim::Sim;
use cg_types::Bitrate;
use common::{MMSYS16_6_1, gcc_mode_pair, gcc_pair, links, mmsys16_6_1, seeds, t90};

struct Summary {
    utilisation: f64,
    q50: Duration,
    q95: Duration,
    loss: f64,
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

fn single_flow(mode: GccMode) {
    for seed in seeds() {
        single_flow_seed(
            &GccConfig {
                mode,
                ..GccConfig::default()
            },
            seed,
        );
    }
}

/// One flow of `cfg` through 1 Mbit/s DropTail for 90 s: from 30 s U ≥ 0.85 and q95 ≤ 100
/// ms, no loss. Returns the sender's last stats.
fn single_flow_seed(cfg: &GccConfig, seed: u64) -> cg_cc::ControllerStats {
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
    assert!(
        steady.utilisation >= 0.85,
        "seed {seed}: utilisation {:.3}",
        steady.utilisation
    );
    assert!(
        steady.q95 <= Duration::from_millis(100),
        "seed {seed}: q95 {:?}",
        steady.q95
    );
    assert_eq!(all.loss, 0.0, "seed {seed}: no loss over the whole run");
    s.sender(0).samples().last().expect("samples").stats.clone()
}

/// libwebrtc's trendline detector in place of the Kalman filter holds the same single-flow
/// bounds; its threshold (6–600, in its own units) is what the stats report as `gamma`.
#[test]
fn single_flow_1mbps_send_side_trendline() {
    let cfg = GccConfig {
        filter: cg_cc::gcc::ArrivalFilterModel::Trendline,
        ..GccConfig::send_side()
    };
    for seed in seeds() {
        let last = single_flow_seed(&cfg, seed);
        let gamma = common::extra(&last, "gamma");
        assert!(
            gamma >= 6.0,
            "seed {seed}: the trendline's threshold, γ {gamma}"
        );
    }
}

#[test]
fn single_flow_1mbps_remb() {
    single_flow(GccMode::ReceiverSideRemb);
}

#[test]
fn single_flow_1mbps_send_side() {
    single_flow(GccMode::SendSideTwcc);
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
fn capacity_steps(mode: GccMode) {
    for seed in seeds() {
        capacity_steps_seed(mode, seed);
    }
}

fn capacity_steps_seed(mode: GccMode, seed: u64) {
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
        // Second half of each phase: the rate must have followed the step.
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
        assert!(
            thr.as_bps_f64() >= 0.7 * reachable.as_bps_f64(),
            "{mode:?} seed {seed} phase {i}: throughput {thr} vs {reachable}\n{report:#?}"
        );
        assert!(
            target.as_bps_f64() <= 1.2 * reachable.as_bps_f64(),
            "{mode:?} seed {seed} phase {i}: target {target} vs {reachable}\n{report:#?}"
        );
    }
    let all = summarise(&s, mean, start, end);
    eprintln!(
        "{mode:?} seed {seed} steps: {report:#?}\nwhole run U={:.3} q50={:?} q95={:?} loss={:.4}",
        all.utilisation, all.q50, all.q95, all.loss
    );
}

#[test]
fn capacity_steps_remb() {
    capacity_steps(GccMode::ReceiverSideRemb);
}

#[test]
fn capacity_steps_send_side() {
    capacity_steps(GccMode::SendSideTwcc);
}

/// MMSys16 §6.2: three flows on 3 Mbit/s, started 30 s apart.
fn three_flows(mode: GccMode) {
    for seed in seeds() {
        three_flows_seed(mode, seed);
    }
}

fn three_flows_seed(mode: GccMode, seed: u64) {
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
    let jain = metrics::jain_index(&rates).unwrap_or(0.0);
    let all = summarise(&s, cap, start + Duration::from_secs(60), end);
    eprintln!(
        "{mode:?} seed {seed} three flows: rates {rates:?} Jain {jain:.3}; with all three U={:.3} q50={:?} q95={:?} loss={:.4}",
        all.utilisation, all.q50, all.q95, all.loss
    );
    assert!(jain >= 0.9, "seed {seed}: Jain {jain:.3}, rates {rates:?}");
    assert!(
        all.utilisation >= 0.7,
        "seed {seed}: U {:.3}",
        all.utilisation
    );
}

#[test]
fn three_flows_fairness_remb() {
    three_flows(GccMode::ReceiverSideRemb);
}

#[test]
fn three_flows_fairness_send_side() {
    three_flows(GccMode::SendSideTwcc);
}

/// Issue #19: GCC recovers a returned capacity at high rates within seconds:
/// 20 → 10 → 20 Mbit/s (40 s, 40 s, 60 s), with the smooth source (the RFC 8593 model, like
/// game content: no large frames that would push the receive rate past the link-capacity
/// estimate by chance) and the camera-like one. Judged over [`RETURN_SEEDS`] seeds
/// (`SEED=n` runs one) on the time the delivered rate takes to reach 90 % of 20 Mbit/s
/// after the return: three quarters of the seeds within 10 s, the median within 6 s, every
/// seed within 40 s. The time is long-tailed (a seed whose over-uses happen to land just
/// after the return waits for the stall probe, [`GccConfig::stall_probe_after`]), so a
/// bound on every seed at 10 s would be a coin toss; without the stall probe most seeds
/// miss 10 s.
/// Seeds of the capacity-return cases.
const RETURN_SEEDS: u64 = 32;

fn capacity_return(encoder: EncoderConfig) {
    capacity_return_in(GccMode::SendSideTwcc, encoder)
}

fn capacity_return_in(mode: GccMode, encoder: EncoderConfig) {
    let mut report = Vec::new();
    let mut times = Vec::new();
    let seeds: Vec<u64> = match std::env::var("SEED") {
        Ok(v) => vec![v.parse().expect("SEED=n")],
        Err(_) => (1..=RETURN_SEEDS).collect(),
    };
    for seed in seeds {
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
        let all = summarise(&s, Bitrate::mbps(20), back, end);
        report.push(format!(
            "seed {seed}: 90 % of 20 Mbit/s {t:?} s after the return; after it U {:.3} q95 {:?}, run loss {:.4}",
            all.utilisation,
            all.q95,
            common::loss_ratio(s.forward().events().iter(), None, start, end)
        ));
        times.push(t.unwrap_or(f64::INFINITY));
    }
    eprintln!("20 → 10 → 20 Mbit/s: {report:#?}");
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    let (median, p75, worst) = (at(0.5), at(0.75), at(1.0));
    eprintln!(
        "90 % of 20 Mbit/s after the return over {} seeds: median {median:.1} s, \
         p75 {p75:.1} s, worst {worst:.1} s",
        times.len()
    );
    assert!(
        median <= 6.0 && p75 <= 10.0 && worst <= 40.0,
        "median {median} s, p75 {p75} s, worst {worst} s\n{report:#?}"
    );
}

#[test]
fn capacity_return_at_20_mbps_send_side_smooth_source() {
    capacity_return(EncoderConfig::default());
}

#[test]
fn capacity_return_at_20_mbps_send_side_camera() {
    capacity_return(EncoderConfig::camera());
}

#[test]
#[ignore = "issue #19 goal not met in REMB mode with the smooth source (p75 over 10 s); the test prints the spread"]
fn capacity_return_at_20_mbps_remb_smooth_source() {
    capacity_return_in(GccMode::ReceiverSideRemb, EncoderConfig::default());
}

#[test]
fn capacity_return_at_20_mbps_remb_camera() {
    capacity_return_in(GccMode::ReceiverSideRemb, EncoderConfig::camera());
}
