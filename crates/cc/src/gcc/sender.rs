//! GCC's sender: the loss-based controller, `A = min(Ar, As)`, the pacing factor, and in
//! send-side mode the delay-based controller fed from transport-wide feedback.
//!
//! - REMB mode ([`GccMode::ReceiverSideRemb`]): `Ar` arrives in REMB messages; each one caps
//!   `As` (2013 eq. (2)); RR loss reports drive eq. (5).
//! - Send-side mode ([`GccMode::SendSideTwcc`]): per-packet arrival times from feedback feed
//!   the same [`DelayBasedController`] the receiver would run, grouped by frame when the
//!   transport reports frame ends ([`Controller::on_frame_sent`]), else in 15 ms send bursts;
//!   the loss fraction is counted from the same feedback over the last `loss_interval` and
//!   drives eq. (5) at every report, decreases at most once per `loss_interval` (RR loss
//!   figures are then ignored, the per-packet ones being exact). REMB values are ignored in
//!   this mode.
//!
//! The target `A = min(Ar, As)` goes to the encoder; the pacer gets `f·A` with `f = 1.5`
//! (MMSys16 §3.5). The controller also estimates the bottleneck queuing delay: in send-side
//! mode the one-way delay of each acknowledged packet over its minimum of the last 30–60 s
//! ([`crate::base_delay::BaseDelay`], as SCReAM),
//! in REMB mode the RTT of each receiver report over its minimum (once a second or so).
//! While it is above [`GccConfig::standing_queue_pacing`] the pacer gets `A`, so that a full
//! bottleneck queue drains instead of dropping a key frame paced faster than the capacity.
//! Every rate stays within `[min_bitrate, max_bitrate]`. Feedback's arrival times pass
//! through one continuous remote clock first (`gcc/time.rs`, counted as `remote_clock_steps`),
//! so a receiver whose clock steps (restarted, set anew) is followed from where it was.
//!
//! With [`GccConfig::probing`] both modes send libwebrtc's probe clusters
//! ([`crate::gcc::probe_controller`]). Send-side mode measures them from its feedback; in
//! REMB mode the receiver measures them ([`crate::gcc::probe_detector`]) and the REMB
//! brings the result; the sender there keeps its own
//! link-capacity estimate from the REMB values for the capacity probe and the pacing cap.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use cg_types::{Bitrate, DataSize};

use crate::base_delay::BaseDelay;
use crate::controller::{
    ConfigError, Controller, ControllerEvent, ControllerStats, Feedback, FeedbackKind, LossReport,
    MediaQueue, PacketKind, SentPacket,
};
use crate::gcc::alr::AlrDetector;
use crate::gcc::arrival::GroupKey;
use crate::gcc::config::{GccConfig, GccMode, Grouping};
use crate::gcc::delay_based::{DelayBasedController, DelayBasedStats};
use crate::gcc::detector::Signal;
use crate::gcc::history::{Fate, SentHistory};
use crate::gcc::loss::{LossBand, LossController, LossParams};
use crate::gcc::probe_controller::{AlrState, ProbeController, RESULT_WAIT};
use crate::gcc::probe_detector::MAX_PADDING_GAP;
use crate::gcc::probe_estimator::ClusterStats;
use crate::gcc::push_back::PushBack;
use crate::gcc::rate_control::LinkCapacity;
use crate::gcc::rate_control::RateState;
use crate::gcc::standing::StandingQueue;
use crate::gcc::time::{RemoteClock, micros_since};

/// Probe clusters whose feedback is still awaited, at most.
const MAX_CLUSTERS: usize = 16;

/// Send-burst span used in send-side mode when the config asks for frame grouping: about
/// half a frame interval at 30 frames/s, so that the packets of one paced frame mostly fall
/// in one group, as eq. (4) assumes. (libwebrtc uses 5 ms with its trendline estimator; with
/// the scalar Kalman filter, 5 ms groups split paced frames and the in-frame queue build-up
/// becomes measurement noise, which lets the queue grow.)
const SEND_SIDE_BURST: Duration = Duration::from_millis(15);

/// The base delay behind the standing-queue estimate: the minimum of the open 30 s slot and
/// the one before (30–60 s of history), long enough to see the queue empty, short enough to
/// follow a route change within a minute.
const BASE_DELAY_SLOT: Duration = Duration::from_secs(30);
const BASE_DELAY_SLOTS: usize = 1;

/// Typed GCC sender state for logs and plots.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct GccStats {
    /// `A = min(Ar, As)`.
    pub target: Bitrate,
    /// `f·A`.
    pub pacing: Bitrate,
    /// `Ar` as last known at the sender (`None` before the first REMB).
    pub a_r: Option<Bitrate>,
    /// `As`.
    pub a_s: Bitrate,
    /// Delay-based decrease events: `Ar` updates that reduced `As` (2013 §IV-B).
    pub n_dd: u64,
    /// The latest RTT sample.
    pub rtt: Option<Duration>,
    /// Send-side mode: the delay-based quantities.
    pub delay: Option<DelayBasedStats>,
    /// Feedback entries ignored (unknown sequence number or duplicate).
    pub ignored_results: u64,
    /// Losses left out of eq. (5) because the path delivered nothing for a while: packets
    /// sent during a feedback silence (send-side mode) or while receiver reports showed
    /// nothing arriving (REMB mode), then found lost.
    pub unheard_losses: u64,
}

impl GccConfig {
    /// The sender-side controller, or the first value [`validate`](Self::validate) refuses.
    pub fn build_controller(&self, now: Instant) -> Result<GccController, ConfigError> {
        self.validate()?;
        Ok(GccController::new(self, now))
    }
}

/// The GCC sender-side controller.
#[derive(Debug, Clone)]
pub struct GccController {
    mode: GccMode,
    min: Bitrate,
    max: Bitrate,
    pacing_factor: f64,
    pacing_factor_unbounded: f64,
    pacing_burst: Duration,
    cap_as_by_ar: bool,
    measured_rtt: bool,
    loss_high: f64,
    loss_interval: Duration,
    burst: Duration,
    group_by_frame: bool,
    frame: u64,
    frames_marked: bool,
    base: Instant,
    history: SentHistory,
    delay: Option<DelayBasedController>,
    loss: LossController,
    a_r: Option<Bitrate>,
    n_dd: u64,
    rtt: Option<Duration>,
    mean_packet: f64,
    /// Per-report (received, lost) changes over the last `loss_interval`.
    loss_window: VecDeque<(Instant, i64, i64)>,
    last_loss_decrease: Option<Instant>,
    ignored: u64,
    standing_queue: Option<Duration>,
    base_delay: BaseDelay,
    remote_clock: RemoteClock,
    queue_delay: Option<Duration>,
    standing_decrease: Option<StandingQueue>,
    pace_at_capacity: Option<f64>,
    standing_decreases: u64,
    probe: Option<ProbeController>,
    alr: AlrDetector,
    /// Clusters awaiting their result, with their end (µs since `base`).
    clusters: VecDeque<(ClusterStats, i64)>,
    /// Newest send time (µs since `base`) of a packet reported received.
    newest_acked_us: Option<i64>,
    probing_rate: Option<Bitrate>,
    events: VecDeque<ControllerEvent>,
    upward_resets: u64,
    last_signal: Signal,
    /// [`GccConfig::stall_probe_after`].
    stall_probe_after: Option<Duration>,
    /// The last over-use signal or stall probe: when the additive climb was last checked.
    last_climb_check: Option<Instant>,
    probe_results: u64,
    /// Probe results applied that found the link full (send-side).
    probes_saturated: u64,
    /// REMB mode: `α` of eq. (3), to take the receiver's `R` at a decrease from the REMB.
    alpha: f64,
    /// REMB mode: the link capacity as the receiver saw it at its decreases (each REMB
    /// below the previous one is `α·R`), for the capacity probe.
    remb_capacity: LinkCapacity,
    /// REMB mode: the last REMB value, and whether it was below the one before.
    last_remb: Option<(Bitrate, bool)>,
    /// Whether the link has pushed back lately: an over-use, a REMB under the target (REMB
    /// mode: the receiver's over-use), a standing queue.
    push_back: PushBack,
    /// Send-side over-uses counted so far (each a push-back).
    overuses_seen: u64,
    /// The bottleneck queuing delay measured when the link last pushed back by an over-use;
    /// `None` after another sign (a standing queue, a REMB under the target) or none.
    queue_at_overuse: Option<Duration>,
    /// REMB mode: media waits in the pacer, so a cluster would not start now.
    media_waiting: bool,
    /// Media bytes in the pacer, as [`Controller::on_media_queue`] last said.
    media_queued: DataSize,
    /// When the feedback the controller runs on (per-packet reports, or REMBs in REMB mode)
    /// last arrived. A gap of [`FEEDBACK_SILENCE`] ([`REMB_SILENCE`]) is a silence, which
    /// restarts the stall clock ([`GccConfig::stall_probe_after`]): no feedback, no climb.
    last_feedback: Option<Instant>,
    /// Send-side mode: the send times (µs since `base`, exclusive, inclusive) of the packets
    /// sent while no feedback came back, the last silence (see [`FEEDBACK_SILENCE`]).
    unheard: Option<(i64, i64)>,
    /// Losses of packets sent during a feedback silence, left out of eq. (5).
    unheard_losses: u64,
    /// REMB mode: (extended highest sequence number, cumulative lost) of the last receiver
    /// report.
    rr_last: Option<(u32, i64)>,
    /// REMB mode: media packets sent since the last receiver report, and in the interval
    /// before it.
    rr_sent: (i64, i64),
    /// REMB mode: packets sent while the receiver got nothing, whose losses are still to be
    /// excused, and in how many more reports (see [`Self::on_receiver_report`]).
    rr_unheard: (i64, u8),
}

/// REMB mode: the losses of a forward silence are excused in this many receiver reports
/// after it (the first may come before any packet sent after the silence arrived).
const UNHEARD_REPORTS: u8 = 2;

