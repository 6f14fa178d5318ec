//! Host-clock timestamps shared by every process on the machine.

use std::fmt;
use std::time::{Duration, Instant};

use nix::time::{ClockId, clock_gettime};
use serde::{Deserialize, Serialize};

/// A reading of the host's `CLOCK_MONOTONIC`, in nanoseconds.
///
/// This is the clock behind [`std::time::Instant`] on Linux and GStreamer's default system
/// clock, and it is one clock for the whole host: every process — in every network namespace
/// of a netlab topology — reads the same value at the same moment. That makes it the right
/// clock for glass-to-glass latency (`decoded_at - capture_time`) between a sender and a
/// receiver process on one machine. It is **not** comparable across machines, and it stops
/// while the host is suspended. Unlike `Instant` it is a plain number, so it can travel in a
/// header extension or a log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct HostTime(u64);

impl HostTime {
    /// Reads `CLOCK_MONOTONIC` now.
    pub fn now() -> Self {
        // clock_gettime(CLOCK_MONOTONIC) cannot fail on Linux with a valid clock id; fall back
        // to zero (an obviously wrong, never-panicking value) if it ever does.
        match clock_gettime(ClockId::CLOCK_MONOTONIC) {
            Ok(ts) => {
                let secs = u64::try_from(ts.tv_sec()).unwrap_or(0);
                let nanos = u64::try_from(ts.tv_nsec()).unwrap_or(0);
                HostTime(secs.saturating_mul(1_000_000_000).saturating_add(nanos))
            }
            Err(_) => HostTime(0),
        }
    }

    /// A timestamp from nanoseconds of `CLOCK_MONOTONIC` (as carried on the wire).
    pub const fn from_nanos(nanos: u64) -> Self {
        HostTime(nanos)
    }

    /// Nanoseconds of `CLOCK_MONOTONIC`.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// The `Instant` of this process that corresponds to this host time (within the few
    /// hundred nanoseconds between two clock reads).
    pub fn to_instant(self) -> Instant {
        let (now_i, now_h) = (Instant::now(), HostTime::now());
        if self >= now_h {
            now_i + Duration::from_nanos(self.0 - now_h.0)
        } else {
            let back = Duration::from_nanos(now_h.0 - self.0);
            now_i.checked_sub(back).unwrap_or(now_i)
        }
    }

    /// The host time of an `Instant` of this process.
    pub fn from_instant(instant: Instant) -> Self {
        let (now_i, now_h) = (Instant::now(), HostTime::now());
        if instant >= now_i {
            now_h + instant.duration_since(now_i)
        } else {
            HostTime(
                now_h
                    .0
                    .saturating_sub(duration_nanos(now_i.duration_since(instant))),
            )
        }
    }

    /// `self - earlier`, or `None` if `earlier` is later (clock readings from a peer that is
    /// not on this host, or a corrupt timestamp).
    pub fn checked_duration_since(self, earlier: HostTime) -> Option<Duration> {
        self.0.checked_sub(earlier.0).map(Duration::from_nanos)
    }
}

impl std::ops::Add<Duration> for HostTime {
    type Output = HostTime;
    fn add(self, rhs: Duration) -> HostTime {
        HostTime(self.0.saturating_add(duration_nanos(rhs)))
    }
}

impl fmt::Display for HostTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{:09}s",
            self.0 / 1_000_000_000,
            self.0 % 1_000_000_000
        )
    }
}

fn duration_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_time_is_monotonic_and_matches_instant() {
        let a = HostTime::now();
        let i = Instant::now();
        let b = HostTime::now();
        assert!(b >= a);
        let back = HostTime::from_instant(i);
        // The round trip is exact up to the time between clock reads.
        let err = back.as_nanos().abs_diff(a.as_nanos());
        assert!(err < 5_000_000, "instant and host time differ by {err} ns");
        let again = back.to_instant();
        let diff = if again > i { again - i } else { i - again };
        assert!(diff < Duration::from_millis(5));
    }

    #[test]
    fn checked_duration_since_refuses_a_later_timestamp() {
        let t = HostTime::from_nanos(1_000);
        assert_eq!(
            (t + Duration::from_nanos(500)).checked_duration_since(t),
            Some(Duration::from_nanos(500))
        );
        assert_eq!(t.checked_duration_since(t + Duration::from_nanos(1)), None);
    }

    #[test]
    fn host_time_serialises_as_nanoseconds() {
        let t = HostTime::from_nanos(42);
        assert_eq!(serde_json::to_string(&t).unwrap(), "42");
    }
}
