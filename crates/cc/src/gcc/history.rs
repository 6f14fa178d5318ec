//! The sender's record of packets in flight, for matching transport-wide feedback.
//!
//! A fixed ring indexed by sequence number: O(1) insert and lookup, bounded memory whatever
//! the feedback says. A result for a sequence number the ring no longer (or never) held is
//! ignored; a second result for the same packet is recognised as a duplicate.

use cg_types::DataSize;

/// Slots in the ring (a power of two): at 2 Mbit/s with 1200-byte packets, about 40 s.
pub const CAPACITY: usize = 1 << 13;

/// What feedback has said about a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// No feedback yet.
    Unreported,
    /// Reported received.
    Received,
    /// Reported not received (may still turn up later).
    Lost,
    /// Reported not received, sent while no feedback came back (see
    /// [`crate::gcc::GccController`]): not counted in the loss fraction.
    LostUnheard,
}

/// One sent packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SentRecord {
    /// Send time, µs since the controller's base.
    pub send_us: i64,
    /// Size.
    pub size: DataSize,
    /// Frame counter at send time (see [`crate::Controller::on_frame_sent`]).
    pub frame: u64,
    /// The probe cluster it was sent in, if any.
    pub probe: Option<u32>,
    /// Padding (a probe's filler): counts in the receive rate, joins no group of eq. (4).
    pub padding: bool,
    /// Feedback so far.
    pub fate: Fate,
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    seq: u64,
    rec: SentRecord,
}

/// The ring.
#[derive(Debug, Clone)]
pub struct SentHistory {
    slots: Box<[Option<Slot>]>,
}

impl Default for SentHistory {
    fn default() -> Self {
        SentHistory {
            slots: vec![None; CAPACITY].into_boxed_slice(),
        }
    }
}

impl SentHistory {
    /// Records packet `seq` (overwriting whatever older packet shared its slot).
    pub fn insert(
        &mut self,
        seq: u64,
        send_us: i64,
        size: DataSize,
        frame: u64,
        probe: Option<u32>,
        padding: bool,
    ) {
        self.slots[seq as usize & (CAPACITY - 1)] = Some(Slot {
            seq,
            rec: SentRecord {
                send_us,
                size,
                padding,
                frame,
                probe,
                fate: Fate::Unreported,
            },
        });
    }

    /// The record of `seq`, if still held.
    pub fn get_mut(&mut self, seq: u64) -> Option<&mut SentRecord> {
        match &mut self.slots[seq as usize & (CAPACITY - 1)] {
            Some(s) if s.seq == seq => Some(&mut s.rec),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_recent_packets_and_forgets_overwritten_ones() {
        let mut h = SentHistory::default();
        h.insert(5, 100, DataSize::bytes(1200), 0, None, false);
        assert_eq!(h.get_mut(5).map(|r| r.send_us), Some(100));
        assert!(h.get_mut(6).is_none());
        h.insert(
            5 + CAPACITY as u64,
            200,
            DataSize::bytes(1),
            0,
            Some(1),
            true,
        );
        assert!(h.get_mut(5).is_none());
        assert!(h.get_mut(u64::MAX).is_none());
    }
}
