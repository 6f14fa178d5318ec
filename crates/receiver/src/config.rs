//! The one configuration a receiver session is built from.

use std::net::SocketAddr;
use std::time::Duration;

use cg_app::Error;
use cg_cc::ControllerKind;
use cg_media::{Codec, DecoderConfig, SinkKind};
use cg_types::Bitrate;
use serde::{Deserialize, Serialize};

/// Everything a [`crate::Receiver`] needs. Plain data with serde.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReceiverConfig {
    /// Address to listen on. Default `0.0.0.0:5004`. The sender is whoever sends first; a
    /// new sender is accepted when the current one has been silent for `peer_timeout`.
    pub listen: SocketAddr,
    /// The sender's controller: decides the feedback sent (REMB from a GCC receive-side
    /// estimator, transport-wide CC, or RFC 8888). Default `gcc-remb`, as `cg-send`.
    pub controller: ControllerKind,
    /// Codec of the stream (`vp8`, `h264`, `h265`): the one offered or answered in WebRTC
    /// mode, the first expected in plain RTP. Default VP8.
    pub codec: Codec,
    /// Plain RTP: decode whichever codec the stream's payload type names, switching at its
    /// key frame (nothing negotiates the codec there). Off: frames of another codec than
    /// `codec` are not decoded and the mismatch is logged once. Default true.
    #[serde(default = "follow_codec")]
    pub follow_codec: bool,
    /// The stream comes from `cg-send --codec model` (RFC 8593 frame sizes framed as VP8, no
    /// pictures): frames are checked and counted, not decoded. Default false.
    #[serde(default)]
    pub model: bool,
    /// Nominal frame rate, for freeze detection (a freeze is a gap over 3 frame intervals).
    /// Default 30.
    pub frame_rate: u32,
    /// Where decoded pictures go. Default `fake` (decode only).
    pub sink: SinkKind,
    /// Score each decoded picture against this source (the sender draws the stamp that names
    /// the source frame: `cg-send --stamp`). Default none.
    #[serde(default)]
    pub reference: Option<cg_media::ReferenceSpec>,
    /// GCC-REMB: the receive-side estimator's start rate. Default 300 kbit/s (GCC's).
    pub start_bitrate: Bitrate,
    /// GCC-REMB: the estimator's lowest value. Default 50 kbit/s.
    pub min_bitrate: Bitrate,
    /// GCC-REMB: the estimator's highest value. Default 100 Mbit/s: the sender applies its
    /// own maximum, so the receiver does not cap what it reports.
    pub max_bitrate: Bitrate,
    /// GCC-REMB: the estimator's threshold and filter settings over the defaults
    /// (`--gcc-*`). Refused with another controller (send-side GCC runs its estimator in
    /// cg-send; SCReAM has none). Default: none.
    #[serde(default)]
    pub gcc: cg_cc::gcc::GccTuning,
    /// A sender silent this long is forgotten; the next datagram from anyone starts a new
    /// session. Default 3 s.
    #[serde(with = "humantime_serde")]
    pub peer_timeout: Duration,
    /// Statistics are emitted this often. Default 100 ms.
    #[serde(with = "humantime_serde")]
    pub stats_interval: Duration,
    /// The sender's media SSRC (its RTX SSRC is the next number). Default 0x6367_0001, as
    /// `cg-send`.
    pub media_ssrc: u32,
    /// WebRTC mode: view the stream of this WHEP endpoint (e.g. `cg-send --webrtc whep`'s
    /// `http://HOST:8080/whep`) instead of waiting for plain RTP. `listen` is then the local
    /// media socket and its ICE host candidate, so it must be a concrete address of this host
    /// (port 0 lets the kernel choose). Payload types, extensions and SSRCs come from the
    /// negotiation. Default `None`.
    pub whep_url: Option<String>,
    /// WebRTC mode: serve WHIP at this HTTP address (`POST /whip`, the publisher page at `/`)
    /// and receive one publisher at a time — a browser's camera, say. `listen` is the media
    /// socket and its ICE host candidate, so it must be a concrete address. Default `None`.
    pub whip_http: Option<SocketAddr>,
    /// With `whip_http`: where the publisher page's `getStats()` reports go, one JSON line
    /// each (the page posts them with `?report=1`). Default `None`.
    pub publisher_reports: Option<std::path::PathBuf>,
}

