//! Encoder elements by name, their low-latency settings, and the one place where a
//! [`Bitrate`] becomes an element property.

use std::time::Duration;

use cg_types::Bitrate;
use gstreamer as gst;
use gstreamer::prelude::*;

use crate::{Codec, EncoderConfig, Error, MediaCodec, props};

/// An encoder cg-media can drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EncoderKind {
    /// libvpx VP8 (`vp8enc`, gst-plugins-good).
    Vp8,
    /// x264 H.264 (`x264enc`, gst-plugins-ugly).
    X264,
    /// NVIDIA NVENC H.264 (`nvh264enc`, gst-plugins-bad nvcodec).
    NvH264,
    /// NVIDIA NVENC H.265 (`nvh265enc`, gst-plugins-bad nvcodec).
    NvH265,
    /// The model encoder: frames whose sizes follow RFC 8593's video model, no pictures, no
    /// GStreamer element (see `model.rs`). For rates this machine cannot encode.
    Model,
}

/// VP8's default rate-control buffer (`EncoderConfig::rate_buffer`), in ms.
const VP8_RATE_BUFFER_MS: u128 = 300;

impl EncoderKind {
    /// Every encoder cg-media knows, in the order they are listed to users.
    pub const ALL: [EncoderKind; 5] = [
        EncoderKind::Vp8,
        EncoderKind::X264,
        EncoderKind::NvH264,
        EncoderKind::NvH265,
        EncoderKind::Model,
    ];

    /// Parses a configuration name: the short name (`vp8`, `x264`, `nvh264`, `nvh265`) or the
    /// element name (`vp8enc`, …), case-insensitive. An unknown name is an
    /// [`Error::UnknownEncoder`] listing the encoders usable on this machine.
    pub fn from_name(name: &str) -> Result<Self, Error> {
        let lower = name.trim().to_ascii_lowercase();
        Self::ALL
            .into_iter()
            .find(|k| lower == k.short_name() || lower == k.element_name())
            .ok_or_else(|| Error::UnknownEncoder {
                name: name.to_owned(),
                available: Self::available()
                    .iter()
                    .map(|k| k.short_name().to_owned())
                    .collect(),
            })
    }

    /// The encoders usable here: the model, and those whose GStreamer element is installed
    /// (NVENC ones additionally need to open on a GPU: see [`EncoderKind::check_available`]).
    pub fn available() -> Vec<EncoderKind> {
        let gst_ok = gst::init().is_ok();
        Self::ALL
            .into_iter()
            .filter(|k| {
                *k == EncoderKind::Model
                    || (gst_ok && gst::ElementFactory::find(k.element_name()).is_some())
            })
            .collect()
    }

