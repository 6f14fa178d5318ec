//! The pacer: a sans-IO leaky bucket in front of the socket, with a bounded media queue.
//!
//! - Releases packets at the rate the controller asks for ([`cg_cc::Controller::pacing_rate`];
//!   GCC sets it to 1.5 × its target, draft-ietf-rmcat-gcc-02 §4, faster for a large frame
//!   while it has not found the bottleneck), and, for window-based
//!   controllers (SCReAM), only while [`cg_cc::Controller::send_allowance`] covers the packet.
//! - Retransmissions go before media, media before padding.
//! - Bounded: when the first frame that has not started leaving has waited longer than
//!   [`PacerConfig::max_queue_delay`], it and every frame queued behind it are dropped whole,
//!   and the caller asks the encoder for a key frame (the frames after a dropped one cannot
//!   be decoded without it). Retransmissions older than the same limit are dropped.
//! - Frames are never split. A frame whose first packet has left is always finished, by
//!   every drop ([`Pacer::enforce_limit`], [`Pacer::discard_media`]): the caller numbers
//!   packets as they leave ([`crate::SenderSession`] assigns RTP sequence numbers in
//!   `poll_transmit`), so dropped frames leave no sequence gap, and a frame cut short would
//!   reach the receiver as a complete-looking frame without its end.
//! - Padding while a probe ([`cg_cc::ControllerEvent::Probe`]) is active and the media queue
//!   is empty, at the probe's rate.
//! - Keeps up with its input: for rate-based controllers (GCC) it never paces slower than
//!   [`PacerConfig::input_rate_floor`] × the media queued over the last
//!   [`INPUT_WINDOW`]. The controller's rate counts media bits and the pacer wire bytes,
//!   encoders overshoot their target, and a pacing rate derived from a stale capacity
//!   estimate can sit under both: a pacer slower than its input holds a backlog that grows
//!   without bound, hidden from the delay-based detector, until the queue bound drops
//!   seconds of video at once. A window-based controller (SCReAM) owns its media queue (its
//!   rate adjustment and discards act on it), so its pacing rate is taken as given.
//!
//! - A burst where the controller allows one ([`cg_cc::Controller::pacing_burst`]): the
//!   bucket may run that far ahead of its rate, at most [`MAX_BURST`] (libwebrtc's send-burst
//!   interval and cap). Idle time still earns no credit: a burst is what an idle pacer may
//!   send at once, not saved-up time.
//!
//! Leaky bucket: after a packet of size `s` the next may leave `s / rate` later. A late
//! wake-up may catch up by at most [`PacerConfig::max_lag`], and never to before the packet
//! was queued, so idle time never turns into a burst: the first packets of a frame that
//! arrives at an idle pacer, or that the send window held back until feedback reopened it,
//! leave one gap apart, not `max_lag`'s worth at once (a 1 ms burst at the pacing rate is
//! enough to cross DualPI2's 1 ms L4S step threshold).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use cg_cc::MediaQueue;
use cg_types::{Bitrate, DataSize};

/// Pacer settings.
#[derive(Debug, Clone, PartialEq)]
pub struct PacerConfig {
    /// Media frames that have waited longer than this without starting to leave are dropped
    /// (whole frames, with every frame behind them) and a key frame requested.
    /// Default 250 ms: above SCReAM's own 100 ms discard threshold (RFC 8298 §4.1.2.2 /
    /// the v2 draft), so SCReAM's `DiscardQueue` acts first, and far below what makes an
    /// interactive session useless.
    pub max_queue_delay: Duration,
    /// How far behind schedule a late wake-up may catch up. Default 1 ms (keeps the
    /// pacing error at a driver's timer resolution).
    pub max_lag: Duration,
    /// Floor for the pacing rate, so a controller answering 0 cannot stall the queue.
    /// Default 50 kbit/s (SCReAM v2's minimum pacing rate).
    pub min_rate: Bitrate,
    /// Largest number of packets queued (media + retransmissions); beyond it new media frames
    /// are refused. Default 10 000.
    pub max_packets: usize,
    /// For rate-based controllers, the pacing rate is at least this × the media rate queued
    /// over the last [`INPUT_WINDOW`] (`None`: the controller's rate alone). Default 1.1:
    /// above an encoder's usual overshoot, and under GCC's own 1.5 × pacing factor when a
    /// key frame raises the input rate.
    pub input_rate_floor: Option<f64>,
}

