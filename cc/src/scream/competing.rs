//! Competing-flow compensation: the adaptive queue-delay target (draft §4.2.1.4.1
//! "Competing Flows Compensation", RFC 8298 §4.1.2.2 `adjust_qdelay_target`).
//!
//! Against a loss-based flow on a drop-tail queue, the queue sits near its limit whatever
//! SCReAM does; with a fixed 60 ms target every feedback is a virtual-CE event and SCReAM's
//! share falls towards zero (the draft: "basically zero throughput"). The rule raises the
//! target, up to `QDELAY_TARGET_HI`, when the queue delay is high *and steady* (a standing
//! queue another flow keeps full) or when losses are frequent, and lowers it otherwise:
//!
//! ```text
//! qdelay_norm = qdelay / QDELAY_TARGET_LO            sampled every 50 ms into a 200-slot history
//! new_target  = (AVERAGE(newest 50) + sqrt(VARIANCE(all 200))) × QDELAY_TARGET_LO
//! loss_event_rate > 0.002      → target = 1.5 × new_target
//! else variance < 0.2          → target = new_target
//! else new_target < T_LO       → target = max(target / 2, new_target)
//! else                         → target = 0.9 × target
//! target clamped to [QDELAY_TARGET_LO, QDELAY_TARGET_HI]
//! ```
//!
//! The draft and RFC 8298 leave the sampling period open; the 50 ms here is RFC 8298's
//! period for the queue-delay history (`qdelay_fraction_hist`, §4.1.2.1), so the variance
//! spans 10 s and the average 2.5 s. `loss_event_rate` is the reference code's: once per
//! sRTT, `0.99 × rate + 0.01` if a loss (or classic-ECN) reaction happened in that RTT,
//! else `0.99 × rate`. L4S CE marks are not loss events: an L4S queue marks all the time at
//! a millisecond of delay, which says nothing about a competing classic flow.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Settings of the compensation ([`ScreamConfig::competing_flows`]).
///
/// [`ScreamConfig::competing_flows`]: super::ScreamConfig::competing_flows
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompetingFlows {
    /// Highest queue-delay target (QDELAY_TARGET_HI). Default 0.4 s (draft §4.2.2).
    pub qdelay_target_hi: Duration,
    /// Period of the queue-delay samples. Default 50 ms (RFC 8298 §4.1.2.1's sampling).
    pub sample_interval: Duration,
    /// Loss-event rate above which losses alone raise the target (draft: 0.002).
    pub loss_event_rate: f64,
}

impl Default for CompetingFlows {
    fn default() -> Self {
        CompetingFlows {
            qdelay_target_hi: Duration::from_millis(400),
            sample_interval: Duration::from_millis(50),
            loss_event_rate: 0.002,
        }
    }
}

/// Samples in the variance's history (draft: `qdelay_norm_history(200)`).
const HISTORY: usize = 200;
/// Newest samples in the average (draft: `qdelay_norm_history(50)`).
const AVERAGE: usize = 50;
/// Variance below which the queue is steady enough to follow (draft: 0.2).
const STEADY_VARIANCE: f64 = 0.2;

/// The adaptive target's state.
#[derive(Debug, Clone)]
pub struct QdelayTarget {
    lo: Duration,
    target: Duration,
    history: VecDeque<f64>,
    last_sample: Option<Instant>,
    loss_event_rate: f64,
    loss_in_round: bool,
    round_start: Option<Instant>,
}

impl QdelayTarget {
    /// Starts at `lo` (QDELAY_TARGET_LO).
    pub fn new(lo: Duration) -> Self {
        QdelayTarget {
            lo,
            target: lo,
            history: VecDeque::with_capacity(HISTORY),
            last_sample: None,
            loss_event_rate: 0.0,
            loss_in_round: false,
            round_start: None,
        }
    }

    /// A loss or classic-ECN window reduction happened.
    pub fn on_loss_event(&mut self) {
        self.loss_in_round = true;
    }

