//! Window reductions (SCReAM v2 draft §4.2.2.1 "Reference Window Reduction").
//!
//! At most one reaction per `min(reaction_interval, sRTT)`, chosen in this order:
//!
//! 1. **loss** → `cwnd ×= BETA_LOSS` (0.7);
//! 2. **CE on a classic (ECT(0)) packet** → `cwnd ×= BETA_ECN` (0.9 reference / 0.8 draft);
//! 3. **CE on an L4S (ECT(1)) packet** → `cwnd ×= 1 − backoff`, with
//!    `backoff = α/2 ÷ max(1, sRTT/interval)`, `× max(0.5, 1 − MSS/cwnd)`,
//!    `× 0.25` while the target is below 0.8 × the acknowledged rate (reference), and, while
//!    `qdelay < T/4`, `× max(0.25, sclI) × max(0.1, (th − dev)/th)` ([`l4s_backoff`]);
//! 4. **virtual CE** (no loss or CE, `qdelay_avg > T/2`) →
//!    `α_v = clamp((qdelay_avg − T/2)/(T/2), 0, 1)`, `cwnd ×= 1 − α_v/2 ÷ max(1, sRTT/interval)`
//!    `× max(0.5, 1 − MSS/cwnd)` ([`virtual_alpha`], [`virtual_backoff`]).

use std::time::Duration;

/// The congestion signal a reaction answers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Congestion {
    /// Packet loss.
    Loss,
    /// CE on a packet sent ECT(0).
    ClassicCe,
    /// CE on a packet sent ECT(1).
    L4sCe,
    /// Queue delay above T/2, with the virtual marking level α_v.
    VirtualCe(f64),
}

/// Inputs to the L4S back-off.
#[derive(Debug, Clone, Copy)]
pub struct L4sBackoffInputs {
    /// α.
    pub alpha: f64,
    /// Smoothed RTT.
    pub srtt: Duration,
    /// `reaction_interval` (the RTT back-offs are normalised to).
    pub interval: Duration,
    /// `min(1, MSS / cwnd)`.
    pub cwnd_ratio: f64,
    /// Latest queuing delay.
    pub qdelay: Duration,
    /// Queue-delay target T.
    pub qdelay_target: Duration,
    /// Inflection scale `sclI`.
    pub scl_i: f64,
    /// `max(min_dev_scale, (th − dev)/th)`.
    pub dev_scale: f64,
    /// The target rate is below `ratio ×` the acknowledged rate (the encoder lags).
    pub rate_limited: bool,
    /// Scale applied when `rate_limited` (0.25).
    pub rate_limited_scale: f64,
}

/// `max(1, sRTT / interval)`: several reactions happen per RTT when sRTT is long.
pub fn rtt_scale(srtt: Duration, interval: Duration) -> f64 {
    (srtt.as_secs_f64() / interval.as_secs_f64().max(1e-6)).max(1.0)
}

/// The fraction of the window an L4S CE event removes.
pub fn l4s_backoff(i: &L4sBackoffInputs) -> f64 {
    let mut b = i.alpha / 2.0;
    b /= rtt_scale(i.srtt, i.interval);
    b *= (1.0 - i.cwnd_ratio).max(0.5);
    if i.rate_limited {
        b *= i.rate_limited_scale;
    }
    if i.qdelay.as_secs_f64() < 0.25 * i.qdelay_target.as_secs_f64() {
        b *= i.scl_i.max(0.25);
        b *= i.dev_scale;
    }
    b.clamp(0.0, 0.5)
}

/// Virtual marking level from the averaged queue delay: 0 at T/2, 1 at T.
pub fn virtual_alpha(qdelay_avg: Duration, target: Duration) -> f64 {
    let half = target.as_secs_f64() / 2.0;
    ((qdelay_avg.as_secs_f64() - half) / half.max(1e-9)).clamp(0.0, 1.0)
}

/// The fraction of the window a virtual-CE event removes.
pub fn virtual_backoff(alpha_v: f64, srtt: Duration, interval: Duration, cwnd_ratio: f64) -> f64 {
    (alpha_v / 2.0 / rtt_scale(srtt, interval) * (1.0 - cwnd_ratio).max(0.5)).clamp(0.0, 0.5)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs() -> L4sBackoffInputs {
        L4sBackoffInputs {
            alpha: 0.4,
            srtt: Duration::from_millis(20),
            interval: Duration::from_millis(30),
            cwnd_ratio: 0.01,
            qdelay: Duration::from_millis(30),
            qdelay_target: Duration::from_millis(60),
            scl_i: 1.0,
            dev_scale: 1.0,
            rate_limited: false,
            rate_limited_scale: 0.25,
        }
    }

    #[test]
    fn l4s_backoff_is_half_alpha_for_short_rtt_and_large_window() {
        let b = l4s_backoff(&inputs());
        assert!((b - 0.2 * 0.99).abs() < 1e-12, "{b}");
    }

    #[test]
    fn l4s_backoff_scales_down_with_long_rtt() {
        let mut i = inputs();
        i.srtt = Duration::from_millis(90); // three reactions per RTT
        assert!((l4s_backoff(&i) - 0.2 * 0.99 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn l4s_backoff_is_limited_for_tiny_windows() {
        let mut i = inputs();
        i.cwnd_ratio = 0.9; // window of ~1 MSS
        assert!((l4s_backoff(&i) - 0.1).abs() < 1e-12);
    }

    #[test]
    fn l4s_backoff_shrinks_near_the_inflection_point_only_with_low_delay() {
        let mut i = inputs();
        i.scl_i = 0.1;
        i.dev_scale = 0.5;
        // qdelay 30 ms ≥ T/4: no inflection scaling.
        assert!((l4s_backoff(&i) - 0.198).abs() < 1e-12);
        i.qdelay = Duration::from_millis(1);
        // × max(0.25, 0.1) × 0.5
        assert!((l4s_backoff(&i) - 0.198 * 0.25 * 0.5).abs() < 1e-12);
    }

    #[test]
    fn l4s_backoff_is_quartered_while_the_encoder_lags() {
        let mut i = inputs();
        i.rate_limited = true;
        assert!((l4s_backoff(&i) - 0.198 * 0.25).abs() < 1e-12);
    }

    #[test]
    fn virtual_alpha_ramps_from_half_target_to_target() {
        let t = Duration::from_millis(60);
        assert_eq!(virtual_alpha(Duration::from_millis(30), t), 0.0);
        assert!((virtual_alpha(Duration::from_millis(45), t) - 0.5).abs() < 1e-12);
        assert_eq!(virtual_alpha(Duration::from_millis(90), t), 1.0);
        let b = virtual_backoff(
            0.5,
            Duration::from_millis(60),
            Duration::from_millis(30),
            0.01,
        );
        assert!((b - 0.25 / 2.0 * 0.99).abs() < 1e-12);
    }
}