/// The largest burst ([`Pacer::set_burst`]): libwebrtc's `kMaxBurstSize`, kept under what a
/// socket's send buffer holds.
pub const MAX_BURST: DataSize = DataSize::bytes(63_000);

/// The window over which the pacer measures its input rate.
pub const INPUT_WINDOW: Duration = Duration::from_secs(1);
/// Input is counted in buckets this long (at most `INPUT_WINDOW / INPUT_BUCKET` kept).
const INPUT_BUCKET: Duration = Duration::from_millis(10);

impl Default for PacerConfig {
    fn default() -> Self {
        Self {
            max_queue_delay: Duration::from_millis(250),
            max_lag: Duration::from_millis(1),
            min_rate: Bitrate::kbps(50),
            max_packets: 10_000,
            input_rate_floor: Some(1.1),
        }
    }
}

/// Which queue a packet waits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacketClass {
    /// A retransmission (sent first).
    Retransmission,
    /// Media.
    Media,
}

/// A packet waiting in the pacer.
#[derive(Debug, Clone)]
pub struct Queued<T> {
    /// Whatever the caller needs to build the packet when it leaves.
    pub item: T,
    /// Its size on the wire.
    pub size: DataSize,
    /// The frame it belongs to (for whole-frame drops).
    pub frame: u64,
    /// When it was queued.
    pub enqueued: Instant,
}

/// What the pacer releases.
#[derive(Debug, Clone)]
pub enum Release<T> {
    /// A queued packet.
    Packet(PacketClass, Queued<T>),
    /// Send a padding packet of about this size.
    Padding(DataSize),
}

/// Frames dropped by the queue bound or a discard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Dropped {
    /// Whole frames dropped.
    pub frames: u64,
    /// Packets dropped.
    pub packets: u64,
}

#[derive(Debug, Clone, Copy)]
struct Probe {
    rate: Bitrate,
    until: Instant,
    next: Instant,
}

/// The pacer.
#[derive(Debug)]
pub struct Pacer<T> {
    config: PacerConfig,
    media: VecDeque<Queued<T>>,
    rtx: VecDeque<Queued<T>>,
    media_bytes: DataSize,
    rate: Bitrate,
    /// How far ahead of its rate the bucket may run ([`Pacer::set_burst`]).
    burst: Duration,
    next_send: Option<Instant>,
    probe: Option<Probe>,
    padding_size: DataSize,
    window_blocked: bool,
    /// The frame of the last media packet released: while its packets head the media queue
    /// it is being sent and is never dropped.
    leaving: Option<u64>,
    /// Safety reduction applied last, to the floor too (the circuit breaker's and feedback
    /// loss's factor, RFC 8083 / RFC 8888 §5): keeping up never overrides it.
    reduction: f64,
    /// Media bytes queued per [`INPUT_BUCKET`] (bucket start, bytes), the last
    /// [`INPUT_WINDOW`] of them, oldest first (bucket starts only grow).
    input: VecDeque<(Instant, DataSize)>,
    /// Their sum, so the rate is read without summing the window per packet.
    input_bytes: DataSize,
}

impl<T> Pacer<T> {
    /// An empty pacer releasing at `rate`; padding packets are `padding_size` on the wire.
    pub fn new(config: PacerConfig, rate: Bitrate, padding_size: DataSize) -> Self {
        Self {
            config,
            media: VecDeque::new(),
            rtx: VecDeque::new(),
            media_bytes: DataSize::ZERO,
            rate,
            burst: Duration::ZERO,
            next_send: None,
            probe: None,
            padding_size,
            window_blocked: false,
            leaving: None,
            reduction: 1.0,
            input: VecDeque::new(),
            input_bytes: DataSize::ZERO,
        }
    }

    /// Sets the pacing rate.
    pub fn set_rate(&mut self, rate: Bitrate) {
        self.rate = rate;
    }

    /// Lets the bucket run up to `burst` ahead of the rate (at most [`MAX_BURST`] at the
    /// rate): a frame reaching an idle pacer sends that much at once. Default zero.
    pub fn set_burst(&mut self, burst: Duration) {
        self.burst = burst;
    }

    /// How far ahead of its rate the bucket may run now.
    fn lead(&self) -> Duration {
        if self.burst.is_zero() {
            return Duration::ZERO;
        }
        self.rate
            .time_to_send(MAX_BURST)
            .map_or(self.burst, |cap| self.burst.min(cap))
    }

    /// When the bucket lets the next packet go.
    fn due(&self) -> Option<Instant> {
        self.next_send
            .map(|t| t.checked_sub(self.lead()).unwrap_or(t))
    }

