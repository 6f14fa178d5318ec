//! Sent-packet history and bytes in flight (SCReAM v2 draft §4.1.1, RFC 8298 §4.1.2).
//!
//! `bytes_in_flight` is the sum of the sizes of the packets sent after the highest
//! acknowledged sequence number (the "received edge"): a packet the edge passes leaves the
//! flight whether it was received or not, and its size counts in `bytes_newly_acked`
//! (draft §4.1.1.2). Packets the edge passed unacknowledged stay in the history, flagged
//! missing, until they are acknowledged late or declared lost (`loss.rs`).
//!
//! The history is a `VecDeque` ordered by sequence number, bounded by `max_tracked`.

use std::collections::VecDeque;
use std::time::Instant;

use cg_types::Ecn;

/// One packet we sent.
#[derive(Debug, Clone, Copy)]
pub struct SentRecord {
    /// Transport-wide sequence number.
    pub seq: u64,
    /// Size in bytes (clamped to `u32`).
    pub size: u32,
    /// When it left, in µs since the controller's epoch (converted once, at send time).
    pub sent_us: i64,
    /// The ECN code point it was sent with.
    pub ecn: Ecn,
    /// Reported received.
    pub acked: bool,
    /// When the received edge passed it while still unacknowledged.
    pub missing_since: Option<Instant>,
}

/// What acknowledging one packet changed.
#[derive(Debug, Clone, Copy)]
pub struct Acked {
    /// The packet as sent.
    pub record: SentRecord,
    /// Bytes the received edge advanced over (including unacknowledged packets below it).
    pub edge_bytes: u64,
    /// The packet became the new highest acknowledged one.
    pub is_new_edge: bool,
}

/// The sent-packet history.
#[derive(Debug, Clone)]
pub struct Flight {
    pub(super) packets: VecDeque<SentRecord>,
    pub(super) highest_acked: Option<u64>,
    bytes_in_flight: u64,
    last_sent_seq: Option<u64>,
    max_tracked: usize,
    /// Packets declared lost, newest last (at most [`DECLARED_LOST_KEPT`]): their sequence
    /// number and when the edge passed them, so a late acknowledgement still measures the
    /// reordering (`loss.rs`).
    pub(super) declared_lost: VecDeque<(u64, Instant)>,
}

/// Declared-lost packets remembered for a late acknowledgement.
pub(super) const DECLARED_LOST_KEPT: usize = 256;

impl Flight {
    /// An empty history keeping at most `max_tracked` packets.
    pub fn new(max_tracked: usize) -> Self {
        Flight {
            packets: VecDeque::new(),
            highest_acked: None,
            bytes_in_flight: 0,
            last_sent_seq: None,
            max_tracked: max_tracked.clamp(16, 1 << 20),
            declared_lost: VecDeque::new(),
        }
    }

    /// Records a sent packet. Returns `false` (and ignores it) if its sequence number does not
    /// increase — a duplicate or a transport bug must not corrupt the flight.
    pub fn on_sent(&mut self, seq: u64, size: u64, sent_us: i64, ecn: Ecn) -> bool {
        if self.last_sent_seq.is_some_and(|last| seq <= last) {
            return false;
        }
        self.last_sent_seq = Some(seq);
        let size = u32::try_from(size).unwrap_or(u32::MAX);
        self.packets.push_back(SentRecord {
            seq,
            size,
            sent_us,
            ecn,
            acked: false,
            missing_since: None,
        });
        self.bytes_in_flight += u64::from(size);
        while self.packets.len() > self.max_tracked {
            if let Some(old) = self.packets.pop_front()
                && self.is_above_edge(old.seq)
            {
                self.bytes_in_flight = self.bytes_in_flight.saturating_sub(u64::from(old.size));
            }
        }
        true
    }

