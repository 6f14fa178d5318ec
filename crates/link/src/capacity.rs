//! Link capacity: constant, a piecewise-constant schedule, or a Mahimahi delivery trace.
//!
//! Capacity is a *service curve*, not a ticking clock: given when a packet starts being served
//! and its size, `Capacity::finish` computes when its last bit leaves, integrating across
//! schedule steps or walking trace opportunities. Nothing ticks per millisecond, so a real-time
//! driver sleeps until the next completion and a simulation jumps straight to it.
//!
//! A schedule step of rate zero is an outage, and a trace may have gaps without
//! opportunities: `Capacity::service_start` then names the instant the link is back, so the
//! head of the queue waits in the qdisc until then.

use std::time::{Duration, Instant};

use cg_types::{Bitrate, DataSize};
use serde::{Deserialize, Serialize};

use crate::error::{Error, bounded};

/// Bytes per Mahimahi delivery opportunity (one MTU-sized packet, `mahimahi/src/packet/link_queue.cc`).
pub const MAHIMAHI_OPPORTUNITY: DataSize = DataSize::bytes(1500);

/// How fast the link serialises.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum CapacityConfig {
    /// A fixed rate.
    Constant {
        /// Bits per second; must be positive.
        rate: Bitrate,
    },
    /// Piecewise-constant rate: each step holds for its duration, starting when the link
    /// starts (its epoch). After the last step the schedule repeats if `repeat`, else the last
    /// rate holds for ever. E.g. MMSys16's 1 → 2.5 → 0.5 → 1 Mb/s, 50 s each.
    ///
    /// A step of rate zero is an **outage**: the link serialises nothing while it lasts.
    /// Arrivals still reach the qdisc and wait there (a limit in time keeps the byte size it
    /// had at the last positive rate, so the queue fills up to it and then drops); the packet
    /// at the head of the queue is dequeued when the next positive-rate step starts, so its
    /// sojourn includes the outage. A packet whose serialisation has begun when the link goes
    /// down is paused, not lost: the bits already sent stay sent and the rest follow when the
    /// link returns (as an integral of the rate over time). Packets already serialised are
    /// propagating and are still delivered, so deliveries stop one propagation delay after
    /// the outage starts.
    Schedule {
        /// The steps, in order; at least one. Durations are positive; rates may be zero
        /// (outages), but at least one is positive and, unless `repeat`, the last one is (it
        /// holds for ever).
        steps: Vec<RateStep>,
        /// Loop the schedule (default `false`: hold the last rate).
        #[serde(default)]
        repeat: bool,
    },
    /// A Mahimahi trace: a 1500-byte delivery opportunity at each listed millisecond, looping
    /// with the last timestamp as its period (Netravali et al., USENIX ATC 2015).
    Trace {
        /// The opportunities.
        trace: MahimahiTrace,
    },
    /// No serialisation delay at all (an ideal reverse path that only adds propagation delay).
    Unlimited,
}

impl Default for CapacityConfig {
    /// 10 Mb/s.
    fn default() -> Self {
        CapacityConfig::Constant {
            rate: Bitrate::mbps(10),
        }
    }
}

impl CapacityConfig {
    /// A constant `rate`.
    pub fn constant(rate: Bitrate) -> Self {
        CapacityConfig::Constant { rate }
    }

    /// The mean rate: the rate itself, the time-weighted mean of a schedule's steps, or a
    /// trace's opportunities × 1500 B over its period. Qdiscs size time limits with it.
    /// [`Bitrate::MAX`] for an unlimited link.
    pub fn mean_rate(&self) -> Bitrate {
        match self {
            CapacityConfig::Constant { rate } => *rate,
            CapacityConfig::Schedule { steps, .. } => {
                let total: f64 = steps.iter().map(|s| s.duration.as_secs_f64()).sum();
                let bits: f64 = steps
                    .iter()
                    .map(|s| s.rate.as_bps_f64() * s.duration.as_secs_f64())
                    .sum();
                if total > 0.0 {
                    Bitrate::from_bps_f64(bits / total)
                } else {
                    Bitrate::ZERO
                }
            }
            CapacityConfig::Trace { trace } => trace.mean_rate(),
            CapacityConfig::Unlimited => Bitrate::MAX,
        }
    }