    /// Scales the pacing rate, input-rate floor included, by `factor` in `[0, 1]` (a safety
    /// reduction: the circuit breaker's, feedback loss's). Default 1.
    pub fn set_reduction(&mut self, factor: f64) {
        self.reduction = if factor.is_finite() {
            factor.clamp(0.0, 1.0)
        } else {
            1.0
        };
    }

    /// Starts (or replaces) a padding probe.
    pub fn start_probe(&mut self, rate: Bitrate, duration: Duration, now: Instant) {
        if rate == Bitrate::ZERO || duration.is_zero() {
            return;
        }
        self.probe = Some(Probe {
            rate,
            until: now + duration,
            next: now,
        });
    }

    /// Whether `n` more packets fit under [`PacerConfig::max_packets`].
    pub fn has_room(&self, n: usize) -> bool {
        self.media.len() + self.rtx.len() + n <= self.config.max_packets
    }

    /// Queues a packet.
    pub fn enqueue(&mut self, class: PacketClass, q: Queued<T>) {
        match class {
            PacketClass::Media => {
                self.media_bytes += q.size;
                self.count_input(q.size, q.enqueued);
                self.media.push_back(q);
            }
            PacketClass::Retransmission => self.rtx.push_back(q),
        }
    }

    fn count_input(&mut self, size: DataSize, at: Instant) {
        match self.input.back_mut() {
            Some((start, bytes)) if at < *start + INPUT_BUCKET => *bytes += size,
            _ => self.input.push_back((at, size)),
        }
        self.input_bytes += size;
        while let Some(&(start, bytes)) = self.input.front()
            && at.saturating_duration_since(start) > INPUT_WINDOW
        {
            self.input.pop_front();
            self.input_bytes -= bytes;
        }
    }

    /// The media rate queued over the last [`INPUT_WINDOW`] before `now`: the running sum
    /// less the oldest buckets that have left the window since the last packet came in.
    pub fn input_rate(&self, now: Instant) -> Bitrate {
        let expired: u64 = self
            .input
            .iter()
            .take_while(|(start, _)| now.saturating_duration_since(*start) > INPUT_WINDOW)
            .map(|(_, b)| b.as_bytes())
            .sum();
        let bytes = self.input_bytes.as_bytes().saturating_sub(expired);
        Bitrate::from_bps_f64(bytes as f64 * 8.0 / INPUT_WINDOW.as_secs_f64())
    }

    /// Enforces the queue-delay bound; returns what was dropped (frames > 0 means the caller
    /// must request a key frame).
    pub fn enforce_limit(&mut self, now: Instant) -> Dropped {
        while self.rtx.front().is_some_and(|q| {
            now.saturating_duration_since(q.enqueued) > self.config.max_queue_delay
        }) {
            self.rtx.pop_front();
        }
        let over = self.media.get(self.first_droppable()).is_some_and(|q| {
            now.saturating_duration_since(q.enqueued) > self.config.max_queue_delay
        });
        if over {
            self.discard_media()
        } else {
            Dropped::default()
        }
    }

    /// Drops every queued media frame that has not started leaving (SCReAM's `DiscardQueue`,
    /// the queue bound, a full queue). The rest of a frame already partly sent stays queued.
    pub fn discard_media(&mut self) -> Dropped {
        self.window_blocked = false;
        let keep = self.first_droppable();
        let mut dropped = Dropped::default();
        let mut last = None;
        for q in self.media.drain(keep..) {
            if last != Some(q.frame) {
                dropped.frames += 1;
                last = Some(q.frame);
            }
            dropped.packets += 1;
            self.media_bytes -= q.size;
        }
        dropped
    }

    /// Drops every queued media packet, the rest of a frame already partly sent included
    /// (for a key frame, which makes that frame useless). Returns what was dropped and
    /// whether a frame was cut short.
    pub fn discard_all_media(&mut self) -> (Dropped, bool) {
        let cut = self.first_droppable() > 0;
        self.leaving = None;
        (self.discard_media(), cut)
    }

    /// Drops every queued retransmission; how many.
    pub fn discard_retransmissions(&mut self) -> usize {
        let n = self.rtx.len();
        self.rtx.clear();
        n
    }

    /// The index in the media queue of the first packet of a frame that has not started
    /// leaving: packets before it finish a frame already partly sent.
    fn first_droppable(&self) -> usize {
        match self.leaving {
            Some(f) => self.media.iter().take_while(|q| q.frame == f).count(),
            None => 0,
        }
    }

