//! What cg offers and answers: one video codec with its RTX, the feedback cg's sessions
//! generate and read, and the header extensions cg-rtp writes.

use cg_rtp::Codec;
use rtc::peer_connection::configuration::media_engine::{
    MIME_TYPE_H264, MIME_TYPE_RTX, MIME_TYPE_VP8, MediaEngine,
};
use rtc::rtp_transceiver::rtp_sender::{
    RTCPFeedback, RTCRtpCodec, RTCRtpCodecParameters, RTCRtpHeaderExtensionCapability, RtpCodecKind,
};

use crate::Error;

/// `a=extmap` URI of abs-send-time (receiver-side GCC).
pub const ABS_SEND_TIME_URI: &str = "http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time";
/// `a=extmap` URI of the transport-wide sequence number (send-side GCC).
pub const TRANSPORT_CC_URI: &str =
    "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01";
/// `a=extmap` URI of abs-capture-time (glass-to-glass latency).
pub const ABS_CAPTURE_TIME_URI: &str =
    "http://www.webrtc.org/experiments/rtp-hdrext/abs-capture-time";

/// `a=extmap` URI of playout-delay (the sender asks the viewer to render at once).
pub const PLAYOUT_DELAY_URI: &str = "http://www.webrtc.org/experiments/rtp-hdrext/playout-delay";

/// `a=extmap` URI of video-timing (each frame's sender stages; Chromium reports them as
/// `googTimingFrameInfo`).
pub const VIDEO_TIMING_URI: &str = "http://www.webrtc.org/experiments/rtp-hdrext/video-timing";

/// H.264 as Chromium 156 decodes it here: Constrained Baseline 3.1, non-interleaved
/// (packetization-mode 1), which is what cg-media's x264 caps produce. `rtc` matches on
/// packetization-mode and the first two bytes of profile-level-id, so a mode-0 payload type is
/// never chosen.
pub const H264_FMTP: &str =
    "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f";

/// The encoding name under which the model encoder's frames (RFC 8593 sizes, framed as VP8)
/// are offered and answered. It is cg's own: no browser offers it, so a browser viewer is
/// refused at the offer instead of being handed frames that carry no picture, while cg-recv
/// (`--codec model`) views them in WebRTC mode as it does in plain RTP.
pub const MODEL_ENCODING: &str = "CG-MODEL";

/// Default payload types, the ones Chromium 156 offers for the same codecs (only used when
/// cg makes the offer; an answer takes the offer's numbers).
const VP8_PT: u8 = 96;
const VP8_RTX_PT: u8 = 97;
const H264_PT: u8 = 108;
const H264_RTX_PT: u8 = 109;

/// The RTCP feedback cg's sessions generate and read (cg-rtp): NACK, PLI, FIR, REMB,
/// transport-wide CC and RFC 8888 (`ack ccfb`). The answer keeps what both sides list.
fn feedback() -> Vec<RTCPFeedback> {
    [
        ("goog-remb", ""),
        ("transport-cc", ""),
        ("ccm", "fir"),
        ("nack", ""),
        ("nack", "pli"),
        ("ack", "ccfb"),
    ]
    .into_iter()
    .map(|(typ, parameter)| RTCPFeedback {
        typ: typ.into(),
        parameter: parameter.into(),
    })
    .collect()
}

/// The codec as `rtc` names it; with `model`, [`MODEL_ENCODING`] (the model's frames are
/// framed as VP8 and `codec` must be VP8).
pub(crate) fn rtp_codec(codec: Codec, model: bool) -> Result<RTCRtpCodec, Error> {
    let model_mime = format!("video/{MODEL_ENCODING}");
    let (mime, fmtp) = match codec {
        Codec::Vp8 if model => (model_mime.as_str(), ""),
        _ if model => {
            return Err(Error::UnsupportedCodec(
                "the model encoder's frames in H.264",
            ));
        }
        Codec::Vp8 => (MIME_TYPE_VP8, ""),
        Codec::H264 => (MIME_TYPE_H264, H264_FMTP),
        Codec::H265 => return Err(Error::UnsupportedCodec("H.265")),
    };
    Ok(RTCRtpCodec {
        mime_type: mime.into(),
        clock_rate: 90_000,
        channels: 0,
        sdp_fmtp_line: fmtp.into(),
        rtcp_feedback: feedback(),
    })
}

/// A media engine with `codec` (or the model's encoding) and its RTX, cg's feedback and
/// cg-rtp's header extensions.
pub(crate) fn media_engine(codec: Codec, model: bool) -> Result<MediaEngine, Error> {
    let (pt, rtx_pt) = match codec {
        Codec::H264 => (H264_PT, H264_RTX_PT),
        _ => (VP8_PT, VP8_RTX_PT),
    };
    let mut me = MediaEngine::default();
    me.register_codec(
        RTCRtpCodecParameters {
            rtp_codec: rtp_codec(codec, model)?,
            payload_type: pt,
        },
        RtpCodecKind::Video,
    )?;
    me.register_codec(
        RTCRtpCodecParameters {
            rtp_codec: RTCRtpCodec {
                mime_type: MIME_TYPE_RTX.into(),
                clock_rate: 90_000,
                channels: 0,
                sdp_fmtp_line: format!("apt={pt}"),
                rtcp_feedback: vec![],
            },
            payload_type: rtx_pt,
        },
        RtpCodecKind::Video,
    )?;
    for uri in [
        ABS_SEND_TIME_URI,
        TRANSPORT_CC_URI,
        ABS_CAPTURE_TIME_URI,
        PLAYOUT_DELAY_URI,
        VIDEO_TIMING_URI,
    ] {
        me.register_header_extension(
            RTCRtpHeaderExtensionCapability { uri: uri.into() },
            RtpCodecKind::Video,
            None,
        )?;
    }
    Ok(me)
}
