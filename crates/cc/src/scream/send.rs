//! Sender transmission control (SCReAM v2 draft §4.3): the send gate and the pacing rate.
//!
//! - Gate (draft §4.3.1, reference `isOkToTransmit`): the draft's `send_wnd = ref_wnd ×
//!   ref_wnd_overhead − bytes_in_flight` lets a data unit leave while it is above zero (RFC
//!   8298 §4.1.2.3: transmission "only if the number of bytes in flight is less than" the
//!   window), so the last one may overshoot by up to its size. The transport's pacer asks
//!   [`Controller::send_allowance`](crate::Controller::send_allowance) and sends a packet
//!   only if it *fits*, so the allowance is `cwnd × headroom + MSS − bytes_in_flight`: for
//!   full-size packets the same rule, not an addition to it. The headroom moves between 1.5 (jittery queue)
//!   and 3.0 (steady queue) with the delay-deviation scale, so a large frame leaves quickly on
//!   an uncongested path but the flight stays near the window when the queue is moving.
//! - Pacing (draft §4.3.2): `max(50 kbit/s, 1.5 × adaptive × target)`, not `cwnd / RTT`.
//!   `adaptive` (reference `adaptivePacingRateScale`) rises to 1.5 when the media queue holds
//!   more than a nominal frame, so a key frame does not wait for the pacer. With relaxed pacing
//!   (draft) the rate is raised up to 4× as the target approaches its maximum.

use cg_types::{Bitrate, DataSize};

use super::config::RelaxedPacing;

/// `REF_WND_OVERHEAD_MIN + (MAX − MIN) × max(0, (th − dev)/th)`.
pub fn window_headroom(min: f64, max: f64, dev_scale: f64) -> f64 {
    min + (max - min).max(0.0) * dev_scale.clamp(0.0, 1.0)
}

/// Bytes that may still be sent: `cwnd × headroom + MSS − bytes_in_flight`, saturating at 0.
pub fn allowance(cwnd: f64, headroom: f64, mss: f64, bytes_in_flight: u64) -> DataSize {
    let limit = cwnd * headroom + mss;
    DataSize::from_bytes_f64(limit - bytes_in_flight as f64)
}

/// Adaptive pacing scale from the media queue: `clamp(queued / nominal frame, 1, max)`.
pub fn adaptive_scale(queued: DataSize, target: Bitrate, frame_period_s: f64, max: f64) -> f64 {
    let nominal = target.as_bps_f64() * frame_period_s / 8.0;
    if nominal < 500.0 {
        return 1.0;
    }
    (queued.as_bytes_f64() / nominal).clamp(1.0, max.max(1.0))
}

/// The pacing rate: `max(min_rate, headroom × adaptive × max(target, media_rate))`, where
/// `media_rate` (the rate media actually enters the queue, capped at `max_bitrate`) keeps the
/// pacer from throttling an encoder that lags behind a falling target.
pub fn pacing_rate(
    target: Bitrate,
    media_rate: Bitrate,
    max_bitrate: Bitrate,
    headroom: f64,
    adaptive: f64,
    min_rate: Bitrate,
    relaxed: Option<&RelaxedPacing>,
) -> Bitrate {
    let base = target.max(media_rate.min(max_bitrate));
    let mut rate = base.as_bps_f64() * headroom * adaptive;
    if let Some(r) = relaxed {
        let nominal = target.as_bps_f64() / max_bitrate.as_bps_f64().max(1.0);
        let s = ((nominal - r.limit_low) / (1.0 - r.limit_low).max(1e-9)).min(1.0);
        let s = (1.0 - s).clamp(1.0 / r.max_factor.max(1.0), 1.0);
        rate /= s;
    }
    Bitrate::from_bps_f64(rate).max(min_rate)
}

