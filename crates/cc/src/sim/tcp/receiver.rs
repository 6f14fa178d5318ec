//! The TCP receiver: one ACK per segment, echoing CE and the send time.

use std::collections::VecDeque;
use std::time::Instant;

use cg_link::sim::{Delivered, Endpoint, Transmit};
use cg_types::{DataSize, Ecn};

use super::TcpConfig;
use crate::sim::packet::{SimPacket, TcpAck};

/// ACKs waiting for the harness to take them: it polls after every delivery, so a handful at
/// most; beyond this many the oldest are dropped (no unbounded growth with a careless driver).
const MAX_PENDING: usize = 1 << 16;

/// Acknowledges every [`TcpSegment`](crate::sim::TcpSegment) with a
/// [`TcpAck`] of `ack_size` bytes, sent Not-ECT (RFC 3168 §6.1.4: pure ACKs are not
/// ECN-capable). Linux delays ACKs to every second full-sized segment (RFC 5681 §4.2); one
/// per segment makes the ACK clock slightly smoother (half the burst per ACK) and doubles
/// the ACK traffic to 64 bytes per 1500-byte segment, 4 % of the forward rate, which a
/// 100 Mbit/s return path carries without a queue: the difference does not matter here.
#[derive(Debug, Clone)]
pub struct TcpReceiver {
    ack_size: DataSize,
    pending: VecDeque<TcpAck>,
    segments_received: u64,
    bytes_received: DataSize,
    ce_received: u64,
}

impl TcpReceiver {
    /// A receiver answering with ACKs of `cfg.ack_size` (at least 1 byte).
    pub fn new(cfg: &TcpConfig) -> Self {
        TcpReceiver {
            ack_size: cfg.ack_size.max(DataSize::bytes(1)),
            pending: VecDeque::new(),
            segments_received: 0,
            bytes_received: DataSize::ZERO,
            ce_received: 0,
        }
    }

    /// Segments received (duplicates made by the link included).
    pub fn segments_received(&self) -> u64 {
        self.segments_received
    }

    /// Bytes on the wire of the segments received.
    pub fn bytes_received(&self) -> DataSize {
        self.bytes_received
    }

    /// Segments that arrived CE-marked.
    pub fn ce_received(&self) -> u64 {
        self.ce_received
    }
}

impl Endpoint for TcpReceiver {
    type Payload = SimPacket;

    fn handle_packet(&mut self, packet: Delivered<SimPacket>, _now: Instant) {
        let SimPacket::TcpSegment(seg) = packet.payload else {
            return;
        };
        let ce = packet.ecn == Ecn::Ce;
        self.segments_received += 1;
        self.bytes_received += packet.size;
        self.ce_received += u64::from(ce);
        if self.pending.len() >= MAX_PENDING {
            self.pending.pop_front();
        }
        self.pending.push_back(TcpAck {
            seq: seg.seq,
            ce,
            sent: seg.sent,
        });
    }

    fn poll_transmit(&mut self, _now: Instant) -> Option<Transmit<SimPacket>> {
        let ack = self.pending.pop_front()?;
        Some(Transmit {
            size: self.ack_size,
            ecn: Ecn::NotEct,
            payload: SimPacket::TcpAck(ack),
        })
    }

    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    fn handle_timeout(&mut self, _now: Instant) {}
}

#[cfg(test)]
mod tests {
    use cg_link::FlowId;

    use super::*;
    use crate::sim::packet::{MediaPacket, TcpSegment};

    fn delivered(payload: SimPacket, ecn: Ecn) -> Delivered<SimPacket> {
        Delivered {
            size: DataSize::bytes(1500),
            ecn,
            payload,
            flow: FlowId::from_index(0),
        }
    }

    #[test]
    fn every_segment_is_acked_with_its_ce_and_send_time() {
        let t0 = Instant::now();
        let mut rx = TcpReceiver::new(&TcpConfig::default());
        for (seq, ecn) in [(0, Ecn::Ect0), (1, Ecn::Ce), (3, Ecn::Ect0)] {
            let seg = TcpSegment { seq, sent: t0 };
            rx.handle_packet(delivered(SimPacket::TcpSegment(seg), ecn), t0);
        }
        let acks: Vec<_> = std::iter::from_fn(|| rx.poll_transmit(t0)).collect();
        let seen: Vec<_> = acks
            .iter()
            .map(|t| match &t.payload {
                SimPacket::TcpAck(a) => (a.seq, a.ce, a.sent == t0, t.size.as_bytes(), t.ecn),
                other => panic!("not an ACK: {other:?}"),
            })
            .collect();
        assert_eq!(
            seen,
            [
                (0, false, true, 64, Ecn::NotEct),
                (1, true, true, 64, Ecn::NotEct),
                (3, false, true, 64, Ecn::NotEct)
            ]
        );
        assert_eq!(rx.segments_received(), 3);
        assert_eq!(rx.bytes_received(), DataSize::bytes(4500));
        assert_eq!(rx.ce_received(), 1);
    }

    #[test]
    fn media_packets_are_ignored() {
        let t0 = Instant::now();
        let mut rx = TcpReceiver::new(&TcpConfig::default());
        let m = MediaPacket {
            seq: 0,
            frame: 0,
            send_time: t0,
            size: DataSize::bytes(1000),
            marker: true,
            padding: false,
        };
        rx.handle_packet(delivered(SimPacket::Media(m), Ecn::NotEct), t0);
        assert!(rx.poll_transmit(t0).is_none());
        assert_eq!(rx.segments_received(), 0);
    }
}
