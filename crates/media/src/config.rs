//! Plain configuration structs for the sender and receiver pipelines.

use std::path::PathBuf;
use std::time::Duration;

use cg_types::Bitrate;
use serde::{Deserialize, Serialize};

use crate::Codec;

/// Where the raw frames come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum SourceConfig {
    /// GStreamer's `videotestsrc`, live (paced by the pipeline clock).
    TestPattern {
        /// Which picture; default [`TestPattern::MovingZonePlate`].
        #[serde(default)]
        pattern: TestPattern,
    },
    /// A raw I420 or Y4M file, paced at its own frame rate and scaled / rate-converted to the
    /// encoder's format (the way the GCC and SCReAM papers loop *Four People* or *Foreman*).
    File {
        /// The file.
        path: PathBuf,
        /// Its layout.
        format: FileFormat,
        /// Start again from the first frame at the end (default true).
        #[serde(default = "yes")]
        looping: bool,
    },
    /// Screen capture through `ximagesrc` (needs an X display).
    Screen {
        /// X display name (`":0"`); default: `$DISPLAY`.
        #[serde(default)]
        display: Option<String>,
    },
    /// A V4L2 camera through `v4l2src`.
    Camera {
        /// Device node; default `/dev/video0`.
        #[serde(default = "default_camera")]
        device: PathBuf,
    },
}

fn yes() -> bool {
    true
}

fn default_camera() -> PathBuf {
    PathBuf::from("/dev/video0")
}

impl Default for SourceConfig {
    fn default() -> Self {
        SourceConfig::TestPattern {
            pattern: TestPattern::default(),
        }
    }
}

/// `videotestsrc` pictures. The moving ones make the produced bit rate depend on content
/// and let a CBR encoder reach several Mbit/s; measured with vp8enc at 4 Mbit/s target:
/// zone plate 3.6 Mbit/s, scrolling SMPTE 3.4–3.7 Mbit/s, ball 0.1–0.15 Mbit/s (at both
/// 640×360 and 1280×720).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TestPattern {
    /// A zone plate whose rings move every frame (`pattern=zone-plate kx2=20 ky2=20 kt=1`):
    /// fine detail everywhere and no motion a predictor can follow. Costs about 10 ms of CPU
    /// per 720p frame to draw.
    #[default]
    MovingZonePlate,
    /// SMPTE bars scrolling 3 pixels a frame: cheap to draw (about 2 ms per 720p frame),
    /// but vp8enc cannot code it below about 0.7 Mbit/s at 640×360 (measured 705 kbit/s at
    /// a 500 kbit/s and 718 kbit/s at a 300 kbit/s target), so not for rate-following tests.
    ScrollingSmpte,
    /// A small ball on black: nearly free to encode (a low-complexity control).
    Ball,
    /// White noise: incompressible.
    Snow,
}

/// Layout of a video file source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "format", rename_all = "snake_case")]
#[non_exhaustive]
pub enum FileFormat {
    /// YUV4MPEG2 with 4:2:0 chroma: size and rate are read from the header.
    Y4m,
    /// Headerless planar I420 frames, back to back.
    RawI420 {
        /// Width in pixels.
        width: u32,
        /// Height in pixels.
        height: u32,
        /// Frames per second of the file.
        frame_rate: u32,
    },
}

/// Sender configuration: source, encoder and its initial settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EncoderConfig {
    /// Picture source; default a moving zone plate.
    pub source: SourceConfig,
    /// Encoder by name: `vp8` (`vp8enc`), `x264` (`x264enc`), `nvh264` (`nvh264enc`),
    /// `nvh265` (`nvh265enc`). Default `vp8`.
    pub encoder: String,
    /// Encoded width in pixels; default 1280.
    pub width: u32,
    /// Encoded height in pixels; default 720.
    pub height: u32,
    /// Frames per second; default 30 (60 allowed).
    pub frame_rate: u32,
    /// Target bit rate at start; default 2.5 Mbit/s. Changed at run time with
    /// [`crate::Encoder::set_target_bitrate`].
    pub start_bitrate: Bitrate,
    /// Longest distance between key frames in frames (`None`: only on request). Default
    /// 10 s of frames (300 at 30 fps), a safety net for receivers that missed a request.
    pub key_frame_interval: Option<u32>,
    /// Encoder threads; default 1. libvpx's VP8 threads synchronise by spinning: on the
    /// oversubscribed 2-core reference VM (load ≈ 11) `threads = 2` collapsed a 640×360
    /// encode to 5 fps with 290 ms latency, while `threads = 1` kept 30 fps at 3–13 ms. Raise
    /// it on a dedicated machine for 1080p60.
    pub threads: u32,
    /// vp8enc `cpu-used` (speed, −16…16; higher is faster and worse). Default 12: about
    /// 15 ms per 720p frame on one core of the reference VM.
    pub vp8_cpu_used: i32,
    /// x264enc `speed-preset` name; default `veryfast`.
    pub x264_preset: String,
    /// Capacity of the channel of encoded frames to the application; default 16. When it
    /// is full the frame is dropped (never blocking GStreamer's streaming thread), counted in
    /// [`crate::EncoderStats::dropped_backpressure`], and a key frame is requested so the
    /// receiver recovers.
    pub frame_queue: usize,
    /// Window over which the produced bit rate is measured (on buffer timestamps); default
    /// 1 s.
    #[serde(with = "humantime_serde")]
    pub stats_window: Duration,
}

impl Default for EncoderConfig {
    fn default() -> Self {
        EncoderConfig {
            source: SourceConfig::default(),
            encoder: "vp8".to_owned(),
            width: 1280,
            height: 720,
            frame_rate: 30,
            start_bitrate: Bitrate::kbps(2_500),
            key_frame_interval: Some(300),
            threads: 1,
            vp8_cpu_used: 12,
            x264_preset: "veryfast".to_owned(),
            frame_queue: 16,
            stats_window: Duration::from_secs(1),
        }
    }
}

