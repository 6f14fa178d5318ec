//! What a receiver can tell from sequence numbers: datagrams missing (gaps), late ones that
//! fill a gap (reordered) and copies of one already received (duplicates).
//!
//! The sink counts a gap when a datagram skips ahead; a late datagram then takes one off the
//! count again, so the total lost is what never arrived, and a reordering link is not
//! mistaken for a lossy one.

/// Sequence numbers remembered behind the highest one seen: 65 536 (8 KiB), 6.5 s of a
/// 10 000-datagram/s flow. A datagram older than that is counted as late (reordered).
const WINDOW: u64 = 1 << 16;

/// How one datagram arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// Next in sequence or ahead of it, with `gap` datagrams skipped.
    InOrder {
        /// Sequence numbers skipped (missing so far).
        gap: u64,
    },
    /// Behind the highest seen and not received before: fills a gap.
    Late,
    /// Received before.
    Duplicate,
}

/// The receive state of one flow's sequence numbers.
#[derive(Debug, Clone)]
pub struct SeqTracker {
    /// The sequence number expected next (one above the highest seen).
    next: u64,
    /// Received flags of `next - WINDOW .. next`, indexed by `seq % WINDOW`.
    seen: Vec<u64>,
}

impl Default for SeqTracker {
    fn default() -> Self {
        SeqTracker {
            next: 0,
            seen: vec![0; (WINDOW / 64) as usize],
        }
    }
}

impl SeqTracker {
    /// Takes in datagram `seq`.
    pub fn arrive(&mut self, seq: u64) -> Arrival {
        if seq >= self.next {
            let gap = seq - self.next;
            // Forget the flags the window moves past (all of them after a long jump).
            let from = self.next.max(seq.saturating_sub(WINDOW - 1));
            for s in from..seq {
                self.set(s, false);
            }
            self.set(seq, true);
            // Saturating: the number comes from the network.
            self.next = seq.saturating_add(1);
            return Arrival::InOrder { gap };
        }
        if self.next - seq > WINDOW {
            return Arrival::Late;
        }
        if self.get(seq) {
            Arrival::Duplicate
        } else {
            self.set(seq, true);
            Arrival::Late
        }
    }

    fn get(&self, seq: u64) -> bool {
        let i = seq % WINDOW;
        self.seen[(i / 64) as usize] & (1 << (i % 64)) != 0
    }

    fn set(&mut self, seq: u64, v: bool) {
        let i = seq % WINDOW;
        let word = &mut self.seen[(i / 64) as usize];
        if v {
            *word |= 1 << (i % 64);
        } else {
            *word &= !(1 << (i % 64));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_late_arrivals_and_copies_are_told_apart() {
        let mut t = SeqTracker::default();
        assert_eq!(t.arrive(0), Arrival::InOrder { gap: 0 });
        assert_eq!(t.arrive(1), Arrival::InOrder { gap: 0 });
        assert_eq!(t.arrive(4), Arrival::InOrder { gap: 2 });
        assert_eq!(t.arrive(2), Arrival::Late);
        assert_eq!(t.arrive(2), Arrival::Duplicate);
        assert_eq!(t.arrive(4), Arrival::Duplicate);
        assert_eq!(t.arrive(1), Arrival::Duplicate);
        assert_eq!(t.arrive(3), Arrival::Late);
        assert_eq!(t.arrive(5), Arrival::InOrder { gap: 0 });
    }

    #[test]
    fn a_first_datagram_ahead_of_zero_leaves_the_earlier_ones_missing_until_they_come() {
        let mut t = SeqTracker::default();
        assert_eq!(t.arrive(3), Arrival::InOrder { gap: 3 });
        assert_eq!(t.arrive(0), Arrival::Late);
        assert_eq!(t.arrive(0), Arrival::Duplicate);
    }

    #[test]
    fn flags_are_forgotten_as_the_window_moves_on() {
        let mut t = SeqTracker::default();
        t.arrive(5);
        // 5 + WINDOW reuses 5's slot: it is new, not a copy of 5.
        assert_eq!(t.arrive(5 + WINDOW), Arrival::InOrder { gap: WINDOW - 1 });
        // A jump far beyond the window clears every slot.
        assert_eq!(
            t.arrive(10 * WINDOW),
            Arrival::InOrder {
                gap: 9 * WINDOW - 6
            }
        );
        assert_eq!(t.arrive(10 * WINDOW - 3), Arrival::Late);
        // Older than the window: late, whatever it was.
        assert_eq!(t.arrive(5), Arrival::Late);
    }

    #[test]
    fn any_sequence_number_from_the_network_is_taken_without_panicking() {
        let mut t = SeqTracker::default();
        assert_eq!(t.arrive(u64::MAX), Arrival::InOrder { gap: u64::MAX });
        assert_eq!(t.arrive(0), Arrival::Late);
        t.arrive(u64::MAX);
    }
}