/// Send-side mode: a gap between two per-packet reports this long is a silence (cg-rtp's
/// session halves the rate after the same 0.5 s, see its `FeedbackLossResponse`). The
/// packets sent during it and found lost when feedback returns are left out of the loss
/// fraction of eq. (5) (the delays of those that arrived are no `dm` of eq. (4) either, see
/// [`GccConfig::max_delay_jump`](crate::gcc::GccConfig::max_delay_jump)): a path that
/// delivered nothing for a while (a link outage, a dead return path) lost them whatever the
/// rate was, the session already cut the rate for the silence, and counting them again cut
/// `As` by a third after every outage. One loss event, one reduction, as TCP's recovery
/// counts a window's losses once (RFC 5681 §3.2).
const FEEDBACK_SILENCE: Duration = Duration::from_millis(500);

/// REMB mode: a gap between two REMBs this long is a silence (REMBs come with every
/// receiver report, 0.4–1.2 s apart, and at once on a drop; cg-rtp's session halves the
/// rate after the same 3 s).
const REMB_SILENCE: Duration = Duration::from_secs(3);

/// A bottleneck rate found by an over-use at this share of the maximum bitrate or above,
/// with the bottleneck queue then under [`SHORT_QUEUE`], is the flow's own rate, not a link
/// limit: the pacing rate ignores it.
const FOUND_AT_MAX: f64 = 0.95;

/// See [`FOUND_AT_MAX`]: a queue a link at the flow's rate would have built by the time it
/// reads as an over-use (a 1200-byte packet takes 4.8 ms at 2 Mbit/s, a camera frame there
/// 30 ms), and more than a frame's burst leaves on a link ten times the flow's rate (a 20 kB
/// frame at 50 Mbit/s: 3.2 ms).
const SHORT_QUEUE: Duration = Duration::from_millis(10);

/// See [`GccConfig::pacing_factor_unbounded`]: while no bottleneck rate is known, the media
/// queued may leave within this (a frame interval at 30 fps).
const UNBOUNDED_DRAIN: Duration = Duration::from_millis(33);

impl GccController {
    /// A controller starting at `now` at the configured start bit rate.
    pub fn new(c: &GccConfig, now: Instant) -> Self {
        let delay = match c.mode {
            GccMode::SendSideTwcc => Some(DelayBasedController::new(c)),
            GccMode::ReceiverSideRemb => None,
        };
        GccController {
            mode: c.mode,
            min: c.min_bitrate,
            max: c.max_bitrate.max(c.min_bitrate),
            pacing_factor: c.pacing_factor,
            pacing_factor_unbounded: c.pacing_factor_unbounded,
            pacing_burst: c.pacing_burst,
            cap_as_by_ar: c.cap_as_by_ar,
            measured_rtt: c.additive_measured_rtt,
            loss_high: c.loss_high,
            loss_interval: c.loss_interval,
            burst: match c.grouping {
                Grouping::Frame => SEND_SIDE_BURST,
                Grouping::SendBurst { span } => span,
            },
            group_by_frame: c.grouping == Grouping::Frame,
            frame: 0,
            frames_marked: false,
            base: now,
            history: SentHistory::default(),
            a_r: delay.as_ref().map(DelayBasedController::estimate),
            delay,
            loss: LossController::new(
                LossParams {
                    model: c.loss,
                    high: c.loss_high,
                    low: c.loss_low,
                    increase: c.loss_increase,
                    min: c.min_bitrate,
                    max: c.max_bitrate.max(c.min_bitrate),
                    interval: c.loss_interval,
                    additive_floor: c.loss_additive_floor,
                },
                c.start_bitrate,
            ),
            n_dd: 0,
            rtt: None,
            mean_packet: 1200.0,
            loss_window: VecDeque::new(),
            last_loss_decrease: None,
            ignored: 0,
            standing_queue: c.standing_queue_pacing,
            base_delay: BaseDelay::new(BASE_DELAY_SLOTS, BASE_DELAY_SLOT),
            remote_clock: RemoteClock::default(),
            queue_delay: None,
            standing_decrease: c.standing_queue_decrease.map(|limit| {
                StandingQueue::new(limit, c.standing_queue_window)
                    .with_competing(c.standing_queue_competing, c.standing_queue_retry)
            }),
            pace_at_capacity: c.pacing_link_capacity_factor,
            standing_decreases: 0,
            probe: c.probing.then(|| {
                let p = ProbeController::new(
                    c.clamp(c.start_bitrate),
                    c.max_bitrate.max(c.min_bitrate),
                    c.capacity_probing,
                    now,
                )
                .with_further_duration(c.further_probe_duration());
                match c.mode {
                    GccMode::SendSideTwcc => p,
                    // The receiver tells clusters apart by a padding-free gap.
                    GccMode::ReceiverSideRemb => p.with_cluster_gap(MAX_PADDING_GAP * 2),
                }
            }),
            alr: AlrDetector::default(),
            clusters: VecDeque::new(),
            newest_acked_us: None,
            probing_rate: None,
            events: VecDeque::new(),
            upward_resets: 0,
            last_signal: Signal::Normal,
            stall_probe_after: c.stall_probe_after,
            last_climb_check: None,
            probe_results: 0,
            probes_saturated: 0,
            alpha: c.alpha,
            remb_capacity: LinkCapacity::default(),
            last_remb: None,
            // REMB mode keeps a push-back for good (GccConfig::push_back_memory).
            push_back: PushBack::new(match c.mode {
                GccMode::SendSideTwcc => c.push_back_memory,
                GccMode::ReceiverSideRemb => None,
            }),
            overuses_seen: 0,
            queue_at_overuse: None,
            media_waiting: false,
            media_queued: DataSize::ZERO,
            last_feedback: None,
            unheard: None,
            unheard_losses: 0,
            rr_last: None,
            rr_sent: (0, 0),
            rr_unheard: (0, 0),
        }
        .with_probes_started(now)
    }

    /// Send-side mode starts the initial probes at once; REMB mode when the pacer first
    /// runs out of media (see [`Self::probe_held`]), or at the first packet sent for a
    /// driver that does not report its media queue.
    fn with_probes_started(mut self, now: Instant) -> Self {
        if self.mode == GccMode::SendSideTwcc {
            self.step_probes(now);
        }
        self
    }

    /// Whether a cluster must wait for the pacer's media queue to empty: in REMB mode the
    /// receiver finds a cluster by its padding ([`super::probe_detector`]), and the pacer
    /// pads only while no media waits; a cluster started behind a key frame was all media,
    /// and the receiver found none.
    fn probe_held(&self) -> bool {
        self.mode == GccMode::ReceiverSideRemb && self.media_waiting
    }

    /// Starts the next probe cluster when one is due; keeps the probing rate for the pacer.
    fn step_probes(&mut self, now: Instant) {
        let held = self.probe_held();
        let Some(p) = self.probe.as_mut() else {
            return;
        };
        if held {
            p.end_finished(now);
            self.probing_rate = p.active(now).map(|a| a.rate);
            return;
        }
        if let Some(a) = p.poll_start(now) {
            self.events.push_back(ControllerEvent::Probe {
                rate: a.rate,
                duration: a.duration,
            });
            if self.clusters.len() >= MAX_CLUSTERS {
                self.clusters.pop_front();
            }
            self.clusters
                .push_back((ClusterStats::new(a.id), micros_since(a.until, self.base)));
        }
        self.probing_rate = p.active(now).map(|a| a.rate);
    }

    /// Results of clusters whose feedback is complete (a packet sent after the cluster's
    /// end has been reported), applied to `Ar`, `As` and the probe controller.
    fn finish_clusters(&mut self, now: Instant) {
        let Some(newest) = self.newest_acked_us else {
            return;
        };
        let mut results = Vec::new();
        self.clusters.retain(|(c, end_us)| {
            if newest <= *end_us {
                return true;
            }
            if let Some(r) = c.result() {
                results.push(r);
            }
            false
        });
        for r in results {
            let rate = r.rate.min(self.max).max(self.min);
            self.probe_results += 1;
            if let Some(d) = self.delay.as_mut()
                && d.on_probe_result(rate, r.saturated)
            {
                let ar = d.estimate();
                self.loss.raise_to(rate.min(ar), now);
                self.apply_ar(ar, now);
                if r.saturated {
                    self.probes_saturated += 1;
                    self.push_back.on_finding();
                }
            }
            if let Some(p) = self.probe.as_mut() {
                p.on_result(rate, now);
            }
        }
    }

