//! RTP payload formats for video: packetizers (frame → payloads of at most `max_payload`
//! bytes) and depacketizers (payloads → bit stream), one file per codec.
//!
//! Depacketizers are stateless per packet: the frame assembler hands them the payloads of one
//! frame in sequence order, complete, so an FU fragment can be appended to what the previous
//! fragments wrote. Every depacketizer is fuzzed (`fuzz/fuzz_targets/depacketize.rs`).

mod annexb;
pub mod h264;
pub mod h265;
pub mod vp8;

use bytes::Bytes;

use crate::{Codec, Error};

/// What one payload told the depacketizer about the frame it belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PayloadInfo {
    /// `Some(true)` if the payload format marks the first packet of a frame (VP8's S bit with
    /// partition 0); `None` if the format cannot tell (H.264/H.265).
    pub frame_start: Option<bool>,
    /// Whether the payload shows a key frame (VP8 P bit clear; H.264 IDR; H.265 IRAP).
    pub key_frame: bool,
}

/// Splits a frame into RTP payloads of at most `max_payload` bytes.
///
/// `picture_id` is VP8's 15-bit picture ID (RFC 7741 §4.2), incremented per frame by the
/// caller; other codecs ignore it.
pub fn packetize(
    codec: Codec,
    frame: &Bytes,
    max_payload: usize,
    picture_id: u16,
) -> Result<Vec<Bytes>, Error> {
    if frame.is_empty() {
        return Err(Error::BadFrame("empty frame"));
    }
    match codec {
        Codec::Vp8 => vp8::packetize(frame, max_payload, picture_id),
        Codec::H264 => h264::packetize(frame, max_payload),
        Codec::H265 => h265::packetize(frame, max_payload),
    }
}

/// Appends the bit stream carried by one payload to `out` and says what it saw.
pub fn depacketize(codec: Codec, payload: &[u8], out: &mut Vec<u8>) -> Result<PayloadInfo, Error> {
    match codec {
        Codec::Vp8 => vp8::depacketize(payload, out),
        Codec::H264 => h264::depacketize(payload, out),
        Codec::H265 => h265::depacketize(payload, out),
    }
}

/// Inspects one payload without copying it.
pub fn inspect(codec: Codec, payload: &[u8]) -> Result<PayloadInfo, Error> {
    match codec {
        Codec::Vp8 => vp8::inspect(payload),
        Codec::H264 => h264::inspect(payload),
        Codec::H265 => h265::inspect(payload),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_frames_are_refused() {
        for c in [Codec::Vp8, Codec::H264, Codec::H265] {
            assert!(packetize(c, &Bytes::new(), 1000, 0).is_err());
        }
    }

    #[test]
    fn tiny_budgets_are_refused_not_looped() {
        let f = Bytes::from(vec![0, 0, 0, 1, 0x65, 1, 2, 3, 4, 5]);
        assert!(packetize(Codec::H264, &f, 2, 0).is_err());
        assert!(packetize(Codec::H265, &f, 3, 0).is_err());
        assert!(packetize(Codec::Vp8, &f, 4, 0).is_err());
    }
}
