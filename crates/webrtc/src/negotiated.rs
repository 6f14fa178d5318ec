//! What an offer/answer exchange settled, read from the answer's video section, and how it
//! maps onto cg-rtp's session configs.

use cg_rtp::{Codec, ExtensionIds, ReceiverConfig, SenderConfig};

use crate::Error;
use crate::media::{
    ABS_CAPTURE_TIME_URI, ABS_SEND_TIME_URI, MODEL_ENCODING, PLAYOUT_DELAY_URI, TRANSPORT_CC_URI,
    VIDEO_TIMING_URI,
};

/// The RTCP feedback both sides agreed on for the media payload type (`a=rtcp-fb`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Feedback {
    /// `nack` (RFC 4585 generic NACK).
    pub nack: bool,
    /// `nack pli`.
    pub pli: bool,
    /// `ccm fir` (RFC 5104).
    pub fir: bool,
    /// `goog-remb`.
    pub remb: bool,
    /// `transport-cc` (transport-wide CC feedback).
    pub transport_cc: bool,
    /// `ack ccfb` (RFC 8888).
    pub ccfb: bool,
}

/// The negotiated video stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Negotiated {
    /// The codec (VP8 for the model's frames).
    pub codec: Codec,
    /// Whether the stream is the model encoder's frames, framed as VP8
    /// ([`crate::media::MODEL_ENCODING`]).
    pub model: bool,
    /// Its payload type.
    pub payload_type: u8,
    /// The RTX payload type whose `apt` is `payload_type`, if RTX was agreed.
    pub rtx_payload_type: Option<u8>,
    /// Header extension ids (`a=extmap`); an extension the other side did not take is `None`.
    pub extensions: ExtensionIds,
    /// Feedback agreed for `payload_type`.
    pub feedback: Feedback,
    /// The media SSRC the sending side announced (`a=ssrc-group:FID`, else the first
    /// `a=ssrc`), if it did.
    pub ssrc: Option<u32>,
    /// The RTX SSRC of the `FID` group, if announced.
    pub rtx_ssrc: Option<u32>,
}

impl Feedback {
    /// Whether the feedback `kind` (what a controller runs on) was agreed; the error names it.
    pub fn require(&self, kind: cg_cc::FeedbackKind) -> Result<(), Error> {
        use cg_cc::FeedbackKind as K;
        let (ok, name) = match kind {
            K::Remb => (self.remb, "REMB (goog-remb)"),
            K::TransportWideCc => (self.transport_cc, "transport-wide CC (transport-cc)"),
            K::Rfc8888 => (self.ccfb, "RFC 8888 (ack ccfb)"),
        };
        if ok {
            Ok(())
        } else {
            Err(Error::MissingFeedback(name))
        }
    }
}

