//! The remote rate controller: the FSM of MMSys16 Figure 4 (2013 Figure 3) driving eq. (3).
//!
//! State transitions (draft-ietf-rmcat-gcc-02 §5.5, the table behind Figure 4):
//!
//! | signal \ state | Hold     | Increase | Decrease |
//! |----------------|----------|----------|----------|
//! | over-use       | Decrease | Decrease | Decrease |
//! | normal         | Increase | Increase | Hold     |
//! | under-use      | Hold     | Hold     | Hold     |
//!
//! Eq. (3): Increase `Ar ← η·Ar`, Decrease `Ar ← α·R` (never above the current `Ar`), Hold
//! `Ar` unchanged; an increase stops at `1.5·R + 10 kbit/s` (MMSys16 §3.3's `Ar ≤ 1.5·R`,
//! see below); then `Ar ∈ [min, max]`.
//!
//! Points the papers leave open, settled as libwebrtc (the code the papers measured) does:
//!
//! - `η` is applied per `increase_period` of elapsed arrival time (capped at one period per
//!   update) rather than per frame, so the growth rate does not depend on the frame rate: at
//!   30 frames/s a per-frame 1.05 would be ×4.3 per second, while MMSys16 §6.1 reports about
//!   25 s to climb from 0.5 to 1 Mbit/s.
//! - A decrease is applied once per over-use *signal*: on frames where Algorithm 1 assigns
//!   no signal (the 100 ms persistence timer restarted after firing), Decrease gives way to
//!   Hold ("stay on hold until the pipes are cleared"). Applying `α·R` on every frame instead
//!   compounds the cut each time `R` (a 500 ms average) catches up with the previous one.
//! - `Ar ≤ 1.5·R` bounds the *increase* only, as libwebrtc's `AimdRateControl` applies its
//!   `troughput_based_limit` (`1.5·R + 10 kbit/s`): an `Ar` already above it is kept, never
//!   cut. Applied as a cap on every update, it turned every large frame into a decrease
//!   (issue #14): an encoder gives a key frame's or a scene change's extra bytes back over
//!   the next frames, so the 500 ms `R` falls to half of `Ar` with no queue anywhere. The
//!   tests `no_backoff_on_large_frames_*` (`crates/cc/tests/gcc_camera.rs`) hold every
//!   decrease to a queue of at least 5 ms.
//! - By default ([`IncreaseMode::LinkCapacity`]), libwebrtc's `AimdRateControl` with its
//!   `LinkCapacityEstimator`: the receive rates at over-use are averaged (EWMA 0.05) into a
//!   link-capacity estimate with a normalised variance (clamped to [0.4, 2.5] kbit/s, so
//!   `σ ≥ √(0.4·estimate)`); with an estimate the increase is additive (one packet per
//!   RTT + 100 ms), without one multiplicative by `far_eta` (1.08 per second). The estimate
//!   is forgotten when, in Increase, both `R` and `Ar` are above its mean + 3σ (the link got
//!   faster; libwebrtc looks at its smoothed acknowledged rate alone, our 500 ms `R` is
//!   noisier, and on `R` alone a single flow's queue grew) — in REMB mode
//!   `R` alone by default ([`RateControlParams::reset_on_receive_rate`]) — and when, at a
//!   decrease, `R` is below its mean − 3σ (the link got slower: the new estimate starts at
//!   this `R` instead of averaging it with the old capacity). A validated probe enters it
//!   with weight 0.5 ([`RemoteRateController::on_probe_result`]). The increase stays
//!   additive below the estimate's −3σ too (libwebrtc's rule): a multiplicative climb back
//!   up from `α·R` cost competing flows their fair share.
//! - Optionally ([`IncreaseMode::NearMaxAdditive`]), libwebrtc's "near max" region, the
//!   2013 paper's remote state region: once over-use has been seen, the receive rates at
//!   which it happened are averaged into a link-capacity estimate; near it, `Ar` grows by
//!   about one packet per response time (RTT + 100 ms) instead of by `η`. Additive increase
//!   with the multiplicative decrease of eq. (3) is what makes competing flows converge to
//!   a fair share (AIMD); pure `η` growth keeps their ratio.