    /// A REMB value (REMB mode): the sender's link-capacity estimate, and the probe
    /// triggers. The receiver measures the clusters and raises `Ar` to a
    /// valid result ([`super::probe_detector`]), so a REMB is the only result the sender
    /// sees: as libwebrtc's `ProbeController::SetEstimatedBitrate`, a REMB above 0.7× the
    /// last probe's rate within 1 s asks for a further probe, and (as libwebrtc's start
    /// phase, where the target follows the REMB) a REMB raised within 1 s of a cluster
    /// lifts `As` to it, or eq. (5)'s 5 % per report would hold the target far below. A REMB
    /// no lower than the previous one after a decrease is the recovery (the send-side
    /// trigger is the detector's over-use ending, which the sender does not see here). A
    /// REMB below the previous one and under the target is the receiver's `α·R`: `R` enters
    /// a link-capacity estimate like the receiver's, and a REMB above its mean + 3σ (the
    /// receiver's `Ar` went past the capacity seen at its decreases: the link got faster)
    /// forgets it and asks for the capacity probe — unless a probe raised it: then it enters
    /// the estimate with weight 0.5, as a probe result does at the receiver.
    fn on_remb(&mut self, remb: Bitrate, under_target: bool, now: Instant) {
        let previous = self.last_remb;
        // Only a fall under the target is the receiver's decrease (`α·R` of a receive rate
        // near the target); one that stays above it is its estimate clamped to the receive
        // rate of a sender held at its maximum.
        let fell = under_target && previous.is_some_and(|(prev, _)| remb < prev);
        // A REMB under the target is the link pushing back.
        if under_target {
            self.push_back.on_sign();
            self.queue_at_overuse = None;
        }
        self.last_remb = Some((remb, fell));
        if fell {
            let r = remb.mul_f64(1.0 / self.alpha.max(0.01));
            if self
                .remb_capacity
                .lower_bound()
                .is_some_and(|lb| r.as_kbps_f64() < lb)
            {
                self.remb_capacity.reset();
            }
            self.remb_capacity.on_overuse(r);
        }
        let above = self
            .remb_capacity
            .upper_bound()
            .is_some_and(|ub| remb.as_kbps_f64() > ub);
        let probed = !fell
            && previous.is_some()
            && self
                .probe
                .as_ref()
                .is_some_and(|p| p.started_within(now, RESULT_WAIT));
        let within = self
            .remb_capacity
            .upper_bound()
            .is_some_and(|ub| remb.as_kbps_f64() <= ub);
        if probed && !within {
            // A probe raised it: a result, weight 0.5 as the receiver takes it
            // (`RemoteRateController::on_probe_result`). It is a bottleneck's rate only when
            // the link did not carry the cluster; a carried one is a lower bound, and a cap
            // on pacing at it would hold every large frame back on a link far faster.
            let carried = self.probe.as_ref().is_some_and(|p| p.carried(remb));
            self.remb_capacity.update(remb, 0.5, !carried);
        } else if above {
            self.remb_capacity.reset();
        }
        let alr = AlrState {
            in_alr: self.alr.alr_start().is_some(),
            ended: self.alr.alr_ended(),
        };
        let Some(p) = self.probe.as_mut() else {
            return;
        };
        if p.started_within(now, RESULT_WAIT) && remb > self.loss.estimate() {
            self.loss.raise_to(remb, now);
        }
        let a_s = self.loss.estimate();
        let target = remb.min(a_s).min(self.max).max(self.min);
        p.on_estimate(target, now);
        p.on_result(remb, now);
        if !fell && previous.is_some_and(|(_, was_falling)| was_falling) {
            p.on_recovered(alr, now);
        }
        if fell || self.remb_capacity.estimate().is_none() {
            self.last_climb_check = Some(now);
        }
        if above && !probed {
            p.on_capacity_reset(now);
        } else if stalled(self.stall_probe_after, self.last_climb_check, alr, now) {
            self.last_climb_check = Some(now);
            p.on_capacity_reset(now);
        }
    }

    /// The bottleneck queuing delay measured now; one above the standing-queue limit is the
    /// link pushing back.
    fn set_queue_delay(&mut self, q: Duration) {
        self.queue_delay = Some(q);
        if self.standing_queue.is_some_and(|limit| q > limit) {
            self.push_back.on_sign();
            self.queue_at_overuse = None;
        }
    }

    /// The standing-queue decrease ([`GccConfig::standing_queue_decrease`]).
    fn on_queue_sample(&mut self, q: Duration, now: Instant) {
        let q_us = i64::try_from(q.as_micros()).unwrap_or(i64::MAX);
        let now_us = micros_since(now, self.base);
        if self
            .standing_decrease
            .as_mut()
            .is_some_and(|s| s.on_queue(now_us, q_us))
            && let Some(d) = self.delay.as_mut()
        {
            d.force_decrease();
            let ar = d.estimate();
            self.standing_decreases += 1;
            self.apply_ar(ar, now);
        }
    }

    /// Probe triggers after the delay-based controller ran: large drops, recovery, a
    /// forgotten link capacity.
    fn after_update(&mut self, now: Instant) {
        let target = self.target_bitrate();
        let alr = AlrState {
            in_alr: self.alr.alr_start().is_some(),
            ended: self.alr.alr_ended(),
        };
        let (resets, signal) = match self.delay.as_ref() {
            Some(d) => {
                let s = d.stats();
                // Send-side: the climb is the delay-based controller's (REMB mode watches
                // the REMBs in `on_remb`).
                let additive = s.state == RateState::Increase && s.link_capacity.is_some();
                if s.signal == Signal::Overuse || !additive {
                    self.last_climb_check = Some(now);
                }
                (d.upward_resets(), s.signal)
            }
            None => (0, Signal::Normal),
        };
        let stalled = stalled(self.stall_probe_after, self.last_climb_check, alr, now);
        if let Some(p) = self.probe.as_mut() {
            p.on_estimate(target, now);
            if resets > self.upward_resets {
                p.on_capacity_reset(now);
            } else if stalled {
                self.last_climb_check = Some(now);
                p.on_capacity_reset(now);
            }
            if self.last_signal == Signal::Overuse && signal == Signal::Normal {
                p.on_recovered(alr, now);
            }
        }
        self.upward_resets = resets;
        self.last_signal = signal;
        self.step_probes(now);
    }

    /// The typed state.
    pub fn gcc_stats(&self) -> GccStats {
        GccStats {
            target: self.target_bitrate(),
            pacing: self.pacing_rate(),
            a_r: self.a_r,
            a_s: self.loss.estimate(),
            n_dd: self.n_dd,
            rtt: self.rtt,
            delay: self.delay.as_ref().map(|d| *d.stats()),
            ignored_results: self.ignored,
            unheard_losses: self.unheard_losses,
        }
    }

    fn apply_ar(&mut self, ar: Bitrate, now: Instant) {
        let ar = ar.min(self.max).max(self.min);
        if self.cap_as_by_ar {
            if self.loss.cap(ar, now) {
                self.n_dd += 1;
            }
        } else if ar < self.target_bitrate() {
            self.n_dd += 1;
        }
        self.a_r = Some(ar);
    }

    fn on_loss_fraction(&mut self, fl: f64, now: Instant) -> LossBand {
        let size = DataSize::from_bytes_f64(self.mean_packet);
        let band = self.loss.on_report(fl, self.rtt, size, now);
        if let Some(ar) = self.a_r
            && self.cap_as_by_ar
        {
            // 2013 eq. (2); not a delay-based event.
            self.loss.cap(ar, now);
        }
        band
    }

    /// REMB mode: eq. (5) on a receiver report's fraction lost, less what a silence of the
    /// forward path lost. A report whose highest sequence number did not move says the
    /// receiver got nothing for a whole report interval (about a second): it has no fraction
    /// to act on (RFC 3550 gives 0 for an interval with nothing expected, which would read as
    /// "increase"), and the media sent in it and in the interval before went out blind. The
    /// receiver counts those lost once later packets arrive, in the next report or two; as
    /// many losses are excused there, and the fraction is what remains (see
    /// [`FEEDBACK_SILENCE`] for send-side mode). The outage's losses are not congestion's:
    /// counted, one report's fraction lost cut `As` by a third and left the link under-used
    /// for seconds after the outage.
    fn on_receiver_report(&mut self, loss: LossReport, now: Instant) {
        let (sent, sent_before) = self.rr_sent;
        self.rr_sent = (0, sent);
        let last = self
            .rr_last
            .replace((loss.extended_highest_seq, loss.cumulative_lost));
        let Some((highest, cumulative)) = last else {
            self.on_loss_fraction(loss.fraction_lost, now);
            return;
        };
        let expected = i64::from(loss.extended_highest_seq.wrapping_sub(highest) as i32);
        let (budget, reports) = self.rr_unheard;
        if expected <= 0 {
            if sent > 0 {
                // The interval before counts once: a second silent report adds its own only.
                let before = if reports == 0 { sent_before } else { 0 };
                self.rr_unheard = (
                    budget.saturating_add(sent).saturating_add(before),
                    UNHEARD_REPORTS,
                );
            }
            return;
        }
        if reports == 0 {
            self.on_loss_fraction(loss.fraction_lost, now);
            return;
        }
        // Saturating: the counts come from the network.
        let lost = loss
            .cumulative_lost
            .saturating_sub(cumulative)
            .clamp(0, expected);
        let excused = lost.min(budget);
        self.unheard_losses += excused as u64;
        self.rr_unheard = if reports > 1 {
            (budget - excused, reports - 1)
        } else {
            (0, 0)
        };
        self.on_loss_fraction((lost - excused) as f64 / expected as f64, now);
    }

    /// Eq. (5) on every transport-wide report (MMSys16 §3.4: the loss-based controller acts
    /// on every report), with `fl` counted over the last `loss_interval` so that one report
    /// of a few packets does not make a loss fraction; decreases at most once per
    /// `loss_interval` (libwebrtc's decrease interval) so one loss episode counts once.
    fn on_report_losses(&mut self, received: i64, lost: i64, now: Instant) {
        if received == 0 && lost == 0 {
            return;
        }
        self.loss_window.push_back((now, received, lost));
        while self.loss_window.len() > 1024
            || self
                .loss_window
                .front()
                .is_some_and(|(t, _, _)| now.saturating_duration_since(*t) > self.loss_interval)
        {
            self.loss_window.pop_front();
        }
        let (r, l) = self
            .loss_window
            .iter()
            .fold((0i64, 0i64), |(r, l), (_, dr, dl)| (r + dr, l + dl));
        let (r, l) = (r.max(0), l.max(0));
        if r + l == 0 {
            return;
        }
        let fl = l as f64 / (r + l) as f64;
        if fl > self.loss_high
            && self
                .last_loss_decrease
                .is_some_and(|t| now.saturating_duration_since(t) < self.loss_interval)
        {
            return;
        }
        if self.on_loss_fraction(fl, now) == LossBand::Decrease {
            self.last_loss_decrease = Some(now);
        }
    }

