//! The delay-based controller (MMSys16 §3.3, Figure 1): arrival-time filter → over-use
//! detector (with its threshold) → remote rate controller, plus the receive-rate meter.
//!
//! The same block runs at the receiver (REMB mode, [`crate::gcc::GccReceiver`]) and at the
//! sender over transport-wide feedback ([`crate::gcc::GccController`] in send-side mode).
//! It is fed one packet at a time with its send time (sender clock) and arrival time
//! (receiver clock), both in signed microseconds; `Ar` is updated once per completed group.

use cg_types::{Bitrate, DataSize};

use crate::gcc::arrival::{GroupKey, InterArrival};
use crate::gcc::config::{ArrivalFilterModel, GccConfig, GccMode, ThresholdModel};
use crate::gcc::detector::{OveruseDetector, Signal};
use crate::gcc::kalman::{ScalarKalman, TwoStateKalman};
use crate::gcc::rate_control::{RateControlParams, RateState, RemoteRateController};
use crate::gcc::receive_rate::ReceiveRate;
use crate::gcc::standing::StandingQueue;
use crate::gcc::threshold::{RegionHint, Threshold};
use crate::gcc::trendline::Trendline;

#[derive(Debug, Clone)]
enum Filter {
    Scalar(ScalarKalman),
    TwoState(TwoStateKalman),
    Trendline(Trendline),
}

/// The quantities the papers plot, as of the last completed group.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct DelayBasedStats {
    /// `m(ti)`, ms.
    pub m: f64,
    /// `γ(ti)`, ms.
    pub gamma: f64,
    /// The last `dm(ti)`, ms.
    pub dm: f64,
    /// The scalar filter's Kalman gain `K(ti)` (`None` for the two-state model).
    pub gain: Option<f64>,
    /// The measurement noise variance `σ²n(ti)`, ms² (`None` for the two-state model).
    pub noise_var: Option<f64>,
    /// The detector's signal `s`.
    pub signal: Signal,
    /// The FSM state `σ`.
    pub state: RateState,
    /// `Ar`.
    pub a_r: Bitrate,
    /// `R`, if a whole window has been seen.
    pub receive_rate: Option<Bitrate>,
    /// The link-capacity estimate of the near-max region (libwebrtc), if any.
    pub link_capacity: Option<Bitrate>,
    /// The link-capacity estimate if it found the link full (see
    /// [`RemoteRateController::bottleneck_rate`]).
    pub bottleneck_rate: Option<Bitrate>,
    /// Groups processed.
    pub groups: u64,
    /// Over-use signals so far (each Normal or Underuse → Overuse change counts once): the
    /// decreases the delay gradient asked for, the figure a fault test counts to tell a
    /// false over-use (jitter, reordering) from a real one.
    pub overuses: u64,
}

impl DelayBasedStats {
    /// The quantities for [`ControllerStats::extra`](crate::ControllerStats::extra) (GCC's
    /// `m`, `gamma`, `dm`, `signal`, `state`, and `gain`, `noise_var`, `r` where known).
    pub fn extra(&self) -> Vec<(&'static str, f64)> {
        let mut v = vec![
            ("m", self.m),
            ("gamma", self.gamma),
            ("dm", self.dm),
            ("signal", self.signal.as_f64()),
            ("state", self.state.as_f64()),
            ("overuses", self.overuses as f64),
        ];
        v.extend(self.gain.map(|g| ("gain", g)));
        v.extend(self.noise_var.map(|n| ("noise_var", n)));
        v.extend(self.receive_rate.map(|r| ("r", r.as_bps_f64())));
        v
    }
}

/// The delay-based controller.
#[derive(Debug, Clone)]
pub struct DelayBasedController {
    inter_arrival: InterArrival,
    filter: Filter,
    threshold: Threshold,
    detector: OveruseDetector,
    rate: RemoteRateController,
    receive_rate: ReceiveRate,
    near_ratio: f64,
    noise_only_when_normal: bool,
    standing: Option<StandingQueue>,
    standing_decreases: u64,
    stats: DelayBasedStats,
    latest_us: i64,
    window_us: i64,
    /// The last probe result applied, with the arrival time it came at.
    probe_rate: Option<(i64, Bitrate)>,
}

