//! The TCP sender: a greedy, window-limited bulk flow with Reno, CUBIC or BBR v1 (see
//! [`crate::sim::tcp`] for what is modelled).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use cg_link::sim::{Delivered, Endpoint, Transmit};
use cg_types::DataSize;

use super::bbr::{Bbr, BbrMode, CaState, RateSample, SenderView};
use super::cubic::{self, Cubic};
use super::rtt::RttEstimator;
use super::{MAX_WINDOW_LIMIT, TcpCc, TcpConfig};
use crate::sim::packet::{SimPacket, TcpAck, TcpSegment};

/// Segments acknowledged after an unacknowledged one that make it lost (RFC 5681 §3.2
/// DupThresh, RFC 6675 §5 `IsLost`).
const DUP_THRESH: usize = 3;

/// What made the window shrink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CongestionCause {
    /// A segment was lost (DupThresh rule).
    Loss,
    /// An ACK echoed CE (RFC 3168 §6.1.2).
    Ce,
    /// The retransmission timer expired (RFC 6298 §5.5).
    Timeout,
}

/// One window reduction, for plots and assertions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CwndReduction {
    /// When.
    pub time: Instant,
    /// Why.
    pub cause: CongestionCause,
    /// The window before, in segments.
    pub cwnd_before: f64,
    /// The window after, in segments.
    pub cwnd_after: f64,
    /// CUBIC: `W_max` after the event, in segments (fast convergence may have lowered it
    /// below `cwnd_before`; zero after a timeout). `None` for Reno.
    pub w_max: Option<f64>,
}

/// A periodic sample of the sender's state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TcpSample {
    /// When.
    pub time: Instant,
    /// The congestion window (segments × mss; fractions of a segment included).
    pub cwnd: DataSize,
    /// Segments in flight (sent, neither acknowledged nor counted lost) × mss.
    pub in_flight: DataSize,
    /// The smoothed RTT, once measured.
    pub srtt: Option<Duration>,
}

/// What the delivery-rate estimator (`net/ipv4/tcp_rate.c`) remembers of a segment it sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SendState {
    sent: Instant,
    /// The sender's `delivered`, `delivered_time` and `first_sent_time` then.
    delivered: u64,
    delivered_time: Instant,
    first_sent_time: Instant,
    app_limited: bool,
}

/// What became of a segment still tracked (from the oldest in flight to the newest sent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    InFlight,
    Acked,
    Lost,
}

/// A simulated TCP bulk sender (see [`crate::sim::tcp`]).
#[derive(Debug, Clone)]
pub struct TcpSender {
    cfg: TcpConfig,
    start_at: Option<Instant>,
    stop_at: Option<Instant>,
    started: bool,
    next_seq: u64,
    /// Sequence number of `slots[0]`; `una + slots.len() == next_seq`. The front slot is
    /// always in flight, so at most `DUP_THRESH − 1` acknowledged slots follow it and the
    /// length is bounded by the window.
    una: u64,
    /// Each tracked segment's fate, and what the delivery-rate estimator remembers of it
    /// (BBR's flows only).
    slots: VecDeque<(Slot, Option<SendState>)>,
    in_flight: u32,
    /// The `DUP_THRESH` highest segments acknowledged, highest first.
    highest_acked: [Option<u64>; DUP_THRESH],
    /// Congestion window and slow-start threshold, in segments.
    cwnd: f64,
    ssthresh: f64,
    /// `next_seq` at the last reduction (NewReno's `recover`, RFC 6582 §3.2): congestion
    /// signals about older segments do not reduce again.
    recover: u64,
    /// Reduced and not yet acknowledged past `recover`: the window does not grow.
    in_recovery: bool,
    cubic: Cubic,
    rtt: RttEstimator,
    rto_at: Option<Instant>,
    /// Segments counted lost by the current timeout episode, `[lo, hi)`: their late ACKs
    /// still clock the window.
    timed_out: (u64, u64),
    segments_sent: u64,
    segments_acked: u64,
    segments_lost: u64,
    late_acks: u64,
    loss_events: u64,
    ce_events: u64,
    ce_echoes: u64,
    timeouts: u64,
    samples: Vec<TcpSample>,
    next_sample: Instant,
    reductions: Vec<CwndReduction>,
    /// When the sender was created (the origin of [`TcpConfig::rate_limit`]).
    created: Instant,
    /// The application's token bucket (bytes), when it was last filled, and the rate limit
    /// in force then (bytes per second; `None`: unlimited).
    app_credit: f64,
    app_filled: Instant,
    app_limit: Option<f64>,
    /// Delivery-rate estimation (`tcp_rate.c`, kept for BBR only): segments delivered
    /// (acknowledged for the first time), when the last was, the send time of the newest
    /// segment delivered, and `delivered + in_flight` when the application last held the flow
    /// (0: not held).
    delivered: u64,
    delivered_time: Instant,
    first_sent_time: Instant,
    app_limited_until: u64,
    /// BBR's model, for [`TcpCc::Bbr`] (boxed: it is larger than the rest of the sender).
    bbr: Option<Box<Bbr>>,
    /// BBR paces: the earliest departure time of the next segment.
    next_departure: Instant,
    /// After a timeout, until a segment sent after it is acknowledged (the kernel's Loss
    /// state; only BBR looks at it).
    in_loss: bool,
}

impl TcpSender {
    /// A sender created at `now`, sending from `now + cfg.start`. Values
    /// [`TcpConfig::validate`] refuses are clamped to the nearest harmless one (a 1-byte
    /// segment, a window of at least one segment, a 1 ms sample interval).
    pub fn new(mut cfg: TcpConfig, now: Instant) -> Self {
        cfg.mss = cfg.mss.max(DataSize::bytes(1));
        cfg.max_window = cfg.max_window.clamp(1, MAX_WINDOW_LIMIT);
        cfg.initial_window = cfg.initial_window.clamp(1, cfg.max_window);
        cfg.sample_interval = cfg.sample_interval.max(Duration::from_millis(1));
        let start_at = now.checked_add(cfg.start);
        TcpSender {
            start_at,
            stop_at: cfg.stop.and_then(|s| now.checked_add(s)),
            started: false,
            next_seq: 0,
            una: 0,
            slots: VecDeque::new(),
            in_flight: 0,
            highest_acked: [None; DUP_THRESH],
            cwnd: f64::from(cfg.initial_window),
            ssthresh: f64::INFINITY,
            recover: 0,
            in_recovery: false,
            cubic: Cubic::new(),
            rtt: RttEstimator::new(),
            rto_at: None,
            timed_out: (0, 0),
            segments_sent: 0,
            segments_acked: 0,
            segments_lost: 0,
            late_acks: 0,
            loss_events: 0,
            ce_events: 0,
            ce_echoes: 0,
            timeouts: 0,
            samples: Vec::new(),
            next_sample: start_at.unwrap_or(now),
            reductions: Vec::new(),
            created: now,
            app_credit: cfg.mss.as_bytes_f64(),
            app_filled: now,
            app_limit: None,
            delivered: 0,
            delivered_time: now,
            first_sent_time: now,
            app_limited_until: 0,
            bbr: (cfg.cc == TcpCc::Bbr).then(|| {
                Box::new(Bbr::new(
                    now,
                    f64::from(cfg.initial_window),
                    cfg.mss.as_bytes_f64(),
                    cfg.seed,
                ))
            }),
            next_departure: now,
            in_loss: false,
            cfg,
        }
    }

