//! GStreamer encoder and decoder pipelines for cg (issue #8).
//!
//! TODO(docs): filled in below once the API settles.

mod codec;
mod config;
mod decoder;
mod encoder;
mod encoders;
mod error;
mod file_source;
mod frame;
mod freeze;
mod host_time;
mod props;
mod rate_window;
mod source;

pub use codec::{Codec, vp8_key_frame_size};
pub use config::{DecoderConfig, EncoderConfig, FileFormat, SinkKind, SourceConfig, TestPattern};
pub use decoder::{DecodedFrame, Decoder, DecoderStats, PushOutcome};
pub use encoder::{Encoder, EncoderStats};
pub use encoders::{EncoderKind, NVENC_PROBE_TIMEOUT};
pub use error::MediaError;
pub use file_source::{FileVideoInfo, FrameReader, parse_y4m_header};
pub use frame::EncodedFrame;
pub use freeze::{Freeze, FreezeDetector};
pub use host_time::HostTime;
pub use rate_window::RateWindow;

/// Initialises GStreamer once per process (every constructor calls it; calling it yourself
/// is harmless).
pub fn init() -> Result<(), MediaError> {
    gstreamer::init().map_err(|e| MediaError::Init(e.to_string()))
}
