//! Sans-IO RTP/RTCP sessions for real-time video: packetizers (VP8, H.264, H.265), a pacer,
//! feedback for every congestion controller in `cg-cc` (RR + REMB, transport-wide CC, RFC 8888
//! with ECN), NACK/RTX, PLI/FIR, sender reports and the RFC 8083 circuit breaker.
//!
//! # How it is driven
//!
//! Two state machines, [`SenderSession`] and [`ReceiverSession`], in the style of quinn-proto's
//! `Connection` and str0m's `Rtc`: no sockets, no clock, no threads. A
//! driver (cg-net's tokio task, or cg-link's simulator in the tests) owns the socket and the
//! clock and loops:
//!
//! ```text
//! loop {
//!     // 1. inputs
//!     session.handle_input(&datagram, ecn, now);        // every UDP datagram from the peer
//!     sender.push_frame(frame, now)?;                    // sender only: an encoded frame
//!     session.handle_timeout(now);                       // when poll_timeout() is due
//!     // 2. outputs, drained until None
//!     while let Some(t) = session.poll_transmit(now) { socket.send(&t.bytes, t.ecn) }
//!     while let Some(e) = session.poll_event() { /* key-frame request, frame out, … */ }
//!     // 3. sleep until session.poll_timeout() or the next datagram / frame
//! }
//! ```
//!
//! Both sessions take every datagram through `handle_input(&[u8], Ecn, now)` and demultiplex
//! RTP from RTCP themselves (RFC 5761 §4: RTCP packet types 192–223 in the second byte), so
//! one socket per direction is enough. Bad datagrams never panic: they are counted in the
//! session's stats and dropped (`handle_input` also returns the typed [`Error`] for logging).
//!
//! # Time model
//!
//! `now: Instant` is the local clock of the side running the code and must not go backwards
//! (a backwards step is treated as no time passing). Wall-clock values on the wire (SR NTP
//! timestamps, abs-send-time, abs-capture-time, the RFC 8888 report timestamp) come from a
//! [`NtpClock`]: the session's start `Instant` paired with the NTP time at that instant, which
//! the driver reads once from the system clock ([`SenderConfig::ntp_at_start`]; the default 0
//! gives session-relative NTP, which is what the simulations use). Glass-to-glass latency
//! ([`ReceivedFrame::capture_time`]) is exact when both ends map the same wall clock.
//!
//! # What goes on the wire
//!
//! - RTP (RFC 3550) with RFC 8285 one-byte header extensions, ids configurable in
//!   [`ExtensionIds`]: `abs-send-time` (id 1,
//!   `http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time`, for receiver-side GCC),
//!   transport-wide sequence number (id 2,
//!   `http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01`) and
//!   abs-capture-time (id 3, `http://www.webrtc.org/experiments/rtp-hdrext/abs-capture-time`,
//!   the 64-bit NTP capture timestamp of the frame, on the first packet of every frame),
//!   playout-delay (id 4, when the sender asks limits) and video-timing (id 5,
//!   `http://www.webrtc.org/experiments/rtp-hdrext/video-timing`, the frame's encoder,
//!   packetization and pacer-exit times after capture, on its last packet; [`VideoTiming`]).
//! - Sequence numbers, RTP and transport-wide, are assigned as packets leave the pacer, so
//!   frames the pacer drops (queue bound, SCReAM's `DiscardQueue`) leave no gap the receiver
//!   would count as loss and NACK; after such a drop the sender refuses delta frames until a
//!   key frame (module `session_sender`).
//! - Retransmissions and padding on a separate RTX stream (RFC 4588: own SSRC and payload type,
//!   original sequence number in the first two payload bytes), so that RFC 8888 reports,
//!   which are keyed by RTP sequence number, never see a sequence number twice.
//! - RTCP: SR, RR + SDES (compound, RFC 3550 §6.1), and reduced-size feedback (RFC 5506):
//!   REMB, transport-wide CC, RFC 8888 CCFB, generic NACK, PLI; FIR is parsed; BYE
//!   (RFC 3550 §6.6) when the sender closes, which the receiver reports.
//!
//! Wire types come from webrtc-rs's `rtc-rtp` / `rtc-rtcp` 0.21. Our own code exists where they
//! lack something: the RFC 8888 codec ([`rtcp::ccfb`], because `rtc-rtcp`'s `CcFeedbackReport`
//! hard-codes `num_reports = count` and SCReAM's reference uses `count − 1`, see
//! [`NumReportsConvention`]); building and unwrapping transport-wide CC reports
//! ([`rtcp::twcc`], `rtc-rtcp` only has the chunk structs); and the codec payloaders
//! ([`codec`]): `rtc-rtp`'s H.265 depacketizer does not produce a byte stream, and its H.264
//! STAP-A depacketizer indexes past the end of a truncated aggregate and panics (test
//! `codec::h264::tests::rtc_rtp_stap_a_depacketizer_panics_where_ours_returns_an_error`), so we
//! own the codecs and keep them fuzzed. `rtc-rtcp`'s `TransportLayerCc::unmarshal` overflows
//! on a length field of 0xFFFF when called directly (fuzz target `rtc_rtcp_unmarshal`); our
//! [`rtcp::parse`] checks every length against the datagram first, so it never sees one.
//!
//! # Congestion control
//!
//! The sender owns a `Box<dyn cg_cc::Controller>` (built from a `ControllerConfig` or passed in).
//! It reports every packet it sends and every feedback report it parses, paces at
//! [`cg_cc::Controller::pacing_rate`] and, for window-based controllers, within
//! [`cg_cc::Controller::send_allowance`]. The receiver's feedback generator follows
//! [`ReceiverConfig::feedback`], which must match the controller's `feedback_kind()`; in REMB
//! mode the receiver runs a [`cg_cc::ReceiveSideEstimator`].