    /// The application's rate limit at `now`, bytes per second (`None`: unlimited).
    fn app_rate(&self, now: Instant) -> Option<f64> {
        let since = now.saturating_duration_since(self.created);
        self.cfg
            .rate_limit
            .iter()
            .take_while(|(at, _)| *at <= since)
            .last()
            .map(|(_, r)| r.as_bps_f64() / 8.0)
    }

    /// Fills the application's token bucket up to `now` (nothing to do without a limit).
    fn fill_app(&mut self, now: Instant) {
        if self.cfg.rate_limit.is_empty() {
            return;
        }
        let dt = now.saturating_duration_since(self.app_filled).as_secs_f64();
        self.app_filled = now;
        self.app_limit = self.app_rate(now);
        if let Some(rate) = self.app_limit {
            let depth = self.cfg.mss.as_bytes_f64().max(rate * 0.010);
            self.app_credit = (self.app_credit + rate * dt).min(depth);
        }
    }

    /// Whether the application has a segment to send (after [`Self::fill_app`]).
    fn app_ready(&self) -> bool {
        self.app_limit.is_none() || self.app_credit >= self.cfg.mss.as_bytes_f64()
    }

    /// When the application's bucket next holds a segment, if it is what holds the flow.
    fn app_wakeup(&self) -> Option<Instant> {
        let rate = self.app_limit.filter(|r| *r > 0.0)?;
        let missing = self.cfg.mss.as_bytes_f64() - self.app_credit;
        (missing > 0.0).then(|| self.app_filled + Duration::from_secs_f64(missing / rate))
    }

    fn on_ack(&mut self, ack: TcpAck, now: Instant) {
        if ack.seq >= self.next_seq {
            return; // Never sent.
        }
        let rtt = now.checked_duration_since(ack.sent);
        if let Some(r) = rtt {
            // Every segment is sent once, so every echo is an unambiguous sample (RFC 6298
            // §3's Karn problem does not arise).
            self.rtt.sample(r);
        }
        let prior_in_flight = u64::from(self.in_flight);
        let lost_before = self.segments_lost;
        let tracked = ack
            .seq
            .checked_sub(self.una)
            .and_then(|i| usize::try_from(i).ok())
            .and_then(|i| self.slots.get_mut(i));
        let state = tracked.as_ref().and_then(|t| t.1);
        let fresh = match tracked.map(|t| &mut t.0) {
            Some(s @ Slot::InFlight) => {
                *s = Slot::Acked;
                self.in_flight -= 1;
                true
            }
            Some(s @ Slot::Lost) => {
                *s = Slot::Acked;
                self.late_acks += 1;
                true
            }
            Some(Slot::Acked) => false,
            None => {
                let (lo, hi) = self.timed_out;
                let late = (lo..hi).contains(&ack.seq);
                self.late_acks += u64::from(late);
                late
            }
        };
        if !fresh {
            return;
        }
        self.segments_acked += 1;
        let sample = self
            .bbr
            .is_some()
            .then(|| self.deliver(state, now))
            .flatten();
        self.note_acked(ack.seq);
        self.detect_losses(now);
        if self.bbr.is_some() {
            let losses = self.segments_lost - lost_before;
            self.bbr_ack(ack.seq, sample, prior_in_flight, losses, rtt, now);
            return;
        }
        let ce = ack.ce && self.cfg.ecn.is_ect();
        if ce {
            self.ce_echoes += 1;
            if ack.seq >= self.recover {
                self.reduce(CongestionCause::Ce, now);
            }
        }
        if self.in_recovery && ack.seq >= self.recover {
            self.in_recovery = false;
        }
        // RFC 3168 §6.1.2: an ACK with ECE does not open the window.
        if !self.in_recovery && !ce {
            self.grow(now);
        }
        // RFC 6298 §5.2–5.3: restart the timer for what is still in flight.
        self.rto_at = (self.in_flight > 0).then(|| now + self.rtt.rto());
    }

    /// One more segment delivered (`tcp_rate_skb_delivered` / `tcp_rate_gen`): the rate
    /// sample `(segments, interval)` it closes, when its send state is known and the interval
    /// is not shorter than the minimum RTT (such samples are ACK compression, not rate).
    fn deliver(
        &mut self,
        state: Option<SendState>,
        now: Instant,
    ) -> Option<(u64, u64, Duration, bool)> {
        self.delivered += 1;
        self.delivered_time = now;
        if self.app_limited_until != 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        let p = state?;
        self.first_sent_time = p.sent;
        let send_elapsed = p.sent.saturating_duration_since(p.first_sent_time);
        let ack_elapsed = now.saturating_duration_since(p.delivered_time);
        let interval = send_elapsed.max(ack_elapsed);
        let min_rtt = self
            .bbr
            .as_ref()
            .and_then(|b| b.min_rtt())
            .unwrap_or(Duration::ZERO);
        (interval >= min_rtt && !interval.is_zero()).then(|| {
            (
                self.delivered - p.delivered,
                p.delivered,
                interval,
                p.app_limited,
            )
        })
    }

    /// BBR's part of an ACK: the recovery and Loss states end as NewReno's do, and the model
    /// sets the window and the pacing rate.
    fn bbr_ack(
        &mut self,
        seq: u64,
        sample: Option<(u64, u64, Duration, bool)>,
        prior_in_flight: u64,
        losses: u64,
        rtt: Option<Duration>,
        now: Instant,
    ) {
        if seq >= self.recover {
            self.in_recovery = false;
            self.in_loss = false;
        }
        let rs = RateSample {
            delivered: sample.map(|s| (s.0, s.2)),
            prior_delivered: sample.map_or(0, |s| s.1),
            app_limited: sample.is_some_and(|s| s.3),
            acked: 1,
            losses,
            prior_in_flight,
            rtt,
        };
        let view = self.bbr_view(now);
        let srtt = self.rtt.srtt();
        if let Some(bbr) = self.bbr.as_mut() {
            self.cwnd = bbr
                .on_ack(&rs, &view, self.cwnd, srtt)
                .min(self.max_window());
        }
        self.rto_at = (self.in_flight > 0).then(|| now + self.rtt.rto());
    }

    fn bbr_view(&self, now: Instant) -> SenderView {
        SenderView {
            now,
            delivered: self.delivered,
            lost: self.segments_lost,
            delivered_time: self.delivered_time,
            in_flight: u64::from(self.in_flight),
            next_departure: self.next_departure,
            state: if self.in_loss {
                CaState::Loss
            } else if self.in_recovery {
                CaState::Recovery
            } else {
                CaState::Open
            },
            mss_bytes: self.cfg.mss.as_bytes_f64(),
        }
    }

