//! The inflection point (SCReAM v2 draft §4.2.2.1).
//!
//! `cwnd_i` remembers the window at the last congestion reaction (refreshed at most every
//! `inflection_update_rtts` sRTTs). Near it, both the increase and the L4S back-off are scaled
//! by `sclI = clamp((8 (cwnd − cwnd_i) / cwnd_i)², 0.1, 1)`, so the window creeps (down to
//! 0.1 MSS per RTT) around the last known maximum and moves freely far from it.

use std::time::{Duration, Instant};

/// Inflection-point state.
#[derive(Debug, Clone)]
pub struct Inflection {
    /// Window (bytes) at the last refresh; 1 before the first congestion (scale 1).
    pub cwnd_i: f64,
    last_update: Option<Instant>,
}

impl Default for Inflection {
    fn default() -> Self {
        Inflection {
            cwnd_i: 1.0,
            last_update: None,
        }
    }
}

impl Inflection {
    /// `sclI` for the current window.
    pub fn scale(&self, cwnd: f64) -> f64 {
        let r = 8.0 * (cwnd - self.cwnd_i) / self.cwnd_i.max(1.0);
        (r * r).clamp(0.1, 1.0)
    }

    /// A congestion reaction is about to happen with window `cwnd`: refresh the inflection point
    /// if the last refresh is more than `rtts × srtt` old.
    pub fn on_congestion(&mut self, cwnd: f64, now: Instant, srtt: Duration, rtts: f64) {
        let due = self.last_update.is_none_or(|t| {
            now.saturating_duration_since(t).as_secs_f64() > rtts * srtt.as_secs_f64()
        });
        if due {
            self.cwnd_i = cwnd.max(1.0);
            self.last_update = Some(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_is_small_near_the_inflection_point_and_one_far_from_it() {
        let mut i = Inflection::default();
        assert_eq!(i.scale(100_000.0), 1.0, "no congestion yet: full speed");
        i.on_congestion(100_000.0, Instant::now(), Duration::from_millis(30), 10.0);
        assert_eq!(i.scale(100_000.0), 0.1);
        // 5 % away: (8 × 0.05)² = 0.16.
        assert!((i.scale(105_000.0) - 0.16).abs() < 1e-9);
        assert!((i.scale(95_000.0) - 0.16).abs() < 1e-9);
        // 12.5 % away or more: 1.
        assert_eq!(i.scale(112_500.0), 1.0);
        assert_eq!(i.scale(50_000.0), 1.0);
    }

    #[test]
    fn inflection_point_refreshes_at_most_every_n_rtts() {
        let t0 = Instant::now();
        let rtt = Duration::from_millis(30);
        let mut i = Inflection::default();
        i.on_congestion(100_000.0, t0, rtt, 10.0);
        i.on_congestion(70_000.0, t0 + Duration::from_millis(200), rtt, 10.0);
        assert_eq!(i.cwnd_i, 100_000.0, "within 10 sRTT: kept");
        i.on_congestion(70_000.0, t0 + Duration::from_millis(301), rtt, 10.0);
        assert_eq!(i.cwnd_i, 70_000.0);
    }
}