    /// The rate in force `t` after the link's start: a schedule's step (zero in an outage;
    /// after the last step the last rate, or the schedule again if it repeats), a trace's
    /// mean rate, [`Bitrate::MAX`] for an unlimited link. What a run's plots draw as the
    /// capacity line.
    pub fn rate_at(&self, t: Duration) -> Bitrate {
        match self {
            CapacityConfig::Schedule { steps, repeat } => {
                let t = schedule_offset(steps, *repeat, t);
                let mut start = Duration::ZERO;
                for s in steps {
                    start += s.duration;
                    if t < start {
                        return s.rate;
                    }
                }
                steps.last().map_or(Bitrate::ZERO, |s| s.rate)
            }
            other => other.mean_rate(),
        }
    }

    /// The bits the link can carry over `[a, b)` of its time (the denominator of a run's
    /// utilisation): the integral of the rate, an outage counting zero, or a trace's
    /// opportunities in `[a, b)` × 1500 bytes, so a gap in a trace counts zero too. Infinite
    /// for an unlimited link.
    pub fn bits_between(&self, a: Duration, b: Duration) -> f64 {
        if b <= a {
            return 0.0;
        }
        match self {
            CapacityConfig::Unlimited => f64::INFINITY,
            _ => self.bits_before(b) - self.bits_before(a),
        }
    }

    /// The bits the link can carry over `[0, t)`.
    fn bits_before(&self, t: Duration) -> f64 {
        match self {
            CapacityConfig::Constant { rate } => rate.as_bps_f64() * t.as_secs_f64(),
            CapacityConfig::Schedule { steps, repeat } => {
                let period: Duration = steps.iter().map(|s| s.duration).sum();
                let cycle_bits: f64 = steps
                    .iter()
                    .map(|s| s.rate.as_bps_f64() * s.duration.as_secs_f64())
                    .sum();
                let (cycles, mut left) = if *repeat && !period.is_zero() {
                    let n = (t.as_nanos() / period.as_nanos()) as f64;
                    (n, schedule_offset(steps, true, t))
                } else {
                    (0.0, t)
                };
                let mut bits = cycles * cycle_bits;
                for (i, s) in steps.iter().enumerate() {
                    // Without repeat the last rate holds for ever.
                    let last = i + 1 == steps.len() && !*repeat;
                    let d = if last { left } else { left.min(s.duration) };
                    bits += s.rate.as_bps_f64() * d.as_secs_f64();
                    left -= d;
                }
                bits
            }
            CapacityConfig::Trace { trace } => {
                trace.opportunities_before(t) as f64 * MAHIMAHI_OPPORTUNITY.as_bits() as f64
            }
            CapacityConfig::Unlimited => f64::INFINITY,
        }
    }
}

/// `t` within a repeating schedule's period (unchanged if it does not repeat).
fn schedule_offset(steps: &[RateStep], repeat: bool, t: Duration) -> Duration {
    let period: Duration = steps.iter().map(|s| s.duration).sum();
    if !repeat || period.is_zero() {
        return t;
    }
    let ns = t.as_nanos() % period.as_nanos();
    Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
}

/// One step of a [`CapacityConfig::Schedule`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateStep {
    /// How long this rate holds.
    #[serde(with = "humantime_serde")]
    pub duration: Duration,
    /// The rate; zero for an outage (see [`CapacityConfig::Schedule`]).
    pub rate: Bitrate,
}

impl RateStep {
    /// An outage of `duration`: a step of rate zero.
    pub fn down(duration: Duration) -> Self {
        RateStep {
            duration,
            rate: Bitrate::ZERO,
        }
    }
}

/// A Mahimahi link trace: millisecond timestamps of 1500-byte delivery opportunities.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Vec<u64>", into = "Vec<u64>")]
pub struct MahimahiTrace {
    millis: Vec<u64>,
}

