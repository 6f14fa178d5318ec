//! The over-use detector: Algorithm 1 of the 2013 paper (MMSys16 §3.3, Figure 3).
//!
//! `m > γ` must persist for `t̄OU` (accumulated over the groups' inter-arrival times: "the
//! time spent in this condition", MMSys16 §3.3, on the receiver's clock) and
//! `m(ti) ≥ m(ti−1)` before over-use is signalled; `m < −γ` signals under-use at once;
//! `|m| ≤ γ` signals normal. While `m > γ` has not yet lasted `t̄OU` (or `m` is shrinking),
//! Algorithm 1 assigns no signal: [`OveruseDetector::detect`] then returns `None` and the
//! rate controller keeps its state (see [`crate::gcc::rate_control`]).
//!
//! libwebrtc accumulates the groups' send-time deltas against its 10 ms. With the paper's
//! 100 ms that is several frames, and when the link shrinks they arrive that many times
//! slower: counted in send time, over-use came long after a deep buffer had overflowed.

use std::time::Duration;

/// The detector's output `s`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Signal {
    /// `|m| ≤ γ`.
    #[default]
    Normal,
    /// `m > γ` for longer than `t̄OU`, and growing.
    Overuse,
    /// `m < −γ`.
    Underuse,
}

impl Signal {
    /// −1 under-use, 0 normal, +1 over-use (for plots).
    pub fn as_f64(self) -> f64 {
        match self {
            Signal::Underuse => -1.0,
            Signal::Normal => 0.0,
            Signal::Overuse => 1.0,
        }
    }
}

/// Algorithm 1.
#[derive(Debug, Clone)]
pub struct OveruseDetector {
    overuse_time_ms: f64,
    t_ou_ms: f64,
    prev_m: f64,
    signal: Signal,
}

impl OveruseDetector {
    /// A detector with persistence `t̄OU = overuse_time`.
    pub fn new(overuse_time: Duration) -> Self {
        OveruseDetector {
            overuse_time_ms: overuse_time.as_secs_f64() * 1e3,
            t_ou_ms: 0.0,
            prev_m: 0.0,
            signal: Signal::Normal,
        }
    }

    /// Classifies `m(ti)` against `γ(ti)`; `elapsed_ms` is the time since the last group
    /// on the receiver's clock (its inter-arrival time). `None` when Algorithm 1 assigns no
    /// signal (over `γ`, not yet for `t̄OU`).
    pub fn detect(&mut self, m: f64, gamma: f64, elapsed_ms: f64) -> Option<Signal> {
        if !m.is_finite() {
            return None;
        }
        let dt = if elapsed_ms.is_finite() {
            elapsed_ms.max(0.0)
        } else {
            0.0
        };
        let out = if m.abs() > gamma {
            if m > 0.0 {
                self.t_ou_ms += dt;
                if self.t_ou_ms > self.overuse_time_ms && m >= self.prev_m {
                    self.t_ou_ms = 0.0;
                    Some(Signal::Overuse)
                } else {
                    None
                }
            } else {
                self.t_ou_ms = 0.0;
                Some(Signal::Underuse)
            }
        } else {
            self.t_ou_ms = 0.0;
            Some(Signal::Normal)
        };
        self.prev_m = m;
        if let Some(s) = out {
            self.signal = s;
        }
        out
    }

    /// The last signal assigned.
    pub fn signal(&self) -> Signal {
        self.signal
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overuse_fires_only_after_100_ms_above_gamma() {
        let mut d = OveruseDetector::new(Duration::from_millis(100));
        let mut elapsed = 0.0;
        let mut m = 1.0;
        loop {
            m += 0.01; // growing
            elapsed += 33.0;
            let s = d.detect(m, 0.5, 33.0);
            if s == Some(Signal::Overuse) {
                break;
            }
            assert_eq!(s, None, "no signal while the persistence timer runs");
            assert!(elapsed < 200.0);
        }
        assert!(elapsed > 100.0, "fired after {elapsed} ms");
        assert!(elapsed <= 133.0, "fired after {elapsed} ms");
    }

    #[test]
    fn overuse_needs_a_non_decreasing_gradient() {
        let mut d = OveruseDetector::new(Duration::from_millis(100));
        let mut m = 2.0;
        for _ in 0..10 {
            m -= 0.05; // above γ but shrinking: the queue is already draining
            assert_eq!(d.detect(m, 0.5, 33.0), None);
        }
        assert_eq!(d.detect(m + 0.1, 0.5, 33.0), Some(Signal::Overuse));
        assert_eq!(d.signal(), Signal::Overuse);
        // The timer restarted: the next frame above γ assigns nothing yet.
        assert_eq!(d.detect(m + 0.2, 0.5, 33.0), None);
    }

    #[test]
    fn a_dip_below_gamma_restarts_the_overuse_timer() {
        let mut d = OveruseDetector::new(Duration::from_millis(100));
        d.detect(1.0, 0.5, 33.0);
        d.detect(1.1, 0.5, 33.0);
        d.detect(1.2, 0.5, 33.0);
        assert_eq!(d.detect(0.2, 0.5, 33.0), Some(Signal::Normal));
        assert_eq!(d.detect(1.0, 0.5, 33.0), None);
        assert_eq!(d.detect(1.1, 0.5, 33.0), None);
        assert_eq!(d.detect(1.2, 0.5, 33.0), None);
        assert_eq!(d.detect(1.3, 0.5, 33.0), Some(Signal::Overuse));
    }

    #[test]
    fn underuse_and_normal_are_immediate() {
        let mut d = OveruseDetector::new(Duration::from_millis(100));
        assert_eq!(d.detect(-0.6, 0.5, 33.0), Some(Signal::Underuse));
        assert_eq!(d.detect(0.3, 0.5, 33.0), Some(Signal::Normal));
        assert_eq!(d.detect(f64::NAN, 0.5, 33.0), None);
        assert_eq!(d.signal(), Signal::Normal);
    }
}
