//! Answering offers: a recorded Chromium 156 offer, and the offers a viewer must be refused.

use std::net::SocketAddr;
use std::time::Instant;

use cg_rtp::{Codec, ExtensionIds};
use cg_webrtc::{Error, PeerConfig, WebRtcPeer};

const CHROME_OFFER: &str = include_str!("data/chrome156-recvonly-offer-ccfb.sdp");

fn cfg(codec: Codec) -> PeerConfig {
    PeerConfig {
        codec,
        ..PeerConfig::new("10.77.0.2:40000".parse::<SocketAddr>().unwrap())
    }
}

#[test]
fn vp8_answer_to_chromium_keeps_its_numbers_and_feedback_and_gives_a_host_candidate() {
    let (peer, sdp) = WebRtcPeer::answer(&cfg(Codec::Vp8), CHROME_OFFER, Instant::now()).unwrap();
    let n = peer.negotiated().unwrap();
    assert_eq!(
        (n.codec, n.payload_type, n.rtx_payload_type),
        (Codec::Vp8, 96, Some(97))
    );
    assert_eq!(
        n.extensions,
        ExtensionIds {
            abs_send_time: Some(2),
            transport_cc: Some(4),
            abs_capture_time: None, // Chromium's recvonly offer does not list it
            playout_delay: Some(5),
            video_timing: Some(7),
        }
    );
    for ext in [
        "5 http://www.webrtc.org/experiments/rtp-hdrext/playout-delay",
        "7 http://www.webrtc.org/experiments/rtp-hdrext/video-timing",
    ] {
        assert!(
            sdp.contains(&format!("a=extmap:{ext}")),
            "the answer takes {ext}: {sdp}"
        );
    }
    let f = n.feedback;
    assert!(
        f.nack && f.pli && f.fir && f.remb && f.transport_cc && f.ccfb,
        "{f:?}"
    );
    assert!(sdp.contains("a=sendonly"), "{sdp}");
    assert!(sdp.contains("a=setup:passive"), "{sdp}");
    assert!(sdp.contains("10.77.0.2 40000 typ host"), "{sdp}");
    let s = PeerConfig::new("10.77.0.2:1".parse().unwrap());
    assert!(sdp.contains(&format!("a=ssrc:{} ", s.ssrc)), "{sdp}");
    assert!(
        sdp.contains(&format!("a=ssrc-group:FID {} {}", s.ssrc, s.rtx_ssrc)),
        "{sdp}"
    );
    // No mDNS: no .local candidate of ours, nothing sent before the browser's checks.
    assert!(!sdp.contains(".local"), "{sdp}");
}

#[test]
fn ccfb_is_answered_only_when_offered() {
    let without: String = CHROME_OFFER
        .split_inclusive("\r\n")
        .filter(|l| !l.contains("ack ccfb"))
        .collect();
    let (peer, sdp) = WebRtcPeer::answer(&cfg(Codec::Vp8), &without, Instant::now()).unwrap();
    let n = peer.negotiated().unwrap();
    assert!(!n.feedback.ccfb);
    assert!(n.feedback.transport_cc);
    assert!(!sdp.contains("ccfb"), "{sdp}");
}

#[test]
fn h264_answer_picks_constrained_baseline_packetization_mode_1() {
    let (peer, sdp) = WebRtcPeer::answer(&cfg(Codec::H264), CHROME_OFFER, Instant::now()).unwrap();
    let n = peer.negotiated().unwrap();
    assert_eq!(
        (n.codec, n.payload_type, n.rtx_payload_type),
        (Codec::H264, 108, Some(109))
    );
    let fmtp = sdp
        .lines()
        .find(|l| l.starts_with("a=fmtp:108 "))
        .unwrap_or_else(|| panic!("{sdp}"));
    assert!(
        fmtp.contains("packetization-mode=1") && fmtp.contains("42e01f"),
        "{fmtp}"
    );
}

