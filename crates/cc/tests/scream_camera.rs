//! SCReAM v2 with a camera-like source (issue #14) in simulated time: MMSys16 §6.1 and
//! constant links through a 300 ms DropTail queue, no ECN, RTT 50 ms, 30 fps frames with 10×
//! key frames and 3–5× delta frames ([`EncoderConfig::camera`]).
//!
//! U for §6.1 / 1 Mbit/s / 2 Mbit/s, seeds 1–4: 0.80–0.83 / 0.83 / 0.86–0.88 since sRTT
//! leaves the receiver's feedback hold out ([`ScreamConfig::rtt_without_feedback_hold`];
//! RFC 8888-like reports every 40 ms or 16 packets made sRTT 72.7 ms at 2 Mbit/s, seed 1, on
//! a 50 ms path), against 0.75–0.79 / 0.79 / 0.79–0.82 before. What still keeps it below
//! issue #14's utilisation goal (the `rate_adjust` integral no longer does — its mean is
//! 0.007 at 2 Mbit/s, seed 1):
//!
//! - The window: each large frame (key frame, 3–5× frame, about one a second) is paced at up
//!   to 2.25 × target into the bottleneck, `qdelay_avg` passes T/2 and the virtual-CE rule
//!   cuts the window, which stays near 17 kB where 2 Mbit/s needs ~22 kB.
//! - The virtual-CE reaction repeats every 25 ms while `qdelay_avg` stays above T/2, which it
//!   does for an RTT and the queue's drain after the cut: at 0.5 Mbit/s in netlab the target
//!   fell from ~480 to ~220 kbit/s within a second every 8–10 s (last back-offs 1–5 % each).
//! - Pacing large frames without the adaptive 1.5× scale (`max_adaptive_pacing_scale` 1.0):
//!   0.77–0.81 / 0.81 / 0.81–0.86 (with the hold in sRTT), with up to 67 frames dropped in
//!   200 s.
//!
//! Every bound is asserted for each of encoder seeds 1–4, so it holds for the worst
//! (`SEED=n` runs one seed; `TRACE=from-to` prints the sender's samples in that window).

mod common;

use std::time::{Duration, Instant};

use cg_cc::ControllerConfig;
use cg_cc::scream::ScreamConfig;
use cg_cc::sim::{
    self, EncoderConfig, ReceiverConfig, SenderConfig, SimReceiver, SimSender, metrics,
};
use cg_link::sim::Sim;
use cg_link::{CapacityConfig, EventKind, Link};
use cg_types::{Bitrate, Ecn};
use common::{MMSYS16_6_1, links, mmsys16_6_1, seeds, t90};

const FPS: f64 = 30.0;

/// The default (draft) constants, no ECN, 30 fps; the encoder may go up to 5 Mbit/s (as the
/// GCC camera tests: with the papers' 2 Mbit/s VP8 cap the 2.5 Mbit/s phase cannot be filled).
fn scream_cfg() -> ScreamConfig {
    ScreamConfig {
        ecn: Ecn::NotEct,
        max_bitrate: Bitrate::mbps(5),
        frame_period: Duration::from_secs_f64(1.0 / FPS),
        ..ScreamConfig::default()
    }
}

fn run(
    cfg: &ScreamConfig,
    seed: u64,
    capacity: CapacityConfig,
    nominal: Bitrate,
    secs: u64,
) -> Run {
    run_on(cfg, seed, links(capacity, nominal), secs)
}

fn run_on(
    cfg: &ScreamConfig,
    seed: u64,
    (f, r): (Link<sim::SimPacket>, Link<sim::SimPacket>),
    secs: u64,
) -> Run {
    let start = Instant::now();
    let mut s = Sim::new(f, r, start);
    let sender = SenderConfig {
        encoder: EncoderConfig {
            seed,
            fps: FPS,
            max_rate: cfg.max_bitrate,
            ..EncoderConfig::camera()
        },
        ecn: cfg.ecn,
        ..SenderConfig::default()
    };
    let (tx, rx) = sim::pair(
        sender,
        ReceiverConfig::default(),
        cfg.build(start).expect("a valid config"),
        None,
        start,
    );
    s.add_pair(tx, rx);
    let end = start + Duration::from_secs(secs);
    s.run_until(end);
    common::trace_if_asked(&s, 0, start);
    Run { s, start, end }
}

struct Run {
    s: Sim<SimSender, SimReceiver>,
    start: Instant,
    end: Instant,
}

impl Run {
    fn at(&self, secs: u64) -> Instant {
        self.start + Duration::from_secs(secs)
    }

    /// Longest time without a delivered packet at the bottleneck (a stall the receiver sees
    /// as a freeze).
    fn longest_gap(&self) -> Duration {
        let mut last = self.start;
        let mut gap = Duration::ZERO;
        for e in self.s.forward().events().iter() {
            if matches!(e.kind, EventKind::Delivered { .. }) {
                gap = gap.max(e.time.saturating_duration_since(last));
                last = e.time;
            }
        }
        gap.max(self.end.saturating_duration_since(last))
    }