//! # API in brief
//!
//! - [`SenderSession::new`]`(SenderConfig, Box<dyn Controller>, now)` (or
//!   [`SenderSession::with_controller_config`]); [`SenderSession::push_frame`] takes an
//!   [`EncodedFrame`]; [`SenderSession::target_bitrate`] is the encoder's rate;
//!   [`SenderEvent`]s ask for key frames ([`KeyFrameReason`]: PLI, FIR, queue overflow,
//!   controller discard, circuit-breaker recovery), report dropped frames (media the pacer
//!   dropped, and delta frames refused until the key frame that follows) and circuit-breaker
//!   changes ([`BreakerState`]).
//! - [`ReceiverSession::new`]`(ReceiverConfig, Option<Box<dyn ReceiveSideEstimator>>, now)`;
//!   [`ReceiverEvent::Frame`] hands out decodable [`ReceivedFrame`]s in order;
//!   [`ReceiverEvent::Bye`] (and [`ReceiverStats::bye_received`]) tells a clean end of the
//!   stream from a sender that fell silent;
//!   [`ReceiverSession::request_key_frame`] sends a PLI on the decoder's behalf.
//! - Both: `handle_input`, `handle_timeout`, `poll_transmit` → [`Transmit`], `poll_timeout`,
//!   `poll_event`, `stats`.
//! - Pieces usable alone: [`pacer::Pacer`], [`codec`] (payloaders), [`rtcp`] (parse/build,
//!   [`rtcp::ccfb`], [`rtcp::twcc`]).
//!
//! # Verification
//!
//! Unit tests sit at the bottom of each file. `tests/session.rs` runs both sessions over a
//! fixed-delay wire with a trivial controller (bit-exact frames for all codecs, each feedback
//! kind, NACK repair, PLI, pacer bound and discards leaving no sequence gap, circuit breaker,
//! hostile input); `tests/e2e_sim.rs`
//! runs them with cg-cc's GCC and SCReAM over cg-link's simulated bottlenecks;
//! `tests/tshark.rs` has Wireshark decode a capture of our traffic. `fuzz/` (its own
//! workspace, `cargo +nightly fuzz run <target>`) has a target per parser, ours and
//! `rtc-rtp`/`rtc-rtcp`'s. `benches/session.rs` measures the sans-IO throughput.
//!
//! Measured 2026-11-21 (`cargo bench -p cg-rtp -- --warm-up-time 1 --measurement-time 3`, 2
//! shared cores under a load average of ~14 from parallel builds, so lower bounds): packetize,
//! pace and serialize 332 MiB/s ≈ 2.8 Gbit/s of 1200-byte payloads (100-packet frames);
//! receiver 118 k packets/s with RFC 8888 feedback, 226 k packets/s with transport-wide CC
//! (frame assembly and depacketization included). End to end over cg-link at 2 Mbit/s DT/300,
//! `tests/e2e_sim.rs` holds every controller to U ≥ 0.85 and a queue p95 ≤ 100 ms over
//! [10 s, 60 s], SCReAM ECT(1) through DualPI2 to a queue p95 ≤ 5 ms (figures it printed:
//! `docs/notes/2026-12-01-figures-from-docs.md`).

mod codec_frame;
mod error;
mod history;
mod rtp_packet;
mod seq;
mod session_receiver;
mod session_sender;
mod time;

pub mod codec;
pub mod pacer;
pub mod rtcp;

pub use codec_frame::{Codec, EncodedFrame, ReceivedFrame};
pub use error::Error;
pub use rtp_packet::{ExtensionIds, PlayoutDelay, VideoTiming};
pub use session_receiver::{
    FeedbackConfig, ReceiverConfig, ReceiverEvent, ReceiverSession, ReceiverStats,
};
pub use session_sender::{
    BreakerState, FeedbackLossResponse, KeyFrameReason, PayloadTypes, SenderConfig, SenderEvent,
    SenderSession, SenderStats,
};
pub use time::NtpClock;

pub use rtcp::ccfb::NumReportsConvention;

/// Entry points for the fuzz targets (`crates/rtp/fuzz`), behind the `fuzzing` feature: the
/// crate's internal parsers, which no public type reaches on its own. Not an API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing {
    pub use crate::rtp_packet::parse_and_rewrite_rtp;
}

use cg_types::Ecn;

/// A datagram to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    /// The UDP payload: one RTP packet or one (compound) RTCP packet.
    pub bytes: bytes::Bytes,
    /// The ECN code point to mark it with.
    pub ecn: Ecn,
    /// What it is, for drivers that count or prioritise.
    pub kind: TransmitKind,
}

/// What a [`Transmit`] carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransmitKind {
    /// RTP media (first transmission).
    Media,
    /// RTP retransmission on the RTX stream.
    Retransmission,
    /// RTP padding on the RTX stream (probing).
    Padding,
    /// RTCP.
    Rtcp,
}
