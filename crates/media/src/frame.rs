//! Encoded access units as they leave the encoder and enter the decoder.

use std::time::Duration;

use bytes::Bytes;

use crate::{Codec, HostTime};

/// One encoded access unit: a whole VP8 frame, or an H.264/H.265 Annex B access unit (with
/// SPS/PPS in front of every IDR). This is what a packetizer takes and what a depacketizer
/// hands to [`crate::Decoder::push`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodedFrame {
    /// The bitstream.
    pub data: Bytes,
    /// Codec of `data`.
    pub codec: Codec,
    /// Host `CLOCK_MONOTONIC` when the raw frame entered the encoder (see [`HostTime`] for
    /// why this clock); the receiver subtracts it from its own reading at decode time for
    /// glass-to-glass latency.
    pub capture_time: HostTime,
    /// Whether the frame decodes on its own (no DELTA_UNIT flag from the encoder).
    pub key_frame: bool,
    /// Presentation time: the raw frame's running time in the sender pipeline (starts near
    /// zero when the pipeline starts; one frame interval apart at a steady frame rate;
    /// carries on past the last frame when [`crate::Encoder::restart`] rebuilds it).
    pub pts: Duration,
    /// Index of the raw frame at the encoder input (0, 1, 2, …). Gaps mean the encoder
    /// dropped frames (rate control or overload).
    pub index: u64,
    /// Sequence number of encoded frames handed out (0, 1, 2, …). A gap means frames were
    /// lost after the encoder (application back-pressure, network): the receiver needs a key
    /// frame.
    pub seq: u64,
    /// Time from `capture_time` to the encoded frame reaching the application side of the
    /// appsink; zero on the receiving side.
    pub encode_latency: Duration,
}
