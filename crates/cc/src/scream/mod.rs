//! SCReAM v2 with L4S: self-clocked, window-based congestion control for real-time media.
//!
//! Sources: RFC 8298 (SCReAM v1), draft-johansson-ccwg-rfc8298bis-screamv2 (v2, "the draft")
//! and Ericsson's reference implementation (`EricssonResearch/scream`, `code/ScreamV2Tx.cpp`,
//! `ScreamV2TxStream.cpp`; "the reference"). Where the two differ, [`config`] lists it.
//! Both constant sets are in [`ScreamConfig`]; the default is the draft's (see
//! [`config`] for why).
//!
//! One file per rule block:
//!
//! | file | rule |
//! |---|---|
//! | `flight.rs` | sent-packet history, bytes in flight, received edge |
//! | `loss.rs` | RACK-like loss detection (learnt reorder window, at least 30 ms), loss gate |
//! | `delay.rs` | base delay (50 × 10 s), qdelay, qdelay_avg, deviation, sRTT |
//! | `l4s.rs` | DCTCP-like α (gains 1/8 up, 1/128 down) |
//! | `backoff.rs` | loss / classic-ECN / L4S / virtual-CE window reductions |
//! | `inflection.rs` | inflection point and `sclI` |
//! | `increase.rs` | additive + multiplicative increase, post-congestion ramp (no slow start) |
//! | `send.rs` | send gate (window × headroom) and pacing rate |
//! | `bottleneck.rs`, `probe.rs` | the L4S pacing cap's bottleneck estimate and its capacity probe |
//! | `competing.rs` | competing-flow compensation: the adaptive queue-delay target |
//! | `media.rs` | encoder target, RTP-queue integral controller, queue discard |
//!
//! Driving it (sans-IO, [`Controller`]): report every packet sent (its ECN code point decides
//! whether a CE mark gets the classic or the L4S reaction — send with [`Scream::ecn`]); feed RFC
//! 8888 per-packet feedback; report the media queue through
//! [`Controller::on_media_queue`]; gate the pacer with [`Controller::send_allowance`] and
//! [`Controller::pacing_rate`]; give [`Controller::target_bitrate`] to the encoder; act on
//! [`ControllerEvent::DiscardQueue`] (drop the queue, request a key frame); call
//! [`Controller::handle_timeout`] at [`Controller::poll_timeout`] (loss detection, the discard
//! deadline and the feedback-loss guard are timers).
//!
//! Every state variable that grows multiplicatively is bounded (the window by the bytes actually
//! in flight and by `max_bitrate × 200 ms`; α, scales and the integral term by `[0, 1]`-style
//! clamps; delays by 10 s), so a session can run indefinitely — see the 15-minute scenario in
//! `crates/cc/tests/scream_scenarios.rs` and shared/notes/scream-v2.md on the reference's defect.
//!
//! Where cg departs from the draft, each a [`ScreamConfig`] field (switchable, its doc states
//! the rule and the reason) unless marked:
//!
//! - the L4S pacing cap at the estimated bottleneck rate ([`ScreamConfig::l4s_pacing_cap`]),
//!   and its capacity probe ([`ScreamConfig::l4s_capacity_probe`]);
//! - the long-idle restore keeps the flight's rate ([`ScreamConfig::idle_restore_keeps_rate`]);
//! - pacing follows `max(target, RTP rate)`, as the reference (not switchable);
//! - the RTP-queue integral samples at frame arrivals (not switchable) and skips frames queued
//!   behind a large one ([`ScreamConfig::large_frame_factor`]);
//! - no RTP-queue discard loop ([`ScreamConfig::discard_recovery_max_delay`]);
//! - a virtual-CE reaction restarts the post-congestion ramp (not switchable);
//! - the L4S back-off quartered while the encoder lags
//!   ([`ScreamConfig::backoff_rate_limited_scale`]); no `frame_size_dev` by default
//!   ([`ScreamConfig::frame_size_dev_alpha`]);
//! - competing-flow compensation with cg's drain test ([`ScreamConfig::competing_flows`]);
//! - one loss reaction per RTT ([`ScreamConfig::loss_event_per_rtt`]).
//!
//! Figures behind these: the tests under `crates/cc/tests`, `docs/notes/2026-11-28.md` and
//! `docs/notes/2026-12-01-figures-from-docs.md`.
//!
//! Not implemented (optional in the draft): clock-drift compensation and the base-delay
//! reset (draft §4.5), multi-stream scheduling.

mod backoff;
mod bottleneck;
mod competing;
pub mod config;
mod delay;
mod flight;
mod increase;
mod inflection;
mod l4s;
mod loss;
mod media;
mod probe;
mod send;
mod variant;

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use cg_types::{Bitrate, DataSize, Ecn, RemoteTime};

pub use competing::CompetingFlows;
pub use config::{CapacityProbe, LossGate, RelaxedPacing, ScreamConfig};
pub use variant::ScreamVariant;

use crate::base_delay::BaseDelay;
use crate::{
    ConfigError, Controller, ControllerEvent, ControllerStats, Feedback, FeedbackKind, MediaQueue,
    SentPacket,
};
use backoff::{Congestion, L4sBackoffInputs};
use competing::QdelayTarget;
use delay::DelayState;
use flight::Flight;
use increase::IncreaseInputs;
use inflection::Inflection;
use l4s::L4sAlpha;
use loss::LossRate;
use media::{MediaQueueControl, MediaRateMeter, TargetInputs};

/// Window over which the acknowledged rate is measured (reference `kRateUpdateInterval`).
const RATE_WINDOW: Duration = Duration::from_millis(50);
/// The MSS is the largest packet of the last one to two such windows (reference: 1 s).
const MSS_WINDOW: Duration = Duration::from_secs(1);
/// At most this many undrained events are kept.
const MAX_EVENTS: usize = 16;

/// Gaps between feedbacks longer than this (s) are silences, not the feedback interval.
const FEEDBACK_GAP_MAX: f64 = 0.5;

/// A SCReAM v2 sender-side controller. Build it from a [`ScreamConfig`].
#[derive(Debug, Clone)]
pub struct Scream {
    cfg: ScreamConfig,
    epoch: Instant,
    flight: Flight,
    base: BaseDelay,
    delay: DelayState,
    /// The queue-delay target, adapted to competing flows when
    /// [`ScreamConfig::competing_flows`] is on (`competing.rs`).
    qdelay_target: QdelayTarget,
    alpha: L4sAlpha,
    loss_rate: LossRate,
    inflection: Inflection,
    media: MediaQueueControl,
    media_rate: MediaRateMeter,
    media_report_time: Option<Instant>,

    /// Congestion window ("reference window") in bytes.
    cwnd: f64,
    mss_current: u64,
    mss_prev: u64,
    /// Start of the current MSS window, µs since the epoch.
    mss_window_start_us: Option<i64>,

    last_reaction: Option<Instant>,
    last_congestion: Option<Instant>,
    pending_loss: bool,
    /// When the window was last reduced for loss.
    last_loss_reaction: Option<Instant>,
    /// The window before the last loss reduction, and when (the CUBIC-friendly region's
    /// epoch, `competing.rs`).
    cubic_epoch: Option<(f64, Instant)>,
    pending_classic_ce: bool,
    pending_l4s_ce: bool,
    newly_acked: u64,
    newly_acked_ce: u64,
    max_bif: u64,
    max_bif_prev: u64,
    bif_window_start: Option<Instant>,
    last_progress: Option<Instant>,
    /// When the last feedback arrived, and the smoothed gap between feedbacks (s): a packet
    /// stays in flight for about an sRTT and a feedback gap.
    last_feedback: Option<Instant>,
    feedback_gap: f64,

