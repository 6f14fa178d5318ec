//! Timestamps on a peer's clock.

use std::fmt;
use std::ops::Add;
use std::time::Duration;

/// A point in time on a remote clock, in microseconds since that clock's arbitrary epoch.
///
/// Feedback arrival times (transport-wide CC reference time + deltas, RFC 8888 report
/// timestamps) are readings of the receiver's clock. Their offset from our own
/// [`std::time::Instant`]s is unknown, so they get their own type: only differences between
/// two `RemoteTime`s, or a one-way delay that is later compared with a base (minimum) delay,
/// are meaningful. Signed, because a translated remote reading may fall before the epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct RemoteTime(i64);

impl RemoteTime {
    /// A reading of `micros` microseconds.
    pub const fn from_micros(micros: i64) -> Self {
        RemoteTime(micros)
    }

    /// A reading of `d` after the epoch (saturating).
    pub fn from_duration(d: Duration) -> Self {
        RemoteTime(i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
    }

    /// Microseconds since the remote epoch.
    pub const fn as_micros(self) -> i64 {
        self.0
    }

    /// `self − earlier` in microseconds, negative if `earlier` is in fact later (saturating).
    pub const fn micros_since(self, earlier: RemoteTime) -> i64 {
        self.0.saturating_sub(earlier.0)
    }

    /// `self − earlier` as a duration, or `None` if `earlier` is later than `self`.
    pub fn checked_duration_since(self, earlier: RemoteTime) -> Option<Duration> {
        u64::try_from(self.micros_since(earlier))
            .ok()
            .map(Duration::from_micros)
    }
}

impl Add<Duration> for RemoteTime {
    type Output = RemoteTime;
    fn add(self, rhs: Duration) -> RemoteTime {
        RemoteTime(
            self.0
                .saturating_add(i64::try_from(rhs.as_micros()).unwrap_or(i64::MAX)),
        )
    }
}

impl fmt::Display for RemoteTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "remote+{}.{:06}s",
            self.0 / 1_000_000,
            (self.0 % 1_000_000).abs()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_are_signed_and_saturating() {
        let a = RemoteTime::from_micros(1_000);
        let b = a + Duration::from_millis(5);
        assert_eq!(b.micros_since(a), 5_000);
        assert_eq!(a.micros_since(b), -5_000);
        assert_eq!(b.checked_duration_since(a), Some(Duration::from_millis(5)));
        assert_eq!(a.checked_duration_since(b), None);
        assert_eq!(
            RemoteTime::from_micros(i64::MAX).micros_since(RemoteTime::from_micros(-5)),
            i64::MAX
        );
    }
}
