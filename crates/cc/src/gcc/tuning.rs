//! The GCC settings a user changes from the command line — the published variant to start
//! from ([`GccVariant`]), the over-use threshold model and
//! its gains (MMSys16 §4.2, eq. 17–18, Figs. 8–11), and the arrival-time filter's `Q`
//! (eq. 15, Fig. 7), whether arrival bursts merge into one group — over a kind's defaults.
//! cg-send and cg-recv take them as `--gcc-*` options (in REMB mode the threshold and the
//! filter run at the receiver, so give them to cg-recv; send-side, to cg-send), and netlab's
//! simulator from a flow's `send_args`.

use serde::{Deserialize, Serialize};

use super::config::{GccConfig, ThresholdModel};
use super::variant::GccVariant;
use crate::controller::ConfigError;

/// The threshold model, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ThresholdChoice {
    /// MMSys16's adaptive threshold (eq. 17–18), the default.
    Adaptive,
    /// The 2013 paper's static `γ̄` (MMSys16 Figs. 9(a) and 11(a)).
    Static,
}

impl std::str::FromStr for ThresholdChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "adaptive" => Ok(ThresholdChoice::Adaptive),
            "static" => Ok(ThresholdChoice::Static),
            other => Err(format!("`{other}`: expected adaptive or static")),
        }
    }
}

/// `on` / `off` (also `true` / `false`) as a switch, for the `--gcc-*` switches.
pub fn parse_on_off(s: &str) -> Result<bool, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "on" | "true" => Ok(true),
        "off" | "false" => Ok(false),
        other => Err(format!("`{other}`: expected on or off")),
    }
}

/// Changes to a [`GccConfig`]; `None` keeps the kind's default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GccTuning {
    /// The published GCC to start from ([`GccVariant`]), before the settings below; default
    /// cg's. In REMB mode both ends run part of it: give it to both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<GccVariant>,
    /// The threshold model.
    pub threshold: Option<ThresholdChoice>,
    /// `ku` of the adaptive threshold (eq. 18, per ms; default 0.01).
    pub k_up: Option<f64>,
    /// `kd` of the adaptive threshold (eq. 18, per ms; default 0.00018).
    pub k_down: Option<f64>,
    /// `γ̄` of the static threshold in ms (default 25/60 ms, the 2013 paper's).
    pub static_gamma_ms: Option<f64>,
    /// `Q` of the scalar Kalman filter (eq. 15, ms²; default 1e-3).
    pub kalman_q: Option<f64>,
    /// The arrival-time filter and detector (`kalman`, MMSys16's; `two-state`; `trendline`,
    /// libwebrtc's send-side one).
    pub filter: Option<super::config::ArrivalFilterModel>,
    /// Whether arrival bursts join the group being built ([`super::config::ArrivalBurst`],
    /// libwebrtc's constants); default off, grouping as MMSys16 §3.3 does.
    pub arrival_burst: Option<bool>,
    /// [`GccConfig::push_back_memory`] (`Some(None)`: for good); default unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_back_memory: Option<Option<std::time::Duration>>,
}

impl GccTuning {
    /// Whether nothing is changed.
    pub fn is_default(&self) -> bool {
        *self == GccTuning::default()
    }

    /// The settings of the delay-based estimator alone: everything but the variant, which
    /// in REMB mode both ends run part of.
    pub fn estimator_settings(&self) -> GccTuning {
        GccTuning {
            variant: None,
            ..*self
        }
    }

