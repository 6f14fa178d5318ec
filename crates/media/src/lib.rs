//! GStreamer encoder and decoder pipelines for cg, with run-time rate control.
//!
//! cg-media is a driver, not a sans-IO core: it owns GStreamer pipelines and their threads
//! and reads the host clock. It only *adapts* the encoder — the congestion controller
//! (cg-cc) decides the rate, the transport (cg-rtp / cg-net) packetizes, paces and asks for
//! key frames.
//!
//! # Sender: [`Encoder`]
//!
//! ```text
//! videotestsrc (live) → capsfilter W×H → videoscale | camera/game picture (synth) → appsrc
//!   → videoscale | file reader → appsrc (live) → videoscale → videorate | ximagesrc | v4l2src
//!   → [videoconvert → videoscale → videorate] → capsfilter I420 w×h@F  (w×h: the adaptation's)
//!   → queue (1 frame, leaky: a slow encoder drops the oldest raw frame, never delays capture)
//!   → ● input probe: capture time, frame index, pending target bit rate; adaptation (a new
//!       w×h goes to the capsfilter), frame-rate gate and frame dropper (frames skipped here)
//!   → vp8enc | x264enc | nvh264enc | nvh265enc   (low-latency settings, see EncoderKind)
//!   → [h264parse | h265parse, SPS/PPS before every IDR] → capsfilter → appsink (sync=false)
//!   → ● output: frame sizes and VP8's quantizer to the adaptation and the dropper
//!   → bounded std::sync::mpsc channel → the application
//! ```
//!
//! With `encoder = "model"` no pipeline runs: a thread emits frames whose sizes follow RFC
//! 8593's video model (`cg_video_model`), framed as VP8, at the target rate — for
//! experiments at rates this machine cannot encode (see [`model`]). The receiver checks and
//! counts them ([`DecoderConfig::model`]).
//!
//! # Following the target on real content
//!
//! An encoder at a fixed picture size follows a target only down to what its coarsest
//! quantizer produces: on [`TestPattern::Camera`] at 1280×720 VP8 makes about 340 kbit/s
//! for a 150 kbit/s target, and after such a stretch libvpx repays its buffer debt with a
//! long undershoot (290 kbit/s for 450 kbit/s). Three pieces make the output follow:
//!
//! - [`adapt`]: resolution and frame-rate adaptation, a sans-IO policy (start format from
//!   the start bit rate, down at once when the target falls below what the format needs,
//!   down when the encoder's QP or the dropper says it cannot cope, up with hysteresis) with
//!   a [`DegradationPreference`]. A new size changes the scaler's caps in the running
//!   pipeline; the encoder re-initialises on the new caps and codes a key frame, which the
//!   receiver's decoder follows in place (VP8 signals the size in key frames). No restart of
//!   the pipeline or the session.
//! - [`FrameDropper`]: raw frames skipped while the output is more than a bounded debt
//!   ahead of the target, so an overshoot never accumulates a debt to repay.
//! - [`vp8_base_qp`]: the quantizer of each VP8 frame, read from its header, for the
//!   adaptation's quality signal (libwebrtc's `QualityScaler` thresholds).
//!
//! `cargo run --release -p cg-media --example rate_sweep -- --pattern camera
//! --degradation maintain-framerate --dropper 500` shows the difference (targets in kbit/s,
//! each held 8 s, rate over the segment after its first 2 s, 2-core host):
//!
//! | target | fixed 1280×720 | adaptation + dropper |
//! |---|---|---|
//! | 150 | 337 (2.25×) | 143 (0.95×) |
//! | 300 | 341 (1.14×) | 296 (0.99×) |
//! | 450 | 290 (0.64×) | 448 (1.00×) |
//! | 600 | 518 (0.86×) | 608 (1.01×) |
//! | 1000 | 997 (1.00×) | 979 (0.98×) |
//! | 2500 | 2519 (1.01×) | 2466 (0.99×) |

