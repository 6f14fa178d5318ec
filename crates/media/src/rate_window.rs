//! Produced bit rate over a sliding window of stream time.

use std::collections::VecDeque;
use std::time::Duration;

use cg_types::{Bitrate, DataSize};

/// Sums frame sizes whose timestamps lie in the last `window` of stream time.
///
/// Timestamps are the frames' PTS (pipeline running time), so the measurement does not
/// depend on when the application happens to read frames, and is unaffected by a busy host
/// delaying delivery. The rate is `bits in (newest − window, newest] / window`; until a whole
/// window has passed it is taken over the time covered so far (first frame to newest plus one
/// frame interval), so a fresh encoder does not read as slow.
#[derive(Debug, Clone)]
pub struct RateWindow {
    window: Duration,
    frame_interval: Duration,
    frames: VecDeque<(Duration, DataSize)>,
    bytes_in_window: u64,
    first: Option<Duration>,
}

impl RateWindow {
    /// A window of `window` for frames nominally `frame_interval` apart.
    pub fn new(window: Duration, frame_interval: Duration) -> Self {
        RateWindow {
            window,
            frame_interval,
            frames: VecDeque::new(),
            bytes_in_window: 0,
            first: None,
        }
    }

    /// Records a frame. Out-of-order timestamps are accepted (counted at the newest time).
    pub fn push(&mut self, pts: Duration, size: DataSize) {
        let newest = self.frames.back().map_or(pts, |&(t, _)| t.max(pts));
        self.first.get_or_insert(pts);
        self.frames.push_back((newest, size));
        self.bytes_in_window = self.bytes_in_window.saturating_add(size.as_bytes());
        while let Some(&(t, s)) = self.frames.front() {
            if t + self.window <= newest {
                self.frames.pop_front();
                self.bytes_in_window -= s.as_bytes();
            } else {
                break;
            }
        }
    }

    /// The produced rate over the window (zero before any frame).
    pub fn rate(&self) -> Bitrate {
        let (Some(first), Some(&(newest, _))) = (self.first, self.frames.back()) else {
            return Bitrate::ZERO;
        };
        let covered = (newest.saturating_sub(first) + self.frame_interval).min(self.window);
        DataSize::bytes(self.bytes_in_window) / covered
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steady_stream_reads_its_rate() {
        let mut w = RateWindow::new(Duration::from_secs(1), Duration::from_millis(100));
        for i in 0..50u64 {
            // 12 500 B every 100 ms = 1 Mbit/s.
            w.push(Duration::from_millis(100 * i), DataSize::bytes(12_500));
        }
        assert_eq!(w.rate(), Bitrate::mbps(1));
    }

    #[test]
    fn partial_window_is_not_read_as_slow() {
        let mut w = RateWindow::new(Duration::from_secs(1), Duration::from_millis(100));
        w.push(Duration::ZERO, DataSize::bytes(12_500));
        w.push(Duration::from_millis(100), DataSize::bytes(12_500));
        assert_eq!(w.rate(), Bitrate::mbps(1));
    }

    #[test]
    fn old_frames_leave_the_window() {
        let mut w = RateWindow::new(Duration::from_secs(1), Duration::from_millis(100));
        for i in 0..10u64 {
            w.push(Duration::from_millis(100 * i), DataSize::bytes(25_000));
        }
        for i in 10..20u64 {
            w.push(Duration::from_millis(100 * i), DataSize::bytes(6_250));
        }
        assert_eq!(w.rate(), Bitrate::kbps(500));
    }

    #[test]
    fn a_frame_drop_lowers_the_rate() {
        let mut w = RateWindow::new(Duration::from_secs(1), Duration::from_millis(100));
        for i in (0..30u64).filter(|i| i % 2 == 0) {
            w.push(Duration::from_millis(100 * i), DataSize::bytes(12_500));
        }
        assert_eq!(w.rate(), Bitrate::kbps(500));
    }
}
