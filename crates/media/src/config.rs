//! Plain configuration structs for the sender and receiver pipelines.

use std::path::PathBuf;
use std::time::Duration;

use cg_types::Bitrate;
use serde::{Deserialize, Serialize};

use crate::Codec;
use crate::adapt::{AdaptationConfig, Format};

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

/// Test pictures: `videotestsrc`'s, and two drawn in-process that look like real content.
///
/// Judge rate control on [`TestPattern::Camera`] and [`TestPattern::Game`]: they are what
/// users feed cg, and a fixed 1280×720 VP8 stream cannot follow low targets on them (the
/// encoder must scale the picture down: see `EncoderConfig::adaptation`). The faint zone
/// plate follows a 1280×720 VP8 target from 0.3 to 4 Mbit/s (`rate_sweep`; figures in
/// `docs/notes/2026-12-01-figures-from-docs.md`), which makes it a regression case, not
/// evidence: it was picked because VP8 follows it. The other `videotestsrc` pictures are
/// either too hard for low targets (the zone plate and SMPTE bars put full-contrast detail
/// or noise everywhere) or too easy for high ones (the ball).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TestPattern {
    /// A zone plate whose rings move every frame (`pattern=zone-plate kx2=20 ky2=20 kt=1`):
    /// full-contrast fine detail everywhere, and costly to draw. At 1280×720 and vp8enc
    /// speed 6 it follows mid and high targets but not the lowest (a key frame alone at the
    /// coarsest quantizer outruns it); at the fast speeds libvpx's automatic speed (`cpu-used`
    /// ≥ 0) goes to when frames take longer than its budget, as on a loaded host, it
    /// produces about the same rate whatever a low target, and falls short of high ones.
    #[default]
    MovingZonePlate,
    /// The same moving zone plate at low contrast, for rate-following tests
    /// (`pattern=zone-plate kx2=30 ky2=30 kt=6`, rings between RGB greys 116 and 140, a
    /// tenth of the full swing): the detail is of small amplitude, so the coarsest
    /// quantizers code it to almost nothing while the finest ones spend several Mbit/s on it;
    /// the rings drift 6/256 of a cycle per frame, so every frame costs about the same. The
    /// same drawing code as [`TestPattern::MovingZonePlate`].
    ///
    /// The flip side of cheap key frames: a key frame asked for at a low rate nearly erases
    /// the rings, and the next delta frame codes them again at many times the key frame's
    /// size (`rate_sweep --key-after 150`; no vp8enc setting tried avoids it). libvpx's CBR
    /// then pays it back with tiny frames, but a transport sees a 1–2 s burst.
    ///
    /// How it follows targets from 0.3 to 4 Mbit/s at speeds 6 and 16, against the
    /// full-contrast plate: `cargo run --release -p cg-media --example rate_sweep -- --pattern
    /// <name> [--cpu-used -16]`, figures in `docs/notes/2026-12-01-figures-from-docs.md`.
    FaintZonePlate,
    /// SMPTE bars scrolling 3 pixels a frame: cheap to draw, but not for rate-following
    /// tests: videotestsrc fills the bottom-right sixteenth of the picture with fresh random
    /// noise every frame, which vp8enc cannot code below a floor far above low targets, and
    /// at 1280×720 the rate stays at that floor for high ones too.
    ScrollingSmpte,
    /// A small ball on black: nearly free to encode (a low-complexity control): it stays far
    /// under any target.
    Ball,
    /// White noise: incompressible.
    Snow,
    /// Camera-like video drawn in-process (not by `videotestsrc`): a natural 1/f texture
    /// panning 4 pixels a frame with a slow sway and σ = 2 luma sensor noise (see
    /// `synth.rs`). The picture to judge rate control and adaptation on: VP8 cannot code it
    /// at low targets at 1280×720 (the encoder must scale it down), so a controller or
    /// encoder that only works on an easy picture shows here.
    Camera,
    /// Game-like video drawn in-process: a textured backdrop scrolling 8–24 pixels a frame,
    /// sharp sprites moving faster, a heads-up display that changes every frame, and a
    /// scene cut every 4 s (see `synth.rs`).
    Game,
}

impl TestPattern {
    /// Every pattern, in the order they are listed to users.
    pub const ALL: [TestPattern; 7] = [
        TestPattern::MovingZonePlate,
        TestPattern::FaintZonePlate,
        TestPattern::ScrollingSmpte,
        TestPattern::Ball,
        TestPattern::Snow,
        TestPattern::Camera,
        TestPattern::Game,
    ];

