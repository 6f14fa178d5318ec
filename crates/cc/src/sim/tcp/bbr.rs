//! BBR v1's model and state machine, as Linux's `tcp_bbr.c` (the kernel's `bbr`, which
//! netlab's namespace runs use), in segments and seconds: the windowed-max bottleneck
//! bandwidth over 10 rounds, the 10 s min-RTT filter, STARTUP / DRAIN / PROBE_BW (the
//! 1.25, 0.75, 1 × 6 gain cycle from a random phase) / PROBE_RTT, the cwnd target
//! `cwnd_gain · BDP` plus the ACK-aggregation allowance and the quantisation budget, packet
//! conservation in the first round of recovery, and the long-term ("policer") bandwidth
//! estimate.
//!
//! What differs from the kernel, and why it does not matter here:
//! - the bandwidth filter is an exact sliding-window maximum where the kernel keeps Kathleen
//!   Nichols' three-sample approximation (`lib/minmax.c`): the same maximum whenever the
//!   best sample is younger than the window;
//! - rates are `f64` segments per second, not fixed-point packets per µs;
//! - no idle restart (`CA_EVENT_TX_START`): the simulated flows are bulk transfers, idle
//!   only when an application rate limit holds them, where the kernel's restart would pace
//!   at the estimate, as this does anyway in PROBE_BW;
//! - ECN: the kernel's BBR v1 ignores ECE (`cong_control` bypasses the CWR reduction), and so
//!   does this.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use cg_types::Rng;

/// `2/ln 2`: STARTUP's pacing and cwnd gain (`bbr_high_gain`).
const HIGH_GAIN: f64 = 2.885;
/// `1/HIGH_GAIN`: DRAIN's pacing gain (`bbr_drain_gain`).
const DRAIN_GAIN: f64 = 1.0 / 2.885;
/// PROBE_BW's cwnd gain (`bbr_cwnd_gain`).
const CWND_GAIN: f64 = 2.0;
/// PROBE_BW's pacing-gain cycle (`bbr_pacing_gain`).
const PACING_GAIN: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
/// Rounds of the bandwidth filter (`bbr_bw_rtts`).
const BW_ROUNDS: u64 = 10;
/// The min-RTT filter's window (`bbr_min_rtt_win_sec`).
const MIN_RTT_WINDOW: Duration = Duration::from_secs(10);
/// Time at `MIN_CWND` in PROBE_RTT (`bbr_probe_rtt_mode_ms`).
const PROBE_RTT_TIME: Duration = Duration::from_millis(200);
/// The smallest cwnd target (`bbr_cwnd_min_target`).
pub(crate) const MIN_CWND: f64 = 4.0;
/// STARTUP ends after this many rounds without 25 % growth (`bbr_full_bw_cnt`).
const FULL_BW_ROUNDS: u32 = 3;
/// Pacing margin: pace 1 % under the estimate (`bbr_pacing_margin_percent`).
const PACING_MARGIN: f64 = 0.99;
/// Long-term sampling: rounds per interval at least (`bbr_lt_intvl_min_rtts`), loss ratio
/// that makes an interval lossy (`bbr_lt_loss_thresh` = 50/256), bandwidth agreement
/// (`bbr_lt_bw_ratio` = 1/8, `bbr_lt_bw_diff` = 4 kbit/s), rounds the estimate is used
/// (`bbr_lt_bw_max_rtts`).
const LT_MIN_ROUNDS: u32 = 4;
const LT_LOSS_THRESH: f64 = 50.0 / 256.0;
const LT_BW_RATIO: f64 = 1.0 / 8.0;
const LT_BW_DIFF_BPS: f64 = 4000.0;
const LT_MAX_ROUNDS: u32 = 48;
/// ACK aggregation: window in rounds (`bbr_extra_acked_win_rtts`) and cap in time
/// (`bbr_extra_acked_max_us`).
const EXTRA_ACKED_ROUNDS: u32 = 5;
const EXTRA_ACKED_MAX: Duration = Duration::from_millis(100);
/// TSO sizing: below this pacing rate one segment per burst, else two or ~1 ms of data
/// (`bbr_min_tso_rate`, `sk_pacing_shift` = 10).
const MIN_TSO_RATE_BPS: f64 = 1_200_000.0;