    /// Short configuration name.
    pub fn short_name(self) -> &'static str {
        match self {
            EncoderKind::Vp8 => "vp8",
            EncoderKind::X264 => "x264",
            EncoderKind::NvH264 => "nvh264",
            EncoderKind::NvH265 => "nvh265",
            EncoderKind::Model => "model",
        }
    }

    /// GStreamer element factory name (the model has none: its short name).
    pub fn element_name(self) -> &'static str {
        match self {
            EncoderKind::Vp8 => "vp8enc",
            EncoderKind::X264 => "x264enc",
            EncoderKind::NvH264 => "nvh264enc",
            EncoderKind::NvH265 => "nvh265enc",
            EncoderKind::Model => "model",
        }
    }

    /// The codec this encoder produces (the model's frames travel framed as VP8).
    pub fn codec(self) -> Codec {
        match self {
            EncoderKind::Vp8 | EncoderKind::Model => Codec::Vp8,
            EncoderKind::X264 | EncoderKind::NvH264 => Codec::H264,
            EncoderKind::NvH265 => Codec::H265,
        }
    }

    fn is_nvenc(self) -> bool {
        matches!(self, EncoderKind::NvH264 | EncoderKind::NvH265)
    }

    fn plugin(self) -> &'static str {
        match self {
            EncoderKind::Vp8 => "gstreamer1.0-plugins-good (vpx)",
            EncoderKind::X264 => "gstreamer1.0-plugins-ugly (x264)",
            EncoderKind::NvH264 | EncoderKind::NvH265 => "gstreamer1.0-plugins-bad (nvcodec)",
            EncoderKind::Model => "cg-media (built in)",
        }
    }

    /// Checks that the element exists and, for NVENC, that it can actually encode a frame
    /// (the nvcodec plugin registers its encoders only when CUDA and an NVENC-capable GPU are
    /// found, and an element that exists can still fail to open a session).
    pub fn check_available(self) -> Result<(), Error> {
        if self == EncoderKind::Model {
            return Ok(());
        }
        crate::init()?;
        if gst::ElementFactory::find(self.element_name()).is_none() {
            let reason = if self.is_nvenc() {
                format!(
                    "no GStreamer element {} on this machine: the nvcodec plugin ({}) registers \
                     NVENC encoders only when the NVIDIA driver (libcuda, libnvidia-encode) and an \
                     NVENC-capable NVIDIA GPU are present",
                    self.element_name(),
                    self.plugin()
                )
            } else {
                format!(
                    "no GStreamer element {}: install {}",
                    self.element_name(),
                    self.plugin()
                )
            };
            return Err(Error::EncoderNotAvailable {
                encoder: self.element_name(),
                reason,
            });
        }
        if self.is_nvenc() {
            self.probe_open()?;
        }
        Ok(())
    }

    /// Encodes two tiny frames to see that the hardware encoder opens.
    fn probe_open(self) -> Result<(), Error> {
        let desc = format!(
            "videotestsrc num-buffers=2 ! video/x-raw,width=320,height=240,framerate=30/1 ! {} ! fakesink",
            self.element_name()
        );
        let not_available = |reason: String| Error::EncoderNotAvailable {
            encoder: self.element_name(),
            reason: format!(
                "{} exists but cannot encode here: {reason}",
                self.element_name()
            ),
        };
        let pipeline = gst::parse::launch(&desc).map_err(|e| not_available(e.to_string()))?;
        let result = (|| {
            pipeline
                .set_state(gst::State::Playing)
                .map_err(|e| not_available(e.to_string()))?;
            let bus = pipeline
                .bus()
                .ok_or_else(|| not_available("no bus".to_owned()))?;
            let timeout = gst::ClockTime::from_nseconds(NVENC_PROBE_TIMEOUT.as_nanos() as u64);
            match bus.timed_pop_filtered(timeout, &[gst::MessageType::Eos, gst::MessageType::Error])
            {
                Some(msg) => match msg.view() {
                    gst::MessageView::Eos(_) => Ok(()),
                    gst::MessageView::Error(e) => Err(not_available(e.error().to_string())),
                    _ => Err(not_available("unexpected message".to_owned())),
                },
                None => Err(not_available("no output within 5 s".to_owned())),
            }
        })();
        let _ = pipeline.set_state(gst::State::Null);
        result
    }

    /// Creates the element with its low-latency settings and the start bit rate.
    pub(crate) fn make(self, config: &EncoderConfig) -> Result<gst::Element, Error> {
        if self == EncoderKind::Model {
            return Err(Error::EncoderNotAvailable {
                encoder: "model",
                reason: "the model encoder has no GStreamer element".to_owned(),
            });
        }
        self.check_available()?;
        let element = props::make(self.element_name(), self.plugin())?;
        let threads = config.threads.clamp(1, 64);
        let gop = config.key_frame_interval;
        let e = &element;
        match self {
            EncoderKind::Vp8 => {
                // The settings of libwebrtc's VP8 wrapper: realtime deadline, a fixed speed
                // (`cpu-used` −6 by default; see EncoderConfig::vp8_cpu_used for why not the
                // automatic one), CBR with a client buffer at libwebrtc's ratios (0.5 initial,
                // 0.6 optimal) but 300 ms long, not 1 s (EncoderConfig::rate_buffer says
                // why), no look-ahead, error resilient, two token partitions so a decoder
                // can use two threads. No frame dropping (`dropframe-threshold` 0, unlike
                // libwebrtc): measured at 1280x720 with the moving zone plate at 0.3 Mbit/s, a
                // threshold of 30 met the rate only by skipping 54 frames in 10 s, 30 of
                // them in a row (a 1 s freeze) after a key frame.
                props::set(e, "deadline", 1i64)?;
                props::set_str(e, "end-usage", "cbr")?;
                props::set_str(e, "error-resilient", "default")?;
                props::set(e, "lag-in-frames", 0i32)?;
                props::set(e, "cpu-used", config.vp8_cpu_used)?;
                props::set(e, "threads", threads as i32)?;
                props::set_str(e, "token-partitions", if threads > 1 { "2" } else { "1" })?;
                let buffer = config
                    .rate_buffer
                    .map_or(VP8_RATE_BUFFER_MS, |d| d.as_millis())
                    as i32;
                props::set(e, "buffer-size", buffer)?;
                props::set(e, "buffer-initial-size", buffer / 2)?;
                props::set(e, "buffer-optimal-size", buffer * 6 / 10)?;
                props::set(e, "undershoot", 100i32)?;
                props::set(e, "overshoot", 15i32)?;
                // libwebrtc caps the quantizer at 56; 63 lets CBR reach low targets on hard
                // content (a moving zone plate at 500 kbit/s, 640x360) instead of overshooting.
                props::set(e, "min-quantizer", 2i32)?;
                props::set(e, "max-quantizer", 63i32)?;
                match gop {
                    Some(n) => {
                        props::set(e, "keyframe-max-dist", i32::try_from(n).unwrap_or(i32::MAX))?
                    }
                    None => props::set_str(e, "keyframe-mode", "disabled")?,
                }
            }
            EncoderKind::X264 => {
                props::set_str(e, "tune", "zerolatency")?;
                props::set_str(e, "speed-preset", &config.x264_preset)?;
                props::set_str(e, "pass", "cbr")?;
                props::set(e, "bframes", 0u32)?;
                props::set(e, "b-adapt", false)?;
                props::set(e, "threads", threads)?;
                let buffer = config.rate_buffer.map_or(500, |d| d.as_millis()) as u32;
                props::set(e, "vbv-buf-capacity", buffer)?;
                props::set(
                    e,
                    "key-int-max",
                    gop.unwrap_or(i32::MAX as u32).min(i32::MAX as u32),
                )?;
            }
            // Refused above: no element.
            EncoderKind::Model => {}
            EncoderKind::NvH264 | EncoderKind::NvH265 => {
                props::set_str(e, "preset", "low-latency-hq")?;
                props::set_str(e, "rc-mode", "cbr")?;
                props::set(e, "zerolatency", true)?;
                props::set(e, "bframes", 0u32)?;
                props::set(
                    e,
                    "gop-size",
                    gop.map_or(-1, |n| i32::try_from(n).unwrap_or(-1)),
                )?;
            }
        }
        self.set_bitrate(&element, config.start_bitrate)?;
        Ok(element)
    }

    /// Sets the target bit rate on a running encoder element. **The only place where a
    /// [`Bitrate`] is converted to an encoder's unit**: vp8enc `target-bitrate` is bit/s
    /// (gint), x264enc `bitrate` kbit/s (1…2 048 000), nvh26xenc `bitrate` kbit/s (guint), as
    /// also used by gst-plugins-rs webrtcsink. All three apply a change while playing.
    pub(crate) fn set_bitrate(
        self,
        element: &gst::Element,
        rate: Bitrate,
    ) -> Result<Bitrate, Error> {
        let kbps = |max: u64| (rate.as_bps() / 1000).clamp(1, max);
        match self {
            EncoderKind::Vp8 => {
                let bps = rate.as_bps().clamp(1_000, i32::MAX as u64);
                props::set(
                    element,
                    "target-bitrate",
                    i32::try_from(bps).unwrap_or(i32::MAX),
                )?;
                Ok(Bitrate::bps(bps))
            }
            EncoderKind::X264 => {
                let k = kbps(2_048_000);
                props::set(element, "bitrate", u32::try_from(k).unwrap_or(2_048_000))?;
                Ok(Bitrate::kbps(k))
            }
            EncoderKind::Model => Ok(rate),
            EncoderKind::NvH264 | EncoderKind::NvH265 => {
                let k = kbps(u32::MAX as u64);
                props::set(element, "bitrate", u32::try_from(k).unwrap_or(u32::MAX))?;
                Ok(Bitrate::kbps(k))
            }
        }
    }

    /// The parser placed after the encoder (adds SPS/PPS to every IDR, checks alignment).
    pub(crate) fn parser(self) -> Option<&'static str> {
        match self.codec() {
            Codec::Vp8 => None,
            Codec::H264 => Some("h264parse"),
            Codec::H265 => Some("h265parse"),
        }
    }

    /// Caps forced after the encoder (H.264 constrained baseline, as WebRTC peers expect).
    pub(crate) fn output_caps(self) -> gst::Caps {
        match self {
            EncoderKind::X264 | EncoderKind::NvH264 => gst::Caps::builder("video/x-h264")
                .field("stream-format", "byte-stream")
                .field("alignment", "au")
                .field("profile", "constrained-baseline")
                .build(),
            _ => self.codec().caps(),
        }
    }
}