    acked_bytes_window: u64,
    acked_window_start: Option<Instant>,
    acked_rate_bps: f64,
    /// Bottleneck-rate estimate from trains that outran the bottleneck (L4S pacing cap).
    bottleneck: bottleneck::BottleneckRate,
    /// When the L4S pacing cap lets a frame go out faster ([`ScreamConfig::l4s_capacity_probe`]).
    probe: probe::Probe,
    last_l4s_ce: Option<Instant>,
    l4s_congested: bool,
    /// The newest L4S CE mark is less than an sRTT old ([`ScreamConfig::l4s_mark_drain`]).
    l4s_mark_fresh: bool,

    target: Bitrate,
    pacing: Bitrate,
    headroom: f64,
    last_event: Option<Congestion>,
    last_backoff: f64,
    events: VecDeque<ControllerEvent>,
    lost_packets: u64,
    ce_packets: u64,
    /// RFC 8298 §4.1.2.4's learnt reordering window.
    reorder: loss::ReorderWindow,
    /// Packets declared lost and acknowledged later (reordered by more than the window).
    spurious_losses: u64,
    /// Window reductions so far by their cause: loss, CE (classic or L4S) and queue delay
    /// (virtual CE). A fault test counts them to tell a reaction to reordering or jitter
    /// from one to congestion.
    backoffs: Backoffs,
}

/// Window reductions counted by cause.
#[derive(Debug, Clone, Copy, Default)]
struct Backoffs {
    loss: u64,
    ce: u64,
    delay: u64,
}

impl Scream {
    /// A controller starting at `now`, or the first config value it cannot run with
    /// ([`ScreamConfig::validate`]).
    pub fn new(cfg: ScreamConfig, now: Instant) -> Result<Self, ConfigError> {
        cfg.validate()?;
        let mss = cfg.initial_mss.as_bytes() as f64;
        let cwnd0 = (cfg.start_bitrate.as_bps_f64() / 8.0
            * cfg.initial_rtt.as_secs_f64()
            * cfg.rate_margin)
            .max(cfg.min_cwnd.as_bytes_f64())
            .max(2.0 * mss);
        let mut s = Scream {
            epoch: now,
            flight: Flight::new(cfg.max_tracked_packets),
            base: BaseDelay::new(cfg.base_delay_slots, cfg.base_delay_slot),
            delay: DelayState::new(cfg.initial_rtt),
            qdelay_target: QdelayTarget::new(cfg.qdelay_target),
            alpha: L4sAlpha::new(cfg.initial_l4s_alpha),
            loss_rate: LossRate::default(),
            inflection: Inflection::default(),
            media: MediaQueueControl::default(),
            media_rate: MediaRateMeter::default(),
            media_report_time: None,
            cwnd: cwnd0,
            mss_current: 0,
            mss_prev: 0,
            mss_window_start_us: None,
            last_reaction: None,
            last_congestion: None,
            pending_loss: false,
            last_loss_reaction: None,
            cubic_epoch: None,
            pending_classic_ce: false,
            pending_l4s_ce: false,
            newly_acked: 0,
            newly_acked_ce: 0,
            max_bif: 0,
            max_bif_prev: 0,
            bif_window_start: None,
            last_progress: None,
            last_feedback: None,
            feedback_gap: 0.0,
            acked_bytes_window: 0,
            acked_window_start: None,
            acked_rate_bps: 0.0,
            bottleneck: if cfg.l4s_capacity_probe.is_some() {
                bottleneck::BottleneckRate::raising()
            } else {
                bottleneck::BottleneckRate::default()
            },
            probe: probe::Probe::default(),
            last_l4s_ce: None,
            l4s_congested: false,
            l4s_mark_fresh: false,
            target: cfg.start_bitrate,
            pacing: Bitrate::ZERO,
            headroom: cfg.window_headroom_max,
            last_event: None,
            last_backoff: 0.0,
            events: VecDeque::new(),
            lost_packets: 0,
            ce_packets: 0,
            backoffs: Backoffs::default(),
            reorder: loss::ReorderWindow::default(),
            spurious_losses: 0,
            cfg,
        };
        s.update_rates(now);
        s.target = s.cfg.start_bitrate;
        s.update_pacing(now);
        Ok(s)
    }

    /// What `media::target_bitrate` computes the target from.
    fn target_inputs(&self) -> TargetInputs {
        let cfg = &self.cfg;
        TargetInputs {
            cwnd: self.cwnd,
            srtt: self.delay.srtt,
            mss: self.mss(),
            overhead: cfg.packet_overhead.as_bytes_f64(),
            margin: cfg.rate_margin,
            rate_adjust: self.media.rate_adjust,
            frame_size_dev: self.media.frame_size_dev,
            min: cfg.min_bitrate,
            max: cfg.max_bitrate,
        }
    }

    /// The ECN code point the transport should send media with.
    pub fn ecn(&self) -> Ecn {
        self.cfg.ecn
    }

    /// The configuration in force.
    pub fn config(&self) -> &ScreamConfig {
        &self.cfg
    }

    /// Congestion window.
    pub fn cwnd(&self) -> DataSize {
        DataSize::from_bytes_f64(self.cwnd)
    }

    /// Bytes in flight.
    pub fn bytes_in_flight(&self) -> DataSize {
        DataSize::bytes(self.flight.bytes_in_flight())
    }

    /// L4S α.
    pub fn l4s_alpha(&self) -> f64 {
        self.alpha.alpha
    }

    /// Latest queuing-delay estimate and its average.
    pub fn queue_delay(&self) -> (Duration, Duration) {
        (self.delay.qdelay, self.delay.qdelay_avg)
    }

    /// Smoothed RTT.
    pub fn srtt(&self) -> Duration {
        self.delay.srtt
    }

    fn mss(&self) -> f64 {
        let seen = self.mss_current.max(self.mss_prev);
        if seen == 0 {
            self.cfg.initial_mss.as_bytes().max(1) as f64
        } else {
            seen as f64
        }
    }

    fn min_cwnd(&self) -> f64 {
        self.cfg.min_cwnd.as_bytes_f64().max(2.0 * self.mss())
    }

    fn cwnd_ratio(&self) -> f64 {
        (self.mss() / self.cwnd.max(1.0)).min(1.0)
    }

    fn micros_since_epoch(&self, t: Instant) -> i64 {
        i64::try_from(t.saturating_duration_since(self.epoch).as_micros()).unwrap_or(i64::MAX)
    }

    fn app_limited(&self) -> bool {
        self.target >= self.cfg.max_bitrate
    }

    /// The reordering window in force (`loss.rs`), recomputed at `now`.
    fn update_reorder_window(&mut self, now: Instant) -> Duration {
        if self.cfg.adaptive_reorder_window {
            self.reorder
                .update(now, self.cfg.reorder_window, self.delay.srtt)
        } else {
            self.cfg.reorder_window
        }
    }

    /// The reordering window as last computed.
    fn reorder_window(&self) -> Duration {
        if self.cfg.adaptive_reorder_window {
            self.reorder.current().max(self.cfg.reorder_window)
        } else {
            self.cfg.reorder_window
        }
    }