    fn note_acked(&mut self, seq: u64) {
        if self.highest_acked.contains(&Some(seq)) {
            return;
        }
        let mut carry = seq;
        for h in &mut self.highest_acked {
            match *h {
                None => {
                    *h = Some(carry);
                    return;
                }
                Some(x) if carry > x => {
                    *h = Some(carry);
                    carry = x;
                }
                Some(_) => {}
            }
        }
    }

    /// Marks lost every segment in flight with `DUP_THRESH` acknowledged segments above it,
    /// and reduces the window once if one of them was sent after the last reduction.
    fn detect_losses(&mut self, now: Instant) {
        if let Some(threshold) = self.highest_acked[DUP_THRESH - 1] {
            let below = threshold.saturating_sub(self.una);
            let n = usize::try_from(below).map_or(self.slots.len(), |b| b.min(self.slots.len()));
            let mut new_event = false;
            for (i, (s, _)) in self.slots.iter_mut().take(n).enumerate() {
                if *s == Slot::InFlight {
                    *s = Slot::Lost;
                    self.in_flight -= 1;
                    self.segments_lost += 1;
                    new_event |= self.una + i as u64 >= self.recover;
                }
            }
            if new_event {
                self.reduce(CongestionCause::Loss, now);
            }
        }
        while self.slots.front().is_some_and(|s| s.0 != Slot::InFlight) {
            self.slots.pop_front();
            self.una += 1;
        }
    }

    /// One window reduction (RFC 5681 §3.2 step 2 for Reno, RFC 9438 §4.6–4.7 for CUBIC).
    /// BBR keeps its window here and only remembers it (`bbr_ssthresh`); its model sets the
    /// window on this ACK.
    fn reduce(&mut self, cause: CongestionCause, now: Instant) {
        let before = self.cwnd;
        let after = match self.cfg.cc {
            TcpCc::Reno => (before / 2.0).max(2.0),
            TcpCc::Cubic => self.cubic.on_congestion(before),
            TcpCc::Bbr => {
                if let Some(b) = self.bbr.as_mut() {
                    b.save_cwnd(before);
                }
                before
            }
        };
        self.cwnd = after.min(self.max_window());
        self.ssthresh = self.cwnd;
        self.recover = self.next_seq;
        self.in_recovery = true;
        match cause {
            CongestionCause::Ce => self.ce_events += 1,
            _ => self.loss_events += 1,
        }
        self.log_reduction(now, cause, before);
    }

    /// One acknowledged segment's growth: slow start (RFC 5681 §3.1, `+1`), else Reno's
    /// `+1/cwnd` (eq. 3) or CUBIC's (RFC 9438 §4.2–4.5).
    fn grow(&mut self, now: Instant) {
        if self.cwnd < self.ssthresh {
            self.cwnd += 1.0;
        } else {
            self.cwnd = match self.cfg.cc {
                TcpCc::Reno => self.cwnd + 1.0 / self.cwnd,
                TcpCc::Cubic => {
                    let rtt = self.rtt.srtt().unwrap_or(Duration::ZERO);
                    self.cubic.on_ack(self.cwnd, rtt, now)
                }
                // BBR's model sets its window (`bbr_ack`); it never gets here.
                TcpCc::Bbr => self.cwnd,
            };
        }
        self.cwnd = self.cwnd.min(self.max_window());
    }

    /// RFC 6298 §5.4–5.6 with RFC 5681 §3.1's window: everything in flight is counted lost
    /// (not retransmitted), `cwnd = 1`, `ssthresh` from the flight on the first timeout of an
    /// episode and held on backed-off ones.
    fn on_timeout(&mut self, now: Instant) {
        self.rto_at = None;
        if self.in_flight == 0 {
            return; // Nothing outstanding: a stale timer.
        }
        self.timeouts += 1;
        let flight = f64::from(self.in_flight);
        if self.rtt.backoff() == 0 {
            self.ssthresh = match self.cfg.cc {
                TcpCc::Reno => (flight / 2.0).max(2.0),
                TcpCc::Cubic => {
                    self.cubic.on_timeout();
                    (flight * cubic::BETA).max(2.0)
                }
                TcpCc::Bbr => {
                    if let Some(b) = self.bbr.as_mut() {
                        b.save_cwnd(self.cwnd);
                    }
                    self.ssthresh
                }
            };
            self.timed_out = (self.una, self.next_seq);
        } else {
            self.timed_out.1 = self.next_seq;
        }
        self.segments_lost += u64::from(self.in_flight);
        self.in_flight = 0;
        self.slots.clear();
        self.una = self.next_seq;
        self.rtt.back_off();
        let before = self.cwnd;
        self.cwnd = 1.0;
        self.recover = self.next_seq;
        self.in_recovery = false;
        if self.bbr.is_some() {
            self.in_loss = true;
            let view = self.bbr_view(now);
            if let Some(b) = self.bbr.as_mut() {
                b.on_timeout(&view);
            }
        }
        self.log_reduction(now, CongestionCause::Timeout, before);
    }

    fn log_reduction(&mut self, now: Instant, cause: CongestionCause, before: f64) {
        self.reductions.push(CwndReduction {
            time: now,
            cause,
            cwnd_before: before,
            cwnd_after: self.cwnd,
            w_max: (self.cfg.cc == TcpCc::Cubic).then(|| self.cubic.w_max()),
        });
    }

    fn max_window(&self) -> f64 {
        f64::from(self.cfg.max_window)
    }

    fn may_send(&self, now: Instant) -> bool {
        self.start_at.is_some_and(|s| now >= s)
            && self.stop_at.is_none_or(|s| now < s)
            && self.in_flight < self.cwnd.floor() as u32
            && self.slots.len() < self.cfg.max_window as usize + DUP_THRESH
            && self.app_ready()
            && (self.bbr.is_none() || now >= self.next_departure)
    }

    fn sample(&mut self, now: Instant) {
        if now < self.next_sample {
            return;
        }
        self.samples.push(TcpSample {
            time: now,
            cwnd: self.cfg.mss.mul_f64(self.cwnd),
            in_flight: DataSize::bytes(self.cfg.mss.as_bytes() * u64::from(self.in_flight)),
            srtt: self.rtt.srtt(),
        });
        self.next_sample = now + self.cfg.sample_interval;
    }

    /// The config in force (after the clamping [`TcpSender::new`] does).
    pub fn config(&self) -> &TcpConfig {
        &self.cfg
    }

    /// BBR's mode, for [`TcpCc::Bbr`].
    pub fn bbr_mode(&self) -> Option<BbrMode> {
        self.bbr.as_ref().map(|b| b.mode())
    }

    /// BBR's bottleneck-bandwidth estimate in bytes on the wire per second, for
    /// [`TcpCc::Bbr`].
    pub fn bbr_bandwidth(&self) -> Option<f64> {
        self.bbr
            .as_ref()
            .map(|b| b.bw() * self.cfg.mss.as_bytes_f64())
    }

    /// The pacing rate in bytes per second (BBR only; the others do not pace).
    pub fn pacing_rate(&self) -> Option<f64> {
        self.bbr.as_ref().map(|b| b.pacing_rate())
    }