impl Default for ReceiverConfig {
    fn default() -> Self {
        ReceiverConfig {
            listen: SocketAddr::from(([0, 0, 0, 0], 5004)),
            controller: ControllerKind::default(),
            codec: Codec::Vp8,
            follow_codec: true,
            model: false,
            reference: None,
            frame_rate: 30,
            sink: SinkKind::Fake,
            start_bitrate: Bitrate::kbps(300),
            min_bitrate: Bitrate::kbps(50),
            max_bitrate: Bitrate::mbps(100),
            gcc: cg_cc::gcc::GccTuning::default(),
            peer_timeout: Duration::from_secs(3),
            stats_interval: Duration::from_millis(100),
            media_ssrc: cg_rtp::ReceiverConfig::default().media_ssrc,
            whep_url: None,
            whip_http: None,
            publisher_reports: None,
        }
    }
}

impl ReceiverConfig {
    /// Checks what a session cannot run with.
    pub fn validate(&self) -> Result<(), Error> {
        if self.min_bitrate > self.max_bitrate
            || self.start_bitrate < self.min_bitrate
            || self.start_bitrate > self.max_bitrate
        {
            return Err(Error::Config(format!(
                "bit rates must satisfy min {} <= start {} <= max {}",
                self.min_bitrate, self.start_bitrate, self.max_bitrate
            )));
        }
        if !self.controller.delay_estimator_at_receiver() && !self.gcc.is_default() {
            return Err(Error::Config(format!(
                "the --gcc-* settings belong to GCC's delay-based estimator, which with --cc {} \
                 runs in cg-send (or does not exist): give them to cg-send",
                self.controller
            )));
        }
        self.controller
            .tuned_config(
                self.start_bitrate,
                self.min_bitrate,
                self.max_bitrate,
                &self.gcc,
            )
            .and_then(|c| c.validate())
            .map_err(|e| Error::Config(format!("controller: {e}")))?;
        if self.stats_interval.is_zero() || self.peer_timeout.is_zero() {
            return Err(Error::Config(
                "stats interval and peer timeout must be positive".into(),
            ));
        }
        if (self.whep_url.is_some() || self.whip_http.is_some())
            && self.listen.ip().is_unspecified()
        {
            return Err(Error::Config(format!(
                "WebRTC mode needs a concrete local address (the ICE host candidate), not {}",
                self.listen
            )));
        }
        if self.whep_url.is_some() && self.whip_http.is_some() {
            return Err(Error::Config(
                "a receiver is a WHEP client or a WHIP server, not both".into(),
            ));
        }
        if !(1..=240).contains(&self.frame_rate) {
            return Err(Error::Config(format!(
                "frame rate {} outside 1..=240",
                self.frame_rate
            )));
        }
        if self.model && (self.whip_http.is_some() || self.codec != Codec::Vp8) {
            return Err(Error::Config(
                "codec model: the model encoder's stream comes from cg-send over plain RTP or \
                 WHEP, framed as VP8 — not from a WHIP publisher"
                    .into(),
            ));
        }
        Ok(())
    }

    /// The cg-media decoder configuration.
    pub fn decoder_config(&self) -> DecoderConfig {
        DecoderConfig {
            codec: self.codec,
            follow_stream: self.follow_codec && !self.model,
            frame_rate: self.frame_rate,
            sink: self.sink,
            model: self.model,
            reference: self.reference,
            ..DecoderConfig::default()
        }
    }

    /// The controller's configuration within this receiver's bounds: the feedback it wants
    /// and its receive-side estimator, if it has one, with [`Self::gcc`] applied
    /// ([`Self::validate`] refuses wrong GCC settings; unchecked, they are left out).
    pub fn controller_config(&self) -> Box<dyn cg_cc::ControllerConfig> {
        let (start, min, max) = (self.start_bitrate, self.min_bitrate, self.max_bitrate);
        self.controller
            .tuned_config(start, min, max, &self.gcc)
            .unwrap_or_else(|_| self.controller.config(start, min, max))
    }