//! [`Encoder::start`] takes an [`EncoderConfig`] (serde; the default is a moving zone plate,
//! 1280×720 at 30 fps, VP8 at 2.5 Mbit/s) and returns the handle and a
//! `Receiver<`[`EncodedFrame`]`>`. The handle is `Send + Sync` and every method is
//! non-blocking:
//! - [`Encoder::set_target_bitrate`] stores the new [`cg_types::Bitrate`]; the streaming
//!   thread applies it in front of the next raw frame (no restart; the encoders take the
//!   new value while playing). The conversion to the element's unit — vp8enc
//!   `target-bitrate` in bit/s, x264enc and nvh26xenc `bitrate` in kbit/s — happens in one
//!   place, `EncoderKind::set_bitrate`.
//! - [`Encoder::request_key_frame`] sends an upstream `force-key-unit` event
//!   (`gstreamer_video::UpstreamForceKeyUnitEvent`, all headers): the next raw frame to enter
//!   the encoder is coded as a key frame.
//! - [`Encoder::stats`]: frames in/out, key frames, bytes, produced versus target rate over a
//!   window of stream time ([`RateWindow`]), encode latency (last, mean, max), back-pressure
//!   drops, the first pipeline error.
//!
//! Unknown encoder names are [`Error::UnknownEncoder`] with the list of encoders
//! installed here; NVENC is checked twice — the element factory must exist (the nvcodec
//! plugin registers it only with an NVIDIA driver and GPU) and a two-frame probe pipeline
//! must open a session — and otherwise is [`Error::EncoderNotAvailable`] saying which.
//!
//! # Receiver: [`Decoder`]
//!
//! ```text
//! push(EncodedFrame) → gate → appsrc (live) → [h264parse | h265parse]
//!   → vp8dec | avdec_h264 | avdec_h265 | nv*dec (if installed and `hardware`)
//!   → ● output probe: decoded frames, size, glass-to-glass latency, freezes, the stamp
//!       (and the luma, to the scorer, with a reference)
//!   → fakesink (default) | videoconvert → autovideosink   (both sync=false)
//! ```
//!
//! The gate drops frames after a loss (a gap in [`EncodedFrame::seq`], or
//! [`Decoder::signal_loss`]) until the next key frame, recognised from the bitstream
//! ([`Codec::is_key_frame`]), and raises a key-frame request that the transport collects
//! with [`Decoder::take_key_frame_request`] (repeated every `key_frame_request_interval`
//! while waiting). Decoder errors never stop the stream: `max-errors = -1`, and a frame
//! that goes in but never comes out (the decoder rejected it, or it is older than
//! `decode_timeout`) is counted in [`DecoderStats::decode_errors`] and makes the decoder wait
//! for a key frame; a bus error, or a decoder that lets a second of frames time out, is
//! answered by rebuilding the pipeline ([`DecoderStats::restarts`]). Freezes are gaps
//! between decoded frames longer than 3 nominal frame intervals ([`FreezeDetector`]).
//!
//! # What the viewer sees: [`Stamp`] and [`quality`]
//!
//! With [`EncoderConfig::stamp`] the source draws a [`Stamp`] (frame number, wall-clock time,
//! a check word) into each synthetic or file picture; the decoder reads it back from every
//! picture ([`DecodedFrame::stamp`]). With [`DecoderConfig::reference`] it also scores each
//! picture's luma PSNR against the same source picture made again ([`quality`]), in a thread
//! at the lowest priority that skips pictures while it is busy ([`DecoderStats::quality`]).
//!
//! # Clocks
//!
//! - [`EncodedFrame::capture_time`] is a [`HostTime`]: `CLOCK_MONOTONIC`, read when the raw
//!   frame enters the encoder. It is one clock for every process on the host, so a receiver
//!   process in another netlab namespace computes glass-to-glass latency as
//!   `decoded_at − capture_time` without any clock synchronisation. (It is also the clock of
//!   `std::time::Instant` and of GStreamer's system clock on Linux; [`HostTime::to_instant`]
//!   converts.) Not comparable across machines.
//! - [`EncodedFrame::pts`] is the frame's running time in the sender pipeline (starts near
//!   zero). Produced rates and key-frame positions are measured on it, so a busy host delays
//!   the numbers but does not distort them. Encoders may shift buffer timestamps (x264enc
//!   adds 1000 hours to keep DTS positive); input and output are matched on running time,
//!   which survives that.
//! - The decoder stamps buffers with its own strictly increasing times (the sender's PTS may
//!   jump or restart); sinks do not synchronise (`sync=false`): frames are shown as soon as
//!   they are decoded.
//!
//! # Threads and back-pressure
//!
//! GStreamer runs the source, the encoder and the decoder in their own streaming threads;
//! cg-media adds one bus-watch thread per pipeline (and a reader thread for file sources).
//! Nothing ever blocks a streaming thread on the application: the frame channel is a bounded
//! `std::sync::mpsc::sync_channel` fed with `try_send`. When it is full the encoded frame is
//! dropped, counted ([`EncoderStats::dropped_backpressure`]) and a key frame is requested,
//! since the receiver will see a sequence gap. From tokio, receive in `spawn_blocking` (or a
//! plain thread) with `recv`/`recv_timeout`; the handles' methods are cheap enough to call
//! from async code. The decoder's queue in front of the decoding element is bounded by
//! `max_queued_frames` (beyond it, frames are dropped as a loss).
//!
//! libvpx runs single-threaded by default: its VP8 worker threads synchronise by spinning,
//! and on an oversubscribed host two threads collapse the frame rate (see
//! [`EncoderConfig::threads`]).
//!
//! # Figures
//!
//! - CPU and latency per 720p frame, encode and decode in one process:
//!   `cargo run --release -p cg-media --example bench_720p -- 20 <vp8|x264> [zone-plate|smpte]`
//!   (CPU from each streaming thread's `/proc/self/task` time, so independent of how many
//!   frames a loaded host lets through).
//! - Rate following at 720p: `cargo run --release -p cg-media --example rate_sweep` drives a
//!   schedule of targets through an [`Encoder`] and prints, per target, the rate produced,
//!   the time to come within 20 % and the CPU per frame. Only
//!   [`TestPattern::FaintZonePlate`] follows 0.3–4 Mbit/s at 1280×720; the full-contrast zone
//!   plate does not follow low targets.
//! - Per-frame Rust work (criterion): `cargo bench -p cg-media`.
//!
//! Dated results of these: `docs/notes/2026-12-01-figures-from-docs.md`.

