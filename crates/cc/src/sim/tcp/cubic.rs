//! CUBIC's window arithmetic (RFC 9438), in segments: the cubic function, the
//! Reno-friendly estimate, fast convergence and the epoch.

use std::time::{Duration, Instant};

/// `β_cubic` (RFC 9438 §4.6): the window after a congestion event is 0.7 of the one before.
pub(crate) const BETA: f64 = 0.7;
/// `α_cubic = 3(1 − β)/(1 + β)` (RFC 9438 §4.3): Reno's average rate with CUBIC's β.
const ALPHA: f64 = 3.0 * (1.0 - BETA) / (1.0 + BETA);

/// CUBIC's congestion-avoidance state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Cubic {
    /// `W_max`: the window before the last reduction (lowered by fast convergence), segments.
    w_max: f64,
    /// The window before the last reduction (`cwnd_prior`, RFC 9438 §4.6).
    cwnd_prior: f64,
    /// `t_epoch` and `K`, once congestion avoidance has started since the last reduction.
    epoch: Option<(Instant, f64)>,
    /// `W_est`, the Reno-friendly estimate (RFC 9438 §4.3).
    w_est: f64,
}

impl Cubic {
    /// Nothing measured yet: the first epoch starts at the window slow start ended with.
    pub(crate) fn new() -> Self {
        Cubic {
            w_max: 0.0,
            cwnd_prior: 0.0,
            epoch: None,
            w_est: 0.0,
        }
    }

    /// A congestion event (loss or ECE) with window `cwnd`: sets `W_max`, with fast
    /// convergence (RFC 9438 §4.7: below the last `W_max`, release some bandwidth by
    /// remembering only `cwnd·(1 + β)/2`), ends the epoch, and returns the reduced window
    /// `cwnd·β` (§4.6), at least 2 segments.
    pub(crate) fn on_congestion(&mut self, cwnd: f64) -> f64 {
        self.w_max = if cwnd < self.w_max {
            cwnd * (1.0 + BETA) / 2.0
        } else {
            cwnd
        };
        self.cwnd_prior = cwnd;
        self.epoch = None;
        (cwnd * BETA).max(2.0)
    }

    /// A retransmission timeout (RFC 9438 §4.8): the next congestion-avoidance stage starts
    /// its own epoch with `K = 0` and `W_max` the window it starts with.
    pub(crate) fn on_timeout(&mut self) {
        self.w_max = 0.0;
        self.epoch = None;
    }

    /// `W_max` (segments) after the last congestion event.
    pub(crate) fn w_max(&self) -> f64 {
        self.w_max
    }

