//! Capacity probe for the L4S pacing cap (our addition, see
//! [`ScreamConfig::l4s_capacity_probe`](super::ScreamConfig::l4s_capacity_probe)).
//!
//! The cap paces at the bottleneck estimate, so once the link grows no train outruns it and
//! the estimate cannot learn the rise (`bottleneck.rs`). The sign that it may have is the
//! target: SCReAM's window grows while no mark comes, and a target that has stood at or
//! above the estimate for a wait without a break asks for more than the cap lets out. Then,
//! if no L4S mark is fresh, the cap allows `gain ×` the estimate for `length`, and the
//! estimator keeps the packets sent in that time in a train of their own.
//!
//! - On a faster link that train arrives unstretched and raises the estimate. Each raise
//!   calls for the next probe at once and brings the wait back to `interval`, so the
//!   estimate climbs by up to `gain` per round trip until a probe outruns the link.
//! - On an unchanged link the probe outruns the bottleneck: one fresh sample, and a queue
//!   of `(gain − 1) × length` that DualPI2 may mark. The wait then doubles, up to
//!   `max_interval`, because where the cap itself holds the target at the estimate (a
//!   standing media queue) the target is at the cap all the time and every probe would
//!   only mark.

use std::time::Instant;

use super::config::CapacityProbe;

/// When to probe.
#[derive(Debug, Clone, Default)]
pub struct Probe {
    /// The current probe: from, until.
    current: Option<(Instant, Instant)>,
    /// A probe found more capacity: the next one is due then, without waiting for the
    /// target to stand at the cap for an interval (it must still be at the cap).
    next: Option<Instant>,
    /// The estimator's raise count when last seen.
    raises: u64,
    /// Since when the target has been at the cap without a break.
    binding_since: Option<Instant>,
    /// Probes in a row that found nothing: each doubles the wait for the next one.
    misses: u32,
}

/// The wait doubles at most this often (then `max_interval` holds it).
const MAX_DOUBLINGS: u32 = 16;

/// What the controller knows when it sets the pacing rate.
#[derive(Debug, Clone, Copy)]
pub struct ProbeInputs {
    pub now: Instant,
    /// The target is at or above the capped rate.
    pub target_at_cap: bool,
    /// No L4S mark has arrived for a while.
    pub quiet: bool,
    /// [`BottleneckRate::raises`](super::bottleneck::BottleneckRate::raises).
    pub raises: u64,
}

impl Probe {
    /// The probe under way: when it started and when it ends.
    pub fn current(&self) -> Option<(Instant, Instant)> {
        self.current
    }

    /// The factor on the bottleneck estimate the cap allows now: `cfg.gain` while probing,
    /// else 1.
    pub fn gain(&mut self, cfg: &CapacityProbe, i: ProbeInputs) -> f64 {
        if i.raises != self.raises {
            // A probe found more: the next one is due now, and the wait starts short again.
            self.raises = i.raises;
            self.next = Some(i.now);
            self.misses = 0;
        }
        if let Some((_, until)) = self.current {
            if i.now < until {
                return cfg.gain;
            }
            self.current = None;
        }
        if !i.target_at_cap {
            self.binding_since = None;
            return 1.0;
        }
        let since = *self.binding_since.get_or_insert(i.now);
        let chained = self.next.is_some_and(|t| i.now >= t);
        let wait = cfg
            .interval
            .checked_mul(1 << self.misses)
            .map_or(cfg.max_interval, |w| w.min(cfg.max_interval));
        let waited = i.now.saturating_duration_since(since) >= wait;
        if !((chained || waited) && i.quiet) {
            return 1.0;
        }
        if !chained {
            self.misses = (self.misses + 1).min(MAX_DOUBLINGS);
        }
        // (The config bounds the length; a clock that cannot add it gets no probe.)
        let until = i.now.checked_add(cfg.length).unwrap_or(i.now);
        self.current = Some((i.now, until));
        self.next = None;
        self.binding_since = Some(i.now);
        cfg.gain
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const CFG: CapacityProbe = CapacityProbe {
        gain: 1.25,
        length: Duration::from_millis(16),
        interval: Duration::from_millis(300),
        max_interval: Duration::from_millis(1200),
    };

    /// The times (ms from start, stepping every 4 ms for `ms`) at which the gain is above 1;
    /// `at_cap(t)` says whether the target is at the cap, `raise_at` when the estimate rose.
    fn probing(ms: u64, at_cap: impl Fn(u64) -> bool, raise_at: &[u64]) -> Vec<u64> {
        let start = Instant::now();
        let mut p = Probe::default();
        let mut out = Vec::new();
        for t in (0..ms).step_by(4) {
            let i = ProbeInputs {
                now: start + Duration::from_millis(t),
                target_at_cap: at_cap(t),
                quiet: true,
                raises: raise_at.iter().filter(|&&r| r <= t).count() as u64,
            };
            if p.gain(&CFG, i) > 1.0 {
                out.push(t);
            }
        }
        out
    }

    #[test]
    fn probes_that_find_nothing_double_the_wait_up_to_its_longest() {
        let got = probing(4_000, |_| true, &[]);
        let starts: Vec<u64> = got
            .iter()
            .copied()
            .filter(|t| !got.contains(&(t - 4)))
            .collect();
        // Waits of 300, 600, 1200, 1200 ms; each probe lasts 16 ms.
        assert_eq!(starts, [300, 900, 2100, 3300]);
        assert!(
            got.iter()
                .all(|t| starts.iter().any(|s| (*s..s + 16).contains(t)))
        );
    }

    #[test]
    fn a_raise_calls_the_next_probe_at_once_and_shortens_the_wait_again() {
        // The probes at 300 and 900 find nothing; the one at 2100 raises the estimate at
        // 2150 (a round trip later): at once another, and the wait is 300 ms again.
        let got = probing(2_600, |_| true, &[2150]);
        let starts: Vec<u64> = got
            .iter()
            .copied()
            .filter(|t| !got.contains(&(t - 4)))
            .collect();
        assert_eq!(starts, [300, 900, 2100, 2152, 2452]);
    }

    #[test]
    fn a_target_that_leaves_the_cap_starts_the_interval_again() {
        // Under the cap at 200 ms: the 300 ms count restarts at 204.
        let got = probing(520, |t| t != 200, &[]);
        assert_eq!(got, [504, 508, 512, 516]);
    }

    #[test]
    fn no_probe_while_marks_are_fresh_or_the_target_is_under_the_cap() {
        let start = Instant::now();
        let mut p = Probe::default();
        for t in (0..3_000).step_by(4) {
            let i = ProbeInputs {
                now: start + Duration::from_millis(t),
                quiet: t % 8 == 0,
                target_at_cap: t % 8 != 0,
                raises: t / 1000,
            };
            assert_eq!(p.gain(&CFG, i), 1.0, "at {t} ms");
        }
    }
}