/// L4S pacing cap (our addition, see [`ScreamConfig::l4s_pacing_cap`]): while L4S marks are
/// arriving, pace no faster than `cap ×` the bottleneck's rate (`bottleneck.rs`'s estimate),
/// but never below the target. A rate of 0 (no estimate) leaves the pacing rate alone.
///
/// [`ScreamConfig::l4s_pacing_cap`]: super::ScreamConfig::l4s_pacing_cap
pub fn l4s_cap(pacing: Bitrate, target: Bitrate, bottleneck_bps: f64, cap: f64) -> Bitrate {
    if bottleneck_bps <= 0.0 {
        return pacing;
    }
    pacing.min(Bitrate::from_bps_f64(cap * bottleneck_bps).max(target))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn send_gate_allows_up_to_headroom_times_window_plus_one_mss() {
        assert_eq!(allowance(10_000.0, 1.5, 1200.0, 0), DataSize::bytes(16_200));
        assert_eq!(
            allowance(10_000.0, 1.5, 1200.0, 16_000),
            DataSize::bytes(200)
        );
        assert_eq!(allowance(10_000.0, 1.5, 1200.0, 16_200), DataSize::ZERO);
        assert_eq!(allowance(10_000.0, 1.5, 1200.0, 99_999), DataSize::ZERO);
    }

    #[test]
    fn headroom_spans_min_to_max_with_the_jitter_scale() {
        assert_eq!(window_headroom(1.5, 3.0, 1.0), 3.0);
        assert_eq!(window_headroom(1.5, 3.0, 0.0), 1.5);
        assert_eq!(window_headroom(1.5, 3.0, 0.5), 2.25);
    }

    #[test]
    fn pacing_is_one_and_a_half_target_with_a_floor() {
        let max = Bitrate::mbps(100);
        let min = Bitrate::kbps(50);
        assert_eq!(
            pacing_rate(Bitrate::mbps(10), Bitrate::ZERO, max, 1.5, 1.0, min, None),
            Bitrate::mbps(15)
        );
        assert_eq!(
            pacing_rate(Bitrate::kbps(10), Bitrate::ZERO, max, 1.5, 1.0, min, None),
            min
        );
        assert_eq!(
            pacing_rate(Bitrate::mbps(10), Bitrate::ZERO, max, 1.5, 1.5, min, None),
            Bitrate::kbps(22_500)
        );
    }

    #[test]
    fn relaxed_pacing_opens_up_near_the_maximum() {
        let r = RelaxedPacing::default();
        let max = Bitrate::mbps(10);
        let min = Bitrate::kbps(50);
        assert_eq!(
            pacing_rate(
                Bitrate::mbps(5),
                Bitrate::ZERO,
                max,
                1.5,
                1.0,
                min,
                Some(&r)
            ),
            Bitrate::kbps(7_500)
        );
        // At 90 % of max: scale 0.5 → twice the rate.
        assert_eq!(
            pacing_rate(
                Bitrate::mbps(9),
                Bitrate::ZERO,
                max,
                1.5,
                1.0,
                min,
                Some(&r)
            ),
            Bitrate::mbps(27)
        );
        // The encoder lags above the target: pace for what it produces.
        assert_eq!(
            pacing_rate(Bitrate::mbps(5), Bitrate::mbps(8), max, 1.5, 1.0, min, None),
            Bitrate::mbps(12)
        );
        // At max: capped at 4×.
        assert_eq!(
            pacing_rate(
                Bitrate::mbps(10),
                Bitrate::ZERO,
                max,
                1.5,
                1.0,
                min,
                Some(&r)
            ),
            Bitrate::mbps(60)
        );
    }

    #[test]
    fn adaptive_scale_follows_large_frames() {
        let t = Bitrate::mbps(12); // 25 kB per 1/60 s frame
        let p = 1.0 / 60.0;
        assert_eq!(adaptive_scale(DataSize::bytes(10_000), t, p, 1.5), 1.0);
        assert!((adaptive_scale(DataSize::bytes(30_000), t, p, 1.5) - 1.2).abs() < 1e-9);
        assert_eq!(adaptive_scale(DataSize::bytes(300_000), t, p, 1.5), 1.5);
    }

    #[test]
    fn l4s_cap_limits_pacing_to_the_delivered_rate_but_not_below_target() {
        let p = Bitrate::mbps(60);
        assert_eq!(l4s_cap(p, Bitrate::mbps(40), 50e6, 1.1), Bitrate::mbps(55));
        assert_eq!(l4s_cap(p, Bitrate::mbps(40), 20e6, 1.1), Bitrate::mbps(40));
        assert_eq!(l4s_cap(p, Bitrate::mbps(40), 90e6, 1.1), p);
        assert_eq!(l4s_cap(p, Bitrate::mbps(40), 0.0, 1.1), p);
    }
}