    fn on_packet_results(&mut self, feedback: &Feedback<'_>, now: Instant) {
        let Some(delay) = self.delay.as_mut() else {
            return;
        };
        let mut updated = false;
        let mut newest_send: Option<i64> = None;
        // (send time, queuing delay) of the last-sent packet received.
        let mut newest_queue: Option<(i64, Duration)> = None;
        self.base_delay.rotate(now);
        let (mut received, mut lost) = (0i64, 0i64);
        for r in feedback.packets {
            let Some(rec) = self.history.get_mut(r.seq) else {
                self.ignored += 1;
                continue;
            };
            match (r.arrival, rec.fate) {
                (Some(_), Fate::Received) => self.ignored += 1,
                (Some(arrival), fate) => {
                    let arrival_us = self.remote_clock.map(rec.send_us, arrival.as_micros());
                    if fate == Fate::Lost {
                        lost -= 1;
                    }
                    rec.fate = Fate::Received;
                    received += 1;
                    if let Some(id) = rec.probe
                        && let Some((c, _)) = self.clusters.iter_mut().find(|(c, _)| c.id == id)
                    {
                        c.on_packet(rec.send_us, arrival_us, rec.size);
                    }
                    newest_send = Some(newest_send.map_or(rec.send_us, |n| n.max(rec.send_us)));
                    let q = self
                        .base_delay
                        .sample(arrival_us.saturating_sub(rec.send_us));
                    if newest_queue.is_none_or(|(s, _)| rec.send_us >= s) {
                        newest_queue = Some((rec.send_us, q));
                    }
                    let key = if self.group_by_frame && self.frames_marked {
                        GroupKey::Frame(rec.frame)
                    } else {
                        GroupKey::Burst { span: self.burst }
                    };
                    // Padding, and media sent during the initial (blind) probes, count in
                    // `R` and join no group of eq. (4), as padding does in REMB mode: padding
                    // carries the last frame's number, so in that frame's group an initial
                    // cluster far above the capacity made one `dm` of its whole queue
                    // build-up, and the detector held over-use for seconds after it (σ²n is
                    // frozen during over-use, so the gain stayed small). Measured in netlab,
                    // 1 Mbit/s from an 800 kbit/s start, probes at 2.4 and 4.8 Mbit/s: U
                    // 0.53-0.64 with `m` above `γ` for 14 s and no queue; 0.96 without. Media
                    // of the later probes (at twice a measured estimate) still feeds the
                    // filter: leaving it out cost the simulated 2 Mbit/s camera run U 0.895.
                    let initial_probe = rec
                        .probe
                        .is_some_and(|id| id <= super::probe_controller::INITIAL_CLUSTERS);
                    let blind = sent_blind(self.unheard, rec.send_us);
                    updated |= match (blind, rec.padding || initial_probe) {
                        (true, true) => false,
                        (true, false) => {
                            delay.on_group_packet(rec.send_us, arrival_us, rec.size, key)
                        }
                        (false, true) => delay.on_padding(rec.send_us, arrival_us, rec.size),
                        (false, false) => delay.on_packet(rec.send_us, arrival_us, rec.size, key),
                    };
                }
                (None, Fate::Unreported) => {
                    if sent_blind(self.unheard, rec.send_us) {
                        rec.fate = Fate::LostUnheard;
                        self.unheard_losses += 1;
                    } else {
                        rec.fate = Fate::Lost;
                        lost += 1;
                    }
                }
                (None, _) => {}
            }
        }
        if let Some(n) = newest_send {
            self.newest_acked_us = Some(self.newest_acked_us.map_or(n, |o| o.max(n)));
        }
        if feedback.rtt.is_none()
            && let Some(sent) = newest_send
        {
            // Feedback delay included: an upper bound of the RTT, good enough for TFRC.
            let now_us = micros_since(now, self.base);
            if let Ok(us) = u64::try_from(now_us.saturating_sub(sent)) {
                self.rtt = Some(Duration::from_micros(us));
            }
        }
        if updated {
            let ar = delay.estimate();
            self.apply_ar(ar, now);
        }
        if let Some((_, q)) = newest_queue {
            self.set_queue_delay(q);
            self.on_queue_sample(q, now);
        }
        self.on_report_losses(received, lost, now);
        self.finish_clusters(now);
        self.after_update(now);
    }
}

impl GccController {
    /// Whether the queuing delay the sender measures is above the standing-queue limit
    /// ([`GccConfig::standing_queue_pacing`]).
    fn standing(&self) -> bool {
        self.standing_queue
            .zip(self.queue_delay)
            .is_some_and(|(limit, q)| q > limit)
    }

    /// Whether the pacer may send faster than the target's pacing factor
    /// ([`GccConfig::pacing_link_capacity_factor`] on and no standing queue).
    fn pacing_free(&self) -> bool {
        self.pace_at_capacity.is_some() && !self.standing()
    }

    /// Whether no push-back is remembered ([`GccConfig::push_back_memory`]): no over-use,
    /// standing queue or REMB under the target lately.
    fn not_pushed_back(&self) -> bool {
        !self.push_back.remembered()
    }

    /// The bottleneck rate found: the delay-based controller's (send-side) or the REMBs'
    /// (REMB mode).
    fn found_bottleneck(&self) -> Option<Bitrate> {
        match &self.delay {
            Some(d) => d.stats().bottleneck_rate,
            None => self.remb_capacity.bottleneck(),
        }
    }

    /// Feedback heard at `now`: counts new over-uses as push-backs, and forgets a push-back
    /// past its memory of feedback (a gap of `silence` counts for nothing).
    fn on_push_back_signs(&mut self, now: Instant, silence: Duration) {
        let overuses = self.delay.as_ref().map_or(0, |d| d.stats().overuses);
        if overuses > self.overuses_seen {
            self.overuses_seen = overuses;
            self.push_back.on_sign();
            self.queue_at_overuse = self.queue_delay;
        }
        self.push_back
            .on_heard(now, silence, self.found_bottleneck());
    }

    /// Feedback the controller runs on arrived at `now`; returns whether it ends a silence
    /// (a gap of `silence` since the last). A silence is no climb: the stall clock
    /// ([`GccConfig::stall_probe_after`]) starts again.
    fn on_fed(&mut self, silence: Duration, now: Instant) -> bool {
        let ended = self
            .last_feedback
            .is_some_and(|t| now.saturating_duration_since(t) >= silence);
        if ended {
            self.last_climb_check = Some(now);
        }
        self.last_feedback = Some(now);
        ended
    }
}

/// Whether a packet sent at `send_us` was sent during the feedback silence `unheard`
/// (send times, exclusive, inclusive).
fn sent_blind(unheard: Option<(i64, i64)>, send_us: i64) -> bool {
    unheard.is_some_and(|(from, to)| send_us > from && send_us <= to)
}

/// [`GccConfig::stall_probe_after`]: whether the additive climb checked last at `since`
/// has gone on for `after` (outside ALR, where the encoder does not use the rate anyway).
fn stalled(after: Option<Duration>, since: Option<Instant>, alr: AlrState, now: Instant) -> bool {
    after.is_some_and(|after| {
        !alr.in_alr && since.is_some_and(|t| now.saturating_duration_since(t) >= after)
    })
}

impl Controller for GccController {
    fn on_packet_sent(&mut self, p: &SentPacket) {
        let send_us = micros_since(p.send_time, self.base);
        self.step_probes(p.send_time);
        let probe = self
            .probe
            .as_ref()
            .and_then(|c| c.active(p.send_time))
            .map(|a| a.id);
        let target = self.target_bitrate();
        self.alr.on_bytes_sent(p.size, target, p.send_time);
        self.history.insert(
            p.seq,
            send_us,
            p.size,
            self.frame,
            probe,
            p.kind == PacketKind::Padding,
        );
        self.mean_packet = 0.95 * self.mean_packet + 0.05 * p.size.as_bytes_f64();
        if p.kind == PacketKind::Media {
            self.rr_sent.0 += 1;
        }
    }

    fn on_frame_sent(&mut self, _last_seq: u64) {
        self.frame = self.frame.wrapping_add(1);
        self.frames_marked = true;
    }

    fn on_feedback(&mut self, feedback: &Feedback<'_>, now: Instant) {
        if let Some(rtt) = feedback.rtt {
            self.rtt = Some(rtt);
        }
        if let (Some(rtt), Some(d), true) = (self.rtt, self.delay.as_mut(), self.measured_rtt) {
            d.set_rtt(rtt);
        }
        match self.mode {
            GccMode::ReceiverSideRemb => {
                if let Some(rtt) = feedback.rtt {
                    // No per-packet delays in this mode: the queue is what the RTT of a
                    // receiver report has over the smallest one seen.
                    self.base_delay.rotate(now);
                    let rtt_us = i64::try_from(rtt.as_micros()).unwrap_or(i64::MAX);
                    let q = self.base_delay.sample(rtt_us);
                    self.set_queue_delay(q);
                }
                if let Some(remb) = feedback.remb {
                    self.on_fed(REMB_SILENCE, now);
                    // Judged against the target before this REMB (see `on_remb`).
                    let under_target = remb < self.target_bitrate();
                    self.apply_ar(remb, now);
                    self.on_remb(remb, under_target, now);
                }
                if let Some(loss) = feedback.loss {
                    self.on_receiver_report(loss, now);
                }
                if self.probe.is_some() {
                    self.after_update(now);
                }
            }
            GccMode::SendSideTwcc => {
                if !feedback.packets.is_empty() {
                    if self.on_fed(FEEDBACK_SILENCE, now) {
                        // Sent blind: after the newest packet acknowledged before the
                        // silence, up to now; `R` starts again without those packets.
                        self.unheard = Some((
                            self.newest_acked_us.unwrap_or(i64::MIN),
                            micros_since(now, self.base),
                        ));
                        if let Some(d) = self.delay.as_mut() {
                            d.on_feedback_silence();
                        }
                    }
                    self.on_packet_results(feedback, now);
                }
            }
        }
        let silence = match self.mode {
            GccMode::SendSideTwcc => FEEDBACK_SILENCE,
            GccMode::ReceiverSideRemb => REMB_SILENCE,
        };
        self.on_push_back_signs(now, silence);
        self.step_probes(now);
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.step_probes(now);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let p = self.probe.as_ref()?;
        if self.probe_held() {
            // The media queue's emptying (`on_media_queue`) starts the next cluster.
            return p.active_until();
        }
        p.poll_timeout()
    }

    fn on_media_queue(&mut self, queue: MediaQueue, now: Instant) {
        self.media_queued = queue.size;
        if self.mode != GccMode::ReceiverSideRemb || self.probe.is_none() {
            return;
        }
        self.media_waiting = queue.size > DataSize::ZERO;
        if !self.media_waiting {
            self.step_probes(now);
        }
    }

    fn poll_event(&mut self) -> Option<ControllerEvent> {
        self.events.pop_front()
    }

    fn target_bitrate(&self) -> Bitrate {
        let a_s = self.loss.estimate();
        let a = match self.a_r {
            Some(ar) => ar.min(a_s),
            None => a_s,
        };
        a.min(self.max).max(self.min)
    }