/// BBR's modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BbrMode {
    /// Ramp up at `2/ln 2` per round until the bandwidth stops growing.
    Startup,
    /// Drain the queue STARTUP built.
    Drain,
    /// Steady state: cycle the pacing gain around the estimate.
    ProbeBw,
    /// Cut the window to 4 segments for 200 ms and a round to measure the path's RTT.
    ProbeRtt,
}

/// The sender's loss-recovery state, as the kernel's `icsk_ca_state` (Open and Disorder
/// are one here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum CaState {
    Open,
    Recovery,
    Loss,
}

/// One delivery-rate sample (`struct rate_sample`, `net/ipv4/tcp_rate.c`), taken from the
/// newest segment an ACK covers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RateSample {
    /// Segments delivered over the interval (`None`: no valid sample in this ACK).
    pub delivered: Option<(u64, Duration)>,
    /// `delivered` when the sampled segment was sent.
    pub prior_delivered: u64,
    /// The sampled segment was sent while the application limited the flow.
    pub app_limited: bool,
    /// Segments newly acknowledged by this ACK.
    pub acked: u64,
    /// Segments newly counted lost while processing this ACK.
    pub losses: u64,
    /// Segments in flight before this ACK.
    pub prior_in_flight: u64,
    /// The RTT measured on this ACK.
    pub rtt: Option<Duration>,
}

/// What the sender's state is, seen from BBR at an ACK.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SenderView {
    pub now: Instant,
    /// Segments delivered so far (`tp->delivered`), and lost (`tp->lost`).
    pub delivered: u64,
    pub lost: u64,
    /// When `delivered` last grew (`tp->delivered_mstamp`).
    pub delivered_time: Instant,
    /// Segments in flight now (after this ACK).
    pub in_flight: u64,
    /// When the next segment may leave under pacing (the earliest departure time).
    pub next_departure: Instant,
    pub state: CaState,
    pub mss_bytes: f64,
}

/// BBR's state (`struct bbr`).
#[derive(Debug, Clone)]
pub(crate) struct Bbr {
    mode: BbrMode,
    /// Bandwidth samples `(round, segments/s)`, decreasing in value: the front is the max.
    bw: VecDeque<(u64, f64)>,
    round: u64,
    next_round_delivered: u64,
    round_start: bool,
    min_rtt: Option<Duration>,
    min_rtt_stamp: Instant,
    probe_rtt_done: Option<Instant>,
    probe_rtt_round_done: bool,
    full_bw: f64,
    full_bw_count: u32,
    full_bw_reached: bool,
    cycle_index: usize,
    cycle_stamp: Instant,
    pacing_gain: f64,
    cwnd_gain: f64,
    prior_cwnd: f64,
    prev_state: CaState,
    packet_conservation: bool,
    /// Pacing rate, bytes per second.
    pacing_rate: f64,
    has_seen_rtt: bool,
    // Long-term (policer) estimate.
    lt_sampling: bool,
    lt_rounds: u32,
    lt_use_bw: bool,
    lt_bw: f64,
    lt_last_delivered: u64,
    lt_last_lost: u64,
    lt_last_stamp: Instant,
    // ACK aggregation.
    ack_epoch_stamp: Instant,
    ack_epoch_acked: u64,
    extra_acked: [f64; 2],
    extra_acked_rounds: u32,
    extra_acked_index: usize,
    rng: Rng,
}

impl Bbr {
    /// A flow starting at `now` with `cwnd` segments and no RTT sample: paced at
    /// `HIGH_GAIN · cwnd` per (nominal) millisecond, as the kernel's first pacing rate.
    pub(crate) fn new(now: Instant, cwnd: f64, mss_bytes: f64, seed: u64) -> Self {
        let mut b = Bbr {
            mode: BbrMode::Startup,
            bw: VecDeque::new(),
            round: 0,
            next_round_delivered: 0,
            round_start: false,
            min_rtt: None,
            min_rtt_stamp: now,
            probe_rtt_done: None,
            probe_rtt_round_done: false,
            full_bw: 0.0,
            full_bw_count: 0,
            full_bw_reached: false,
            cycle_index: 0,
            cycle_stamp: now,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            prior_cwnd: 0.0,
            prev_state: CaState::Open,
            packet_conservation: false,
            pacing_rate: 0.0,
            has_seen_rtt: false,
            lt_sampling: false,
            lt_rounds: 0,
            lt_use_bw: false,
            lt_bw: 0.0,
            lt_last_delivered: 0,
            lt_last_lost: 0,
            lt_last_stamp: now,
            ack_epoch_stamp: now,
            ack_epoch_acked: 0,
            extra_acked: [0.0; 2],
            extra_acked_rounds: 0,
            extra_acked_index: 0,
            rng: Rng::new(seed),
        };
        b.init_pacing_rate(cwnd, None, mss_bytes);
        b
    }