    /// Longest time between two frames' ends at the receiver, the end of the run included:
    /// the freeze a discard (or a skipped frame) shows; the whole run if no frame arrived.
    fn longest_freeze(&self) -> Duration {
        self.s
            .receiver(0)
            .longest_frame_gap(self.end)
            .unwrap_or(self.end.saturating_duration_since(self.start))
    }

    fn dropped_frames(&self) -> u64 {
        self.s.sender(0).dropped_frames()
    }
}

#[derive(Debug)]
struct Outcome {
    seed: u64,
    u: f64,
    phases: Vec<f64>,
    q95: Duration,
    loss: f64,
    t90: Vec<Option<f64>>,
    dropped: u64,
    gap: Duration,
    freeze: Duration,
}

impl Outcome {
    /// Issue #14's queue p95 ≤ 60 ms and loss ≤ 0.5 %, and no freeze over 1 s from a
    /// discard.
    fn assert_queue_loss_and_freeze(&self) {
        assert!(
            self.q95 <= Duration::from_millis(60),
            "seed {}: q95 {:?}",
            self.seed,
            self.q95
        );
        assert!(
            self.loss <= 0.005,
            "seed {}: loss {:.4}",
            self.seed,
            self.loss
        );
        assert!(
            self.freeze <= Duration::from_secs(1),
            "seed {}: a discard froze the picture up to {:?}",
            self.seed,
            self.freeze
        );
    }

    fn worst_t90(&self) -> f64 {
        self.t90
            .iter()
            .map(|t| t.unwrap_or(f64::INFINITY))
            .fold(0.0, f64::max)
    }
}

/// MMSys16 §6.1: 1 → 2.5 → 0.5 → 1 Mbit/s, 50 s each.
fn steps(cfg: &ScreamConfig, seed: u64) -> Outcome {
    let caps = MMSYS16_6_1.map(Bitrate::kbps);
    let (schedule, mean) = mmsys16_6_1();
    let r = run(cfg, seed, schedule, mean, 200);
    let ev = r.s.forward().events();
    let phases = (0..4u64)
        .map(|i| {
            let (a, b) = (r.at(50 * i), r.at(50 * i + 50));
            metrics::utilisation(ev.iter(), caps[i as usize], a, b)
        })
        .collect();
    let q = metrics::queuing_delays(ev.iter(), None, r.start, r.end);
    // Increases: at 0 s (from the start rate), 50 s and 150 s.
    let t90 = [(0, 0usize), (50, 1), (150, 3)]
        .iter()
        .map(|&(at, i)| t90(r.s.forward(), r.at(at), caps[i], Duration::from_secs(50)))
        .collect();
    Outcome {
        seed,
        u: metrics::utilisation(ev.iter(), mean, r.start, r.end),
        phases,
        q95: common::percentile(&q, 95.0),
        loss: common::loss_ratio(ev.iter(), None, r.start, r.end),
        t90,
        dropped: r.dropped_frames(),
        gap: r.longest_gap(),
        freeze: r.longest_freeze(),
    }
}

fn constant(cfg: &ScreamConfig, seed: u64, cap: Bitrate) -> Outcome {
    let r = run(cfg, seed, CapacityConfig::constant(cap), cap, 120);
    let ev = r.s.forward().events();
    let q = metrics::queuing_delays(ev.iter(), None, r.start, r.end);
    Outcome {
        seed,
        u: metrics::utilisation(ev.iter(), cap, r.start, r.end),
        phases: Vec::new(),
        q95: common::percentile(&q, 95.0),
        loss: common::loss_ratio(ev.iter(), None, r.start, r.end),
        t90: vec![t90(r.s.forward(), r.start, cap, Duration::from_secs(60))],
        dropped: r.dropped_frames(),
        gap: r.longest_gap(),
        freeze: r.longest_freeze(),
    }
}

fn report(name: &str, out: &[Outcome]) {
    eprintln!("{name}:");
    for o in out {
        eprintln!(
            "  seed {}: U {:.3} phases {:.2?} q95 {:.1} ms loss {:.4} t90 {:?} dropped frames {} longest gap {:?} longest frame gap {:?}",
            o.seed,
            o.u,
            o.phases,
            o.q95.as_secs_f64() * 1e3,
            o.loss,
            o.t90,
            o.dropped,
            o.gap,
            o.freeze
        );
    }
}

