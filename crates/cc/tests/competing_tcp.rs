//! The controllers against a loss-based TCP flow (the simulated CUBIC of `cg_cc::sim::tcp`)
//! on one bottleneck, in simulated time (issue #19).
//!
//! Two setups from the papers:
//!
//! - **TMA24 §IV** (SCReAM): 50 Mbit/s, RTT 30 ms, the cloud-gaming flow (ECT(1), 60 fps)
//!   alone for 10 s, then one CUBIC bulk flow; judged over 40–100 s (CUBIC's slow start
//!   overshoots a deep queue and throws SCReAM down first; TMA24 leaves a minute too). The
//!   paper's TCP flow is an iperf whose rate cap steps up every minute; here it is uncapped,
//!   the harder case. Queues: drop-tail 300 ms (issue #19's case: SCReAM keeps at least a
//!   quarter of the link), CoDel (Linux defaults) and DualPI2 (TMA24 §IV-C: the paper's CG
//!   flow kept 24.25 Mbit/s of 50 at 0.53 ms mean queuing delay; TCP 32.9 % of the link).
//! - **CCR16 §4.2** (GCC, `nTCP = 1`): 2 Mbit/s so the fair share is 1 Mbit/s, RTT 50 ms,
//!   the VP8-like 2 Mbit/s source, one CUBIC flow from 30 s; judged over 60–130 s. The
//!   paper: "the goodput obtained by the video flow is always kept around the fair share,
//!   even in the case of DT/300", with CoDel and PIE too.
//!
//! The TMA24 setup also runs at 10 Mbit/s and 30 fps, matched by netlab's
//! `scenarios/matched/scream-cubic-*-10mbit.toml` (real cg-send, kernel CUBIC); the CCR16
//! DT/300 cases by `scenarios/matched/gcc{,-remb}-cubic-droptail-2mbit.toml`.
//!
//! Every case runs the seeds of [`common::seeds`] (`SEED=n` one, `SEEDS=a-b` a range), prints
//! a line per seed, and judges each seed's figures and the mean media share over the seeds
//! on two-sided ranges ([`Spread`]). With one competing flow the fair share is half the link,
//! so no media share, per seed or on average, may pass 1.5 times it (0.75 of the link) unless
//! a comment says why; the link used is at most all of it.
//!
//! Margin rule: a range's end lies beyond the worst of seeds 1–128 (the suite's and 112 it does
//! not run; 64 were not enough: seeds 65–128 left three cases' ranges) by at least 0.03 of the
//! link for a share or the link used, 0.02 for the mean share (over seeds 1–64 in blocks of
//! sixteen, as the suite runs them), and a quarter of the worst value, at least 0.5 ms or one
//! loss in a thousand, for a delay or a loss ratio. A goal (issue #19's quarter of the link
//! for SCReAM and for CUBIC beside it, CCR16's fair-share bounds on the mean, the single-flow
//! delay bound) is the range wherever the spread clears it by that margin; where it does not,
//! a comment says so. The spread behind each range: `docs/notes/2026-12-02-spread-scream-tcp.md`.

mod common;

use std::ops::RangeInclusive;
use std::time::{Duration, Instant};

use cg_cc::ControllerConfig;
use cg_cc::gcc::{GccConfig, GccMode, GccTuning, GccVariant, ThresholdChoice};
use cg_cc::scream::ScreamConfig;
use cg_cc::sim::{
    self, AnyReceiver, AnySender, EncoderConfig, ReceiverConfig, SenderConfig, TcpConfig, metrics,
};
use cg_link::qdisc::{CodelConfig, DropTailConfig, DualPi2Config, PieConfig};
use cg_link::sim::Sim;
use cg_link::{FlowId, Link, LinkConfig, QdiscConfig};
use cg_types::{Bitrate, Ecn};
use common::Spread;

/// What one run measured, over the judged window.
struct Outcome {
    /// The real-time flow's share of the link capacity.
    media_share: f64,
    /// The TCP flow's share.
    tcp_share: f64,
    /// Mean and 99th percentile of the real-time flow's queuing delay, ms.
    media_q_mean: f64,
    media_q_p99: f64,
    /// The real-time flow's loss ratio at the bottleneck.
    media_loss: f64,
}