impl DelayBasedController {
    /// Built from the GCC config.
    pub fn new(c: &GccConfig) -> Self {
        let filter = match c.filter {
            ArrivalFilterModel::Scalar => Filter::Scalar(
                ScalarKalman::new(
                    c.kalman_m0,
                    c.kalman_p0,
                    c.kalman_q,
                    c.kalman_beta,
                    c.kalman_noise_var0,
                    c.kalman_noise_var_min,
                )
                .with_residual_clamp(c.kalman_residual_clamp),
            ),
            ArrivalFilterModel::TwoState => Filter::TwoState(
                TwoStateKalman::new(
                    c.kalman2_inv_capacity0,
                    c.kalman_m0,
                    c.kalman2_p0_inv_capacity,
                    c.kalman_p0,
                    c.kalman2_q_inv_capacity,
                    c.kalman_q,
                    c.kalman_beta,
                    c.kalman_noise_var0,
                    c.kalman_noise_var_min,
                )
                .with_residual_clamp(c.kalman_residual_clamp),
            ),
            ArrivalFilterModel::Trendline => Filter::Trendline(Trendline::default()),
        };
        let near_ratio = match c.threshold {
            ThresholdModel::Static { near_ratio, .. } => near_ratio,
            ThresholdModel::Adaptive { .. } => 0.0,
        };
        let rate = RemoteRateController::new(
            RateControlParams {
                eta: c.eta,
                far_eta: c.far_eta,
                increase_period: c.increase_period,
                alpha: c.alpha,
                max_rate_ratio: c.max_rate_ratio,
                max_rate_ratio_cuts: c.max_rate_ratio_cuts,
                increase: c.increase,
                reset_on_receive_rate: c.mode == GccMode::ReceiverSideRemb
                    && c.remb_capacity_reset_by_receive_rate,
                default_rtt: c.default_rtt,
                additive_packet: c.additive_packet,
                min: c.min_bitrate,
                max: c.max_bitrate,
            },
            c.start_bitrate,
        );
        let threshold = Threshold::new(c.threshold);
        DelayBasedController {
            inter_arrival: InterArrival::new(c.max_group_gap, c.group_send_time)
                .with_max_delay_jump(c.max_delay_jump)
                .with_arrival_burst(c.arrival_burst),
            filter,
            stats: DelayBasedStats {
                m: c.kalman_m0,
                gamma: threshold.gamma(),
                a_r: rate.estimate(),
                state: rate.state(),
                ..DelayBasedStats::default()
            },
            threshold,
            detector: OveruseDetector::new(c.overuse_time),
            rate,
            receive_rate: ReceiveRate::new(c.receive_rate_window),
            near_ratio,
            noise_only_when_normal: c.kalman_noise_only_when_normal,
            // REMB mode: the receiver checks for a standing queue itself (the send-side
            // sender does it from its own queue estimate, see `GccController`).
            standing: c
                .standing_queue_decrease
                .filter(|_| c.mode == GccMode::ReceiverSideRemb)
                .map(|limit| {
                    StandingQueue::new(limit, c.standing_queue_window)
                        .with_competing(c.standing_queue_competing, c.standing_queue_retry)
                }),
            standing_decreases: 0,
            latest_us: i64::MIN,
            window_us: i64::try_from(c.receive_rate_window.as_micros()).unwrap_or(i64::MAX),
            probe_rate: None,
        }
    }

    /// One packet. Returns `true` when a group completed and `Ar` was recomputed, or (REMB
    /// mode) a standing queue decreased it.
    pub fn on_packet(
        &mut self,
        send_us: i64,
        arrival_us: i64,
        size: DataSize,
        key: GroupKey,
    ) -> bool {
        let forced = self.on_padding(send_us, arrival_us, size);
        self.on_group_packet(send_us, arrival_us, size, key) || forced
    }

    /// Feedback returned after a silence: `R` starts again from the packets sent after it
    /// (those sent during it go to [`on_group_packet`](Self::on_group_packet) only); until it
    /// covers a whole window, an over-use decreases nothing, as at the start.
    pub fn on_feedback_silence(&mut self) {
        self.receive_rate.restart();
    }