    /// The congestion window in segments.
    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }

    /// The congestion window in bytes on the wire.
    pub fn cwnd_bytes(&self) -> DataSize {
        self.cfg.mss.mul_f64(self.cwnd)
    }

    /// The slow-start threshold in segments; `None` while still infinite.
    pub fn ssthresh(&self) -> Option<f64> {
        self.ssthresh.is_finite().then_some(self.ssthresh)
    }

    /// Segments in flight (sent, neither acknowledged nor counted lost).
    pub fn in_flight(&self) -> u32 {
        self.in_flight
    }

    /// The smoothed RTT (RFC 6298), once measured.
    pub fn srtt(&self) -> Option<Duration> {
        self.rtt.srtt()
    }

    /// The retransmission timeout in force (backoff included).
    pub fn rto(&self) -> Duration {
        self.rtt.rto()
    }

    /// Segments sent.
    pub fn segments_sent(&self) -> u64 {
        self.segments_sent
    }

    /// Segments acknowledged (late ones included, duplicates not).
    pub fn segments_acked(&self) -> u64 {
        self.segments_acked
    }

    /// Segments counted lost (DupThresh or timeout).
    pub fn segments_lost(&self) -> u64 {
        self.segments_lost
    }

    /// ACKs of segments already counted lost (delayed past a timeout, or reordered).
    pub fn late_acks(&self) -> u64 {
        self.late_acks
    }

    /// Window reductions on loss (one per window, timeouts not included).
    pub fn loss_events(&self) -> u64 {
        self.loss_events
    }

    /// Window reductions on a CE echo.
    pub fn ce_events(&self) -> u64 {
        self.ce_events
    }

    /// ACKs that echoed CE (with ECN on).
    pub fn ce_echoes(&self) -> u64 {
        self.ce_echoes
    }

    /// Retransmission timeouts.
    pub fn timeouts(&self) -> u64 {
        self.timeouts
    }

    /// Samples taken every `sample_interval` from the start.
    pub fn samples(&self) -> &[TcpSample] {
        &self.samples
    }

    /// Every window reduction, in order.
    pub fn reductions(&self) -> &[CwndReduction] {
        &self.reductions
    }
}

impl Endpoint for TcpSender {
    type Payload = SimPacket;

    fn handle_packet(&mut self, packet: Delivered<SimPacket>, now: Instant) {
        let SimPacket::TcpAck(ack) = packet.payload else {
            return;
        };
        self.on_ack(ack, now);
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit<SimPacket>> {
        self.sample(now);
        self.started |= self.start_at.is_some_and(|s| now >= s);
        self.fill_app(now);
        if !self.may_send(now) {
            // `tcp_rate_check_app_limited`: the application, not the window, holds the flow.
            if self.bbr.is_some()
                && self.started
                && !self.app_ready()
                && self.in_flight < self.cwnd.floor() as u32
            {
                self.app_limited_until = (self.delivered + u64::from(self.in_flight)).max(1);
            }
            return None;
        }
        if self.app_limit.is_some() {
            self.app_credit -= self.cfg.mss.as_bytes_f64();
        }
        // BBR paces, and samples the delivery rate (`tcp_rate_skb_sent`).
        let state = self.bbr.as_ref().map(|b| {
            let rate = b.pacing_rate().max(1.0);
            let gap = Duration::from_secs_f64(self.cfg.mss.as_bytes_f64() / rate);
            self.next_departure = self.next_departure.max(now) + gap;
            if self.in_flight == 0 {
                // A new flight starts its intervals now.
                self.first_sent_time = now;
                self.delivered_time = now;
            }
            SendState {
                sent: now,
                delivered: self.delivered,
                delivered_time: self.delivered_time,
                first_sent_time: self.first_sent_time,
                app_limited: self.app_limited_until != 0,
            }
        });
        let seq = self.next_seq;
        self.next_seq += 1;
        self.slots.push_back((Slot::InFlight, state));
        self.in_flight += 1;
        self.segments_sent += 1;
        if self.rto_at.is_none() {
            // RFC 6298 §5.1.
            self.rto_at = Some(now + self.rtt.rto());
        }
        Some(Transmit {
            size: self.cfg.mss,
            ecn: self.cfg.ecn,
            payload: SimPacket::TcpSegment(TcpSegment { seq, sent: now }),
        })
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let start = self.start_at.filter(|_| !self.started);
        let window_open = self.started && self.in_flight < self.cwnd.floor() as u32;
        let app = self.app_wakeup().filter(|_| window_open);
        let paced = self
            .bbr
            .as_ref()
            .filter(|_| window_open)
            .map(|_| self.next_departure);
        [Some(self.next_sample), self.rto_at, start, app, paced]
            .into_iter()
            .flatten()
            .min()
    }

    fn handle_timeout(&mut self, now: Instant) {
        if self.rto_at.is_some_and(|t| t <= now) {
            self.on_timeout(now);
        }
        self.sample(now);
    }
}

#[cfg(test)]
mod tests {
    use cg_link::qdisc::{CodelConfig, DropTailConfig};
    use cg_link::sim::Sim;
    use cg_link::{
        CapacityConfig, DropReason, EventKind, FlowId, Link, LinkConfig, QdiscConfig, RateStep,
    };
    use cg_types::{Bitrate, Ecn};

    use super::*;
    use crate::sim::metrics;
    use crate::sim::tcp::{TcpReceiver, tcp_pair};

    type TcpSim = Sim<TcpSender, TcpReceiver>;

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    /// A bottleneck `fwd` with half of `rtt` of propagation each way and a 100 Mbit/s return
    /// path.
    fn sim(fwd: LinkConfig, rtt: Duration, t0: Instant) -> TcpSim {
        let rev = LinkConfig::constant(Bitrate::mbps(100)).with_delay(rtt / 2);
        Sim::new(
            Link::new(fwd.with_delay(rtt / 2)).expect("valid forward link"),
            Link::new(rev).expect("valid reverse link"),
            t0,
        )
    }

    /// A DropTail bottleneck of `rate` holding `buffer` at that rate.
    fn droptail(rate: Bitrate, buffer: Duration) -> LinkConfig {
        LinkConfig::constant(rate).with_qdisc(QdiscConfig::DropTail(DropTailConfig::time(buffer)))
    }

    /// One flow of `cfg` alone on `fwd` for `run`.
    fn single(cfg: TcpConfig, fwd: LinkConfig, rtt: Duration, run: Duration) -> (TcpSim, Instant) {
        let t0 = Instant::now();
        let mut s = sim(fwd, rtt, t0);
        let (tx, rx) = tcp_pair(cfg, t0);
        s.add_pair(tx, rx);
        s.run_until(t0 + run);
        (s, t0)
    }

