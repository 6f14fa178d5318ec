//! The one configuration a sender session is built from.

use std::net::SocketAddr;
use std::time::Duration;

pub use cg_cc::ControllerKind;
use cg_cc::scream::ScreamConfig;
use cg_media::{EncoderConfig, SourceConfig};
use cg_types::{Bitrate, Ecn};
use serde::{Deserialize, Serialize};

use crate::Error;

/// Everything a [`crate::Sender`] needs. Plain data with serde: a TOML/JSON file, the CLI
/// and netlab all build one of these.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SenderConfig {
    /// The receiver's address (`cg-recv --listen`). Default `127.0.0.1:5004` (RFC 3551's
    /// customary RTP port).
    pub peer: SocketAddr,
    /// Local address to bind. Default `None`: the unspecified address of the peer's family,
    /// port chosen by the kernel.
    pub bind: Option<SocketAddr>,
    /// The congestion controller; the receiver must be told the same (its feedback follows).
    /// Default GCC with REMB, the papers' configuration.
    pub controller: ControllerKind,
    /// ECN code point of the media packets (RTCP always goes Not-ECT): `not-ect` (also
    /// `off`, the default), `ect0` (classic ECN, RFC 3168 and RFC 6679) or `ect1` (also
    /// `l4s`: the L4S identifier, RFC 9331 §4, for SCReAM through DualPI2). CE is refused.
    pub ecn: Ecn,
    /// Picture source. Default a moving zone plate from `videotestsrc`.
    pub source: SourceConfig,
    /// Encoder by name (`vp8`, `x264`, `nvh264`, `nvh265`; cg-media's names). Default `vp8`.
    pub codec: String,
    /// Encoded width. Default 1280.
    pub width: u32,
    /// Encoded height. Default 720.
    pub height: u32,
    /// Frames per second. Default 30.
    pub frame_rate: u32,
    /// Rate the controller and the encoder start at. Default 300 kbit/s (GCC's default start,
    /// cg-cc `GccConfig`).
    pub start_bitrate: Bitrate,
    /// Lowest target the controller may choose. Default 50 kbit/s (GCC's default floor).
    pub min_bitrate: Bitrate,
    /// Highest target the controller may choose. Default 5 Mbit/s.
    pub max_bitrate: Bitrate,
    /// GCC's published variant and its threshold and filter settings over the kind's
    /// defaults (`--gcc-*`). The settings act here only send-side (`gcc`): with `gcc-remb`
    /// they belong to the receiver, and SCReAM has none; both refuse them. The variant acts
    /// with both GCC kinds (with `gcc-remb` the sender runs its loss controller, pacer and
    /// probing). Default: none.
    #[serde(default)]
    pub gcc: cg_cc::gcc::GccTuning,
    /// The published SCReAM v2 to run with `scream` (`--scream-variant`;
    /// docs/scream-variants.md). Default cg's.
    #[serde(default)]
    pub scream_variant: cg_cc::scream::ScreamVariant,
    /// A new controller target is passed to the encoder only when it differs from the last one
    /// given by at least this fraction (the session's `SenderEvent::TargetBitrate`, with
    /// [`min_bitrate`](Self::min_bitrate) as the floor and the idle rate while the circuit
    /// breaker is open). Default 0: every change, as libwebrtc does
    /// (cg-cc's `encoder_target` module doc says why).
    pub rate_change_threshold: f64,
    /// Least time between two key frames forced by requests (PLI/FIR, queue discards). A
    /// request inside this time is held and served when it ends: one key frame answers
    /// every request made before it, and a congested path is not flooded with key frames
    /// (each is several times a delta frame, so more requests would only make the queue
    /// overflow again). Default 500 ms.
    #[serde(with = "humantime_serde")]
    pub key_frame_min_interval: Duration,
    /// Media older than this in the pacer's queue is dropped (whole frames) and a key frame
    /// requested. Default `None`: 1 s for GCC, whose pacer must be able to spread a key frame
    /// (at 720p and a few hundred kbit/s several times a frame interval's worth of bytes; a
    /// shorter bound drops it, the receiver sees sequence gaps as loss, and the loss controller
    /// cuts the rate further — libwebrtc's pacer allows 2 s, `kMaxExpectedQueueLength`); and
    /// cg-rtp's 250 ms for SCReAM, whose own queue discard (100 ms) acts first.
    #[serde(with = "humantime_serde")]
    pub pacer_max_queue_delay: Option<Duration>,
    /// RTCP timeout of the RTP circuit breaker (RFC 8083 §4.1). Default 15 s (3 × Td with
    /// Tmin = 5 s); tests shorten it.
    #[serde(with = "humantime_serde")]
    pub rtcp_timeout: Duration,
    /// Feedback missing this long halves the rate, and again after each further period,
    /// down to 1/16, until feedback returns (RFC 8888 §5; see
    /// [`cg_rtp::FeedbackLossResponse`]). `None` (default): from the controller's feedback,
    /// 0.5 s for transport-wide CC and RFC 8888, 3 s for REMB; zero: never.
    #[serde(default, with = "humantime_serde")]
    pub feedback_timeout: Option<Duration>,
    /// Statistics are emitted this often. Default 100 ms.
    #[serde(with = "humantime_serde")]
    pub stats_interval: Duration,
    /// Longest distance between key frames, in frames (`None`: only on request). Default
    /// 3000 (100 s at 30 fps, libwebrtc's VP8 default): receivers ask with a PLI when they
    /// need one, and an unrequested key frame — several times a delta frame — near the
    /// capacity overflows the bottleneck queue, a loss burst and a freeze (figures:
    /// `docs/notes/2026-12-01-figures-from-docs.md`).
    pub key_frame_interval: Option<u32>,
    /// RTP media SSRC (RFC 3550 §8: should be random; the receiver must be told if it is not
    /// the default). Default 0x6367_0001 (cg-rtp's default).
    pub ssrc: u32,
    /// Resolution and frame-rate adaptation (`width`, `height` and `frame_rate` are the
    /// largest format): cg-media's [`cg_media::AdaptationConfig`], default
    /// `maintain-framerate` down to 320×180.
    pub adaptation: cg_media::AdaptationConfig,
    /// The encoder's frame dropper bound (cg-media's `EncoderConfig::frame_dropper`); default
    /// 500 ms, `None` off.
    #[serde(with = "humantime_serde")]
    pub frame_dropper: Option<Duration>,
    /// The encoder's rate-control buffer (cg-media's `EncoderConfig::rate_buffer`); default
    /// `None`, the encoder's own (VP8 300 ms, x264 500 ms).
    #[serde(with = "humantime_serde")]
    pub rate_buffer: Option<Duration>,
    /// Draw a stamp (frame number, wall-clock time) into every source picture (cg-media's
    /// `EncoderConfig::stamp`): a viewer scores picture quality and times glass to glass on
    /// it. Default false.
    pub stamp: bool,
    /// Playout-delay limits asked of the receiver with the playout-delay header extension
    /// on the first packet of every frame (a browser honours them; cg-recv always renders
    /// at once and reports what was asked). [`cg_rtp::PlayoutDelay::ZERO`]: render each
    /// frame as soon as it is decoded, what cloud-gaming senders ask, since a browser
    /// otherwise holds frames in its jitter buffer for a smooth cadence. Default `None`:
    /// nothing asked.
    pub playout_delay: Option<cg_rtp::PlayoutDelay>,
    /// Test only (feature `testing`): wedge the encoder's pipeline once, this long after the
    /// start (`cg_media::testing::wedge`: its streaming thread held inside the encoder, as a
    /// pipeline stuck in renegotiation), so an end-to-end test sees the stall noticed, the
    /// encoder rebuilt and what the viewer saw of it. Default `None`.
    #[cfg(feature = "testing")]
    #[serde(skip)]
    pub wedge_encoder_at: Option<Duration>,
}