#[test]
fn bad_offers_get_a_clear_error() {
    let now = Instant::now();
    let c = cfg(Codec::Vp8);
    let e = |offer: &str| WebRtcPeer::answer(&c, offer, now).err().expect("must fail");
    assert!(matches!(e("not sdp at all"), Error::BadSdp(_)));
    assert!(matches!(e(""), Error::BadSdp(_)));
    let garbled = CHROME_OFFER.replace("a=fingerprint:sha-256 ", "a=fingerprint:");
    assert!(matches!(e(&garbled), Error::BadSdp(_)), "{:?}", e(&garbled));
    let audio = "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n\
        m=audio 9 UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 0.0.0.0\r\na=rtpmap:111 opus/48000/2\r\n";
    assert!(matches!(e(audio), Error::NoVideo));
    let vp9_only: String = CHROME_OFFER
        .replace("VP8/90000", "VP7/90000")
        .replace("H264/90000", "H263/90000");
    assert!(
        matches!(e(&vp9_only), Error::NoCommonCodec(_)),
        "{:?}",
        e(&vp9_only)
    );
    let any: SocketAddr = "0.0.0.0:4000".parse().unwrap();
    let r = WebRtcPeer::answer(&PeerConfig::new(any), CHROME_OFFER, now);
    assert!(matches!(r, Err(Error::BadAddress(_))));
    let h265 = PeerConfig {
        codec: Codec::H265,
        ..cfg(Codec::Vp8)
    };
    assert!(matches!(
        WebRtcPeer::answer(&h265, CHROME_OFFER, now),
        Err(Error::UnsupportedCodec(_))
    ));
}

/// The model encoder's frames are answered only to an offer of `CG-MODEL`: a browser (which
/// never offers it) is refused with that reason, and a cg peer that offered VP8 is not given
/// frames without a picture, nor one that offered the model a picture.
#[test]
fn the_model_is_answered_only_to_a_model_offer() {
    let model = PeerConfig {
        model: true,
        ..cfg(Codec::Vp8)
    };
    let Err(e) = WebRtcPeer::answer(&model, CHROME_OFFER, Instant::now()) else {
        panic!("Chromium's offer answered with the model");
    };
    assert!(matches!(e, Error::NoCommonCodec(_)), "{e}");
    assert!(e.to_string().contains("CG-MODEL"), "{e}");
    let now = Instant::now();
    let viewer = |model| PeerConfig {
        model,
        ..PeerConfig::new("10.77.0.1:5000".parse().unwrap())
    };
    let (_, vp8_offer) = WebRtcPeer::offer(&viewer(false), now).unwrap();
    assert!(!vp8_offer.contains(cg_webrtc::media::MODEL_ENCODING));
    assert!(WebRtcPeer::answer(&model, &vp8_offer, now).is_err());
    let (mut model_viewer, model_offer) = WebRtcPeer::offer(&viewer(true), now).unwrap();
    assert!(
        model_offer.contains(&format!("{}/90000", cg_webrtc::media::MODEL_ENCODING)),
        "{model_offer}"
    );
    assert!(WebRtcPeer::answer(&cfg(Codec::Vp8), &model_offer, now).is_err());
    let (peer, answer) = WebRtcPeer::answer(&model, &model_offer, now).unwrap();
    assert!(peer.negotiated().unwrap().model);
    model_viewer.accept_answer(&answer, now).unwrap();
    assert!(model_viewer.negotiated().unwrap().model);
}

/// Chromium 156's offer as medooze's whip-whep demo makes it (`addTransceiver("audio")`, then
/// `"video"`, both `sendrecv`), posted before any candidate was gathered.
const WHEP_JS_OFFER: &str = include_str!("data/chrome156-whep-js-offer.sdp");

#[test]
fn an_offer_with_audio_first_gets_the_host_candidate_in_the_accepted_video_section() {
    let (peer, sdp) = WebRtcPeer::answer(&cfg(Codec::Vp8), WHEP_JS_OFFER, Instant::now()).unwrap();
    assert_eq!(peer.negotiated().unwrap().codec, Codec::Vp8);
    let (audio, video) = sdp.split_once("m=video ").unwrap();
    let audio = audio.split_once("m=audio ").unwrap().1;
    assert!(audio.starts_with("0 "), "audio is rejected: {sdp}");
    assert!(!audio.contains("a=candidate:"), "{sdp}");
    assert!(
        video.contains("10.77.0.2 40000 typ host"),
        "the browser reads the BUNDLE transport's address from the accepted section: {sdp}"
    );
    assert!(
        video.contains("a=sendonly"),
        "a sendrecv offer is answered sendonly: {sdp}"
    );
    assert!(sdp.contains("a=group:BUNDLE 1\r\n"), "{sdp}");
}