    /// Command-line name: `zone-plate`, `faint-zone-plate`, `smpte`, `ball`, `snow`,
    /// `camera`, `game`.
    pub fn name(self) -> &'static str {
        match self {
            TestPattern::MovingZonePlate => "zone-plate",
            TestPattern::FaintZonePlate => "faint-zone-plate",
            TestPattern::ScrollingSmpte => "smpte",
            TestPattern::Ball => "ball",
            TestPattern::Snow => "snow",
            TestPattern::Camera => "camera",
            TestPattern::Game => "game",
        }
    }

    /// Parses a command-line name ([`TestPattern::name`], or the serde name with `_`),
    /// case-insensitive; `None` for an unknown one.
    pub fn from_name(name: &str) -> Option<Self> {
        let wanted = name.trim().to_ascii_lowercase().replace('_', "-");
        let wanted = match wanted.as_str() {
            "zoneplate" | "moving-zone-plate" => "zone-plate",
            "scrolling-smpte" => "smpte",
            other => other,
        };
        Self::ALL.into_iter().find(|p| p.name() == wanted)
    }
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
    /// Encoder threads; default 1. libvpx's VP8 threads synchronise by spinning: on an
    /// oversubscribed host two threads collapsed the frame rate and raised the latency
    /// tenfold, while one kept 30 fps. Raise it on a dedicated machine for 1080p60.
    pub threads: u32,
    /// vp8enc `cpu-used`, −16…16. Negative: libvpx codes at the fixed speed `−cpu-used`
    /// (higher is faster and worse). Zero or positive: libvpx picks the speed itself,
    /// raising it while the *wall-clock* encode time of a frame exceeds `(16 − cpu-used)/16`
    /// of the frame interval — which makes the produced stream depend on how loaded the
    /// host is. Default −6, libwebrtc's fixed speed for VP8 on x86. Faster speeds lose rate
    /// range on hard pictures: on the moving zone plate at 720p, from speed 8 on the rate no
    /// longer followed low targets, and from speed 9 on high ones either — where the former
    /// default 12 went on a loaded host (its budget is 8.3 ms of wall time per 30 fps
    /// frame). [`TestPattern::FaintZonePlate`] keeps its range at every speed.
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
    /// Resolution and frame-rate adaptation to the target ([`crate::adapt`]): `width`,
    /// `height` and `frame_rate` above are the largest format; default
    /// `maintain-framerate` down to 320×180.
    pub adaptation: AdaptationConfig,
    /// The frame dropper's bound: input frames are skipped while the encoder's output is
    /// more than this much of the target ahead of it ([`crate::FrameDropper`]); `None` turns
    /// it off. Default 500 ms (libwebrtc's `FrameDropper` window).
    #[serde(with = "humantime_serde")]
    pub frame_dropper: Option<Duration>,
    /// The encoder's rate-control buffer (libvpx `rc_buf_sz`, x264 `vbv-buf-capacity`): how
    /// much the output may run ahead of or behind the target before the encoder corrects
    /// it; a shorter buffer follows a falling target sooner and repays less debt afterwards.
    /// VP8's initial and optimal levels are 50 % and 60 % of it (libwebrtc's ratio). `None`:
    /// each encoder's default: x264 0.5 s; VP8 300 ms, not libwebrtc's 1 s: with 1 s, a
    /// falling target is overshot for about half a second and a rising one undershot for a
    /// second while the buffer is repaid, which the controller reads as congestion and then
    /// as room (figures: `docs/notes/2026-12-01-figures-from-docs.md`).
    #[serde(with = "humantime_serde")]
    pub rate_buffer: Option<Duration>,
    /// Seed of the model encoder's size and timing noise (`encoder = "model"`, see
    /// `model.rs`). Default 1.
    pub model_seed: u64,
    /// Draw a [`crate::Stamp`] (frame number and wall-clock time) into every source picture,
    /// so a viewer can score picture quality and time glass to glass on what it shows. Synthetic
    /// and file sources only. Default false.
    pub stamp: bool,
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
            vp8_cpu_used: -6,
            x264_preset: "veryfast".to_owned(),
            frame_queue: 16,
            stats_window: Duration::from_secs(1),
            adaptation: AdaptationConfig::default(),
            frame_dropper: Some(Duration::from_millis(500)),
            rate_buffer: None,
            model_seed: 1,
            stamp: false,
        }
    }
}

impl EncoderConfig {
    /// The source a viewer's shown pictures can be scored against: a stamped synthetic
    /// pattern (camera or game), which a scorer makes again from the frame number alone.
    /// `None` for any other source.
    pub fn reference(&self) -> Option<crate::ReferenceSpec> {
        match self.source {
            SourceConfig::TestPattern {
                pattern: pattern @ (TestPattern::Camera | TestPattern::Game),
            } if self.stamp => Some(crate::ReferenceSpec {
                pattern,
                width: self.width,
                height: self.height,
                frame_rate: self.frame_rate,
            }),
            _ => None,
        }
    }