    /// The next packet to send now, if the bucket and the window allow. `allowance` is the
    /// window-based controller's send allowance (`None` for rate-based controllers).
    pub fn poll(&mut self, now: Instant, allowance: Option<DataSize>) -> Option<Release<T>> {
        let fits = |size: DataSize| allowance.is_none_or(|a| a >= size);
        if !self.media.is_empty() || !self.rtx.is_empty() {
            if self.due().is_some_and(|t| t > now) {
                return None;
            }
            let picked = if self.rtx.front().is_some_and(|q| fits(q.size)) {
                self.rtx
                    .pop_front()
                    .map(|q| (PacketClass::Retransmission, q))
            } else if self.rtx.is_empty() && self.media.front().is_some_and(|q| fits(q.size)) {
                self.media.pop_front().map(|q| {
                    self.media_bytes -= q.size;
                    self.leaving = Some(q.frame);
                    (PacketClass::Media, q)
                })
            } else {
                None
            };
            return match picked {
                Some((class, q)) => {
                    // A packet the window held back was not late for the bucket: no
                    // catch-up when the window reopens.
                    let ready = if self.window_blocked { now } else { q.enqueued };
                    self.window_blocked = false;
                    self.charge(q.size, ready, now, allowance.is_none());
                    Some(Release::Packet(class, q))
                }
                None => {
                    self.window_blocked = true;
                    None
                }
            };
        }
        // Padding: its own bucket at the probe rate, on top of media.
        let probe = self.probe.as_mut()?;
        if now >= probe.until {
            self.probe = None;
            return None;
        }
        if probe.next > now {
            return None;
        }
        if !fits(self.padding_size) {
            self.window_blocked = true;
            return None;
        }
        let gap = probe
            .rate
            .time_to_send(self.padding_size)
            .unwrap_or(Duration::MAX);
        let base = probe
            .next
            .max(now.checked_sub(self.config.max_lag).unwrap_or(now));
        probe.next = base.checked_add(gap).unwrap_or(probe.until);
        Some(Release::Padding(self.padding_size))
    }

    /// The padding packet released as [`Release::Padding`] went out as `actual` bytes (payload
    /// padding: a retransmission of a sent packet, larger or smaller than the padding size):
    /// the probe's next slot moves by the difference, so the probe keeps its rate.
    pub fn padding_sent_as(&mut self, actual: DataSize) {
        let Some(probe) = self.probe.as_mut() else {
            return;
        };
        let rate = probe.rate;
        let gap = |s: DataSize| rate.time_to_send(s).unwrap_or(Duration::ZERO);
        if actual > self.padding_size {
            probe.next += gap(actual - self.padding_size);
        } else {
            let less = gap(self.padding_size - actual);
            probe.next = probe.next.checked_sub(less).unwrap_or(probe.next);
        }
    }

    /// Books `size` bytes sent at `now` for a packet queued at `enqueued`; a rate-based
    /// controller's rate is raised to the input-rate floor.
    fn charge(&mut self, size: DataSize, enqueued: Instant, now: Instant, rate_based: bool) {
        let floor = match self.config.input_rate_floor {
            Some(k) if rate_based => self.input_rate(now).mul_f64(k),
            _ => Bitrate::ZERO,
        };
        let rate = self
            .rate
            .max(floor)
            .mul_f64(self.reduction)
            .max(self.config.min_rate);
        let gap = rate.time_to_send(size).unwrap_or(Duration::ZERO);
        // Catch up at most `max_lag`, and not to before the packet existed.
        let earliest = now
            .checked_sub(self.config.max_lag)
            .unwrap_or(now)
            .max(enqueued.min(now));
        let base = match self.next_send {
            Some(t) => t.max(earliest),
            None => now,
        };
        self.next_send = Some(base + gap);
    }