impl MahimahiTrace {
    /// A trace from its timestamps (milliseconds, non-decreasing, last one positive).
    pub fn new(millis: Vec<u64>) -> Result<Self, Error> {
        if millis.is_empty() {
            return Err(Error::Empty {
                what: "Mahimahi trace",
            });
        }
        if let Some(i) = millis.windows(2).position(|w| w[1] < w[0]) {
            return Err(Error::Trace {
                line: i + 2,
                reason: format!("timestamp {} is before {}", millis[i + 1], millis[i]),
            });
        }
        if millis.last() == Some(&0) {
            return Err(Error::Trace {
                line: millis.len(),
                reason: "the last timestamp (the trace's period) must be positive".into(),
            });
        }
        Ok(MahimahiTrace { millis })
    }

    /// Parses the text of a Mahimahi trace file: one integer millisecond per line; blank lines
    /// are ignored.
    pub fn parse(text: &str) -> Result<Self, Error> {
        let mut millis = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let ms = line.parse::<u64>().map_err(|e| Error::Trace {
                line: i + 1,
                reason: format!("`{line}` is not a millisecond count: {e}"),
            })?;
            if millis.last().is_some_and(|&last| ms < last) {
                return Err(Error::Trace {
                    line: i + 1,
                    reason: format!("timestamp {ms} goes backwards"),
                });
            }
            millis.push(ms);
        }
        Self::new(millis)
    }

    /// A trace of a constant `rate` over `period` (opportunities spread evenly), for tests and
    /// for comparing trace and rate models.
    pub fn constant(rate: Bitrate, period: Duration) -> Result<Self, Error> {
        let opportunities = (rate * period).as_bytes() / MAHIMAHI_OPPORTUNITY.as_bytes();
        let ms = period.as_millis() as u64;
        if opportunities == 0 || ms == 0 {
            return Err(Error::Empty {
                what: "Mahimahi trace (rate × period below one opportunity)",
            });
        }
        Self::new(
            (1..=opportunities)
                .map(|k| k * ms / opportunities)
                .collect(),
        )
    }

    /// The timestamps.
    pub fn millis(&self) -> &[u64] {
        &self.millis
    }

    /// The period after which the trace repeats (its last timestamp).
    pub fn period(&self) -> Duration {
        Duration::from_millis(*self.millis.last().expect("a trace is never empty"))
    }

    /// How many opportunities come before `t` (from the trace's start): opportunity
    /// `k·P + m` for every cycle `k ≥ 0` and timestamp `m`, as the link serves them.
    pub fn opportunities_before(&self, t: Duration) -> u128 {
        let last = *self.millis.last().expect("a trace is never empty");
        let t = t.as_nanos();
        if t == 0 {
            return 0;
        }
        let period = u128::from(last) * 1_000_000;
        let (q, s) = (t / period, t % period);
        let before = self
            .millis
            .partition_point(|&m| u128::from(m) * 1_000_000 < s) as u128;
        // With t on a period boundary (s = 0) the timestamps equal to the period fall on t
        // itself.
        let at_boundary = if s == 0 {
            self.millis.iter().filter(|&&m| m == last).count() as u128
        } else {
            0
        };
        q * self.millis.len() as u128 + before - at_boundary
    }

    /// Opportunities × 1500 B / period.
    pub fn mean_rate(&self) -> Bitrate {
        DataSize::bytes(self.millis.len() as u64 * MAHIMAHI_OPPORTUNITY.as_bytes()) / self.period()
    }
}

impl TryFrom<Vec<u64>> for MahimahiTrace {
    type Error = Error;
    fn try_from(v: Vec<u64>) -> Result<Self, Error> {
        MahimahiTrace::new(v)
    }
}

impl From<MahimahiTrace> for Vec<u64> {
    fn from(t: MahimahiTrace) -> Vec<u64> {
        t.millis
    }
}

/// The running capacity model, anchored at the link's epoch.
#[derive(Debug, Clone)]
pub(crate) struct Capacity {
    kind: Kind,
    /// The instant the schedule or trace starts; set by [`Capacity::anchor`] (the link's
    /// first `now`), assumed to be the first instant asked about until then.
    epoch: Option<Instant>,
}