impl Outcome {
    fn line(&self, name: &str, seed: u64) {
        eprintln!(
            "{name} seed {seed}: media {:.3} / TCP {:.3} of the link, media queue mean {:.2} ms \
             p99 {:.2} ms, media loss {:.4}",
            self.media_share, self.tcp_share, self.media_q_mean, self.media_q_p99, self.media_loss
        );
    }

    /// Records this run's figures in `spread`, each against its range in `r`.
    fn check(&self, spread: &mut Spread, seed: u64, r: &Ranges) {
        let used = self.media_share + self.tcp_share;
        spread.check(seed, "media share", self.media_share, r.media.clone());
        spread.check(seed, "TCP share", self.tcp_share, r.tcp.clone());
        spread.check(seed, "link used", used, r.used.clone());
        spread.check(
            seed,
            "media queue mean ms",
            self.media_q_mean,
            r.q_mean.clone(),
        );
        spread.check(
            seed,
            "media queue p99 ms",
            self.media_q_p99,
            r.q_p99.clone(),
        );
        spread.check(seed, "media loss", self.media_loss, r.loss.clone());
    }
}

/// A path of `cap` with `qdisc`, `one_way` each way, and a 100 Mbit/s return.
fn links(
    cap: Bitrate,
    qdisc: QdiscConfig,
    one_way: Duration,
) -> (Link<sim::SimPacket>, Link<sim::SimPacket>) {
    let forward = LinkConfig {
        event_limit: None,
        ..LinkConfig::constant(cap)
    }
    .with_qdisc(qdisc)
    .with_delay(one_way);
    let reverse = LinkConfig::constant(Bitrate::mbps(100)).with_delay(one_way);
    (
        Link::new(forward).expect("valid forward link"),
        Link::new(reverse).expect("valid reverse link"),
    )
}

/// A run: the path, when the CUBIC flow starts, and the judged window (from the start).
struct Setup {
    cap: Bitrate,
    qdisc: QdiscConfig,
    one_way: Duration,
    tcp_start: Duration,
    /// When the CUBIC flow stops (`None`: it runs to the end).
    tcp_stop: Option<Duration>,
    from: Duration,
    to: Duration,
}

impl Setup {
    /// Runs `media` (pair 0) from `start` and a CUBIC flow (pair 1) from `tcp_start`.
    fn run(&self, media: (AnySender, AnyReceiver), start: Instant) -> Outcome {
        let (f, r) = links(self.cap, self.qdisc.clone(), self.one_way);
        let mut s: Sim<AnySender, AnyReceiver> = Sim::new(f, r, start);
        s.add_pair(media.0, media.1);
        let (tx, rx) = sim::tcp_pair(
            TcpConfig {
                start: self.tcp_start,
                stop: self.tcp_stop,
                ..TcpConfig::cubic()
            },
            start,
        );
        s.add_pair(tx.into(), rx.into());
        let (from, to) = (start + self.from, start + self.to);
        s.run_until(to);

        let ev = s.forward().events();
        let share = |i: u16| {
            metrics::throughput(ev.iter(), Some(FlowId::from_index(i)), from, to).as_bps_f64()
                / self.cap.as_bps_f64()
        };
        let q = metrics::queuing_delays(ev.iter(), Some(FlowId::from_index(0)), from, to);
        // NaN without samples: nothing measured misses every range.
        let mean = q.iter().map(Duration::as_secs_f64).sum::<f64>() / q.len() as f64;
        Outcome {
            media_share: share(0),
            tcp_share: share(1),
            media_q_mean: mean * 1e3,
            media_q_p99: metrics::percentile(&q, 99.0).map_or(f64::NAN, |d| d.as_secs_f64() * 1e3),
            media_loss: common::loss_ratio(ev.iter(), Some(FlowId::from_index(0)), from, to),
        }
    }
}

// ---- TMA24 §IV: SCReAM against CUBIC at 50 Mbit/s ----

