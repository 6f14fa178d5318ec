//! What the sender pipeline (or the model encoder) reports of itself.

use std::time::Duration;

use cg_types::{Bitrate, DataSize};

use crate::Codec;
use crate::adapt::Format;

/// A snapshot of the sender's counters.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct EncoderStats {
    /// Codec produced.
    pub codec: Codec,
    /// The target the encoder is running with (after conversion and clamping to the
    /// element's unit).
    pub target_bitrate: Bitrate,
    /// Bit rate produced over the last `stats_window` of stream time (PTS).
    pub produced_bitrate: Bitrate,
    /// Raw frames the source delivered.
    pub frames_captured: u64,
    /// Raw frames that entered the encoder (`frames_captured − frames_in − dropped_rate −
    /// skipped_frame_rate` were dropped in front of it because the encoder could not keep
    /// up: an overloaded host).
    pub frames_in: u64,
    /// Encoded frames that left it.
    pub frames_out: u64,
    /// Of which key frames.
    pub key_frames: u64,
    /// Encoded bytes.
    pub bytes_out: DataSize,
    /// Encoded frames dropped because the application's channel was full (or gone).
    pub dropped_backpressure: u64,
    /// Key frames requested (by the application, or after a back-pressure drop).
    pub key_frame_requests: u64,
    /// Encode latency (encoder input to appsink output) of the last frame.
    pub last_encode_latency: Duration,
    /// Mean encode latency over the stats window.
    pub mean_encode_latency: Duration,
    /// Largest encode latency over the stats window.
    pub max_encode_latency: Duration,
    /// PTS (running time) of the last raw frame that entered the encoder.
    pub last_input_pts: Option<Duration>,
    /// PTS of the first raw frame encoded with the current target.
    pub target_applied_at_pts: Option<Duration>,
    /// Input index of the last raw frame before the last key-frame request.
    pub key_frame_requested_after_index: Option<u64>,
    /// PTS of that frame.
    pub key_frame_requested_after_pts: Option<Duration>,
    /// The format being coded now (the adaptation's choice; see [`crate::adapt`]).
    pub format: Format,
    /// Format changes so far.
    pub format_changes: u64,
    /// The share of stream time the encoder spent encoding over the adaptation's CPU window
    /// (libwebrtc's encode usage), once a window is full.
    pub encode_usage: Option<f64>,
    /// Mean quantizer over the adaptation's quality window, where the codec exposes it
    /// (VP8: the bitstream's 0–127 q index).
    pub mean_qp: Option<f64>,
    /// Raw frames the frame dropper skipped (the output was ahead of the target).
    pub dropped_rate: u64,
    /// Raw frames skipped to lower the frame rate (the adaptation's choice).
    pub skipped_frame_rate: u64,
    /// Pipelines rebuilt by [`crate::Encoder::restart`].
    pub restarts: u64,
    /// The first error the pipeline posted, if any (the pipeline stops producing), or why
    /// a restart failed.
    pub error: Option<String>,
}