/// How long the NVENC open probe of [`EncoderKind::check_available`] may take.
pub const NVENC_PROBE_TIMEOUT: Duration = Duration::from_secs(5);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_in_short_and_element_form() {
        assert_eq!(EncoderKind::from_name("vp8").unwrap(), EncoderKind::Vp8);
        assert_eq!(EncoderKind::from_name("VP8ENC").unwrap(), EncoderKind::Vp8);
        assert_eq!(
            EncoderKind::from_name("x264enc").unwrap(),
            EncoderKind::X264
        );
        assert_eq!(
            EncoderKind::from_name("nvh265").unwrap(),
            EncoderKind::NvH265
        );
    }

    #[test]
    fn unknown_name_lists_available_encoders() {
        let err = EncoderKind::from_name("av2").unwrap_err();
        match &err {
            Error::UnknownEncoder { name, available } => {
                assert_eq!(name, "av2");
                assert!(available.contains(&"vp8".to_owned()), "{available:?}");
                assert!(available.contains(&"x264".to_owned()), "{available:?}");
            }
            other => panic!("wrong error {other:?}"),
        }
        assert!(err.to_string().contains("vp8"));
    }

    #[test]
    fn bitrate_units_are_bits_for_vp8_and_kilobits_for_x264() {
        crate::init().unwrap();
        let vp8 = gst::ElementFactory::make("vp8enc").build().unwrap();
        EncoderKind::Vp8
            .set_bitrate(&vp8, Bitrate::kbps(1_500))
            .unwrap();
        assert_eq!(vp8.property::<i32>("target-bitrate"), 1_500_000);
        let x264 = gst::ElementFactory::make("x264enc").build().unwrap();
        EncoderKind::X264
            .set_bitrate(&x264, Bitrate::kbps(1_500))
            .unwrap();
        assert_eq!(x264.property::<u32>("bitrate"), 1_500);
        // Out-of-range values are clamped, never a panic inside GObject.
        EncoderKind::X264.set_bitrate(&x264, Bitrate::MAX).unwrap();
        assert_eq!(x264.property::<u32>("bitrate"), 2_048_000);
        EncoderKind::Vp8.set_bitrate(&vp8, Bitrate::MAX).unwrap();
        // vp8enc keeps whole kbit/s (libvpx's rc_target_bitrate unit).
        assert_eq!(
            vp8.property::<i32>("target-bitrate") / 1000,
            i32::MAX / 1000
        );
    }
}