pub mod adapt;
mod codec;
mod config;
mod decoder;
mod encoder;
mod encoder_stats;
mod encoders;
mod error;
mod file_source;
mod frame;
mod frame_dropper;
mod freeze;
mod host_time;
pub mod model;
mod props;
pub mod quality;
mod rate_window;
mod source;
mod stamp;
mod sync;
mod synth;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod vp8_header;

pub use adapt::{AdaptationConfig, DegradationPreference, Format};
pub use codec::{Codec, MediaCodec, vp8_key_frame_size};
pub use config::{DecoderConfig, EncoderConfig, FileFormat, SinkKind, SourceConfig, TestPattern};
pub use decoder::{DecodedFrame, Decoder, DecoderStats, PushOutcome};
pub use encoder::Encoder;
pub use encoder_stats::EncoderStats;
pub use encoders::{EncoderKind, NVENC_PROBE_TIMEOUT};
pub use error::Error;
pub use file_source::{FileVideoInfo, FrameReader, parse_y4m_header};
pub use frame::EncodedFrame;
pub use frame_dropper::FrameDropper;
pub use freeze::{Freeze, FreezeDetector};
pub use host_time::HostTime;
pub use quality::{
    PSNR_IDENTICAL_DB, Picture, QualitySummary, ReferenceSpec, Score, Scorer, ScorerBusy,
    psnr_scaled,
};
pub use rate_window::RateWindow;
pub use stamp::Stamp;
pub use synth::SyntheticVideo;
pub use vp8_header::vp8_base_qp;

/// Initialises GStreamer once per process (every constructor calls it; calling it yourself
/// is harmless).
pub fn init() -> Result<(), Error> {
    gstreamer::init().map_err(|e| Error::Init(e.to_string()))
}