use std::time::Duration;

use cg_types::{Bitrate, DataSize};

use crate::gcc::detector::Signal;

/// Added to `max_rate_ratio · R` in the increase bound, so that a low rate with an uneven
/// encoder is not stuck (libwebrtc's `troughput_based_limit`).
const THROUGHPUT_LIMIT_SLACK: Bitrate = Bitrate::kbps(10);

/// The FSM state `σ` of eq. (3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RateState {
    /// Keep `Ar`.
    Hold,
    /// Multiply `Ar` by `η`.
    #[default]
    Increase,
    /// Set `Ar` to `α·R`.
    Decrease,
}

impl RateState {
    /// 0 hold, 1 increase, 2 decrease (for plots).
    pub fn as_f64(self) -> f64 {
        match self {
            RateState::Hold => 0.0,
            RateState::Increase => 1.0,
            RateState::Decrease => 2.0,
        }
    }

    /// The next state given the detector's signal.
    pub fn next(self, signal: Signal) -> RateState {
        match (signal, self) {
            (Signal::Overuse, _) => RateState::Decrease,
            (Signal::Normal, RateState::Decrease) => RateState::Hold,
            (Signal::Normal, _) => RateState::Increase,
            (Signal::Underuse, _) => RateState::Hold,
        }
    }
}

/// How `Ar` grows in Increase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IncreaseMode {
    /// Eq. (3) only: `Ar ← η·Ar` (per `increase_period`).
    Multiplicative,
    /// Eq. (3)'s `η` until the first over-use, additive increase afterwards, unless the
    /// receive rate goes above the link-capacity estimate's upper bound (the cg version
    /// before issue #14; see the module docs).
    NearMaxAdditive,
    /// libwebrtc's `AimdRateControl` with its `LinkCapacityEstimator`: the receive rates at
    /// over-use give a mean and a deviation `σ`; the increase is additive while there is an
    /// estimate and multiplicative by
    /// [`GccConfig::far_eta`](crate::gcc::GccConfig::far_eta) without one; the estimate is
    /// forgotten when `R` and `Ar` (REMB mode by default: `R` alone) go above the mean + 3σ
    /// in Increase or `R` falls below the mean − 3σ at a decrease, so a changed bottleneck
    /// is found again at the multiplicative speed.
    #[default]
    LinkCapacity,
}

/// Parameters of eq. (3).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateControlParams {
    /// `η`.
    pub eta: f64,
    /// The multiplicative factor per `increase_period` of [`IncreaseMode::LinkCapacity`]
    /// away from the link-capacity estimate.
    pub far_eta: f64,
    /// Period over which one `η` applies.
    pub increase_period: Duration,
    /// `α`.
    pub alpha: f64,
    /// `Ar ≤ max_rate_ratio · R`.
    pub max_rate_ratio: f64,
    /// Apply `Ar ≤ max_rate_ratio · R` as a cap on every update (MMSys16 §3.3 literally)
    /// rather than as a bound of the increase only.
    pub max_rate_ratio_cuts: bool,
    /// Multiplicative only, or additive near the link-capacity estimate.
    pub increase: IncreaseMode,
    /// [`IncreaseMode::LinkCapacity`]: forget the estimate when `R` alone goes above its
    /// mean + 3σ in Increase, as libwebrtc does, rather than when `Ar` is above it too (see
    /// [`GccConfig::remb_capacity_reset_by_receive_rate`](crate::gcc::GccConfig::remb_capacity_reset_by_receive_rate)).
    pub reset_on_receive_rate: bool,
    /// RTT used for the additive step's response time until a measurement is given.
    pub default_rtt: Duration,
    /// Packet size of the additive step (one per RTT + 100 ms).
    pub additive_packet: DataSize,
    /// Lower bound.
    pub min: Bitrate,
    /// Upper bound.
    pub max: Bitrate,
}

