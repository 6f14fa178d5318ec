//! The threshold `γ(ti)` the over-use detector compares `m(ti)` with.
//!
//! - Adaptive: MMSys16 §4.2, eq. (17) `γ(ti) = γ(ti−1) + ΔT·kγ(ti)·(|m(ti)| − γ(ti−1))` with
//!   the gain of eq. (18) (`ku` when `|m| ≥ γ`, `kd` when `|m| < γ`). `ΔT` in ms, capped at
//!   100 ms as libwebrtc does so that a pause does not snap `γ` onto `|m|`.
//! - Static: the 2013 paper's "remote state region" (§III-B.3): `γ̄`, halved while the FSM
//!   is in Decrease or `Ar` is well below the receive rate.

use crate::gcc::config::ThresholdModel;

/// Largest `ΔT` of eq. (17), ms.
const MAX_DELTA_T_MS: f64 = 100.0;

/// What the static threshold needs to know about the rate controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RegionHint {
    /// The FSM is in Decrease.
    pub decreasing: bool,
    /// `Ar` is considerably below the receive rate.
    pub ar_well_below_r: bool,
}

/// `γ(ti)` per [`ThresholdModel`].
#[derive(Debug, Clone)]
pub struct Threshold {
    model: ThresholdModel,
    gamma: f64,
    last_us: Option<i64>,
}

impl Threshold {
    /// A threshold at its initial value.
    pub fn new(model: ThresholdModel) -> Self {
        let gamma = match model {
            ThresholdModel::Adaptive { initial_ms, .. } => initial_ms,
            ThresholdModel::Static { gamma_ms, .. } => gamma_ms,
        };
        Threshold {
            model,
            gamma,
            last_us: None,
        }
    }

    /// Updates `γ` with `m(ti)` observed at `now_us` (arrival clock, µs); returns `γ(ti)`.
    pub fn update(&mut self, m: f64, now_us: i64, hint: RegionHint) -> f64 {
        let dt_ms = match self.last_us {
            Some(last) => (now_us.saturating_sub(last) as f64 / 1e3).clamp(0.0, MAX_DELTA_T_MS),
            None => 0.0,
        };
        self.last_us = Some(match self.last_us {
            Some(last) => last.max(now_us),
            None => now_us,
        });
        match self.model {
            ThresholdModel::Adaptive {
                k_up,
                k_down,
                min_ms,
                max_ms,
                max_adapt_offset_ms,
                ..
            } => {
                let abs_m = m.abs();
                if !abs_m.is_finite() {
                    return self.gamma;
                }
                if max_adapt_offset_ms.is_some_and(|off| abs_m - self.gamma > off) {
                    return self.gamma;
                }
                // Eq. (18).
                let k = if abs_m < self.gamma { k_down } else { k_up };
                // Eq. (17).
                let g = self.gamma + dt_ms * k * (abs_m - self.gamma);
                self.gamma = g.clamp(min_ms.min(max_ms), max_ms);
            }
            ThresholdModel::Static { gamma_ms, .. } => {
                self.gamma = if hint.decreasing || hint.ar_well_below_r {
                    gamma_ms / 2.0
                } else {
                    gamma_ms
                };
            }
        }
        self.gamma
    }

    /// `γ(ti)` in ms.
    pub fn gamma(&self) -> f64 {
        self.gamma
    }

    /// The model in use.
    pub fn model(&self) -> ThresholdModel {
        self.model
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_offset_cap() -> ThresholdModel {
        match ThresholdModel::adaptive() {
            ThresholdModel::Adaptive {
                k_up,
                k_down,
                initial_ms,
                min_ms,
                max_ms,
                ..
            } => ThresholdModel::Adaptive {
                k_up,
                k_down,
                initial_ms,
                min_ms,
                max_ms,
                max_adapt_offset_ms: None,
            },
            s => s,
        }
    }

    /// Time for `γ` to cover half the distance to a constant `|m|`, in frames of 33 ms.
    fn frames_to_halfway(start: f64, target: f64) -> usize {
        let mut t = Threshold::new(no_offset_cap());
        t.gamma = start;
        let mut now = 0;
        t.update(target, now, RegionHint::default());
        for i in 1..100_000 {
            now += 33_000;
            let g = t.update(target, now, RegionHint::default());
            if (g - start).abs() >= (target - start).abs() / 2.0 {
                return i;
            }
        }
        usize::MAX
    }

    #[test]
    fn gamma_follows_m_faster_upward_than_downward() {
        let up = frames_to_halfway(0.5, 1.0);
        let down = frames_to_halfway(1.0, 0.5);
        // ku / kd = 55: rising takes about 2 frames, falling about 116 frames.
        assert!(up <= 3, "up {up}");
        assert!(down > 50 * up, "down {down} up {up}");
    }

    #[test]
    fn spikes_beyond_the_adapt_offset_do_not_move_gamma() {
        let mut t = Threshold::new(ThresholdModel::adaptive());
        let g0 = t.gamma();
        t.update(0.0, 0, RegionHint::default());
        assert_eq!(
            t.update(5.0, 33_000, RegionHint::default()),
            g0,
            "5 ms spike skipped"
        );
        assert!(
            t.update(0.3, 66_000, RegionHint::default()) > g0,
            "0.3 ms adapts"
        );
    }

    #[test]
    fn gamma_stays_within_its_clamps() {
        let mut t = Threshold::new(no_offset_cap());
        let mut now = 0;
        for _ in 0..10_000 {
            now += 33_000;
            t.update(1e6, now, RegionHint::default());
        }
        assert_eq!(t.gamma(), 10.0);
        for _ in 0..100_000 {
            now += 100_000;
            t.update(0.0, now, RegionHint::default());
        }
        assert!((t.gamma() - 0.1).abs() < 1e-9);
    }

    #[test]
    fn static_threshold_is_halved_near_congestion() {
        let mut t = Threshold::new(ThresholdModel::static_2013());
        let full = 25.0 / 60.0;
        assert_eq!(t.update(0.1, 0, RegionHint::default()), full);
        let hint = RegionHint {
            decreasing: true,
            ar_well_below_r: false,
        };
        assert_eq!(t.update(0.1, 33_000, hint), full / 2.0);
        let hint = RegionHint {
            decreasing: false,
            ar_well_below_r: true,
        };
        assert_eq!(t.update(0.1, 66_000, hint), full / 2.0);
    }
}
