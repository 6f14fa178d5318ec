//! The receive rate `R(ti)` of eq. (3): bytes received in the last 500 ms.
//!
//! Bounded: samples older than the window are dropped as time advances, and at most
//! [`MAX_SAMPLES`] are kept (beyond that the oldest go first), so hostile input cannot grow it.

use std::collections::VecDeque;
use std::time::Duration;

use cg_types::{Bitrate, DataSize};

/// Cap on the number of samples in the window.
pub const MAX_SAMPLES: usize = 1 << 14;

/// A sliding-window rate meter over arrival times (µs, arrival clock).
#[derive(Debug, Clone)]
pub struct ReceiveRate {
    window_us: i64,
    samples: VecDeque<(i64, u64)>,
    /// Sum of the samples' sizes (u128: at most MAX_SAMPLES u64 values, cannot overflow).
    bytes: u128,
    first_us: Option<i64>,
    latest_us: i64,
}

impl ReceiveRate {
    /// A meter over `window`.
    pub fn new(window: Duration) -> Self {
        ReceiveRate {
            window_us: i64::try_from(window.as_micros()).unwrap_or(i64::MAX).max(1),
            samples: VecDeque::with_capacity(256),
            bytes: 0,
            first_us: None,
            latest_us: i64::MIN,
        }
    }

    /// A packet of `size` arrived at `arrival_us`. Arrivals earlier than the latest one
    /// (reordered feedback) count at the latest time.
    pub fn on_packet(&mut self, arrival_us: i64, size: DataSize) {
        let t = arrival_us.max(self.latest_us);
        self.latest_us = t;
        self.first_us.get_or_insert(t);
        if self.samples.len() >= MAX_SAMPLES
            && let Some((_, b)) = self.samples.pop_front()
        {
            self.bytes -= u128::from(b);
        }
        self.samples.push_back((t, size.as_bytes()));
        self.bytes += u128::from(size.as_bytes());
        self.evict(t);
    }

    /// Forgets every sample: `R` is unknown until a whole window has been observed again.
    pub fn restart(&mut self) {
        self.samples.clear();
        self.bytes = 0;
        self.first_us = None;
    }

    /// `R` at the latest arrival, once a whole window has been observed.
    pub fn rate(&self) -> Option<Bitrate> {
        let first = self.first_us?;
        if self.latest_us.saturating_sub(first) < self.window_us {
            return None;
        }
        let window = Duration::from_micros(self.window_us as u64);
        let bytes = u64::try_from(self.bytes).unwrap_or(u64::MAX);
        Some(DataSize::bytes(bytes) / window)
    }

    fn evict(&mut self, now_us: i64) {
        let horizon = now_us.saturating_sub(self.window_us);
        while let Some(&(t, b)) = self.samples.front() {
            if t > horizon {
                break;
            }
            self.samples.pop_front();
            self.bytes -= u128::from(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_bytes_over_the_last_window() {
        let mut r = ReceiveRate::new(Duration::from_millis(500));
        // 1250 bytes every 10 ms = 1 Mbit/s.
        for i in 0..100 {
            r.on_packet(i * 10_000, DataSize::bytes(1250));
            if i < 50 {
                assert_eq!(r.rate(), None, "window not yet full at {i}");
            }
        }
        assert_eq!(r.rate(), Some(Bitrate::mbps(1)));
    }

    #[test]
    fn a_restart_forgets_the_window() {
        let mut r = ReceiveRate::new(Duration::from_millis(500));
        for i in 0..100 {
            r.on_packet(i * 10_000, DataSize::bytes(1250));
        }
        r.restart();
        assert_eq!(r.rate(), None);
        // 2500 bytes every 10 ms from 2 s on: 2 Mbit/s once a whole window is seen again.
        for i in 200..260 {
            r.on_packet(i * 10_000, DataSize::bytes(2500));
            if i < 250 {
                assert_eq!(r.rate(), None, "window not yet full at {i}");
            }
        }
        assert_eq!(r.rate(), Some(Bitrate::mbps(2)));
    }

    #[test]
    fn reordered_and_huge_inputs_stay_bounded() {
        let mut r = ReceiveRate::new(Duration::from_millis(500));
        for i in 0..(MAX_SAMPLES as i64 * 2) {
            r.on_packet(
                if i % 2 == 0 { 0 } else { -5 },
                DataSize::bytes(u64::MAX / 4),
            );
        }
        assert!(r.samples.len() <= MAX_SAMPLES);
        r.on_packet(i64::MAX, DataSize::bytes(1));
        assert!(r.samples.len() <= 2);
    }
}