    /// When [`poll`](Self::poll) may next release something. While the window blocks the
    /// head packet there is no timer: only feedback opens the window, and the caller polls
    /// again after feedback.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.window_blocked {
            return None;
        }
        if !self.media.is_empty() || !self.rtx.is_empty() {
            // `None` before the first send: due at once, and the caller polls after enqueue.
            return self.due();
        }
        self.probe.map(|p| p.next.min(p.until))
    }

    /// When the queue-delay bound will next need enforcing (the rest of a frame already
    /// leaving is not bound by it).
    pub fn limit_deadline(&self) -> Option<Instant> {
        let oldest = match (self.media.get(self.first_droppable()), self.rtx.front()) {
            (Some(a), Some(b)) => a.enqueued.min(b.enqueued),
            (Some(a), None) | (None, Some(a)) => a.enqueued,
            (None, None) => return None,
        };
        oldest.checked_add(self.config.max_queue_delay + Duration::from_micros(1))
    }

    /// How long the oldest queued media packet has waited.
    pub fn media_delay(&self, now: Instant) -> Duration {
        self.media
            .front()
            .map(|q| now.saturating_duration_since(q.enqueued))
            .unwrap_or(Duration::ZERO)
    }

    /// The media queue's state, for [`cg_cc::Controller::on_media_queue`].
    pub fn media_queue(&self, now: Instant) -> MediaQueue {
        MediaQueue {
            size: self.media_bytes,
            delay: self.media_delay(now),
        }
    }

    /// Packets waiting (media + retransmissions).
    pub fn len(&self) -> usize {
        self.media.len() + self.rtx.len()
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether a padding probe is running.
    pub fn probing(&self) -> bool {
        self.probe.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(frame: u64, at: Instant) -> Queued<u32> {
        Queued {
            item: frame as u32,
            size: DataSize::bytes(1250),
            frame,
            enqueued: at,
        }
    }

    fn drain_times(p: &mut Pacer<u32>, mut now: Instant, until: Instant) -> Vec<Instant> {
        let mut out = vec![];
        while now < until {
            while let Some(Release::Packet(..)) = p.poll(now, None) {
                out.push(now);
            }
            match p.poll_timeout() {
                Some(t) if t > now => now = t,
                Some(_) => now += Duration::from_micros(1),
                None => break,
            }
        }
        out
    }

    /// 30 fps frames of 20 × 1000 B (4.8 Mbit/s) through a pacer set to 4.5 Mbit/s for 10 s;
    /// the media queue's delay at the end and the largest seen once the input window is full.
    fn backlog_after_10s(config: PacerConfig, allowance: Option<DataSize>) -> (Duration, Duration) {
        let t0 = Instant::now();
        let mut p = Pacer::new(config, Bitrate::kbps(4_500), DataSize::bytes(255));
        let frame = Duration::from_secs(1) / 30;
        let (mut now, mut worst) = (t0, Duration::ZERO);
        for f in 0..300u64 {
            for _ in 0..20 {
                p.enqueue(
                    PacketClass::Media,
                    Queued {
                        item: 0,
                        size: DataSize::bytes(1000),
                        frame: f,
                        enqueued: now,
                    },
                );
            }
            let next_frame = t0 + frame * (f as u32 + 1);
            while now < next_frame {
                while let Some(Release::Packet(..)) = p.poll(now, allowance) {}
                if now >= t0 + 2 * INPUT_WINDOW {
                    worst = worst.max(p.media_delay(now));
                }
                now = p.poll_timeout().map_or(next_frame, |t| {
                    t.max(now + Duration::from_micros(1)).min(next_frame)
                });
            }
        }
        (p.media_delay(now), worst)
    }

    #[test]
    fn a_rate_based_pacer_keeps_up_with_input_faster_than_its_rate() {
        // The controller's rate is below what the encoder gives: no backlog builds.
        let (end, worst) = backlog_after_10s(PacerConfig::default(), None);
        assert!(end <= Duration::from_millis(40), "backlog {end:?}");
        assert!(
            worst <= Duration::from_millis(50),
            "worst backlog {worst:?}"
        );
        // Without the floor it grows by ~6 % of the elapsed time (the difference of rates).
        let off = PacerConfig {
            input_rate_floor: None,
            max_queue_delay: Duration::from_secs(5),
            ..PacerConfig::default()
        };
        let (end, _) = backlog_after_10s(off, None);
        assert!(end >= Duration::from_millis(400), "backlog {end:?}");
        // A window-based controller's pacing rate is taken as given.
        let window = PacerConfig {
            max_queue_delay: Duration::from_secs(5),
            ..PacerConfig::default()
        };
        let (end, _) = backlog_after_10s(window, Some(DataSize::bytes(1 << 30)));
        assert!(end >= Duration::from_millis(400), "backlog {end:?}");
    }

    /// The input rate covers the last second: 1250 B every 10 ms is 1 Mbit/s, read the same
    /// whenever it is read, and it falls as the buckets leave the window with no new input.
    #[test]
    fn the_input_rate_is_the_last_second_s_media() {
        let t0 = Instant::now();
        let mut p = Pacer::new(
            PacerConfig::default(),
            Bitrate::mbps(1),
            DataSize::bytes(255),
        );
        let ms = |n: u64| t0 + Duration::from_millis(n);
        for i in 0..300u64 {
            p.enqueue(PacketClass::Media, q(i, ms(10 * i)));
        }
        assert_eq!(p.input_rate(ms(2_995)), Bitrate::mbps(1));
        assert_eq!(p.input_rate(ms(3_495)), Bitrate::kbps(500));
        assert_eq!(p.input_rate(ms(4_000)), Bitrate::ZERO);
    }

    #[test]
    fn releases_at_the_pacing_rate() {
        let t0 = Instant::now();
        let mut p = Pacer::new(
            PacerConfig::default(),
            Bitrate::mbps(1),
            DataSize::bytes(255),
        );
        for i in 0..10 {
            p.enqueue(PacketClass::Media, q(i, t0));
        }
        let times = drain_times(&mut p, t0, t0 + Duration::from_secs(1));
        assert_eq!(times.len(), 10);
        // 1250 B at 1 Mbit/s = 10 ms apart
        for w in times.windows(2) {
            assert_eq!(w[1] - w[0], Duration::from_millis(10));
        }
    }

    /// With a burst allowed, the head of a frame reaching an idle pacer leaves at once (the
    /// burst's worth at the rate) and the rest is paced; idle time adds nothing to the next
    /// burst; a burst is at most `MAX_BURST`.
    #[test]
    fn a_burst_sends_the_head_of_a_frame_at_once_and_no_more() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut p = Pacer::new(
            PacerConfig::default(),
            Bitrate::mbps(10),
            DataSize::bytes(255),
        );
        // 10 ms at 10 Mbit/s: ten packets of 1250 B ahead of the bucket, the first besides.
        p.set_burst(ms(10));
        for i in 0..30 {
            p.enqueue(PacketClass::Media, q(i, t0));
        }
        let times = drain_times(&mut p, t0, t0 + ms(1_000));
        assert_eq!(times.len(), 30);
        assert_eq!(times.iter().filter(|&&t| t == t0).count(), 11);
        for w in times[11..].windows(2) {
            assert_eq!(w[1] - w[0], ms(1));
        }
        // Idle for a second: the next frame gets the same burst, not a second's credit.
        let t1 = t0 + ms(2_000);
        for i in 30..60 {
            p.enqueue(PacketClass::Media, q(i, t1));
        }
        let times = drain_times(&mut p, t1, t1 + ms(1_000));
        assert_eq!(times.iter().filter(|&&t| t == t1).count(), 11);
        // At 100 Mbit/s 40 ms would be 500 kB: capped at 63 kB, 50 packets ahead.
        let t2 = t1 + ms(2_000);
        p.set_rate(Bitrate::mbps(100));
        p.set_burst(ms(40));
        for i in 60..200 {
            p.enqueue(PacketClass::Media, q(i, t2));
        }
        let times = drain_times(&mut p, t2, t2 + ms(1_000));
        assert_eq!(times.iter().filter(|&&t| t == t2).count(), 51);
        // No burst: one packet at once, as before.
        let t3 = t2 + ms(2_000);
        p.set_burst(Duration::ZERO);
        for i in 200..210 {
            p.enqueue(PacketClass::Media, q(i, t3));
        }
        let times = drain_times(&mut p, t3, t3 + ms(1_000));
        assert_eq!(times.iter().filter(|&&t| t == t3).count(), 1);
    }

    #[test]
    fn a_frame_reaching_an_idle_pacer_is_not_sent_as_a_burst() {
        let t0 = Instant::now();
        let mut p = Pacer::new(
            PacerConfig::default(),
            Bitrate::mbps(10),
            DataSize::bytes(255),
        );
        p.enqueue(PacketClass::Media, q(0, t0));
        assert_eq!(
            drain_times(&mut p, t0, t0 + Duration::from_secs(1)).len(),
            1
        );
        // Idle for 100 ms, then a 4-packet frame: 1250 B at 10 Mbit/s = 1 ms apart, even
        // though the bucket has been idle far longer than `max_lag`.
        let t1 = t0 + Duration::from_millis(100);
        for _ in 0..4 {
            p.enqueue(PacketClass::Media, q(1, t1));
        }
        let times = drain_times(&mut p, t1, t1 + Duration::from_secs(1));
        assert_eq!(times.len(), 4);
        assert_eq!(times[0], t1);
        for w in times.windows(2) {
            assert_eq!(w[1] - w[0], Duration::from_millis(1));
        }
    }

    #[test]
    fn a_late_wake_up_catches_up_at_most_max_lag() {
        let t0 = Instant::now();
        let mut p = Pacer::new(
            PacerConfig::default(),
            Bitrate::mbps(10),
            DataSize::bytes(255),
        );
        for _ in 0..10 {
            p.enqueue(PacketClass::Media, q(0, t0));
        }
        assert!(matches!(p.poll(t0, None), Some(Release::Packet(..))));
        // The next was due at t0 + 1 ms; waking 5 ms late releases 2 packets (the one due,
        // plus 1 ms of catch-up), then the bucket paces again.
        let late = t0 + Duration::from_millis(6);
        let mut n = 0;
        while let Some(Release::Packet(..)) = p.poll(late, None) {
            n += 1;
        }
        assert_eq!(n, 2);
        assert_eq!(p.poll_timeout(), Some(late + Duration::from_millis(1)));
    }

    #[test]
    fn retransmissions_go_first() {
        let t0 = Instant::now();
        let mut p = Pacer::new(
            PacerConfig::default(),
            Bitrate::mbps(100),
            DataSize::bytes(255),
        );
        p.enqueue(PacketClass::Media, q(1, t0));
        p.enqueue(PacketClass::Retransmission, q(0, t0));
        match p.poll(t0, None) {
            Some(Release::Packet(PacketClass::Retransmission, _)) => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn window_blocks_until_allowance_covers_the_packet() {
        let t0 = Instant::now();
        let mut p = Pacer::new(
            PacerConfig::default(),
            Bitrate::mbps(100),
            DataSize::bytes(255),
        );
        p.enqueue(PacketClass::Media, q(1, t0));
        assert!(p.poll(t0, Some(DataSize::bytes(1000))).is_none());
        assert!(p.poll(t0, Some(DataSize::bytes(1250))).is_some());
    }

    #[test]
    fn a_reopened_window_does_not_release_a_burst() {
        let t0 = Instant::now();
        let mut p = Pacer::new(
            PacerConfig::default(),
            Bitrate::mbps(10),
            DataSize::bytes(255),
        );
        for _ in 0..4 {
            p.enqueue(PacketClass::Media, q(1, t0));
        }
        let open = Some(DataSize::bytes(100_000));
        assert!(p.poll(t0, open).is_some());
        let due = t0 + Duration::from_millis(1);
        assert!(p.poll(due, Some(DataSize::ZERO)).is_none());
        assert_eq!(p.poll_timeout(), None);
        // Feedback reopens the window 20 ms later: packets leave 1 ms apart from then on.
        let t1 = t0 + Duration::from_millis(20);
        assert!(p.poll(t1, open).is_some());
        assert!(p.poll(t1, open).is_none());
        assert_eq!(p.poll_timeout(), Some(t1 + Duration::from_millis(1)));
    }

    #[test]
    fn queue_bound_drops_whole_frames_and_reports_them() {
        let t0 = Instant::now();
        let mut p = Pacer::new(
            PacerConfig::default(),
            Bitrate::kbps(100),
            DataSize::bytes(255),
        );
        for f in 0..3 {
            for _ in 0..4 {
                p.enqueue(PacketClass::Media, q(f, t0));
            }
        }
        assert_eq!(
            p.enforce_limit(t0 + Duration::from_millis(100)),
            Dropped::default()
        );
        let d = p.enforce_limit(t0 + Duration::from_millis(300));
        assert_eq!(
            d,
            Dropped {
                frames: 3,
                packets: 12
            }
        );
        assert!(p.is_empty());
        assert_eq!(p.media_queue(t0).size, DataSize::ZERO);
    }

    #[test]
    fn a_key_frame_discard_cuts_the_frame_leaving_short() {
        let t0 = Instant::now();
        let mut p = Pacer::new(
            PacerConfig::default(),
            Bitrate::mbps(1),
            DataSize::bytes(255),
        );
        for f in 1..=2 {
            for _ in 0..4 {
                p.enqueue(PacketClass::Media, q(f, t0));
            }
        }
        assert_eq!(
            p.discard_all_media(),
            (
                Dropped {
                    frames: 2,
                    packets: 8
                },
                false
            )
        );
        for _ in 0..4 {
            p.enqueue(PacketClass::Media, q(3, t0));
        }
        assert!(matches!(p.poll(t0, None), Some(Release::Packet(..))));
        assert_eq!(
            p.discard_all_media(),
            (
                Dropped {
                    frames: 1,
                    packets: 3
                },
                true
            ),
            "the rest of frame 3 goes too"
        );
        assert!(p.is_empty());
        assert_eq!(p.media_queue(t0).size, DataSize::ZERO);
    }

    #[test]
    fn a_discard_finishes_the_frame_already_leaving() {
        let t0 = Instant::now();
        let mut p = Pacer::new(
            PacerConfig::default(),
            Bitrate::mbps(1),
            DataSize::bytes(255),
        );
        for f in 1..=3 {
            for _ in 0..4 {
                p.enqueue(PacketClass::Media, q(f, t0));
            }
        }
        assert!(matches!(p.poll(t0, None), Some(Release::Packet(..))));
        assert_eq!(
            p.discard_media(),
            Dropped {
                frames: 2,
                packets: 8
            }
        );
        assert_eq!(p.media_queue(t0).size, DataSize::bytes(3 * 1250));
        let left: Vec<u32> =
            std::iter::from_fn(|| match p.poll(t0 + Duration::from_secs(1), None) {
                Some(Release::Packet(_, q)) => Some(q.item),
                _ => None,
            })
            .collect();
        assert_eq!(left, vec![1]);
        let mut rest = vec![];
        let mut now = t0 + Duration::from_secs(1);
        while let Some(t) = p.poll_timeout() {
            now = now.max(t);
            if let Some(Release::Packet(_, q)) = p.poll(now, None) {
                rest.push(q.item);
            }
        }
        assert_eq!(
            rest,
            vec![1, 1],
            "the rest of frame 1, nothing of frames 2 and 3"
        );
        // With the frame finished, the next discard takes everything.
        p.enqueue(PacketClass::Media, q(4, now));
        assert_eq!(
            p.discard_media(),
            Dropped {
                frames: 1,
                packets: 1
            }
        );
        assert!(p.is_empty());
    }

    #[test]
    fn the_queue_bound_spares_the_frame_leaving_and_sets_no_past_deadline() {
        let t0 = Instant::now();
        // 1250 B at 100 kbit/s: 100 ms apart, so frame 1 takes 400 ms to leave.
        let mut p = Pacer::new(
            PacerConfig::default(),
            Bitrate::kbps(100),
            DataSize::bytes(255),
        );
        for _ in 0..4 {
            p.enqueue(PacketClass::Media, q(1, t0));
        }
        assert!(p.poll(t0, None).is_some());
        let t1 = t0 + Duration::from_millis(50);
        p.enqueue(PacketClass::Media, q(2, t1));
        // Frame 2's age sets the deadline, not frame 1's.
        let bound = PacerConfig::default().max_queue_delay;
        assert_eq!(
            p.limit_deadline(),
            Some(t1 + bound + Duration::from_micros(1))
        );
        assert_eq!(
            p.enforce_limit(t0 + Duration::from_millis(299)),
            Dropped::default()
        );
        assert_eq!(
            p.enforce_limit(t1 + bound + Duration::from_micros(1)),
            Dropped {
                frames: 1,
                packets: 1
            }
        );
        // Frame 1's remaining packets are over the bound but stay, and raise no deadline
        // (a deadline in the past would spin the driver).
        assert_eq!(p.len(), 3);
        assert_eq!(p.limit_deadline(), None);
        assert_eq!(
            p.enforce_limit(t0 + Duration::from_secs(5)),
            Dropped::default()
        );
    }

    #[test]
    fn padding_only_while_probing_and_queue_empty() {
        let t0 = Instant::now();
        let mut p: Pacer<u32> = Pacer::new(
            PacerConfig::default(),
            Bitrate::mbps(1),
            DataSize::bytes(250),
        );
        assert!(p.poll(t0, None).is_none());
        p.start_probe(Bitrate::mbps(2), Duration::from_millis(100), t0);
        let mut now = t0;
        let mut pads = 0;
        while let Some(t) = p.poll_timeout() {
            now = now.max(t);
            if let Some(Release::Padding(_)) = p.poll(now, None) {
                pads += 1;
            } else if !p.probing() {
                break;
            }
            if now > t0 + Duration::from_secs(1) {
                break;
            }
        }
        // 2 Mbit/s × 100 ms = 25 kB = 100 packets of 250 B
        assert!((99..=101).contains(&pads), "{pads}");
    }
}