    /// A padding packet (REMB mode: the receiver got it with its send time): it counts in
    /// `R` and in the standing-queue check, but joins no group of eq. (4). Padding carries
    /// the RTP timestamp of the last frame sent, so in that frame's group a probe cluster
    /// above the capacity made one `dm` of its whole queue build-up (up to a cluster's
    /// length) and the detector signalled over-use right after the probe had raised `Ar`.
    /// Returns `true` when a standing queue decreased `Ar`.
    pub fn on_padding(&mut self, send_us: i64, arrival_us: i64, size: DataSize) -> bool {
        self.receive_rate.on_packet(arrival_us, size);
        self.latest_us = self.latest_us.max(arrival_us);
        if self
            .standing
            .as_mut()
            .is_some_and(|s| s.on_packet(send_us, arrival_us))
        {
            self.force_decrease();
            self.standing_decreases += 1;
            return true;
        }
        false
    }

    /// A media packet for its group of eq. (4) only, counted in no `R`: one sent during a
    /// feedback silence (send-side mode). The session chose its rate (it cut the
    /// controller's for the silence), so `R` measured over it is no measure of the path, and
    /// an over-use just after the feedback returned cut `Ar` to `α·R` of that rate. Returns
    /// `true` when a group completed and `Ar` was recomputed.
    pub fn on_group_packet(
        &mut self,
        send_us: i64,
        arrival_us: i64,
        size: DataSize,
        key: GroupKey,
    ) -> bool {
        self.latest_us = self.latest_us.max(arrival_us);
        let Some(delta) = self
            .inter_arrival
            .on_packet(send_us, arrival_us, size.as_bytes(), key)
        else {
            return false;
        };
        let dm = delta.dm_ms();
        let update_noise = !self.noise_only_when_normal || self.detector.signal() == Signal::Normal;
        let (m, gain, noise_var) = match &mut self.filter {
            Filter::Scalar(f) => (
                f.update_with(dm, update_noise),
                Some(f.gain()),
                Some(f.noise_variance()),
            ),
            Filter::TwoState(f) => (
                f.update(dm, delta.size_delta_bytes, update_noise),
                None,
                None,
            ),
            // Its own detector and threshold: the rate controller takes its signal.
            Filter::Trendline(t) => {
                let found = t.update(dm, delta.send_delta_ms, delta.arrival_us as f64 / 1e3);
                let (m, gamma, signal) = (t.modified_trend(), t.threshold(), t.signal());
                let r = self.rate_for_control();
                let a_r = self.rate.update(found, r, delta.arrival_us);
                self.record(m, gamma, dm, (None, None), signal, r, a_r);
                return true;
            }
        };
        let r = self.rate_for_control();
        // The detector compares m(ti) with the threshold in force before this sample,
        // then the threshold adapts (libwebrtc's order).
        let gamma_before = self.threshold.gamma();
        let signal = self
            .detector
            .detect(m, gamma_before, delta.arrival_delta_ms);
        let a_r = self.rate.update(signal, r, delta.arrival_us);
        let signal = self.detector.signal();
        let hint = RegionHint {
            decreasing: self.rate.state() == RateState::Decrease,
            ar_well_below_r: r.is_some_and(|r| a_r.as_bps_f64() < self.near_ratio * r.as_bps_f64()),
        };
        let gamma = self.threshold.update(m, delta.arrival_us, hint);
        self.record(m, gamma, dm, (gain, noise_var), signal, r, a_r);
        true
    }

    /// The figures of a completed group.
    #[allow(clippy::too_many_arguments)]
    fn record(
        &mut self,
        m: f64,
        gamma: f64,
        dm: f64,
        (gain, noise_var): (Option<f64>, Option<f64>),
        signal: Signal,
        r: Option<Bitrate>,
        a_r: Bitrate,
    ) {
        let overuses = self.stats.overuses
            + u64::from(signal == Signal::Overuse && self.stats.signal != Signal::Overuse);
        self.stats = DelayBasedStats {
            m,
            gamma,
            dm,
            gain,
            noise_var,
            signal,
            state: self.rate.state(),
            a_r,
            receive_rate: r,
            link_capacity: self.rate.link_capacity(),
            bottleneck_rate: self.rate.bottleneck_rate(),
            groups: self.stats.groups + 1,
            overuses,
        };
    }

    /// `R` for eq. (3): the receive rate, but at least a probe result applied within the
    /// last window. `R` is an average over 500 ms, so just after a probe raised `Ar` it
    /// still holds the rate before; an over-use then (the cluster's own queue, or the first
    /// large frames at the new rate) cut `Ar` to `α·R` of the old rate, undoing the probe.
    /// A result is never above the capacity: a saturated cluster gives 0.95 × its receive
    /// rate, an unsaturated one its send rate.
    fn rate_for_control(&self) -> Option<Bitrate> {
        let r = self.receive_rate.rate();
        match self.probe_rate {
            Some((at, p)) if self.latest_us.saturating_sub(at) <= self.window_us => {
                Some(r.map_or(p, |r| r.max(p)))
            }
            _ => r,
        }
    }