    fn on_loss_detection(&mut self, now: Instant, delivered: u64) {
        let window = self.update_reorder_window(now);
        let lost = self.flight.detect_losses(now, window);
        self.loss_rate
            .update(lost.packets, delivered, self.cfg.loss_rate_gain);
        if lost.packets > 0 {
            self.lost_packets += lost.packets;
            if self.loss_rate.counts(
                self.cfg.loss_gate.as_ref(),
                self.delay.qdelay_avg,
                self.qdelay_target.target(),
            ) {
                self.pending_loss = true;
            }
        }
    }

    /// Rotates the per-RTT maximum of bytes in flight.
    fn rotate_max_bif(&mut self, now: Instant) {
        let start = *self.bif_window_start.get_or_insert(now);
        if now.saturating_duration_since(start) >= self.delay.srtt.max(Duration::from_millis(1)) {
            self.max_bif_prev = self.max_bif;
            self.max_bif = self.flight.bytes_in_flight();
            self.bif_window_start = Some(now);
        }
    }

    /// Reaction to congestion and window increase (draft §4.2.2), then the rates.
    fn update_window(&mut self, now: Instant) {
        let cfg = &self.cfg;
        self.alpha.update(
            now,
            cfg.l4s_alpha_interval,
            self.delay.srtt,
            cfg.l4s_gain_up,
            cfg.l4s_gain_down,
        );
        let th = delay::dev_threshold(self.cwnd_ratio());
        self.delay.update_avg(
            now,
            cfg.reaction_interval,
            cfg.qdelay_avg_gain,
            cfg.qdelay_dev_norm,
            cfg.qdelay_dev_gain,
            th,
        );
        self.rotate_max_bif(now);
        let cfg = &self.cfg;
        self.l4s_mark_fresh = self
            .last_l4s_ce
            .is_some_and(|t| now.saturating_duration_since(t) <= self.delay.srtt);
        self.l4s_congested = self.last_l4s_ce.is_some_and(|t| {
            cfg.l4s_pacing_hold
                .is_none_or(|hold| now.saturating_duration_since(t) <= hold)
        });
        if let Some(c) = &cfg.competing_flows {
            self.qdelay_target
                .update(self.delay.qdelay, self.delay.srtt, now, c);
        }
        let raw_dev_scale = self.delay.dev_scale(th);
        let dev_scale = raw_dev_scale.max(cfg.min_qdelay_dev_scale);
        let srtt = self.delay.srtt;

        // --- reduction ---
        if self.pending_loss || self.pending_classic_ce || self.pending_l4s_ce {
            self.last_congestion_mark(now);
        }
        let cfg = &self.cfg;
        if cfg.loss_event_per_rtt
            && self
                .last_loss_reaction
                .is_some_and(|t| now.saturating_duration_since(t) < srtt)
        {
            // Losses within an sRTT of the last loss reduction: the same loss event.
            self.pending_loss = false;
        }
        let interval = cfg.reaction_interval.min(srtt);
        let due = self
            .last_reaction
            .is_none_or(|t| now.saturating_duration_since(t) >= interval);
        if due {
            let event = if self.pending_loss {
                Some(Congestion::Loss)
            } else if self.pending_classic_ce {
                Some(Congestion::ClassicCe)
            } else if self.pending_l4s_ce {
                Some(Congestion::L4sCe)
            } else if self.delay.qdelay_avg > self.qdelay_target.target() / 2 {
                Some(Congestion::VirtualCe(backoff::virtual_alpha(
                    self.delay.qdelay_avg,
                    self.qdelay_target.target(),
                )))
            } else {
                None
            };
            if let Some(ev) = event {
                self.react(ev, now, dev_scale);
            }
        }

        // --- increase ---
        let cfg = &self.cfg;
        let scl_i = self.inflection.scale(self.cwnd);
        let l4s_active = self.alpha.alpha > 1e-4;
        let damping = if cfg.delay_increase_damping && !l4s_active {
            increase::delay_damping(self.delay.qdelay_avg, self.qdelay_target.target())
        } else {
            1.0
        };
        let inc = increase::increment(&IncreaseInputs {
            acked_not_ce: self.newly_acked.saturating_sub(self.newly_acked_ce) as f64,
            cwnd: self.cwnd,
            mss: self.mss(),
            srtt,
            virtual_rtt: cfg.virtual_rtt,
            scl_i,
            delay_damping: damping,
            dev_scale,
            multiplicative_increase: cfg.multiplicative_increase,
            post_congestion: increase::post_congestion_scale(
                now,
                self.last_congestion,
                cfg.post_congestion_rtts,
                srtt,
                cfg.virtual_rtt,
            ),
        });
        let inc = match (&cfg.competing_flows, self.cubic_epoch) {
            (Some(c), Some((w_max, epoch)))
                if c.cubic_friendly && self.qdelay_target.competing(c) =>
            {
                // The CUBIC-friendly region (`competing.rs`): CUBIC's window one sRTT ahead,
                // approached by (W − cwnd)/cwnd per acknowledged byte (RFC 9438 §4.2).
                let t = now.saturating_duration_since(epoch) + srtt;
                let w = competing::cubic_window(w_max, self.mss(), cfg.loss_beta, t);
                let acked = self.newly_acked.saturating_sub(self.newly_acked_ce) as f64;
                inc.max((w - self.cwnd) / self.cwnd.max(1.0) * acked)
            }
            _ => inc,
        };
        let max_bif = self.max_bif.max(self.max_bif_prev) as f64;
        if self.cwnd + inc
            <= increase::max_allowed(self.mss(), max_bif, cfg.bytes_in_flight_headroom)
            && self.target < cfg.max_bitrate
        {
            self.cwnd += inc;
        }
        self.newly_acked = 0;
        self.newly_acked_ce = 0;

        // --- bounds ---
        // The time a packet stays in flight: an sRTT, a feedback gap (cg-rtp reports every
        // 40 ms; on a path of a few ms a window of the sRTT alone cannot carry one frame) and
        // the reference's 1 ms.
        let rtt_c = (srtt.as_secs_f64() + self.feedback_gap + 0.001).clamp(0.001, 0.2);
        let max_bytes_per_rtt = cfg.max_bitrate.as_bps_f64() / 8.0 * rtt_c;
        if self.target.as_bps_f64() >= 0.95 * cfg.max_bitrate.as_bps_f64() {
            // Reference: at the maximum rate keep the window near what is actually used, so a
            // later capacity drop does not start from an inflated window.
            let cap = max_bif.max(cfg.pacing_headroom * max_bytes_per_rtt);
            self.cwnd = self.cwnd.min(cap);
        }
        let dev_max = if cfg.frame_size_dev_alpha.is_some() {
            media::FRAME_SIZE_DEV_MAX
        } else {
            0.0
        };
        let hard_cap = 4.0 * max_bytes_per_rtt * (cfg.rate_margin + cfg.max_rate_adjust + dev_max)
            + 2.0 * self.mss();
        self.cwnd = self
            .cwnd
            .clamp(self.min_cwnd(), hard_cap.max(self.min_cwnd()));
        self.headroom = send::window_headroom(
            cfg.window_headroom_min,
            cfg.window_headroom_max,
            raw_dev_scale,
        );
        self.update_rates(now);
    }

    fn last_congestion_mark(&mut self, now: Instant) {
        self.last_congestion = Some(now);
    }

