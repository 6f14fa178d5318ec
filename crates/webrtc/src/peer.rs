//! [`WebRtcPeer`]: one WebRTC peer connection, sans-IO, with `rtc` doing ICE, DTLS-SRTP and
//! SDP and cg doing everything else.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use cg_rtp::Codec;
use cg_types::Ecn;
use rtc::dtls::extension::extension_use_srtp::SrtpProtectionProfile;
use rtc::ice::mdns::MulticastDnsMode;
use rtc::interceptor::{Registry, Slot};
use rtc::media_stream::MediaStreamTrack;
use rtc::peer_connection::configuration::setting_engine::SettingEngineBuilder;
use rtc::peer_connection::event::RTCPeerConnectionEvent;
use rtc::peer_connection::message::{RTCMessage, TaggedRTCMessage};
use rtc::peer_connection::sdp::RTCSessionDescription;
use rtc::peer_connection::state::RTCPeerConnectionState;
use rtc::peer_connection::transport::{
    CandidateConfig, CandidateHostConfig, RTCDtlsRole, RTCIceCandidate,
};
use rtc::peer_connection::{RTCPeerConnection, RTCPeerConnectionBuilder};
use rtc::rtp_transceiver::rtp_sender::{
    RTCRtpCodingParameters, RTCRtpEncodingParameters, RTCRtpRtxParameters, RtpCodecKind,
};
use rtc::rtp_transceiver::{RTCRtpTransceiverDirection, RTCRtpTransceiverInit};
use rtc::sansio::Protocol;
use rtc::shared::marshal::Unmarshal;
use rtc::shared::{TaggedBytesMut, TransportContext, TransportProtocol};

use crate::Error;
use crate::media::{media_engine, rtp_codec};
use crate::negotiated::Negotiated;
use crate::tap::{Inbound, Tap, TapHandle};

/// The interceptor slot of the tap: the only interceptor, so any slot works; a low one is
/// nearest the wire, where `rtc-interceptor` puts what must see every packet.
const TAP_SLOT: usize = 500;

/// Identity of the media track in the SDP (`a=msid`).
const STREAM_ID: &str = "cg";
const TRACK_ID: &str = "cg-video";

/// How a peer is set up.
#[derive(Debug, Clone, PartialEq)]
pub struct PeerConfig {
    /// The address of the UDP socket the driver reads and writes for this peer; it is the
    /// peer's only ICE host candidate. Must be a concrete address (not 0.0.0.0): the browser
    /// sends its connectivity checks there.
    pub local_addr: SocketAddr,
    /// The video codec to offer or answer. VP8 or H.264 (Constrained Baseline,
    /// packetization-mode 1).
    pub codec: Codec,
    /// Carry the model encoder's frames (framed as VP8; `codec` must be VP8) under cg's own
    /// encoding name, [`crate::media::MODEL_ENCODING`]: only a peer configured the same way
    /// agrees, so a browser is refused at the offer. Default off.
    pub model: bool,
    /// Media SSRC announced in the SDP (`a=ssrc`); must be cg-rtp's `SenderConfig::ssrc`.
    pub ssrc: u32,
    /// RTX SSRC announced with `a=ssrc-group:FID`; cg-rtp's `SenderConfig::rtx_ssrc`.
    pub rtx_ssrc: u32,
    /// ECN code point of outgoing SRTP media datagrams (STUN, DTLS and SRTCP go Not-ECT, as cg
    /// sends RTCP in plain RTP mode). cg-rtp's `SenderConfig::ecn`. Default Not-ECT.
    pub media_ecn: Ecn,
    /// When a silent peer counts as gone. Default [`IceTimeouts::default`].
    pub ice_timeouts: IceTimeouts,
}