    /// The window after one acknowledged segment in congestion avoidance (RFC 9438 §4.2–4.5):
    /// `cwnd` moves by `(target − cwnd)/cwnd` towards `target = W_cubic(t + RTT)` clamped to
    /// `[cwnd, 1.5·cwnd]`, or to `W_est` where `W_cubic(t) < W_est` (Reno-friendly region).
    /// `rtt` is the smoothed RTT (Linux uses the minimum RTT here).
    pub(crate) fn on_ack(&mut self, cwnd: f64, rtt: Duration, now: Instant) -> f64 {
        let (start, k) = match self.epoch {
            Some(e) => e,
            None => {
                // RFC 9438 §4.2 eq. 2: K = ∛((W_max − cwnd_epoch)/C); an epoch starting at or
                // above W_max (the first one, or after a timeout, §4.8) has K = 0, W_max = cwnd.
                self.w_max = self.w_max.max(cwnd);
                let k = crate::cubic::k(self.w_max, cwnd);
                self.w_est = cwnd;
                self.epoch = Some((now, k));
                (now, k)
            }
        };
        let t = now.saturating_duration_since(start).as_secs_f64();
        let w = |t: f64| crate::cubic::window(self.w_max, k, t);
        // §4.3: α becomes 1 once W_est has regained the window before the reduction.
        let alpha = if self.w_est >= self.cwnd_prior {
            1.0
        } else {
            ALPHA
        };
        self.w_est += alpha / cwnd;
        if w(t) < self.w_est {
            return self.w_est.max(cwnd);
        }
        let target = w(t + rtt.as_secs_f64()).clamp(cwnd, 1.5 * cwnd);
        cwnd + (target - cwnd) / cwnd
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reduction_keeps_seven_tenths_and_remembers_w_max() {
        let mut c = Cubic::new();
        assert_eq!(c.on_congestion(100.0), 70.0);
        assert_eq!(c.w_max(), 100.0);
        assert_eq!(c.on_congestion(1.0), 2.0);
    }

    #[test]
    fn fast_convergence_lowers_w_max_below_the_last_one() {
        let mut c = Cubic::new();
        c.on_congestion(100.0);
        c.on_congestion(80.0);
        assert!((c.w_max() - 80.0 * 0.85).abs() < 1e-9);
        c.on_congestion(90.0);
        assert_eq!(c.w_max(), 90.0);
    }

    /// Drives one ack per segment of the window every `rtt`.
    fn grow(
        c: &mut Cubic,
        mut cwnd: f64,
        rtt: Duration,
        t0: Instant,
        until: f64,
    ) -> Vec<(f64, f64)> {
        let mut now = t0;
        let mut out = Vec::new();
        while now.duration_since(t0).as_secs_f64() < until {
            let acks = cwnd.floor() as u64;
            for i in 0..acks {
                let at = now + rtt.mul_f64(i as f64 / acks as f64);
                cwnd = c.on_ack(cwnd, rtt, at);
            }
            now += rtt;
            out.push((now.duration_since(t0).as_secs_f64(), cwnd));
        }
        out
    }

    #[test]
    fn the_window_regains_w_max_after_k_seconds() {
        // W_max 1000 segments: K = ∛(1000 · 0.3 / 0.4) = 9.09 s.
        let mut c = Cubic::new();
        let cwnd = c.on_congestion(1000.0);
        let rtt = Duration::from_millis(100);
        let t0 = Instant::now();
        let trace = grow(&mut c, cwnd, rtt, t0, 14.0);
        let k = (1000.0f64 * 0.3 / 0.4).cbrt();
        let regained = trace
            .iter()
            .find(|(_, w)| *w >= 1000.0)
            .map(|(t, _)| *t)
            .expect("regains W_max");
        assert!(
            (regained - k).abs() < 0.3,
            "regained after {regained:.2} s, K {k:.2} s"
        );
        // Concave: 7/8 of the climb in the first half of K.
        let at = |x: f64| {
            trace
                .iter()
                .find(|(t, _)| *t >= x)
                .map(|(_, w)| *w)
                .unwrap()
        };
        let share = (at(k / 2.0) - 700.0) / 300.0;
        assert!((share - 0.875).abs() < 0.05, "first-half share {share:.3}");
        // Convex beyond: the next 2 s climb more than the 2 s before K.
        assert!(at(k + 4.0) - at(k + 2.0) > 2.0 * (at(k) - at(k - 2.0)));
    }

    #[test]
    fn a_small_window_grows_like_reno_with_alpha() {
        // W_max 20: K = 2.5 s, W_cubic stays within 20 ± a few segments, and W_est
        // (α = 0.53 per RTT, 1 once above 20) overtakes it: the Reno-friendly region.
        let mut c = Cubic::new();
        let cwnd = c.on_congestion(20.0);
        let rtt = Duration::from_millis(20);
        let trace = grow(&mut c, cwnd, rtt, Instant::now(), 2.0);
        let end = trace.last().unwrap().1;
        // 100 RTTs: 14 → 20 takes ~11 RTTs at 0.53, then 1 per RTT for ~89: about 109.
        assert!((95.0..=115.0).contains(&end), "{end:.1}");
    }

    #[test]
    fn an_epoch_after_a_timeout_starts_at_k_zero() {
        let mut c = Cubic::new();
        c.on_congestion(500.0);
        c.on_timeout();
        let now = Instant::now();
        let w = c.on_ack(10.0, Duration::from_millis(50), now);
        assert_eq!(c.w_max(), 10.0);
        assert!((10.0..10.2).contains(&w), "{w}");
    }
}