#[derive(Debug, Clone)]
enum Kind {
    Constant(u64),
    Schedule {
        /// Cumulative start offset of each step, nanoseconds.
        starts: Vec<u128>,
        rates: Vec<u64>,
        period: u128,
        repeat: bool,
        /// Some step has rate zero: only then does `service_start` look the time up.
        outages: bool,
    },
    Trace {
        /// Opportunity offsets within one period, nanoseconds.
        offsets: Vec<u128>,
        period: u128,
        /// Index (over all periods) of the next unused opportunity.
        next: u64,
        /// Bytes left in the last used opportunity, and its time.
        credit: u64,
        credit_at: Option<Instant>,
    },
    Unlimited,
}

const NANOS: u128 = 1_000_000_000;

impl Capacity {
    /// Validates `config`.
    pub(crate) fn new(config: &CapacityConfig) -> Result<Self, Error> {
        let kind = match config {
            CapacityConfig::Constant { rate } => {
                if *rate == Bitrate::ZERO {
                    return Err(Error::ZeroRate {
                        what: "link capacity",
                    });
                }
                Kind::Constant(rate.as_bps())
            }
            CapacityConfig::Schedule { steps, repeat } => {
                if steps.is_empty() {
                    return Err(Error::Empty {
                        what: "capacity schedule",
                    });
                }
                if steps.iter().all(|s| s.rate == Bitrate::ZERO) {
                    return Err(Error::ZeroRate {
                        what: "capacity schedule (every step is an outage)",
                    });
                }
                if !*repeat && steps.last().is_some_and(|s| s.rate == Bitrate::ZERO) {
                    return Err(Error::ZeroRate {
                        what: "the last step of a capacity schedule that does not repeat (it holds for ever)",
                    });
                }
                let mut starts = Vec::with_capacity(steps.len());
                let mut t = 0u128;
                for s in steps {
                    bounded("capacity schedule step duration", s.duration)?;
                    if s.duration.is_zero() {
                        return Err(Error::ZeroLimit {
                            what: "capacity schedule step duration",
                        });
                    }
                    starts.push(t);
                    t += s.duration.as_nanos();
                }
                Kind::Schedule {
                    starts,
                    rates: steps.iter().map(|s| s.rate.as_bps()).collect(),
                    period: t,
                    repeat: *repeat,
                    outages: steps.iter().any(|s| s.rate == Bitrate::ZERO),
                }
            }
            CapacityConfig::Trace { trace } => {
                // Re-validate: a struct literal could bypass `MahimahiTrace::new`.
                let trace = MahimahiTrace::new(trace.millis.clone())?;
                Kind::Trace {
                    offsets: trace
                        .millis
                        .iter()
                        .map(|&ms| ms as u128 * 1_000_000)
                        .collect(),
                    period: trace.period().as_nanos(),
                    next: 0,
                    credit: 0,
                    credit_at: None,
                }
            }
            CapacityConfig::Unlimited => Kind::Unlimited,
        };
        Ok(Capacity { kind, epoch: None })
    }

    /// Starts the schedule or trace at `epoch` (only the first call counts).
    pub(crate) fn anchor(&mut self, epoch: Instant) {
        self.epoch.get_or_insert(epoch);
    }

    /// The epoch, or `t` if not anchored yet.
    fn epoch_or(&self, t: Instant) -> Instant {
        self.epoch.unwrap_or(t)
    }

