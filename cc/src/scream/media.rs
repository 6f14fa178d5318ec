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

use std::time::{Duration, Instant};

use cg_types::Bitrate;

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
    /// Lower bound.
    pub min: Bitrate,
    /// Upper bound.
    pub max: Bitrate,
}

/// The encoder's target.
pub fn target_bitrate(i: &TargetInputs) -> Bitrate {
    let rtt = (i.srtt.as_secs_f64() + 0.001).clamp(0.001, 0.2);
    let ratio = (i.mss / i.cwnd.max(1.0)).min(1.0);
    let mut rate = 8.0 * i.cwnd / rtt;
    rate *= 1.0 - (ratio - 0.1).clamp(0.0, 0.2);
    rate *= i.mss / (i.mss + i.overhead).max(1.0);
    rate /= (i.margin + i.rate_adjust).max(0.1);
    Bitrate::from_bps_f64(rate).clamp(i.min, i.max)
}

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
}

impl MediaQueueControl {
    /// Folds in a queue report. Returns `true` if the queue must be discarded now.
    #[allow(clippy::too_many_arguments)]
    pub fn on_queue(
        &mut self,
        queue: MediaQueue,
        now: Instant,
        frame_period: Duration,
        gain: f64,
        max_adjust: f64,
        max_delay: Duration,
        min_discard_interval: Duration,
    ) -> bool {
        let period = frame_period.as_secs_f64().max(1e-3);
        let arrival = queue.size > self.queue.size;
        self.queue = queue;
        if arrival {
            let elapsed = match self.last_update {
                // Weight by elapsed frames, at most one frame per arrival (a long silence is
                // one observation, not many).
                Some(t) => (now.saturating_duration_since(t).as_secs_f64() / period).min(1.0),
                None => 1.0,
            };
            self.last_update = Some(now);
            let error = (queue.delay.as_secs_f64() - period / 4.0) / period;
            self.rate_adjust =
                (self.rate_adjust + error * gain * elapsed).clamp(0.0, max_adjust.max(0.0));
        }

        let due = self
            .last_discard
            .is_none_or(|t| now.saturating_duration_since(t) >= min_discard_interval);
        if queue.delay > max_delay && due {
            self.last_discard = Some(now);
            self.discards += 1;
            self.queue = MediaQueue::default();
            return true;
        }
        false
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
    use cg_types::DataSize;

    fn inputs() -> TargetInputs {
        TargetInputs {
            cwnd: 125_000.0,
            srtt: Duration::from_millis(99),
            mss: 1200.0,
            overhead: 0.0,
            margin: 1.0,
            rate_adjust: 0.0,
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

    fn report_sized(c: &mut MediaQueueControl, bytes: u64, delay_ms: u64, now: Instant) -> bool {
        let q = MediaQueue {
            size: DataSize::bytes(bytes),
            delay: Duration::from_millis(delay_ms),
        };
        c.on_queue(
            q,
            now,
            Duration::from_millis(20),
            1.0 / 16.0,
            0.5,
            Duration::from_millis(100),
            Duration::from_millis(250),
        )
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