    /// `(peak, after)` window pairs (segments) where the sampled window fell by more than
    /// 10 % from one sample to the next within `[from, to)`.
    fn sampled_drops(tx: &TcpSender, from: Instant, to: Instant) -> Vec<(f64, f64)> {
        let mss = tx.config().mss.as_bytes_f64();
        tx.samples()
            .windows(2)
            .filter(|w| w[0].time >= from && w[1].time < to)
            .map(|w| {
                (
                    w[0].cwnd.as_bytes_f64() / mss,
                    w[1].cwnd.as_bytes_f64() / mss,
                )
            })
            .filter(|(a, b)| *b < 0.9 * a)
            .collect()
    }

    fn ms(d: Option<Duration>) -> f64 {
        d.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3)
    }

    /// 10 Mbit/s, 40 ms, a DropTail of one BDP (50 kB, 33 segments): the window saws
    /// between about 2·BDP (queue full) and its reduction, with 10 ms samples.
    fn one_bdp_run(cc: TcpCc) -> (TcpSim, Instant) {
        let cfg = TcpConfig {
            cc,
            sample_interval: Duration::from_millis(10),
            ..TcpConfig::default()
        };
        let rtt = Duration::from_millis(40);
        single(cfg, droptail(Bitrate::mbps(10), rtt), rtt, secs(60.0))
    }

    fn check_one_bdp(cc: TcpCc, ratio: f64) {
        let (s, t0) = one_bdp_run(cc);
        let (from, to) = (t0 + secs(20.0), t0 + secs(60.0));
        let ev = s.forward().events();
        let u = metrics::utilisation(ev.iter(), Bitrate::mbps(10), from, to);
        let (offered, dropped) = metrics::loss_counts(ev.iter(), None, from, to);
        let q = metrics::queuing_delays(ev.iter(), None, from, to);
        let tx = s.sender(0);
        let drops = sampled_drops(tx, from, to);
        let events = tx
            .reductions()
            .iter()
            .filter(|r| r.time >= from && r.time < to)
            .count();
        let ratios: Vec<f64> = drops.iter().map(|(a, b)| b / a).collect();
        eprintln!(
            "{cc:?} 10 Mbit/s 40 ms DT 1 BDP, 20–60 s: U {u:.4}, {dropped}/{offered} dropped, \
             {events} reductions ({} seen in samples), peaks {:?}, ratios {:.3?}, queue p1 \
             {:.1} p50 {:.1} p99 {:.1} ms, timeouts {}",
            drops.len(),
            drops.iter().map(|d| d.0.round()).collect::<Vec<_>>(),
            ratios,
            ms(metrics::percentile(&q, 1.0)),
            ms(metrics::percentile(&q, 50.0)),
            ms(metrics::percentile(&q, 99.0)),
            tx.timeouts(),
        );
        // The queue overflows at BDP + buffer = 2 BDP (66.7 segments, 69 with the RTT it takes
        // to notice); halved that is still one BDP, and 0.7 of it more, so the link never
        // idles after a reduction: only the drops themselves cost (two per cycle).
        assert!(u >= 0.97, "utilisation {u:.4}");
        assert!(dropped > 0 && tx.loss_events() > 1);
        assert_eq!(tx.timeouts(), 0);
        assert_eq!(drops.len(), events, "one sampled drop per reduction");
        assert!(events >= 5, "{events} reductions in 40 s");
        for r in &ratios {
            assert!((r - ratio).abs() < 0.05, "reduction to {r:.3} of the peak");
        }
        if cc == TcpCc::Reno {
            // The queue overflows at BDP + buffer = 66.7 segments; the window then halves to
            // about one BDP and climbs back by one segment per RTT, the RTT being w · 1.2 ms
            // once the window exceeds the BDP: one cycle lasts Σ_{w=33}^{67} 1.2 ms · w ≈
            // 2.1 s, so 40 s hold about 19 reductions.
            assert!((16..=21).contains(&events), "{events} reductions in 40 s");
        }
    }

    #[test]
    fn reno_keeps_a_one_bdp_droptail_link_full_and_halves_on_each_loss_event() {
        check_one_bdp(TcpCc::Reno, 0.5);
    }

    #[test]
    fn cubic_keeps_a_one_bdp_droptail_link_full_and_keeps_seven_tenths_on_each_loss_event() {
        check_one_bdp(TcpCc::Cubic, 0.7);
    }

    #[test]
    fn cubic_regains_w_max_after_k_seconds_concave_then_convex() {
        // 20 Mbit/s, 100 ms, DropTail of one BDP (167 segments): losses near 333 segments,
        // K = ∛(333 · 0.3 / 0.4) ≈ 6.3 s without fast convergence.
        let cfg = TcpConfig {
            sample_interval: Duration::from_millis(10),
            ..TcpConfig::cubic()
        };
        let rtt = Duration::from_millis(100);
        let (s, t0) = single(cfg, droptail(Bitrate::mbps(20), rtt), rtt, secs(32.0));
        let tx = s.sender(0);
        let mss = tx.config().mss.as_bytes_f64();
        let cwnd_at = |t: Instant| {
            tx.samples()
                .iter()
                .find(|x| x.time >= t)
                .map(|x| x.cwnd.as_bytes_f64() / mss)
        };
        let losses: Vec<&CwndReduction> = tx
            .reductions()
            .iter()
            .filter(|r| r.cause == CongestionCause::Loss)
            .collect();
        let mut checked = 0;
        for pair in losses.windows(2) {
            let (r, next) = (pair[0], pair[1]);
            let w_max = r.w_max.expect("CUBIC reports W_max");
            let k = crate::cubic::k(w_max, r.cwnd_after);
            let in_epoch = || {
                tx.samples()
                    .iter()
                    .filter(|x| x.time > r.time && x.time < next.time)
            };
            // The epoch starts when recovery ends and the window grows again (one RTT with
            // a full queue, 200 ms, after the reduction). From then the window follows
            // W_cubic, about one RTT behind its target W_cubic(t + RTT): it should regain
            // W_max K seconds into the epoch, give or take two (base) RTTs.
            let Some(epoch) = in_epoch()
                .find(|x| x.cwnd.as_bytes_f64() / mss > r.cwnd_after + 0.01)
                .map(|x| x.time)
            else {
                continue; // The next loss came within recovery (slow start's overshoot).
            };
            let regained = in_epoch()
                .find(|x| x.cwnd.as_bytes_f64() / mss >= w_max)
                .map(|x| (x.time - epoch).as_secs_f64());
            let at = |f: f64| cwnd_at(epoch + secs(k * f)).expect("sampled");
            // Concave: W_cubic climbs 7/8 of the way in the first half of K.
            let share = (at(0.5) - r.cwnd_after) / (w_max - r.cwnd_after);
            let convex = (next.time - epoch).as_secs_f64() > 1.5 * k + 0.2;
            eprintln!(
                "loss at {:.2} s: cwnd {:.1} → {:.1}, W_max {w_max:.1}, K {k:.3} s, recovery \
                 {:.3} s, W_max regained {regained:.3?} s into the epoch, first-half share \
                 {share:.3}, next loss after {:.2} s",
                (r.time - t0).as_secs_f64(),
                r.cwnd_before,
                r.cwnd_after,
                (epoch - r.time).as_secs_f64(),
                (next.time - r.time).as_secs_f64(),
            );
            let Some(regained) = regained else {
                // W_max above what the path holds (BDP + buffer): the queue overflows in the
                // concave part, before the window regains it (then fast convergence lowers the
                // next W_max, and that epoch regains it).
                assert!(next.cwnd_before < w_max, "lost at {:.1}", next.cwnd_before);
                continue;
            };
            assert!(
                (regained - k).abs() <= 0.2,
                "regained after {regained:.3} s, K {k:.3} s"
            );
            assert!((share - 0.875).abs() < 0.04, "first-half share {share:.3}");
            if convex {
                // Convex beyond K: the climb accelerates.
                let (a, b, c) = (at(1.0), at(1.25), at(1.5));
                assert!(c - b > 1.5 * (b - a), "{a:.1} {b:.1} {c:.1}");
            }
            checked += 1;
        }
        assert!(checked >= 2, "{checked} epochs checked");
    }