/// ICE's consent timers (RFC 8445 §16, RFC 7675): how long without anything heard from the
/// peer before the connection is `disconnected`, and how much longer before it is `failed`
/// and the peer should be dropped. Only the peer's STUN counts — its consent checks and its
/// answers to ours, which `rtc` sends every 2 s — not its RTCP: once a pair is selected `rtc`
/// (0.21) hands media and RTCP past its ICE agent. A live peer is therefore heard at least
/// every 2 s, and a peer that falls silent is `failed` between `disconnected + failed − 2 s`
/// and `disconnected + failed` later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IceTimeouts {
    /// Silence before `disconnected`. Default 5 s (`rtc`'s and libwebrtc's).
    pub disconnected: Duration,
    /// Further silence before `failed`. Default 25 s (`rtc`'s).
    pub failed: Duration,
}

impl Default for IceTimeouts {
    fn default() -> Self {
        IceTimeouts {
            disconnected: Duration::from_secs(5),
            failed: Duration::from_secs(25),
        }
    }
}

impl PeerConfig {
    /// A config for `local_addr` with cg-rtp's default SSRCs and VP8.
    pub fn new(local_addr: SocketAddr) -> Self {
        let s = cg_rtp::SenderConfig::default();
        Self {
            local_addr,
            codec: Codec::Vp8,
            model: false,
            ssrc: s.ssrc,
            rtx_ssrc: s.rtx_ssrc,
            media_ecn: Ecn::NotEct,
            ice_timeouts: IceTimeouts::default(),
        }
    }
}

/// Where the connection stands (`RTCPeerConnectionState`, W3C webrtc §4.3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PeerState {
    /// Negotiated; no ICE check has succeeded yet.
    Connecting,
    /// ICE and DTLS are up: media may flow.
    Connected,
    /// ICE lost the peer for a while (it may come back).
    Disconnected,
    /// ICE or DTLS failed for good: drop the peer and its socket.
    Failed,
    /// Closed by [`WebRtcPeer::close`] or by the remote end.
    Closed,
}

/// A datagram to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    /// Where to.
    pub destination: SocketAddr,
    /// The bytes (STUN, DTLS, SRTP or SRTCP).
    pub bytes: Bytes,
    /// ECN code point: [`PeerConfig::media_ecn`] for SRTP media, Not-ECT for the rest.
    pub ecn: Ecn,
}

/// One WebRTC peer connection. See the crate docs for how it is driven.
pub struct WebRtcPeer {
    pc: RTCPeerConnection,
    tap: TapHandle,
    local_addr: SocketAddr,
    codec: Codec,
    model: bool,
    media_ecn: Ecn,
    negotiated: Option<Negotiated>,
    state: PeerState,
    /// State changes not yet returned by [`Self::poll_state`].
    changes: std::collections::VecDeque<PeerState>,
}

impl WebRtcPeer {
    /// Answers a remote offer (WHEP: the viewer offers `recvonly` video, cg-send answers
    /// `sendonly`). Returns the peer and the complete answer SDP, with its host candidate
    /// (WHEP and WHIP do not trickle).
    ///
    /// A malformed offer is [`Error::BadSdp`], an offer without video [`Error::NoVideo`], one
    /// without the configured codec [`Error::NoCommonCodec`]; nothing is left behind.
    pub fn answer(cfg: &PeerConfig, offer: &str, now: Instant) -> Result<(Self, String), Error> {
        Self::answer_as(cfg, offer, now, true)
    }

    /// Answers a publisher's offer (WHIP: a browser offers `sendonly` video, cg-recv answers
    /// `recvonly`). The publisher's SSRCs come from its offer (`a=ssrc-group:FID`).
    pub fn answer_publisher(
        cfg: &PeerConfig,
        offer: &str,
        now: Instant,
    ) -> Result<(Self, String), Error> {
        Self::answer_as(cfg, offer, now, false)
    }