    /// Marks `seq` received at `now`. `None` for unknown, forgotten or duplicate reports.
    pub fn on_acked(&mut self, seq: u64, now: Instant) -> Option<Acked> {
        let idx = self.index_of(seq)?;
        let rec = &mut self.packets[idx];
        if rec.acked {
            return None;
        }
        rec.acked = true;
        let record = *rec;
        let mut edge_bytes = 0;
        let is_new_edge = self.is_above_edge(seq);
        if is_new_edge {
            // Advance the received edge over everything up to `seq`.
            let start = match self.highest_acked {
                Some(h) => self.index_after(h),
                None => 0,
            };
            if start == idx {
                // The common case: in-order delivery moves the edge by one packet.
                edge_bytes = u64::from(record.size);
            } else {
                for p in self.packets.range_mut(start..=idx) {
                    edge_bytes += u64::from(p.size);
                    if !p.acked {
                        p.missing_since = Some(now);
                    }
                }
            }
            self.bytes_in_flight = self.bytes_in_flight.saturating_sub(edge_bytes);
            self.highest_acked = Some(seq);
        }
        Some(Acked {
            record,
            edge_bytes,
            is_new_edge,
        })
    }

    /// Forgets every packet (feedback has stopped; reopen the window rather than deadlock).
    pub fn clear(&mut self) {
        self.packets.clear();
        self.declared_lost.clear();
        self.bytes_in_flight = 0;
        self.highest_acked = self.last_sent_seq;
    }

    /// Bytes sent after the received edge.
    pub fn bytes_in_flight(&self) -> u64 {
        self.bytes_in_flight
    }

    /// Number of packets tracked.
    pub fn len(&self) -> usize {
        self.packets.len()
    }

    fn is_above_edge(&self, seq: u64) -> bool {
        self.highest_acked.is_none_or(|h| seq > h)
    }

    /// Index of the first packet with a sequence number above `seq`.
    fn index_after(&self, seq: u64) -> usize {
        let Some(first) = self.packets.front() else {
            return 0;
        };
        // Fast path: contiguous sequence numbers.
        if let Some(guess) = seq
            .checked_sub(first.seq)
            .and_then(|d| usize::try_from(d + 1).ok())
            && self.packets.get(guess - 1).is_some_and(|p| p.seq == seq)
        {
            return guess;
        }
        self.packets.partition_point(|p| p.seq <= seq)
    }

    fn index_of(&self, seq: u64) -> Option<usize> {
        let first = self.packets.front()?.seq;
        // Fast path: contiguous sequence numbers.
        let guess = usize::try_from(seq.checked_sub(first)?).ok()?;
        if self.packets.get(guess).is_some_and(|p| p.seq == seq) {
            return Some(guess);
        }
        self.packets.binary_search_by_key(&seq, |p| p.seq).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flight_with(n: u64) -> Flight {
        let mut f = Flight::new(1000);
        for s in 0..n {
            assert!(f.on_sent(s, 1000, s as i64 * 1000, Ecn::Ect1));
        }
        f
    }

    #[test]
    fn bytes_in_flight_counts_packets_after_the_received_edge() {
        let t0 = Instant::now();
        let mut f = flight_with(6);
        assert_eq!(f.bytes_in_flight(), 6000);
        // Packet 3 acknowledged; 0..=2 were not (yet): the edge passes them all.
        let a = f.on_acked(3, t0).unwrap();
        assert!(a.is_new_edge);
        assert_eq!(a.edge_bytes, 4000);
        assert_eq!(f.bytes_in_flight(), 2000);
        // A late acknowledgement below the edge changes nothing in flight.
        let a = f.on_acked(1, t0).unwrap();
        assert!(!a.is_new_edge);
        assert_eq!(a.edge_bytes, 0);
        assert_eq!(f.bytes_in_flight(), 2000);
        assert!(f.packets[0].missing_since.is_some());
        assert!(f.packets[1].acked);
    }

    #[test]
    fn duplicate_and_unknown_acks_are_ignored() {
        let t0 = Instant::now();
        let mut f = flight_with(3);
        assert!(f.on_acked(2, t0).is_some());
        assert!(f.on_acked(2, t0).is_none());
        assert!(f.on_acked(99, t0).is_none());
        assert!(
            !f.on_sent(1, 1000, 0, Ecn::Ect1),
            "sequence numbers must increase"
        );
        assert_eq!(f.bytes_in_flight(), 0);
    }

    #[test]
    fn history_is_bounded() {
        let mut f = Flight::new(16);
        for s in 0..100 {
            f.on_sent(s, 10, 0, Ecn::NotEct);
        }
        assert_eq!(f.len(), 16);
        assert_eq!(f.bytes_in_flight(), 160);
    }
}
