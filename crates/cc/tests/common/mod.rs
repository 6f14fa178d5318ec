//! What the simulated scenario tests share: the papers' path (RTP 50 ms, a 300 ms DropTail
//! bottleneck, a 100 Mbit/s return path), the MMSys16 §6.1 schedule, the encoder seeds and
//! the t90 measure.

#![allow(dead_code)] // each test binary uses its own part

use std::time::{Duration, Instant};

use cg_cc::gcc::{GccConfig, GccMode};
use cg_cc::sim::{
    self, EncoderConfig, ReceiverConfig, SenderConfig, SimReceiver, SimSender, metrics,
};
use cg_cc::{ControllerConfig, ReceiveSideEstimator};
use cg_link::qdisc::DropTailConfig;
use cg_link::sim::Sim;
use cg_link::{CapacityConfig, Link, LinkConfig, QdiscConfig, RateStep};
use cg_types::Bitrate;

#[allow(unused_imports)] // each test binary uses its own part
pub use cg_host::testing::Spread;

/// Seeds the suite runs by default (issue #41: at least sixteen).
pub const SEEDS: std::ops::RangeInclusive<u64> = 1..=16;

/// The seeds to run: `SEED=n` names one (to look at one run by hand), `SEEDS=a-b` a range or
/// `SEEDS=n` a count (to check the ranges on seeds the suite does not use), otherwise
/// [`SEEDS`].
pub fn seeds() -> Vec<u64> {
    cg_host::testing::repetitions("SEED", "SEEDS", SEEDS)
}

/// One-way delay each way (RTT 50 ms).
pub const ONE_WAY: Duration = Duration::from_millis(25);

/// The forward bottleneck (`capacity`, DropTail 300 ms at `nominal`, as the link converts
/// time limits) and a 100 Mbit/s return path, [`ONE_WAY`] each.
pub fn links(
    capacity: CapacityConfig,
    nominal: Bitrate,
) -> (Link<sim::SimPacket>, Link<sim::SimPacket>) {
    links_with(capacity, nominal, ONE_WAY)
}

/// [`links`] with `one_way` delay each way.
pub fn links_with(
    capacity: CapacityConfig,
    nominal: Bitrate,
    one_way: Duration,
) -> (Link<sim::SimPacket>, Link<sim::SimPacket>) {
    let forward = LinkConfig {
        capacity,
        event_limit: None,
        ..LinkConfig::constant(nominal)
    }
    .with_delay(one_way)
    .with_qdisc(QdiscConfig::DropTail(DropTailConfig::time(
        Duration::from_millis(300),
    )));
    let reverse = LinkConfig::constant(Bitrate::mbps(100)).with_delay(one_way);
    (
        Link::new(forward).expect("valid forward link"),
        Link::new(reverse).expect("valid reverse link"),
    )
}

/// MMSys16 §6.1's capacities: 1 → 2.5 → 0.5 → 1 Mbit/s, 50 s each.
pub const MMSYS16_6_1: [u64; 4] = [1000, 2500, 500, 1000];

/// [`MMSYS16_6_1`] as a link schedule, with its mean rate (for the DropTail limit).
pub fn mmsys16_6_1() -> (CapacityConfig, Bitrate) {
    let steps = MMSYS16_6_1
        .iter()
        .map(|&kbps| RateStep {
            duration: Duration::from_secs(50),
            rate: Bitrate::kbps(kbps),
        })
        .collect();
    let schedule = CapacityConfig::Schedule {
        steps,
        repeat: false,
    };
    (schedule, Bitrate::kbps(1250))
}

/// [`metrics::loss_ratio`], NaN when nothing was offered: NaN fails every bound.
pub fn loss_ratio<'a>(
    events: impl IntoIterator<Item = &'a cg_link::LinkEvent>,
    flow: Option<cg_link::FlowId>,
    from: Instant,
    to: Instant,
) -> f64 {
    metrics::loss_ratio(events, flow, from, to).unwrap_or(f64::NAN)
}

/// [`metrics::percentile`], `Duration::MAX` without samples: no queue measured fails every
/// upper bound instead of reading as an empty queue.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    metrics::percentile(sorted, p).unwrap_or(Duration::MAX)
}

/// The larger of two figures, NaN if either is (`f64::max` drops a NaN).
pub fn worst_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}

/// The smaller of two figures, NaN if either is.
pub fn worst_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.min(b)
    }
}

/// Seconds from `at` until the delivered rate over the bottleneck `link` (1 s bins, sliding
/// by 100 ms) first reaches 90 % of `cap`; `None` within `limit`.
pub fn t90(link: &Link<sim::SimPacket>, at: Instant, cap: Bitrate, limit: Duration) -> Option<f64> {
    let ev = link.events();
    let series = metrics::rate_series(ev.iter(), None, at, at + limit, Duration::from_millis(100));
    let need = 0.9 * cap.as_bps_f64();
    (0..series.len().saturating_sub(9)).find_map(|i| {
        let mean = series[i..i + 10]
            .iter()
            .map(|(_, r)| r.as_bps_f64())
            .sum::<f64>()
            / 10.0;
        (mean >= need).then(|| (i + 10) as f64 / 10.0)
    })
}