    /// `HIGH_GAIN · cwnd / srtt` (1 ms without a sample).
    fn init_pacing_rate(&mut self, cwnd: f64, srtt: Option<Duration>, mss_bytes: f64) {
        let rtt = srtt.map_or(0.001, |r| r.as_secs_f64().max(1e-6));
        self.has_seen_rtt = srtt.is_some();
        self.pacing_rate = HIGH_GAIN * cwnd / rtt * mss_bytes * PACING_MARGIN;
    }

    /// The mode now.
    pub(crate) fn mode(&self) -> BbrMode {
        self.mode
    }

    /// The pacing rate, bytes per second.
    pub(crate) fn pacing_rate(&self) -> f64 {
        self.pacing_rate
    }

    /// The bottleneck-bandwidth estimate, segments per second (the long-term one while a
    /// policer is assumed).
    pub(crate) fn bw(&self) -> f64 {
        if self.lt_use_bw {
            self.lt_bw
        } else {
            self.max_bw()
        }
    }

    /// The windowed-max bandwidth, segments per second.
    fn max_bw(&self) -> f64 {
        self.bw.front().map_or(0.0, |s| s.1)
    }

    /// The min-RTT estimate.
    pub(crate) fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }

    /// Entering loss recovery or a timeout: remember the window to return to
    /// (`bbr_save_cwnd` through `bbr_ssthresh`).
    pub(crate) fn save_cwnd(&mut self, cwnd: f64) {
        self.prior_cwnd = if self.prev_state < CaState::Recovery && self.mode != BbrMode::ProbeRtt {
            cwnd
        } else {
            self.prior_cwnd.max(cwnd)
        };
    }

    /// A retransmission timeout (`bbr_set_state(TCP_CA_Loss)`): the pipe is no longer known
    /// to be full, a round ends, and the long-term sampler sees a loss.
    pub(crate) fn on_timeout(&mut self, v: &SenderView) {
        self.prev_state = CaState::Loss;
        self.full_bw = 0.0;
        self.round_start = true;
        let rs = RateSample {
            delivered: None,
            prior_delivered: 0,
            app_limited: false,
            acked: 0,
            losses: 1,
            prior_in_flight: 0,
            rtt: None,
        };
        self.lt_sampling_step(&rs, v);
    }

    /// One ACK (`bbr_main`): updates the model and returns the new cwnd (segments).
    pub(crate) fn on_ack(
        &mut self,
        rs: &RateSample,
        v: &SenderView,
        cwnd: f64,
        srtt: Option<Duration>,
    ) -> f64 {
        self.update_bw(rs, v);
        self.update_ack_aggregation(rs, v, cwnd);
        self.update_cycle_phase(rs, v);
        self.check_full_bw_reached(rs);
        self.check_drain(v);
        let cwnd = self.update_min_rtt(rs, v, cwnd);
        self.update_gains();
        self.set_pacing_rate(srtt, cwnd, v.mss_bytes);
        self.set_cwnd(rs, v, cwnd)
    }

    fn bdp(&self, bw: f64, gain: f64) -> f64 {
        match self.min_rtt {
            // No RTT sample: the initial window (TCP_INIT_CWND).
            None => 10.0,
            Some(rtt) => (bw * rtt.as_secs_f64() * gain).ceil(),
        }
    }

    /// Segments per burst the kernel would build (`bbr_tso_segs_goal`).
    fn tso_segs(&self, mss_bytes: f64) -> f64 {
        let min = if self.pacing_rate * 8.0 < MIN_TSO_RATE_BPS {
            1.0
        } else {
            2.0
        };
        // `sk_pacing_rate >> sk_pacing_shift`: about 1 ms of data, under 64 kB.
        let bytes = (self.pacing_rate / 1024.0).min(65_536.0 - 1.0 - 320.0);
        (bytes / mss_bytes).floor().max(min).min(127.0)
    }

    /// `bbr_quantization_budget`.
    fn quantisation_budget(&self, cwnd: f64, mss_bytes: f64) -> f64 {
        let mut c = cwnd + 3.0 * self.tso_segs(mss_bytes);
        c = (c / 2.0).ceil() * 2.0;
        if self.mode == BbrMode::ProbeBw && self.cycle_index == 0 {
            c += 2.0;
        }
        c
    }

    fn inflight(&self, bw: f64, gain: f64, mss_bytes: f64) -> f64 {
        self.quantisation_budget(self.bdp(bw, gain), mss_bytes)
    }

    /// `bbr_packets_in_net_at_edt`.
    fn in_net_at_edt(&self, inflight: f64, v: &SenderView) -> f64 {
        let wait = v
            .next_departure
            .saturating_duration_since(v.now)
            .as_secs_f64();
        let delivered = self.bw() * wait;
        let mut at_edt = inflight;
        if self.pacing_gain > 1.0 {
            at_edt += self.tso_segs(v.mss_bytes);
        }
        (at_edt - delivered).max(0.0)
    }

    fn update_bw(&mut self, rs: &RateSample, v: &SenderView) {
        self.round_start = false;
        let Some((delivered, interval)) = rs.delivered else {
            return;
        };
        if interval.is_zero() {
            return;
        }
        if rs.prior_delivered >= self.next_round_delivered {
            self.next_round_delivered = v.delivered;
            self.round += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        self.lt_sampling_step(rs, v);
        let bw = delivered as f64 / interval.as_secs_f64();
        if !rs.app_limited || bw >= self.max_bw() {
            while self.bw.back().is_some_and(|s| s.1 <= bw) {
                self.bw.pop_back();
            }
            self.bw.push_back((self.round, bw));
        }
        while self
            .bw
            .front()
            .is_some_and(|s| s.0 + BW_ROUNDS <= self.round && self.bw.len() > 1)
        {
            self.bw.pop_front();
        }
    }

    fn reset_lt_interval(&mut self, v: &SenderView) {
        self.lt_last_stamp = v.delivered_time;
        self.lt_last_delivered = v.delivered;
        self.lt_last_lost = v.lost;
        self.lt_rounds = 0;
    }

    fn reset_lt(&mut self, v: &SenderView) {
        self.lt_bw = 0.0;
        self.lt_use_bw = false;
        self.lt_sampling = false;
        self.reset_lt_interval(v);
    }

    /// `bbr_lt_bw_sampling`: two lossy intervals of consistent bandwidth mean a policer.
    fn lt_sampling_step(&mut self, rs: &RateSample, v: &SenderView) {
        if self.lt_use_bw {
            if self.mode == BbrMode::ProbeBw && self.round_start {
                self.lt_rounds += 1;
                if self.lt_rounds >= LT_MAX_ROUNDS {
                    self.reset_lt(v);
                    self.reset_probe_bw(v);
                }
            }
            return;
        }
        if !self.lt_sampling {
            if rs.losses == 0 {
                return;
            }
            self.reset_lt_interval(v);
            self.lt_sampling = true;
        }
        if rs.app_limited {
            self.reset_lt(v);
            return;
        }
        if self.round_start {
            self.lt_rounds += 1;
        }
        if self.lt_rounds < LT_MIN_ROUNDS {
            return;
        }
        if self.lt_rounds > 4 * LT_MIN_ROUNDS {
            self.reset_lt(v);
            return;
        }
        if rs.losses == 0 {
            return;
        }
        let lost = v.lost.saturating_sub(self.lt_last_lost) as f64;
        let delivered = v.delivered.saturating_sub(self.lt_last_delivered) as f64;
        if delivered == 0.0 || lost < LT_LOSS_THRESH * delivered {
            return;
        }
        let t = v
            .delivered_time
            .saturating_duration_since(self.lt_last_stamp)
            .as_secs_f64();
        if t < 0.001 {
            return;
        }
        let bw = delivered / t;
        if self.lt_bw > 0.0 {
            let diff = (bw - self.lt_bw).abs();
            if diff <= LT_BW_RATIO * self.lt_bw || diff * v.mss_bytes * 8.0 <= LT_BW_DIFF_BPS {
                self.lt_bw = (bw + self.lt_bw) / 2.0;
                self.lt_use_bw = true;
                self.pacing_gain = 1.0;
                self.lt_rounds = 0;
                return;
            }
        }
        self.lt_bw = bw;
        self.reset_lt_interval(v);
    }

    /// `bbr_update_ack_aggregation`.
    fn update_ack_aggregation(&mut self, rs: &RateSample, v: &SenderView, cwnd: f64) {
        if rs.acked == 0 || rs.delivered.is_none() {
            return;
        }
        if self.round_start {
            self.extra_acked_rounds = (self.extra_acked_rounds + 1).min(31);
            if self.extra_acked_rounds >= EXTRA_ACKED_ROUNDS {
                self.extra_acked_rounds = 0;
                self.extra_acked_index ^= 1;
                self.extra_acked[self.extra_acked_index] = 0.0;
            }
        }
        let epoch = v
            .delivered_time
            .saturating_duration_since(self.ack_epoch_stamp)
            .as_secs_f64();
        let mut expected = (self.bw() * epoch).floor();
        if self.ack_epoch_acked as f64 <= expected || self.ack_epoch_acked + rs.acked >= 1 << 20 {
            self.ack_epoch_acked = 0;
            self.ack_epoch_stamp = v.delivered_time;
            expected = 0.0;
        }
        self.ack_epoch_acked = (self.ack_epoch_acked + rs.acked).min(0xF_FFFF);
        let extra = (self.ack_epoch_acked as f64 - expected).min(cwnd);
        let slot = &mut self.extra_acked[self.extra_acked_index];
        *slot = slot.max(extra);
    }

    fn aggregation_cwnd(&self) -> f64 {
        if !self.full_bw_reached {
            return 0.0;
        }
        let cap = (self.bw() * EXTRA_ACKED_MAX.as_secs_f64()).floor();
        self.extra_acked[0].max(self.extra_acked[1]).min(cap)
    }

    /// `bbr_is_next_cycle_phase` / `bbr_advance_cycle_phase`.
    fn update_cycle_phase(&mut self, rs: &RateSample, v: &SenderView) {
        if self.mode != BbrMode::ProbeBw {
            return;
        }
        let full_length = self
            .min_rtt
            .is_none_or(|r| v.delivered_time.saturating_duration_since(self.cycle_stamp) > r);
        let next = if self.pacing_gain == 1.0 {
            full_length
        } else {
            let inflight = self.in_net_at_edt(rs.prior_in_flight as f64, v);
            let bw = self.max_bw();
            if self.pacing_gain > 1.0 {
                full_length
                    && (rs.losses > 0
                        || inflight >= self.inflight(bw, self.pacing_gain, v.mss_bytes))
            } else {
                full_length || inflight <= self.inflight(bw, 1.0, v.mss_bytes)
            }
        };
        if next {
            self.cycle_index = (self.cycle_index + 1) % PACING_GAIN.len();
            self.cycle_stamp = v.delivered_time;
        }
    }

    fn reset_probe_bw(&mut self, v: &SenderView) {
        self.mode = BbrMode::ProbeBw;
        // A random phase other than the 0.75 one (CYCLE_LEN − 1 − rand(7), then advanced).
        let r = self.rng.below(7) as usize;
        self.cycle_index = (PACING_GAIN.len() - 1 - r + 1) % PACING_GAIN.len();
        self.cycle_stamp = v.delivered_time;
    }

    fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_reached || !self.round_start || rs.app_limited {
            return;
        }
        if self.max_bw() >= self.full_bw * 1.25 {
            self.full_bw = self.max_bw();
            self.full_bw_count = 0;
            return;
        }
        self.full_bw_count += 1;
        self.full_bw_reached = self.full_bw_count >= FULL_BW_ROUNDS;
    }

    fn check_drain(&mut self, v: &SenderView) {
        if self.mode == BbrMode::Startup && self.full_bw_reached {
            self.mode = BbrMode::Drain;
        }
        if self.mode == BbrMode::Drain
            && self.in_net_at_edt(v.in_flight as f64, v)
                <= self.inflight(self.max_bw(), 1.0, v.mss_bytes)
        {
            self.reset_probe_bw(v);
        }
    }

    /// `bbr_update_min_rtt` and PROBE_RTT; returns the window (restored on leaving
    /// PROBE_RTT).
    fn update_min_rtt(&mut self, rs: &RateSample, v: &SenderView, mut cwnd: f64) -> f64 {
        let expired = v.now.saturating_duration_since(self.min_rtt_stamp) > MIN_RTT_WINDOW;
        if let Some(rtt) = rs.rtt
            && (self.min_rtt.is_none_or(|m| rtt <= m) || expired)
        {
            self.min_rtt = Some(rtt);
            self.min_rtt_stamp = v.now;
        }
        if expired && self.mode != BbrMode::ProbeRtt {
            self.mode = BbrMode::ProbeRtt;
            self.save_cwnd(cwnd);
            self.probe_rtt_done = None;
        }
        if self.mode == BbrMode::ProbeRtt {
            match self.probe_rtt_done {
                None if (v.in_flight as f64) <= MIN_CWND => {
                    self.probe_rtt_done = Some(v.now + PROBE_RTT_TIME);
                    self.probe_rtt_round_done = false;
                    self.next_round_delivered = v.delivered;
                }
                None => {}
                Some(done) => {
                    self.probe_rtt_round_done |= self.round_start;
                    if self.probe_rtt_round_done && v.now > done {
                        self.min_rtt_stamp = v.now;
                        cwnd = cwnd.max(self.prior_cwnd);
                        if self.full_bw_reached {
                            self.reset_probe_bw(v);
                        } else {
                            self.mode = BbrMode::Startup;
                        }
                    }
                }
            }
        }
        cwnd
    }

    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            BbrMode::Startup => (HIGH_GAIN, HIGH_GAIN),
            BbrMode::Drain => (DRAIN_GAIN, HIGH_GAIN),
            BbrMode::ProbeBw if self.lt_use_bw => (1.0, CWND_GAIN),
            BbrMode::ProbeBw => (PACING_GAIN[self.cycle_index], CWND_GAIN),
            BbrMode::ProbeRtt => (1.0, 1.0),
        };
    }

    fn set_pacing_rate(&mut self, srtt: Option<Duration>, cwnd: f64, mss_bytes: f64) {
        if !self.has_seen_rtt && srtt.is_some() {
            self.init_pacing_rate(cwnd, srtt, mss_bytes);
        }
        let rate = self.bw() * self.pacing_gain * mss_bytes * PACING_MARGIN;
        if self.full_bw_reached || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    /// `bbr_set_cwnd` with `bbr_set_cwnd_to_recover_or_restore`.
    fn set_cwnd(&mut self, rs: &RateSample, v: &SenderView, cwnd_now: f64) -> f64 {
        let mut cwnd = cwnd_now;
        if rs.acked > 0 {
            let acked = rs.acked as f64;
            if rs.losses > 0 {
                cwnd = (cwnd - rs.losses as f64).max(1.0);
            }
            let conserve = if v.state == CaState::Recovery && self.prev_state != CaState::Recovery {
                self.packet_conservation = true;
                self.next_round_delivered = v.delivered;
                cwnd = v.in_flight as f64 + acked;
                true
            } else {
                if self.prev_state >= CaState::Recovery && v.state < CaState::Recovery {
                    cwnd = cwnd.max(self.prior_cwnd);
                    self.packet_conservation = false;
                }
                self.packet_conservation
            };
            self.prev_state = v.state;
            if conserve {
                cwnd = cwnd.max(v.in_flight as f64 + acked);
            } else {
                let target = self.quantisation_budget(
                    self.bdp(self.bw(), self.cwnd_gain) + self.aggregation_cwnd(),
                    v.mss_bytes,
                );
                if self.full_bw_reached {
                    cwnd = (cwnd + acked).min(target);
                } else if cwnd < target || v.delivered < 10 {
                    cwnd += acked;
                }
                cwnd = cwnd.max(MIN_CWND);
            }
        }
        if self.mode == BbrMode::ProbeRtt {
            cwnd = cwnd.min(MIN_CWND);
        }
        cwnd
    }
}