    fn pacing_rate(&self) -> Bitrate {
        // Not a forgotten push-back's.
        let bottleneck = self.push_back.cap(self.found_bottleneck());
        let target = self.target_bitrate();
        let f = if self.standing() {
            1.0
        } else {
            self.pacing_factor
        };
        let mut rate = target.mul_f64(f);
        // A bottleneck rate found by an over-use at the flow's own maximum, with hardly a
        // queue, says only that the link carried all the flow may send (the over-use came
        // from the flow's own burst, a key frame on a link far faster): it limits nothing.
        let at_max = bottleneck.is_some_and(|b| b >= self.max.mul_f64(FOUND_AT_MAX))
            && self.queue_at_overuse.is_some_and(|q| q < SHORT_QUEUE);
        let bottleneck = bottleneck.filter(|_| !at_max);
        if self.pacing_free() {
            let most = target.mul_f64(self.pacing_factor_unbounded);
            if at_max || self.not_pushed_back() {
                // The link has not pushed back lately, or only at the flow's maximum: every
                // frame as fast as libwebrtc lets it (under the cap below when a probe gave a
                // bottleneck rate; after a push-back every packet paced, without the burst).
                rate = rate.max(most);
            } else if bottleneck.is_none() && self.mode == GccMode::SendSideTwcc {
                // No bottleneck found since: what is queued may leave within a frame
                // interval.
                let drain = self.media_queued.as_bits() as f64 / UNBOUNDED_DRAIN.as_secs_f64();
                rate = rate.max(Bitrate::from_bps_f64(drain).min(most));
            }
        }
        if let Some(k) = self.pace_at_capacity
            && let Some(cap) = bottleneck
        {
            // Not much faster than the bottleneck rate seen at over-uses (never below `A`):
            // most of a large frame's excess then waits in the pacer, not the bottleneck.
            rate = rate.min(cap.mul_f64(k).max(target));
        }
        // During a probe cluster media leaves at the probe rate too, as libwebrtc's prober
        // sends the whole cluster (media and padding) at that rate.
        self.probing_rate.map_or(rate, |p| rate.max(p))
    }

    fn pacing_burst(&self) -> Duration {
        if self.pacing_free() && self.not_pushed_back() {
            self.pacing_burst
        } else {
            Duration::ZERO
        }
    }

    fn feedback_kind(&self) -> FeedbackKind {
        self.mode.feedback_kind()
    }

    fn stats(&self) -> ControllerStats {
        let s = self.gcc_stats();
        let mut extra = vec![
            ("a_s", s.a_s.as_bps_f64()),
            ("n_dd", s.n_dd as f64),
            ("probe_results", self.probe_results as f64),
            ("probes_saturated", self.probes_saturated as f64),
            (
                "probes",
                self.probe
                    .as_ref()
                    .map_or(0.0, |p| p.clusters_started() as f64),
            ),
            ("standing_decreases", self.standing_decreases as f64),
            ("unheard_losses", s.unheard_losses as f64),
            ("remote_clock_steps", self.remote_clock.steps() as f64),
        ];
        extra.extend(s.a_r.map(|r| ("a_r", r.as_bps_f64())));
        if let Some(d) = s.delay {
            extra.extend(d.extra());
        }
        ControllerStats {
            target: s.target,
            pacing: s.pacing,
            rtt: s.rtt,
            queue_delay: self.queue_delay,
            extra,
            ..ControllerStats::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::{PacketKind, PacketResult};
    use cg_types::{Ecn, RemoteTime};

    /// A 1000-byte media packet.
    fn media(seq: u64, send_time: Instant) -> SentPacket {
        media_sized(seq, send_time, 1000)
    }

    fn media_sized(seq: u64, send_time: Instant, bytes: u64) -> SentPacket {
        SentPacket {
            seq,
            size: DataSize::bytes(bytes),
            send_time,
            ecn: Ecn::NotEct,
            kind: PacketKind::Media,
        }
    }

    /// 1000-byte packets every 10 ms (800 kbit/s) with the one-way delay `extra(i)` ms on
    /// top of a 20 ms base, acknowledged in reports of 5.
    fn run(c: &mut GccController, from: u64, n: u64, t0: Instant, extra: impl Fn(u64) -> u64) {
        run_sized(c, from, n, t0, 1000, extra);
    }

    /// [`run`] with packets of `bytes`.
    fn run_sized(
        c: &mut GccController,
        from: u64,
        n: u64,
        t0: Instant,
        bytes: u64,
        extra: impl Fn(u64) -> u64,
    ) {
        let mut results = Vec::new();
        for i in from..from + n {
            let at = t0 + Duration::from_millis(10 * i);
            c.on_packet_sent(&media_sized(i, at, bytes));
            let arrival = 10_000 * i as i64 + 1000 * (20 + extra(i) as i64);
            results.push(PacketResult {
                seq: i,
                arrival: Some(RemoteTime::from_micros(5_000_000 + arrival)),
                ecn: Ecn::NotEct,
            });
            if results.len() == 5 {
                let feedback = Feedback {
                    packets: &results,
                    ..Default::default()
                };
                c.on_feedback(&feedback, at + Duration::from_millis(20 + extra(i)));
                results.clear();
            }
        }
    }

    #[test]
    fn pacing_drops_to_the_target_while_a_standing_queue_is_measured() {
        let t0 = Instant::now();
        // The pacing rule alone: no probes, no cap at the link-capacity estimate.
        let base = GccConfig {
            probing: false,
            pacing_link_capacity_factor: None,
            ..GccConfig::send_side()
        };
        let mut c = GccController::new(&base, t0);
        run(&mut c, 0, 200, t0, |_| 0);
        assert_eq!(c.stats().queue_delay, Some(Duration::ZERO));
        let t = c.target_bitrate();
        assert_eq!(c.pacing_rate(), t.mul_f64(1.5), "no queue: f·A");
        // The queue grows by 1 ms per packet to 250 ms and stays there.
        run(&mut c, 200, 400, t0, |i| (i - 199).min(250));
        let q = c.stats().queue_delay.unwrap();
        assert!(q >= Duration::from_millis(249), "{q:?}");
        assert_eq!(c.pacing_rate(), c.target_bitrate(), "standing queue: A");
        // Drained: back to f·A.
        run(&mut c, 600, 100, t0, |_| 10);
        assert_eq!(c.stats().queue_delay, Some(Duration::from_millis(10)));
        assert_eq!(c.pacing_rate(), c.target_bitrate().mul_f64(1.5));

        // The paper's constant factor when the rule is off.
        let cfg = GccConfig {
            standing_queue_pacing: None,
            ..base
        };
        let mut c = GccController::new(&cfg, t0);
        run(&mut c, 0, 200, t0, |_| 0);
        run(&mut c, 200, 400, t0, |i| (i - 199).min(250));
        assert_eq!(c.pacing_rate(), c.target_bitrate().mul_f64(1.5));
    }

    fn extra(c: &GccController, name: &str) -> f64 {
        c.stats().extra_value(name).unwrap_or(f64::NAN)
    }

    #[test]
    fn a_standing_queue_without_a_gradient_decreases_the_rate_once_per_window() {
        let t0 = Instant::now();
        // The sender outruns its 800 kbit/s: `Ar` starts at 2 Mbit/s, so `α·R` is a cut.
        let cfg = GccConfig {
            probing: false,
            start_bitrate: Bitrate::mbps(2),
            ..GccConfig::send_side()
        };
        let mut c = GccController::new(&cfg, t0);
        run(&mut c, 0, 300, t0, |_| 0);
        let before = c.target_bitrate();
        // A 100 ms queue appears at once and stands for 2 s: no gradient after the step.
        run(&mut c, 300, 200, t0, |_| 100);
        assert!(
            c.target_bitrate() <= Bitrate::kbps(700),
            "{} (before {before})",
            c.target_bitrate()
        );
        let n = extra(&c, "standing_decreases");
        assert!((1.0..=2.0).contains(&n), "{n} decreases in 2 s");
        // A queue of 40 ms, under the 50 ms limit, does not.
        run(&mut c, 500, 300, t0, |_| 40);
        assert_eq!(extra(&c, "standing_decreases"), n);

        // Off: the papers.
        let off = GccConfig {
            standing_queue_decrease: None,
            ..cfg
        };
        let mut c = GccController::new(&off, t0);
        run(&mut c, 0, 300, t0, |_| 0);
        run(&mut c, 300, 200, t0, |_| 100);
        assert_eq!(extra(&c, "standing_decreases"), 0.0);
    }

    /// Packets sent while no feedback came back (a link outage) are no loss fraction for
    /// eq. (5), and those that arrive late make no `dm` for eq. (4); the same losses
    /// reported on time are a loss fraction.
    #[test]
    fn packets_sent_during_a_feedback_silence_are_neither_loss_nor_delay_to_eq_4_and_5() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let cfg = GccConfig {
            probing: false,
            ..GccConfig::send_side()
        };
        // 1000-byte packets every 10 ms; 0..300 acknowledged in reports of 5 as they go,
        // 300..500 (2 s) lost, then 500..600 acknowledged. `silent`: no report during the
        // loss (the link was down); otherwise reports came on time and showed the gap.
        let outage = |silent: bool| {
            let mut c = GccController::new(&cfg, t0);
            run(&mut c, 0, 300, t0, |_| 0);
            let before = c.loss.estimate();
            for i in 300..500 {
                c.on_packet_sent(&media(i, t0 + ms(10 * i)));
                if !silent && i % 25 == 24 {
                    // A report of the one packet that got through every 0.25 s.
                    let r = [PacketResult {
                        seq: i,
                        arrival: Some(RemoteTime::from_micros(
                            5_000_000 + 10_000 * i as i64 + 20_000,
                        )),
                        ecn: Ecn::NotEct,
                    }];
                    let f = Feedback {
                        packets: &r,
                        ..Default::default()
                    };
                    c.on_feedback(&f, t0 + ms(10 * i + 20));
                }
            }
            // The first report after the loss lists the packets not received, as
            // transport-wide feedback does from the first one it had not reported. After a
            // silence, the first 30 of them did arrive, 2 s late (a queue held through an
            // outage).
            let missing: Vec<PacketResult> = (300..500)
                .filter(|i| silent || i % 25 != 24)
                .map(|seq| PacketResult {
                    seq,
                    arrival: (silent && seq < 330).then(|| {
                        RemoteTime::from_micros(5_000_000 + 10_000 * seq as i64 + 2_020_000)
                    }),
                    ecn: Ecn::NotEct,
                })
                .collect();
            let f = Feedback {
                packets: &missing,
                ..Default::default()
            };
            c.on_feedback(&f, t0 + ms(5_010));
            // The queue the late packets came out of drains behind them.
            run(&mut c, 500, 100, t0, |i| {
                if silent {
                    320u64.saturating_sub((i - 500) * 15)
                } else {
                    0
                }
            });
            if silent {
                // The late packets made no `dm`: the delay filter is where it was.
                let (m, gamma) = (extra(&c, "m"), extra(&c, "gamma"));
                assert!(m.abs() < gamma, "m {m} γ {gamma}");
            }
            (before, c.loss.estimate(), c.gcc_stats().unheard_losses)
        };
        let (before, after, unheard) = outage(true);
        assert_eq!(unheard, 170);
        assert!(after >= before, "As {before} → {after}");
        let (before, after, unheard) = outage(false);
        assert_eq!(unheard, 0);
        assert!(after < before.mul_f64(0.8), "As {before} → {after}");
    }

    /// REMB mode: a receiver report that saw nothing arrive says nothing, and the one after
    /// it (the outage's losses) cuts nothing; a loss report after that does.
    #[test]
    fn remb_mode_reports_across_a_forward_silence_are_not_congestion() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let cfg = GccConfig {
            probing: false,
            ..GccConfig::default()
        };
        let mut c = GccController::new(&cfg, t0);
        let mut seq = 0;
        let mut last = (0u32, 0i64);
        // 100 media packets in each interval, then a report (highest, cumulative lost) with
        // the fraction lost of its interval.
        let mut report = |c: &mut GccController, at: u64, highest: u32, cumulative_lost: i64| {
            for _ in 0..100 {
                c.on_packet_sent(&media(seq, t0 + s(at) - Duration::from_millis(10)));
                seq += 1;
            }
            let expected = f64::from(highest - last.0);
            let lost = (cumulative_lost - last.1) as f64;
            last = (highest, cumulative_lost);
            let loss = LossReport {
                fraction_lost: if expected > 0.0 { lost / expected } else { 0.0 },
                cumulative_lost,
                extended_highest_seq: highest,
            };
            let f = Feedback {
                loss: Some(loss),
                ..Default::default()
            };
            c.on_feedback(&f, t0 + s(at));
            c.loss.estimate()
        };
        report(&mut c, 1, 100, 0);
        let a = report(&mut c, 2, 200, 0);
        // Nothing arrived in the third interval: no increase, no decrease.
        assert_eq!(report(&mut c, 3, 200, 0), a);
        // The report covering the silence: 150 of 200 lost, all sent blind (200 of them).
        assert!(report(&mut c, 4, 400, 150) >= a);
        assert_eq!(c.gcc_stats().unheard_losses, 150);
        // Losses with the path delivering again: eq. (5).
        let b = report(&mut c, 5, 500, 150);
        let b2 = report(&mut c, 6, 600, 150);
        assert!(b2 >= b);
        assert!(report(&mut c, 7, 700, 200) < b2.mul_f64(0.8));
        assert_eq!(c.gcc_stats().unheard_losses, 150);
    }