impl Negotiated {
    /// Reads the first video section of an SDP (the answer: what both sides agreed on). The
    /// first media payload type listed on the `m=` line is the one used.
    pub fn from_sdp(sdp: &str) -> Result<Self, Error> {
        let section = video_section(sdp).ok_or(Error::NoVideo)?;
        let pts: Vec<u8> = section[0]
            .split_whitespace()
            .skip(3)
            .filter_map(|pt| pt.parse().ok())
            .collect();
        let attr = |key: &'static str| {
            section[1..]
                .iter()
                .filter_map(move |l| l.strip_prefix("a=")?.strip_prefix(key)?.strip_prefix(':'))
        };
        let rtpmap = |pt: u8| {
            attr("rtpmap").find_map(|v| {
                let (p, name) = v.split_once(' ')?;
                (p.parse::<u8>().ok()? == pt).then(|| name.to_ascii_uppercase())
            })
        };
        let codec_of = |name: &str| match name.split('/').next() {
            Some("VP8") => Some((Codec::Vp8, false)),
            Some("H264") => Some((Codec::H264, false)),
            Some(MODEL_ENCODING) => Some((Codec::Vp8, true)),
            _ => None,
        };
        let (payload_type, (codec, model)) = pts
            .iter()
            .find_map(|&pt| Some((pt, codec_of(&rtpmap(pt)?)?)))
            .ok_or(Error::NoCommonCodec("video codec"))?;
        let rtx_payload_type = attr("fmtp").find_map(|v| {
            let (p, params) = v.split_once(' ')?;
            let p: u8 = p.parse().ok()?;
            let apt = params
                .split(';')
                .find_map(|kv| kv.trim().strip_prefix("apt="))?;
            (apt.parse::<u8>().ok()? == payload_type
                && rtpmap(p).is_some_and(|n| n.starts_with("RTX/")))
            .then_some(p)
        });
        let mut feedback = Feedback::default();
        for v in attr("rtcp-fb") {
            let Some((p, fb)) = v.split_once(' ') else {
                continue;
            };
            if p != "*" && p.parse::<u8>().ok() != Some(payload_type) {
                continue;
            }
            match fb.trim() {
                "nack" => feedback.nack = true,
                "nack pli" => feedback.pli = true,
                "ccm fir" => feedback.fir = true,
                "goog-remb" => feedback.remb = true,
                "transport-cc" => feedback.transport_cc = true,
                "ack ccfb" => feedback.ccfb = true,
                _ => {}
            }
        }
        let ext = |uri: &str| {
            attr("extmap").find_map(|v| {
                let (id, rest) = v.split_once(' ')?;
                let id: u8 = id.split('/').next()?.parse().ok()?;
                (rest.split_whitespace().next()? == uri && (1..=14).contains(&id)).then_some(id)
            })
        };
        let fid = attr("ssrc-group").find_map(|v| {
            let mut it = v.strip_prefix("FID ")?.split_whitespace();
            Some((
                it.next()?.parse::<u32>().ok()?,
                it.next()?.parse::<u32>().ok()?,
            ))
        });
        let first_ssrc = attr("ssrc").find_map(|v| v.split_whitespace().next()?.parse().ok());
        Ok(Self {
            ssrc: fid.map(|(m, _)| m).or(first_ssrc),
            rtx_ssrc: fid.map(|(_, r)| r),
            codec,
            model,
            payload_type,
            rtx_payload_type,
            extensions: ExtensionIds {
                abs_send_time: ext(ABS_SEND_TIME_URI),
                transport_cc: ext(TRANSPORT_CC_URI),
                abs_capture_time: ext(ABS_CAPTURE_TIME_URI),
                playout_delay: ext(PLAYOUT_DELAY_URI),
                video_timing: ext(VIDEO_TIMING_URI),
            },
            feedback,
        })
    }

    /// Sets the payload types and extension ids of a sender config to the negotiated ones,
    /// the SRTP tag as its transport overhead, and payload padding for probes when RTX was
    /// agreed (see `SenderConfig::payload_padding`). Without negotiated RTX the RTX payload type
    /// is left as it is and must not be used.
    ///
    /// A controller fed by REMB (`kind`) sends no transport-wide sequence number, even where
    /// it was negotiated: a libwebrtc receiver gives every packet that carries one to its
    /// transport-wide feedback and runs its REMB estimator only on packets without, so a
    /// browser would never send the REMB the controller waits for.
    pub fn apply_to(&self, cfg: &mut SenderConfig, kind: cg_cc::FeedbackKind) {
        self.apply_payload_types(&mut cfg.payload_types);
        cfg.extensions = self.extensions;
        if kind == cg_cc::FeedbackKind::Remb {
            cfg.extensions.transport_cc = None;
        }
        cfg.transport_overhead = crate::SRTP_OVERHEAD;
        // `rtc` re-pads RTP to a multiple of 4 bytes: probes must carry payload.
        cfg.payload_padding = self.rtx_payload_type.is_some();
    }

    /// Sets the payload types, extension ids and the sender's SSRCs of a receiver config to
    /// the negotiated ones.
    pub fn apply_to_receiver(&self, cfg: &mut ReceiverConfig) {
        self.apply_payload_types(&mut cfg.payload_types);
        cfg.extensions = self.extensions;
        if let Some(ssrc) = self.ssrc {
            cfg.media_ssrc = ssrc;
        }
        if let Some(rtx) = self.rtx_ssrc {
            cfg.rtx_ssrc = rtx;
        }
    }

    fn apply_payload_types(&self, pts: &mut cg_rtp::PayloadTypes) {
        match self.codec {
            Codec::Vp8 => pts.vp8 = self.payload_type,
            Codec::H264 => pts.h264 = self.payload_type,
            Codec::H265 => pts.h265 = self.payload_type,
        }
        if let Some(rtx) = self.rtx_payload_type {
            pts.rtx = rtx;
        }
    }
}