/// libwebrtc's `LinkCapacityEstimator`: an EWMA of the receive rate at over-use, in kbit/s,
/// with a normalised deviation, used to tell whether `Ar` is near the bottleneck rate.
/// It also remembers whether any sample since the last reset found the link full (an
/// over-use, or a probe the link could not carry): probes it carried only say it is at
/// least that fast.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LinkCapacity {
    estimate_kbps: Option<f64>,
    deviation: f64,
    found_full: bool,
}

impl Default for LinkCapacity {
    fn default() -> Self {
        LinkCapacity {
            estimate_kbps: None,
            deviation: 0.4,
            found_full: false,
        }
    }
}

impl LinkCapacity {
    pub(crate) fn on_overuse(&mut self, r: Bitrate) {
        self.update(r, 0.05, true);
    }

    /// A sample `r` with weight `alpha`; `full`: the link was found full at `r`.
    pub(crate) fn update(&mut self, r: Bitrate, alpha: f64, full: bool) {
        self.found_full |= full;
        let sample = r.as_kbps_f64();
        let est = match self.estimate_kbps {
            None => sample,
            Some(e) => (1.0 - alpha) * e + alpha * sample,
        };
        let norm = est.max(1.0);
        let err = est - sample;
        self.deviation =
            ((1.0 - alpha) * self.deviation + alpha * err * err / norm).clamp(0.4, 2.5);
        self.estimate_kbps = Some(est);
    }

    fn deviation_kbps(&self, est: f64) -> f64 {
        (self.deviation * est).sqrt()
    }

    /// The mean, if a sample was taken since the last reset.
    pub(crate) fn estimate(&self) -> Option<Bitrate> {
        self.estimate_kbps.map(|k| Bitrate::from_bps_f64(k * 1e3))
    }

    /// The mean, if a sample since the last reset found the link full: the rate of a
    /// bottleneck, not a lower bound of it.
    pub(crate) fn bottleneck(&self) -> Option<Bitrate> {
        self.estimate().filter(|_| self.found_full)
    }

    /// Mean + 3σ, kbit/s.
    pub(crate) fn upper_bound(&self) -> Option<f64> {
        self.estimate_kbps.map(|e| e + 3.0 * self.deviation_kbps(e))
    }

    /// Mean − 3σ, kbit/s.
    pub(crate) fn lower_bound(&self) -> Option<f64> {
        self.estimate_kbps
            .map(|e| (e - 3.0 * self.deviation_kbps(e)).max(0.0))
    }

    pub(crate) fn reset(&mut self) {
        self.estimate_kbps = None;
        self.found_full = false;
    }
}

/// The remote rate controller.
#[derive(Debug, Clone)]
pub struct RemoteRateController {
    p: RateControlParams,
    state: RateState,
    ar: Bitrate,
    last_us: Option<i64>,
    capacity: LinkCapacity,
    rtt: Duration,
    upward_resets: u64,
}

impl RemoteRateController {
    /// Starts in Increase at `start` (clamped to `[min, max]`).
    pub fn new(p: RateControlParams, start: Bitrate) -> Self {
        RemoteRateController {
            p,
            state: RateState::Increase,
            ar: start.min(p.max).max(p.min),
            last_us: None,
            capacity: LinkCapacity::default(),
            rtt: p.default_rtt,
            upward_resets: 0,
        }
    }

    /// A round-trip-time measurement (send-side mode), for the additive step.
    pub fn set_rtt(&mut self, rtt: Duration) {
        self.rtt = rtt.min(Duration::from_secs(10));
    }

