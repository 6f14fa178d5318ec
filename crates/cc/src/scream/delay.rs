//! One-way-delay bookkeeping: base delay, queuing delay, `qdelay_avg`, its deviation, sRTT.
//!
//! - Base delay: [`crate::base_delay::BaseDelay`] (shared with GCC) with `base_delay_slot`
//!   (10 s) × `base_delay_slots` (50) slots, so a route change is forgotten after at most
//!   500 s.
//! - `qdelay_avg` (draft §4.2.1.4): updated at most every `min(reaction_interval, sRTT)`; a lower
//!   sample is taken at once ("fast decay"), a higher one through an EWMA with gain 1/4.
//! - `qdelay_dev_norm` (draft §4.2.1.4, `calculate_qdelay_norm`): how much the queue delay
//!   varies, normalised to QDELAY_DEV_NORM, EWMA 1/64, capped at 1.5 × the threshold.
//! - sRTT: RFC 6298-style EWMA (gain 1/8) of the RTT of the highest newly acknowledged packet,
//!   starting at 50 ms; gain 1/1024 when application-limited and the sample is lower.
//!
//! Every state variable here is bounded: delays are clamped to [`MAX_DELAY`].

use std::time::{Duration, Instant};

use crate::base_delay::MAX_DELAY;

/// The smoothed delay state SCReAM reacts to.
#[derive(Debug, Clone)]
pub struct DelayState {
    /// Latest queuing-delay sample.
    pub qdelay: Duration,
    /// Slow-attack, fast-decay average of `qdelay`.
    pub qdelay_avg: Duration,
    /// Normalised queue-delay deviation.
    pub qdelay_dev_norm: f64,
    /// Smoothed RTT.
    pub srtt: Duration,
    last_avg_update: Option<Instant>,
}

impl DelayState {
    /// Initial state: no queue, sRTT = `initial_rtt`.
    pub fn new(initial_rtt: Duration) -> Self {
        DelayState {
            qdelay: Duration::ZERO,
            qdelay_avg: Duration::ZERO,
            qdelay_dev_norm: 0.0,
            srtt: initial_rtt.min(MAX_DELAY),
            last_avg_update: None,
        }
    }

    /// A new RTT sample (EWMA with `gain`; RFC 6298 §2).
    pub fn on_rtt(&mut self, rtt: Duration, gain: f64) {
        let rtt = rtt.min(MAX_DELAY).as_secs_f64();
        let s = self.srtt.as_secs_f64();
        self.srtt = Duration::from_secs_f64((s + gain.clamp(0.0, 1.0) * (rtt - s)).max(0.0));
    }

    /// Updates `qdelay_avg` and `qdelay_dev_norm` if `min(interval, sRTT)` has passed
    /// (draft §4.2.1.4). `dev_threshold` is `qdelay_dev_norm_th`.
    pub fn update_avg(
        &mut self,
        now: Instant,
        interval: Duration,
        avg_gain: f64,
        dev_norm: Duration,
        dev_gain: f64,
        dev_threshold: f64,
    ) {
        let due = self
            .last_avg_update
            .is_none_or(|t| now.saturating_duration_since(t) >= interval.min(self.srtt));
        if !due {
            return;
        }
        self.last_avg_update = Some(now);
        if self.qdelay < self.qdelay_avg {
            self.qdelay_avg = self.qdelay;
        } else {
            let a = self.qdelay_avg.as_secs_f64();
            let q = self.qdelay.as_secs_f64();
            self.qdelay_avg =
                Duration::from_secs_f64(a + avg_gain.clamp(0.0, 1.0) * (q - a)).min(MAX_DELAY);
        }
        let norm = dev_norm.as_secs_f64().max(1e-6);
        let sample =
            ((self.qdelay.as_secs_f64() - norm / 4.0) / norm).clamp(0.0, dev_threshold * 1.5);
        let g = dev_gain.clamp(0.0, 1.0);
        self.qdelay_dev_norm = (1.0 - g) * self.qdelay_dev_norm + g * sample;
    }

    /// `(th − dev) / th`, the scale the draft applies to increase, back-off and headroom.
    pub fn dev_scale(&self, dev_threshold: f64) -> f64 {
        ((dev_threshold - self.qdelay_dev_norm) / dev_threshold.max(1e-9)).clamp(0.0, 1.0)
    }
}

/// `qdelay_dev_norm_th`: 0.1 when the window is above 10 MSS, down to 0.05 for tiny windows
/// (draft §4.2.1.4).
pub fn dev_threshold(cwnd_ratio: f64) -> f64 {
    (0.1 * (1.0 - cwnd_ratio / 0.1)).max(0.05)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qdelay_avg_is_slow_attack_fast_decay() {
        let t0 = Instant::now();
        let mut d = DelayState::new(Duration::from_millis(50));
        let step = Duration::from_millis(30);
        d.qdelay = Duration::from_millis(40);
        d.update_avg(t0, step, 0.25, Duration::from_millis(25), 1.0 / 64.0, 0.1);
        assert_eq!(d.qdelay_avg, Duration::from_millis(10));
        // Too early: no update.
        d.update_avg(
            t0 + Duration::from_millis(5),
            step,
            0.25,
            Duration::from_millis(25),
            1.0 / 64.0,
            0.1,
        );
        assert_eq!(d.qdelay_avg, Duration::from_millis(10));
        d.update_avg(
            t0 + step,
            step,
            0.25,
            Duration::from_millis(25),
            1.0 / 64.0,
            0.1,
        );
        assert_eq!(d.qdelay_avg, Duration::from_micros(17_500));
        d.qdelay = Duration::from_millis(2);
        d.update_avg(
            t0 + step * 2,
            step,
            0.25,
            Duration::from_millis(25),
            1.0 / 64.0,
            0.1,
        );
        assert_eq!(d.qdelay_avg, Duration::from_millis(2));
        assert!(d.qdelay_dev_norm > 0.0);
    }

    #[test]
    fn srtt_is_an_ewma_with_gain_one_eighth() {
        let mut d = DelayState::new(Duration::from_millis(50));
        d.on_rtt(Duration::from_millis(130), 1.0 / 8.0);
        assert_eq!(d.srtt, Duration::from_millis(60));
        d.on_rtt(Duration::from_secs(1_000_000), 1.0);
        assert_eq!(d.srtt, MAX_DELAY);
    }
}