    /// The cg-rtp receiver configuration (the feedback the controller wants).
    pub fn rtp_config(&self) -> cg_rtp::ReceiverConfig {
        cg_rtp::ReceiverConfig {
            media_ssrc: self.media_ssrc,
            rtx_ssrc: self.media_ssrc.wrapping_add(1),
            feedback: cg_rtp::FeedbackConfig::for_kind(self.controller_config().feedback_kind()),
            ntp_at_start: cg_app::ntp_now(),
            ..cg_rtp::ReceiverConfig::default()
        }
    }
}

fn follow_codec() -> bool {
    true
}

/// What cg-recv's `--codec` says of the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamCodec {
    /// `auto`: whichever codec the stream carries (VP8 where a codec must be offered).
    Auto,
    /// This codec only.
    Fixed(Codec),
    /// `model`: the model encoder's frames (RFC 8593 sizes framed as VP8, no pictures).
    Model,
}

impl StreamCodec {
    /// Sets `config`'s codec, whether it follows the stream, and the model flag.
    pub fn apply_to(self, config: &mut ReceiverConfig) {
        (config.codec, config.follow_codec, config.model) = match self {
            StreamCodec::Auto => (Codec::Vp8, true, false),
            StreamCodec::Fixed(c) => (c, false, false),
            StreamCodec::Model => (Codec::Vp8, false, true),
        };
    }
}

/// Parses a `--codec` value: `auto`, a codec name, or `model`.
pub fn parse_stream_codec(name: &str) -> Result<StreamCodec, Error> {
    match name.trim().to_ascii_lowercase().as_str() {
        "model" => return Ok(StreamCodec::Model),
        "auto" => return Ok(StreamCodec::Auto),
        _ => {}
    }
    parse_codec(name).map(StreamCodec::Fixed).map_err(|_| {
        Error::Config(format!(
            "unknown codec {name:?}; expected auto, vp8, h264, h265, model"
        ))
    })
}

/// Parses a codec name (`vp8`, `h264`/`x264`/`nvh264`, `h265`/`nvh265`).
pub fn parse_codec(name: &str) -> Result<Codec, Error> {
    match name.trim().to_ascii_lowercase().as_str() {
        "vp8" => Ok(Codec::Vp8),
        "h264" | "x264" | "nvh264" | "avc" => Ok(Codec::H264),
        "h265" | "nvh265" | "hevc" => Ok(Codec::H265),
        other => Err(Error::Config(format!(
            "unknown codec {other:?}; expected vp8, h264, h265"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feedback_follows_the_controller() {
        for k in ControllerKind::ALL {
            let c = ReceiverConfig {
                controller: k,
                ..ReceiverConfig::default()
            };
            assert_eq!(c.rtp_config().feedback.kind, k.feedback_kind());
        }
    }

    #[test]
    fn codec_names_parse_and_unknown_ones_are_errors() {
        assert_eq!(parse_codec("VP8").unwrap(), Codec::Vp8);
        assert_eq!(parse_codec("x264").unwrap(), Codec::H264);
        assert_eq!(parse_codec("hevc").unwrap(), Codec::H265);
        assert!(parse_codec("av1").is_err());
        assert_eq!(parse_stream_codec("Model").unwrap(), StreamCodec::Model);
        assert_eq!(parse_stream_codec("auto").unwrap(), StreamCodec::Auto);
        assert_eq!(
            parse_stream_codec("h264").unwrap(),
            StreamCodec::Fixed(Codec::H264)
        );
        let e = parse_stream_codec("av1").unwrap_err().to_string();
        assert!(e.contains("model"), "{e}");
    }

    #[test]
    fn config_round_trips_and_bad_rates_are_rejected() {
        let c: ReceiverConfig =
            serde_json::from_str(r#"{"listen":"[::]:7000","controller":"gcc","codec":"h264"}"#)
                .unwrap();
        assert_eq!(c.controller, ControllerKind::Gcc);
        assert_eq!(c.codec, Codec::H264);
        assert!(c.validate().is_ok());
        let bad = ReceiverConfig {
            min_bitrate: Bitrate::mbps(200),
            ..ReceiverConfig::default()
        };
        assert!(bad.validate().is_err());
    }
}