    /// One step at frame arrival `now_us` with detector signal `signal` (`None`: Algorithm 1
    /// assigned none) and receive rate `r` (unknown until a whole window has been seen).
    /// Returns `Ar(ti)`.
    pub fn update(&mut self, signal: Option<Signal>, r: Option<Bitrate>, now_us: i64) -> Bitrate {
        let dt_us = match self.last_us {
            Some(last) => now_us.saturating_sub(last).max(0),
            None => 0,
        };
        self.last_us = Some(self.last_us.map_or(now_us, |l| l.max(now_us)));
        self.state = match signal {
            Some(s) => self.state.next(s),
            None if self.state == RateState::Decrease => RateState::Hold,
            None => self.state,
        };
        match self.state {
            RateState::Increase => {
                let before = self.ar;
                self.increase(dt_us, r);
                if let Some(r) = r {
                    // `Ar ≤ 1.5·R` bounds the increase only: an `Ar` already above it is
                    // kept (libwebrtc's `troughput_based_limit`, which also adds 10 kbit/s).
                    let limit = r.mul_f64(self.p.max_rate_ratio) + THROUGHPUT_LIMIT_SLACK;
                    self.ar = self.ar.min(limit.max(before));
                }
            }
            RateState::Decrease => {
                if let Some(r) = r {
                    self.decrease_to(r);
                }
            }
            RateState::Hold => {}
        }
        if let (true, Some(r)) = (self.p.max_rate_ratio_cuts, r) {
            self.ar = self.ar.min(r.mul_f64(self.p.max_rate_ratio));
        }
        self.ar = self.ar.min(self.p.max).max(self.p.min);
        self.ar
    }

    fn increase(&mut self, dt_us: i64, r: Option<Bitrate>) {
        let dt = (dt_us as f64 / self.p.increase_period.as_micros().max(1) as f64).min(1.0);
        if self.p.increase == IncreaseMode::LinkCapacity {
            if let (Some(ub), Some(r)) = (self.capacity.upper_bound(), r)
                && r.as_kbps_f64() > ub
            {
                // libwebrtc's reset condition: worth a probe (the caller rate-limits them).
                self.upward_resets += 1;
                if self.p.reset_on_receive_rate || self.ar.as_kbps_f64() > ub {
                    // The bottleneck got faster: forget the old capacity.
                    self.capacity.reset();
                }
            }
            // Reset whenever `R` leaves the estimate's ±3σ, the estimate marks the near
            // region itself (libwebrtc: additive whenever it has an estimate).
            if self.capacity.estimate_kbps.is_some() {
                self.ar = Bitrate::from_bps_f64(self.ar.as_bps_f64() + self.additive_step(dt));
            } else {
                self.ar = self.ar.mul_f64(self.p.far_eta.powf(dt));
            }
            return;
        }
        if self.p.increase == IncreaseMode::NearMaxAdditive {
            if let (Some(ub), Some(r)) = (self.capacity.upper_bound(), r)
                && r.as_kbps_f64() > ub
            {
                // The bottleneck got faster: forget the old capacity.
                self.capacity.reset();
            }
            if self.capacity.estimate_kbps.is_some() {
                self.ar = Bitrate::from_bps_f64(self.ar.as_bps_f64() + self.additive_step(dt));
                return;
            }
        }
        self.ar = self.ar.mul_f64(self.p.eta.powf(dt));
    }

    /// The additive step over `dt` increase periods, in bit/s: one packet per response time
    /// (libwebrtc `AdditiveRateIncrease`, with a fixed packet size rather than the average
    /// at the current rate, which would make slow flows grow slower and defeat AIMD's
    /// convergence to fairness).
    fn additive_step(&self, dt: f64) -> f64 {
        let packet_bits = self.p.additive_packet.as_bits() as f64;
        let response = self.rtt.as_secs_f64() + 0.1;
        let per_second = (packet_bits / response).max(4000.0);
        per_second * dt * self.p.increase_period.as_secs_f64()
    }

