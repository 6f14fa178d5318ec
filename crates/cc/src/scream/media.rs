//! Media rate control (SCReAM v2 draft §4.4) and the RTP-queue discard.
//!
//! ```text
//! target = 8 × cwnd / clamp(sRTT + 1 ms, 1 ms, 200 ms)
//!          × (1 − min(0.2, max(0, MSS/cwnd − 0.1)))     # very small windows
//!          × MSS / (MSS + PACKET_OVERHEAD)               # packetisation overhead
//!          ÷ (rate_margin + rate_adjust)                  # 1.1 ref / 1.2 draft, + integral
//! ```
//! clamped to `[min, max]`. `rate_adjust` is the draft's integral controller on the media-queue
//! delay: `error = (queue_delay − frame_period/4) / frame_period`, `rate_adjust += error ×
//! RATE_ADJUST_GAIN` per frame, kept in `[0, 0.5]`. The draft samples `queue_delay` when a new
//! frame enters the queue — the age of what the previous frames left behind, not the age of
//! the frame being paced out. The transport reports the queue through
//! [`Controller::on_media_queue`](crate::Controller::on_media_queue) as often as it likes
//! (after enqueues and after sends); a report whose size grew is a frame arrival and is the
//! one integrated, weighted by the time since the previous one in frame periods (at most 1),
//! so a frame enqueued in several pieces counts once.
//!
//! When the queue delay exceeds `max_rtp_queue_delay` (0.1 s), at most every 0.25 s, the
//! controller emits [`ControllerEvent::DiscardQueue`](crate::ControllerEvent::DiscardQueue):
//! the transport drops the queue and asks the encoder for a key frame (reference
//! `ScreamV2TxStream::updateTargetBitrate`).
//!
//! Two additions of ours for large frames (issue #14; both switchable, see
//! [`ScreamConfig::discard_recovery_max_delay`](super::ScreamConfig::discard_recovery_max_delay)
//! and [`ScreamConfig::large_frame_factor`](super::ScreamConfig::large_frame_factor)):
//!
//! - **No discard loop.** After a discard, and after a *large* frame (more than 2 × the
//!   nominal `target × frame_period`, as a key frame is), the discard limit is
//!   `discard_recovery_max_delay` (0.35 s = the reference's own worst case, 0.1 s + the
//!   0.25 s interval) until the queue has been empty once. The reference checks only the age
//!   of the oldest packet, so the key frame a discard asks for — ~10 nominal frames, ~150 ms
//!   at 1.5 × 1.5 × target — grew older than 0.1 s while it was being sent, was thrown away,
//!   and another was asked for, a loop of dropped frames and freezes. The reference does
//!   not handle this; we chose "hold until drained" over "measure what waits behind the
//!   frame being sent" because the frames behind a key frame also wait ~0.1 s, and
//!   discarding them asks for yet another key frame.
//! - **Frames behind a large frame are not integrated.** Their wait is the large frame's
//!   size, which says nothing about a rate the link cannot carry; integrated, a key frame
//!   pushed `rate_adjust` to its 0.5 bound (−30 % of the target, decaying over about a
//!   second at 30 fps) and each 3–5× frame added more, so a camera-like source's target sat
//!   far under the window's rate (figures: `docs/notes/2026-12-01-figures-from-docs.md`).
//!
//! The draft's `frame_size_dev` (§4.4): per frame, `deviation = max(0, (frame_size −
//! nominal) / nominal)` with `nominal = target × frame_period / 8`, averaged with gain
//! `FRAME_SIZE_DEV_ALPHA` (1/64) and capped at [`FRAME_SIZE_DEV_MAX`] (0.2), is added to
//! the divisor: a source whose frames exceed the nominal size gets a lower target
//! ([`ScreamConfig::frame_size_dev_alpha`](super::ScreamConfig::frame_size_dev_alpha), which
//! says when it is on and why).

use std::time::{Duration, Instant};

use cg_types::{Bitrate, DataSize};

use crate::MediaQueue;

/// Inputs to [`target_bitrate`].
#[derive(Debug, Clone, Copy)]
pub struct TargetInputs {
    /// Window in bytes.
    pub cwnd: f64,
    /// Smoothed RTT.
    pub srtt: Duration,
    /// MSS in bytes.
    pub mss: f64,
    /// Per-packet overhead in bytes.
    pub overhead: f64,
    /// `rate_margin`.
    pub margin: f64,
    /// Integral term.
    pub rate_adjust: f64,
    /// The draft's `frame_size_dev` (0 when off).
    pub frame_size_dev: f64,
    /// Lower bound.
    pub min: Bitrate,
    /// Upper bound.
    pub max: Bitrate,
}