    #[test]
    fn send_side_mode_probes_at_start_and_takes_the_result() {
        let t0 = Instant::now();
        let mut c = GccController::new(&GccConfig::send_side(), t0);
        let probes: Vec<_> = std::iter::from_fn(|| c.poll_event()).collect();
        assert_eq!(
            probes,
            [ControllerEvent::Probe {
                rate: Bitrate::kbps(900),
                duration: Duration::from_millis(64),
            }],
            "3× the start rate first, long enough for six 1200-byte packets"
        );
        // The 800 kbit/s of `run` during the first cluster, every packet acknowledged with
        // no queue: the result (800 kbit/s) lifts the target from 300 kbit/s.
        run(&mut c, 0, 30, t0, |_| 0);
        assert!(extra(&c, "probe_results") >= 1.0);
        assert!(
            c.target_bitrate() >= Bitrate::kbps(700),
            "{}",
            c.target_bitrate()
        );
    }

    fn probes(c: &mut GccController) -> Vec<Bitrate> {
        std::iter::from_fn(|| c.poll_event())
            .filter_map(|e| match e {
                ControllerEvent::Probe { rate, .. } => Some(rate),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn remb_mode_probes_once_the_pacer_runs_out_of_media_and_follows_a_raised_remb() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let cfg = GccConfig {
            max_bitrate: Bitrate::mbps(5),
            ..GccConfig::default()
        };
        let mut c = GccController::new(&cfg, t0);
        assert!(probes(&mut c).is_empty(), "not at once");
        let waiting = MediaQueue {
            size: DataSize::bytes(12_000),
            delay: Duration::ZERO,
        };
        c.on_media_queue(waiting, ms(1));
        c.handle_timeout(ms(2));
        assert!(probes(&mut c).is_empty(), "not behind a key frame");
        c.on_media_queue(MediaQueue::default(), ms(40));
        assert_eq!(probes(&mut c), [Bitrate::kbps(900)]);
        assert_eq!(c.pacing_rate(), Bitrate::kbps(900));
        // The 6× cluster starts 50 ms after the first one ended (64 ms long), so that the
        // receiver measures the two apart.
        let end = ms(40 + 64);
        assert_eq!(c.poll_timeout(), Some(end));
        c.handle_timeout(end);
        assert_eq!(c.poll_timeout(), Some(end + Duration::from_millis(50)));
        c.handle_timeout(end + Duration::from_millis(49));
        assert!(probes(&mut c).is_empty());
        c.handle_timeout(end + Duration::from_millis(50));
        assert_eq!(probes(&mut c), [Bitrate::kbps(1800)]);
        // The receiver measured the 6× cluster: its REMB (above 0.7 × 1.8 Mbit/s) lifts
        // the target at once (not by eq. (5)'s 5 % per report) and asks for 2× it.
        c.handle_timeout(ms(300));
        let remb = Feedback {
            remb: Some(Bitrate::kbps(1500)),
            ..Default::default()
        };
        c.on_feedback(&remb, ms(300));
        assert_eq!(c.target_bitrate(), Bitrate::kbps(1500));
        assert_eq!(probes(&mut c), [Bitrate::kbps(3000)]);
        // The receiver measured the 3 Mbit/s cluster at 2.5 Mbit/s: the link carried it
        // (above 0.7 of its rate), a lower bound of the capacity and no bottleneck. Frames
        // still leave at 2.5·A, and a further cluster at 2× goes out.
        let at = |c: &mut GccController, kbps: u64, t: u64| {
            let f = Feedback {
                remb: Some(Bitrate::kbps(kbps)),
                ..Default::default()
            };
            c.handle_timeout(ms(t));
            c.on_feedback(&f, ms(t));
            let paced = c.pacing_rate();
            c.handle_timeout(ms(t + 100));
            (c.target_bitrate(), paced, probes(c))
        };
        let (target, paced, next) = at(&mut c, 2500, 700);
        assert_eq!(target, Bitrate::kbps(2500));
        assert_eq!(paced, Bitrate::kbps(6250));
        assert_eq!(next, [Bitrate::mbps(5)]);
        // 3 Mbit/s from the 5 Mbit/s cluster, under 0.7 of it: the link did not carry it. A
        // bottleneck (2.75 Mbit/s, the mean with the carried result), the pacer capped at
        // 1.1 × it.
        let (target, paced, next) = at(&mut c, 3000, 1400);
        assert_eq!(target, Bitrate::mbps(3));
        assert_eq!(paced, Bitrate::kbps(3025));
        assert!(next.is_empty());

        // Off: the papers' REMB mode never probes.
        let off = GccConfig {
            probing: false,
            ..cfg
        };
        let mut c = GccController::new(&off, t0);
        c.on_media_queue(MediaQueue::default(), ms(40));
        c.on_feedback(&remb, ms(300));
        assert!(probes(&mut c).is_empty());
        assert!(c.target_bitrate() < Bitrate::kbps(1500));
    }

    /// REMB mode: a REMB that falls but stays above the target (the receiver's estimate
    /// clamped to what a sender at its maximum sends) leaves the pacer at 2.5·A and finds no
    /// bottleneck; the first REMB under the target is the link pushing back: the pacer is
    /// capped near the bottleneck it gives, then `f·A` for good: REMB mode keeps the push-back
    /// whatever [`GccConfig::push_back_memory`] says.
    #[test]
    fn remb_mode_paces_at_libwebrtcs_factor_until_a_remb_comes_under_the_target() {
        let t0 = Instant::now();
        let cfg = GccConfig {
            probing: false,
            start_bitrate: Bitrate::mbps(5),
            max_bitrate: Bitrate::mbps(5),
            ..GccConfig::default()
        };
        let mut c = GccController::new(&cfg, t0);
        let remb = |c: &mut GccController, kbps: u64, at_ms: u64| {
            let feedback = Feedback {
                remb: Some(Bitrate::kbps(kbps)),
                ..Default::default()
            };
            c.on_feedback(&feedback, t0 + Duration::from_millis(at_ms));
            c.pacing_rate().as_bps_f64() / c.target_bitrate().as_bps_f64()
        };
        assert_eq!(remb(&mut c, 12_000, 1000), 2.5);
        assert_eq!(c.target_bitrate(), Bitrate::mbps(5), "held at the maximum");
        assert_eq!(remb(&mut c, 7_500, 2000), 2.5, "fell, but above the target");
        // Under the target: the receiver's `α·R`, a bottleneck at `R`, the pacer capped at
        // 1.1 × that.
        let capped = remb(&mut c, 4_000, 3000);
        assert!(
            (capped - 1.1 / 0.85).abs() < 1e-3,
            "under the target: {capped}"
        );
        assert_eq!(remb(&mut c, 9_000, 4000), 1.5, "f·A for good");
        for t in (5_000..=30_000).step_by(1000) {
            assert_eq!(
                remb(&mut c, 9_000, t),
                1.5,
                "REMB mode: remembered at {t} ms"
            );
        }
        assert_eq!(c.pacing_burst(), Duration::ZERO);
    }

    #[test]
    fn remb_mode_takes_the_queue_from_receiver_report_round_trips() {
        let t0 = Instant::now();
        // The pacing rule alone: no probes.
        let cfg = GccConfig {
            probing: false,
            ..GccConfig::default()
        };
        let mut c = GccController::new(&cfg, t0);
        let report = |c: &mut GccController, at_ms: u64, rtt_ms: u64| {
            let feedback = Feedback {
                rtt: Some(Duration::from_millis(rtt_ms)),
                ..Default::default()
            };
            c.on_feedback(&feedback, t0 + Duration::from_millis(at_ms));
        };
        report(&mut c, 1000, 52);
        report(&mut c, 2000, 50);
        assert_eq!(c.stats().queue_delay, Some(Duration::ZERO));
        // The link has not pushed back yet: every frame at libwebrtc's factor.
        assert_eq!(c.pacing_rate(), c.target_bitrate().mul_f64(2.5));
        report(&mut c, 3000, 370);
        assert_eq!(c.stats().queue_delay, Some(Duration::from_millis(320)));
        assert_eq!(c.pacing_rate(), c.target_bitrate(), "standing queue: A");
        report(&mut c, 4000, 80);
        assert_eq!(c.pacing_rate(), c.target_bitrate().mul_f64(1.5));
    }

    /// A feedback silence is no climb and no measure of the path: the stall probe
    /// ([`GccConfig::stall_probe_after`]) counts additive increase only while feedback
    /// arrives, so feedback returning after a silence longer than the stall period starts
    /// no capacity probe; and `R` starts again without the packets sent during the silence
    /// (at the rate the session chose), so an over-use just after the return cuts nothing
    /// from it.
    #[test]
    fn a_feedback_silence_is_no_stalled_climb_and_no_receive_rate() {
        let t0 = Instant::now();
        let mut c = GccController::new(&GccConfig::send_side(), t0);
        let r = |c: &GccController| c.gcc_stats().delay.and_then(|d| d.receive_rate);
        // A queue that grows 1 ms per packet from 3 s on: an over-use, a decrease, a
        // link-capacity estimate; then flat, the additive climb.
        run(&mut c, 0, 300, t0, |_| 0);
        run(&mut c, 300, 40, t0, |i| i - 299);
        run(&mut c, 340, 120, t0, |_| 40);
        let d = c.gcc_stats().delay.expect("send-side");
        assert_eq!((d.overuses, d.state), (1, RateState::Increase));
        assert!(d.link_capacity.is_some(), "{d:?}");
        probes(&mut c);
        // 2 s of additive climb, then 4 s without feedback with one packet in 16 sent (the
        // session's cut), then feedback again, the first report with the blind packets.
        run(&mut c, 460, 200, t0, |_| 40);
        let blind: Vec<PacketResult> = (660..1060)
            .filter(|i| i % 16 == 0)
            .map(|i| {
                c.on_packet_sent(&media(i, t0 + Duration::from_millis(10 * i)));
                PacketResult {
                    seq: i,
                    arrival: Some(RemoteTime::from_micros(
                        5_000_000 + 10_000 * i as i64 + 60_000,
                    )),
                    ecn: Ecn::NotEct,
                }
            })
            .collect();
        let f = Feedback {
            packets: &blind,
            ..Default::default()
        };
        c.on_feedback(&f, t0 + Duration::from_millis(10_600));
        assert_eq!(r(&c), None, "R starts again");
        run(&mut c, 1060, 100, t0, |_| 40);
        assert_eq!(probes(&mut c), [], "no probe as feedback returns");
        assert_eq!(
            r(&c),
            Some(Bitrate::kbps(800)),
            "R of the packets sent since"
        );
        // The climb goes on with feedback: the stall probe 5 s after the return.
        run(&mut c, 1160, 500, t0, |_| 40);
        assert!(!probes(&mut c).is_empty(), "the stall probe");
    }

    /// Send-side: until the first over-use every frame leaves at
    /// [`GccConfig::pacing_factor_unbounded`] × `A`; once an over-use found the bottleneck, the
    /// pacer is capped near its rate; after the capacity estimate is forgotten (the link got
    /// faster), an average frame leaves at `f·A` and what is queued within a frame interval
    /// ([`UNBOUNDED_DRAIN`]), up to the same factor. The pacer's burst
    /// ([`GccConfig::pacing_burst`]) holds only until the first over-use. The push-back is
    /// remembered throughout here (how it is forgotten:
    /// `a_push_back_that_does_not_recur_is_forgotten_after_its_memory`).
    #[test]
    fn a_large_frame_leaves_within_a_frame_interval_until_the_bottleneck_is_found() {
        let t0 = Instant::now();
        let cfg = GccConfig {
            probing: false,
            ..GccConfig::send_side()
        };
        let mut c = GccController::new(&cfg, t0);
        let queued = |c: &mut GccController, bytes: u64, at: u64| {
            let q = MediaQueue {
                size: DataSize::bytes(bytes),
                delay: Duration::ZERO,
            };
            c.on_media_queue(q, t0 + Duration::from_millis(at));
            c.pacing_rate()
        };
        run(&mut c, 0, 300, t0, |_| 0);
        assert_eq!(c.gcc_stats().delay.unwrap().bottleneck_rate, None);
        let a = c.target_bitrate();
        let f = cfg.pacing_factor;
        let k = cfg.pacing_factor_unbounded;
        // No over-use yet: an average frame at 2.5·A, and five of them too.
        let frame = (a.as_bps_f64() / 8.0 / 30.0) as u64;
        assert_eq!(queued(&mut c, frame, 3000), a.mul_f64(k));
        assert_eq!(queued(&mut c, 5 * frame, 3000), a.mul_f64(k));
        // and the pacer may send libwebrtc's burst ahead of that rate.
        assert_eq!(c.pacing_burst(), cfg.pacing_burst);
        // An over-use (a queue growing 1 ms per packet) finds the bottleneck; the climb
        // after it brings `f·A` above the cap, which then holds the pacer.
        run(&mut c, 300, 40, t0, |i| i - 299);
        run(&mut c, 340, 900, t0, |_| 40);
        let d = c.gcc_stats().delay.unwrap();
        let cap = d.bottleneck_rate.expect("found at the over-use");
        let most = cap
            .mul_f64(cfg.pacing_link_capacity_factor.unwrap())
            .max(c.target_bitrate());
        let paced = queued(&mut c, 5 * frame, 12_400);
        assert!(
            c.target_bitrate().mul_f64(f) > most,
            "the cap matters: A {} cap {cap}",
            c.target_bitrate()
        );
        assert_eq!(paced, most);
        assert_eq!(
            c.pacing_burst(),
            Duration::ZERO,
            "every packet paced once found"
        );
        // The link gets faster: the receive rate doubles and `A` climbs past the capacity
        // estimate, which is forgotten. An average frame leaves at `f·A` again, two frames'
        // worth within a frame interval, five at most at 2.5·A.
        run_sized(&mut c, 1240, 1500, t0, 2000, |_| 40);
        assert_eq!(c.gcc_stats().delay.unwrap().bottleneck_rate, None, "reset");
        let a = c.target_bitrate();
        let frame = (a.as_bps_f64() / 8.0 / 30.0) as u64;
        assert_eq!(queued(&mut c, frame, 27_400), a.mul_f64(f));
        let two = queued(&mut c, 2 * frame, 27_400);
        assert!(two > a.mul_f64(f) && two < a.mul_f64(k), "{two}");
        assert_eq!(queued(&mut c, 5 * frame, 27_400), a.mul_f64(k));
        assert_eq!(c.pacing_burst(), Duration::ZERO, "the link has pushed back");
    }

    /// An over-use while the flow sends at its maximum bitrate finds only the flow's own rate
    /// (the link carried all of it; the queue came from the flow's own burst, a key frame on
    /// a link far faster): the pacer keeps [`GccConfig::pacing_factor_unbounded`] × `A`, not
    /// the cap near that rate, but paces every packet (no burst). The same over-use with room
    /// above the rate found caps the pacer (issue #37: a busy host's key-frame burst at a
    /// resolution switch held every later frame for most of a frame interval).
    #[test]
    fn a_bottleneck_found_at_the_maximum_bitrate_caps_nothing() {
        let t0 = Instant::now();
        let paced_after_overuse = |max: Bitrate| {
            let cfg = GccConfig {
                probing: false,
                start_bitrate: Bitrate::kbps(700),
                max_bitrate: max,
                ..GccConfig::send_side()
            };
            let mut c = GccController::new(&cfg, t0);
            run(&mut c, 0, 300, t0, |_| 0);
            // A queue growing 1 ms every fourth packet reads as an over-use while it is short.
            run(&mut c, 300, 40, t0, |i| (i - 299) / 4);
            run(&mut c, 340, 300, t0, |_| 10);
            let found = c.gcc_stats().delay.unwrap().bottleneck_rate;
            (c.pacing_rate(), c.target_bitrate(), found, c.pacing_burst())
        };
        // The flow sends 800 kbit/s (1000 bytes every 10 ms).
        let (paced, a, found, burst) = paced_after_overuse(Bitrate::kbps(800));
        let found = found.expect("found at the over-use");
        assert!(found >= Bitrate::kbps(760), "at the maximum: {found}");
        let cfg = GccConfig::send_side();
        assert_eq!(paced, a.mul_f64(cfg.pacing_factor_unbounded));
        assert_eq!(burst, Duration::ZERO, "paced, no burst");
        let (paced, a, found, _) = paced_after_overuse(Bitrate::mbps(2));
        let cap = found
            .expect("found at the over-use")
            .mul_f64(cfg.pacing_link_capacity_factor.unwrap())
            .max(a);
        assert!(cap < a.mul_f64(cfg.pacing_factor), "the cap matters");
        assert_eq!(paced, cap, "room above the rate found: capped");
    }

    /// The path of [`through`]: a bottleneck of `capacity`, and the sender's media packet
    /// of `media_bytes` every 10 ms.
    #[derive(Debug, Clone, Copy)]
    struct Path {
        capacity: Bitrate,
        media_bytes: u64,
    }

    /// A sender through `path`'s bottleneck (no queue beyond what it makes): a packet
    /// every 10 ms of its media size, or, while a probe cluster runs, of the cluster's rate;
    /// `stall(i)` ms of extra delay on packet `i` (a receiving host's scheduling, say).
    /// Feedback every 5 packets. Returns the probe rates asked.
    fn through(
        c: &mut GccController,
        from: u64,
        n: u64,
        t0: Instant,
        path: Path,
        last_arrival: &mut i64,
        stall: impl Fn(u64) -> u64,
    ) -> Vec<Bitrate> {
        let mut asked = Vec::new();
        let mut results = Vec::new();
        for i in from..from + n {
            let at = t0 + Duration::from_millis(10 * i);
            c.handle_timeout(at);
            asked.extend(probes(c));
            let bytes = c
                .probing_rate
                .map_or(path.media_bytes, |r| (r.as_bps_f64() / 8.0 / 100.0) as u64);
            c.on_packet_sent(&media_sized(i, at, bytes));
            let serialise = (bytes as f64 * 8e6 / path.capacity.as_bps_f64()) as i64;
            let arrival = (10_000 * i as i64 + 20_000).max(*last_arrival + serialise);
            *last_arrival = arrival;
            results.push(PacketResult {
                seq: i,
                arrival: Some(RemoteTime::from_micros(
                    5_000_000 + arrival + 1000 * stall(i) as i64,
                )),
                ecn: Ecn::NotEct,
            });
            if results.len() == 5 {
                let feedback = Feedback {
                    packets: &results,
                    ..Default::default()
                };
                let heard = arrival - 10_000 * i as i64 + 1000 * stall(i) as i64;
                c.on_feedback(&feedback, at + Duration::from_micros(heard as u64));
                results.clear();
            }
        }
        asked
    }

    /// A receiving host's stall (400 ms of delay growing 1 ms per packet, then gone) on a
    /// 50 Mbit/s link reads as an over-use: the link pushed back, so the pacer holds frames
    /// near the bottleneck rate found then and sends no burst. It does not recur: after 10 s
    /// of feedback ([`GccConfig::push_back_memory`] at 10 s) frames leave as fast as before,
    /// the stale bottleneck rate capping nothing; a standing queue is a new push-back.
    /// Remembered for good (`None`, the default), the stall holds the pacer for the rest of
    /// the session.
    #[test]
    fn a_push_back_that_does_not_recur_is_forgotten_after_its_memory() {
        let t0 = Instant::now();
        let cfg = GccConfig {
            max_bitrate: Bitrate::kbps(800),
            push_back_memory: Some(Duration::from_secs(10)),
            ..GccConfig::send_side()
        };
        let fast = Path {
            capacity: Bitrate::mbps(50),
            media_bytes: 1000,
        };
        let run = |cfg: &GccConfig| {
            let mut c = GccController::new(cfg, t0);
            let mut last = 0;
            through(&mut c, 0, 500, t0, fast, &mut last, |_| 0);
            let free = (c.pacing_rate(), c.pacing_burst());
            through(&mut c, 500, 40, t0, fast, &mut last, |i| i - 499);
            through(&mut c, 540, 60, t0, fast, &mut last, |_| 0);
            let overuses = c.gcc_stats().delay.unwrap().overuses;
            let held = (c.pacing_rate(), c.pacing_burst());
            // 14 s: under 10 s after the stall (5.0–5.4 s).
            through(&mut c, 600, 800, t0, fast, &mut last, |_| 0);
            let at_14 = (c.pacing_rate(), c.pacing_burst());
            through(&mut c, 1400, 300, t0, fast, &mut last, |_| 0);
            let at_17 = (c.pacing_rate(), c.pacing_burst(), c.target_bitrate());
            (c, free, overuses, held, at_14, at_17)
        };
        let (mut c, free, overuses, held, at_14, (rate, burst, a)) = run(&cfg);
        assert_eq!(
            free,
            (Bitrate::kbps(2000), cfg.pacing_burst),
            "2.5·A, and the burst"
        );
        assert_eq!(overuses, 1, "the stall read as one over-use");
        assert!(
            held.0 < Bitrate::kbps(1000),
            "held near the bottleneck: {}",
            held.0
        );
        assert_eq!(held.1, Duration::ZERO);
        assert_eq!(at_14, held, "remembered 9 s after");
        assert_eq!(a, Bitrate::kbps(800));
        assert_eq!(
            (rate, burst),
            (a.mul_f64(2.5), cfg.pacing_burst),
            "forgotten"
        );
        assert_eq!(c.gcc_stats().delay.unwrap().overuses, 1, "no new sign");
        // A standing queue (100 ms, above the 60 ms limit) is the link pushing back again.
        let mut last = 0;
        through(&mut c, 1700, 50, t0, fast, &mut last, |_| 100);
        assert_eq!(
            c.pacing_burst(),
            Duration::ZERO,
            "a standing queue pushes back"
        );

        let forever = GccConfig {
            push_back_memory: None,
            ..cfg
        };
        let (_, _, _, held, _, (rate, burst, _)) = run(&forever);
        assert_eq!((rate, burst), held, "held for good");
    }

    /// A start-up probe the link cannot carry (900 kbit/s into 700, the media at 400) finds
    /// a bottleneck rate without a push-back: it caps the pacer, the burst kept. With a
    /// push-back memory of 10 s it is forgotten 10 s of feedback after it was found, as a
    /// push-back is (one sample, which a busy viewer's timing can fake: issue #37);
    /// remembered for good (the default), it caps for the rest of the session.
    #[test]
    fn a_bottleneck_a_probe_found_is_forgotten_after_the_push_back_memory() {
        let t0 = Instant::now();
        let cfg = GccConfig {
            start_bitrate: Bitrate::kbps(150),
            max_bitrate: Bitrate::mbps(2),
            push_back_memory: Some(Duration::from_secs(10)),
            ..GccConfig::send_side()
        };
        let slow = Path {
            capacity: Bitrate::kbps(700),
            media_bytes: 500,
        };
        // Runs to the finding (in steps of 100 ms), then to 5 s, to 9.8 s after the finding
        // and to 10.2 s after it.
        let run = |cfg: &GccConfig| {
            let mut c = GccController::new(cfg, t0);
            let mut last = 0;
            let bottleneck = |c: &GccController| c.gcc_stats().delay.unwrap().bottleneck_rate;
            let mut at = 0;
            while bottleneck(&c).is_none() && at < 500 {
                through(&mut c, at, 10, t0, slow, &mut last, |_| 0);
                at += 10;
            }
            let found_at = at;
            through(&mut c, at, 500 - at, t0, slow, &mut last, |_| 0);
            let found = bottleneck(&c);
            let at_5 = (c.pacing_rate(), c.pacing_burst(), c.target_bitrate());
            through(&mut c, 500, found_at + 480, t0, slow, &mut last, |_| 0);
            let before = (c.pacing_rate(), c.target_bitrate());
            through(&mut c, found_at + 980, 40, t0, slow, &mut last, |_| 0);
            let after = (c.pacing_rate(), c.target_bitrate());
            (c, found_at, found, at_5, before, after)
        };
        let (c, found_at, found, (paced, burst, a), before, after) = run(&cfg);
        let found = found.expect("the probe found the link full");
        assert!(found_at <= 100, "found at start-up: {found_at} packets in");
        assert!(
            found > Bitrate::kbps(450) && found < Bitrate::kbps(700),
            "{found}"
        );
        assert_eq!(extra(&c, "probes_saturated"), 1.0);
        assert_eq!(c.gcc_stats().delay.unwrap().overuses, 0, "no push-back");
        let capped = |a: Bitrate| {
            found
                .mul_f64(cfg.pacing_link_capacity_factor.unwrap())
                .max(a)
        };
        assert!(
            capped(a) < a.mul_f64(cfg.pacing_factor_unbounded),
            "the cap matters"
        );
        assert_eq!(
            (paced, burst),
            (capped(a), cfg.pacing_burst),
            "capped, the burst kept"
        );
        // The memory counts from the finding, not from the first feedback.
        assert_eq!(before.0, capped(before.1), "9.8 s after the finding");
        assert_eq!(
            after.0,
            after.1.mul_f64(cfg.pacing_factor_unbounded),
            "forgotten 10.2 s after it"
        );

        let forever = GccConfig {
            push_back_memory: None,
            ..cfg
        };
        let (c, _, found_forever, _, _, (paced, a)) = run(&forever);
        assert_eq!(found_forever, Some(found));
        assert_eq!(c.gcc_stats().delay.unwrap().bottleneck_rate, Some(found));
        assert_eq!(paced, capped(a), "held for good");
    }

    /// REMB mode: a gap of [`REMB_SILENCE`] between REMBs restarts the stall clock too, so
    /// the REMB that ends it starts no capacity probe; the climb's own probe follows 5 s of
    /// REMBs later.
    #[test]
    fn remb_mode_a_remb_silence_is_no_stalled_climb() {
        let t0 = Instant::now();
        let cfg = GccConfig {
            max_bitrate: Bitrate::mbps(5),
            ..GccConfig::default()
        };
        let mut c = GccController::new(&cfg, t0);
        let mut remb = |kbps: u64, at: u64| {
            let f = Feedback {
                remb: Some(Bitrate::kbps(kbps)),
                ..Default::default()
            };
            c.on_feedback(&f, t0 + Duration::from_millis(at));
            probes(&mut c)
        };
        // A fall (the capacity estimate), 2 s of rising REMBs, 4 s of silence.
        remb(1000, 1000);
        remb(900, 2000);
        remb(910, 3000);
        remb(920, 4000);
        assert_eq!(remb(930, 8000), [], "no probe as REMBs return");
        let later: Vec<Bitrate> = (1..=5)
            .flat_map(|k| remb(930 + 10 * k, 8000 + 1000 * k))
            .collect();
        assert!(!later.is_empty(), "the stall probe 5 s after the return");
    }
}
