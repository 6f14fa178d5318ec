//! Freeze detection on decoded-frame arrival times.

use std::collections::VecDeque;
use std::time::Duration;

use crate::HostTime;

/// One freeze: the picture stood still from `started_at` for `duration`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Freeze {
    /// When the last frame before the freeze was decoded.
    pub started_at: HostTime,
    /// The whole gap between that frame and the next one.
    pub duration: Duration,
}

/// Counts freezes by two rules at once:
/// - cg's: a gap between decoded frames longer than `intervals` nominal frame intervals
///   (3 in issue #8), which holds the stream to its nominal rate;
/// - WebRTC's (`freezeCount` / `totalFreezesDuration` of webrtc-stats, as libwebrtc's
///   `VideoQualityObserver` counts them): a gap of at least max(3 × mean, mean + 150 ms),
///   the mean taken over the last 30 gaps including this one, once 5 are known. A browser
///   reports this one, so the two viewers are compared on it.
///
/// A sans-IO block: time comes in with each frame. Keeps the last `max_records` freezes
/// (by cg's rule).
#[derive(Debug, Clone)]
pub struct FreezeDetector {
    threshold: Duration,
    last: Option<HostTime>,
    count: u64,
    total: Duration,
    longest: Duration,
    recent: VecDeque<Freeze>,
    max_records: usize,
    webrtc: WebRtcFreezes,
}

/// WebRTC's freeze rule on measured gaps ([`FreezeDetector`]).
#[derive(Debug, Clone, Default)]
struct WebRtcFreezes {
    gaps: VecDeque<Duration>,
    sum: Duration,
    count: u64,
    total: Duration,
}

impl WebRtcFreezes {
    /// libwebrtc's `kAvgInterframeDelaysWindowSizeFrames`.
    const WINDOW: usize = 30;
    /// libwebrtc's `kMinFrameSamplesToDetectFreeze`.
    const MIN_SAMPLES: usize = 5;
    /// libwebrtc's `kMinIncreaseForFreezeMs`.
    const MIN_INCREASE: Duration = Duration::from_millis(150);

    fn on_gap(&mut self, gap: Duration) {
        if self.gaps.len() == Self::WINDOW
            && let Some(old) = self.gaps.pop_front()
        {
            self.sum -= old;
        }
        self.gaps.push_back(gap);
        self.sum += gap;
        if self.gaps.len() < Self::MIN_SAMPLES {
            return;
        }
        let mean = self.sum / self.gaps.len() as u32;
        if gap >= (mean * 3).max(mean + Self::MIN_INCREASE) {
            self.count += 1;
            self.total += gap;
        }
    }
}

impl FreezeDetector {
    /// A detector for frames nominally `frame_interval` apart.
    pub fn new(frame_interval: Duration, intervals: u32, max_records: usize) -> Self {
        FreezeDetector {
            threshold: frame_interval * intervals.max(1),
            last: None,
            count: 0,
            total: Duration::ZERO,
            longest: Duration::ZERO,
            recent: VecDeque::new(),
            max_records,
            webrtc: WebRtcFreezes::default(),
        }
    }

    /// A frame was decoded at `now`; returns the freeze it ended, if any.
    pub fn on_frame(&mut self, now: HostTime) -> Option<Freeze> {
        let last = self.last.replace(now.max(self.last.unwrap_or(now)))?;
        let gap = now.checked_duration_since(last)?;
        self.webrtc.on_gap(gap);
        if gap <= self.threshold {
            return None;
        }
        let freeze = Freeze {
            started_at: last,
            duration: gap,
        };
        self.count += 1;
        self.total += gap;
        self.longest = self.longest.max(gap);
        if self.max_records > 0 {
            if self.recent.len() >= self.max_records {
                self.recent.pop_front();
            }
            self.recent.push_back(freeze);
        }
        Some(freeze)
    }

    /// How long the picture has been standing still at `now`, if that is already a freeze.
    pub fn current_stall(&self, now: HostTime) -> Option<Duration> {
        let gap = now.checked_duration_since(self.last?)?;
        (gap > self.threshold).then_some(gap)
    }

    /// Freezes that ended so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Their summed duration.
    pub fn total(&self) -> Duration {
        self.total
    }

    /// The longest.
    pub fn longest(&self) -> Duration {
        self.longest
    }

