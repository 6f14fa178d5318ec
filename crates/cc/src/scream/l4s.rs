//! The L4S congestion level α (SCReAM v2 draft §4.2.1.3, DCTCP RFC 8257 §3.3).
//!
//! α is an EWMA of the fraction F of delivered L4S packets (sent ECT(1)) that came back CE,
//! computed at most every `min(10 ms, sRTT)`. It is fast-attack, slow-decay:
//! F ≥ α → α += (F − α)/8; F < α → α ×= 1 − 1/128. Counting packets rather than bytes keeps α
//! accurate at low rates where a frame's tail packet is small (draft §4.2.1.3).

use std::time::{Duration, Instant};

/// DCTCP-like marking estimator.
#[derive(Debug, Clone)]
pub struct L4sAlpha {
    /// Current α in `[0, 1]`.
    pub alpha: f64,
    /// Marked fraction of the last completed interval.
    pub last_fraction: f64,
    delivered: u64,
    marked: u64,
    last_update: Option<Instant>,
}

impl L4sAlpha {
    /// Starts at `initial` (clamped to `[0, 1]`).
    pub fn new(initial: f64) -> Self {
        L4sAlpha {
            alpha: if initial.is_finite() {
                initial.clamp(0.0, 1.0)
            } else {
                0.0
            },
            last_fraction: 0.0,
            delivered: 0,
            marked: 0,
            last_update: None,
        }
    }

    /// One delivered L4S packet; `ce` if it was marked.
    pub fn on_delivered(&mut self, ce: bool) {
        self.delivered += 1;
        self.marked += u64::from(ce);
    }

    /// Updates α if `min(interval, srtt)` has passed since the last update and packets were
    /// delivered. Returns `true` if α changed.
    pub fn update(
        &mut self,
        now: Instant,
        interval: Duration,
        srtt: Duration,
        up: f64,
        down: f64,
    ) -> bool {
        let last = *self.last_update.get_or_insert(now);
        if now.saturating_duration_since(last) < interval.min(srtt) || self.delivered == 0 {
            return false;
        }
        let f = self.marked as f64 / self.delivered as f64;
        if f >= self.alpha {
            self.alpha += up.clamp(0.0, 1.0) * (f - self.alpha);
        } else {
            self.alpha *= 1.0 - down.clamp(0.0, 1.0);
        }
        self.alpha = self.alpha.clamp(0.0, 1.0);
        self.last_fraction = f;
        self.delivered = 0;
        self.marked = 0;
        self.last_update = Some(now);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UP: f64 = 1.0 / 8.0;
    const DOWN: f64 = 1.0 / 128.0;
    const TEN_MS: Duration = Duration::from_millis(10);

    fn interval(a: &mut L4sAlpha, t: Instant, delivered: u32, marked: u32) -> bool {
        for i in 0..delivered {
            a.on_delivered(i < marked);
        }
        a.update(t, TEN_MS, Duration::from_millis(30), UP, DOWN)
    }

    #[test]
    fn alpha_rises_by_one_eighth_of_the_gap() {
        let t0 = Instant::now();
        let mut a = L4sAlpha::new(0.0);
        assert!(!interval(&mut a, t0, 0, 0)); // first call only starts the clock
        assert!(interval(&mut a, t0 + TEN_MS, 10, 5));
        assert!((a.alpha - 0.5 / 8.0).abs() < 1e-12);
        assert!(interval(&mut a, t0 + TEN_MS * 2, 10, 10));
        let expected = 0.0625 + (1.0 - 0.0625) / 8.0;
        assert!((a.alpha - expected).abs() < 1e-12);
    }

    #[test]
    fn alpha_decays_by_one_over_128_when_marking_is_lower() {
        let t0 = Instant::now();
        let mut a = L4sAlpha::new(0.4);
        a.update(t0, TEN_MS, TEN_MS, UP, DOWN);
        assert!(interval(&mut a, t0 + TEN_MS, 10, 1)); // F = 0.1 < α
        assert!((a.alpha - 0.4 * 127.0 / 128.0).abs() < 1e-12);
    }

    #[test]
    fn alpha_updates_at_most_every_min_10ms_srtt() {
        let t0 = Instant::now();
        let mut a = L4sAlpha::new(0.0);
        a.update(t0, TEN_MS, Duration::from_millis(30), UP, DOWN);
        assert!(!interval(&mut a, t0 + Duration::from_millis(9), 10, 10));
        assert_eq!(a.alpha, 0.0);
        // The counts carry over to the next due update.
        assert!(a.update(t0 + TEN_MS, TEN_MS, Duration::from_millis(30), UP, DOWN));
        assert!((a.alpha - 1.0 / 8.0).abs() < 1e-12);
        // With a 4 ms sRTT the interval is 4 ms.
        a.on_delivered(true);
        assert!(a.update(
            t0 + Duration::from_millis(14),
            TEN_MS,
            Duration::from_millis(4),
            UP,
            DOWN
        ));
        // Nothing delivered: no update.
        assert!(!a.update(t0 + Duration::from_secs(1), TEN_MS, TEN_MS, UP, DOWN));
    }

    #[test]
    fn alpha_stays_in_unit_interval() {
        let t0 = Instant::now();
        let mut a = L4sAlpha::new(f64::NAN);
        assert_eq!(a.alpha, 0.0);
        a.update(t0, TEN_MS, TEN_MS, UP, DOWN);
        for i in 1..2000u32 {
            interval(&mut a, t0 + TEN_MS * i, 3, 3);
            assert!(a.alpha <= 1.0);
        }
        assert!(a.alpha > 0.999);
    }
}
