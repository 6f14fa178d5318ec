//! What travels between the simulated endpoints.

use std::time::{Duration, Instant};

use cg_types::{Bitrate, DataSize, RemoteTime};

use crate::controller::{LossReport, PacketResult};

/// A packet in a controller simulation (the `Payload` of [`cg_link::sim::Endpoint`]).
#[derive(Debug, Clone, PartialEq)]
pub enum SimPacket {
    /// Sender → receiver media.
    Media(MediaPacket),
    /// Receiver → sender feedback.
    Feedback(FeedbackMessage),
    /// Sender → receiver data of a simulated TCP bulk flow ([`crate::sim::TcpSender`]).
    TcpSegment(TcpSegment),
    /// Receiver → sender acknowledgement of one TCP segment ([`crate::sim::TcpReceiver`]).
    TcpAck(TcpAck),
    /// Sender → sink datagram of a constant-bit-rate flow ([`crate::sim::CbrSender`]).
    Datagram(Datagram),
}

/// One RTP-like media packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MediaPacket {
    /// Transport-wide sequence number.
    pub seq: u64,
    /// Frame number (the RTP timestamp's role: packets of one frame share it).
    pub frame: u64,
    /// Send time on the sender's clock (what abs-send-time carries).
    pub send_time: Instant,
    /// Size counted by the controller (equals the size on the wire in the simulation).
    pub size: DataSize,
    /// Last packet of its frame (RTP marker bit).
    pub marker: bool,
    /// Padding sent for a probe ([`crate::ControllerEvent::Probe`]): no payload; `frame` is
    /// the last frame sent (cg-rtp's padding carries the last media RTP timestamp). The
    /// receiver feeds it to a receive-side estimator as [`crate::PacketKind::Padding`], as
    /// cg-rtp's receiver does.
    pub padding: bool,
}

/// One full-sized segment of a simulated TCP flow. Its size on the wire is the
/// [`Transmit`](cg_link::sim::Transmit)'s (`TcpConfig::mss`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpSegment {
    /// Segment number: 0, 1, 2, … in send order (never reused: a lost segment is not
    /// retransmitted, see [`crate::sim::tcp`]).
    pub seq: u64,
    /// Send time on the sender's clock (what the TCP timestamp option's TSval carries).
    pub sent: Instant,
}

/// One datagram of a constant-bit-rate flow. Its size on the wire is the
/// [`Transmit`](cg_link::sim::Transmit)'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Datagram {
    /// Datagram number: 0, 1, 2, … in send order.
    pub seq: u64,
    /// Send time on the sender's clock (what netlab's UDP sender writes into its payload).
    pub sent: Instant,
}

/// The acknowledgement of one TCP segment (a SACK of exactly that segment, in effect).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpAck {
    /// The segment acknowledged.
    pub seq: u64,
    /// The segment arrived CE-marked: the ACK carries ECE (RFC 3168 §6.1.3).
    pub ce: bool,
    /// The segment's [`TcpSegment::sent`], echoed (TSecr, RFC 7323 §4.3) for an RTT sample.
    pub sent: Instant,
}

/// One feedback datagram: any combination of per-packet results, REMB, RR.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FeedbackMessage {
    /// Transport-wide CC or RFC 8888 results, in sequence order.
    pub packets: Vec<PacketResult>,
    /// A REMB value.
    pub remb: Option<Bitrate>,
    /// RR loss figures.
    pub loss: Option<LossReport>,
    /// For RTT: the newest sequence number received and how long the receiver held it
    /// before sending this message (the role of RR's LSR/DLSR).
    pub echo: Option<(u64, Duration)>,
    /// When the receiver wrote the message, on its clock (RFC 8888 reports only).
    pub report_time: Option<RemoteTime>,
}

impl FeedbackMessage {
    /// An approximate wire size: RTCP header plus per-packet status and timestamps
    /// (transport-wide CC: ~2 bytes per packet, RFC 8888: 2 bytes per packet), REMB 20 bytes,
    /// RR block 32 bytes, IP/UDP 28 bytes.
    pub fn wire_size(&self) -> DataSize {
        let mut b = 28 + 20 + 2 * self.packets.len() as u64;
        if self.remb.is_some() {
            b += 20;
        }
        if self.loss.is_some() {
            b += 32;
        }
        DataSize::bytes(b)
    }
}
