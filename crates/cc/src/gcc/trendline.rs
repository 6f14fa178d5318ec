//! libwebrtc's trendline estimator (`goog_cc/trendline_estimator.cc`), the send-side delay
//! detector libwebrtc has shipped since 2017 in place of MMSys16's Kalman filter: a
//! least-squares slope of the smoothed accumulated one-way delay variation over the last
//! groups, compared with its own adaptive threshold.
//!
//! Per completed group with `dm = (ti − ti−1) − (Ti − Ti−1)` (eq. (4)):
//! - `accumulated += dm`; `smoothed = 0.9·smoothed + 0.1·accumulated`;
//! - the slope `trend` of `smoothed` over arrival time across the last 20 groups (kept until
//!   20 are known);
//! - `modified = min(n, 60) · trend · 4`, `n` the groups seen (at most 1000);
//! - over-use when `modified > threshold` for more than 10 ms of send time over at least two
//!   groups in a row and `trend` is not falling; under-use when `modified < −threshold`;
//!   normal otherwise;
//! - the threshold adapts as MMSys16 eq. (17)–(18) with its own gains (`k_up` 0.0087,
//!   `k_down` 0.039 per ms, at most 100 ms a step), skips samples more than 15 beyond it
//!   and stays within 6–600, starting at 12.5.
//!
//! It brings its own threshold and over-use timer: [`crate::gcc::GccConfig::threshold`] and
//! `overuse_time` do not apply to it.

use std::collections::VecDeque;

use crate::gcc::detector::Signal;

/// Groups in the regression window (`kDefaultTrendlineWindowSize`).
const WINDOW: usize = 20;
/// Smoothing of the accumulated delay (`kDefaultTrendlineSmoothingCoeff`).
const SMOOTHING: f64 = 0.9;
/// Gain on the slope (`kDefaultTrendlineThresholdGain`).
const GAIN: f64 = 4.0;
/// Cap on the group count that scales the slope (`kMinNumDeltas`).
const MIN_NUM_DELTAS: u32 = 60;
/// Cap on the group count (`kDeltaCounterMax`).
const DELTA_COUNTER_MAX: u32 = 1000;
/// Time over the threshold before over-use, ms (`kOverUsingTimeThreshold`).
const OVERUSING_TIME_MS: f64 = 10.0;
/// Samples this far beyond the threshold do not adapt it (`kMaxAdaptOffsetMs`).
const MAX_ADAPT_OFFSET: f64 = 15.0;
const K_UP: f64 = 0.0087;
const K_DOWN: f64 = 0.039;
const THRESHOLD_MIN: f64 = 6.0;
const THRESHOLD_MAX: f64 = 600.0;
const THRESHOLD_INITIAL: f64 = 12.5;
/// Longest time step of one threshold update, ms.
const MAX_TIME_DELTA_MS: f64 = 100.0;

/// The trendline estimator and its detector.
#[derive(Debug, Clone)]
pub struct Trendline {
    num_deltas: u32,
    first_arrival_ms: Option<f64>,
    accumulated: f64,
    smoothed: f64,
    /// (arrival ms since the first group, smoothed delay).
    hist: VecDeque<(f64, f64)>,
    prev_trend: f64,
    modified_trend: f64,
    threshold: f64,
    last_update_ms: Option<f64>,
    time_over_using: Option<f64>,
    overuse_counter: u32,
    signal: Signal,
}

impl Default for Trendline {
    fn default() -> Self {
        Trendline {
            num_deltas: 0,
            first_arrival_ms: None,
            accumulated: 0.0,
            smoothed: 0.0,
            hist: VecDeque::with_capacity(WINDOW + 1),
            prev_trend: 0.0,
            modified_trend: 0.0,
            threshold: THRESHOLD_INITIAL,
            last_update_ms: None,
            time_over_using: None,
            overuse_counter: 0,
            signal: Signal::Normal,
        }
    }
}

impl Trendline {
    /// A group completed: its delay variation `dm` (arrival minus send delta) and send
    /// delta to the previous one, its arrival at `arrival_ms`. Returns the signal assigned,
    /// `None` while over the threshold but not yet long enough (the last signal stands).
    pub fn update(&mut self, dm: f64, send_delta_ms: f64, arrival_ms: f64) -> Option<Signal> {
        if !dm.is_finite() || !arrival_ms.is_finite() {
            return None;
        }
        self.num_deltas = (self.num_deltas + 1).min(DELTA_COUNTER_MAX);
        let first = *self.first_arrival_ms.get_or_insert(arrival_ms);
        self.accumulated += dm;
        self.smoothed = SMOOTHING * self.smoothed + (1.0 - SMOOTHING) * self.accumulated;
        self.hist.push_back((arrival_ms - first, self.smoothed));
        if self.hist.len() > WINDOW {
            self.hist.pop_front();
        }
        let trend = if self.hist.len() == WINDOW {
            slope(&self.hist).unwrap_or(self.prev_trend)
        } else {
            self.prev_trend
        };
        self.detect(trend, send_delta_ms, arrival_ms)
    }