const TMA24_CAP: Bitrate = Bitrate::mbps(50);
const TMA24_ONE_WAY: Duration = Duration::from_millis(15);
const TMA24_FPS: f64 = 60.0;

fn scream_flow(seed: u64, fps: f64, now: Instant) -> (AnySender, AnyReceiver) {
    let cfg = ScreamConfig {
        ecn: Ecn::Ect1,
        max_bitrate: Bitrate::mbps(100),
        frame_period: Duration::from_secs_f64(1.0 / fps),
        ..ScreamConfig::default()
    };
    let sender = SenderConfig {
        encoder: EncoderConfig {
            fps,
            max_rate: Bitrate::mbps(100),
            seed,
            ..EncoderConfig::default()
        },
        ecn: cfg.ecn,
        ..SenderConfig::default()
    };
    let (tx, rx) = sim::pair(
        sender,
        ReceiverConfig::default(),
        cfg.build(now).expect("a valid config"),
        None,
        now,
    );
    (tx.into(), rx.into())
}

fn tma24(qdisc: QdiscConfig, seed: u64) -> Outcome {
    tma24_at(TMA24_CAP, TMA24_FPS, qdisc, seed)
}

fn tma24_at(cap: Bitrate, fps: f64, qdisc: QdiscConfig, seed: u64) -> Outcome {
    let start = Instant::now();
    Setup {
        cap,
        qdisc,
        one_way: TMA24_ONE_WAY,
        tcp_start: Duration::from_secs(10),
        tcp_stop: None,
        from: Duration::from_secs(40),
        to: Duration::from_secs(100),
    }
    .run(scream_flow(seed, fps, start), start)
}

/// The ranges a case judges: each seed's figures, shares of the link capacity and delays in
/// ms, and the mean media share over the seeds run.
struct Ranges {
    mean: RangeInclusive<f64>,
    media: RangeInclusive<f64>,
    tcp: RangeInclusive<f64>,
    /// Media and TCP together.
    used: RangeInclusive<f64>,
    q_mean: RangeInclusive<f64>,
    q_p99: RangeInclusive<f64>,
    loss: RangeInclusive<f64>,
}

/// Runs `run` for every seed of [`common::seeds`], prints each run, and judges every figure
/// and the mean media share on their spread.
fn judge(name: &str, run: impl Fn(u64) -> Outcome, r: Ranges) {
    let mut spread = Spread::new(name);
    let mut shares = Vec::new();
    for seed in common::seeds() {
        let o = run(seed);
        o.line(name, seed);
        o.check(&mut spread, seed, &r);
        shares.push(o.media_share);
    }
    // A NaN share makes the mean NaN, which misses its range too.
    let mean = shares.iter().sum::<f64>() / shares.len() as f64;
    spread.check_set("mean media share", mean, r.mean);
    spread.judge();
}

/// The most of the link a case's figures may show as used: delivered bytes counted in the
/// window include the packet in service at its start (1.0001 measured on a full DT/300 link).
const FULL: f64 = 1.02;

/// Issue #19's case: SCReAM keeps more than a quarter of the link on average, never starved,
/// and leaves CUBIC at least a quarter.
#[test]
fn scream_keeps_a_quarter_of_a_droptail_link_against_cubic() {
    judge(
        "SCReAM vs CUBIC DT/300 50 Mbit/s",
        |seed| tma24(droptail(), seed),
        Ranges {
            mean: 0.25..=0.75,
            media: 0.22..=0.75,
            tcp: 0.25..=0.78,
            used: 0.97..=FULL,
            q_mean: 0.0..=317.0,
            q_p99: 0.0..=375.0,
            loss: 0.0..=0.0035,
        },
    );
}

/// The TMA24 cases at 10 Mbit/s and 30 fps, as netlab runs them with the real cg-send and
/// kernel CUBIC (the encoders here cannot fill 50 Mbit/s in real time; the note of issue #19
/// holds the two side by side).
fn tma24_10mbps(qdisc: QdiscConfig, seed: u64) -> Outcome {
    tma24_at(Bitrate::mbps(10), 30.0, qdisc, seed)
}