    fn answer_as(
        cfg: &PeerConfig,
        offer: &str,
        now: Instant,
        send: bool,
    ) -> Result<(Self, String), Error> {
        if cfg.local_addr.ip().is_unspecified() || cfg.local_addr.port() == 0 {
            return Err(Error::BadAddress(cfg.local_addr));
        }
        if !offer.lines().any(|l| l.starts_with("m=video ")) {
            if offer.lines().any(|l| l.starts_with("m=")) {
                return Err(Error::NoVideo);
            }
            return Err(Error::BadSdp("no media section".into()));
        }
        let (mut pc, tap) = connection(cfg, now)?;
        let offer = RTCSessionDescription::offer(offer.to_owned())
            .map_err(|e| Error::BadSdp(e.to_string()))?;
        let offer_sdp = offer.sdp.clone();
        pc.set_remote_description(now, offer)
            .map_err(|e| Error::BadSdp(e.to_string()))?;
        if send {
            add_video_track(&mut pc, cfg)?;
        }
        add_host_candidate(&mut pc, cfg.local_addr)?;
        let answer = pc.create_answer(None)?;
        pc.set_local_description(now, answer)?;
        let sdp = pc
            .local_description()
            .map(|d| candidates_where_accepted(&d.sdp))
            .ok_or_else(|| Error::BadSdp("no local description after answering".into()))?;
        let mut negotiated = Negotiated::from_sdp(&sdp)?;
        same_format(&negotiated, cfg.codec, cfg.model)?;
        if !send {
            // The media comes from the offerer: its SSRCs are in the offer.
            let theirs = Negotiated::from_sdp(&offer_sdp)?;
            negotiated.ssrc = theirs.ssrc;
            negotiated.rtx_ssrc = theirs.rtx_ssrc;
        }
        Ok((Self::new(cfg, pc, tap, Some(negotiated)), sdp))
    }

    /// Makes an offer to receive video (cg-recv as a WHEP client: it offers `recvonly`, the
    /// server answers with its stream). Returns the peer and the complete offer SDP with its
    /// host candidate; pass the answer to [`Self::accept_answer`].
    pub fn offer(cfg: &PeerConfig, now: Instant) -> Result<(Self, String), Error> {
        if cfg.local_addr.ip().is_unspecified() || cfg.local_addr.port() == 0 {
            return Err(Error::BadAddress(cfg.local_addr));
        }
        let (mut pc, tap) = connection(cfg, now)?;
        pc.add_transceiver_from_kind(
            RtpCodecKind::Video,
            Some(RTCRtpTransceiverInit {
                direction: RTCRtpTransceiverDirection::Recvonly,
                streams: vec![],
                send_encodings: vec![],
            }),
        )?;
        add_host_candidate(&mut pc, cfg.local_addr)?;
        let offer = pc.create_offer(None)?;
        pc.set_local_description(now, offer)?;
        let sdp = pc
            .local_description()
            .map(|d| d.sdp)
            .ok_or_else(|| Error::BadSdp("no local description after offering".into()))?;
        Ok((Self::new(cfg, pc, tap, None), sdp))
    }

    /// The answer to [`Self::offer`]. A malformed answer or one without the offered codec
    /// is an error and leaves the peer unconnected.
    pub fn accept_answer(&mut self, answer: &str, now: Instant) -> Result<(), Error> {
        let negotiated = Negotiated::from_sdp(answer)?;
        same_format(&negotiated, self.codec, self.model)?;
        let answer = RTCSessionDescription::answer(answer.to_owned())
            .map_err(|e| Error::BadSdp(e.to_string()))?;
        self.pc
            .set_remote_description(now, answer)
            .map_err(|e| Error::BadSdp(e.to_string()))?;
        self.negotiated = Some(negotiated);
        self.drain_events();
        Ok(())
    }

    fn new(cfg: &PeerConfig, pc: RTCPeerConnection, tap: TapHandle, n: Option<Negotiated>) -> Self {
        Self {
            pc,
            tap,
            local_addr: cfg.local_addr,
            codec: cfg.codec,
            model: cfg.model,
            media_ecn: cfg.media_ecn,
            negotiated: n,
            state: PeerState::Connecting,
            changes: Default::default(),
        }
    }