impl TargetInputs {
    /// The share of a packet that is media (`mss / (mss + overhead)`).
    fn media_share(&self) -> f64 {
        self.mss / (self.mss + self.overhead).max(1.0)
    }

    /// What the window's rate is divided by: margin, integral term and `frame_size_dev`.
    fn divisor(&self) -> f64 {
        (self.margin + self.rate_adjust + self.frame_size_dev).max(0.1)
    }

    /// Window bytes per byte of flight for which the target is the flight's rate (the
    /// inverse of [`target_bitrate`]'s factors for a window of many packets).
    pub fn window_per_rate(&self) -> f64 {
        self.divisor() / self.media_share().max(f64::MIN_POSITIVE)
    }
}

/// The encoder's target.
pub fn target_bitrate(i: &TargetInputs) -> Bitrate {
    let rtt = (i.srtt.as_secs_f64() + 0.001).clamp(0.001, 0.2);
    let ratio = (i.mss / i.cwnd.max(1.0)).min(1.0);
    let mut rate = 8.0 * i.cwnd / rtt;
    rate *= 1.0 - (ratio - 0.1).clamp(0.0, 0.2);
    rate *= i.media_share();
    rate /= i.divisor();
    Bitrate::from_bps_f64(rate).clamp(i.min, i.max)
}

/// Parameters of [`MediaQueueControl::on_queue`] (from [`ScreamConfig`](super::ScreamConfig)).
#[derive(Debug, Clone, Copy)]
pub struct QueueParams {
    /// Nominal frame period.
    pub frame_period: Duration,
    /// `RATE_ADJUST_GAIN`.
    pub gain: f64,
    /// Upper bound of the integral term.
    pub max_adjust: f64,
    /// Discard above this queue delay.
    pub max_delay: Duration,
    /// Shortest time between two discards.
    pub min_discard_interval: Duration,
    /// After a discard, hold further discards until the queue has drained (`Some`), except
    /// above this queue delay; `None`: the reference's rule.
    pub recovery_max_delay: Option<Duration>,
    /// A frame larger than this × the nominal frame is "large": until the queue has been
    /// empty once after it, frame arrivals are not integrated and the discard limit is
    /// `recovery_max_delay`. `None`: the draft's rule.
    pub large_frame_factor: Option<f64>,
    /// The current target, for the nominal frame size `target × frame_period`.
    pub target: Bitrate,
    /// `FRAME_SIZE_DEV_ALPHA`, or `None`: no `frame_size_dev`.
    pub frame_size_dev_alpha: Option<f64>,
}

/// The draft's cap on `frame_size_dev`.
pub const FRAME_SIZE_DEV_MAX: f64 = 0.2;

/// The media-queue integral controller and the discard rule.
#[derive(Debug, Clone, Default)]
pub struct MediaQueueControl {
    /// Integral term in `[0, max]`.
    pub rate_adjust: f64,
    /// The last reported queue.
    pub queue: MediaQueue,
    last_update: Option<Instant>,
    last_discard: Option<Instant>,
    /// Discards so far.
    pub discards: u64,
    /// A discard happened and the recovery (key) frame has not yet left: the queue has not
    /// been empty since media arrived after the discard.
    pub recovering: bool,
    /// The first report after a discard is a baseline, not an arrival: the transport may keep
    /// the rest of a frame that had started leaving.
    baseline_next: bool,
    /// Media arrived after the discard.
    recovery_arrived: bool,
    /// Time of the last arrival and the bytes it (and any earlier piece reported at the same
    /// instant) added: one frame.
    arrival: Option<(Instant, u64)>,
    /// A large frame arrived and the queue has not been empty since: what waits is explained
    /// by that frame's size.
    pub large_backlog: bool,
    /// The draft's `frame_size_dev`, in `[0, FRAME_SIZE_DEV_MAX]`.
    pub frame_size_dev: f64,
    /// `frame_size_dev` before the frame arriving now (a frame reported in pieces at one
    /// instant is one sample).
    frame_size_dev_before: f64,
}

