//! Which controller a session runs, by name: what both ends of a session agree on (the
//! sender runs it, the receiver sends the feedback it needs).

use cg_types::Bitrate;
use serde::{Deserialize, Serialize};

use crate::gcc::{GccConfig, GccTuning};
use crate::scream::ScreamConfig;
use crate::{ConfigError, ControllerConfig, FeedbackKind};

/// Which congestion controller runs, and with it which feedback the receiver sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ControllerKind {
    /// GCC as in the papers (MMSys16 Figure 1): the delay-based estimator runs at the
    /// receiver and answers with REMB; the sender runs the loss-based controller on RRs.
    #[default]
    GccRemb,
    /// GCC send-side (libwebrtc today): both halves at the sender over transport-wide CC
    /// feedback.
    Gcc,
    /// SCReAM v2 over RFC 8888 feedback (with ECN).
    Scream,
}

/// A controller name that is not one of [`ControllerKind::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown controller {0:?}; expected one of gcc-remb, gcc, scream")]
pub struct UnknownController(pub String);

impl ControllerKind {
    /// Every kind, in the order the CLIs list them.
    pub const ALL: [ControllerKind; 3] = [
        ControllerKind::GccRemb,
        ControllerKind::Gcc,
        ControllerKind::Scream,
    ];

    /// The CLI / config name (`gcc-remb`, `gcc`, `scream`).
    pub const fn name(self) -> &'static str {
        match self {
            ControllerKind::GccRemb => "gcc-remb",
            ControllerKind::Gcc => "gcc",
            ControllerKind::Scream => "scream",
        }
    }

    /// Parses a CLI / config name (case and surrounding blanks ignored).
    pub fn from_name(name: &str) -> Result<Self, UnknownController> {
        let lower = name.trim().to_ascii_lowercase();
        Self::ALL
            .into_iter()
            .find(|k| k.name() == lower)
            .ok_or_else(|| UnknownController(name.to_owned()))
    }

    /// The feedback the receiver must send for this controller.
    pub const fn feedback_kind(self) -> FeedbackKind {
        match self {
            ControllerKind::GccRemb => FeedbackKind::Remb,
            ControllerKind::Gcc => FeedbackKind::TransportWideCc,
            ControllerKind::Scream => FeedbackKind::Rfc8888,
        }
    }

    /// Whether GCC's delay-based estimator — the Kalman filter and the threshold, and so
    /// [`GccTuning`] — runs at the receiver (GCC-REMB); with send-side GCC it runs at the
    /// sender, and SCReAM has none.
    pub const fn delay_estimator_at_receiver(self) -> bool {
        matches!(self, ControllerKind::GccRemb)
    }

    /// The GCC configuration for this kind with the given bounds (`None` for SCReAM).
    pub fn gcc_config(self, start: Bitrate, min: Bitrate, max: Bitrate) -> Option<GccConfig> {
        let base = match self {
            ControllerKind::GccRemb => GccConfig::default(),
            ControllerKind::Gcc => GccConfig::send_side(),
            ControllerKind::Scream => return None,
        };
        Some(GccConfig {
            start_bitrate: start,
            min_bitrate: min,
            max_bitrate: max,
            ..base
        })
    }
}

impl ControllerKind {
    /// This kind's default configuration within the given bounds: all a receiver needs of the
    /// controller (its feedback, its receive-side estimator). A sender that tunes it
    /// (SCReAM's frame period and ECN) builds its own.
    pub fn config(self, start: Bitrate, min: Bitrate, max: Bitrate) -> Box<dyn ControllerConfig> {
        match self.gcc_config(start, min, max) {
            Some(gcc) => Box::new(gcc),
            None => Box::new(ScreamConfig {
                start_bitrate: start,
                min_bitrate: min,
                max_bitrate: max,
                ..ScreamConfig::default()
            }),
        }
    }
}

impl ControllerKind {
    /// As [`Self::config`], with GCC's settings changed by `tuning`. A tuning for SCReAM is
    /// refused (field `gcc`): it would do nothing.
    pub fn tuned_config(
        self,
        start: Bitrate,
        min: Bitrate,
        max: Bitrate,
        tuning: &GccTuning,
    ) -> Result<Box<dyn ControllerConfig>, ConfigError> {
        match self.gcc_config(start, min, max) {
            Some(mut gcc) => {
                tuning.apply(&mut gcc)?;
                Ok(Box::new(gcc))
            }
            None => {
                ConfigError::check(
                    tuning.is_default(),
                    "gcc",
                    tuning,
                    "no GCC settings for SCReAM",
                )?;
                Ok(self.config(start, min, max))
            }
        }
    }
}

impl std::fmt::Display for ControllerKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kinds_config_asks_for_its_feedback_and_only_remb_has_a_receive_side() {
        let now = std::time::Instant::now();
        for k in ControllerKind::ALL {
            let c = k.config(Bitrate::kbps(500), Bitrate::kbps(100), Bitrate::mbps(5));
            assert_eq!(c.feedback_kind(), k.feedback_kind(), "{k}");
            assert_eq!(
                c.build(now).unwrap().feedback_kind(),
                k.feedback_kind(),
                "{k}"
            );
            let receive_side = c.build_receive_side(now).unwrap();
            assert_eq!(receive_side.is_some(), k == ControllerKind::GccRemb, "{k}");
            // The tuning goes where the estimator is built.
            assert_eq!(
                k.delay_estimator_at_receiver(),
                receive_side.is_some(),
                "{k}"
            );
        }
    }

    #[test]
    fn kinds_pick_their_feedback_and_parse_their_names() {
        assert_eq!(ControllerKind::GccRemb.feedback_kind(), FeedbackKind::Remb);
        assert_eq!(
            ControllerKind::Gcc.feedback_kind(),
            FeedbackKind::TransportWideCc
        );
        assert_eq!(
            ControllerKind::Scream.feedback_kind(),
            FeedbackKind::Rfc8888
        );
        for k in ControllerKind::ALL {
            assert_eq!(ControllerKind::from_name(k.name()), Ok(k));
        }
        assert_eq!(
            ControllerKind::from_name(" SCReAM "),
            Ok(ControllerKind::Scream)
        );
        let e = ControllerKind::from_name("bbr").unwrap_err();
        assert!(e.to_string().contains("\"bbr\""), "{e}");
    }
}