/// The lines of the first `m=video` section, its `m=` line first.
fn video_section(sdp: &str) -> Option<Vec<&str>> {
    let mut lines = sdp.lines().map(str::trim_end);
    let first = lines.find(|l| l.starts_with("m=video "))?;
    let mut section = vec![first];
    section.extend(lines.take_while(|l| !l.starts_with("m=")));
    Some(section)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ANSWER: &str = "v=0\r\no=- 1 2 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n\
        m=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=rtpmap:111 opus/48000/2\r\n\
        m=video 9 UDP/TLS/RTP/SAVPF 108 109\r\n\
        a=extmap:2 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time\r\n\
        a=extmap:4 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01\r\n\
        a=extmap:5 http://www.webrtc.org/experiments/rtp-hdrext/playout-delay\r\n\
        a=extmap:7 http://www.webrtc.org/experiments/rtp-hdrext/video-timing\r\n\
        a=rtpmap:108 H264/90000\r\na=rtcp-fb:108 transport-cc\r\na=rtcp-fb:108 nack\r\n\
        a=rtcp-fb:108 nack pli\r\na=rtcp-fb:109 ack ccfb\r\n\
        a=fmtp:108 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f\r\n\
        a=rtpmap:109 rtx/90000\r\na=fmtp:109 apt=108\r\n\
        a=ssrc-group:FID 11 12\r\na=ssrc:11 cname:cg\r\na=ssrc:12 cname:cg\r\n";

    #[test]
    fn reads_codec_rtx_extensions_and_feedback_of_the_video_section() {
        let n = Negotiated::from_sdp(ANSWER).unwrap();
        assert_eq!(n.codec, Codec::H264);
        assert_eq!(n.payload_type, 108);
        assert_eq!(n.rtx_payload_type, Some(109));
        assert_eq!(
            n.extensions,
            ExtensionIds {
                abs_send_time: Some(2),
                transport_cc: Some(4),
                abs_capture_time: None,
                playout_delay: Some(5),
                video_timing: Some(7),
            }
        );
        // `ack ccfb` was listed for the RTX payload type only, so not for the media.
        assert_eq!(
            n.feedback,
            Feedback {
                nack: true,
                pli: true,
                transport_cc: true,
                ..Feedback::default()
            }
        );
        assert_eq!((n.ssrc, n.rtx_ssrc), (Some(11), Some(12)));
        let mut cfg = SenderConfig::default();
        n.apply_to(&mut cfg, cg_cc::FeedbackKind::TransportWideCc);
        assert_eq!((cfg.payload_types.h264, cfg.payload_types.rtx), (108, 109));
        assert_eq!(cfg.extensions, n.extensions);
        assert_eq!(cfg.transport_overhead, crate::SRTP_OVERHEAD);
        cfg.validate().unwrap();
        // Fed by REMB: no transport-wide sequence number, the other extensions as agreed.
        n.apply_to(&mut cfg, cg_cc::FeedbackKind::Remb);
        assert_eq!(
            cfg.extensions,
            ExtensionIds {
                transport_cc: None,
                ..n.extensions
            }
        );
        cfg.validate().unwrap();
        let mut rx = ReceiverConfig::default();
        n.apply_to_receiver(&mut rx);
        assert_eq!((rx.media_ssrc, rx.rtx_ssrc), (11, 12));
        assert_eq!((rx.payload_types.h264, rx.payload_types.rtx), (108, 109));
    }

    #[test]
    fn an_sdp_without_video_or_codec_is_an_error() {
        let audio_only = ANSWER.split("m=video").next().unwrap();
        assert!(matches!(
            Negotiated::from_sdp(audio_only),
            Err(Error::NoVideo)
        ));
        let vp9 = "m=video 9 UDP/TLS/RTP/SAVPF 98\r\na=rtpmap:98 VP9/90000\r\n";
        assert!(matches!(
            Negotiated::from_sdp(vp9),
            Err(Error::NoCommonCodec(_))
        ));
        assert!(matches!(Negotiated::from_sdp(""), Err(Error::NoVideo)));
    }
}