    /// Checks ranges a pipeline cannot recover from ([`crate::Error::InvalidConfig`]).
    pub fn validate(&self) -> Result<(), crate::Error> {
        let bad = |m: String| Err(crate::Error::InvalidConfig(m));
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
        if self
            .frame_dropper
            .is_some_and(|d| d < Duration::from_millis(50))
        {
            return bad("frame_dropper bound under 50 ms (less than two frames)".to_owned());
        }
        if self
            .rate_buffer
            .is_some_and(|d| d < Duration::from_millis(50) || d > Duration::from_secs(10))
        {
            return bad("rate_buffer outside 50 ms..10 s".to_owned());
        }
        self.adaptation
            .validate()
            .or_else(|m| bad(format!("adaptation: {m}")))
    }

    /// One frame interval.
    pub fn frame_interval(&self) -> Duration {
        Duration::from_secs(1) / self.frame_rate.max(1)
    }

    /// The largest format: `width`×`height` at `frame_rate`.
    pub fn top_format(&self) -> Format {
        Format {
            width: self.width,
            height: self.height,
            frame_rate: self.frame_rate,
        }
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
    /// Codec of the incoming frames (the first, with `follow_stream`); default VP8.
    pub codec: Codec,
    /// A key frame in another codec switches the decoder to that codec, for a stream whose
    /// codec nothing negotiated (plain RTP names it per packet, by payload type); frames of
    /// another codec before its key frame are dropped and a key frame requested. Without it
    /// they are refused ([`crate::Error::WrongCodec`]). Default false.
    pub follow_stream: bool,
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
    /// The stream comes from the model encoder (`model.rs`): frames are checked and counted
    /// as decoded at once, no pipeline runs. Needs `codec` VP8 (the model's framing).
    /// Default false.
    pub model: bool,
    /// Score each decoded picture against this source (its [`crate::Stamp`] names the
    /// source frame; [`crate::quality`]); default none.
    pub reference: Option<crate::ReferenceSpec>,
}

impl Default for DecoderConfig {
    fn default() -> Self {
        DecoderConfig {
            codec: Codec::Vp8,
            follow_stream: false,
            frame_rate: 30,
            sink: SinkKind::Fake,
            hardware: true,
            freeze_intervals: 3,
            key_frame_request_interval: Duration::from_millis(200),
            decode_timeout: Duration::from_millis(500),
            max_queued_frames: 30,
            frame_queue: 64,
            max_freeze_records: 256,
            model: false,
            reference: None,
        }
    }
}

impl DecoderConfig {
    pub(crate) fn validate(&self) -> Result<(), crate::Error> {
        let bad = |m: &str| Err(crate::Error::InvalidConfig(m.to_owned()));
        if !(1..=240).contains(&self.frame_rate) {
            return bad("decoder frame_rate outside 1..=240");
        }
        if self.freeze_intervals == 0 || self.frame_queue == 0 || self.max_queued_frames == 0 {
            return bad("freeze_intervals, frame_queue and max_queued_frames must be positive");
        }
        if self.model && self.codec != Codec::Vp8 {
            return bad("the model encoder's frames are framed as VP8: codec must be VP8");
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
    fn a_rate_buffer_outside_50ms_to_10s_is_refused() {
        for (ms, ok) in [
            (40, false),
            (50, true),
            (300, true),
            (10_000, true),
            (10_001, false),
        ] {
            let c = EncoderConfig {
                rate_buffer: Some(Duration::from_millis(ms)),
                ..EncoderConfig::default()
            };
            assert_eq!(c.validate().is_ok(), ok, "{ms} ms");
        }
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
    fn pattern_names_round_trip_and_accept_aliases() {
        for p in TestPattern::ALL {
            assert_eq!(TestPattern::from_name(p.name()), Some(p));
            // The serde name parses too.
            let serde_name = serde_json::to_string(&p).unwrap();
            assert_eq!(
                TestPattern::from_name(serde_name.trim_matches('"')),
                Some(p)
            );
        }
        assert_eq!(
            TestPattern::from_name("ZonePlate"),
            Some(TestPattern::MovingZonePlate)
        );
        assert_eq!(
            TestPattern::from_name("faint_zone_plate"),
            Some(TestPattern::FaintZonePlate)
        );
        assert_eq!(TestPattern::from_name("plaid"), None);
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