    /// Applies one congestion reaction (draft §4.2.2.1, `backoff.rs`).
    fn react(&mut self, ev: Congestion, now: Instant, dev_scale: f64) {
        let cfg = &self.cfg;
        let srtt = self.delay.srtt;
        let long_idle = self.last_reaction.is_none_or(|t| {
            now.saturating_duration_since(t).as_secs_f64()
                > cfg.idle_restore_rtts * srtt.max(cfg.virtual_rtt).as_secs_f64()
        });
        let scl_i = self.inflection.scale(self.cwnd);
        self.inflection
            .on_congestion(self.cwnd, now, srtt, cfg.inflection_update_rtts);
        let cfg = &self.cfg;
        let factor = match ev {
            Congestion::Loss => cfg.loss_beta,
            Congestion::ClassicCe => cfg.ecn_beta,
            Congestion::L4sCe => {
                if long_idle {
                    // Draft: after >100 RTTs without congestion the window may have grown far
                    // beyond what the (source-limited) flow used; restart from the flight.
                    let used = if cfg.idle_restore_current_rtt {
                        self.max_bif.max(self.max_bif_prev)
                    } else {
                        self.max_bif_prev
                    } as f64;
                    let used = if cfg.idle_restore_keeps_rate {
                        // The window whose target is the flight's rate (`media.rs`).
                        used * self.target_inputs().window_per_rate()
                    } else {
                        used
                    };
                    if used > 0.0 {
                        self.cwnd = self.cwnd.min(used);
                    }
                }
                let rate_limited =
                    self.target.as_bps_f64() < cfg.backoff_rate_limited_ratio * self.acked_rate_bps;
                1.0 - backoff::l4s_backoff(&L4sBackoffInputs {
                    alpha: self.alpha.alpha,
                    srtt,
                    interval: cfg.reaction_interval,
                    cwnd_ratio: self.cwnd_ratio(),
                    qdelay: self.delay.qdelay,
                    qdelay_target: self.qdelay_target.target(),
                    scl_i,
                    dev_scale,
                    rate_limited,
                    rate_limited_scale: cfg.backoff_rate_limited_scale,
                })
            }
            Congestion::VirtualCe(av) => {
                1.0 - backoff::virtual_backoff(av, srtt, cfg.reaction_interval, self.cwnd_ratio())
            }
        };
        let factor = if factor.is_finite() {
            factor.clamp(0.0, 1.0)
        } else {
            1.0
        };
        self.last_backoff = 1.0 - factor;
        if matches!(ev, Congestion::Loss | Congestion::ClassicCe) {
            self.qdelay_target.on_loss_event();
        }
        if matches!(ev, Congestion::Loss) {
            self.last_loss_reaction = Some(now);
            self.cubic_epoch = Some((self.cwnd, now));
        }
        match ev {
            Congestion::Loss => self.backoffs.loss += 1,
            Congestion::ClassicCe | Congestion::L4sCe => self.backoffs.ce += 1,
            Congestion::VirtualCe(_) => self.backoffs.delay += 1,
        }
        self.cwnd = (self.cwnd * factor).max(self.min_cwnd());
        self.last_event = Some(ev);
        self.last_reaction = Some(now);
        self.last_congestion = Some(now);
        self.pending_loss = false;
        self.pending_classic_ce = false;
        self.pending_l4s_ce = false;
    }

    fn update_rates(&mut self, now: Instant) {
        let cfg = &self.cfg;
        self.target = media::target_bitrate(&self.target_inputs());
        if self.qdelay_target.draining() {
            // Competing-flow drain test (`competing.rs`): half the rate for a few RTTs.
            self.target =
                Bitrate::from_bps_f64(self.target.as_bps_f64() / 2.0).max(cfg.min_bitrate);
        }
        self.update_pacing(now);
    }

    fn update_pacing(&mut self, now: Instant) {
        let cfg = &self.cfg;
        let adaptive = send::adaptive_scale(
            self.media.queue.size,
            self.target,
            cfg.frame_period.as_secs_f64(),
            cfg.max_adaptive_pacing_scale,
        );
        self.pacing = send::pacing_rate(
            self.target,
            Bitrate::from_bps_f64(self.media_rate.rate_bps),
            cfg.max_bitrate,
            cfg.pacing_headroom,
            adaptive,
            cfg.min_pacing_rate,
            cfg.relaxed_pacing.as_ref(),
        );
        if let Some(cap) = cfg.l4s_pacing_cap.filter(|_| self.l4s_congested)
            && let Some(bottleneck) = self.bottleneck.estimate()
        {
            let gain = match &cfg.l4s_capacity_probe {
                Some(p) => self.probe.gain(
                    p,
                    probe::ProbeInputs {
                        now,
                        target_at_cap: self.target.as_bps_f64() >= cap * bottleneck,
                        quiet: self
                            .last_l4s_ce
                            .is_none_or(|t| now.saturating_duration_since(t) > 2 * self.delay.srtt),
                        raises: self.bottleneck.raises(),
                    },
                ),
                None => 1.0,
            };
            if let Some((from, to)) = self.probe.current() {
                let (from, to) = (self.micros_since_epoch(from), self.micros_since_epoch(to));
                self.bottleneck.on_probe(from, to);
            }
            self.pacing = send::l4s_cap(self.pacing, self.target, gain * bottleneck, cap);
            if let Some(drain) = cfg.l4s_mark_drain
                && self.l4s_mark_fresh
            {
                self.pacing = self
                    .pacing
                    .min(Bitrate::from_bps_f64(drain * bottleneck))
                    .max(cfg.min_pacing_rate);
            }
        }
    }

    fn push_event(&mut self, ev: ControllerEvent) {
        if self.events.len() < MAX_EVENTS {
            self.events.push_back(ev);
        }
    }

    fn feedback_deadline(&self) -> Option<Instant> {
        if self.flight.bytes_in_flight() == 0 {
            return None;
        }
        self.last_progress.map(|t| t + self.cfg.feedback_timeout)
    }

    fn queue_params(&self) -> media::QueueParams {
        let cfg = &self.cfg;
        media::QueueParams {
            frame_period: cfg.frame_period,
            gain: cfg.rate_adjust_gain,
            max_adjust: cfg.max_rate_adjust,
            max_delay: cfg.max_rtp_queue_delay,
            min_discard_interval: cfg.min_discard_interval,
            recovery_max_delay: cfg.discard_recovery_max_delay,
            large_frame_factor: cfg.large_frame_factor,
            target: self.target,
            frame_size_dev_alpha: cfg.frame_size_dev_alpha,
        }
    }

    fn discard_deadline(&self) -> Option<Instant> {
        let at = self.media_report_time?;
        let q = self.media.queue;
        if q.size == DataSize::ZERO && q.delay == Duration::ZERO {
            return None;
        }
        let p = self.queue_params();
        let left = self.media.discard_limit(&p).saturating_sub(q.delay);
        Some(at + left + Duration::from_micros(1))
    }
}