    /// The earliest instant at or after `t` at which a packet can start being served: the
    /// next trace opportunity, the end of a schedule's outage, `t` itself otherwise.
    pub(crate) fn service_start(&self, t: Instant) -> Instant {
        match &self.kind {
            Kind::Schedule { outages: false, .. } => t,
            Kind::Schedule {
                starts,
                rates,
                period,
                repeat,
                ..
            } => {
                let epoch = self.epoch_or(t);
                let off = t.saturating_duration_since(epoch).as_nanos();
                if !*repeat && off >= *period {
                    return t; // the last rate holds for ever, and it is positive
                }
                let mut base = if *repeat { off - off % *period } else { 0 };
                let mut i = starts.partition_point(|&s| s <= off - base) - 1;
                if rates[i] > 0 {
                    return t;
                }
                // Down: walk to the next step with a positive rate. One exists before the end
                // of a non-repeating schedule (its last rate is positive) and within one
                // period of a repeating one (validated in `new`).
                loop {
                    i += 1;
                    if i == rates.len() {
                        i = 0;
                        base += *period;
                    }
                    if rates[i] > 0 {
                        let ns = base + starts[i];
                        return epoch + Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX));
                    }
                }
            }
            Kind::Trace {
                offsets,
                period,
                next,
                credit,
                credit_at,
            } => {
                if *credit > 0 && *credit_at == Some(t) {
                    return t;
                }
                let k = self.first_opportunity(offsets, *period, t).max(*next);
                self.opportunity_time(offsets, *period, k, t)
            }
            _ => t,
        }
    }

    /// When the last bit of a `size`-byte packet whose service starts at `start` leaves.
    /// Consumes trace opportunities.
    pub(crate) fn finish(&mut self, start: Instant, size: DataSize) -> Instant {
        let epoch = self.epoch_or(start);
        match &mut self.kind {
            Kind::Constant(bps) => start + bits_time(size.as_bits() as u128 * NANOS, *bps),
            Kind::Unlimited => start,
            Kind::Schedule {
                starts,
                rates,
                period,
                repeat,
                ..
            } => {
                // Remaining work in bit·nanoseconds (bits × 1e9), so that a step's capacity is
                // rate × duration_ns exactly.
                let mut work = size.as_bits() as u128 * NANOS;
                let mut t = start;
                loop {
                    let off = t.saturating_duration_since(epoch).as_nanos();
                    let (i, end) = if !*repeat && off >= *period {
                        (rates.len() - 1, None)
                    } else {
                        let cyc = if *repeat { off % *period } else { off };
                        let i = starts.partition_point(|&s| s <= cyc) - 1;
                        let step_end = starts.get(i + 1).copied().unwrap_or(*period);
                        (i, Some(step_end - cyc))
                    };
                    // A zero rate (an outage) does no work: the packet resumes at its end.
                    let rate = rates[i] as u128;
                    match end {
                        Some(left) if rate * left < work => {
                            work -= rate * left;
                            t += Duration::from_nanos(u64::try_from(left).unwrap_or(u64::MAX));
                        }
                        _ => return t + bits_time(work, rates[i]),
                    }
                }
            }
            Kind::Trace {
                offsets,
                period,
                next,
                credit,
                credit_at,
            } => {
                let mut remaining = size.as_bytes();
                if *credit > 0 && *credit_at == Some(start) {
                    let used = remaining.min(*credit);
                    remaining -= used;
                    *credit -= used;
                    if remaining == 0 {
                        return start;
                    }
                }
                let (offsets, period) = (&*offsets, *period);
                let mut k = Self::first_opp(epoch, offsets, period, start).max(*next);
                let mut last = start;
                while remaining > 0 {
                    last = Self::opp_time(epoch, offsets, period, k);
                    let used = remaining.min(MAHIMAHI_OPPORTUNITY.as_bytes());
                    remaining -= used;
                    *credit = MAHIMAHI_OPPORTUNITY.as_bytes() - used;
                    k += 1;
                }
                *next = k;
                *credit_at = Some(last);
                last
            }
        }
    }

    /// The rate in force at `t` (zero during an outage; the trace's mean rate for traces).
    pub(crate) fn rate_at(&self, t: Instant) -> Bitrate {
        match &self.kind {
            Kind::Constant(bps) => Bitrate::bps(*bps),
            Kind::Unlimited => Bitrate::MAX,
            Kind::Schedule {
                starts,
                rates,
                period,
                repeat,
                ..
            } => {
                let off = t.saturating_duration_since(self.epoch_or(t)).as_nanos();
                if !*repeat && off >= *period {
                    return Bitrate::bps(*rates.last().expect("a schedule is never empty"));
                }
                let cyc = if *repeat { off % *period } else { off };
                Bitrate::bps(rates[starts.partition_point(|&s| s <= cyc) - 1])
            }
            Kind::Trace {
                offsets, period, ..
            } => {
                DataSize::bytes(offsets.len() as u64 * MAHIMAHI_OPPORTUNITY.as_bytes())
                    / Duration::from_nanos(u64::try_from(*period).unwrap_or(u64::MAX))
            }
        }
    }

    fn first_opportunity(&self, offsets: &[u128], period: u128, t: Instant) -> u64 {
        Self::first_opp(self.epoch_or(t), offsets, period, t)
    }

    fn opportunity_time(&self, offsets: &[u128], period: u128, k: u64, t: Instant) -> Instant {
        Self::opp_time(self.epoch_or(t), offsets, period, k)
    }

    /// Index (over all periods) of the first opportunity at or after `t`.
    fn first_opp(epoch: Instant, offsets: &[u128], period: u128, t: Instant) -> u64 {
        let off = t.saturating_duration_since(epoch).as_nanos();
        let cycle = off / period;
        let within = off % period;
        let i = offsets.partition_point(|&o| o < within);
        (cycle as u64) * offsets.len() as u64 + i as u64
    }

    /// Time of opportunity `k`.
    fn opp_time(epoch: Instant, offsets: &[u128], period: u128, k: u64) -> Instant {
        let n = offsets.len() as u64;
        let ns = (k / n) as u128 * period + offsets[(k % n) as usize];
        epoch + Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
    }
}