    /// Decreases the receiver made on a standing queue (REMB mode).
    pub fn standing_decreases(&self) -> u64 {
        self.standing_decreases
    }

    /// A decrease on a standing queue (see
    /// [`RemoteRateController::force_decrease`]); nothing before `R` is known.
    pub fn force_decrease(&mut self) {
        if let Some(r) = self.receive_rate.rate() {
            self.rate.force_decrease(r);
            self.refresh_rate_stats();
        }
    }

    /// The rate controller's figures in [`DelayBasedStats`] after it changed between groups.
    fn refresh_rate_stats(&mut self) {
        self.stats.a_r = self.rate.estimate();
        self.stats.state = self.rate.state();
        self.stats.link_capacity = self.rate.link_capacity();
        self.stats.bottleneck_rate = self.rate.bottleneck_rate();
    }

    /// A round-trip-time measurement (send-side mode), for the additive increase.
    pub fn set_rtt(&mut self, rtt: std::time::Duration) {
        self.rate.set_rtt(rtt);
    }

    /// `Ar`.
    pub fn estimate(&self) -> Bitrate {
        self.rate.estimate()
    }

    /// Starts `Ar` at `max(Ar, R)` once `R` is known; returns whether it was (see
    /// [`GccConfig::remb_start_from_receive_rate`]).
    pub fn start_from_receive_rate(&mut self) -> bool {
        let Some(r) = self.receive_rate.rate() else {
            return false;
        };
        self.rate.raise_to(r);
        self.refresh_rate_stats();
        true
    }

    /// A validated probe result (see [`RemoteRateController::on_probe_result`]); ignored
    /// while the detector signals over-use, as libwebrtc's `DelayBasedBwe` does. For one
    /// receive-rate window it stands in for a smaller `R` in eq. (3) (see
    /// `rate_for_control`). Returns whether it was applied.
    pub fn on_probe_result(&mut self, rate: Bitrate, saturated: bool) -> bool {
        if self.detector.signal() == Signal::Overuse {
            return false;
        }
        self.apply_probe_result(rate, saturated)
    }

    /// A validated probe result, applied whatever the detector signals (REMB mode, at the
    /// receiver; send-side mode goes through [`on_probe_result`](Self::on_probe_result)),
    /// as libwebrtc's `RemoteBitrateEstimatorAbsSendTime` takes one: a
    /// cluster above the capacity queues the media sent with it, so the detector often
    /// signals over-use just as the cluster's last packet brings its result. For one
    /// receive-rate window the result also stands in for a smaller `R` in eq. (3) (see
    /// `rate_for_control`). Returns whether it was applied.
    pub fn apply_probe_result(&mut self, rate: Bitrate, saturated: bool) -> bool {
        if !self.rate.on_probe_result(rate, saturated) {
            return false;
        }
        self.refresh_rate_stats();
        self.probe_rate = Some((self.latest_us, rate));
        true
    }

    /// See [`RemoteRateController::upward_resets`].
    pub fn upward_resets(&self) -> u64 {
        self.rate.upward_resets()
    }

    /// The last plotted quantities.
    pub fn stats(&self) -> &DelayBasedStats {
        &self.stats
    }

