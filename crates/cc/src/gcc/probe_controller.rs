//! When to probe, as libwebrtc's `ProbeController` (shared/notes/picture-adaptation.md §6),
//! plus one cg trigger. A probe is a short cluster of packets sent at a rate above the
//! target (padding on top of media, [`crate::ControllerEvent::Probe`], for
//! [`PROBE_DURATION`] or six 1200-byte packets' time if longer); its result comes
//! from [`super::probe_estimator`].
//!
//! - At start: clusters at 3× and 6× the start rate (`first_exponential_probe_scale`,
//!   `second_exponential_probe_scale`), capped at the maximum rate.
//! - A result above 0.7× the rate of the last probe sent (`further_probe_threshold`) asks
//!   for a further probe at 2× the result; results are awaited for 1 s
//!   (`kMaxWaitingTimeForProbingResult`).
//! - In ALR, when the allowed (maximum) rate rises above the estimate: probes at 1× and 2×
//!   the new maximum (`OnMaxTotalAllocatedBitrate`).
//! - After a large drop of the estimate (below 0.66× within one update): once the
//!   delay-based detector has recovered, in ALR or less than 3 s after it ended, one probe
//!   at 0.85× the rate before the drop, within 5 s of the drop and at most every 5 s
//!   (`RequestProbe`).
//! - cg's addition ([`ProbeController::on_capacity_reset`]): when the link-capacity
//!   estimate is forgotten because the rate went above it (the bottleneck got faster, see
//!   [`super::rate_control`]), a probe at 2× the estimate, with further probes as at start,
//!   at most every [`CAPACITY_PROBE_INTERVAL`]. Reason: libwebrtc probes only at start, in
//!   ALR and after drops, so a sender using its whole estimate finds a faster link only by
//!   the additive climb. The request is kept while other probing is under way (or the
//!   interval has not passed) and carried out as soon as it is over, unless the estimate fell
//!   meanwhile: the reset fires once per capacity estimate, so a dropped request would leave
//!   the sender climbing until the next one.
//! - Near a rate the link was last found to saturate at (the last result of a probing
//!   sequence that did not probe on, forgotten at a large drop), that probe goes at
//!   [`NEAR_FACTOR`] × the estimate, with the shorter further-probe duration, and probes on
//!   only if the link carried it (a result above [`super::probe_estimator`]'s saturation
//!   ratio of its rate). Reason: a saturated result is 95 % of the link rate and the
//!   probe-seeded capacity estimate is narrow, so the climb passes it with the link still
//!   full, and a 2× probe there leaves `estimate × duration` of queue, which the delay
//!   detector reads as over-use.
//! - cg's second addition ([`crate::gcc::GccConfig::stall_probe_after`]): the same
//!   capacity probe after a stretch of additive increase without an over-use (in REMB mode:
//!   without a falling REMB). Reason: the reset above needs the receive rate to pass the
//!   estimate's mean + 3σ, which a smooth source reaches only by climbing there.
//!
//! The measurements behind these rules: `docs/notes/2026-11-28.md` ("Probing rules, figures").
//!
//! Periodic ALR probing (every 5 s at 2×) is off for camera video in libwebrtc and not
//! done here.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use cg_types::Bitrate;