    fn detect(&mut self, trend: f64, send_delta_ms: f64, now_ms: f64) -> Option<Signal> {
        if self.num_deltas < 2 {
            self.signal = Signal::Normal;
            return Some(Signal::Normal);
        }
        let modified = f64::from(self.num_deltas.min(MIN_NUM_DELTAS)) * trend * GAIN;
        self.modified_trend = modified;
        let out = if modified > self.threshold {
            let t = match self.time_over_using {
                // Over-using half the time since the previous group.
                None => send_delta_ms / 2.0,
                Some(t) => t + send_delta_ms,
            };
            self.time_over_using = Some(t);
            self.overuse_counter += 1;
            if t > OVERUSING_TIME_MS && self.overuse_counter > 1 && trend >= self.prev_trend {
                self.time_over_using = Some(0.0);
                self.overuse_counter = 0;
                Some(Signal::Overuse)
            } else {
                None
            }
        } else if modified < -self.threshold {
            self.time_over_using = None;
            self.overuse_counter = 0;
            Some(Signal::Underuse)
        } else {
            self.time_over_using = None;
            self.overuse_counter = 0;
            Some(Signal::Normal)
        };
        if let Some(s) = out {
            self.signal = s;
        }
        self.prev_trend = trend;
        self.update_threshold(modified, now_ms);
        out
    }

    fn update_threshold(&mut self, modified: f64, now_ms: f64) {
        let last = *self.last_update_ms.get_or_insert(now_ms);
        self.last_update_ms = Some(now_ms);
        if modified.abs() > self.threshold + MAX_ADAPT_OFFSET {
            // A spike (a sudden capacity drop) does not drag the threshold up.
            return;
        }
        let k = if modified.abs() < self.threshold {
            K_DOWN
        } else {
            K_UP
        };
        let dt = (now_ms - last).clamp(0.0, MAX_TIME_DELTA_MS);
        self.threshold = (self.threshold + k * (modified.abs() - self.threshold) * dt)
            .clamp(THRESHOLD_MIN, THRESHOLD_MAX);
    }

    /// `min(n, 60) · trend · 4` of the last group.
    pub fn modified_trend(&self) -> f64 {
        self.modified_trend
    }

    /// The threshold the next group is compared with.
    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    /// The last signal assigned.
    pub fn signal(&self) -> Signal {
        self.signal
    }
}

/// The least-squares slope of `y` over `x`; `None` when every `x` is the same.
fn slope(points: &VecDeque<(f64, f64)>) -> Option<f64> {
    let n = points.len() as f64;
    let (sx, sy) = points
        .iter()
        .fold((0.0, 0.0), |(sx, sy), &(x, y)| (sx + x, sy + y));
    let (xa, ya) = (sx / n, sy / n);
    let (num, den) = points.iter().fold((0.0, 0.0), |(num, den), &(x, y)| {
        (num + (x - xa) * (y - ya), den + (x - xa) * (x - xa))
    });
    (den != 0.0).then(|| num / den)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Groups every 33 ms whose arrival spacing exceeds the send spacing by `extra` ms.
    fn feed(t: &mut Trendline, from: usize, n: usize, extra: f64) -> Vec<Option<Signal>> {
        (from..from + n)
            .map(|i| t.update(extra, 33.0, i as f64 * (33.0 + extra)))
            .collect()
    }

    #[test]
    fn the_slope_is_a_least_squares_fit() {
        let pts: VecDeque<(f64, f64)> = (0..5)
            .map(|i| (f64::from(i), 2.0 * f64::from(i) + 1.0))
            .collect();
        assert_eq!(slope(&pts), Some(2.0));
        let flat: VecDeque<(f64, f64)> = (0..5).map(|i| (1.0, f64::from(i))).collect();
        assert_eq!(slope(&flat), None);
    }

    /// A steady path is normal and lowers the threshold to its floor; a queue that grows by
    /// 1 ms a group (a 3 % overload) is over-use within about a second, once the smoothed
    /// delay's slope over the window clears the threshold; a draining one is under-use.
    #[test]
    fn growing_delay_is_overuse_and_shrinking_delay_is_underuse() {
        let mut t = Trendline::default();
        let steady = feed(&mut t, 0, 100, 0.0);
        assert!(
            steady.iter().all(|s| *s == Some(Signal::Normal)),
            "{steady:?}"
        );
        assert_eq!(t.threshold(), THRESHOLD_MIN);
        let growing = feed(&mut t, 100, 40, 1.0);
        let first = growing
            .iter()
            .position(|s| *s == Some(Signal::Overuse))
            .expect("over-use");
        assert!((20..35).contains(&first), "over-use after {first} groups");
        let mut t = Trendline::default();
        feed(&mut t, 0, 100, 0.0);
        let draining = feed(&mut t, 100, 40, -1.0);
        assert!(draining.contains(&Some(Signal::Underuse)), "{draining:?}");
        assert!(!draining.contains(&Some(Signal::Overuse)));
    }

    /// One group over the threshold is not over-use (libwebrtc wants two and 10 ms).
    #[test]
    fn a_single_late_group_is_not_overuse() {
        let mut t = Trendline::default();
        feed(&mut t, 0, 100, 0.0);
        let spike = t.update(40.0, 33.0, 100.0 * 33.0 + 40.0);
        assert_ne!(spike, Some(Signal::Overuse));
        assert!(
            !t.update(-40.0, 33.0, 101.0 * 33.0)
                .is_some_and(|s| s == Signal::Overuse)
        );
    }

    #[test]
    fn non_finite_input_is_ignored() {
        let mut t = Trendline::default();
        assert_eq!(t.update(f64::NAN, 33.0, 0.0), None);
        assert_eq!(t.update(0.0, 33.0, f64::INFINITY), None);
        assert_eq!(t.num_deltas, 0);
    }
}
