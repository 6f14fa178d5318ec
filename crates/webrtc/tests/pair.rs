//! A browser-like `rtc` offerer (recvonly VP8, as a WHEP viewer) against cg's answering peer,
//! in memory and simulated time: ICE and DTLS come up, cg's RTP reaches the viewer bit-exact
//! through SRTP with the media ECN, and the viewer's RTCP reaches cg's tap with the ECN it
//! arrived with.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use cg_types::Ecn;
use cg_webrtc::{PeerConfig, PeerState, WebRtcPeer};
use rtc::ice::mdns::MulticastDnsMode;
use rtc::peer_connection::configuration::media_engine::MediaEngine;
use rtc::peer_connection::configuration::setting_engine::SettingEngineBuilder;
use rtc::peer_connection::event::RTCPeerConnectionEvent;
use rtc::peer_connection::message::{RTCMessage, TaggedRTCMessage};
use rtc::peer_connection::sdp::RTCSessionDescription;
use rtc::peer_connection::state::RTCPeerConnectionState;
use rtc::peer_connection::transport::{CandidateConfig, CandidateHostConfig, RTCIceCandidate};
use rtc::peer_connection::{RTCPeerConnection, RTCPeerConnectionBuilder};
use rtc::rtcp::payload_feedbacks::picture_loss_indication::PictureLossIndication;
use rtc::rtp_transceiver::RTCRtpTransceiverDirection;
use rtc::rtp_transceiver::RTCRtpTransceiverInit;
use rtc::rtp_transceiver::rtp_sender::RtpCodecKind;
use rtc::sansio::Protocol;
use rtc::shared::marshal::Marshal;
use rtc::shared::{TaggedBytesMut, TransportContext, TransportProtocol};

const VIEWER: &str = "10.9.0.1:5000";
const CG: &str = "10.9.0.2:6000";

/// The viewer: `rtc` with its default codecs, offering to receive video only.
fn viewer(now: Instant) -> RTCPeerConnection {
    let mut me = MediaEngine::default();
    me.register_default_codecs().unwrap();
    let mut pc = RTCPeerConnectionBuilder::new()
        .with_media_engine(me)
        .with_setting_engine(
            SettingEngineBuilder::new()
                .with_multicast_dns_mode(MulticastDnsMode::Disabled)
                .build(),
        )
        .build(now)
        .unwrap();
    pc.add_transceiver_from_kind(
        RtpCodecKind::Video,
        Some(RTCRtpTransceiverInit {
            direction: RTCRtpTransceiverDirection::Recvonly,
            streams: vec![],
            send_encodings: vec![],
        }),
    )
    .unwrap();
    let addr: SocketAddr = VIEWER.parse().unwrap();
    let host = CandidateHostConfig {
        base_config: CandidateConfig {
            network: "udp".into(),
            address: addr.ip().to_string(),
            port: addr.port(),
            component: 1,
            ..Default::default()
        },
        ..Default::default()
    }
    .new_candidate_host()
    .unwrap();
    pc.add_local_candidate(RTCIceCandidate::from(&host).to_json().unwrap())
        .unwrap();
    pc
}

/// Both ends and the datagrams in flight between them (delivered one step later).
struct Pair {
    now: Instant,
    viewer: RTCPeerConnection,
    cg: WebRtcPeer,
    viewer_connected: bool,
    /// RTP the viewer's application received.
    viewer_rtp: Vec<rtc::rtp::Packet>,
    /// ECN of every SRTP media datagram cg sent.
    media_ecn: Vec<Ecn>,
    /// ECN the network puts on the viewer's datagrams.
    viewer_ecn: Ecn,
    to_cg: VecDeque<Bytes>,
}

impl Pair {
    fn new(cfg: &PeerConfig) -> Self {
        let now = Instant::now();
        let mut viewer = viewer(now);
        let offer = viewer.create_offer(None).unwrap();
        viewer.set_local_description(now, offer.clone()).unwrap();
        let (cg, answer) = WebRtcPeer::answer(cfg, &offer.sdp, now).unwrap();
        viewer
            .set_remote_description(now, RTCSessionDescription::answer(answer).unwrap())
            .unwrap();
        Self {
            now,
            viewer,
            cg,
            viewer_connected: false,
            viewer_rtp: vec![],
            media_ecn: vec![],
            viewer_ecn: Ecn::NotEct,
            to_cg: VecDeque::new(),
        }
    }