/// A GCC sender and receiver (with the REMB estimator in [`GccMode::ReceiverSideRemb`]) for
/// the simulated `encoder`.
pub fn gcc_pair(cfg: &GccConfig, encoder: EncoderConfig, now: Instant) -> (SimSender, SimReceiver) {
    let estimator: Option<Box<dyn ReceiveSideEstimator>> = match cfg.mode {
        GccMode::ReceiverSideRemb => {
            Some(Box::new(cfg.build_receiver(now).expect("a valid config")))
        }
        GccMode::SendSideTwcc => None,
    };
    let sender = SenderConfig {
        encoder,
        ..SenderConfig::default()
    };
    sim::pair(
        sender,
        ReceiverConfig::default(),
        cfg.build(now).expect("a valid config"),
        estimator,
        now,
    )
}

/// [`gcc_pair`] with GCC's defaults in `mode` and the default (RFC 8593, 2 Mbit/s) source
/// seeded `seed`.
pub fn gcc_mode_pair(mode: GccMode, seed: u64, now: Instant) -> (SimSender, SimReceiver) {
    let cfg = GccConfig {
        mode,
        ..GccConfig::default()
    };
    let encoder = EncoderConfig {
        seed,
        ..EncoderConfig::default()
    };
    gcc_pair(&cfg, encoder, now)
}

/// A controller's [`extra`](cg_cc::ControllerStats::extra) quantity, NaN if it reports none
/// (for traces and sample scans).
pub fn extra(stats: &cg_cc::ControllerStats, name: &str) -> f64 {
    stats.extra_value(name).unwrap_or(f64::NAN)
}

/// The `p`th percentile of the media (RTP) queue delay in flow `flow`'s sender samples
/// between `from` and `to`, ms (SCReAM's `rtp_queue_delay_ms`; NaN without samples).
pub fn rtp_queue_percentile(
    s: &Sim<SimSender, SimReceiver>,
    flow: usize,
    from: Instant,
    to: Instant,
    p: f64,
) -> f64 {
    let mut v: Vec<Duration> = s
        .sender(flow)
        .samples()
        .iter()
        .filter(|smp| smp.time >= from && smp.time < to)
        .map(|smp| extra(&smp.stats, "rtp_queue_delay_ms"))
        .filter(|d| d.is_finite() && *d >= 0.0)
        .map(|d| Duration::from_secs_f64(d / 1e3))
        .collect();
    v.sort();
    metrics::percentile(&v, p).map_or(f64::NAN, |d| d.as_secs_f64() * 1e3)
}

/// With `TRACE=from-to` (seconds since `start`), prints flow `flow`'s sender samples in that
/// window (rate, window, queues, SCReAM's state) to look at one run by hand.
pub fn trace_if_asked(s: &Sim<SimSender, SimReceiver>, flow: usize, start: Instant) {
    let Ok(window) = std::env::var("TRACE") else {
        return;
    };
    let (lo, hi) = window.split_once('-').expect("TRACE=from-to");
    let (lo, hi): (f64, f64) = (lo.parse().expect("from"), hi.parse().expect("to"));
    for smp in s.sender(flow).samples() {
        let t = (smp.time - start).as_secs_f64();
        if t < lo || t > hi {
            continue;
        }
        eprintln!(
            "{t:6.1} rtt {:5.1} tgt {:5.0} enc {:5.0} pace {:5.0} cwnd {:6} q {:5.1} qavg {:5.1} rtpq {:5.0} ms {:6} B ra {:.3} large {} disc {} ev {} T {} V {} D {} ler {:.4} bn {:.0} a {:.3} ce {}",
            smp.stats.rtt.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3),
            smp.stats.target.as_kbps_f64(),
            smp.encoder_rate.as_kbps_f64(),
            smp.stats.pacing.as_kbps_f64(),
            smp.stats.cwnd.map_or(0, |c| c.as_bytes()),
            smp.stats
                .queue_delay
                .map_or(f64::NAN, |d| d.as_secs_f64() * 1e3),
            extra(&smp.stats, "qdelay_avg_ms"),
            extra(&smp.stats, "rtp_queue_delay_ms"),
            smp.queue.as_bytes(),
            extra(&smp.stats, "rate_adjust"),
            extra(&smp.stats, "large_backlog"),
            extra(&smp.stats, "discards"),
            extra(&smp.stats, "last_event"),
            extra(&smp.stats, "qdelay_target_ms"),
            extra(&smp.stats, "competing_verdict"),
            extra(&smp.stats, "competing_drain"),
            extra(&smp.stats, "loss_event_rate"),
            extra(&smp.stats, "bottleneck_bps") / 1e3,
            extra(&smp.stats, "alpha"),
            extra(&smp.stats, "ce_packets"),
        );
    }
}