    /// `R` as of the latest arrival.
    pub fn receive_rate(&self) -> Option<Bitrate> {
        self.receive_rate.rate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_leaves_out_what_is_not_known() {
        let names = |s: &DelayBasedStats| s.extra().iter().map(|(n, _)| *n).collect::<Vec<_>>();
        let two_state_at_start = DelayBasedStats::default();
        assert_eq!(
            names(&two_state_at_start),
            ["m", "gamma", "dm", "signal", "state", "overuses"]
        );
        let scalar = DelayBasedStats {
            gain: Some(0.3),
            noise_var: Some(12.0),
            receive_rate: Some(Bitrate::kbps(800)),
            ..DelayBasedStats::default()
        };
        assert_eq!(
            scalar.extra()[6..],
            [("gain", 0.3), ("noise_var", 12.0), ("r", 800_000.0)]
        );
    }

    /// A fluid bottleneck: frames every 33 ms cut into 1000-byte packets, served at `cap_bps`,
    /// 25 ms of propagation delay.
    #[derive(Default)]
    struct Fluid {
        t: i64,
        link_free: f64,
        frame: u64,
    }

    impl Fluid {
        fn drive(&mut self, c: &mut DelayBasedController, rate_bps: f64, cap_bps: f64, secs: f64) {
            let end = self.t + (secs * 1e6) as i64;
            while self.t < end {
                let pkts = (rate_bps / 8.0 / 30.0 / 1000.0).round().max(1.0) as i64;
                for _ in 0..pkts {
                    let tx = 1000.0 * 8.0 / cap_bps * 1e6;
                    self.link_free = self.link_free.max(self.t as f64) + tx;
                    let arrival = self.link_free as i64 + 25_000;
                    c.on_packet(
                        self.t,
                        arrival,
                        DataSize::bytes(1000),
                        GroupKey::Frame(self.frame),
                    );
                }
                self.frame += 1;
                self.t += 33_333;
            }
        }
    }

    #[test]
    fn sending_above_capacity_leads_to_overuse_and_decrease_below_capacity() {
        // The fluid sender ignores Ar; start Ar high so that α·R is a decrease.
        let cfg = GccConfig {
            start_bitrate: Bitrate::mbps(1),
            ..GccConfig::default()
        };
        let mut c = DelayBasedController::new(&cfg);
        let mut f = Fluid::default();
        f.drive(&mut c, 720e3, 1e6, 3.0);
        assert_ne!(c.stats().signal, Signal::Overuse);
        assert_eq!(c.stats().overuses, 0);
        let mut decreased = false;
        for _ in 0..60 {
            f.drive(&mut c, 1.2e6, 1e6, 0.1);
            if c.stats().signal == Signal::Overuse {
                decreased = true;
                break;
            }
        }
        assert!(decreased, "stats {:?}", c.stats());
        assert!(c.stats().m > c.stats().gamma);
        assert_eq!(c.stats().overuses, 1, "one over-use signal counted once");
        // Eq. (3): Ar = α·R with R the receive rate when over-use fired (which the near-max
        // region records as its first link-capacity sample), at most the bottleneck rate.
        let s = c.stats();
        let r = s.link_capacity.expect("over-use seen").as_bps_f64();
        assert!(r <= 1.05e6, "R = {r}");
        assert!((s.a_r.as_bps_f64() - 0.85 * r).abs() < 10.0, "{s:?}");
    }

    #[test]
    fn a_fivefold_capacity_drop_is_an_overuse_within_a_quarter_second() {
        // MMSys16 §6.1's 2.5 → 0.5 Mbit/s, the sender at 2.4 Mbit/s: a 300 ms DropTail
        // buffer fills in about 80 ms, so every 100 ms of late reaction loses ~24 packets.
        // The persistence t̄OU runs on the receiver's clock: counted in send time it
        // needed three frames, which the shrunken link delivers over half a second.
        let mut c = DelayBasedController::new(&GccConfig::default());
        let mut f = Fluid::default();
        f.drive(&mut c, 2.4e6, 2.5e6, 10.0);
        assert_eq!(c.stats().signal, Signal::Normal);
        // On the receiver's clock: from the arrival of the first packet sent after the drop
        // to that of the packet on which over-use fired (the fluid hands packets over at
        // their send time, each with its arrival time).
        let drop = f.t;
        let mut first_arrival = None;
        while c.stats().signal != Signal::Overuse {
            f.drive(&mut c, 2.4e6, 0.5e6, 0.001);
            first_arrival.get_or_insert(f.link_free);
            assert!(f.t - drop < 2_000_000, "no over-use: {:?}", c.stats());
        }
        let after = (f.link_free - first_arrival.unwrap_or_default()) / 1e3;
        assert!(after <= 250.0, "over-use {after:.0} ms after the drop");
    }

    #[test]
    fn below_capacity_the_rate_increases() {
        let mut c = DelayBasedController::new(&GccConfig::default());
        let mut f = Fluid::default();
        f.drive(&mut c, 240e3, 1e6, 5.0);
        let s = c.stats();
        assert_eq!(s.state, RateState::Increase, "{s:?}");
        assert!(s.a_r > Bitrate::kbps(300));
    }
}