    /// Freezes by WebRTC's rule so far, and their summed duration.
    pub fn webrtc(&self) -> (u64, Duration) {
        (self.webrtc.count, self.webrtc.total)
    }

    /// The most recent ones, oldest first.
    pub fn recent(&self) -> impl Iterator<Item = &Freeze> {
        self.recent.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn t(ms: u64) -> HostTime {
        HostTime::from_nanos(ms * MS)
    }

    #[test]
    fn steady_frames_are_not_a_freeze() {
        let mut d = FreezeDetector::new(Duration::from_millis(33), 3, 8);
        for i in 0..100 {
            assert_eq!(d.on_frame(t(i * 33)), None);
        }
        assert_eq!(d.count(), 0);
        assert_eq!(d.current_stall(t(99 * 33 + 90)), None);
    }

    #[test]
    fn a_gap_over_three_intervals_is_a_freeze_with_its_duration() {
        let mut d = FreezeDetector::new(Duration::from_millis(33), 3, 8);
        d.on_frame(t(0));
        assert_eq!(
            d.on_frame(t(99)),
            None,
            "exactly 3 intervals is not a freeze"
        );
        let f = d.on_frame(t(400)).unwrap();
        assert_eq!(
            f,
            Freeze {
                started_at: t(99),
                duration: Duration::from_millis(301)
            }
        );
        assert_eq!(
            d.on_frame(t(900)).unwrap().duration,
            Duration::from_millis(500)
        );
        assert_eq!(
            (d.count(), d.total(), d.longest()),
            (2, Duration::from_millis(801), Duration::from_millis(500))
        );
    }

    #[test]
    fn ongoing_stall_is_visible_before_it_ends() {
        let mut d = FreezeDetector::new(Duration::from_millis(33), 3, 8);
        d.on_frame(t(0));
        assert_eq!(d.current_stall(t(50)), None);
        assert_eq!(d.current_stall(t(1000)), Some(Duration::from_millis(1000)));
    }

    #[test]
    fn records_are_bounded() {
        let mut d = FreezeDetector::new(Duration::from_millis(10), 3, 4);
        for i in 0..20 {
            d.on_frame(t(i * 100));
        }
        assert_eq!(d.count(), 19);
        assert_eq!(d.recent().count(), 4);
        assert_eq!(d.recent().next().unwrap().started_at, t(1500));
    }

    /// WebRTC's rule measures the stream's own rate: at 10 frames/s a 250 ms gap is no
    /// freeze (under mean + 150 ms), at 30 frames/s it is; the first 4 gaps judge nothing.
    #[test]
    fn webrtc_s_rule_is_relative_to_the_measured_frame_rate() {
        let run = |interval: u64, gaps_before: u64, last: u64| {
            let mut d = FreezeDetector::new(Duration::from_millis(33), 3, 8);
            let mut now = 0;
            d.on_frame(t(now));
            for _ in 0..gaps_before {
                now += interval;
                d.on_frame(t(now));
            }
            d.on_frame(t(now + last));
            (d.count(), d.webrtc())
        };
        // 10 frames/s: mean (29·100 + 250)/30 = 105 ms, threshold 315 ms.
        assert_eq!(run(100, 40, 250), (40 + 1, (0, Duration::ZERO)));
        // 30 frames/s: mean (29·33 + 250)/30 ≈ 40 ms, threshold 190 ms.
        assert_eq!(run(33, 40, 250), (1, (1, Duration::from_millis(250))));
        // Only 3 gaps before it: too few to judge by WebRTC's rule.
        assert_eq!(run(33, 3, 250).1, (0, Duration::ZERO));
        // The gap itself is in the mean: after 4 gaps of 33 ms, 250 ms is a freeze (mean
        // 76 ms, threshold 229 ms) and 220 ms is not (mean 70 ms, threshold 220.4 ms).
        assert_eq!(run(33, 4, 250).1.0, 1);
        assert_eq!(run(33, 4, 220).1.0, 0);
    }

    #[test]
    fn time_going_backwards_is_ignored() {
        let mut d = FreezeDetector::new(Duration::from_millis(10), 3, 4);
        d.on_frame(t(100));
        assert_eq!(d.on_frame(t(50)), None);
        assert_eq!(d.on_frame(t(110)), None);
    }
}