    /// A datagram from the network, with the ECN code point it arrived with. Decrypted RTP
    /// and RTCP come out of [`Self::poll_inbound`]. An error (a datagram that is not STUN,
    /// DTLS or SRTP of this peer, a failed decryption) drops that datagram only.
    pub fn handle_datagram(
        &mut self,
        now: Instant,
        from: SocketAddr,
        data: &[u8],
        ecn: Ecn,
    ) -> Result<(), Error> {
        self.tap
            .lock()
            .expect("tap mutex: never held across a panic")
            .ecn = ecn;
        let r = self.pc.handle_read(TaggedBytesMut {
            now,
            transport: TransportContext {
                local_addr: self.local_addr,
                peer_addr: from,
                ecn: None,
                transport_protocol: TransportProtocol::UDP,
            },
            message: BytesMut::from(data),
        });
        self.drain_events();
        Ok(r?)
    }

    /// Sends one RTP packet written by cg-rtp (already complete: header, extensions, payload);
    /// `rtc` only encrypts it. Until the peer is [`PeerState::Connected`] there are no SRTP
    /// keys and the packet is dropped by `rtc`. `rtc` takes a parsed packet: parsing `Bytes`
    /// shares the payload instead of copying it.
    pub fn send_rtp(&mut self, now: Instant, mut packet: Bytes) -> Result<(), Error> {
        let p = rtc::rtp::Packet::unmarshal(&mut packet).map_err(|e| Error::BadPacket {
            kind: "RTP",
            reason: e.to_string(),
        })?;
        self.pc.handle_write(TaggedRTCMessage {
            now,
            // The track id is not read on the write path; an empty one allocates nothing.
            message: RTCMessage::RtpPacket(String::new(), p),
        })?;
        Ok(())
    }

    /// Sends one (compound) RTCP packet written by cg-rtp, unparsed: `rtc` only encrypts it.
    pub fn send_rtcp(&mut self, now: Instant, packet: Bytes) -> Result<(), Error> {
        if packet.len() < 4 || packet[0] >> 6 != 2 || !(192..=223).contains(&packet[1]) {
            return Err(Error::BadPacket {
                kind: "RTCP",
                reason: "no RTCP header (version 2, packet type 192-223)".into(),
            });
        }
        let raw = rtc::rtcp::raw_packet::RawPacket(packet);
        self.pc.handle_write(TaggedRTCMessage {
            now,
            message: RTCMessage::RtcpPacket(String::new(), vec![Box::new(raw)]),
        })?;
        Ok(())
    }

    /// Runs `rtc`'s timers (ICE checks and keep-alives, DTLS retransmissions).
    pub fn handle_timeout(&mut self, now: Instant) -> Result<(), Error> {
        let r = self.pc.handle_timeout(now);
        self.drain_events();
        Ok(r?)
    }

    /// Closes the connection (a DTLS close_notify goes out through [`Self::poll_transmit`]).
    pub fn close(&mut self) -> Result<(), Error> {
        let r = self.pc.close();
        self.set_state(PeerState::Closed);
        Ok(r?)
    }