    #[test]
    fn two_cubic_flows_with_the_same_rtt_share_a_droptail_link_fairly() {
        let t0 = Instant::now();
        let rtt = Duration::from_millis(40);
        let rate = Bitrate::mbps(10);
        let mut s = sim(droptail(rate, rtt), rtt, t0);
        for start in [0.0, 2.0] {
            let cfg = TcpConfig {
                start: secs(start),
                ..TcpConfig::cubic()
            };
            let (tx, rx) = tcp_pair(cfg, t0);
            s.add_pair(tx, rx);
        }
        let (from, to) = (t0 + secs(20.0), t0 + secs(60.0));
        s.run_until(to);
        let ev = s.forward().events();
        let rates: Vec<f64> = (0..2)
            .map(|i| metrics::throughput(ev.iter(), Some(FlowId::from_index(i)), from, to))
            .map(|r| r.as_mbps_f64())
            .collect();
        let jain = metrics::jain_index(&rates).expect("both flows delivered");
        let u = metrics::utilisation(ev.iter(), rate, from, to);
        eprintln!(
            "two CUBIC flows, 20–60 s: {rates:.3?} Mbit/s, Jain {jain:.4}, U {u:.4}, loss events \
             {} / {}",
            s.sender(0).loss_events(),
            s.sender(1).loss_events()
        );
        assert!(jain >= 0.9, "Jain {jain:.4}: {rates:?}");
        assert!(u >= 0.95, "utilisation {u:.4}");
    }