impl MediaQueueControl {
    /// Folds in a queue report. Returns `true` if the queue must be discarded now.
    pub fn on_queue(&mut self, queue: MediaQueue, now: Instant, p: &QueueParams) -> bool {
        let period = p.frame_period.as_secs_f64().max(1e-3);
        let growth = queue
            .size
            .as_bytes()
            .saturating_sub(self.queue.size.as_bytes());
        let arrival = growth > 0 && !self.baseline_next;
        self.baseline_next = false;
        self.queue = queue;
        let mut large = false;
        if arrival {
            let frame = match self.arrival {
                Some((t, b)) if t == now => b + growth,
                _ => {
                    self.frame_size_dev_before = self.frame_size_dev;
                    growth
                }
            };
            self.arrival = Some((now, frame));
            let nominal = p.target.as_bps_f64() / 8.0 * period;
            if let Some(k) = p.large_frame_factor {
                large = frame as f64 > k * nominal;
            }
            if let Some(alpha) = p.frame_size_dev_alpha
                && nominal > 0.0
            {
                let deviation = ((frame as f64 - nominal) / nominal).max(0.0);
                self.frame_size_dev = ((1.0 - alpha) * self.frame_size_dev_before
                    + alpha * deviation)
                    .min(FRAME_SIZE_DEV_MAX);
            }
        }
        if arrival && (self.large_backlog || self.recovering) {
            // A frame queued behind a large one (itself large or not) or behind the key frame
            // a discard asked for: its wait is that frame's size, not a rate the link cannot
            // carry. Not integrated.
        } else if arrival {
            let elapsed = match self.last_update {
                // Weight by elapsed frames, at most one frame per arrival (a long silence is
                // one observation, not many).
                Some(t) => (now.saturating_duration_since(t).as_secs_f64() / period).min(1.0),
                None => 1.0,
            };
            self.last_update = Some(now);
            let error = (queue.delay.as_secs_f64() - period / 4.0) / period;
            self.rate_adjust =
                (self.rate_adjust + error * p.gain * elapsed).clamp(0.0, p.max_adjust.max(0.0));
        }
        if large {
            self.large_backlog = true;
        } else if queue.size == DataSize::ZERO {
            self.large_backlog = false;
        }
        if self.recovering {
            if arrival {
                self.recovery_arrived = true;
            } else if self.recovery_arrived && queue.size == DataSize::ZERO {
                // The recovery frame (and whatever followed it) has left.
                self.recovering = false;
            }
        }

        let due = self
            .last_discard
            .is_none_or(|t| now.saturating_duration_since(t) >= p.min_discard_interval);
        if queue.delay > self.discard_limit(p) && due {
            self.last_discard = Some(now);
            self.discards += 1;
            self.queue = MediaQueue::default();
            self.recovering = p.recovery_max_delay.is_some();
            self.baseline_next = true;
            self.recovery_arrived = false;
            self.large_backlog = false;
            return true;
        }
        false
    }

    /// The queue delay above which the queue is discarded now: `max_delay`, or until the
    /// queue has drained after a discard or after a large frame, the recovery bound.
    pub fn discard_limit(&self, p: &QueueParams) -> Duration {
        match p.recovery_max_delay {
            Some(r) if self.recovering || self.large_backlog => r.max(p.max_delay),
            _ => p.max_delay,
        }
    }
}

/// The rate media enters the queue (the reference's `rateRtpAvg`), for the pacer: bytes in =
/// growth of the queue between two reports + bytes sent in between; measured over 50 ms
/// windows and smoothed with gain 1/8 (≈ the reference's 8-window average).
#[derive(Debug, Clone, Default)]
pub struct MediaRateMeter {
    last_size: u64,
    sent: u64,
    bytes: u64,
    window_start: Option<Instant>,
    /// Smoothed input rate, bit/s.
    pub rate_bps: f64,
}

impl MediaRateMeter {
    const WINDOW: Duration = Duration::from_millis(50);

    /// Bytes left the queue.
    pub fn on_sent(&mut self, bytes: u64) {
        self.sent = self.sent.saturating_add(bytes);
    }

