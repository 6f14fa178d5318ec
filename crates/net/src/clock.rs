//! Mapping kernel receive timestamps onto the [`Instant`] timeline.
//!
//! `SO_TIMESTAMPNS` stamps each datagram with `CLOCK_REALTIME` when the kernel received it,
//! while everything else in cg runs on [`Instant`] (`CLOCK_MONOTONIC` on Linux). The two clocks
//! have no fixed offset (NTP slews and steps the wall clock), so the offset is measured afresh
//! for every receive batch: both clocks are read together right after `recvmmsg` returns, and
//! a kernel stamp `k` becomes `mono_now − (wall_now − k)`. The error is the few hundred
//! nanoseconds between the two clock reads plus any slew during the datagram's wait in the
//! socket buffer — far below what any congestion controller resolves.

use std::time::{Duration, Instant, SystemTime};

/// A stamp older than this is treated as a wall-clock step, not as a datagram that waited in
/// the socket buffer, and its age is clamped to it.
pub(crate) const MAX_AGE: Duration = Duration::from_secs(10);

/// The wall clock and the monotonic clock read together.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClockPair {
    wall: SystemTime,
    mono: Instant,
}

impl ClockPair {
    /// Reads both clocks now.
    pub(crate) fn now() -> Self {
        let mono = Instant::now();
        let wall = SystemTime::now();
        ClockPair { wall, mono }
    }

    /// The monotonic instant read with the wall clock.
    pub(crate) fn mono(&self) -> Instant {
        self.mono
    }

    /// The kernel's wall-clock stamp moved onto the `Instant` timeline. A stamp from the future
    /// (the wall clock stepped back since) maps to the read instant; ages above [`MAX_AGE`] are
    /// clamped to it.
    pub(crate) fn to_instant(self, kernel: SystemTime) -> Instant {
        let age = self
            .wall
            .duration_since(kernel)
            .unwrap_or(Duration::ZERO)
            .min(MAX_AGE);
        self.mono.checked_sub(age).unwrap_or(self.mono)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamp_maps_to_the_same_age_on_the_monotonic_clock() {
        let pair = ClockPair::now();
        let kernel = pair.wall - Duration::from_micros(250);
        assert_eq!(
            pair.mono - pair.to_instant(kernel),
            Duration::from_micros(250)
        );
    }

    #[test]
    fn stamp_from_the_future_maps_to_the_read_instant() {
        let pair = ClockPair::now();
        assert_eq!(
            pair.to_instant(pair.wall + Duration::from_secs(3)),
            pair.mono
        );
    }

    #[test]
    fn wall_clock_step_is_clamped() {
        let pair = ClockPair::now();
        let kernel = pair.wall - Duration::from_secs(3600);
        assert!(pair.mono - pair.to_instant(kernel) <= MAX_AGE);
    }
}