impl Default for SenderConfig {
    fn default() -> Self {
        SenderConfig {
            peer: SocketAddr::from(([127, 0, 0, 1], 5004)),
            bind: None,
            controller: ControllerKind::default(),
            ecn: Ecn::NotEct,
            source: SourceConfig::default(),
            codec: "vp8".to_owned(),
            width: 1280,
            height: 720,
            frame_rate: 30,
            start_bitrate: Bitrate::kbps(300),
            min_bitrate: Bitrate::kbps(50),
            max_bitrate: Bitrate::mbps(5),
            gcc: cg_cc::gcc::GccTuning::default(),
            scream_variant: cg_cc::scream::ScreamVariant::Cg,
            rate_change_threshold: 0.0,
            key_frame_min_interval: Duration::from_millis(500),
            pacer_max_queue_delay: None,
            rtcp_timeout: Duration::from_secs(15),
            feedback_timeout: None,
            stats_interval: Duration::from_millis(100),
            key_frame_interval: Some(3000),
            ssrc: cg_rtp::SenderConfig::default().ssrc,
            adaptation: cg_media::AdaptationConfig::default(),
            frame_dropper: cg_media::EncoderConfig::default().frame_dropper,
            rate_buffer: None,
            stamp: false,
            playout_delay: None,
            #[cfg(feature = "testing")]
            wedge_encoder_at: None,
        }
    }
}