/// Shortest cluster. libwebrtc's minimum is 15 ms and 5 packets with probe packets of up
/// to the MTU; cg-rtp's padding packets carry 255 bytes, so 30 ms gives at least 5 of them
/// from about 400 kbit/s on.
pub const PROBE_DURATION: Duration = Duration::from_millis(30);
/// Shortest further probe: libwebrtc's 15 ms (`min_probe_duration`), the default of
/// [`crate::gcc::GccConfig::further_probe_duration`] in REMB mode. A further probe goes out
/// because the last one did not fill the link, at twice its result, so it is the one that
/// overshoots the capacity, by up to 2×: the queue it leaves is `(rate − capacity) ×
/// duration`, and the receiver's delay detector sees it.
pub const FURTHER_PROBE_DURATION: Duration = Duration::from_millis(15);
/// A cluster also lasts at least as long as this many bytes take at its rate (6 packets of
/// 1200 bytes): at low rates media packets, which leave first, could otherwise fill the
/// whole cluster and leave fewer than [`super::probe_estimator::MIN_PACKETS`].
const PROBE_MIN_BYTES: u64 = 6 * 1200;
/// Initial probe factors of the start rate.
const INITIAL_FACTORS: [f64; 2] = [3.0, 6.0];
/// Cluster ids of the initial probes (ids start at 1): they are sent blind, at multiples of
/// the start rate that may be far above the capacity.
pub(crate) const INITIAL_CLUSTERS: u32 = INITIAL_FACTORS.len() as u32;
/// A result above this share of the last probe rate asks for a further probe.
const FURTHER_THRESHOLD: f64 = 0.7;
/// A further probe's rate in results.
const FURTHER_FACTOR: f64 = 2.0;
/// How long results are awaited before probing counts as complete.
pub const RESULT_WAIT: Duration = Duration::from_secs(1);
/// A drop below this share of the estimate is large.
const LARGE_DROP: f64 = 0.66;
/// The recovery probe's share of the rate before the drop.
const RECOVERY_FRACTION: f64 = 0.85;
/// The recovery probe must be expected to raise the estimate by this uncertainty.
const RECOVERY_UNCERTAINTY: f64 = 0.05;
/// The recovery probe only within this time of the drop.
const DROP_TIMEOUT: Duration = Duration::from_secs(5);
/// ...and at most this often.
const MIN_BETWEEN_RECOVERY: Duration = Duration::from_secs(5);
/// A recovery probe is allowed up to this long after ALR ended.
const ALR_ENDED_TIMEOUT: Duration = Duration::from_secs(3);
/// Shortest interval between two capacity probes (cg's trigger).
pub const CAPACITY_PROBE_INTERVAL: Duration = Duration::from_secs(2);
/// A capacity probe's rate in estimates near the rate the link was last found to saturate.
pub const NEAR_FACTOR: f64 = 1.5;
/// "Near": an estimate below this many times the saturation rate.
const NEAR_SPAN: f64 = 1.5;

/// A cluster being sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActiveProbe {
    /// Cluster identifier (tags the packets sent during it).
    pub id: u32,
    /// Its rate.
    pub rate: Bitrate,
    /// How long it runs.
    pub duration: Duration,
    /// When it ends.
    pub until: Instant,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    /// Clusters sent, results awaited until `deadline`; a result above `further` probes on,
    /// at or below it says the link is full (`saturated`).
    Waiting { deadline: Instant, further: Bitrate },
    /// Nothing awaited.
    Complete,
}

/// What the controller knows about ALR when a trigger fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AlrState {
    /// In ALR now.
    pub in_alr: bool,
    /// When the last ALR ended.
    pub ended: Option<Instant>,
}

/// The probe controller.
#[derive(Debug, Clone)]
pub struct ProbeController {
    max: Bitrate,
    capacity_probes: bool,
    /// Clusters to send: rate and shortest duration.
    pending: VecDeque<(Bitrate, Duration)>,
    active: Option<ActiveProbe>,
    started: VecDeque<ActiveProbe>,
    next_id: u32,
    state: State,
    estimate: Bitrate,
    large_drop: Option<(Instant, Bitrate)>,
    last_recovery_probe: Option<Instant>,
    last_capacity_probe: Option<Instant>,
    /// A capacity probe asked for and not yet started.
    capacity_wanted: bool,
    /// The last result of a probing sequence that did not probe on: the link's rate then.
    saturated: Option<Bitrate>,
    gap: Duration,
    further_duration: Duration,
    last_end: Option<Instant>,
    clusters_started: u64,
}

impl ProbeController {
    /// Initial probes from `start` (capped at `max`), sent from `now` on.
    /// `capacity_probes` enables cg's trigger on a link-capacity reset.
    pub fn new(start: Bitrate, max: Bitrate, capacity_probes: bool, now: Instant) -> Self {
        let mut c = ProbeController {
            max,
            capacity_probes,
            pending: VecDeque::new(),
            active: None,
            started: VecDeque::new(),
            next_id: 1,
            state: State::Complete,
            estimate: start,
            large_drop: None,
            last_recovery_probe: None,
            last_capacity_probe: None,
            capacity_wanted: false,
            saturated: None,
            gap: Duration::ZERO,
            further_duration: PROBE_DURATION,
            last_end: None,
            clusters_started: 0,
        };
        let rates = INITIAL_FACTORS.map(|f| start.mul_f64(f));
        c.initiate(&rates, Some(FURTHER_THRESHOLD), PROBE_DURATION, now);
        c
    }

