//! Unwrapping 16-bit RTP / transport-wide sequence numbers to 64 bits (RFC 3550 §A.1).

/// Unwraps 16-bit sequence numbers to `u64`, choosing for each value the extension closest to
/// the highest one seen so far, so that reordering and wrap-around both work.
#[derive(Debug, Clone, Copy, Default)]
pub struct SeqUnwrapper {
    highest: Option<u64>,
}

impl SeqUnwrapper {
    /// Unwraps `seq` and remembers it if it is the new highest.
    pub fn unwrap(&mut self, seq: u16) -> u64 {
        let v = self.peek(seq);
        if self.highest.is_none_or(|h| v > h) {
            self.highest = Some(v);
        }
        v
    }

    /// Unwraps `seq` without updating the state.
    pub fn peek(&self, seq: u16) -> u64 {
        let Some(h) = self.highest else {
            // Start one cycle up so that early reordered packets do not go negative.
            return (1 << 16) + seq as u64;
        };
        nearest(h, seq).unwrap_or(0)
    }

    /// The highest unwrapped value seen.
    pub fn highest(&self) -> Option<u64> {
        self.highest
    }
}

/// The 64-bit number whose low 16 bits are `seq` nearest to `reference` (within 2¹⁵ either
/// side); `None` if that is below zero. How a peer's 16-bit report of our packets (NACK,
/// transport-wide CC) is read against the highest number we sent.
pub fn nearest(reference: u64, seq: u16) -> Option<u64> {
    let diff = i64::from(seq.wrapping_sub(reference as u16) as i16);
    u64::try_from(reference as i64 + diff).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_reads_a_16_bit_number_on_either_side_of_the_reference() {
        assert_eq!(nearest(70_000, 70_000u64 as u16), Some(70_000));
        assert_eq!(nearest(65_540, 65_535), Some(65_535), "just before a wrap");
        assert_eq!(nearest(65_530, 3), Some(65_539), "just after it");
        assert_eq!(nearest(5, 65_534), None, "below zero");
    }

    #[test]
    fn wraps_forward_and_handles_reordering() {
        let mut u = SeqUnwrapper::default();
        let a = u.unwrap(65534);
        let b = u.unwrap(65535);
        let c = u.unwrap(1);
        let d = u.unwrap(0);
        assert_eq!(b, a + 1);
        assert_eq!(c, a + 3);
        assert_eq!(d, a + 2);
        assert_eq!(u.highest(), Some(c));
    }

    #[test]
    fn old_packets_unwrap_below_the_highest() {
        let mut u = SeqUnwrapper::default();
        let a = u.unwrap(10);
        assert_eq!(u.unwrap(5), a - 5);
        assert_eq!(u.highest(), Some(a));
    }
}