    /// A queue report.
    pub fn on_queue(&mut self, size: u64, now: Instant) {
        let input = size
            .saturating_add(self.sent)
            .saturating_sub(self.last_size);
        self.bytes = self.bytes.saturating_add(input);
        self.sent = 0;
        self.last_size = size;
        let start = *self.window_start.get_or_insert(now);
        let dt = now.saturating_duration_since(start);
        if dt >= Self::WINDOW {
            let r = self.bytes as f64 * 8.0 / dt.as_secs_f64();
            self.rate_bps += (r - self.rate_bps) / 8.0;
            self.bytes = 0;
            self.window_start = Some(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs() -> TargetInputs {
        TargetInputs {
            cwnd: 125_000.0,
            srtt: Duration::from_millis(99),
            mss: 1200.0,
            overhead: 0.0,
            margin: 1.0,
            rate_adjust: 0.0,
            frame_size_dev: 0.0,
            min: Bitrate::kbps(150),
            max: Bitrate::mbps(100),
        }
    }

    #[test]
    fn target_is_window_over_rtt() {
        // 125 kB over 100 ms = 10 Mbit/s.
        assert_eq!(target_bitrate(&inputs()), Bitrate::mbps(10));
        let mut i = inputs();
        i.margin = 1.1;
        i.rate_adjust = 0.15;
        i.overhead = 20.0;
        let want = 10e6 * 1200.0 / 1220.0 / 1.25;
        assert!((target_bitrate(&i).as_bps_f64() - want).abs() < 1.0);
    }

    #[test]
    fn a_window_of_the_flight_times_window_per_rate_targets_the_flights_rate() {
        let mut i = inputs();
        (i.margin, i.rate_adjust, i.frame_size_dev, i.overhead) = (1.2, 0.4, 0.1, 20.0);
        // 100 kB in flight over a 100 ms path (srtt + 1 ms): 8 Mbit/s.
        i.cwnd = 100_000.0 * i.window_per_rate();
        assert!((target_bitrate(&i).as_bps_f64() - 8e6).abs() < 1.0);
    }

    #[test]
    fn target_is_clamped_to_min_and_max() {
        let mut i = inputs();
        i.cwnd = 1.0;
        assert_eq!(target_bitrate(&i), i.min);
        i.cwnd = 1e12;
        assert_eq!(target_bitrate(&i), i.max);
        i.cwnd = f64::NAN;
        let t = target_bitrate(&i);
        assert!(t >= i.min && t <= i.max);
    }

    fn params(recovery: Option<Duration>) -> QueueParams {
        QueueParams {
            frame_period: Duration::from_millis(20),
            gain: 1.0 / 16.0,
            max_adjust: 0.5,
            max_delay: Duration::from_millis(100),
            min_discard_interval: Duration::from_millis(250),
            recovery_max_delay: recovery,
            large_frame_factor: None,
            target: Bitrate::mbps(1),
            frame_size_dev_alpha: None,
        }
    }

    #[test]
    fn frame_size_dev_averages_the_excess_over_the_nominal_frame_once_per_frame() {
        // 1 Mbit/s at 20 ms: nominal 2500 bytes.
        let p = QueueParams {
            frame_size_dev_alpha: Some(1.0 / 64.0),
            ..params(None)
        };
        let mut c = MediaQueueControl::default();
        let t0 = Instant::now();
        let q = |bytes| MediaQueue {
            size: DataSize::bytes(bytes),
            delay: Duration::ZERO,
        };
        // A 2× frame in two pieces at one instant is one sample of deviation 1.
        c.on_queue(q(2500), t0, &p);
        c.on_queue(q(5000), t0, &p);
        assert!(
            (c.frame_size_dev - 1.0 / 64.0).abs() < 1e-12,
            "{}",
            c.frame_size_dev
        );
        // A frame at or below the nominal size adds nothing and decays the average.
        c.on_queue(q(0), t0 + Duration::from_millis(10), &p);
        c.on_queue(q(2000), t0 + Duration::from_millis(20), &p);
        assert!((c.frame_size_dev - 63.0 / 64.0 / 64.0).abs() < 1e-12);
        // Capped at 0.2 however large the frames.
        for i in 0..1000u64 {
            let t = t0 + Duration::from_millis(40 + 20 * i);
            c.on_queue(q(0), t, &p);
            c.on_queue(q(250_000), t + Duration::from_millis(1), &p);
        }
        assert_eq!(c.frame_size_dev, FRAME_SIZE_DEV_MAX);
        // Off: stays 0, and the target's divisor has it.
        let mut off = MediaQueueControl::default();
        off.on_queue(q(250_000), t0, &params(None));
        assert_eq!(off.frame_size_dev, 0.0);
        let mut i = inputs();
        i.frame_size_dev = 0.2;
        assert_eq!(target_bitrate(&i), Bitrate::from_bps_f64(10e6 / 1.2));
    }

    fn report_sized(c: &mut MediaQueueControl, bytes: u64, delay_ms: u64, now: Instant) -> bool {
        let q = MediaQueue {
            size: DataSize::bytes(bytes),
            delay: Duration::from_millis(delay_ms),
        };
        c.on_queue(q, now, &params(None))
    }

    /// A frame arrives (the queue grows) when the oldest leftover is `delay_ms` old.
    fn frame(c: &mut MediaQueueControl, delay_ms: u64, now: Instant) -> bool {
        report_sized(c, 0, delay_ms, now);
        report_sized(c, 10_000, delay_ms, now)
    }

    fn report(c: &mut MediaQueueControl, delay_ms: u64, now: Instant) -> bool {
        report_sized(c, 10_000, delay_ms, now)
    }

    #[test]
    fn integral_grows_while_frames_find_more_than_a_quarter_frame_queued() {
        let t0 = Instant::now();
        let mut c = MediaQueueControl::default();
        // Frame arrives, 25 ms of leftovers: error = (25 − 5)/20 = 1 → +1/16.
        frame(&mut c, 25, t0);
        assert!((c.rate_adjust - 1.0 / 16.0).abs() < 1e-12);
        // Reports while the frame is paced out (the queue shrinks or stays) do not count.
        for k in 1..=10 {
            report_sized(&mut c, 10_000 - 900 * k, 30, t0 + Duration::from_millis(k));
        }
        assert!((c.rate_adjust - 1.0 / 16.0).abs() < 1e-12);
        // More media 11 ms later counts 11/20 of a frame.
        report_sized(&mut c, 20_000, 25, t0 + Duration::from_millis(11));
        assert!((c.rate_adjust - 1.55 / 16.0).abs() < 1e-12);
        // Frames arriving to an empty queue: error = −1/4 per frame.
        frame(&mut c, 0, t0 + Duration::from_millis(31));
        assert!((c.rate_adjust - 1.3 / 16.0).abs() < 1e-12);
        for k in 0..1000 {
            frame(&mut c, 0, t0 + Duration::from_millis(51 + 20 * k));
        }
        assert_eq!(c.rate_adjust, 0.0);
        for k in 0..1000 {
            frame(&mut c, 99, t0 + Duration::from_millis(30_000 + 20 * k));
        }
        assert_eq!(c.rate_adjust, 0.5);
    }

    #[test]
    fn frames_queued_behind_a_large_frame_are_not_integrated() {
        let t0 = Instant::now();
        // Nominal frame at 1 Mbit/s and 20 ms: 2500 B; a key frame of 10× it.
        let run = |large: Option<f64>| {
            let p = QueueParams {
                large_frame_factor: large,
                recovery_max_delay: Some(Duration::from_millis(350)),
                ..params(None)
            };
            let mut c = MediaQueueControl::default();
            let ms = |k: u64| t0 + Duration::from_millis(k);
            c.on_queue(q(25_000, 0), ms(0), &p);
            // Three frames queue behind it while it is paced out, then all drains.
            let mut discarded = false;
            for (k, size) in [(20, 20_000), (40, 15_000), (60, 10_000), (80, 7_500)] {
                c.on_queue(q(size - 2_500, k), ms(k), &p);
                discarded |= c.on_queue(q(size, k), ms(k), &p);
            }
            // 110 ms old: over the 100 ms limit.
            discarded |= c.on_queue(q(2_500, 110), ms(110), &p);
            c.on_queue(q(0, 0), ms(120), &p);
            (c.rate_adjust, discarded)
        };
        let (adjust, discarded) = run(Some(2.0));
        assert_eq!(adjust, 0.0);
        assert!(
            !discarded,
            "a large frame's backlog is held to the recovery bound"
        );
        // The draft's rule: errors (20 − 5)/20, (40 − 5)/20, … = 9/16 integrated, up to the
        // 0.5 bound; and a discard.
        let (adjust, discarded) = run(None);
        assert_eq!(adjust, 0.5);
        assert!(discarded);
    }

    fn q(bytes: u64, delay_ms: u64) -> MediaQueue {
        MediaQueue {
            size: DataSize::bytes(bytes),
            delay: Duration::from_millis(delay_ms),
        }
    }

    #[test]
    fn queue_over_100ms_is_discarded_at_most_every_250ms() {
        let t0 = Instant::now();
        let mut c = MediaQueueControl::default();
        assert!(!report(&mut c, 100, t0));
        assert!(report(&mut c, 101, t0));
        assert!(!report(&mut c, 150, t0 + Duration::from_millis(249)));
        assert!(report(&mut c, 150, t0 + Duration::from_millis(250)));
        assert_eq!(c.discards, 2);
    }

    #[test]
    fn media_rate_counts_queue_growth_plus_sent_bytes() {
        let t0 = Instant::now();
        let mut m = MediaRateMeter::default();
        // 10 kB frames every 10 ms (8 Mbit/s), each sent completely before the next.
        for k in 0..400u32 {
            let t = t0 + Duration::from_millis(10) * k;
            m.on_queue(10_000, t);
            m.on_sent(10_000);
            m.on_queue(0, t + Duration::from_millis(5));
        }
        assert!((m.rate_bps - 8e6).abs() < 0.05 * 8e6, "{}", m.rate_bps);
    }
}