    /// Applies the changes to `c` and checks the result ([`GccConfig::validate`]). Gains of
    /// the other threshold model are refused (`k_up` with a static threshold, `γ̄` with the
    /// adaptive one): they would silently do nothing.
    pub fn apply(&self, c: &mut GccConfig) -> Result<(), ConfigError> {
        if let Some(v) = self.variant {
            *c = v.config(c);
        }
        // A model chosen replaces the config's only when it is the other one.
        match (self.threshold, &c.threshold) {
            (Some(ThresholdChoice::Static), ThresholdModel::Adaptive { .. }) => {
                c.threshold = ThresholdModel::static_2013();
            }
            (Some(ThresholdChoice::Adaptive), ThresholdModel::Static { .. }) => {
                c.threshold = ThresholdModel::adaptive();
            }
            _ => {}
        }
        match &mut c.threshold {
            ThresholdModel::Adaptive { k_up, k_down, .. } => {
                ConfigError::check(
                    self.static_gamma_ms.is_none(),
                    "static_gamma_ms",
                    self.static_gamma_ms,
                    "unset with the adaptive threshold (it is the static one's)",
                )?;
                for (field, v) in [("k_up", self.k_up), ("k_down", self.k_down)] {
                    if let Some(v) = v {
                        ConfigError::positive(field, v)?;
                    }
                }
                *k_up = self.k_up.unwrap_or(*k_up);
                *k_down = self.k_down.unwrap_or(*k_down);
            }
            ThresholdModel::Static { gamma_ms, .. } => {
                ConfigError::check(
                    self.k_up.is_none() && self.k_down.is_none(),
                    "k_up",
                    (self.k_up, self.k_down),
                    "unset with the static threshold (ku and kd are the adaptive one's)",
                )?;
                if let Some(g) = self.static_gamma_ms {
                    ConfigError::positive("static_gamma_ms", g)?;
                    *gamma_ms = g;
                }
            }
        }
        if let Some(q) = self.kalman_q {
            c.kalman_q = q;
        }
        if let Some(f) = self.filter {
            c.filter = f;
        }
        if let Some(m) = self.push_back_memory {
            c.push_back_memory = m;
        }
        match self.arrival_burst {
            Some(false) => c.arrival_burst = None,
            Some(true) => {
                c.arrival_burst = c
                    .arrival_burst
                    .or(Some(super::config::ArrivalBurst::LIBWEBRTC));
            }
            None => {}
        }
        c.validate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tuning_changes_only_what_it_names_and_refuses_what_would_do_nothing() {
        let mut c = GccConfig::default();
        GccTuning::default().apply(&mut c).unwrap();
        assert_eq!(c, GccConfig::default(), "no change");

        let t = GccTuning {
            k_up: Some(0.1),
            kalman_q: Some(0.1),
            ..GccTuning::default()
        };
        t.apply(&mut c).unwrap();
        let ThresholdModel::Adaptive { k_up, k_down, .. } = c.threshold else {
            panic!("still adaptive");
        };
        assert_eq!((k_up, k_down, c.kalman_q), (0.1, 0.000_18, 0.1));
        for (on, want) in [
            (true, Some(super::super::config::ArrivalBurst::LIBWEBRTC)),
            (false, None),
        ] {
            let t = GccTuning {
                arrival_burst: Some(on),
                ..GccTuning::default()
            };
            t.apply(&mut c).unwrap();
            assert_eq!(c.arrival_burst, want);
        }

        let mut c = GccConfig::send_side();
        let t = GccTuning {
            threshold: Some(ThresholdChoice::Static),
            static_gamma_ms: Some(0.5),
            ..GccTuning::default()
        };
        t.apply(&mut c).unwrap();
        assert!(matches!(c.threshold, ThresholdModel::Static { gamma_ms, .. } if gamma_ms == 0.5));

        let field = |t: GccTuning| t.apply(&mut GccConfig::default()).map_err(|e| e.field);
        let static_ = Some(ThresholdChoice::Static);
        assert_eq!(
            field(GccTuning {
                threshold: static_,
                k_up: Some(0.1),
                ..GccTuning::default()
            }),
            Err("k_up")
        );
        assert_eq!(
            field(GccTuning {
                static_gamma_ms: Some(0.5),
                ..GccTuning::default()
            }),
            Err("static_gamma_ms")
        );
        assert_eq!(
            field(GccTuning {
                k_down: Some(f64::NAN),
                ..GccTuning::default()
            }),
            Err("k_down")
        );
        assert_eq!(
            field(GccTuning {
                k_up: Some(-1.0),
                ..GccTuning::default()
            }),
            Err("k_up")
        );
        assert_eq!(
            field(GccTuning {
                kalman_q: Some(0.0),
                ..GccTuning::default()
            }),
            Err("kalman_q")
        );
        assert_eq!(
            field(GccTuning {
                threshold: static_,
                static_gamma_ms: Some(f64::INFINITY),
                ..GccTuning::default()
            }),
            Err("static_gamma_ms")
        );
        // A variant first, the settings over it: MMSys16 with the static threshold (its
        // Fig. 11 (a)).
        let mut c = GccConfig::default();
        GccTuning {
            variant: Some(GccVariant::Mmsys16),
            threshold: static_,
            ..GccTuning::default()
        }
        .apply(&mut c)
        .unwrap();
        assert!(!c.probing && matches!(c.threshold, ThresholdModel::Static { .. }));
        assert_eq!(
            GccTuning {
                variant: Some(GccVariant::Gcc2013),
                ..GccTuning::default()
            }
            .estimator_settings(),
            GccTuning::default()
        );
        assert_eq!("Static".parse(), Ok(ThresholdChoice::Static));
        assert!("fixed".parse::<ThresholdChoice>().is_err());
    }
}
