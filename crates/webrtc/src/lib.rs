//! WebRTC for cg: a sans-IO peer connection in which webrtc-rs's `rtc` core (0.21) does only
//! what cg lacks — ICE (host candidates, peer-reflexive ones learnt from the browser's checks),
//! DTLS-SRTP and SDP offer/answer — and cg-rtp's sessions keep every media and feedback packet:
//! packetizers, pacer, REMB / transport-wide CC / RFC 8888 with ECN, NACK/RTX, the circuit
//! breaker and the congestion controllers.
//!
//! # Why `rtc`, and why only this much of it
//! `rtc` is the sans-IO core of webrtc-rs and the one maintained Rust implementation of the WebRTC
//! security layers; cg does not write its own DTLS or ICE. Its media path is not used: its
//! interceptors would generate a second set of feedback, its pacer runs on a 1 ms tick, and its
//! async driver drops ECN on receive, so L4S would be lost (str0m, the other sans-IO option, has no
//! RFC 8888 feedback, no ECN and no controller hook). Instead the registry holds one interceptor,
//! the [tap](crate::Inbound): every decrypted RTP/RTCP packet goes from it to cg, and cg's packets
//! go out through `rtc` only to be encrypted.
//!
//! # How it is driven
//! Like cg-rtp's sessions: no sockets, no clock, no threads. The driver owns the UDP socket of
//! this peer and loops:
//!
//! ```text
//! peer.handle_datagram(now, from, &bytes, ecn)?;   // every datagram on the socket
//! peer.handle_timeout(now)?;                       // when poll_timeout() is due
//! peer.send_rtp(now, &rtp)?; peer.send_rtcp(now, &rtcp)?;   // cg-rtp's poll_transmit output
//! while let Some(t) = peer.poll_transmit() { socket.send_to(&t.bytes, t.destination, t.ecn) }
//! while let Some(p) = peer.poll_inbound() { session.handle_input(&p.bytes, p.ecn, p.at) }
//! while let Some(s) = peer.poll_state() { /* Connected: start media; Failed: drop the peer */ }
//! ```
//!
//! # Time model
//! `now: Instant` from the driver, never read inside. `rtc` uses it for ICE and DTLS timers;
//! the DTLS certificate's validity is the one wall-clock value (set at construction by `rtc`).
//!
//! # What is on the wire
//! SRTP media datagrams carry [`PeerConfig::media_ecn`]; STUN, DTLS and SRTCP go Not-ECT. The
//! ECN code point of a received datagram reaches cg's feedback with the decrypted packet
//! ([`Inbound::ecn`]): `rtc`'s ICE handler drops it from the transport context, so the peer
//! carries it around the (synchronous) read pipeline itself. The SRTP authentication tag (10
//! bytes with AES_CM_128_HMAC_SHA1_80, which Chromium picks) comes on top of each RTP packet.
//!
//! # Running a cg-rtp session over it
//! [`WebRtcSession`] wraps a [`WebRtcPeer`] and a cg-rtp `SenderSession` or `ReceiverSession`
//! configured from [`Negotiated`] (payload types, extension ids, SSRCs, and
//! [`SRTP_OVERHEAD`] as the sender's transport overhead), and implements cg-net's `Session`
//! for a driver with a learned peer (`cg_net::Peer::Learned`: ICE decides where datagrams go).
//! cg-send answers WHEP viewers with it, cg-recv offers as a WHEP client, and cg-recv answers
//! WHIP publishers ([`WebRtcPeer::answer_publisher`]).
//!
//! # Limits today
//! One video track. A decrypted RTCP packet is re-marshalled from `rtc-rtcp`'s parse, so a
//! compound packet with one malformed part is dropped whole by `rtc` before the tap sees it.
//! `rtc`'s RTP packet type keeps at most 4 bytes of padding (it strips padding when parsing
//! and re-pads to a multiple of 4): cg's own probes therefore carry payload
//! (`SenderConfig::payload_padding`), and a browser's padding-only probe packets reach
//! cg-rtp 4 bytes long, which only a receive-side (REMB) estimator would notice.

/// Bytes SRTP adds to every RTP packet: the AES_CM_128_HMAC_SHA1_80 authentication tag
/// (RFC 3711 §4.2, 80 bits), the only profile cg negotiates (every WebRTC endpoint implements
/// it, RFC 8827 §6.5, and Chromium picks it). cg-rtp's `SenderConfig::transport_overhead`.
pub const SRTP_OVERHEAD: usize = 10;

mod error;
#[cfg(feature = "http")]
pub mod http;
pub mod media;
mod negotiated;
mod peer;
mod session;
mod tap;

pub use error::Error;
pub use negotiated::{Feedback, Negotiated};
pub use peer::{IceTimeouts, PeerConfig, PeerState, Transmit, WebRtcPeer};
pub use session::{RtpSession, WebRtcEvent, WebRtcSession};
pub use tap::Inbound;
