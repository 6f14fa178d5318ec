//! Application-limited region (ALR) detection, as libwebrtc's `AlrDetector` over its
//! `IntervalBudget` (`modules/pacing/interval_budget.cc`, shared/notes §6): a budget fills at
//! 65 % of the target rate, capped at 500 ms worth, and every sent byte drains it. While more
//! than 80 % of the budget is unused the sender is in ALR (it sends well below what it may);
//! ALR ends when less than 50 % is unused.
//!
//! Beyond the papers (MMSys16 has no ALR): it only decides when [`super::probe_controller`]
//! may probe after the allowed rate rose or the estimate dropped.

use std::time::{Duration, Instant};

use cg_types::{Bitrate, DataSize};

/// Budget rate as a fraction of the target (libwebrtc `kDefaultAlrBandwidthUsageRatio`).
const USAGE_RATIO: f64 = 0.65;
/// Unused fraction above which ALR starts (`kDefaultAlrStartBudgetLevelRatio`).
const START_RATIO: f64 = 0.8;
/// Unused fraction below which ALR ends (`kDefaultAlrStopBudgetLevelRatio`).
const STOP_RATIO: f64 = 0.5;
/// Window of the budget (`IntervalBudget`'s 500 ms).
const WINDOW: Duration = Duration::from_millis(500);

/// The detector.
#[derive(Debug, Clone)]
pub struct AlrDetector {
    /// Unused budget in bytes, in `[-max, max]` (a deficit is carried like libwebrtc's
    /// `can_build_up_underuse` = false budget, which also goes negative).
    budget: f64,
    last: Option<Instant>,
    start: Option<Instant>,
    ended: Option<Instant>,
}

impl Default for AlrDetector {
    fn default() -> Self {
        AlrDetector {
            budget: 0.0,
            last: None,
            start: None,
            ended: None,
        }
    }
}

impl AlrDetector {
    /// `size` bytes were sent at `now` while the target was `target`.
    pub fn on_bytes_sent(&mut self, size: DataSize, target: Bitrate, now: Instant) {
        let rate = target.as_bps_f64() * USAGE_RATIO / 8.0;
        let max = rate * WINDOW.as_secs_f64();
        let dt = self
            .last
            .map_or(Duration::ZERO, |l| now.saturating_duration_since(l))
            .min(WINDOW);
        self.last = Some(self.last.map_or(now, |l| l.max(now)));
        self.budget = (self.budget + rate * dt.as_secs_f64()).min(max);
        self.budget = (self.budget - size.as_bytes_f64()).max(-max);
        let ratio = if max > 0.0 { self.budget / max } else { 0.0 };
        if self.start.is_none() && ratio > START_RATIO {
            self.start = Some(now);
        } else if self.start.is_some() && ratio < STOP_RATIO {
            self.start = None;
            self.ended = Some(now);
        }
    }

    /// When the current ALR started, if the sender is in one.
    pub fn alr_start(&self) -> Option<Instant> {
        self.start
    }

    /// When the last ALR ended.
    pub fn alr_ended(&self) -> Option<Instant> {
        self.ended
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sending_well_below_the_target_is_alr_and_filling_it_ends_alr() {
        let t0 = Instant::now();
        let mut d = AlrDetector::default();
        let target = Bitrate::mbps(1);
        // 200 kbit/s of 1200-byte packets against a 1 Mbit/s target: ALR within a second.
        let mut t = t0;
        for _ in 0..25 {
            t += Duration::from_millis(48);
            d.on_bytes_sent(DataSize::bytes(1200), target, t);
        }
        assert!(d.alr_start().is_some());
        // 1 Mbit/s: the budget drains, ALR ends.
        for _ in 0..100 {
            t += Duration::from_micros(9600);
            d.on_bytes_sent(DataSize::bytes(1200), target, t);
        }
        assert!(d.alr_start().is_none());
        assert!(d.alr_ended().is_some());
    }

    #[test]
    fn sending_at_the_target_is_not_alr() {
        let t0 = Instant::now();
        let mut d = AlrDetector::default();
        let mut t = t0;
        for _ in 0..500 {
            t += Duration::from_micros(9600);
            d.on_bytes_sent(DataSize::bytes(1200), Bitrate::mbps(1), t);
        }
        assert!(d.alr_start().is_none());
    }
}
