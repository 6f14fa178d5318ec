//! GCC's sender: the loss-based controller, `A = min(Ar, As)`, the pacing factor, and in
//! send-side mode the delay-based controller fed from transport-wide feedback.
//!
//! - REMB mode ([`GccMode::ReceiverSideRemb`]): `Ar` arrives in REMB messages; each one caps
//!   `As` (2013 eq. (2)); RR loss reports drive eq. (5).
//! - Send-side mode ([`GccMode::SendSideTwcc`]): per-packet arrival times from feedback feed
//!   the same [`DelayBasedController`] the receiver would run, grouped in 5 ms send bursts;
//!   the loss fraction is counted from the same feedback and drives eq. (5) every
//!   `loss_interval` (RR loss figures are then ignored, the per-packet ones being exact).
//!   REMB values are ignored in this mode.
//!
//! The target `A = min(Ar, As)` goes to the encoder; the pacer gets `f·A` with `f = 1.5`
//! (MMSys16 §3.5). Every rate stays within `[min_bitrate, max_bitrate]`.

use std::time::{Duration, Instant};

use cg_types::{Bitrate, DataSize};

use crate::controller::{Controller, ControllerStats, Feedback, FeedbackKind, SentPacket};
use crate::gcc::arrival::GroupKey;
use crate::gcc::config::{GccConfig, GccMode, Grouping};
use crate::gcc::delay_based::{DelayBasedController, DelayBasedStats};
use crate::gcc::history::{Fate, SentHistory};
use crate::gcc::loss::{LossController, LossParams};
use crate::gcc::time::micros_since;

/// Send-burst span used in send-side mode when the config asks for frame grouping.
const SEND_SIDE_BURST: Duration = Duration::from_millis(5);

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
}

/// The GCC sender-side controller.
#[derive(Debug, Clone)]
pub struct GccController {
    mode: GccMode,
    min: Bitrate,
    max: Bitrate,
    pacing_factor: f64,
    loss_interval: Duration,
    burst: Duration,
    base: Instant,
    history: SentHistory,
    delay: Option<DelayBasedController>,
    loss: LossController,
    a_r: Option<Bitrate>,
    n_dd: u64,
    rtt: Option<Duration>,
    mean_packet: f64,
    fb_received: u64,
    fb_lost: u64,
    last_loss_update: Instant,
    ignored: u64,
}

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
            loss_interval: c.loss_interval,
            burst: match c.grouping {
                Grouping::Frame => SEND_SIDE_BURST,
                Grouping::SendBurst { span } => span,
            },
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
                },
                c.start_bitrate,
            ),
            n_dd: 0,
            rtt: None,
            mean_packet: 1200.0,
            fb_received: 0,
            fb_lost: 0,
            last_loss_update: now,
            ignored: 0,
        }
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
            delay: self.delay.as_ref().map(DelayBasedController::stats),
            ignored_results: self.ignored,
        }
    }

    fn apply_ar(&mut self, ar: Bitrate) {
        let ar = ar.min(self.max).max(self.min);
        self.a_r = Some(ar);
        if self.loss.cap(ar) {
            self.n_dd += 1;
        }
    }

    fn on_loss_fraction(&mut self, fl: f64) {
        let size = DataSize::from_bytes_f64(self.mean_packet);
        self.loss.on_report(fl, self.rtt, size);
        if let Some(ar) = self.a_r {
            // 2013 eq. (2); not a delay-based event.
            self.loss.cap(ar);
        }
    }

    fn on_packet_results(&mut self, feedback: &Feedback<'_>, now: Instant) {
        let Some(delay) = self.delay.as_mut() else {
            return;
        };
        let mut updated = false;
        let mut newest_send: Option<i64> = None;
        for r in feedback.packets {
            let Some(rec) = self.history.get_mut(r.seq) else {
                self.ignored += 1;
                continue;
            };
            match (r.arrival, rec.fate) {
                (Some(_), Fate::Received) => self.ignored += 1,
                (Some(arrival), fate) => {
                    if fate == Fate::Lost {
                        self.fb_lost = self.fb_lost.saturating_sub(1);
                    }
                    rec.fate = Fate::Received;
                    self.fb_received += 1;
                    newest_send = Some(newest_send.map_or(rec.send_us, |n| n.max(rec.send_us)));
                    let key = GroupKey::Burst { span: self.burst };
                    updated |= delay.on_packet(rec.send_us, arrival.as_micros(), rec.size, key);
                }
                (None, Fate::Unreported) => {
                    rec.fate = Fate::Lost;
                    self.fb_lost += 1;
                }
                (None, _) => {}
            }
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
            self.apply_ar(ar);
        }
        let total = self.fb_received + self.fb_lost;
        if total > 0 && now.saturating_duration_since(self.last_loss_update) >= self.loss_interval
        {
            let fl = self.fb_lost as f64 / total as f64;
            self.fb_received = 0;
            self.fb_lost = 0;
            self.last_loss_update = now;
            self.on_loss_fraction(fl);
        }
    }
}

impl Controller for GccController {
    fn on_packet_sent(&mut self, p: &SentPacket) {
        let send_us = micros_since(p.send_time, self.base);
        self.history.insert(p.seq, send_us, p.size);
        self.mean_packet = 0.95 * self.mean_packet + 0.05 * p.size.as_bytes_f64();
    }

    fn on_feedback(&mut self, feedback: &Feedback<'_>, now: Instant) {
        if let Some(rtt) = feedback.rtt {
            self.rtt = Some(rtt);
        }
        match self.mode {
            GccMode::ReceiverSideRemb => {
                if let Some(remb) = feedback.remb {
                    self.apply_ar(remb);
                }
                if let Some(loss) = feedback.loss {
                    self.on_loss_fraction(loss.fraction_lost);
                }
            }
            GccMode::SendSideTwcc => {
                if !feedback.packets.is_empty() {
                    self.on_packet_results(feedback, now);
                }
            }
        }
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
        self.target_bitrate().mul_f64(self.pacing_factor)
    }

    fn feedback_kind(&self) -> FeedbackKind {
        match self.mode {
            GccMode::ReceiverSideRemb => FeedbackKind::Remb,
            GccMode::SendSideTwcc => FeedbackKind::TransportWideCc,
        }
    }

    fn stats(&self) -> ControllerStats {
        let s = self.gcc_stats();
        let mut extra = vec![
            ("a_r", s.a_r.map_or(f64::NAN, |r| r.as_bps_f64())),
            ("a_s", s.a_s.as_bps_f64()),
            ("n_dd", s.n_dd as f64),
        ];
        if let Some(d) = s.delay {
            extra.extend([
                ("m", d.m),
                ("gamma", d.gamma),
                ("dm", d.dm),
                ("signal", d.signal.as_f64()),
                ("state", d.state.as_f64()),
                ("r", d.receive_rate.map_or(f64::NAN, |r| r.as_bps_f64())),
            ]);
        }
        ControllerStats {
            target: s.target,
            pacing: s.pacing,
            rtt: s.rtt,
            extra,
            ..ControllerStats::default()
        }
    }
}