#[test]
fn scream_keeps_a_quarter_of_a_10mbps_droptail_link_against_cubic() {
    judge(
        "SCReAM vs CUBIC DT/300 10 Mbit/s",
        |seed| tma24_10mbps(droptail(), seed),
        Ranges {
            mean: 0.25..=0.75,
            media: 0.24..=0.75,
            tcp: 0.25..=0.76,
            used: 0.97..=FULL,
            q_mean: 0.0..=310.0,
            q_p99: 0.0..=374.0,
            loss: 0.0..=0.008,
        },
    );
}

#[test]
fn scream_keeps_a_quarter_of_a_10mbps_codel_link_against_cubic() {
    judge(
        "SCReAM vs CUBIC CoDel 10 Mbit/s",
        |seed| tma24_10mbps(codel(), seed),
        Ranges {
            mean: 0.25..=0.75,
            media: 0.23..=0.75,
            tcp: 0.25..=0.76,
            used: 0.94..=FULL,
            q_mean: 0.0..=9.3,
            q_p99: 0.0..=34.0,
            loss: 0.0..=0.006,
        },
    );
}

/// TMA24 §IV-C's CG flow kept 48 % of the link against CUBIC through DualPI2 (at 50 Mbit/s);
/// here, at 10 Mbit/s, SCReAM's L4S reaction leaves CUBIC most of it, as netlab with the real
/// cg-send and kernel CUBIC does (the note of issue #19).
#[test]
#[ignore = "issue #19 finding: checks SCReAM's goal of a quarter of a 10 Mbit/s DualPI2 link against CUBIC, which its L4S reaction misses here and in netlab; prints each figure's spread"]
fn scream_in_the_l_queue_keeps_a_quarter_of_a_10mbps_link_against_cubic() {
    judge(
        "SCReAM vs CUBIC DualPI2 10 Mbit/s",
        |seed| tma24_10mbps(dualpi2(), seed),
        Ranges {
            mean: 0.25..=0.75,
            // Each seed at least 0.2 of the link, the floor this case has had.
            media: 0.2..=0.75,
            tcp: 0.25..=0.89,
            used: 0.96..=FULL,
            q_mean: 0.0..=1.2,
            q_p99: 0.0..=1.7,
            loss: 0.0..=0.001,
        },
    );
}

#[test]
fn scream_keeps_a_quarter_of_a_codel_link_against_cubic() {
    judge(
        "SCReAM vs CUBIC CoDel 50 Mbit/s",
        |seed| tma24(codel(), seed),
        Ranges {
            mean: 0.25..=0.75,
            media: 0.29..=0.75,
            tcp: 0.25..=0.68,
            used: 0.92..=FULL,
            q_mean: 0.0..=6.4,
            q_p99: 0.0..=31.0,
            loss: 0.0..=0.0015,
        },
    );
}

/// TMA24 §IV-C: the CG flow kept about half the link at a sub-millisecond mean queuing delay
/// in the L queue.
#[test]
fn scream_in_the_l_queue_keeps_its_share_and_a_short_queue_against_cubic() {
    judge(
        "SCReAM vs CUBIC DualPI2 50 Mbit/s",
        |seed| tma24(dualpi2(), seed),
        Ranges {
            mean: 0.25..=0.75,
            media: 0.25..=0.75,
            tcp: 0.25..=0.73,
            used: 0.91..=FULL,
            // A short queue: TMA24's L queue kept the mean under a millisecond.
            q_mean: 0.0..=1.0,
            q_p99: 0.0..=0.75,
            loss: 0.0..=0.001,
        },
    );
}

// ---- CCR16 §4.2: GCC against CUBIC at a 1 Mbit/s fair share ----

const CCR16_CAP: Bitrate = Bitrate::mbps(2);

fn ccr16(mode: GccMode, qdisc: QdiscConfig, seed: u64) -> Outcome {
    ccr16_window(mode, qdisc, seed, None, (60, 130))
}

