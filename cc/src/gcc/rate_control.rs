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
//! Eq. (3): Increase `Ar ← η·Ar`, Decrease `Ar ← α·R`, Hold `Ar` unchanged; then
//! `Ar ≤ 1.5·R` (MMSys16 §3.3) and `Ar ∈ [min, max]`. `η` is applied per `increase_period`
//! of elapsed arrival time (capped at one period per update) rather than per frame, so the
//! growth rate does not depend on the frame rate: at 30 frames/s a per-frame 1.05 would be
//! ×4.3 per second, while MMSys16 §6.1 reports about 25 s to climb from 0.5 to 1 Mbit/s.

use std::time::Duration;

use cg_types::Bitrate;

use crate::gcc::detector::Signal;

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

/// Parameters of eq. (3).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateControlParams {
    /// `η`.
    pub eta: f64,
    /// Period over which one `η` applies.
    pub increase_period: Duration,
    /// `α`.
    pub alpha: f64,
    /// `Ar ≤ max_rate_ratio · R`.
    pub max_rate_ratio: f64,
    /// Lower bound.
    pub min: Bitrate,
    /// Upper bound.
    pub max: Bitrate,
}

/// The remote rate controller.
#[derive(Debug, Clone)]
pub struct RemoteRateController {
    p: RateControlParams,
    state: RateState,
    ar: Bitrate,
    last_us: Option<i64>,
}

impl RemoteRateController {
    /// Starts in Increase at `start` (clamped to `[min, max]`).
    pub fn new(p: RateControlParams, start: Bitrate) -> Self {
        RemoteRateController {
            p,
            state: RateState::Increase,
            ar: start.min(p.max).max(p.min),
            last_us: None,
        }
    }

    /// One step at frame arrival `now_us` with detector signal `signal` and receive rate `r`
    /// (unknown until a whole window has been seen). Returns `Ar(ti)`.
    pub fn update(&mut self, signal: Signal, r: Option<Bitrate>, now_us: i64) -> Bitrate {
        let dt_us = match self.last_us {
            Some(last) => now_us.saturating_sub(last).max(0),
            None => 0,
        };
        self.last_us = Some(self.last_us.map_or(now_us, |l| l.max(now_us)));
        self.state = self.state.next(signal);
        match self.state {
            RateState::Increase => {
                let period = self.p.increase_period.as_micros().max(1) as f64;
                let frac = (dt_us as f64 / period).min(1.0);
                self.ar = self.ar.mul_f64(self.p.eta.powf(frac));
            }
            RateState::Decrease => {
                if let Some(r) = r {
                    self.ar = r.mul_f64(self.p.alpha);
                }
            }
            RateState::Hold => {}
        }
        if let Some(r) = r {
            self.ar = self.ar.min(r.mul_f64(self.p.max_rate_ratio));
        }
        self.ar = self.ar.min(self.p.max).max(self.p.min);
        self.ar
    }

    /// `Ar`.
    pub fn estimate(&self) -> Bitrate {
        self.ar
    }

    /// `σ`.
    pub fn state(&self) -> RateState {
        self.state
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> RateControlParams {
        RateControlParams {
            eta: 1.05,
            increase_period: Duration::from_secs(1),
            alpha: 0.85,
            max_rate_ratio: 1.5,
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
        c.update(Signal::Normal, r, 0);
        // One second of increase: ×1.05.
        let a = c.update(Signal::Normal, r, 1_000_000);
        assert_eq!(a, Bitrate::kbps(1050));
        // Over-use: α·R.
        let a = c.update(Signal::Overuse, r, 1_033_000);
        assert_eq!(c.state(), RateState::Decrease);
        assert_eq!(a, Bitrate::kbps(850));
        // Under-use: hold.
        let a = c.update(Signal::Underuse, Some(Bitrate::kbps(900)), 1_066_000);
        assert_eq!(c.state(), RateState::Hold);
        assert_eq!(a, Bitrate::kbps(850));
    }

    #[test]
    fn increase_is_capped_at_one_and_a_half_times_the_receive_rate() {
        let mut c = RemoteRateController::new(params(), Bitrate::kbps(1000));
        let r = Some(Bitrate::kbps(400));
        let a = c.update(Signal::Normal, r, 0);
        assert_eq!(a, Bitrate::kbps(600));
        for i in 1..100 {
            c.update(Signal::Normal, r, i * 1_000_000);
        }
        assert_eq!(c.estimate(), Bitrate::kbps(600));
    }

    #[test]
    fn growth_does_not_depend_on_frame_rate() {
        let run = |frame_us: i64| {
            let mut c = RemoteRateController::new(params(), Bitrate::kbps(500));
            let mut t = 0;
            while t <= 10_000_000 {
                c.update(Signal::Normal, None, t);
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
    fn estimate_stays_within_bounds() {
        let mut c = RemoteRateController::new(params(), Bitrate::mbps(100));
        assert_eq!(c.estimate(), Bitrate::mbps(2));
        let a = c.update(Signal::Overuse, Some(Bitrate::ZERO), 0);
        assert_eq!(a, Bitrate::kbps(50));
    }
}
