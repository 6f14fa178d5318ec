//! Mapping the session's monotonic clock to NTP wall-clock time (RFC 3550 §4) and the
//! timestamp formats derived from it.

use std::time::{Duration, Instant};

/// Maps the monotonic `Instant`s a session is driven with to 64-bit NTP timestamps
/// (RFC 5905 §6: 32.32 fixed-point seconds since 1900).
///
/// The driver reads the wall clock once when it creates the session and passes the NTP time of
/// that instant; the session never reads a clock (sans-IO).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NtpClock {
    origin: Instant,
    ntp_at_origin: u64,
}

impl NtpClock {
    /// `ntp_at_origin` is the NTP time at `origin` (0 for session-relative time).
    pub fn new(origin: Instant, ntp_at_origin: u64) -> Self {
        Self {
            origin,
            ntp_at_origin,
        }
    }

    /// The NTP timestamp of `t` (instants before the origin saturate to it).
    pub fn ntp(&self, t: Instant) -> u64 {
        let d = t.saturating_duration_since(self.origin);
        self.ntp_at_origin.wrapping_add(duration_to_ntp(d))
    }

    /// The instant of an NTP timestamp on this clock; `None` if it lies before the origin.
    pub fn instant(&self, ntp: u64) -> Option<Instant> {
        let delta = ntp.wrapping_sub(self.ntp_at_origin);
        // Timestamps "before" the origin wrap to huge values; treat anything over 2^63 as past.
        if delta > u64::MAX / 2 {
            return None;
        }
        self.origin.checked_add(ntp_to_duration(delta))
    }

    /// The middle 32 bits of the NTP timestamp (RFC 3550 §6.4.1 LSR, RFC 8888 report
    /// timestamp): 16.16 fixed-point seconds.
    pub fn ntp_mid32(&self, t: Instant) -> u32 {
        mid32(self.ntp(t))
    }

    /// The 24-bit abs-send-time value of `t`: 6.18 fixed-point seconds
    /// (webrtc abs-send-time extension).
    pub fn abs_send_time(&self, t: Instant) -> u32 {
        ((self.ntp(t) >> 14) & 0x00FF_FFFF) as u32
    }
}

/// The middle 32 bits of a 64-bit NTP timestamp.
pub fn mid32(ntp: u64) -> u32 {
    ((ntp >> 16) & 0xFFFF_FFFF) as u32
}

/// A duration as 32.32 fixed point.
pub fn duration_to_ntp(d: Duration) -> u64 {
    let secs = d.as_secs();
    let frac = ((d.subsec_nanos() as u64) << 32) / 1_000_000_000;
    (secs << 32).wrapping_add(frac)
}

/// 32.32 fixed point as a duration.
pub fn ntp_to_duration(ntp: u64) -> Duration {
    let secs = ntp >> 32;
    let nanos = ((ntp & 0xFFFF_FFFF) * 1_000_000_000) >> 32;
    Duration::new(secs, nanos as u32)
}

/// A 16.16 fixed-point duration (RFC 3550 DLSR, RFC 8888 timestamps) as a `Duration`.
pub fn mid32_to_duration(v: u32) -> Duration {
    Duration::from_nanos(((v as u64) * 1_000_000_000) >> 16)
}

/// A `Duration` as 16.16 fixed point, saturating.
pub fn duration_to_mid32(d: Duration) -> u32 {
    let v = (d.as_nanos() << 16) / 1_000_000_000;
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// Unwraps a wrapping counter of `bits` bits into a monotonic-ish i64 (the value nearest the
/// previous one), e.g. abs-send-time (24 bits) or RFC 8888 report timestamps (32 bits).
#[derive(Debug, Clone, Copy, Default)]
pub struct WrapUnwrapper {
    last: Option<i64>,
}

impl WrapUnwrapper {
    /// The unwrapped value of a `bits`-bit counter reading.
    pub fn unwrap(&mut self, value: u64, bits: u32) -> i64 {
        let modulus = 1i64 << bits;
        let value = (value as i64) & (modulus - 1);
        let out = match self.last {
            None => value,
            Some(last) => {
                let base = last - last.rem_euclid(modulus);
                let candidates = [base - modulus + value, base + value, base + modulus + value];
                *candidates
                    .iter()
                    .min_by_key(|c| (*c - last).abs())
                    .expect("three candidates, invariant")
            }
        };
        self.last = Some(out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ntp_round_trips_through_instants() {
        let t0 = Instant::now();
        let c = NtpClock::new(t0, 0x1234_5678_0000_0000);
        let t = t0 + Duration::from_millis(1500);
        let ntp = c.ntp(t);
        assert_eq!(ntp >> 32, 0x1234_5679);
        let back = c.instant(ntp).unwrap();
        assert!(
            back.duration_since(t0)
                .abs_diff(Duration::from_millis(1500))
                < Duration::from_micros(1)
        );
        assert_eq!(c.instant(0x1234_5677_0000_0000), None);
    }

    #[test]
    fn abs_send_time_is_six_point_eighteen() {
        let t0 = Instant::now();
        let c = NtpClock::new(t0, 0);
        assert_eq!(c.abs_send_time(t0 + Duration::from_millis(500)), 1 << 17);
        // wraps every 64 s
        assert_eq!(c.abs_send_time(t0 + Duration::from_secs(64)), 0);
    }

    #[test]
    fn mid32_fixed_point_converts_both_ways() {
        assert_eq!(duration_to_mid32(Duration::from_millis(1500)), 0x0001_8000);
        assert_eq!(mid32_to_duration(0x0001_8000), Duration::from_millis(1500));
    }

    #[test]
    fn unwrapper_follows_wraps_both_ways() {
        let mut u = WrapUnwrapper::default();
        assert_eq!(u.unwrap(0xFF_FFF0, 24), 0xFF_FFF0);
        assert_eq!(u.unwrap(0x10, 24), 0x100_0010);
        assert_eq!(u.unwrap(0xFF_FFF8, 24), 0xFF_FFF8);
    }
}