impl Controller for Scream {
    fn on_packet_sent(&mut self, p: &SentPacket) {
        let sent_us = self.micros_since_epoch(p.send_time);
        if !self
            .flight
            .on_sent(p.seq, p.size.as_bytes(), sent_us, p.ecn)
        {
            return;
        }
        self.media_rate.on_sent(p.size.as_bytes());
        let start = *self.mss_window_start_us.get_or_insert(sent_us);
        if sent_us.saturating_sub(start) >= MSS_WINDOW.as_micros() as i64 {
            self.mss_prev = self.mss_current;
            self.mss_current = 0;
            self.mss_window_start_us = Some(sent_us);
        }
        self.mss_current = self.mss_current.max(p.size.as_bytes().clamp(64, 65_535));
        let bif = self.flight.bytes_in_flight();
        self.max_bif = self.max_bif.max(bif);
        if self.last_progress.is_none() || bif == p.size.as_bytes() {
            // The flight was empty: the feedback guard starts now.
            self.last_progress = Some(p.send_time);
        }
    }

    fn on_feedback(&mut self, feedback: &Feedback<'_>, now: Instant) {
        if let Some(last) = self.last_feedback {
            let gap = now.saturating_duration_since(last).as_secs_f64();
            // A silence is no feedback interval.
            if gap < FEEDBACK_GAP_MAX {
                self.feedback_gap += (gap - self.feedback_gap) / 8.0;
            }
        }
        self.last_feedback = Some(now);
        let mut delivered = 0u64;
        let mut newest: Option<(i64, RemoteTime)> = None;
        let mut last_owd: Option<i64> = None;
        self.base.rotate(now);
        for r in feedback.packets {
            let Some(arrival) = r.arrival else { continue };
            let Some(a) = self.flight.on_acked(r.seq, now) else {
                // Declared lost, yet here: the reordering window was too short.
                if let Some(missing_since) = self.flight.declared_lost_acked(r.seq) {
                    self.reorder.on_late_ack(missing_since, now);
                    self.spurious_losses += 1;
                }
                continue;
            };
            delivered += 1;
            let rec = a.record;
            if let Some(missing_since) = rec.missing_since {
                self.reorder.on_late_ack(missing_since, now);
            }
            self.bottleneck
                .on_acked(arrival.as_micros(), rec.sent_us, u64::from(rec.size));
            self.newly_acked += a.edge_bytes;
            self.acked_bytes_window += u64::from(rec.size);
            let ce = r.ecn.is_ce();
            if ce {
                match rec.ecn {
                    Ecn::Ect1 => {
                        self.pending_l4s_ce = true;
                        self.last_l4s_ce = Some(now);
                    }
                    Ecn::Ect0 => self.pending_classic_ce = true,
                    // CE on a packet we did not send ECN-capable: nonsense, ignore.
                    _ => {}
                }
                if rec.ecn.is_ect() {
                    self.newly_acked_ce += u64::from(rec.size);
                    self.ce_packets += 1;
                }
            }
            if rec.ecn == Ecn::Ect1 {
                self.alpha.on_delivered(ce);
            }
            let owd = arrival.as_micros().saturating_sub(rec.sent_us);
            if self.base.observe(owd) {
                last_owd = Some(owd);
            }
            if a.is_new_edge {
                newest = Some((rec.sent_us, arrival));
            }
        }
        if let Some(owd) = last_owd {
            // The latest sample taken is the one the controller reacts to (the base already
            // holds every sample's minimum).
            self.delay.qdelay = self.base.queue(owd);
        }
        if let Some((sent_us, arrival)) = newest {
            let hold_us = match feedback.report_time {
                Some(report) if self.cfg.rtt_without_feedback_hold => {
                    // A hold outside [0, 1 s] is a broken or foreign clock: ignored.
                    let h = report.as_micros().saturating_sub(arrival.as_micros());
                    if (0..=1_000_000).contains(&h) { h } else { 0 }
                }
                _ => 0,
            };
            let rtt_us = self
                .micros_since_epoch(now)
                .saturating_sub(sent_us)
                .saturating_sub(hold_us);
            let rtt = Duration::from_micros(u64::try_from(rtt_us).unwrap_or(0));
            let gain = if self.app_limited() && rtt < self.delay.srtt {
                self.cfg.srtt_gain_app_limited
            } else {
                self.cfg.srtt_gain
            };
            self.delay.on_rtt(rtt, gain);
        }
        if delivered > 0 {
            self.last_progress = Some(now);
        }
        // Acknowledged rate over 50 ms windows, EWMA 0.2 (reference `rateTransmittedAvg`).
        let start = *self.acked_window_start.get_or_insert(now);
        let dt = now.saturating_duration_since(start);
        if dt >= RATE_WINDOW {
            let r = self.acked_bytes_window as f64 * 8.0 / dt.as_secs_f64();
            self.acked_rate_bps = 0.8 * self.acked_rate_bps + 0.2 * r;
            self.acked_bytes_window = 0;
            self.acked_window_start = Some(now);
        }
        self.on_loss_detection(now, delivered);
        self.update_window(now);
    }

