//! The policy between a controller's target bit rate and the encoder.
//!
//! The encoder is given the controller's target, raised to a floor, whenever it changes — or,
//! with a threshold, only when it has moved by at least that fraction since the last one given
//! (for an encoder whose reconfiguration is costly). One policy for every user: cg-rtp's sender
//! session raises its `TargetBitrate` event from it and the simulator's encoder follows it, so
//! a simulation runs what ships.
//!
//! The default threshold is zero, as in libwebrtc, whose encoders get every new allocation
//! (`VideoStreamEncoder::OnBitrateUpdated` → `SetRates`; libvpx and x264 take a new rate
//! without restarting). cg used 3 % until the simulations ran the same policy: GCC climbs
//! additively (about 32 kbit/s a second), so a 3 % step at 2 Mbit/s holds the encoder back
//! for up to two seconds, and every camera scenario of `tests/gcc_camera.rs` lost a little
//! utilisation to it (figures: `docs/notes/2026-12-01-figures-from-docs.md`).

use cg_types::Bitrate;

use crate::ConfigError;

/// How a controller's target reaches the encoder.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EncoderTargetConfig {
    /// The lowest rate the encoder is given: the floor under a rate the transport reduced
    /// below the controller's minimum (feedback lost), and the idle rate while media is
    /// paused (the RTP circuit breaker). Default zero.
    pub min: Bitrate,
    /// The relative change, `|new − last| / last`, that reaches the encoder. Default 0:
    /// every change (see the module docs for why).
    pub threshold: f64,
}

impl Default for EncoderTargetConfig {
    fn default() -> Self {
        Self {
            min: Bitrate::ZERO,
            threshold: 0.0,
        }
    }
}

impl EncoderTargetConfig {
    /// `threshold` within `[0, 1)`.
    pub fn validate(&self) -> Result<(), ConfigError> {
        ConfigError::check(
            self.threshold.is_finite() && (0.0..1.0).contains(&self.threshold),
            "threshold",
            self.threshold,
            "within [0, 1)",
        )
    }

    /// The policy for an encoder started at `initial` (clamped to the minimum).
    pub fn start(&self, initial: Bitrate) -> EncoderTarget {
        EncoderTarget {
            config: *self,
            announced: initial.max(self.min),
        }
    }
}

/// The rate last given to the encoder, and whether a new target is to be given.
#[derive(Debug, Clone)]
pub struct EncoderTarget {
    config: EncoderTargetConfig,
    announced: Bitrate,
}

impl EncoderTarget {
    /// The rate the encoder should now be given, if `target` (clamped to the minimum) moved
    /// past the threshold from the last one; it becomes the last one.
    pub fn update(&mut self, target: Bitrate) -> Option<Bitrate> {
        let want = target.max(self.config.min);
        let old = self.announced.as_bps_f64();
        let change = (want.as_bps_f64() - old).abs() / old.max(1.0);
        if want == self.announced || change < self.config.threshold {
            return None;
        }
        self.announced = want;
        Some(want)
    }

    /// The rate last given to the encoder.
    pub fn announced(&self) -> Bitrate {
        self.announced
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_threshold() -> EncoderTarget {
        EncoderTargetConfig {
            min: Bitrate::kbps(100),
            threshold: 0.03,
        }
        .start(Bitrate::kbps(1000))
    }

    #[test]
    fn by_default_every_change_reaches_the_encoder() {
        let mut p = EncoderTargetConfig::default().start(Bitrate::kbps(1000));
        assert_eq!(p.update(Bitrate::kbps(1001)), Some(Bitrate::kbps(1001)));
        assert_eq!(p.update(Bitrate::kbps(1001)), None);
        assert_eq!(p.update(Bitrate::ZERO), Some(Bitrate::ZERO));
    }

    #[test]
    fn a_change_below_the_threshold_stays_with_the_controller() {
        let mut p = with_threshold();
        assert_eq!(p.update(Bitrate::kbps(1029)), None);
        assert_eq!(p.update(Bitrate::kbps(972)), None);
        assert_eq!(p.announced(), Bitrate::kbps(1000));
    }

    #[test]
    fn a_change_at_the_threshold_reaches_the_encoder_and_becomes_the_reference() {
        let mut p = with_threshold();
        assert_eq!(p.update(Bitrate::kbps(1030)), Some(Bitrate::kbps(1030)));
        // Measured from the new reference: 1060 is +2.9 % of 1030.
        assert_eq!(p.update(Bitrate::kbps(1060)), None);
        assert_eq!(p.update(Bitrate::kbps(900)), Some(Bitrate::kbps(900)));
    }

    #[test]
    fn a_rate_below_the_minimum_is_given_as_the_minimum_once() {
        let mut p = with_threshold();
        assert_eq!(p.update(Bitrate::ZERO), Some(Bitrate::kbps(100)));
        assert_eq!(p.update(Bitrate::kbps(20)), None);
        assert_eq!(p.announced(), Bitrate::kbps(100));
    }

    #[test]
    fn a_threshold_outside_zero_to_one_is_refused() {
        for t in [-0.1, 1.0, f64::NAN] {
            let c = EncoderTargetConfig {
                threshold: t,
                ..EncoderTargetConfig::default()
            };
            assert_eq!(c.validate().unwrap_err().field, "threshold", "{t}");
        }
        assert!(EncoderTargetConfig::default().validate().is_ok());
    }
}