    /// Leaves at least `gap` between the end of a cluster and the start of the next (REMB
    /// mode: the receiver tells clusters apart by the gap between them,
    /// [`super::probe_detector`]). Default none: send-side feedback names each packet's
    /// cluster.
    pub fn with_cluster_gap(mut self, gap: Duration) -> Self {
        self.gap = gap;
        self
    }

    /// Further probes last at least `shortest` (default [`PROBE_DURATION`], like every
    /// other cluster).
    pub fn with_further_duration(mut self, shortest: Duration) -> Self {
        self.further_duration = shortest;
        self
    }

    /// Queues clusters at `rates` (capped at the maximum), each lasting at least
    /// `shortest`; with `further`, a result above that share of the last of them probes on.
    fn initiate(
        &mut self,
        rates: &[Bitrate],
        further: Option<f64>,
        shortest: Duration,
        now: Instant,
    ) {
        let mut last = Bitrate::ZERO;
        let mut capped = false;
        for &r in rates {
            let r = if r >= self.max {
                capped = true;
                self.max
            } else {
                r
            };
            if r > Bitrate::ZERO && r > last {
                self.pending.push_back((r, shortest));
                last = r;
            }
            if capped {
                break;
            }
        }
        if further.is_some() {
            // A new sequence: what the link saturated at is to be measured again.
            self.saturated = None;
        }
        self.state = match further {
            Some(share) if !capped && last > Bitrate::ZERO => State::Waiting {
                deadline: now + RESULT_WAIT,
                further: last.mul_f64(share),
            },
            _ => State::Complete,
        };
    }

    /// Ends the running cluster if its time is up, without starting the next (the caller
    /// holds clusters back for now).
    pub fn end_finished(&mut self, now: Instant) {
        if let Some(a) = self.active.filter(|a| now >= a.until) {
            self.active = None;
            self.last_end = Some(a.until);
        }
    }

    /// When the running cluster ends, if one runs.
    pub fn active_until(&self) -> Option<Instant> {
        self.active.map(|a| a.until)
    }

    /// Ends a finished cluster and starts the next pending one: returns it (the caller
    /// emits [`crate::ControllerEvent::Probe`] with [`PROBE_DURATION`]).
    pub fn poll_start(&mut self, now: Instant) -> Option<ActiveProbe> {
        self.end_finished(now);
        if let State::Waiting { deadline, .. } = self.state
            && now >= deadline
            && self.pending.is_empty()
            && self.active.is_none()
        {
            self.state = State::Complete;
        }
        self.start_capacity_probe(now);
        if self.active.is_some() || self.last_end.is_some_and(|e| now < e + self.gap) {
            return None;
        }
        let (rate, shortest) = self.pending.pop_front()?;
        let duration = rate
            .time_to_send(cg_types::DataSize::bytes(PROBE_MIN_BYTES))
            .unwrap_or(shortest)
            .max(shortest);
        let p = ActiveProbe {
            id: self.next_id,
            rate,
            duration,
            until: now + duration,
        };
        self.next_id = self.next_id.wrapping_add(1).max(1);
        if let State::Waiting { further, .. } = self.state {
            // Results are awaited from the last cluster's start.
            self.state = State::Waiting {
                deadline: now + RESULT_WAIT,
                further,
            };
        }
        self.active = Some(p);
        self.clusters_started += 1;
        if self.started.len() >= 16 {
            self.started.pop_front();
        }
        self.started.push_back(p);
        Some(p)
    }

    /// The cluster being sent at `now`, if any.
    pub fn active(&self, now: Instant) -> Option<ActiveProbe> {
        self.active.filter(|a| now < a.until)
    }

    /// A cluster started earlier, by identifier (for its end time).
    pub fn cluster(&self, id: u32) -> Option<ActiveProbe> {
        self.started.iter().rev().find(|p| p.id == id).copied()
    }