/// `work` bit·nanoseconds at `bps`, rounded up to the nanosecond.
fn bits_time(work: u128, bps: u64) -> Duration {
    let bps = bps.max(1);
    // Fast path: one packet's work fits in 64 bits (below ~2 GB).
    if let Ok(w) = u64::try_from(work) {
        return Duration::from_nanos(w.div_ceil(bps));
    }
    Duration::from_nanos(u64::try_from(work.div_ceil(bps as u128)).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn anchored(c: &CapacityConfig, t0: Instant) -> Capacity {
        let mut c = Capacity::new(c).unwrap();
        c.anchor(t0);
        c
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn constant_rate_serialises_at_size_over_rate() {
        let t0 = Instant::now();
        let mut c = anchored(&CapacityConfig::constant(Bitrate::mbps(1)), t0);
        assert_eq!(c.finish(t0, DataSize::bytes(1250)), t0 + ms(10));
    }

    #[test]
    fn schedule_integrates_across_steps() {
        let t0 = Instant::now();
        let cfg = CapacityConfig::Schedule {
            steps: vec![
                RateStep {
                    duration: ms(10),
                    rate: Bitrate::mbps(1),
                },
                RateStep {
                    duration: ms(10),
                    rate: Bitrate::mbps(2),
                },
            ],
            repeat: false,
        };
        let mut c = anchored(&cfg, t0);
        // 1250 B from t=5ms: 625 B at 1 Mb/s in 5 ms, then 625 B at 2 Mb/s in 2.5 ms.
        assert_eq!(
            c.finish(t0 + ms(5), DataSize::bytes(1250)),
            t0 + Duration::from_micros(12_500)
        );
        // Beyond the end the last rate holds.
        assert_eq!(c.finish(t0 + ms(100), DataSize::bytes(250)), t0 + ms(101));
        assert_eq!(c.rate_at(t0 + ms(15)), Bitrate::mbps(2));
    }

    #[test]
    fn repeating_schedule_loops() {
        let t0 = Instant::now();
        let cfg = CapacityConfig::Schedule {
            steps: vec![
                RateStep {
                    duration: ms(10),
                    rate: Bitrate::mbps(1),
                },
                RateStep {
                    duration: ms(10),
                    rate: Bitrate::mbps(2),
                },
            ],
            repeat: true,
        };
        let c = anchored(&cfg, t0);
        assert_eq!(c.rate_at(t0 + ms(25)), Bitrate::mbps(1));
        assert_eq!(c.rate_at(t0 + ms(35)), Bitrate::mbps(2));
        assert_eq!(cfg.mean_rate(), Bitrate::kbps(1500));
    }

    #[test]
    fn trace_opportunities_carry_partial_packets_and_loop() {
        let t0 = Instant::now();
        let trace = MahimahiTrace::parse("1\n1\n5\n").unwrap();
        let mut c = anchored(&CapacityConfig::Trace { trace }, t0);
        assert_eq!(c.service_start(t0), t0 + ms(1));
        // 1000 B at the 1 ms opportunity, leaving 500 B of it.
        assert_eq!(c.finish(t0 + ms(1), DataSize::bytes(1000)), t0 + ms(1));
        assert_eq!(c.service_start(t0 + ms(1)), t0 + ms(1));
        // 1000 B: 500 B of credit + 500 B of the second 1 ms opportunity.
        assert_eq!(c.finish(t0 + ms(1), DataSize::bytes(1000)), t0 + ms(1));
        // 3000 B: the rest (1000 B) of the second, all of 5 ms, 500 B of the looped 6 ms one.
        assert_eq!(c.finish(t0 + ms(1), DataSize::bytes(3000)), t0 + ms(6));
        // Credit is lost if nothing is served at that instant.
        assert_eq!(c.service_start(t0 + ms(7)), t0 + ms(10));
    }

    #[test]
    fn bad_traces_and_rates_are_errors() {
        assert!(matches!(MahimahiTrace::parse(""), Err(Error::Empty { .. })));
        assert!(matches!(
            MahimahiTrace::parse("5\n3\n"),
            Err(Error::Trace { line: 2, .. })
        ));
        assert!(matches!(
            MahimahiTrace::parse("1\nx\n"),
            Err(Error::Trace { line: 2, .. })
        ));
        assert!(MahimahiTrace::parse("0\n").is_err());
        assert!(Capacity::new(&CapacityConfig::constant(Bitrate::ZERO)).is_err());
        assert!(
            Capacity::new(&CapacityConfig::Schedule {
                steps: vec![],
                repeat: false
            })
            .is_err()
        );
        let zero_step = CapacityConfig::Schedule {
            steps: vec![RateStep {
                duration: ms(1),
                rate: Bitrate::ZERO,
            }],
            repeat: false,
        };
        assert!(Capacity::new(&zero_step).is_err());
    }

    /// A schedule of (milliseconds, Mbit/s) steps.
    fn steps(v: &[(u64, u64)], repeat: bool) -> CapacityConfig {
        CapacityConfig::Schedule {
            steps: v
                .iter()
                .map(|&(d, r)| RateStep {
                    duration: ms(d),
                    rate: Bitrate::mbps(r),
                })
                .collect(),
            repeat,
        }
    }

    #[test]
    fn service_waits_for_the_end_of_an_outage() {
        let t0 = Instant::now();
        let c = anchored(&steps(&[(10, 1), (100, 0), (10, 2)], false), t0);
        assert_eq!(c.service_start(t0 + ms(5)), t0 + ms(5));
        assert_eq!(
            c.service_start(t0 + ms(10)),
            t0 + ms(110),
            "down from 10 ms"
        );
        assert_eq!(c.service_start(t0 + ms(60)), t0 + ms(110));
        assert_eq!(c.service_start(t0 + ms(110)), t0 + ms(110));
        assert_eq!(
            c.service_start(t0 + ms(500)),
            t0 + ms(500),
            "the last rate holds"
        );
        assert_eq!(c.rate_at(t0 + ms(60)), Bitrate::ZERO);
    }

    #[test]
    fn a_packet_serialising_when_the_link_goes_down_finishes_after_it_returns() {
        let t0 = Instant::now();
        let mut c = anchored(&steps(&[(10, 1), (100, 0), (10, 1)], false), t0);
        // 1250 B at 1 Mb/s is 10 ms: 5 ms of it before the outage, 5 ms after.
        assert_eq!(c.finish(t0 + ms(5), DataSize::bytes(1250)), t0 + ms(115));
    }

    #[test]
    fn a_repeating_schedule_finds_its_next_up_step_in_the_next_period() {
        let t0 = Instant::now();
        // Up 10 ms at 1 Mb/s, down 20 ms, repeating: the last step may be an outage.
        let c = anchored(&steps(&[(10, 1), (20, 0)], true), t0);
        assert_eq!(c.service_start(t0 + ms(12)), t0 + ms(30));
        assert_eq!(c.service_start(t0 + ms(45)), t0 + ms(60));
        assert_eq!(c.service_start(t0 + ms(65)), t0 + ms(65));
        let mut c = anchored(&steps(&[(10, 1), (20, 0)], true), t0);
        // 2500 B = 20 ms of work: 10 ms in the first period, 10 ms in the second.
        assert_eq!(c.finish(t0, DataSize::bytes(2500)), t0 + ms(40));
    }

    #[test]
    fn schedules_that_never_come_back_up_are_errors() {
        assert!(matches!(
            Capacity::new(&steps(&[(10, 0), (20, 0)], true)),
            Err(Error::ZeroRate { .. })
        ));
        assert!(matches!(
            Capacity::new(&steps(&[(10, 1), (20, 0)], false)),
            Err(Error::ZeroRate { .. })
        ));
        assert!(Capacity::new(&steps(&[(10, 0), (20, 1)], false)).is_ok());
    }

    #[test]
    fn capacity_over_time_counts_outages_and_trace_gaps_as_zero() {
        let s = Duration::from_secs;
        let c = CapacityConfig::Schedule {
            steps: vec![
                RateStep {
                    duration: s(20),
                    rate: Bitrate::mbps(1),
                },
                RateStep {
                    duration: s(10),
                    rate: Bitrate::kbps(2500),
                },
            ],
            repeat: false,
        };
        assert_eq!(c.rate_at(s(19)), Bitrate::mbps(1));
        assert_eq!(c.rate_at(s(20)), Bitrate::kbps(2500));
        assert_eq!(
            c.rate_at(s(100)),
            Bitrate::kbps(2500),
            "the last rate holds"
        );
        // 1 Mb/s × 10 s + 2.5 Mb/s × 10 s, and past the end the last rate holds.
        assert!((c.bits_between(s(10), s(30)) - 35e6).abs() < 1e3);
        assert!((c.bits_between(s(30), s(40)) - 25e6).abs() < 1e3);
        // A repeating schedule with an outage: 2 Mb/s 4 s, down 2 s, every 6 s.
        let c = steps(&[(4000, 2), (2000, 0)], true);
        assert_eq!(c.rate_at(s(5)), Bitrate::ZERO);
        assert_eq!(c.rate_at(s(7)), Bitrate::mbps(2));
        assert!((c.bits_between(s(0), s(12)) - 16e6).abs() < 1e3);
        assert!((c.bits_between(s(3), s(8)) - 6e6).abs() < 1e3);
        // Opportunities at 1, 1 and 5 ms, looping every 5 ms.
        let c = CapacityConfig::Trace {
            trace: MahimahiTrace::new(vec![1, 1, 5]).unwrap(),
        };
        let ms = Duration::from_millis;
        let opp = |a, b| c.bits_between(ms(a), ms(b)) / 12_000.0;
        assert_eq!(opp(0, 5), 2.0, "the 5 ms one is at 5 ms itself");
        assert_eq!(opp(0, 6), 3.0);
        assert_eq!(opp(2, 5), 0.0, "a gap");
        assert_eq!(opp(0, 11), 6.0, "1, 1, 5, 6, 6, 10");
        assert_eq!(opp(5, 10), 3.0, "5, 6, 6");
        assert_eq!(opp(7, 7), 0.0);
        assert_eq!(c.rate_at(s(3)), c.mean_rate());
        assert_eq!(
            CapacityConfig::Unlimited.bits_between(s(0), s(1)),
            f64::INFINITY
        );
    }

    #[test]
    fn constant_trace_has_the_requested_mean_rate() {
        let t = MahimahiTrace::constant(Bitrate::mbps(12), Duration::from_secs(1)).unwrap();
        assert_eq!(t.millis().len(), 1000);
        assert_eq!(t.mean_rate(), Bitrate::mbps(12));
    }
}