/// Issue #14's discard loop, through §6.1: the key frame a discard asks for must leave.
/// Measured, seeds 1–4: 46, 31, 22, 35 frames dropped in 200 s (22, 33, 14, 22 with the
/// feedback hold in sRTT; the reference's discard rule, `discard_recovery_max_delay: None,
/// large_frame_factor: None`: 323, 311, 291, 318), with q95 ≤ 41.1 ms and loss ≤ 0.05 %; the
/// longest time between two frames at the receiver 0.60, 0.85, 0.68, 0.48 s. (An earlier
/// estimate from the sender's 100 ms samples read a stat SCReAM did not export and gave
/// 0.8, 0.6, 0.6, 0.6 s; exported, it gave up to 1.05 s, an upper bound.)
#[test]
fn camera_capacity_steps_do_not_loop_discards() {
    let cfg = scream_cfg();
    let out: Vec<Outcome> = seeds().into_iter().map(|s| steps(&cfg, s)).collect();
    report("SCReAM camera §6.1", &out);
    for o in &out {
        assert!(
            o.dropped <= 50,
            "seed {}: {} frames dropped",
            o.seed,
            o.dropped
        );
        o.assert_queue_loss_and_freeze();
    }
}

/// Issue #14's bounds for §6.1: U ≥ 0.92, t90 ≤ 8 s after each increase, q95 ≤ 60 ms, loss
/// ≤ 0.5 %, no delivery gap over 1 s.
///
/// Measured, seeds 1–4: U 0.811, 0.802, 0.828, 0.821 (per phase 0.73–0.85); t90 up to 20.7 s;
/// q95 43–47 ms; loss ≤ 0.08 %; longest delivery gap 64 ms.
#[test]
#[ignore = "issue #14 goal not met: SCReAM camera §6.1, U ≥ 0.92 and t90 ≤ 8 s (the test prints each seed's figures)"]
fn camera_capacity_steps_meet_issue_14_bounds() {
    let cfg = scream_cfg();
    let out: Vec<Outcome> = seeds().into_iter().map(|s| steps(&cfg, s)).collect();
    report("SCReAM camera §6.1", &out);
    for o in &out {
        assert!(o.u >= 0.92, "seed {}: U {:.3}", o.seed, o.u);
        assert!(o.worst_t90() <= 8.0, "seed {}: t90 {:?}", o.seed, o.t90);
        o.assert_queue_loss_and_freeze();
        assert!(
            o.gap <= Duration::from_secs(1),
            "seed {}: gap {:?}",
            o.seed,
            o.gap
        );
    }
}

fn constant_bounds(cap: Bitrate) {
    let cfg = scream_cfg();
    let out: Vec<Outcome> = seeds()
        .into_iter()
        .map(|s| constant(&cfg, s, cap))
        .collect();
    report(&format!("SCReAM camera {cap}"), &out);
    for o in &out {
        assert!(o.u >= 0.90, "seed {}: U {:.3}", o.seed, o.u);
        assert!(
            o.gap <= Duration::from_secs(1),
            "seed {}: gap {:?}",
            o.seed,
            o.gap
        );
        assert!(
            o.freeze <= Duration::from_secs(1),
            "seed {}: freeze {:?}",
            o.seed,
            o.freeze
        );
    }
}

/// Issue #37's clean link: 50 Mbit/s, 1 ms each way, the camera capped at 5 Mbit/s. The
/// window must carry the maximum rate for as long as a packet stays unacknowledged — an sRTT
/// and a feedback gap (40 ms here, where the sRTT is 2 ms): no frame is discarded and the
/// sender holds the maximum from 10 s to the end of 120 s, each of the seeds.
#[test]
fn camera_on_a_short_fast_path_holds_the_maximum_without_discards() {
    let cap = Bitrate::mbps(50);
    let cfg = scream_cfg();
    for seed in seeds() {
        let r = run_on(
            &cfg,
            seed,
            common::links_with(CapacityConfig::constant(cap), cap, Duration::from_millis(1)),
            120,
        );
        let ev = r.s.forward().events();
        let u = metrics::utilisation(ev.iter(), cfg.max_bitrate, r.at(10), r.end);
        eprintln!(
            "seed {seed}: {:.3} of the maximum from 10 s, {} frames dropped, longest frame gap {:?}",
            u,
            r.dropped_frames(),
            r.longest_freeze()
        );
        assert_eq!(r.dropped_frames(), 0, "seed {seed}");
        // Headers count on the wire: a little over the media maximum.
        assert!(u > 0.9 && u < 1.15, "seed {seed}: {u:.3} of the maximum");
        assert!(
            r.longest_freeze() <= Duration::from_millis(150),
            "seed {seed}: {:?}",
            r.longest_freeze()
        );
    }
}

/// Measured, seeds 1–4: U 0.826, 0.832, 0.832, 0.827; 34, 12, 11, 22 frames dropped in 120 s.
#[test]
#[ignore = "issue #14 goal not met: SCReAM camera at 1 Mbit/s, U ≥ 0.90 (the test prints each seed's figures)"]
fn camera_constant_1mbps_utilisation() {
    constant_bounds(Bitrate::mbps(1));
}

/// Measured, seeds 1–4: U 0.859, 0.872, 0.876, 0.862; 35, 24, 21, 22 frames dropped in 120 s.
#[test]
#[ignore = "issue #14 goal not met: SCReAM camera at 2 Mbit/s, U ≥ 0.90 (the test prints each seed's figures)"]
fn camera_constant_2mbps_utilisation() {
    constant_bounds(Bitrate::mbps(2));
}