    /// A validated probe result: `Ar` jumps to it if it is higher (libwebrtc's
    /// `AimdRateControl::SetEstimate`). With [`IncreaseMode::LinkCapacity`] it also enters
    /// the link-capacity estimate with weight 0.5 (`LinkCapacityEstimator::OnProbeRate`),
    /// unless it lies within the estimate's mean + 3σ (a cg rule): then it only says again
    /// what the over-uses said, and applying it put `Ar` back near the bottleneck rate after
    /// every probe, where camera-like bursts keep a standing queue. `saturated`: the link
    /// could not carry the cluster (see [`bottleneck_rate`](Self::bottleneck_rate)).
    /// Returns whether it was applied.
    pub fn on_probe_result(&mut self, rate: Bitrate, saturated: bool) -> bool {
        if self.p.increase == IncreaseMode::LinkCapacity {
            if self
                .capacity
                .upper_bound()
                .is_some_and(|ub| rate.as_kbps_f64() <= ub)
            {
                return false;
            }
            self.capacity.update(rate, 0.5, saturated);
        }
        self.raise_to(rate);
        true
    }

    /// `Ar ← max(Ar, rate)` within `[min, max]`, the state unchanged: a start from a
    /// measured rate (see
    /// [`GccConfig::remb_start_from_receive_rate`](crate::gcc::GccConfig::remb_start_from_receive_rate)).
    pub fn raise_to(&mut self, rate: Bitrate) {
        if rate > self.ar {
            self.ar = rate.min(self.p.max).max(self.p.min);
        }
    }

    /// A decrease without an over-use signal (the sender measured a standing queue, see
    /// [`GccConfig::standing_queue_decrease`](crate::gcc::GccConfig::standing_queue_decrease)):
    /// `Ar ← min(Ar, α·R)` as eq. (3)'s Decrease, then Hold; `R` enters the link-capacity
    /// estimate as at an over-use. Returns `Ar`.
    pub fn force_decrease(&mut self, r: Bitrate) -> Bitrate {
        self.decrease_to(r);
        self.state = RateState::Hold;
        self.ar = self.ar.min(self.p.max).max(self.p.min);
        self.ar
    }

    /// Eq. (3)'s decrease, `Ar ← min(Ar, α·R)` (never a raise: with a sender that outran
    /// `Ar`, `α·R` could exceed it; libwebrtc keeps the lower value too), and `R` into the
    /// link-capacity estimate, which starts again from it if the bottleneck got slower.
    fn decrease_to(&mut self, r: Bitrate) {
        self.ar = self.ar.min(r.mul_f64(self.p.alpha));
        if self.p.increase == IncreaseMode::LinkCapacity
            && self
                .capacity
                .lower_bound()
                .is_some_and(|lb| r.as_kbps_f64() < lb)
        {
            self.capacity.reset();
        }
        self.capacity.on_overuse(r);
    }

    /// `Ar`.
    pub fn estimate(&self) -> Bitrate {
        self.ar
    }

    /// How many times ([`IncreaseMode::LinkCapacity`]) `R` was seen above the
    /// link-capacity estimate's mean + 3σ in Increase (libwebrtc's reset condition; the
    /// estimate itself is forgotten only when `Ar` is above it too).
    pub fn upward_resets(&self) -> u64 {
        self.upward_resets
    }

    /// `σ`.
    pub fn state(&self) -> RateState {
        self.state
    }

    /// The link-capacity estimate of the near-max region, if over-use has been seen.
    pub fn link_capacity(&self) -> Option<Bitrate> {
        self.capacity.estimate()
    }