    fn handle_timeout(&mut self, now: Instant) {
        if self
            .flight
            .loss_deadline(self.reorder_window())
            .is_some_and(|t| t <= now)
        {
            self.on_loss_detection(now, 0);
            self.update_window(now);
        }
        if self.feedback_deadline().is_some_and(|t| t <= now) {
            // No feedback for `feedback_timeout`: forget the flight instead of deadlocking.
            self.flight.clear();
            self.last_progress = Some(now);
        }
        if let Some(at) = self.media_report_time
            && self.discard_deadline().is_some_and(|t| t <= now)
        {
            // Extrapolate the queue's age since the last report.
            let mut q = self.media.queue;
            q.delay += now.saturating_duration_since(at);
            self.on_media_queue(q, now);
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        [
            self.flight.loss_deadline(self.reorder_window()),
            self.feedback_deadline(),
            self.discard_deadline(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    fn on_media_queue(&mut self, queue: MediaQueue, now: Instant) {
        self.media_report_time = Some(now);
        self.media_rate.on_queue(queue.size.as_bytes(), now);
        let params = self.queue_params();
        if self.media.on_queue(queue, now, &params) {
            self.push_event(ControllerEvent::DiscardQueue);
        }
        self.update_rates(now);
    }

    fn poll_event(&mut self) -> Option<ControllerEvent> {
        self.events.pop_front()
    }

    fn target_bitrate(&self) -> Bitrate {
        self.target
    }

    fn pacing_rate(&self) -> Bitrate {
        self.pacing
    }

    fn send_allowance(&self) -> Option<DataSize> {
        Some(send::allowance(
            self.cwnd,
            self.headroom,
            self.mss(),
            self.flight.bytes_in_flight(),
        ))
    }

    fn feedback_kind(&self) -> FeedbackKind {
        FeedbackKind::Rfc8888
    }

    fn stats(&self) -> ControllerStats {
        let event = match self.last_event {
            None => 0.0,
            Some(Congestion::Loss) => 1.0,
            Some(Congestion::ClassicCe) => 2.0,
            Some(Congestion::L4sCe) => 3.0,
            Some(Congestion::VirtualCe(_)) => 4.0,
        };
        ControllerStats {
            target: self.target,
            pacing: self.pacing,
            cwnd: Some(self.cwnd()),
            bytes_in_flight: Some(self.bytes_in_flight()),
            rtt: Some(self.delay.srtt),
            queue_delay: Some(self.delay.qdelay),
            extra: vec![
                ("alpha", self.alpha.alpha),
                ("marked_fraction", self.alpha.last_fraction),
                ("qdelay_avg_ms", self.delay.qdelay_avg.as_secs_f64() * 1e3),
                ("qdelay_dev_norm", self.delay.qdelay_dev_norm),
                (
                    "qdelay_target_ms",
                    self.qdelay_target.target().as_secs_f64() * 1e3,
                ),
                ("loss_event_rate", self.qdelay_target.loss_event_rate()),
                (
                    "competing_drain",
                    f64::from(u8::from(self.qdelay_target.draining())),
                ),
                ("competing_verdict", self.qdelay_target.verdict()),
                ("cwnd_i", self.inflection.cwnd_i),
                ("window_headroom", self.headroom),
                ("rate_adjust", self.media.rate_adjust),
                ("frame_size_dev", self.media.frame_size_dev),
                ("loss_rate", self.loss_rate.rate),
                ("last_backoff", self.last_backoff),
                ("last_event", event),
                ("acked_rate_bps", self.acked_rate_bps),
                ("bottleneck_bps", self.bottleneck.estimate().unwrap_or(0.0)),
                ("media_rate_bps", self.media_rate.rate_bps),
                ("mss", self.mss()),
                ("lost_packets", self.lost_packets as f64),
                ("ce_packets", self.ce_packets as f64),
                ("discards", self.media.discards as f64),
                ("spurious_losses", self.spurious_losses as f64),
                (
                    "reorder_window_ms",
                    self.reorder_window().as_secs_f64() * 1e3,
                ),
                ("loss_backoffs", self.backoffs.loss as f64),
                ("ce_backoffs", self.backoffs.ce as f64),
                ("delay_backoffs", self.backoffs.delay as f64),
                (
                    "discard_recovering",
                    f64::from(u8::from(self.media.recovering)),
                ),
                (
                    "large_backlog",
                    f64::from(u8::from(self.media.large_backlog)),
                ),
                (
                    "rtp_queue_delay_ms",
                    self.media.queue.delay.as_secs_f64() * 1e3,
                ),
                ("tracked_packets", self.flight.len() as f64),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PacketResult;
    use cg_types::RemoteTime;

    const MS: Duration = Duration::from_millis(1);

    /// A minimal driver: sends `n` packets of 1200 B at `t`, acknowledges them at `t + rtt`
    /// with one-way delay `owd` and the given ECN.
    struct Driver {
        s: Scream,
        t: Instant,
        seq: u64,
        ecn: Ecn,
    }

    impl Driver {
        fn new(cfg: ScreamConfig) -> Self {
            let t = Instant::now();
            Driver {
                s: Scream::new(cfg, t).expect("a valid config"),
                t,
                seq: 0,
                ecn: Ecn::Ect1,
            }
        }

        fn send(&mut self, n: u64) -> Vec<(u64, Instant)> {
            (0..n)
                .map(|_| {
                    let p = SentPacket {
                        seq: self.seq,
                        size: DataSize::bytes(1200),
                        send_time: self.t,
                        ecn: self.ecn,
                        kind: crate::PacketKind::Media,
                    };
                    self.s.on_packet_sent(&p);
                    self.seq += 1;
                    (p.seq, p.send_time)
                })
                .collect()
        }

        /// One round: send `n`, advance `rtt`, acknowledge them (`ce` of them marked,
        /// `lost` of them — the first ones — missing), with queuing delay `q`.
        fn round(&mut self, n: u64, ce: u64, lost: u64, q: Duration, rtt: Duration) {
            let sent = self.send(n);
            self.t += rtt;
            let results: Vec<PacketResult> = sent
                .iter()
                .enumerate()
                .map(|(i, &(seq, at))| {
                    let i = i as u64;
                    let arrival = (i >= lost).then(|| {
                        RemoteTime::from_micros(
                            5_000_000
                                + (at - self.epoch()).as_micros() as i64
                                + 10_000
                                + q.as_micros() as i64,
                        )
                    });
                    let ecn = if i >= lost && i - lost < ce {
                        Ecn::Ce
                    } else {
                        self.ecn
                    };
                    PacketResult { seq, arrival, ecn }
                })
                .collect();
            self.s.on_feedback(
                &Feedback {
                    packets: &results,
                    ..Feedback::default()
                },
                self.t,
            );
        }

        fn epoch(&self) -> Instant {
            self.s.epoch
        }
    }

    /// sRTT after 100 rounds of a 70 ms path (not the initial 50 ms) whose receiver holds
    /// each report 40 ms, with or without the report timestamp.
    fn srtt_with_hold(cfg: ScreamConfig, report_time: bool) -> Duration {
        let mut d = Driver::new(cfg);
        for _ in 0..100 {
            let sent = d.send(4);
            let sent_at = d.t;
            d.t += 110 * MS;
            // Receiver clock: 5 s ahead of the sender's epoch; 35 ms one way.
            let arrival_us = 5_000_000 + (sent_at - d.epoch()).as_micros() as i64 + 35_000;
            let results: Vec<PacketResult> = sent
                .iter()
                .map(|&(seq, _)| PacketResult {
                    seq,
                    arrival: Some(RemoteTime::from_micros(arrival_us)),
                    ecn: Ecn::Ect1,
                })
                .collect();
            d.s.on_feedback(
                &Feedback {
                    packets: &results,
                    report_time: report_time.then(|| RemoteTime::from_micros(arrival_us + 40_000)),
                    ..Feedback::default()
                },
                d.t,
            );
        }
        d.s.srtt()
    }

    #[test]
    fn srtt_leaves_out_the_time_the_receiver_held_the_report() {
        let on = srtt_with_hold(ScreamConfig::default(), true);
        assert!((on.as_secs_f64() - 0.070).abs() < 0.002, "{on:?}");
        let without_timestamp = srtt_with_hold(ScreamConfig::default(), false);
        assert!(
            (without_timestamp.as_secs_f64() - 0.110).abs() < 0.002,
            "{without_timestamp:?}"
        );
        let off = srtt_with_hold(
            ScreamConfig {
                rtt_without_feedback_hold: false,
                ..ScreamConfig::default()
            },
            true,
        );
        assert!((off.as_secs_f64() - 0.110).abs() < 0.002, "{off:?}");
    }

    #[test]
    fn window_grows_without_congestion_and_no_slow_start() {
        let mut d = Driver::new(ScreamConfig::default());
        let w0 = d.s.cwnd;
        // One window per RTT, no marks: growth ≈ MSS + MI × cwnd per RTT, never doubling.
        for _ in 0..20 {
            let n = (d.s.cwnd / 1200.0).ceil() as u64;
            let before = d.s.cwnd;
            d.round(n, 0, 0, Duration::ZERO, 30 * MS);
            assert!(d.s.cwnd > before);
            assert!(
                d.s.cwnd < 1.2 * before,
                "growth per RTT must be ≪ slow start's 2×"
            );
        }
        assert!(d.s.cwnd > 1.5 * w0);
        assert!(d.s.target_bitrate() > ScreamConfig::default().start_bitrate);
    }

    #[test]
    fn l4s_ce_reduces_the_window_by_about_alpha_over_two() {
        // The reference set starts with α = 0.1, so the first marks already cut.
        let mut d = Driver::new(ScreamConfig::reference());
        // The very first reaction also pulls the window down to the bytes in flight (draft:
        // no congestion for > 100 RTTs); get it out of the way.
        d.round(40, 1, 0, Duration::ZERO, 30 * MS);
        for _ in 0..10 {
            d.round(40, 0, 0, Duration::ZERO, 30 * MS);
        }
        let alpha = d.s.l4s_alpha();
        let before = d.s.cwnd;
        d.round(40, 20, 0, Duration::ZERO, 30 * MS);
        let after = d.s.cwnd;
        assert_eq!(d.s.last_event, Some(Congestion::L4sCe));
        // α was updated with F = 0.5 before the reaction.
        let a = d.s.l4s_alpha();
        assert!(a > alpha);
        let cut = 1.0 - after / before;
        assert!(cut > 0.0 && cut <= a / 2.0 + 1e-9, "cut {cut}, α {a}");
    }

    /// After a quiet spell the first L4S mark restarts the window from the flight: the draft
    /// takes the bytes in flight as the window, which divides the target by `rate_margin` on
    /// top of the back-off; `idle_restore_keeps_rate` keeps the window whose target is the
    /// flight's rate.
    #[test]
    fn the_first_mark_after_a_quiet_spell_keeps_the_flights_rate() {
        let after_marks = |keeps_rate: bool| {
            let mut d = Driver::new(ScreamConfig {
                idle_restore_keeps_rate: keeps_rate,
                ..ScreamConfig::default()
            });
            // A window's worth an RTT for 3.3 s without a mark, then the source falls to 40
            // packets (48 kB) an RTT: the window outgrows what is in flight.
            for _ in 0..110 {
                let n = (d.s.cwnd / 1200.0).ceil() as u64;
                d.round(n, 0, 0, Duration::ZERO, 30 * MS);
            }
            for _ in 0..5 {
                d.round(40, 0, 0, Duration::ZERO, 30 * MS);
            }
            assert!(d.s.cwnd > 60_000.0, "window {}", d.s.cwnd);
            d.round(40, 4, 0, Duration::ZERO, 30 * MS);
            assert_eq!(d.s.last_event, Some(Congestion::L4sCe));
            (d.s.cwnd, d.s.target_bitrate().as_bps_f64(), d.s.l4s_alpha())
        };
        let flight = 48_000.0;
        let rate = flight * 8.0 / 0.031; // the flight's rate over sRTT (+1 ms, `media.rs`)
        let (w, target, alpha) = after_marks(true);
        assert!(w > 1.2 * flight * (1.0 - alpha / 2.0) - 1.0, "window {w}");
        assert!(
            (target / rate - (1.0 - alpha / 2.0)).abs() < 0.02,
            "{target} of {rate}"
        );
        let (w, target, _) = after_marks(false);
        assert!(w <= flight, "window {w}");
        assert!(target < 0.85 * rate, "{target} of {rate}");
    }

    #[test]
    fn classic_ce_scales_by_ecn_beta_and_loss_by_loss_beta() {
        for base in [ScreamConfig::reference(), ScreamConfig::draft()] {
            let beta = base.ecn_beta;
            let mut d = Driver::new(ScreamConfig {
                loss_gate: None,
                ..base
            });
            d.ecn = Ecn::Ect0;
            for _ in 0..10 {
                d.round(30, 0, 0, Duration::ZERO, 30 * MS);
            }
            let before = d.s.cwnd;
            d.round(30, 1, 0, Duration::ZERO, 30 * MS);
            assert_eq!(d.s.last_event, Some(Congestion::ClassicCe));
            // The same update also adds this feedback's increase (≤ a few % of the window).
            let ratio = d.s.cwnd / before;
            assert!(ratio >= beta && ratio < beta + 0.05, "{ratio} vs β {beta}");

            for _ in 0..5 {
                d.round(30, 0, 0, Duration::ZERO, 30 * MS);
            }
            // Packet 0 of this round is missing; detected 30 ms after the edge passed it.
            d.round(30, 0, 1, Duration::ZERO, 30 * MS);
            let before = d.s.cwnd;
            d.t += 31 * MS;
            let deadline = d.s.poll_timeout().expect("a loss timer is armed");
            assert!(deadline <= d.t);
            d.s.handle_timeout(d.t);
            assert_eq!(d.s.last_event, Some(Congestion::Loss));
            assert!((d.s.cwnd / before - 0.7).abs() < 1e-9);
        }
    }

    /// Sends 10 packets and acknowledges all but the first one 30 ms later, then the first
    /// one `late` after that (a reordered packet); returns the lost-packet count after it.
    fn reordered_round(d: &mut Driver, late: Duration) -> u64 {
        let sent = d.send(10);
        let ack = |d: &mut Driver, which: &[(u64, Instant)]| {
            let results: Vec<PacketResult> = which
                .iter()
                .map(|&(seq, at)| PacketResult {
                    seq,
                    arrival: Some(RemoteTime::from_micros(
                        5_000_000 + (at - d.epoch()).as_micros() as i64 + 10_000,
                    )),
                    ecn: Ecn::NotEct,
                })
                .collect();
            d.s.on_feedback(
                &Feedback {
                    packets: &results,
                    ..Feedback::default()
                },
                d.t,
            );
        };
        d.t += 30 * MS;
        ack(d, &sent[1..]);
        d.t += late;
        d.s.handle_timeout(d.t);
        ack(d, &sent[..1]);
        d.t += 100 * MS;
        d.s.handle_timeout(d.t);
        d.s.lost_packets
    }

    #[test]
    fn a_reordered_packet_acknowledged_late_widens_the_reorder_window() {
        for adaptive in [true, false] {
            let mut d = Driver::new(ScreamConfig {
                adaptive_reorder_window: adaptive,
                ..ScreamConfig::default()
            });
            d.ecn = Ecn::NotEct;
            for _ in 0..5 {
                d.round(10, 0, 0, Duration::ZERO, 30 * MS);
            }
            // 45 ms late, past the configured 30 ms: declared lost, then acknowledged.
            assert_eq!(reordered_round(&mut d, 45 * MS), 1, "adaptive {adaptive}");
            let learnt = d.s.stats().extra_value("reorder_window_ms").unwrap();
            if adaptive {
                assert_eq!(d.s.spurious_losses, 1);
                assert!((learnt - 56.25).abs() < 0.01, "{learnt}");
                // The same reordering again: within the learnt window, no loss.
                assert_eq!(reordered_round(&mut d, 45 * MS), 1);
            } else {
                assert_eq!(learnt, 30.0);
                assert_eq!(reordered_round(&mut d, 45 * MS), 2);
            }
        }
        // Capped: a packet 300 ms late does not stretch the window past max(sRTT, 100 ms).
        let mut w = loss::ReorderWindow::default();
        let t0 = Instant::now();
        w.on_late_ack(t0, t0 + 300 * MS);
        assert_eq!(w.update(t0 + 300 * MS, 30 * MS, 50 * MS), 100 * MS);
        // Forgotten after two 5 s slots without reordering.
        assert_eq!(
            w.update(t0 + Duration::from_secs(11), 30 * MS, 50 * MS),
            30 * MS
        );
    }

    #[test]
    fn at_most_one_reaction_per_interval() {
        let mut d = Driver::new(ScreamConfig::default());
        d.ecn = Ecn::Ect0;
        for _ in 0..10 {
            d.round(30, 0, 0, Duration::ZERO, 30 * MS);
        }
        d.round(30, 5, 0, Duration::ZERO, 30 * MS);
        let after_first = d.s.cwnd;
        // Another CE only 5 ms later: no second cut.
        d.round(3, 3, 0, Duration::ZERO, 5 * MS);
        assert!(d.s.cwnd >= after_first);
        assert_eq!(d.s.backoffs.ce, 1, "one reaction counted");
    }

    #[test]
    fn queue_delay_above_half_target_is_a_virtual_ce() {
        let mut d = Driver::new(ScreamConfig::default());
        d.ecn = Ecn::NotEct;
        for _ in 0..10 {
            d.round(30, 0, 0, Duration::ZERO, 30 * MS);
        }
        let before = d.s.cwnd;
        for _ in 0..10 {
            d.round(30, 0, 0, 55 * MS, 30 * MS);
        }
        assert!(matches!(d.s.last_event, Some(Congestion::VirtualCe(a)) if a > 0.5));
        assert!(d.s.cwnd < before);
        let b = d.s.backoffs;
        assert!(b.delay > 0 && b.loss == 0 && b.ce == 0, "{b:?}");
    }

    #[test]
    fn send_gate_closes_at_window_times_headroom_plus_mss() {
        let mut d = Driver::new(ScreamConfig::default());
        let limit = d.s.cwnd * d.s.headroom + 1200.0;
        let fits = (limit / 1200.0).floor() as u64;
        d.send(fits - 1);
        assert!(d.s.send_allowance().unwrap() >= DataSize::bytes(1200));
        d.send(1);
        assert!(d.s.send_allowance().unwrap() < DataSize::bytes(1200));
        // Feedback opens it again.
        d.t += 30 * MS;
        let results: Vec<PacketResult> = (0..fits)
            .map(|seq| PacketResult {
                seq,
                arrival: Some(RemoteTime::from_micros(1_000_000)),
                ecn: Ecn::Ect1,
            })
            .collect();
        d.s.on_feedback(
            &Feedback {
                packets: &results,
                ..Feedback::default()
            },
            d.t,
        );
        assert_eq!(d.s.bytes_in_flight(), DataSize::ZERO);
        assert!(d.s.send_allowance().unwrap() > DataSize::bytes(1200));
    }

    #[test]
    fn lost_feedback_does_not_deadlock_the_gate() {
        let mut d = Driver::new(ScreamConfig::default());
        d.send(100);
        assert_eq!(d.s.send_allowance(), Some(DataSize::ZERO));
        let t = d.s.poll_timeout().expect("feedback guard armed");
        assert_eq!(t, d.t + Duration::from_millis(500));
        d.s.handle_timeout(t);
        assert_eq!(d.s.bytes_in_flight(), DataSize::ZERO);
    }

    #[test]
    fn rtp_queue_over_100ms_emits_one_discard() {
        // The reference's rule: one limit, at most one discard every 250 ms.
        let mut d = Driver::new(ScreamConfig {
            discard_recovery_max_delay: None,
            large_frame_factor: None,
            ..ScreamConfig::default()
        });
        let q = |ms| MediaQueue {
            size: DataSize::bytes(50_000),
            delay: Duration::from_millis(ms),
        };
        d.s.on_media_queue(q(40), d.t);
        assert_eq!(d.s.poll_event(), None);
        // No further report: the controller's own timer fires when the queue turns 100 ms old.
        let t = d.s.poll_timeout().expect("discard deadline armed");
        assert!(t > d.t + Duration::from_millis(60) && t <= d.t + Duration::from_millis(61));
        d.s.handle_timeout(t);
        assert_eq!(d.s.poll_event(), Some(ControllerEvent::DiscardQueue));
        assert_eq!(d.s.poll_event(), None);
        // The queue is assumed empty after a discard; a fresh old queue needs 250 ms.
        d.s.on_media_queue(q(150), t + Duration::from_millis(100));
        assert_eq!(d.s.poll_event(), None);
        d.s.on_media_queue(q(150), t + Duration::from_millis(250));
        assert_eq!(d.s.poll_event(), Some(ControllerEvent::DiscardQueue));
    }

    /// Issue #14's discard loop: the key frame a discard asks for (~200 ms of the target at
    /// the pacing rate) must leave, not be discarded while it is being sent.
    #[test]
    fn the_key_frame_after_a_discard_is_not_discarded_while_it_leaves() {
        let mut d = Driver::new(ScreamConfig::default());
        let target = d.s.target_bitrate();
        let q = |bytes: u64, ms: u64| MediaQueue {
            size: DataSize::bytes(bytes),
            delay: Duration::from_millis(ms),
        };
        let t0 = d.t;
        // A backlog of small frames grows older than 100 ms: discarded.
        d.s.on_media_queue(q(1_500, 0), t0);
        d.s.on_media_queue(q(3_000, 101), t0 + Duration::from_millis(101));
        assert_eq!(d.s.poll_event(), Some(ControllerEvent::DiscardQueue));
        // The key frame: 200 ms of the target, enqueued 33 ms later and paced out over
        // 300 ms while the next frames queue behind it, reported after every 1200-byte packet.
        let key = (target.as_bps_f64() / 8.0 * 0.2) as u64;
        let start = t0 + Duration::from_millis(134);
        // (enqueued, bytes) of each queued frame, oldest first.
        let mut frames = std::collections::VecDeque::from([(start, key)]);
        d.s.on_media_queue(q(key, 0), start);
        let mut now = start;
        let step = Duration::from_millis(300) / (key / 1200) as u32;
        let mut next_frame = start + Duration::from_millis(33);
        while !frames.is_empty() {
            now += step;
            let mut sent = 1200;
            while sent > 0
                && let Some(f) = frames.front_mut()
            {
                let n = f.1.min(sent);
                f.1 -= n;
                sent -= n;
                if f.1 == 0 {
                    frames.pop_front();
                }
            }
            // Reported after the send, and again after a frame was enqueued.
            let report = |d: &mut Driver, frames: &std::collections::VecDeque<(Instant, u64)>| {
                let left: u64 = frames.iter().map(|f| f.1).sum();
                let age = frames.front().map_or(0, |f| (now - f.0).as_millis() as u64);
                d.s.on_media_queue(q(left, age), now);
            };
            report(&mut d, &frames);
            if now >= next_frame && now < start + Duration::from_millis(300) {
                frames.push_back((now, 1_000));
                next_frame += Duration::from_millis(33);
                report(&mut d, &frames);
            }
            if let Some(t) = d.s.poll_timeout()
                && t <= now
            {
                d.s.handle_timeout(now);
            }
            assert_eq!(
                d.s.poll_event(),
                None,
                "discarded {:?} after the key frame entered",
                now - start
            );
        }
        // Drained: the next backlog over 100 ms is discarded again.
        let t1 = now + Duration::from_millis(10);
        d.s.on_media_queue(q(1_500, 0), t1);
        d.s.on_media_queue(q(3_000, 101), t1 + Duration::from_millis(101));
        assert_eq!(d.s.poll_event(), Some(ControllerEvent::DiscardQueue));
    }

    #[test]
    fn stats_expose_the_internals() {
        let d = Driver::new(ScreamConfig::default());
        let st = d.s.stats();
        assert!(st.cwnd.is_some() && st.bytes_in_flight.is_some() && st.queue_delay.is_some());
        for k in [
            "alpha",
            "qdelay_avg_ms",
            "cwnd_i",
            "rate_adjust",
            "window_headroom",
        ] {
            assert!(st.extra.iter().any(|(n, _)| *n == k), "{k} missing");
        }
        assert_eq!(d.s.feedback_kind(), FeedbackKind::Rfc8888);
        assert_eq!(st.target, ScreamConfig::default().start_bitrate);
        assert!(st.pacing >= Bitrate::kbps(50));
    }
}