/// CCR16's setup with CUBIC stopping at `tcp_stop`, judged over `window` (s).
fn ccr16_window(
    mode: GccMode,
    qdisc: QdiscConfig,
    seed: u64,
    tcp_stop: Option<Duration>,
    window: (u64, u64),
) -> Outcome {
    let start = Instant::now();
    let (tx, rx) = common::gcc_mode_pair(mode, seed, start);
    Setup {
        cap: CCR16_CAP,
        qdisc,
        one_way: common::ONE_WAY,
        tcp_start: Duration::from_secs(30),
        tcp_stop,
        from: Duration::from_secs(window.0),
        to: Duration::from_secs(window.1),
    }
    .run((tx.into(), rx.into()), start)
}

fn droptail() -> QdiscConfig {
    QdiscConfig::DropTail(DropTailConfig::time(Duration::from_millis(300)))
}

fn codel() -> QdiscConfig {
    QdiscConfig::Codel(CodelConfig::default())
}

fn dualpi2() -> QdiscConfig {
    QdiscConfig::Dualpi2(DualPi2Config {
        limit: 1000,
        ..DualPi2Config::default()
    })
}

fn pie() -> QdiscConfig {
    QdiscConfig::Pie(PieConfig::default())
}

/// CCR16's "around the fair share" ("always kept around the fair share, even in the case of
/// DT/300"): the fair share is half the 2 Mbit/s link, and the mean media share lies between
/// 0.8 and 1.5 times it (0.4 and 0.75 of the link) unless a case's comment says why not.
fn gcc_case(mode: GccMode, name: &str, qdisc: QdiscConfig, ranges: Ranges) {
    judge(
        &format!("GCC {} vs CUBIC {name} 2 Mbit/s", label(mode)),
        |seed| ccr16(mode, qdisc.clone(), seed),
        ranges,
    );
}

fn label(mode: GccMode) -> &'static str {
    match mode {
        GccMode::ReceiverSideRemb => "REMB",
        GccMode::SendSideTwcc => "send-side",
    }
}

#[test]
fn gcc_remb_gets_its_fair_share_against_cubic_droptail() {
    let ranges = Ranges {
        mean: 0.4..=0.75,
        // Above 1.5 times the fair share on some seeds of 1–64 (a finding, issue #41): the
        // worst seed with the margin.
        media: 0.18..=0.89,
        tcp: 0.11..=0.82,
        used: 0.96..=FULL,
        q_mean: 0.0..=345.0,
        q_p99: 0.0..=373.0,
        loss: 0.0..=0.018,
    };
    gcc_case(GccMode::ReceiverSideRemb, "DT/300", droptail(), ranges);
}

#[test]
fn gcc_remb_gets_its_fair_share_against_cubic_codel() {
    let ranges = Ranges {
        mean: 0.4..=0.75,
        // Seeds beyond 64 pass 1.5 times the fair share (a finding): the worst with the margin.
        media: 0.35..=0.79,
        tcp: 0.20..=0.65,
        used: 0.95..=FULL,
        q_mean: 0.0..=36.0,
        q_p99: 0.0..=160.0,
        loss: 0.0..=0.135,
    };
    gcc_case(GccMode::ReceiverSideRemb, "CoDel", codel(), ranges);
}

#[test]
fn gcc_remb_gets_its_fair_share_against_cubic_pie() {
    let ranges = Ranges {
        mean: 0.4..=0.75,
        media: 0.22..=0.75,
        tcp: 0.37..=0.76,
        used: 0.94..=FULL,
        q_mean: 0.0..=26.0,
        q_p99: 0.0..=102.0,
        loss: 0.0..=0.108,
    };
    gcc_case(GccMode::ReceiverSideRemb, "PIE", pie(), ranges);
}

/// Through DT/300 send-side GCC takes more than 1.5 times the fair share of the simulated
/// link, on average and on most seeds, and leaves CUBIC little, which netlab with kernel
/// CUBIC does not show (issue #41 lists the disagreement): the mean is bounded at 0.9 of the
/// link and each seed beyond the worst of 1–64 with the margin (a finding, not a goal).
#[test]
fn gcc_send_side_gets_its_fair_share_against_cubic_droptail() {
    let ranges = Ranges {
        mean: 0.4..=0.9,
        media: 0.18..=0.96,
        tcp: 0.04..=0.82,
        used: 0.95..=FULL,
        q_mean: 0.0..=353.0,
        q_p99: 0.0..=373.0,
        loss: 0.0..=0.015,
    };
    gcc_case(GccMode::SendSideTwcc, "DT/300", droptail(), ranges);
}