    /// The link-capacity estimate if a sample since its last reset found the link full
    /// (an over-use or a saturated probe). A probe the link carried seeds the estimate
    /// but is only a lower bound of the link: on a link far faster than the maximum rate
    /// it says "the maximum", and a pacer capped there (see
    /// [`GccConfig::pacing_link_capacity_factor`](crate::gcc::GccConfig::pacing_link_capacity_factor))
    /// held every large frame to it.
    pub fn bottleneck_rate(&self) -> Option<Bitrate> {
        self.capacity.bottleneck()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> RateControlParams {
        RateControlParams {
            eta: 1.05,
            far_eta: 1.08,
            increase_period: Duration::from_secs(1),
            alpha: 0.85,
            max_rate_ratio: 1.5,
            max_rate_ratio_cuts: false,
            increase: IncreaseMode::Multiplicative,
            reset_on_receive_rate: false,
            default_rtt: Duration::from_millis(200),
            additive_packet: DataSize::bytes(1200),
            min: Bitrate::kbps(50),
            max: Bitrate::mbps(2),
        }
    }

    #[test]
    fn fsm_moves_overuse_to_decrease_underuse_to_hold_normal_to_increase() {
        use RateState::*;
        use Signal::*;
        for s in [Hold, Increase, Decrease] {
            assert_eq!(s.next(Overuse), Decrease);
            assert_eq!(s.next(Underuse), Hold);
        }
        assert_eq!(Hold.next(Normal), Increase);
        assert_eq!(Increase.next(Normal), Increase);
        // Out of Decrease, normal passes through Hold first (Figure 4).
        assert_eq!(Decrease.next(Normal), Hold);
        assert_eq!(Decrease.next(Normal).next(Normal), Increase);
    }

    #[test]
    fn eq3_increase_decrease_hold() {
        let mut c = RemoteRateController::new(params(), Bitrate::kbps(1000));
        let r = Some(Bitrate::kbps(1000));
        c.update(Some(Signal::Normal), r, 0);
        // One second of increase: ×1.05.
        let a = c.update(Some(Signal::Normal), r, 1_000_000);
        assert_eq!(a, Bitrate::kbps(1050));
        // Over-use: α·R.
        let a = c.update(Some(Signal::Overuse), r, 1_033_000);
        assert_eq!(c.state(), RateState::Decrease);
        assert_eq!(a, Bitrate::kbps(850));
        // Under-use: hold.
        let a = c.update(Some(Signal::Underuse), Some(Bitrate::kbps(900)), 1_066_000);
        assert_eq!(c.state(), RateState::Hold);
        assert_eq!(a, Bitrate::kbps(850));
    }

    #[test]
    fn increase_is_capped_at_one_and_a_half_times_the_receive_rate() {
        let mut c = RemoteRateController::new(params(), Bitrate::kbps(500));
        let r = Some(Bitrate::kbps(400));
        c.update(Some(Signal::Normal), r, 0);
        for i in 1..100 {
            c.update(Some(Signal::Normal), r, i * 1_000_000);
        }
        assert_eq!(c.estimate(), Bitrate::kbps(610), "1.5·R + 10 kbit/s");
    }

    #[test]
    fn a_receive_rate_below_the_estimate_stops_the_increase_but_never_cuts() {
        // An encoder giving back a large frame's bytes sends well below `Ar` for a while:
        // `R` falls, `Ar` must hold (issue #14: 969 → 538 kbit/s with no queue).
        let mut c = RemoteRateController::new(params(), Bitrate::kbps(1000));
        let mut t = 0;
        for r in [1000, 400, 300, 400, 900] {
            let a = c.update(Some(Signal::Normal), Some(Bitrate::kbps(r)), t);
            assert!(a >= Bitrate::kbps(1000), "R {r}: Ar {a}");
            t += 100_000;
        }
        // Under-use (hold) with a low `R` keeps `Ar` as well.
        let a = c.update(Some(Signal::Underuse), Some(Bitrate::kbps(200)), t);
        assert!(a >= Bitrate::kbps(1000), "hold: Ar {a}");
        // The papers' literal cap cuts.
        let p = RateControlParams {
            max_rate_ratio_cuts: true,
            ..params()
        };
        let mut c = RemoteRateController::new(p, Bitrate::kbps(1000));
        let a = c.update(Some(Signal::Normal), Some(Bitrate::kbps(400)), 0);
        assert_eq!(a, Bitrate::kbps(600));
    }

    #[test]
    fn growth_does_not_depend_on_frame_rate() {
        let run = |frame_us: i64| {
            let mut c = RemoteRateController::new(params(), Bitrate::kbps(500));
            let mut t = 0;
            while t <= 10_000_000 {
                c.update(Some(Signal::Normal), None, t);
                t += frame_us;
            }
            c.estimate().as_bps_f64()
        };
        let a = run(33_333);
        let b = run(10_000);
        assert!((a / b - 1.0).abs() < 0.01, "{a} vs {b}");
        assert!((a / 500_000.0 - 1.05f64.powi(10)).abs() < 0.02);
    }

    #[test]
    fn a_decrease_is_applied_once_per_overuse_signal() {
        let mut c = RemoteRateController::new(params(), Bitrate::kbps(1000));
        let r = Some(Bitrate::kbps(1000));
        assert_eq!(c.update(Some(Signal::Overuse), r, 0), Bitrate::kbps(850));
        // No signal while the persistence timer runs: hold, even as R falls.
        let a = c.update(None, Some(Bitrate::kbps(900)), 33_000);
        assert_eq!(c.state(), RateState::Hold);
        assert_eq!(a, Bitrate::kbps(850));
        // No signal in Increase keeps increasing.
        c.update(Some(Signal::Normal), r, 66_000);
        c.update(None, r, 1_066_000);
        assert_eq!(c.state(), RateState::Increase);
    }

    #[test]
    fn near_max_the_increase_becomes_additive() {
        let p = RateControlParams {
            increase: IncreaseMode::NearMaxAdditive,
            default_rtt: Duration::from_millis(50),
            ..params()
        };
        let mut c = RemoteRateController::new(p, Bitrate::kbps(1000));
        let r = Some(Bitrate::kbps(1000));
        // No capacity estimate yet: multiplicative.
        c.update(Some(Signal::Normal), r, 0);
        assert_eq!(
            c.update(Some(Signal::Normal), r, 1_000_000),
            Bitrate::kbps(1050)
        );
        assert_eq!(c.link_capacity(), None);
        // Over-use at R = 1 Mbit/s sets the estimate; from 850 kbit/s the growth is additive:
        // one 1200-byte packet per 150 ms: 64 kbit/s per second.
        c.update(Some(Signal::Overuse), r, 1_033_000);
        assert_eq!(c.link_capacity(), Some(Bitrate::kbps(1000)));
        c.update(Some(Signal::Normal), r, 1_066_000);
        c.update(Some(Signal::Normal), r, 1_099_000);
        let before = c.estimate().as_bps_f64();
        let after = c.update(Some(Signal::Normal), r, 2_099_000).as_bps_f64();
        let step = after - before;
        assert!((step - 64_000.0).abs() < 100.0, "step {step}");
        // R well above the estimate: the bottleneck got faster, back to multiplicative.
        c.update(Some(Signal::Normal), Some(Bitrate::mbps(2)), 2_132_000);
        assert_eq!(c.link_capacity(), None);
    }

    #[test]
    fn link_capacity_mode_is_multiplicative_far_additive_near_and_resets_outside() {
        let p = RateControlParams {
            increase: IncreaseMode::LinkCapacity,
            default_rtt: Duration::from_millis(50),
            ..params()
        };
        let mut c = RemoteRateController::new(p, Bitrate::kbps(500));
        let r = |k| Some(Bitrate::kbps(k));
        // No estimate: ×1.08 per second.
        c.update(Some(Signal::Normal), r(500), 0);
        assert_eq!(
            c.update(Some(Signal::Normal), r(500), 1_000_000),
            Bitrate::kbps(540)
        );
        // Over-use at R = 1000 → estimate 1000 kbit/s, σ = √(0.4·1000) = 20 kbit/s.
        c.update(Some(Signal::Overuse), r(1000), 1_033_000);
        assert_eq!(c.link_capacity(), Some(Bitrate::kbps(1000)));
        // Near it: one 1200-byte packet per 150 ms, 64 kbit/s per second.
        c.update(Some(Signal::Normal), r(1000), 1_066_000);
        c.update(Some(Signal::Normal), r(1000), 1_099_000);
        let before = c.estimate().as_bps_f64();
        let step = c
            .update(Some(Signal::Normal), r(1000), 2_099_000)
            .as_bps_f64()
            - before;
        assert!((step - 64_000.0).abs() < 100.0, "step {step}");
        // R above the mean + 3σ but Ar not: noise, the estimate stays...
        let mut by_r = c.clone();
        c.update(Some(Signal::Normal), r(1100), 2_132_000);
        assert!(c.link_capacity().is_some());
        // ...unless R alone decides (REMB mode's default): the link delivered more than the
        // estimate allows, so it got faster.
        by_r.p.reset_on_receive_rate = true;
        by_r.update(Some(Signal::Normal), r(1100), 2_132_000);
        assert_eq!(by_r.link_capacity(), None);
        // A decrease with R far below the estimate restarts it from that R.
        c.update(Some(Signal::Overuse), r(600), 2_165_000);
        assert_eq!(c.link_capacity(), Some(Bitrate::kbps(600)));
        assert_eq!(c.estimate(), Bitrate::kbps(510));
        // Both R and Ar above the mean + 3σ = 646 kbit/s: the link got faster, back to ×1.08.
        let mut t = 2_198_000;
        for _ in 0..8 {
            c.update(Some(Signal::Normal), r(700), t);
            t += 500_000;
        }
        assert!(c.estimate() > Bitrate::kbps(650), "{}", c.estimate());
        assert_eq!(c.link_capacity(), None);
        // A probe result raises Ar and seeds the estimate.
        c.on_probe_result(Bitrate::kbps(2000), true);
        assert_eq!(c.estimate(), Bitrate::mbps(2));
        assert_eq!(c.link_capacity(), Some(Bitrate::kbps(2000)));
    }

    #[test]
    fn an_unsaturated_probe_result_seeds_the_estimate_but_no_bottleneck_rate() {
        let p = RateControlParams {
            increase: IncreaseMode::LinkCapacity,
            max: Bitrate::mbps(100),
            ..params()
        };
        let mut c = RemoteRateController::new(p, Bitrate::mbps(1));
        assert!(c.on_probe_result(Bitrate::mbps(5), false));
        assert_eq!(c.estimate(), Bitrate::mbps(5));
        assert_eq!(c.link_capacity(), Some(Bitrate::mbps(5)));
        assert_eq!(
            c.bottleneck_rate(),
            None,
            "the link carried it: a lower bound"
        );
        // A saturated result finds the link...
        assert!(c.on_probe_result(Bitrate::mbps(12), true));
        assert_eq!(c.bottleneck_rate(), Some(Bitrate::kbps(8500)));
        // ...and so does an over-use, after a reset.
        let mut o = RemoteRateController::new(p, Bitrate::mbps(1));
        o.on_probe_result(Bitrate::mbps(5), false);
        o.update(Some(Signal::Overuse), Some(Bitrate::mbps(4)), 1_000_000);
        assert!(o.bottleneck_rate().is_some());
    }

    #[test]
    fn estimate_stays_within_bounds() {
        let mut c = RemoteRateController::new(params(), Bitrate::mbps(100));
        assert_eq!(c.estimate(), Bitrate::mbps(2));
        let a = c.update(Some(Signal::Overuse), Some(Bitrate::ZERO), 0);
        assert_eq!(a, Bitrate::kbps(50));
    }
}