impl SenderConfig {
    /// Checks what a session cannot run with (before anything is opened).
    pub fn validate(&self) -> Result<(), Error> {
        if self.controller.delay_estimator_at_receiver()
            && !self.gcc.estimator_settings().is_default()
        {
            return Err(Error::Config(
                "the --gcc-* settings but --gcc-variant belong to GCC's delay-based estimator, \
                 which runs in cg-recv with --cc gcc-remb: give them to cg-recv"
                    .into(),
            ));
        }
        if self.controller != ControllerKind::Scream
            && self.scream_variant != cg_cc::scream::ScreamVariant::Cg
        {
            return Err(Error::Config(format!(
                "--scream-variant is SCReAM's; the controller is {}",
                self.controller
            )));
        }
        // The bit-rate bounds and the GCC settings, as the controller built from them checks
        // them.
        self.try_controller_config()
            .and_then(|c| c.validate())
            .map_err(|e| Error::Config(format!("controller: {e}")))?;
        if self.ecn.is_ce() {
            return Err(Error::Config(
                "ECN mode ce: media are not sent CE-marked (off, ect0 or l4s)".into(),
            ));
        }
        if !(0.0..1.0).contains(&self.rate_change_threshold) {
            return Err(Error::Config(format!(
                "rate change threshold {} outside [0, 1)",
                self.rate_change_threshold
            )));
        }
        if let Some(d) = self.pacer_max_queue_delay
            && d < Duration::from_millis(10)
        {
            return Err(Error::Config(format!(
                "pacer queue bound {d:?} is below 10 ms: every frame would be dropped"
            )));
        }
        if self.stats_interval.is_zero() || self.rtcp_timeout.is_zero() {
            return Err(Error::Config(
                "stats interval and RTCP timeout must be positive".into(),
            ));
        }
        self.encoder_config().validate()?;
        if let Some(d) = self.playout_delay {
            d.validate().map_err(|e| Error::Config(e.to_string()))?;
        }
        if self.peer.port() == 0 || self.peer.ip().is_unspecified() {
            return Err(Error::Config(format!(
                "peer address {} needs a host and a non-zero port",
                self.peer
            )));
        }
        if let Some(bind) = self.bind
            && bind.is_ipv4() != self.peer.is_ipv4()
        {
            return Err(Error::Config(format!(
                "bind address {bind} and peer {} are of different address families",
                self.peer
            )));
        }
        Ok(())
    }

    /// The pacer's queue bound for this controller (see
    /// [`SenderConfig::pacer_max_queue_delay`]).
    pub fn pacer_queue_bound(&self) -> Duration {
        self.pacer_max_queue_delay.unwrap_or(match self.controller {
            ControllerKind::Scream => cg_rtp::pacer::PacerConfig::default().max_queue_delay,
            ControllerKind::Gcc | ControllerKind::GccRemb => Duration::from_secs(1),
        })
    }

    /// The address to bind.
    pub fn bind_addr(&self) -> SocketAddr {
        self.bind.unwrap_or_else(|| match self.peer {
            SocketAddr::V4(_) => SocketAddr::from(([0, 0, 0, 0], 0)),
            SocketAddr::V6(_) => SocketAddr::from(([0u16; 8], 0)),
        })
    }

    /// The cg-media encoder configuration this session uses.
    pub fn encoder_config(&self) -> EncoderConfig {
        EncoderConfig {
            source: self.source.clone(),
            encoder: self.codec.clone(),
            width: self.width,
            height: self.height,
            frame_rate: self.frame_rate,
            start_bitrate: self.start_bitrate,
            key_frame_interval: self.key_frame_interval,
            adaptation: self.adaptation.clone(),
            frame_dropper: self.frame_dropper,
            rate_buffer: self.rate_buffer,
            stamp: self.stamp,
            ..EncoderConfig::default()
        }
    }