    /// One step: deliver everything queued both ways, then advance to the next timer (at most
    /// 10 ms on).
    fn step(&mut self) {
        let (viewer_addr, cg_addr): (SocketAddr, SocketAddr) =
            (VIEWER.parse().unwrap(), CG.parse().unwrap());
        while let Some(t) = self.cg.poll_transmit() {
            assert_eq!(t.destination, viewer_addr);
            if (128..=191).contains(&t.bytes[0]) && !(192..=223).contains(&t.bytes[1]) {
                self.media_ecn.push(t.ecn);
            } else {
                assert_eq!(t.ecn, Ecn::NotEct, "STUN, DTLS and SRTCP go Not-ECT");
            }
            self.viewer
                .handle_read(TaggedBytesMut {
                    now: self.now,
                    transport: TransportContext {
                        local_addr: viewer_addr,
                        peer_addr: cg_addr,
                        ecn: None,
                        transport_protocol: TransportProtocol::UDP,
                    },
                    message: t.bytes[..].into(),
                })
                .unwrap();
        }
        while let Some(m) = self.viewer.poll_write() {
            assert_eq!(m.transport.peer_addr, cg_addr);
            self.to_cg.push_back(m.message.freeze());
        }
        while let Some(b) = self.to_cg.pop_front() {
            self.cg
                .handle_datagram(self.now, viewer_addr, &b, self.viewer_ecn)
                .unwrap();
        }
        while let Some(e) = self.viewer.poll_event() {
            if let RTCPeerConnectionEvent::OnConnectionStateChangeEvent(s) = e {
                self.viewer_connected = s == RTCPeerConnectionState::Connected;
            }
        }
        while let Some(TaggedRTCMessage { message, .. }) = self.viewer.poll_read() {
            if let RTCMessage::RtpPacket(_, p) = message {
                self.viewer_rtp.push(p);
            }
        }
        let next = [self.cg.poll_timeout(), self.viewer.poll_timeout()]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(self.now + Duration::from_millis(10));
        self.now = next.clamp(self.now, self.now + Duration::from_millis(10));
        self.cg.handle_timeout(self.now).unwrap();
        self.viewer.handle_timeout(self.now).unwrap();
    }

    fn run_until(&mut self, limit: Duration, mut done: impl FnMut(&Self) -> bool) {
        let end = self.now + limit;
        while !done(self) {
            assert!(self.now < end, "not done within {limit:?}");
            self.step();
        }
    }
}

fn rtp(cfg: &PeerConfig, pt: u8, seq: u16) -> Vec<u8> {
    rtc::rtp::Packet {
        header: rtc::rtp::header::Header {
            version: 2,
            marker: seq.is_multiple_of(3),
            payload_type: pt,
            sequence_number: seq,
            timestamp: 90 * seq as u32,
            ssrc: cfg.ssrc,
            ..Default::default()
        },
        payload: Bytes::from(vec![seq as u8; 300 + seq as usize]),
    }
    .marshal()
    .unwrap()
    .to_vec()
}

#[test]
fn a_viewer_connects_and_cg_media_and_feedback_cross_srtp_with_their_ecn() {
    let cfg = PeerConfig {
        media_ecn: Ecn::Ect1,
        ..PeerConfig::new(CG.parse().unwrap())
    };
    let mut p = Pair::new(&cfg);
    p.run_until(Duration::from_secs(5), |p| {
        p.viewer_connected && p.cg.state() == PeerState::Connected
    });
    assert_eq!(p.cg.poll_state(), Some(PeerState::Connected));

    // cg's RTP, written by cg (as cg-rtp would), arrives bit-exact at the viewer.
    let pt = p.cg.negotiated().unwrap().payload_type;
    let sent: Vec<Vec<u8>> = (1..=20).map(|s| rtp(&cfg, pt, s)).collect();
    for b in &sent {
        p.cg.send_rtp(p.now, Bytes::copy_from_slice(b)).unwrap();
    }
    p.run_until(Duration::from_secs(1), |p| p.viewer_rtp.len() >= sent.len());
    for (got, want) in p.viewer_rtp.iter().zip(&sent) {
        assert_eq!(&got.marshal().unwrap()[..], &want[..]);
    }
    assert!(p.media_ecn.len() >= sent.len());
    assert!(
        p.media_ecn.iter().all(|e| *e == Ecn::Ect1),
        "{:?}",
        p.media_ecn
    );

    // The viewer's PLI reaches cg's tap as bytes, with the ECN its datagram carried.
    while p.cg.poll_inbound().is_some() {}
    p.viewer_ecn = Ecn::Ce;
    let pli = PictureLossIndication {
        sender_ssrc: 1,
        media_ssrc: cfg.ssrc,
    };
    p.viewer
        .handle_write(TaggedRTCMessage {
            now: p.now,
            message: RTCMessage::RtcpPacket(String::new(), vec![Box::new(pli.clone())]),
        })
        .unwrap();
    let mut got = None;
    let end = p.now + Duration::from_secs(1);
    while got.is_none() && p.now < end {
        p.step();
        while let Some(i) = p.cg.poll_inbound() {
            let parsed = rtc::rtcp::packet::unmarshal(&mut &i.bytes[..]).unwrap();
            if parsed
                .iter()
                .any(|x| x.as_any().downcast_ref::<PictureLossIndication>() == Some(&pli))
            {
                got = Some(i);
            }
        }
    }
    let got = got.expect("the PLI reaches cg");
    assert_eq!(got.ecn, Ecn::Ce);
    assert_eq!(p.cg.unmarshalable(), 0);
}