    /// The next datagram to send.
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        let m = self.pc.poll_write()?;
        let bytes = m.message.freeze();
        let ecn = if is_srtp_media(&bytes) {
            self.media_ecn
        } else {
            Ecn::NotEct
        };
        Some(Transmit {
            destination: m.transport.peer_addr,
            bytes,
            ecn,
        })
    }

    /// The next decrypted RTP or RTCP packet from the remote peer, for cg-rtp's session.
    pub fn poll_inbound(&mut self) -> Option<Inbound> {
        self.tap
            .lock()
            .expect("tap mutex: never held across a panic")
            .inbound
            .pop_front()
    }

    /// The next change of [`PeerState`], oldest first.
    pub fn poll_state(&mut self) -> Option<PeerState> {
        self.drain_events();
        self.changes.pop_front()
    }

    /// When [`Self::handle_timeout`] is due next.
    pub fn poll_timeout(&mut self) -> Option<Instant> {
        self.pc.poll_timeout()
    }

    /// What the offer/answer settled; `None` for an offerer until
    /// [`Self::accept_answer`].
    pub fn negotiated(&self) -> Option<&Negotiated> {
        self.negotiated.as_ref()
    }

    /// The connection's state now.
    pub fn state(&self) -> PeerState {
        self.state
    }

    /// Decrypted packets the tap could not hand over (a re-marshal failure); 0 in a healthy
    /// session.
    pub fn unmarshalable(&self) -> u64 {
        self.tap
            .lock()
            .expect("tap mutex: never held across a panic")
            .unmarshalable
    }

    fn drain_events(&mut self) {
        while let Some(e) = self.pc.poll_event() {
            if let RTCPeerConnectionEvent::OnConnectionStateChangeEvent(s) = e {
                let s = match s {
                    RTCPeerConnectionState::Connected => PeerState::Connected,
                    RTCPeerConnectionState::Disconnected => PeerState::Disconnected,
                    RTCPeerConnectionState::Failed => PeerState::Failed,
                    RTCPeerConnectionState::Closed => PeerState::Closed,
                    _ => PeerState::Connecting,
                };
                self.set_state(s);
            }
        }
        // Application reads (`RTCMessage`s past the endpoint) never carry anything: the tap
        // takes every packet before the endpoint. Drain them so nothing accumulates.
        while self.pc.poll_read().is_some() {}
    }

    fn set_state(&mut self, s: PeerState) {
        if s != self.state {
            self.state = s;
            self.changes.push_back(s);
        }
    }
}

/// An `rtc` peer connection with cg's settings, media engine and tap.
fn connection(cfg: &PeerConfig, now: Instant) -> Result<(RTCPeerConnection, TapHandle), Error> {
    let tap: TapHandle = Arc::new(Mutex::new(Default::default()));
    let pc = RTCPeerConnectionBuilder::new()
        .with_setting_engine(
            SettingEngineBuilder::new()
                // The default (QueryOnly) sends mDNS queries to 224.0.0.251; a browser's
                // checks teach ICE a peer-reflexive candidate instead.
                .with_multicast_dns_mode(MulticastDnsMode::Disabled)
                // The profile every WebRTC endpoint implements (RFC 8827 §6.5) and the one
                // Chromium picks: its 10-byte tag is `SRTP_OVERHEAD`.
                // The answerer is the DTLS server: the offerer's first flight then follows its
                // own ICE success, which the answerer (ICE-controlled) has already seen. As the
                // client, the answerer's ClientHello can beat the offerer's ICE success and is
                // dropped by `rtc` as offerer, costing a 1 s DTLS retransmission (measured:
                // cg ↔ cg connected after 1.12 s with 10 ms one way; as server, below).
                .with_answering_dtls_role(RTCDtlsRole::Server)
                // `None`: rtc's keep-alive interval (2 s) when no media flows.
                .with_ice_timeouts(
                    Some(cfg.ice_timeouts.disconnected),
                    Some(cfg.ice_timeouts.failed),
                    None,
                )
                .with_srtp_protection_profiles(vec![
                    SrtpProtectionProfile::Srtp_Aes128_Cm_Hmac_Sha1_80,
                ])
                .build(),
        )
        .with_media_engine(media_engine(cfg.codec, cfg.model)?)
        .with_interceptor_registry(
            Registry::new().with(Slot::from(TAP_SLOT), Tap::new(tap.clone())),
        )
        .build(now)?;
    Ok((pc, tap))
}

/// cg's video track with its SSRCs, to send only: a viewer that offers `sendrecv` video (as
/// some WHEP players do) is answered `sendonly`, as WHEP means it, rather than `sendrecv`.
fn add_video_track(pc: &mut RTCPeerConnection, cfg: &PeerConfig) -> Result<(), Error> {
    let sender = pc
        .add_track(MediaStreamTrack::new(
            STREAM_ID.into(),
            TRACK_ID.into(),
            TRACK_ID.into(),
            RtpCodecKind::Video,
            vec![RTCRtpEncodingParameters {
                rtp_coding_parameters: RTCRtpCodingParameters {
                    ssrc: Some(cfg.ssrc),
                    rtx: Some(RTCRtpRtxParameters { ssrc: cfg.rtx_ssrc }),
                    ..Default::default()
                },
                codec: rtp_codec(cfg.codec, cfg.model)?,
                active: true,
                ..Default::default()
            }],
        ))
        .map_err(|e| match e {
            rtc::shared::error::Error::ErrRTPTransceiverCodecUnsupported => {
                Error::NoCommonCodec(codec_name(cfg.codec, cfg.model))
            }
            e => Error::Rtc(e),
        })?;
    if let Some(mut t) = pc.rtp_transceiver(sender.into()) {
        t.set_direction(RTCRtpTransceiverDirection::Sendonly);
    }
    Ok(())
}

