//! Frames in (encoded, to the sender) and out (reassembled, from the receiver).

use std::time::Instant;

use bytes::Bytes;
use cg_types::MediaTime;

pub use cg_types::Codec;

/// An encoded frame handed to [`crate::SenderSession::push_frame`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodedFrame {
    /// The codec bit stream of one frame (VP8 frame; H.264/H.265 access unit in Annex-B form).
    pub data: Bytes,
    /// When the frame was captured (local clock); sets the RTP timestamp (90 kHz) and the
    /// abs-capture-time extension.
    pub capture_time: Instant,
    /// When the encoder started and finished it (local clock), sent in the video-timing
    /// extension; `None` when the caller does not know (the extension then carries zeros for
    /// the encoder's stages).
    pub encoded: Option<(Instant, Instant)>,
    /// Whether the encoder produced a key frame (a new decoding chain starts here).
    pub key_frame: bool,
    /// The codec; must have a payload type in [`crate::SenderConfig::payload_types`].
    pub codec: Codec,
}

/// A complete, decodable frame out of [`crate::ReceiverSession`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceivedFrame {
    /// The reassembled bit stream (VP8 frame; Annex-B access unit with 4-byte start codes).
    pub data: Bytes,
    /// The codec.
    pub codec: Codec,
    /// The RTP timestamp, unwrapped.
    pub rtp_timestamp: MediaTime,
    /// Whether the payload marks it as a key frame.
    pub key_frame: bool,
    /// The sender's capture time mapped to the receiver's clock through both sides'
    /// [`crate::NtpClock`]s (abs-capture-time); `None` when the extension was absent or the
    /// time maps before the receiver's start.
    pub capture_time: Option<Instant>,
    /// The sender's stages (video-timing extension on the frame's last packet), if sent.
    pub sender_timing: Option<crate::VideoTiming>,
    /// When the first packet of the frame arrived.
    pub first_arrival: Instant,
    /// When the last of its packets arrived (a repair's arrival when one was needed).
    pub last_arrival: Instant,
    /// When the frame became complete (and was emitted): after `last_arrival` when it waited
    /// for an earlier frame.
    pub completed: Instant,
    /// How many of its packets arrived only through retransmission.
    pub retransmitted_packets: u32,
}
