//! The video codecs cg carries: one type for the encoder, the RTP payload format, the
//! decoder and the WebRTC negotiation, so a new codec cannot slip through as another.

use std::fmt;

/// A video codec (and with it, in cg-rtp, its RTP payload format).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum Codec {
    /// VP8 (RFC 6386), one frame per access unit; RTP payload format RFC 7741.
    Vp8,
    /// H.264 / AVC, Annex B byte stream, one access unit per frame; RTP payload format
    /// RFC 6184 (packetization-mode 1: single NAL, STAP-A, FU-A).
    H264,
    /// H.265 / HEVC, Annex B byte stream, one access unit per frame; RTP payload format
    /// RFC 7798 (single NAL, AP, FU).
    H265,
}

impl Codec {
    /// The lowercase name the command lines and the JSON use (`vp8`, `h264`, `h265`).
    pub const fn name(self) -> &'static str {
        match self {
            Codec::Vp8 => "vp8",
            Codec::H264 => "h264",
            Codec::H265 => "h265",
        }
    }
}

impl fmt::Display for Codec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Codec::Vp8 => "VP8",
            Codec::H264 => "H.264",
            Codec::H265 => "H.265",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_the_codec() {
        assert_eq!(Codec::Vp8.to_string(), "VP8");
        assert_eq!(Codec::H264.to_string(), "H.264");
        assert_eq!(Codec::H265.to_string(), "H.265");
        assert_eq!(Codec::H265.name(), "h265");
    }
}
