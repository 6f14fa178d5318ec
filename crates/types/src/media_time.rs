//! Times on the RTP video clock.

use std::time::Duration;

/// A time on the 90 kHz RTP clock of every video payload format cg sends (RFC 6184 §8.2.1,
/// RFC 7741 §6.1, RFC 7798 §7.1), in ticks: an unwrapped RTP timestamp, or a duration
/// measured on that clock. The one place where ticks and [`Duration`]s are converted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct MediaTime(u64);

impl MediaTime {
    /// Ticks per second.
    pub const HZ: u64 = 90_000;

    /// `ticks` ticks of the 90 kHz clock.
    pub const fn from_ticks(ticks: u64) -> Self {
        MediaTime(ticks)
    }

    /// The ticks in `d`, rounded down (saturating).
    pub fn from_duration(d: Duration) -> Self {
        MediaTime(
            u64::try_from(d.as_nanos() * u128::from(Self::HZ) / 1_000_000_000).unwrap_or(u64::MAX),
        )
    }

    /// The ticks.
    pub const fn ticks(self) -> u64 {
        self.0
    }

    /// The 32-bit RTP timestamp field: the ticks modulo 2³² (RFC 3550 §5.1).
    pub const fn wire(self) -> u32 {
        self.0 as u32
    }

    /// The ticks as a duration, rounded down to the nanosecond.
    pub fn as_duration(self) -> Duration {
        let nanos = u128::from(self.0) * 1_000_000_000 / u128::from(Self::HZ);
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_and_durations_convert_rounding_down() {
        let t = MediaTime::from_duration(Duration::from_millis(100));
        assert_eq!(t.ticks(), 9000);
        assert_eq!(t.as_duration(), Duration::from_millis(100));
        // 1/30 s is 33 333 333 ns: 2999.99997 ticks.
        assert_eq!(
            MediaTime::from_duration(Duration::from_secs(1) / 30).ticks(),
            2999
        );
        assert_eq!(
            MediaTime::from_ticks(3000).as_duration(),
            Duration::from_nanos(33_333_333)
        );
        assert_eq!(
            MediaTime::from_ticks(90_000).as_duration(),
            Duration::from_secs(1)
        );
    }

    #[test]
    fn the_wire_field_wraps_at_32_bits_and_huge_durations_saturate() {
        assert_eq!(MediaTime::from_ticks((1 << 32) + 7).wire(), 7);
        assert_eq!(MediaTime::from_duration(Duration::MAX).ticks(), u64::MAX);
        assert_eq!(
            MediaTime::from_ticks(u64::MAX).as_duration(),
            Duration::from_nanos(u64::MAX)
        );
    }
}