#[test]
fn gcc_send_side_gets_its_fair_share_against_cubic_codel() {
    let ranges = Ranges {
        mean: 0.4..=0.75,
        media: 0.34..=0.75,
        tcp: 0.36..=0.65,
        used: 0.95..=FULL,
        q_mean: 0.0..=29.0,
        q_p99: 0.0..=100.0,
        loss: 0.0..=0.084,
    };
    gcc_case(GccMode::SendSideTwcc, "CoDel", codel(), ranges);
}

#[test]
fn gcc_send_side_gets_its_fair_share_against_cubic_pie() {
    let ranges = Ranges {
        mean: 0.4..=0.75,
        media: 0.29..=0.75,
        tcp: 0.35..=0.69,
        used: 0.94..=FULL,
        q_mean: 0.0..=26.0,
        q_p99: 0.0..=96.0,
        loss: 0.0..=0.095,
    };
    gcc_case(GccMode::SendSideTwcc, "PIE", pie(), ranges);
}

/// When the CUBIC flow leaves (CCR16 §4.2's TCP flows stop at 300 s), GCC alone drains the
/// DT/300 queue again: CUBIC from 30 to 90 s, judged over 120–180 s against `gcc_scenarios`'
/// single-flow delay bound from 30 s after the start (here the queuing delay's p99 rather than
/// its p95 ≤ 100 ms). Guards GCC's standing-queue check, which stands down while a competing
/// flow holds the queue
/// ([`GccConfig::standing_queue_competing`](cg_cc::gcc::GccConfig::standing_queue_competing)).
fn gcc_after_cubic_leaves(mode: GccMode, case: &str, ranges: Ranges) {
    judge(
        &format!(
            "GCC {} after CUBIC left DT/300 2 Mbit/s, {case}",
            label(mode)
        ),
        |seed| {
            ccr16_window(
                mode,
                droptail(),
                seed,
                Some(Duration::from_secs(90)),
                (120, 180),
            )
        },
        ranges,
    );
}

/// After CUBIC left: the single-flow delay bound for the queue's p99, the rest from the
/// spread; `media` is the link's utilisation.
fn after_cubic_ranges(media: RangeInclusive<f64>, q_mean: f64) -> Ranges {
    Ranges {
        mean: 0.82..=FULL,
        // CUBIC has stopped: the link used is the media share.
        used: media.clone(),
        media,
        tcp: 0.0..=0.0,
        q_mean: 0.0..=q_mean,
        q_p99: 0.0..=100.0,
        loss: 0.0..=0.001,
    }
}

#[test]
fn gcc_remb_drains_the_queue_after_cubic_leaves() {
    let ranges = after_cubic_ranges(0.76..=FULL, 8.0);
    gcc_after_cubic_leaves(GccMode::ReceiverSideRemb, "drain", ranges);
}

#[test]
fn gcc_send_side_drains_the_queue_after_cubic_leaves() {
    let ranges = after_cubic_ranges(0.77..=FULL, 12.5);
    gcc_after_cubic_leaves(GccMode::SendSideTwcc, "drain", ranges);
}

/// `gcc_scenarios`' single-flow utilisation bound (≥ 0.85 on every seed) after CUBIC left,
/// with the drain tests' other ranges.
#[test]
#[ignore = "issue #19: checks that REMB GCC fills the link again after CUBIC left, which it misses on some seeds (each over-use cuts it to α·R below an encoder whose ceiling is the link rate); prints each figure's spread"]
fn gcc_remb_fills_the_link_again_after_cubic_leaves() {
    let ranges = after_cubic_ranges(0.85..=FULL, 8.0);
    gcc_after_cubic_leaves(GccMode::ReceiverSideRemb, "fill goal", ranges);
}