impl EncoderConfig {
    /// Checks ranges a pipeline cannot recover from.
    pub(crate) fn validate(&self) -> Result<(), crate::MediaError> {
        let bad = |m: String| Err(crate::MediaError::InvalidConfig(m));
        if !(16..=7680).contains(&self.width) || !(16..=4320).contains(&self.height) {
            return bad(format!(
                "size {}x{} outside 16x16..7680x4320",
                self.width, self.height
            ));
        }
        if !self.width.is_multiple_of(2) || !self.height.is_multiple_of(2) {
            return bad(format!(
                "size {}x{} must be even for I420",
                self.width, self.height
            ));
        }
        if !(1..=240).contains(&self.frame_rate) {
            return bad(format!("frame rate {} outside 1..=240", self.frame_rate));
        }
        if self.frame_queue == 0 {
            return bad("frame_queue must be at least 1".to_owned());
        }
        if self.stats_window.is_zero() {
            return bad("stats_window must be positive".to_owned());
        }
        if !(-16..=16).contains(&self.vp8_cpu_used) {
            return bad(format!(
                "vp8_cpu_used {} outside -16..=16",
                self.vp8_cpu_used
            ));
        }
        Ok(())
    }

    /// One frame interval.
    pub fn frame_interval(&self) -> Duration {
        Duration::from_secs(1) / self.frame_rate.max(1)
    }
}

/// Where decoded frames go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SinkKind {
    /// `fakesink`: decode only (measurements, headless runs). The default.
    #[default]
    Fake,
    /// `autovideosink` in a window (needs a display).
    Window,
}

/// Receiver configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DecoderConfig {
    /// Codec of the incoming frames; default VP8.
    pub codec: Codec,
    /// Nominal frame rate of the stream, for freeze detection; default 30.
    pub frame_rate: u32,
    /// Output sink; default [`SinkKind::Fake`].
    pub sink: SinkKind,
    /// Use an NVIDIA decoder (`nvh264dec`, …) when one is installed; default true.
    pub hardware: bool,
    /// A freeze is a gap between decoded frames longer than this many nominal frame
    /// intervals; default 3 (the issue's definition).
    pub freeze_intervals: u32,
    /// While waiting for a key frame, the request is raised again this often; default 200 ms.
    #[serde(with = "humantime_serde")]
    pub key_frame_request_interval: Duration,
    /// A frame pushed this long ago that has not come out of the decoder counts as a decode
    /// error; default 500 ms.
    #[serde(with = "humantime_serde")]
    pub decode_timeout: Duration,
    /// Frames queued in front of the decoder beyond which new frames are dropped (as a loss,
    /// followed by a key-frame request); default 30.
    pub max_queued_frames: u32,
    /// Capacity of the channel of [`crate::DecodedFrame`] records; default 64 (full: the
    /// record is dropped and counted, decoding goes on).
    pub frame_queue: usize,
    /// Freeze records kept (oldest dropped first); default 256.
    pub max_freeze_records: usize,
}

impl Default for DecoderConfig {
    fn default() -> Self {
        DecoderConfig {
            codec: Codec::Vp8,
            frame_rate: 30,
            sink: SinkKind::Fake,
            hardware: true,
            freeze_intervals: 3,
            key_frame_request_interval: Duration::from_millis(200),
            decode_timeout: Duration::from_millis(500),
            max_queued_frames: 30,
            frame_queue: 64,
            max_freeze_records: 256,
        }
    }
}

impl DecoderConfig {
    pub(crate) fn validate(&self) -> Result<(), crate::MediaError> {
        let bad = |m: &str| Err(crate::MediaError::InvalidConfig(m.to_owned()));
        if !(1..=240).contains(&self.frame_rate) {
            return bad("decoder frame_rate outside 1..=240");
        }
        if self.freeze_intervals == 0 || self.frame_queue == 0 || self.max_queued_frames == 0 {
            return bad("freeze_intervals, frame_queue and max_queued_frames must be positive");
        }
        Ok(())
    }

    /// One nominal frame interval.
    pub fn frame_interval(&self) -> Duration {
        Duration::from_secs(1) / self.frame_rate.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_encoder_config_is_720p30_vp8_moving_pattern() {
        let c = EncoderConfig::default();
        assert_eq!((c.width, c.height, c.frame_rate), (1280, 720, 30));
        assert_eq!(c.encoder, "vp8");
        assert_eq!(
            c.source,
            SourceConfig::TestPattern {
                pattern: TestPattern::MovingZonePlate
            }
        );
        assert!(c.validate().is_ok());
    }

    #[test]
    fn encoder_config_round_trips_through_json_with_units() {
        let json = r#"{"encoder":"x264","width":1920,"height":1080,"frame_rate":60,
            "start_bitrate":"4Mbit","stats_window":"500ms",
            "source":{"kind":"file","path":"/tmp/a.y4m","format":{"format":"y4m"}}}"#;
        let c: EncoderConfig = serde_json::from_str(json).unwrap();
        assert_eq!(c.start_bitrate, Bitrate::mbps(4));
        assert_eq!(c.stats_window, Duration::from_millis(500));
        assert!(matches!(c.source, SourceConfig::File { looping: true, .. }));
        let back: EncoderConfig =
            serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn odd_or_zero_sizes_are_rejected() {
        let c = EncoderConfig {
            width: 641,
            ..EncoderConfig::default()
        };
        assert!(c.validate().is_err());
        let c = EncoderConfig {
            frame_rate: 0,
            ..EncoderConfig::default()
        };
        assert!(c.validate().is_err());
    }
}