    /// When [`poll_start`](Self::poll_start) has something to do.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let mut t = self.active.map(|a| a.until);
        if self.active.is_none()
            && !self.pending.is_empty()
            && let Some(e) = self.last_end
        {
            t = Some(e + self.gap);
        }
        if let State::Waiting { deadline, .. } = self.state {
            t = Some(t.map_or(deadline, |x| x.min(deadline)));
        }
        // A capacity probe waiting for the interval only (otherwise what blocks it has its
        // own time above, and a past `due` would be polled again and again).
        if self.capacity_wanted
            && self.state == State::Complete
            && self.active.is_none()
            && self.pending.is_empty()
            && let Some(last) = self.last_capacity_probe
        {
            let due = last + CAPACITY_PROBE_INTERVAL;
            t = Some(t.map_or(due, |x| x.min(due)));
        }
        t
    }

    /// Clusters started so far.
    pub fn clusters_started(&self) -> u64 {
        self.clusters_started
    }

    /// Whether a cluster started within `window` before `now`.
    pub fn started_within(&self, now: Instant, window: Duration) -> bool {
        self.started
            .back()
            .and_then(|p| p.until.checked_sub(p.duration))
            .is_some_and(|start| now.saturating_duration_since(start) <= window)
    }

    /// Whether a result of `rate` for the last cluster started says the link carried the
    /// cluster (above `FURTHER_THRESHOLD`, 0.7, of its rate, as [`Self::on_result`] judges it): a
    /// lower bound of the capacity, not the rate of a bottleneck.
    pub fn carried(&self, rate: Bitrate) -> bool {
        self.started
            .back()
            .is_some_and(|p| rate > p.rate.mul_f64(FURTHER_THRESHOLD))
    }

    /// Whether a cluster is waiting to start while none runs.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// A validated probe result.
    pub fn on_result(&mut self, rate: Bitrate, now: Instant) {
        let State::Waiting { further, deadline } = self.state else {
            return;
        };
        if now >= deadline {
            return;
        }
        if rate > further {
            // The link carried it.
            self.saturated = None;
            let next = rate.mul_f64(FURTHER_FACTOR);
            if next > self.estimate.max(rate) {
                self.initiate(&[next], Some(FURTHER_THRESHOLD), self.further_duration, now);
            }
        } else {
            // The best of the sequence's results: an earlier cluster's may arrive first.
            self.saturated = Some(self.saturated.map_or(rate, |s| s.max(rate)));
        }
    }

    /// The rate the link was last found to saturate at, if not forgotten since.
    pub fn saturated(&self) -> Option<Bitrate> {
        self.saturated
    }

    /// The sender's new target; records large drops. A fall cancels a capacity probe not
    /// yet started (the link is not faster after all).
    pub fn on_estimate(&mut self, estimate: Bitrate, now: Instant) {
        if estimate.as_bps_f64() < LARGE_DROP * self.estimate.as_bps_f64() {
            self.large_drop = Some((now, self.estimate));
            self.saturated = None;
        }
        if estimate < self.estimate {
            self.capacity_wanted = false;
        }
        self.estimate = estimate;
    }

    /// The allowed (maximum) rate changed: in ALR, probes at 1× and 2× a higher one.
    pub fn on_max_rate(&mut self, max: Bitrate, alr: AlrState, now: Instant) {
        let raised = max > self.max;
        self.max = max;
        if raised && alr.in_alr && self.state == State::Complete && max > self.estimate {
            self.initiate(&[max, max.mul_f64(2.0)], None, PROBE_DURATION, now);
        }
    }

    /// The delay-based detector is back to normal after an over-use: the recovery probe
    /// after a large drop (libwebrtc `RequestProbe`).
    pub fn on_recovered(&mut self, alr: AlrState, now: Instant) {
        let alr_recent = alr.in_alr
            || alr
                .ended
                .is_some_and(|e| now.saturating_duration_since(e) < ALR_ENDED_TIMEOUT);
        let Some((at, before)) = self.large_drop else {
            return;
        };
        if !alr_recent || self.state != State::Complete {
            return;
        }
        let probe = before.mul_f64(RECOVERY_FRACTION);
        let expected = probe.mul_f64(1.0 - RECOVERY_UNCERTAINTY);
        if expected > self.estimate
            && now.saturating_duration_since(at) < DROP_TIMEOUT
            && self
                .last_recovery_probe
                .is_none_or(|t| now.saturating_duration_since(t) > MIN_BETWEEN_RECOVERY)
        {
            self.last_recovery_probe = Some(now);
            self.initiate(&[probe], None, PROBE_DURATION, now);
        }
    }

    /// cg's trigger: the link-capacity estimate was forgotten because the rate went above
    /// it. A probe at 2× the estimate (or [`NEAR_FACTOR`]× near the rate the link last
    /// saturated at), with further probes: now, or once the probing under way is complete
    /// and [`CAPACITY_PROBE_INTERVAL`] has passed since the last one (the caller starts it
    /// with [`poll_start`](Self::poll_start)).
    pub fn on_capacity_reset(&mut self, now: Instant) {
        if self.capacity_probes {
            self.capacity_wanted = true;
            self.start_capacity_probe(now);
        }
    }

    /// Queues the capacity probe asked for if nothing else is under way.
    fn start_capacity_probe(&mut self, now: Instant) {
        if !self.capacity_wanted
            || self.state != State::Complete
            || self.active.is_some()
            || !self.pending.is_empty()
            || self
                .last_capacity_probe
                .is_some_and(|t| now.saturating_duration_since(t) < CAPACITY_PROBE_INTERVAL)
        {
            return;
        }
        self.capacity_wanted = false;
        self.last_capacity_probe = Some(now);
        let near = self
            .saturated
            .is_some_and(|s| self.estimate < s.mul_f64(NEAR_SPAN));
        if near {
            let rate = self.estimate.mul_f64(NEAR_FACTOR);
            let share = super::probe_estimator::SATURATED_RATIO;
            self.initiate(&[rate], Some(share), self.further_duration, now);
        } else {
            let rate = self.estimate.mul_f64(FURTHER_FACTOR);
            self.initiate(&[rate], Some(FURTHER_THRESHOLD), PROBE_DURATION, now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(c: &mut ProbeController, now: Instant) -> Vec<Bitrate> {
        let mut out = Vec::new();
        let mut t = now;
        while let Some(p) = c.poll_start(t) {
            out.push(p.rate);
            t = p.until;
        }
        out
    }

    #[test]
    fn initial_probes_at_three_and_six_times_the_start_rate_then_further_at_twice_the_result() {
        let t0 = Instant::now();
        let mut c = ProbeController::new(Bitrate::kbps(300), Bitrate::mbps(5), true, t0);
        assert_eq!(drain(&mut c, t0), [Bitrate::kbps(900), Bitrate::kbps(1800)]);
        let t = t0 + Duration::from_millis(200);
        // 1.3 Mbit/s > 0.7 × 1.8: probe on at 2.6 Mbit/s.
        c.on_result(Bitrate::kbps(1300), t);
        assert_eq!(drain(&mut c, t), [Bitrate::kbps(2600)]);
        // 1.5 Mbit/s < 0.7 × 2.6: done.
        c.on_result(Bitrate::kbps(1500), t + Duration::from_millis(100));
        assert!(drain(&mut c, t + Duration::from_millis(100)).is_empty());
    }

    #[test]
    fn a_further_probe_is_short_and_a_first_one_is_not() {
        let t0 = Instant::now();
        let mut c = ProbeController::new(Bitrate::mbps(1), Bitrate::mbps(20), true, t0)
            .with_further_duration(FURTHER_PROBE_DURATION);
        let first = c.poll_start(t0).unwrap();
        assert_eq!(first.duration, PROBE_DURATION, "3 Mbit/s: 30 ms");
        let second = c.poll_start(first.until).unwrap();
        assert_eq!(second.duration, PROBE_DURATION, "6 Mbit/s: 30 ms");
        c.on_result(Bitrate::mbps(5), second.until);
        let further = c.poll_start(second.until).unwrap();
        assert_eq!(further.rate, Bitrate::mbps(10));
        assert_eq!(further.duration, FURTHER_PROBE_DURATION, "10 Mbit/s: 15 ms");
        // At a low rate six packets take longer than that.
        let mut low = ProbeController::new(Bitrate::kbps(100), Bitrate::mbps(20), true, t0)
            .with_further_duration(FURTHER_PROBE_DURATION);
        drain(&mut low, t0);
        low.on_result(Bitrate::kbps(500), t0 + Duration::from_millis(300));
        let p = low.poll_start(t0 + Duration::from_millis(300)).unwrap();
        assert_eq!(p.rate, Bitrate::mbps(1));
        assert_eq!(
            p.duration,
            Duration::from_micros(57_600),
            "7200 bytes at 1 Mbit/s"
        );
    }

    #[test]
    fn probes_stop_at_the_maximum_rate() {
        let t0 = Instant::now();
        let mut c = ProbeController::new(Bitrate::kbps(300), Bitrate::mbps(1), true, t0);
        assert_eq!(drain(&mut c, t0), [Bitrate::kbps(900), Bitrate::mbps(1)]);
        c.on_result(Bitrate::kbps(990), t0 + Duration::from_millis(100));
        assert!(drain(&mut c, t0 + Duration::from_millis(100)).is_empty());
    }

    #[test]
    fn late_results_do_not_probe_further() {
        let t0 = Instant::now();
        let mut c = ProbeController::new(Bitrate::kbps(300), Bitrate::mbps(5), false, t0);
        drain(&mut c, t0);
        let late = t0 + Duration::from_secs(2);
        c.poll_start(late);
        c.on_result(Bitrate::kbps(1700), late);
        assert!(drain(&mut c, late).is_empty());
    }

    #[test]
    fn recovery_probe_after_a_large_drop_only_in_or_just_after_alr() {
        let t0 = Instant::now();
        let mut c = ProbeController::new(Bitrate::kbps(300), Bitrate::mbps(5), false, t0);
        drain(&mut c, t0);
        let t = t0 + Duration::from_secs(2);
        c.poll_start(t);
        c.on_estimate(Bitrate::mbps(2), t);
        c.on_estimate(Bitrate::kbps(1000), t);
        c.on_recovered(AlrState::default(), t);
        assert!(drain(&mut c, t).is_empty(), "not in ALR");
        let alr = AlrState {
            in_alr: true,
            ended: None,
        };
        c.on_recovered(alr, t);
        assert_eq!(drain(&mut c, t), [Bitrate::kbps(1700)]);
        // At most every 5 s.
        c.on_recovered(alr, t + Duration::from_secs(1));
        assert!(drain(&mut c, t + Duration::from_secs(1)).is_empty());
    }

    #[test]
    fn a_raised_maximum_in_alr_probes_at_once_and_twice_it() {
        let t0 = Instant::now();
        let mut c = ProbeController::new(Bitrate::kbps(300), Bitrate::mbps(1), false, t0);
        drain(&mut c, t0);
        let t = t0 + Duration::from_secs(2);
        c.poll_start(t);
        c.on_estimate(Bitrate::kbps(800), t);
        let alr = AlrState {
            in_alr: true,
            ended: None,
        };
        c.on_max_rate(Bitrate::mbps(2), alr, t);
        assert_eq!(
            drain(&mut c, t),
            [Bitrate::mbps(2)],
            "2× is above the new maximum"
        );
        c.on_max_rate(Bitrate::mbps(3), AlrState::default(), t);
        assert!(drain(&mut c, t).is_empty(), "not in ALR");
    }

    #[test]
    fn capacity_reset_probes_at_twice_the_estimate_at_most_every_two_seconds() {
        let t0 = Instant::now();
        let mut c = ProbeController::new(Bitrate::kbps(300), Bitrate::mbps(5), true, t0);
        drain(&mut c, t0);
        let t = t0 + Duration::from_secs(2);
        c.poll_start(t);
        c.on_estimate(Bitrate::mbps(1), t);
        c.on_capacity_reset(t);
        assert_eq!(drain(&mut c, t), [Bitrate::mbps(2)]);
        let t1 = t + Duration::from_millis(1100);
        c.poll_start(t1);
        c.on_capacity_reset(t1);
        assert!(drain(&mut c, t1).is_empty(), "within 2 s of the last");
        assert_eq!(c.poll_timeout(), Some(t + CAPACITY_PROBE_INTERVAL));
        assert_eq!(
            drain(&mut c, t + CAPACITY_PROBE_INTERVAL),
            [Bitrate::mbps(2)],
            "kept, and started once the interval passed"
        );
        assert_eq!(c.clusters_started(), 4);
        // Asked for while another cluster is queued: that one first; meanwhile the next due
        // time is its end, not the long-past end of the capacity interval.
        let t2 = t + CAPACITY_PROBE_INTERVAL * 3;
        c.poll_start(t2);
        let in_alr = AlrState {
            in_alr: true,
            ended: None,
        };
        c.on_max_rate(Bitrate::mbps(10), in_alr, t2);
        c.on_capacity_reset(t2);
        let raised = c.poll_start(t2).expect("the raised maximum's probe");
        assert_eq!(raised.rate, Bitrate::mbps(10));
        assert_eq!(c.poll_timeout(), Some(raised.until));
        assert_eq!(
            drain(&mut c, raised.until),
            [Bitrate::mbps(2)],
            "then the capacity probe"
        );
        let mut off = ProbeController::new(Bitrate::kbps(300), Bitrate::mbps(5), false, t0);
        drain(&mut off, t0);
        off.poll_start(t);
        off.on_capacity_reset(t);
        assert!(drain(&mut off, t).is_empty(), "switched off");
    }

    #[test]
    fn a_capacity_reset_during_other_probing_probes_after_it_unless_the_estimate_fell() {
        let t0 = Instant::now();
        let mut c = ProbeController::new(Bitrate::kbps(300), Bitrate::mbps(5), true, t0);
        // The initial probes' results are awaited until 1 s after the last cluster started.
        assert_eq!(drain(&mut c, t0).len(), 2);
        let t = t0 + Duration::from_millis(200);
        c.on_estimate(Bitrate::mbps(1), t);
        c.on_capacity_reset(t);
        assert!(drain(&mut c, t).is_empty(), "initial results still awaited");
        let done = t0 + Duration::from_secs(2);
        assert_eq!(
            drain(&mut c, done),
            [Bitrate::mbps(2)],
            "then the capacity probe"
        );

        let mut fell = ProbeController::new(Bitrate::kbps(300), Bitrate::mbps(5), true, t0);
        drain(&mut fell, t0);
        fell.on_estimate(Bitrate::mbps(1), t);
        fell.on_capacity_reset(t);
        fell.on_estimate(Bitrate::kbps(850), t + Duration::from_millis(300));
        assert!(
            drain(&mut fell, done).is_empty(),
            "an over-use since: no probe"
        );
    }

    #[test]
    fn near_the_rate_the_link_saturated_at_a_capacity_probe_is_smaller_and_probes_on_only_if_carried()
     {
        let t0 = Instant::now();
        let mut c = ProbeController::new(Bitrate::mbps(1), Bitrate::mbps(20), true, t0)
            .with_further_duration(FURTHER_PROBE_DURATION);
        drain(&mut c, t0);
        // The 6 Mbit/s cluster came back at 2.3: below 0.7 × 6, the link is full.
        let t = t0 + Duration::from_millis(200);
        c.on_result(Bitrate::kbps(2300), t);
        assert!(drain(&mut c, t).is_empty());
        assert_eq!(c.saturated(), Some(Bitrate::kbps(2300)));
        // The climb passes the capacity estimate a few seconds later, the link still full.
        let t1 = t0 + Duration::from_secs(5);
        c.poll_start(t1);
        c.on_estimate(Bitrate::kbps(2400), t1);
        c.on_capacity_reset(t1);
        let p = c.poll_start(t1).expect("a capacity probe");
        assert_eq!(p.rate, Bitrate::kbps(3600), "1.5×, not 2×");
        assert_eq!(
            p.duration,
            Duration::from_millis(16),
            "the further-probe duration, or six packets' time if longer"
        );
        // 2.5 Mbit/s received of 3.6 sent (below 0.9 ×): full, no further probe.
        c.on_result(Bitrate::kbps(2375), p.until);
        assert!(drain(&mut c, p.until).is_empty());
        assert_eq!(c.saturated(), Some(Bitrate::kbps(2375)));
        // Carried whole (the link got faster): on at 2× the result, as from any probe.
        let t2 = t1 + CAPACITY_PROBE_INTERVAL;
        c.poll_start(t2);
        c.on_estimate(Bitrate::kbps(2500), t2);
        c.on_capacity_reset(t2);
        let p = c.poll_start(t2).expect("a capacity probe");
        assert_eq!(p.rate, Bitrate::kbps(3750));
        c.on_result(Bitrate::kbps(3600), p.until);
        assert_eq!(drain(&mut c, p.until), [Bitrate::kbps(7200)]);
        assert_eq!(c.saturated(), None);
        // A large drop forgets the saturation rate: 2× again.
        let t3 = t2 + CAPACITY_PROBE_INTERVAL * 2;
        c.poll_start(t3);
        c.on_result(Bitrate::kbps(5000), t3 - Duration::from_millis(500));
        c.on_estimate(Bitrate::kbps(5000), t3);
        c.on_estimate(Bitrate::kbps(1000), t3);
        c.on_estimate(Bitrate::kbps(1100), t3);
        c.on_capacity_reset(t3);
        assert_eq!(drain(&mut c, t3), [Bitrate::kbps(2200)]);
    }
}