    /// The congestion controller's configuration ([`Self::validate`] refuses what
    /// [`Self::try_controller_config`] refuses; without it, wrong GCC settings are left out).
    pub fn controller_config(&self) -> Box<dyn cg_cc::ControllerConfig> {
        self.try_controller_config().unwrap_or_else(|_| {
            self.controller
                .config(self.start_bitrate, self.min_bitrate, self.max_bitrate)
        })
    }

    /// The congestion controller's configuration with [`Self::gcc`] applied, or why not.
    pub fn try_controller_config(
        &self,
    ) -> Result<Box<dyn cg_cc::ControllerConfig>, cg_cc::ConfigError> {
        let tuned = self.controller.tuned_config(
            self.start_bitrate,
            self.min_bitrate,
            self.max_bitrate,
            &self.gcc,
        )?;
        Ok(match self.controller {
            // SCReAM is tuned to the stream: its ECN and frame period.
            ControllerKind::Scream => Box::new(self.scream_variant.config(&ScreamConfig {
                start_bitrate: self.start_bitrate,
                min_bitrate: self.min_bitrate,
                max_bitrate: self.max_bitrate,
                ecn: self.ecn,
                frame_period: Duration::from_secs(1) / self.frame_rate.max(1),
                ..ScreamConfig::default()
            })),
            _ => tuned,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_controllers_match_their_kind_and_bounds() {
        let now = std::time::Instant::now();
        for k in ControllerKind::ALL {
            let c = SenderConfig {
                controller: k,
                ..SenderConfig::default()
            };
            let ctl = c.controller_config().build(now).unwrap();
            assert_eq!(ctl.feedback_kind(), k.feedback_kind(), "{k}");
            assert_eq!(ctl.target_bitrate(), c.start_bitrate, "{k}");
        }
    }

    #[test]
    fn ecn_modes_parse_and_ce_is_refused() {
        for (name, ecn) in [
            ("l4s", Ecn::Ect1),
            ("ECT1", Ecn::Ect1),
            ("ect0", Ecn::Ect0),
            ("off", Ecn::NotEct),
        ] {
            assert_eq!(name.parse::<Ecn>().unwrap(), ecn, "{name}");
        }
        let ce = SenderConfig {
            ecn: Ecn::Ce,
            ..SenderConfig::default()
        };
        let e = ce.validate().unwrap_err().to_string();
        assert!(e.contains("CE-marked"), "{e}");
    }

    #[test]
    fn config_round_trips_through_json_with_units() {
        let json = r#"{"peer":"10.0.0.2:6000","controller":"scream","ecn":"l4s",
            "max_bitrate":"20Mbit","stats_interval":"50ms","width":640,"height":360}"#;
        let c: SenderConfig = serde_json::from_str(json).unwrap();
        assert_eq!(c.controller, ControllerKind::Scream);
        assert_eq!(c.ecn, Ecn::Ect1);
        assert_eq!(c.max_bitrate, Bitrate::mbps(20));
        assert_eq!(c.stats_interval, Duration::from_millis(50));
        let back: SenderConfig = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(back, c);
        assert!(serde_json::from_str::<SenderConfig>(r#"{"bogus":1}"#).is_err());
    }

    #[test]
    fn inconsistent_configs_are_rejected() {
        let bad = [
            SenderConfig {
                min_bitrate: Bitrate::mbps(3),
                max_bitrate: Bitrate::mbps(2),
                ..SenderConfig::default()
            },
            SenderConfig {
                start_bitrate: Bitrate::mbps(10),
                ..SenderConfig::default()
            },
            SenderConfig {
                peer: "0.0.0.0:5004".parse().unwrap(),
                ..SenderConfig::default()
            },
            SenderConfig {
                bind: Some("[::]:0".parse().unwrap()),
                ..SenderConfig::default()
            },
            SenderConfig {
                pacer_max_queue_delay: Some(Duration::ZERO),
                ..SenderConfig::default()
            },
        ];
        for c in bad {
            assert!(c.validate().is_err(), "{c:?}");
        }
        assert!(SenderConfig::default().validate().is_ok());
    }
}