    #[test]
    fn with_ecn_through_codel_the_flow_backs_off_on_ce_without_drops() {
        let rtt = Duration::from_millis(40);
        let rate = Bitrate::mbps(10);
        let codel = CodelConfig {
            ecn: true,
            ..CodelConfig::default()
        };
        let fwd = LinkConfig::constant(rate).with_qdisc(QdiscConfig::Codel(codel));
        let cfg = TcpConfig {
            ecn: Ecn::Ect0,
            ..TcpConfig::cubic()
        };
        let (s, t0) = single(cfg, fwd, rtt, secs(30.0));
        let (from, to) = (t0 + secs(10.0), t0 + secs(30.0));
        let ev = s.forward().events();
        let tx = s.sender(0);
        let marked = ev
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Marked(_)))
            .count();
        let dropped = ev
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Dropped(_)))
            .count();
        let u = metrics::utilisation(ev.iter(), rate, from, to);
        let q = metrics::queuing_delays(ev.iter(), None, from, to);
        eprintln!(
            "CUBIC+ECN through CoDel: {marked} marked, {dropped} dropped, {} CE echoes, {} CE \
             reductions, {} loss events, U {u:.4}, queue p50 {:.1} p99 {:.1} ms",
            tx.ce_echoes(),
            tx.ce_events(),
            tx.loss_events(),
            ms(metrics::percentile(&q, 50.0)),
            ms(metrics::percentile(&q, 99.0)),
        );
        assert_eq!(
            dropped, 0,
            "CoDel marks ECT packets instead of dropping them"
        );
        assert_eq!(
            (tx.segments_lost(), tx.loss_events(), tx.timeouts()),
            (0, 0, 0)
        );
        // Every mark is echoed, but for those still on their way at the end.
        let echoed = tx.ce_echoes() as usize;
        assert!(
            marked > 0 && echoed <= marked && echoed + 3 >= marked,
            "{echoed} of {marked}"
        );
        assert!(tx.ce_events() >= 10, "{} CE reductions", tx.ce_events());
        assert!(
            tx.reductions()
                .iter()
                .all(|r| r.cause == CongestionCause::Ce),
            "every reduction is a CE one"
        );
        // The flow reacts: the median queue stays near CoDel's 5 ms target, far below
        // what the window would build without a signal (1000 packets, 1.2 s).
        let p50 = metrics::percentile(&q, 50.0).expect("packets dequeued");
        assert!(p50 < Duration::from_millis(20), "median queue {p50:?}");
        assert!(u >= 0.9, "utilisation {u:.4}");
    }

    #[test]
    fn an_outage_times_the_flow_out_and_it_recovers_afterwards() {
        let rtt = Duration::from_millis(40);
        let rate = Bitrate::mbps(10);
        let up = |s: u64| RateStep {
            duration: Duration::from_secs(s),
            rate,
        };
        let steps = vec![up(5), RateStep::down(Duration::from_secs(2)), up(1)];
        for cc in [TcpCc::Reno, TcpCc::Cubic] {
            let fwd = LinkConfig {
                capacity: CapacityConfig::Schedule {
                    steps: steps.clone(),
                    repeat: false,
                },
                ..droptail(rate, rtt)
            };
            let cfg = TcpConfig {
                cc,
                ..TcpConfig::default()
            };
            let (s, t0) = single(cfg, fwd, rtt, secs(15.0));
            let tx = s.sender(0);
            let ev = s.forward().events();
            let before = metrics::throughput(ev.iter(), None, t0 + secs(2.0), t0 + secs(5.0));
            let during = metrics::throughput(ev.iter(), None, t0 + secs(5.1), t0 + secs(7.0));
            let after = metrics::throughput(ev.iter(), None, t0 + secs(8.0), t0 + secs(15.0));
            let timeout = tx
                .reductions()
                .iter()
                .find(|r| r.cause == CongestionCause::Timeout)
                .copied();
            // When the link returns at 7 s, the ACKs of the segments queued through the outage
            // restart slow start up to ssthresh (half, or 0.7, of the flight at the first
            // timeout); its burst lands on that backlog and overflows once more (a halving),
            // and congestion avoidance climbs the rest to one BDP (33 segments) at one
            // segment per RTT: about a second.
            let back = tx
                .samples()
                .iter()
                .find(|x| x.time > t0 + secs(7.0) && x.cwnd > DataSize::bytes(33 * 1500))
                .map(|x| x.time - t0);
            eprintln!(
                "{cc:?} 2 s outage at 5 s: {} timeouts (first at {:?}, cwnd {:.1}), {} late \
                 ACKs, window back at one BDP at {back:?}, throughput before / during / after \
                 {before} / {during} / {after}",
                tx.timeouts(),
                timeout.map(|r| r.time - t0),
                timeout.map_or(f64::NAN, |r| r.cwnd_before),
                tx.late_acks(),
            );
            assert!(tx.timeouts() >= 1);
            let first_timeout = timeout.expect("timed out").time;
            // The last ACKs arrive one RTT into the outage; the RTO is then its 200 ms floor.
            assert!(first_timeout > t0 + secs(5.2) && first_timeout < t0 + secs(5.3));
            assert!(during < Bitrate::kbps(300), "{during}");
            assert!(before.as_mbps_f64() > 9.0, "{before}");
            assert!(after.as_mbps_f64() > 8.0, "{after} after the outage");
            let back = back.expect("the window reopens");
            assert!(back < secs(8.5), "window back at {back:?}");
        }
    }

    #[test]
    fn the_flow_sends_only_between_start_and_stop() {
        let rtt = Duration::from_millis(40);
        let cfg = TcpConfig {
            start: secs(1.0),
            stop: Some(secs(3.0)),
            ..TcpConfig::reno()
        };
        let (s, t0) = single(cfg, droptail(Bitrate::mbps(10), rtt), rtt, secs(5.0));
        let ev = s.forward().events();
        let arrivals: Vec<Instant> = ev
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Enqueued | EventKind::Dropped(_)))
            .map(|e| e.time)
            .collect();
        let (first, last) = (arrivals[0], arrivals[arrivals.len() - 1]);
        assert_eq!(first, t0 + secs(1.0));
        assert!(last < t0 + secs(3.0) && last > t0 + secs(2.9), "{last:?}");
        let tx = s.sender(0);
        assert_eq!(tx.in_flight(), 0, "everything sent was acknowledged");
        assert_eq!(tx.segments_sent(), tx.segments_acked() + tx.segments_lost());
    }

    /// iperf's `-b`: limited to 10 then 20 Mbit/s on a 50 Mbit/s link, the flow sends at the
    /// limit (no queue builds), and the window alone rules once the limit is gone.
    #[test]
    fn an_application_rate_limit_caps_the_flow_step_by_step() {
        let cfg = TcpConfig {
            rate_limit: vec![
                (secs(0.0), Bitrate::mbps(10)),
                (secs(10.0), Bitrate::mbps(20)),
            ],
            ..TcpConfig::default()
        };
        let rtt = Duration::from_millis(30);
        let (s, t0) = single(cfg, droptail(Bitrate::mbps(50), secs(0.3)), rtt, secs(20.0));
        let ev = s.forward().events();
        let mbps = |a: f64, b: f64| {
            metrics::throughput(ev.iter(), None, t0 + secs(a), t0 + secs(b)).as_bps_f64() / 1e6
        };
        let (first, second) = (mbps(2.0, 10.0), mbps(12.0, 20.0));
        assert!(
            (first - 10.0).abs() < 0.5,
            "{first} Mbit/s under a 10 Mbit/s limit"
        );
        assert!(
            (second - 20.0).abs() < 1.0,
            "{second} Mbit/s under a 20 Mbit/s limit"
        );
        let q = metrics::queuing_delays(ev.iter(), None, t0 + secs(2.0), t0 + secs(20.0));
        let p95 = metrics::percentile(&q, 95.0).expect("queue samples");
        assert!(
            p95 < Duration::from_millis(5),
            "no standing queue: p95 {p95:?}"
        );

        let unlimited = TcpConfig::default();
        let (s, t0) = single(
            unlimited,
            droptail(Bitrate::mbps(50), secs(0.3)),
            rtt,
            secs(20.0),
        );
        let full = metrics::throughput(
            s.forward().events().iter(),
            None,
            t0 + secs(5.0),
            t0 + secs(20.0),
        );
        assert!(full.as_bps_f64() > 45e6, "{full} without a limit");
    }

    #[test]
    fn odd_acks_are_ignored() {
        let t0 = Instant::now();
        let mut tx = TcpSender::new(TcpConfig::reno(), t0);
        let sent: Vec<_> = std::iter::from_fn(|| tx.poll_transmit(t0)).collect();
        assert_eq!(sent.len(), 10, "the initial window");
        let ack = |seq, sent| Delivered {
            size: DataSize::bytes(64),
            ecn: Ecn::NotEct,
            payload: SimPacket::TcpAck(TcpAck {
                seq,
                ce: false,
                sent,
            }),
            flow: FlowId::from_index(0),
        };
        let later = t0 + Duration::from_millis(50);
        // Never sent; sent "in the future"; then the same ACK twice.
        tx.handle_packet(ack(u64::MAX, t0), later);
        tx.handle_packet(ack(10, t0), later);
        assert_eq!((tx.segments_acked(), tx.srtt()), (0, None));
        tx.handle_packet(ack(0, later + Duration::from_secs(1)), later);
        tx.handle_packet(ack(0, later + Duration::from_secs(1)), later);
        assert_eq!(tx.segments_acked(), 1);
        assert_eq!(tx.srtt(), None, "no sample from an echo in the future");
        assert_eq!(tx.cwnd(), 11.0);
        assert_eq!(tx.in_flight(), 9);
        // A spurious timer call does nothing; the real one counts the flight lost.
        tx.handle_timeout(later);
        assert_eq!(tx.timeouts(), 0);
        let rto = tx.poll_timeout().expect("a timer runs");
        tx.handle_timeout(t0 + Duration::from_secs(10));
        assert!(rto <= t0 + Duration::from_secs(10));
        assert_eq!((tx.timeouts(), tx.segments_lost(), tx.cwnd()), (1, 9, 1.0));
    }

    /// BBR and, optionally, a CUBIC flow started 1 s later, over `fwd` (RTT 40 ms); rates in
    /// Mbit/s over 20–60 s, link utilisation, the BBR sender.
    fn bbr_run(fwd: LinkConfig, with_cubic: bool, seed: u64) -> (TcpSim, Instant, Vec<f64>, f64) {
        let t0 = Instant::now();
        let rtt = Duration::from_millis(40);
        let rate = Bitrate::mbps(10);
        let mut s = sim(fwd, rtt, t0);
        let bbr = TcpConfig {
            cc: TcpCc::Bbr,
            sample_interval: Duration::from_millis(10),
            seed,
            ..TcpConfig::default()
        };
        let (tx, rx) = tcp_pair(bbr, t0);
        s.add_pair(tx, rx);
        if with_cubic {
            let cfg = TcpConfig {
                start: secs(1.0),
                ..TcpConfig::cubic()
            };
            let (tx, rx) = tcp_pair(cfg, t0);
            s.add_pair(tx, rx);
        }
        let (from, to) = (t0 + secs(20.0), t0 + secs(60.0));
        s.run_until(to);
        let ev = s.forward().events();
        let rates = (0..s.pairs())
            .map(|i| metrics::throughput(ev.iter(), Some(s.flow(i)), from, to).as_mbps_f64())
            .collect();
        let u = metrics::utilisation(ev.iter(), rate, from, to);
        (s, t0, rates, u)
    }

    #[test]
    fn bbr_alone_fills_the_link_with_little_queue_and_learns_its_rate_and_rtt() {
        let rtt = Duration::from_millis(40);
        let (s, t0, rates, u) = bbr_run(droptail(Bitrate::mbps(10), 4 * rtt), false, 1);
        let tx = s.sender(0);
        let ev = s.forward().events();
        let (from, to) = (t0 + secs(20.0), t0 + secs(60.0));
        let q = metrics::queuing_delays(ev.iter(), None, from, to);
        let (offered, dropped) = metrics::loss_counts(ev.iter(), None, from, to);
        let bw = tx.bbr_bandwidth().expect("BBR") * 8e-6;
        let mode = tx.bbr_mode();
        eprintln!(
            "BBR alone, 10 Mbit/s, 40 ms, DT 4 BDP: {rates:.3?} Mbit/s, U {u:.4}, queue p50 {:.1}              p99 {:.1} ms, {dropped}/{offered} dropped, bw {bw:.2} Mbit/s, srtt {:.1} ms, mode              {mode:?}, timeouts {}",
            ms(metrics::percentile(&q, 50.0)),
            ms(metrics::percentile(&q, 99.0)),
            ms(tx.srtt()),
            tx.timeouts(),
        );
        assert!(u >= 0.95, "utilisation {u:.4}");
        assert_eq!(dropped, 0, "a 4-BDP buffer holds BBR's 2-BDP window");
        // Paced at the estimate, the queue only holds what the 1.25 phase adds, which the
        // 0.75 phase drains: an RTT's worth at most, where CUBIC would fill the buffer.
        assert!(ms(metrics::percentile(&q, 50.0)) <= 10.0);
        assert!(ms(metrics::percentile(&q, 99.0)) <= 45.0);
        assert!(
            (9.4..=10.6).contains(&bw),
            "bandwidth estimate {bw:.2} Mbit/s"
        );
        assert_eq!(mode, Some(BbrMode::ProbeBw));
        assert_eq!(tx.timeouts(), 0);
    }

    #[test]
    fn bbr_keeps_the_link_under_random_loss_where_cubic_collapses() {
        let rtt = Duration::from_millis(40);
        let lossy = || {
            droptail(Bitrate::mbps(10), rtt)
                .with_loss(cg_link::LossConfig::Bernoulli { p: 0.01 })
                .with_seed(3)
        };
        let (_, _, _, bbr) = bbr_run(lossy(), false, 1);
        let (s, t0) = single(TcpConfig::cubic(), lossy(), rtt, secs(60.0));
        let ev = s.forward().events();
        let cubic = metrics::utilisation(
            ev.iter(),
            Bitrate::mbps(10),
            t0 + secs(20.0),
            t0 + secs(60.0),
        );
        eprintln!("1 % random loss, 10 Mbit/s, 40 ms: U BBR {bbr:.4}, CUBIC {cubic:.4}");
        // BBR v1 does not read loss as congestion (below its policer detector's 20 %).
        assert!(bbr >= 0.9, "BBR utilisation {bbr:.4}");
        // Loss-based: about 1.22·MSS/(RTT·√p) = 3.7 Mbit/s for Reno (Mathis), not much more
        // for CUBIC at this BDP.
        assert!(cubic <= 0.6, "CUBIC utilisation {cubic:.4}");
    }

    #[test]
    fn bbr_against_cubic_dominates_a_shallow_buffer_and_yields_in_a_deep_one() {
        // Hock, Bless, Zitterbart (ICNP 2017) and Ware et al. (IMC 2019): BBR v1 takes most
        // of a bottleneck whose buffer is about one BDP or less (its 2-BDP window keeps
        // sending into CUBIC's losses), and 35–45 % against CUBIC when the buffer is many
        // BDPs deep (its window caps its share while CUBIC fills the buffer). Against a
        // full buffer its min-RTT estimate ages, so it enters PROBE_RTT about every 10 s.
        let rtt = Duration::from_millis(40);
        for (bdps, seed) in [(0.5, 1), (0.5, 2), (1.0, 1), (8.0, 1), (8.0, 2)] {
            let (s, t0, rates, u) =
                bbr_run(droptail(Bitrate::mbps(10), rtt.mul_f64(bdps)), true, seed);
            let share = rates[0] / (rates[0] + rates[1]);
            let tx = s.sender(0);
            let mss = tx.config().mss.as_bytes_f64();
            // PROBE_RTT episodes: the window falls to 4 segments (sampled every 10 ms).
            let probe_rtt = tx
                .samples()
                .windows(2)
                .filter(|w| w[1].time >= t0 + secs(20.0))
                .filter(|w| {
                    w[0].cwnd.as_bytes_f64() / mss > 4.0 && w[1].cwnd.as_bytes_f64() / mss <= 4.0
                })
                .count();
            eprintln!(
                "BBR vs CUBIC, DT {bdps} BDP, seed {seed}: {rates:.3?} Mbit/s, BBR share \
                 {share:.3}, U {u:.4}, BBR losses {} timeouts {}, PROBE_RTT {probe_rtt} in 40 s, \
                 CUBIC loss events {}",
                tx.segments_lost(),
                tx.timeouts(),
                s.sender(1).loss_events()
            );
            assert!(u >= 0.95, "utilisation {u:.4}");
            if bdps <= 1.0 {
                assert!(share >= 0.7, "BBR share {share:.3} of a {bdps}-BDP buffer");
            } else {
                assert!(
                    (0.3..=0.5).contains(&share),
                    "BBR share {share:.3} of 8 BDP"
                );
                assert!(
                    (3..=5).contains(&probe_rtt),
                    "{probe_rtt} PROBE_RTT in 40 s"
                );
            }
        }
    }

    #[test]
    fn the_same_config_gives_the_same_event_log() {
        let log = |seed: u64| {
            let t0 = Instant::now();
            let rtt = Duration::from_millis(30);
            let fwd = droptail(Bitrate::mbps(10), rtt)
                .with_loss(cg_link::LossConfig::Bernoulli { p: 0.002 })
                .with_seed(seed);
            let mut s = sim(fwd, rtt, t0);
            for cfg in [TcpConfig::reno(), TcpConfig::cubic()] {
                let (tx, rx) = tcp_pair(cfg, t0);
                s.add_pair(tx, rx);
            }
            s.run_until(t0 + secs(10.0));
            let events: Vec<_> = s
                .forward()
                .events()
                .iter()
                .chain(s.reverse().events().iter())
                .map(|e| (e.time - t0, e.id, e.flow, e.kind))
                .collect();
            let reductions: Vec<_> = (0..2)
                .flat_map(|i| s.sender(i).reductions().to_vec())
                .map(|r| (r.time - t0, r.cause, r.cwnd_before, r.cwnd_after))
                .collect();
            let random = events
                .iter()
                .filter(|e| e.3 == EventKind::Dropped(DropReason::RandomLoss))
                .count();
            (events, reductions, random)
        };
        let a = log(7);
        assert!(a.2 > 0 && !a.1.is_empty());
        assert_eq!(a, log(7));
        assert_ne!(a.0, log(8).0);
    }
}
