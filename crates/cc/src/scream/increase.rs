//! Window increase (SCReAM v2 draft §4.2.2.2 "Reference Window Increase"); no slow start.
//!
//! ```text
//! inc = (acked − acked_CE) × min(1, MSS/cwnd)
//!       × min(1, sRTT / VIRTUAL_RTT)               # small RTTs grow slower (RTT fairness)
//!       × max(0.25, sclI)                          # slow near the inflection point
//!       × max(0.5, 1 − MSS/cwnd)                   # tiny windows (reference)
//!       × max(0.1, 1 − qdelay_avg/(T/4))           # delay damping without L4S (reference)
//!       × max(0.1, (th − dev)/th)                  # jittery queue
//!       × (1 + MI × cwnd/MSS × post_congestion × sclI)   # multiplicative part
//! ```
//! applied only while `cwnd + inc ≤ MSS + headroom × max(max_bif, max_bif_prev)` and the
//! target is below its maximum. `post_congestion` ramps 0 → 1 over `post_congestion_rtts`
//! × max(VIRTUAL_RTT, sRTT) after the last congestion.

use std::time::{Duration, Instant};

/// Inputs to [`increment`].
#[derive(Debug, Clone, Copy)]
pub struct IncreaseInputs {
    /// Bytes the received edge advanced over, minus CE-marked bytes.
    pub acked_not_ce: f64,
    /// Window in bytes.
    pub cwnd: f64,
    /// MSS in bytes.
    pub mss: f64,
    /// Smoothed RTT.
    pub srtt: Duration,
    /// VIRTUAL_RTT.
    pub virtual_rtt: Duration,
    /// `sclI`.
    pub scl_i: f64,
    /// The delay-damping factor (1 when disabled or L4S is active).
    pub delay_damping: f64,
    /// `max(min_dev_scale, (th − dev)/th)`.
    pub dev_scale: f64,
    /// Multiplicative-increase factor MI.
    pub multiplicative_increase: f64,
    /// Post-congestion scale in `[0, 1]`.
    pub post_congestion: f64,
}

/// Bytes to add to the window for this feedback.
pub fn increment(i: &IncreaseInputs) -> f64 {
    let cwnd = i.cwnd.max(1.0);
    let ratio = (i.mss / cwnd).min(1.0);
    let mut inc = i.acked_not_ce.max(0.0) * ratio;
    inc *= (i.srtt.as_secs_f64() / i.virtual_rtt.as_secs_f64().max(1e-6)).min(1.0);
    inc *= i.scl_i.max(0.25);
    inc *= (1.0 - ratio).max(0.5);
    inc *= i.delay_damping;
    inc *= i.dev_scale;
    let mul = 1.0 + i.multiplicative_increase * cwnd / i.mss.max(1.0);
    inc *= 1.0 + (mul - 1.0) * i.post_congestion * i.scl_i;
    inc.max(0.0)
}

/// `max(0.1, 1 − qdelay_avg / (T/4))` (reference implementation).
pub fn delay_damping(qdelay_avg: Duration, target: Duration) -> f64 {
    (1.0 - qdelay_avg.as_secs_f64() / (target.as_secs_f64() / 4.0).max(1e-9)).max(0.1)
}

/// The multiplicative-increase ramp after the last congestion; 1 if none yet.
pub fn post_congestion_scale(
    now: Instant,
    last_congestion: Option<Instant>,
    rtts: f64,
    srtt: Duration,
    virtual_rtt: Duration,
) -> f64 {
    match last_congestion {
        None => 1.0,
        Some(t) => {
            let span = rtts * srtt.max(virtual_rtt).as_secs_f64();
            if span <= 0.0 {
                return 1.0;
            }
            (now.saturating_duration_since(t).as_secs_f64() / span).clamp(0.0, 1.0)
        }
    }
}

/// The growth cap: `MSS + headroom × max bytes in flight`.
pub fn max_allowed(mss: f64, max_bytes_in_flight: f64, headroom: f64) -> f64 {
    mss + max_bytes_in_flight * headroom
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> IncreaseInputs {
        IncreaseInputs {
            acked_not_ce: 100_000.0,
            cwnd: 100_000.0,
            mss: 1000.0,
            srtt: Duration::from_millis(50),
            virtual_rtt: Duration::from_millis(25),
            scl_i: 1.0,
            delay_damping: 1.0,
            dev_scale: 1.0,
            multiplicative_increase: 0.05,
            post_congestion: 0.0,
        }
    }

    #[test]
    fn one_window_acked_adds_one_mss_right_after_congestion() {
        let inc = increment(&base());
        assert!((inc - 1000.0 * 0.99).abs() < 1e-9, "{inc}");
    }

    #[test]
    fn multiplicative_part_adds_mi_of_the_window_per_rtt_when_ramped() {
        let mut i = base();
        i.post_congestion = 1.0;
        // 1 MSS × (1 + 0.05 × 100) = 6 MSS (×0.99 small-window factor).
        assert!((increment(&i) - 6000.0 * 0.99).abs() < 1e-9);
    }

    #[test]
    fn increase_is_slow_near_the_inflection_point() {
        let mut i = base();
        i.post_congestion = 1.0;
        i.scl_i = 0.1;
        // max(0.25, 0.1) × (1 + 5 × 0.1) = 0.375 MSS.
        assert!((increment(&i) - 1000.0 * 0.99 * 0.25 * 1.5).abs() < 1e-9);
    }

    #[test]
    fn short_rtt_and_ce_reduce_the_increase() {
        let mut i = base();
        i.srtt = Duration::from_millis(5);
        assert!((increment(&i) - 990.0 * 0.2).abs() < 1e-9);
        i.acked_not_ce = -5.0;
        assert_eq!(increment(&i), 0.0);
    }

    #[test]
    fn post_congestion_ramp_is_linear_over_n_rtts() {
        let t0 = Instant::now();
        let rtt = Duration::from_millis(30);
        let v = Duration::from_millis(25);
        assert_eq!(post_congestion_scale(t0, None, 200.0, rtt, v), 1.0);
        assert_eq!(post_congestion_scale(t0, Some(t0), 200.0, rtt, v), 0.0);
        let half = post_congestion_scale(t0 + Duration::from_secs(3), Some(t0), 200.0, rtt, v);
        assert!((half - 0.5).abs() < 1e-9);
        assert_eq!(
            post_congestion_scale(t0 + Duration::from_secs(7), Some(t0), 200.0, rtt, v),
            1.0
        );
    }

    #[test]
    fn delay_damping_reaches_its_floor_at_a_quarter_target() {
        let t = Duration::from_millis(60);
        assert_eq!(delay_damping(Duration::ZERO, t), 1.0);
        assert!((delay_damping(Duration::from_micros(7_500), t) - 0.5).abs() < 1e-9);
        assert_eq!(delay_damping(Duration::from_millis(40), t), 0.1);
    }
}