    /// Updates the loss-event rate once per `srtt` and, every `cfg.sample_interval`, the
    /// target from the newest queue-delay sample.
    pub fn update(&mut self, qdelay: Duration, srtt: Duration, now: Instant, cfg: &CompetingFlows) {
        let round = *self.round_start.get_or_insert(now);
        if now.saturating_duration_since(round) > srtt {
            let sample = if self.loss_in_round { 0.01 } else { 0.0 };
            self.loss_event_rate = 0.99 * self.loss_event_rate + sample;
            self.loss_in_round = false;
            self.round_start = Some(now);
        }
        if self
            .last_sample
            .is_some_and(|t| now.saturating_duration_since(t) < cfg.sample_interval)
        {
            return;
        }
        self.last_sample = Some(now);
        let lo = self.lo.as_secs_f64();
        if self.history.len() == HISTORY {
            self.history.pop_front();
        }
        self.history.push_back(qdelay.as_secs_f64() / lo);

        let n = self.history.len() as f64;
        let mean_all = self.history.iter().sum::<f64>() / n;
        let variance = self
            .history
            .iter()
            .map(|x| (x - mean_all).powi(2))
            .sum::<f64>()
            / n;
        let newest = self.history.len().min(AVERAGE);
        let average = self.history.iter().rev().take(newest).sum::<f64>() / newest as f64;
        let new_target = (average + variance.sqrt()) * lo;
        let current = self.target.as_secs_f64();
        let target = if self.loss_event_rate > cfg.loss_event_rate {
            1.5 * new_target
        } else if variance < STEADY_VARIANCE {
            new_target
        } else if new_target < lo {
            (0.5 * current).max(new_target)
        } else {
            0.9 * current
        };
        let hi = cfg.qdelay_target_hi.as_secs_f64().max(lo);
        let target = if target.is_finite() { target } else { lo };
        self.target = Duration::from_secs_f64(target.clamp(lo, hi));
    }

    /// The current queue-delay target.
    pub fn target(&self) -> Duration {
        self.target
    }

    /// The estimated fraction of RTTs with a loss event.
    pub fn loss_event_rate(&self) -> f64 {
        self.loss_event_rate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// Feeds `qdelay(i)` every 50 ms for `secs` seconds from `t`; returns the end time.
    fn feed(
        q: &mut QdelayTarget,
        t: Instant,
        secs: u64,
        qdelay: impl Fn(u64) -> Duration,
    ) -> Instant {
        let cfg = CompetingFlows::default();
        let mut now = t;
        for i in 0..secs * 20 {
            q.update(qdelay(i), 50 * MS, now, &cfg);
            now += 50 * MS;
        }
        now
    }

    #[test]
    fn a_low_queue_keeps_the_target_at_its_minimum() {
        let mut q = QdelayTarget::new(60 * MS);
        feed(&mut q, Instant::now(), 20, |i| {
            Duration::from_millis(5 + i % 10)
        });
        assert_eq!(q.target(), 60 * MS);
    }

    #[test]
    fn a_steady_standing_queue_raises_the_target_to_average_plus_deviation() {
        // 250 ms ± 10 ms: what a competing flow keeps in a deep drop-tail queue.
        let mut q = QdelayTarget::new(60 * MS);
        feed(&mut q, Instant::now(), 20, |i| {
            Duration::from_millis(240 + 20 * (i % 2))
        });
        let t = q.target().as_secs_f64();
        assert!((0.255..=0.265).contains(&t), "{t}");
    }

    #[test]
    fn frequent_losses_raise_the_target_by_half_again_up_to_its_maximum() {
        let mut q = QdelayTarget::new(60 * MS);
        let cfg = CompetingFlows::default();
        let mut now = Instant::now();
        for i in 0..400 {
            if i % 4 == 0 {
                q.on_loss_event();
            }
            q.update(200 * MS, 40 * MS, now, &cfg);
            now += 50 * MS;
        }
        assert!(q.loss_event_rate() > 0.002, "{}", q.loss_event_rate());
        // 1.5 × 200 ms = 300 ms.
        let t = q.target().as_secs_f64();
        assert!((0.29..=0.31).contains(&t), "{t}");
        for _ in 0..400 {
            q.on_loss_event();
            q.update(350 * MS, 40 * MS, now, &cfg);
            now += 50 * MS;
        }
        assert_eq!(q.target(), cfg.qdelay_target_hi);
    }

    #[test]
    fn the_target_falls_back_once_the_queue_empties() {
        let mut q = QdelayTarget::new(60 * MS);
        let t = feed(&mut q, Instant::now(), 20, |_| 250 * MS);
        assert!(q.target() >= 240 * MS);
        // The competing flow leaves: the queue drains; the variance is high while the
        // history still holds the old samples, and the target halves towards the new level.
        feed(&mut q, t, 15, |_| 10 * MS);
        assert_eq!(q.target(), 60 * MS);
    }

    #[test]
    fn a_nonsense_delay_cannot_make_the_target_leave_its_bounds() {
        let mut q = QdelayTarget::new(60 * MS);
        feed(&mut q, Instant::now(), 5, |i| {
            if i % 2 == 0 {
                Duration::from_secs(3600)
            } else {
                Duration::ZERO
            }
        });
        let t = q.target();
        assert!((60 * MS..=400 * MS).contains(&t), "{t:?}");
    }
}