/// `answer` with its ICE candidates in the first media section it accepts.
///
/// webrtc-rs's `rtc` core (0.21) writes the candidates into the answer's first media section
/// whatever it answered there. An offer whose first section cg rejects (audio before the
/// video, as most WHEP players offer) then had them only in a section with port 0, which a
/// browser does not read (RFC 8843 §7.3.1: the answerer's transport is the BUNDLE-tagged,
/// accepted section), so it had no address of ours to check and never connected. Moving them
/// is the one repair: nothing else in the answer names a transport address.
fn candidates_where_accepted(answer: &str) -> String {
    let is_candidate = |l: &str| l.starts_with("a=candidate:") || l == "a=end-of-candidates";
    let rejected = |section: &[&str]| section[0].split(' ').nth(1) == Some("0");
    let mut sections: Vec<Vec<&str>> = vec![Vec::new()];
    for line in answer.split("\r\n").filter(|l| !l.is_empty()) {
        if line.starts_with("m=") {
            sections.push(Vec::new());
        }
        sections.last_mut().expect("starts with one").push(line);
    }
    let media = &mut sections[1..];
    let Some(accepted) = media.iter().position(|m| !rejected(m)) else {
        return answer.to_owned();
    };
    let mut moved: Vec<&str> = Vec::new();
    for m in media.iter_mut().filter(|m| rejected(m)) {
        moved.extend(m.iter().filter(|l| is_candidate(l)));
        m.retain(|l| !is_candidate(l));
    }
    let target = &mut media[accepted];
    for c in moved {
        if !target.contains(&c) {
            target.push(c);
        }
    }
    let mut out = String::with_capacity(answer.len());
    for line in sections.iter().flatten() {
        out.push_str(line);
        out.push_str("\r\n");
    }
    out
}

/// The peer's one ICE candidate: the host address of its socket.
fn add_host_candidate(pc: &mut RTCPeerConnection, addr: SocketAddr) -> Result<(), Error> {
    let host = CandidateHostConfig {
        base_config: CandidateConfig {
            network: "udp".to_owned(),
            address: addr.ip().to_string(),
            port: addr.port(),
            component: 1,
            ..Default::default()
        },
        ..Default::default()
    }
    .new_candidate_host()?;
    pc.add_local_candidate(RTCIceCandidate::from(&host).to_json()?)?;
    Ok(())
}

/// SRTP media (RFC 7983 §7: first byte 128–191 is RTP or RTCP; RFC 5761 §4: a second byte of
/// 192–223 is RTCP).
fn is_srtp_media(b: &[u8]) -> bool {
    b.len() >= 2 && (128..=191).contains(&b[0]) && !(192..=223).contains(&b[1])
}

/// Whether the negotiation settled on the codec (and model framing) this peer was set up for.
fn same_format(n: &Negotiated, codec: Codec, model: bool) -> Result<(), Error> {
    if (n.codec, n.model) == (codec, model) {
        Ok(())
    } else {
        Err(Error::NoCommonCodec(codec_name(codec, model)))
    }
}

fn codec_name(c: Codec, model: bool) -> &'static str {
    if model {
        return "CG-MODEL (the model encoder's frames, which only cg-recv --codec model views)";
    }
    match c {
        Codec::Vp8 => "VP8",
        Codec::H264 => "H.264",
        Codec::H265 => "H.265",
    }
}