/// [`gcc_remb_fills_the_link_again_after_cubic_leaves`] for send-side GCC.
#[test]
#[ignore = "issue #19: checks that send-side GCC fills the link again after CUBIC left, which it misses on some seeds (each over-use cuts it to α·R below an encoder whose ceiling is the link rate); prints each figure's spread"]
fn gcc_send_side_fills_the_link_again_after_cubic_leaves() {
    let ranges = after_cubic_ranges(0.85..=FULL, 7.0);
    gcc_after_cubic_leaves(GccMode::SendSideTwcc, "fill goal", ranges);
}

/// MMSys16 §4.2, Fig. 11: one GCC-REMB flow (camera-like frames, ≤ 2 Mbit/s) from 0 s and
/// one CUBIC flow from 100 s through 1 Mbit/s, drop-tail 350 ms, RTT 50 ms, judged over
/// 100–400 s. `variant` with the static threshold (2013's γ̄) when `static_threshold`.
fn fig11(variant: GccVariant, static_threshold: bool, seed: u64) -> Outcome {
    let start = Instant::now();
    let mut cfg = GccConfig::default();
    GccTuning {
        variant: Some(variant),
        threshold: static_threshold.then_some(ThresholdChoice::Static),
        ..GccTuning::default()
    }
    .apply(&mut cfg)
    .expect("a valid tuning");
    let encoder = EncoderConfig {
        seed,
        ..EncoderConfig::camera()
    };
    let (tx, rx) = common::gcc_pair(&cfg, encoder, start);
    Setup {
        cap: Bitrate::mbps(1),
        qdisc: QdiscConfig::DropTail(DropTailConfig::time(Duration::from_millis(350))),
        one_way: common::ONE_WAY,
        tcp_start: Duration::from_secs(100),
        tcp_stop: None,
        from: Duration::from_secs(100),
        to: Duration::from_secs(400),
    }
    .run((tx.into(), rx.into()), start)
}

/// The published GCC shows the paper's finding: MMSys16's algorithm (`--gcc-variant
/// mmsys16`) with a static threshold is starved by CUBIC (Fig. 11 (a)), and with its adaptive
/// threshold it is not (Fig. 11 (b)). The static case is bistable, as the 2013 paper found
/// (its Fig. 11: one run friendly, the next starved): on most seeds the flow is starved, on
/// the rest it holds most of the link, so it is judged over the seeds: starved (under 0.3 of
/// the link, 60 % of the fair share) on at least 0.3 of them and a mean share of at most 0.5.
/// The adaptive case is judged on every seed, both sides. Ranges from the spread over seeds
/// 1–48 with a margin, and cg's default with the static threshold fails both set checks
/// (figures: `docs/notes/2026-12-07.md`).
#[test]
fn the_mmsys16_variant_is_starved_by_tcp_with_a_static_threshold_as_in_fig_11() {
    let mut spread = Spread::new("MMSys16 Fig. 11, GCC-REMB vs CUBIC DT/350 1 Mbit/s");
    let mut static_shares = Vec::new();
    for seed in common::seeds() {
        let fixed = fig11(GccVariant::Mmsys16, true, seed);
        fixed.line("mmsys16, static threshold", seed);
        static_shares.push(fixed.media_share);
        let adaptive = fig11(GccVariant::Mmsys16, false, seed);
        adaptive.line("mmsys16, adaptive threshold", seed);
        spread.check(
            seed,
            "adaptive threshold: media share",
            adaptive.media_share,
            0.30..=0.85,
        );
        for (name, o) in [("static", &fixed), ("adaptive", &adaptive)] {
            spread.check(
                seed,
                format!("{name} threshold: link used"),
                o.media_share + o.tcp_share,
                0.95..=FULL,
            );
        }
    }
    // No seeds: NaN, which misses both ranges.
    let n = static_shares.len() as f64;
    let starved = static_shares.iter().filter(|s| **s < 0.3).count() as f64;
    spread.check_set(
        "static threshold: share of seeds starved",
        starved / n,
        0.3..=1.0,
    );
    spread.check_set(
        "static threshold: mean media share",
        static_shares.iter().sum::<f64>() / n,
        0.0..=0.5,
    );
    spread.judge();
}
