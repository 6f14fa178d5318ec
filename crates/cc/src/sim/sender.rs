//! The simulated media sender: encoder model → packetiser → pacer, driven by any
//! [`Controller`].

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use cg_link::sim::{Delivered, Endpoint, Transmit};
use cg_types::{Bitrate, DataSize, Ecn};

use crate::controller::{
    Controller, ControllerEvent, ControllerStats, Feedback, MediaQueue, PacketKind, SentPacket,
};
use crate::encoder_target::{EncoderTarget, EncoderTargetConfig};
use crate::sim::encoder::{EncoderConfig, SyntheticEncoder};
use crate::sim::packet::{MediaPacket, SimPacket};

/// Sender parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct SenderConfig {
    /// The encoder model.
    pub encoder: EncoderConfig,
    /// Largest media packet. Default 1200 bytes.
    pub max_packet: DataSize,
    /// ECN code point of media packets. Default Not-ECT (ECT(1) for L4S controllers).
    pub ecn: Ecn,
    /// Frames whose packets waited longer than this in the pacer are dropped and a key
    /// frame is requested (a bounded sender queue). Default 2 s.
    pub max_queue_delay: Duration,
    /// Period of the samples kept in [`SimSender::samples`]. Default 100 ms.
    pub sample_interval: Duration,
    /// Size of a padding packet sent for a probe. Default 280 bytes: cg-rtp's 255 bytes of
    /// RTP padding with the RTP header and extensions.
    pub padding_size: DataSize,
    /// When the controller's target reaches the encoder: the shipping sender's policy
    /// (cg-rtp's `SenderEvent::TargetBitrate`). Default: every change.
    pub encoder_target: EncoderTargetConfig,
}

impl Default for SenderConfig {
    fn default() -> Self {
        SenderConfig {
            encoder: EncoderConfig::default(),
            max_packet: DataSize::bytes(1200),
            ecn: Ecn::NotEct,
            max_queue_delay: Duration::from_secs(2),
            sample_interval: Duration::from_millis(100),
            padding_size: DataSize::bytes(280),
            encoder_target: EncoderTargetConfig::default(),
        }
    }
}

/// A periodic sample of the sender's state.
#[derive(Debug, Clone, PartialEq)]
pub struct SenderSample {
    /// When.
    pub time: Instant,
    /// The controller's stats then.
    pub stats: ControllerStats,
    /// The encoder's current rate.
    pub encoder_rate: Bitrate,
    /// Bytes waiting in the pacer.
    pub queue: DataSize,
}

#[derive(Debug, Clone, Copy)]
struct Queued {
    frame: u64,
    size: DataSize,
    marker: bool,
    enqueued: Instant,
}

/// Ring of recent send times for RTT computation.
const SENT_RING: usize = 1 << 12;

/// The simulated sender: wraps any `Box<dyn Controller>` with the encoder, a packetiser
/// (≤ 1200-byte packets) and a pacer. The pacer releases packets at
/// [`Controller::pacing_rate`]; if the controller returns
/// [`send_allowance`](crate::Controller::send_allowance) `Some(bytes)`, a packet also waits
/// until it fits (window-based controllers such as SCReAM). It reports every packet through
/// `on_packet_sent` (and the last packet of each frame through `on_frame_sent`), the
/// media queue through `on_media_queue`, passes feedback to `on_feedback` (with an RTT
/// sample computed from the receiver's echo), and obeys
/// [`ControllerEvent`](crate::ControllerEvent)s (`DiscardQueue` clears the queue and asks for
/// a key frame; `RequestKeyFrame`; `Probe` sends padding packets of
/// [`SenderConfig::padding_size`] at the probe's rate while no media waits, as cg-rtp's
/// pacer does; the receiver reports them and feeds them, with their send times, to a REMB
/// estimator as cg-rtp's receiver does). The encoder target is re-read
/// at every frame. [`SimSender::samples`] keeps the controller's
/// [`ControllerStats`](crate::ControllerStats) every 100 ms for plots and assertions.
#[derive(Debug)]
pub struct SimSender {
    cfg: SenderConfig,
    controller: Box<dyn Controller>,
    encoder: SyntheticEncoder,
    /// The rate last given to the encoder (the shipping sender's threshold).
    target: EncoderTarget,
    queue: VecDeque<Queued>,
    queue_bytes: DataSize,
    next_send: Instant,
    next_seq: u64,
    sent: Box<[(u64, Instant)]>,
    samples: Vec<SenderSample>,
    next_sample: Instant,
    sent_bytes: DataSize,
    dropped_frames: u64,
    probe: Option<Probe>,
    padding_sent: u64,
    last_frame: u64,
}

/// A padding probe: its own bucket at `rate`, on top of media, until `until` (as cg-rtp's
/// pacer: padding only while no media waits, catching up at most 1 ms after a late wake-up).
#[derive(Debug, Clone, Copy)]
struct Probe {
    rate: Bitrate,
    until: Instant,
    next: Instant,
}

/// How far a late padding bucket may catch up (cg-rtp's `PacerConfig::max_lag`).
const PADDING_MAX_LAG: Duration = Duration::from_millis(1);

impl SimSender {
    /// A sender starting at `now`, encoding at the controller's initial target.
    pub fn new(cfg: SenderConfig, controller: Box<dyn Controller>, now: Instant) -> Self {
        let encoder = SyntheticEncoder::new(cfg.encoder.clone(), controller.target_bitrate(), now);
        SimSender {
            target: cfg.encoder_target.start(controller.target_bitrate()),
            controller,
            encoder,
            queue: VecDeque::new(),
            queue_bytes: DataSize::ZERO,
            next_send: now,
            next_seq: 0,
            sent: vec![(u64::MAX, now); SENT_RING].into_boxed_slice(),
            samples: Vec::new(),
            next_sample: now,
            sent_bytes: DataSize::ZERO,
            dropped_frames: 0,
            probe: None,
            padding_sent: 0,
            last_frame: 0,
            cfg,
        }
    }

    /// The controller.
    pub fn controller(&self) -> &dyn Controller {
        self.controller.as_ref()
    }

    /// Samples taken every `sample_interval`.
    pub fn samples(&self) -> &[SenderSample] {
        &self.samples
    }

    /// Media bytes sent so far.
    pub fn sent_bytes(&self) -> DataSize {
        self.sent_bytes
    }

    /// Padding packets sent for probes.
    pub fn padding_sent(&self) -> u64 {
        self.padding_sent
    }

    /// Frames dropped from the pacer queue (older than `max_queue_delay`, or discarded on the
    /// controller's request).
    pub fn dropped_frames(&self) -> u64 {
        self.dropped_frames
    }

    fn media_queue(&self, now: Instant) -> MediaQueue {
        MediaQueue {
            size: self.queue_bytes,
            delay: self.queue.front().map_or(Duration::ZERO, |q| {
                now.saturating_duration_since(q.enqueued)
            }),
        }
    }

    fn drain_events_at(&mut self, now: Instant) {
        while let Some(e) = self.controller.poll_event() {
            self.handle_event(e, now);
        }
    }

    fn handle_event(&mut self, e: ControllerEvent, now: Instant) {
        match e {
            ControllerEvent::Probe { rate, duration } => {
                if rate > Bitrate::ZERO && !duration.is_zero() {
                    self.probe = Some(Probe {
                        rate,
                        until: now + duration,
                        next: now,
                    });
                }
            }
            ControllerEvent::DiscardQueue => {
                let frames: std::collections::HashSet<u64> =
                    self.queue.iter().map(|q| q.frame).collect();
                self.dropped_frames += frames.len() as u64;
                self.queue.clear();
                self.queue_bytes = DataSize::ZERO;
                self.encoder.request_key_frame();
            }
            ControllerEvent::RequestKeyFrame => self.encoder.request_key_frame(),
        }
    }

    /// A padding packet, if a probe is running, no media waits and its bucket allows.
    fn poll_padding(&mut self, now: Instant) -> Option<Transmit<SimPacket>> {
        let p = self.probe.as_mut()?;
        if now >= p.until {
            self.probe = None;
            return None;
        }
        if p.next > now || !self.queue.is_empty() {
            return None;
        }
        let size = self.cfg.padding_size.max(DataSize::bytes(1));
        let gap = p.rate.time_to_send(size).unwrap_or(Duration::MAX);
        let base = p.next.max(now.checked_sub(PADDING_MAX_LAG).unwrap_or(now));
        p.next = base.checked_add(gap).unwrap_or(p.until);
        let seq = self.next_seq;
        self.next_seq += 1;
        self.sent[seq as usize % SENT_RING] = (seq, now);
        self.padding_sent += 1;
        self.controller.on_packet_sent(&SentPacket {
            seq,
            size,
            send_time: now,
            ecn: self.cfg.ecn,
            kind: PacketKind::Padding,
        });
        self.drain_events_at(now);
        Some(Transmit {
            size,
            ecn: self.cfg.ecn,
            payload: SimPacket::Media(MediaPacket {
                seq,
                frame: self.last_frame,
                send_time: now,
                size,
                marker: false,
                padding: true,
            }),
        })
    }

    fn produce_frames(&mut self, now: Instant) {
        while let Some(frame) = self.encoder.poll_frame(now) {
            let mut left = frame.size.as_bytes().max(1);
            let max = self.cfg.max_packet.as_bytes().max(1);
            let n = left.div_ceil(max);
            let per = left.div_ceil(n);
            while left > 0 {
                let size = per.min(left);
                left -= size;
                self.queue.push_back(Queued {
                    frame: frame.id,
                    size: DataSize::bytes(size),
                    marker: left == 0,
                    enqueued: now,
                });
                self.queue_bytes += DataSize::bytes(size);
            }
            if let Some(rate) = self.target.update(self.controller.target_bitrate()) {
                self.encoder.set_target(rate, now);
            }
        }
        // Bound the queue: drop whole frames that waited too long.
        while let Some(front) = self.queue.front() {
            if now.saturating_duration_since(front.enqueued) <= self.cfg.max_queue_delay {
                break;
            }
            let frame = front.frame;
            while self.queue.front().is_some_and(|q| q.frame == frame) {
                if let Some(q) = self.queue.pop_front() {
                    self.queue_bytes -= q.size;
                }
            }
            self.dropped_frames += 1;
            self.encoder.request_key_frame();
        }
        let mq = self.media_queue(now);
        self.controller.on_media_queue(mq, now);
        self.drain_events_at(now);
    }

    fn sample(&mut self, now: Instant) {
        if now < self.next_sample {
            return;
        }
        self.samples.push(SenderSample {
            time: now,
            stats: self.controller.stats(),
            encoder_rate: self.encoder.rate(),
            queue: self.queue_bytes,
        });
        self.next_sample = now + self.cfg.sample_interval;
    }

    fn window_blocks(&self, size: DataSize) -> bool {
        self.controller.send_allowance().is_some_and(|a| a < size)
    }
}

impl Endpoint for SimSender {
    type Payload = SimPacket;

    fn handle_packet(&mut self, packet: Delivered<SimPacket>, now: Instant) {
        let SimPacket::Feedback(msg) = packet.payload else {
            return;
        };
        let rtt = msg.echo.and_then(|(seq, hold)| {
            let (s, sent) = self.sent[seq as usize % SENT_RING];
            (s == seq).then(|| now.saturating_duration_since(sent).saturating_sub(hold))
        });
        let fb = Feedback {
            packets: &msg.packets,
            remb: msg.remb,
            loss: msg.loss,
            rtt,
            report_time: msg.report_time,
        };
        self.controller.on_feedback(&fb, now);
        self.drain_events_at(now);
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit<SimPacket>> {
        self.produce_frames(now);
        self.sample(now);
        let Some(&head) = self.queue.front() else {
            return self.poll_padding(now);
        };
        if now < self.next_send || self.window_blocks(head.size) {
            return None;
        }
        self.last_frame = head.frame;
        self.queue.pop_front();
        self.queue_bytes -= head.size;
        let seq = self.next_seq;
        self.next_seq += 1;
        let rate = self.controller.pacing_rate().max(Bitrate::kbps(10));
        let tx = rate
            .time_to_send(head.size)
            .unwrap_or(Duration::from_millis(10));
        self.next_send = self.next_send.max(now) + tx;
        self.sent[seq as usize % SENT_RING] = (seq, now);
        self.sent_bytes += head.size;
        self.controller.on_packet_sent(&SentPacket {
            seq,
            size: head.size,
            send_time: now,
            ecn: self.cfg.ecn,
            kind: PacketKind::Media,
        });
        if head.marker {
            self.controller.on_frame_sent(seq);
        }
        let mq = self.media_queue(now);
        self.controller.on_media_queue(mq, now);
        self.drain_events_at(now);
        Some(Transmit {
            size: head.size,
            ecn: self.cfg.ecn,
            payload: SimPacket::Media(MediaPacket {
                seq,
                frame: head.frame,
                send_time: now,
                size: head.size,
                marker: head.marker,
                padding: false,
            }),
        })
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let mut t = self.encoder.next_frame_time().min(self.next_sample);
        if let Some(head) = self.queue.front()
            && !self.window_blocks(head.size)
        {
            t = t.min(self.next_send);
        }
        if let Some(c) = self.controller.poll_timeout() {
            t = t.min(c);
        }
        if let Some(p) = self.probe
            && self.queue.is_empty()
        {
            t = t.min(p.next.min(p.until));
        }
        Some(t)
    }

    fn handle_timeout(&mut self, now: Instant) {
        if self.controller.poll_timeout().is_some_and(|t| t <= now) {
            self.controller.handle_timeout(now);
        }
        self.drain_events_at(now);
        self.produce_frames(now);
        self.sample(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::FeedbackKind;

    /// A fixed-rate controller with an optional window.
    #[derive(Debug)]
    struct Fixed {
        rate: Bitrate,
        window: Option<DataSize>,
        sent: u64,
        frames: u64,
    }

    impl Controller for Fixed {
        fn on_packet_sent(&mut self, _p: &SentPacket) {
            self.sent += 1;
        }
        fn on_frame_sent(&mut self, _last_seq: u64) {
            self.frames += 1;
        }
        fn on_feedback(&mut self, _f: &Feedback<'_>, _now: Instant) {}
        fn target_bitrate(&self) -> Bitrate {
            self.rate
        }
        fn pacing_rate(&self) -> Bitrate {
            self.rate.mul_f64(1.5)
        }
        fn send_allowance(&self) -> Option<DataSize> {
            self.window
        }
        fn feedback_kind(&self) -> FeedbackKind {
            FeedbackKind::TransportWideCc
        }
        fn stats(&self) -> ControllerStats {
            ControllerStats::default()
        }
    }

    fn drive(tx: &mut SimSender, t0: Instant, until: Duration) -> Vec<(Instant, DataSize)> {
        let mut out = Vec::new();
        let mut now = t0;
        while now < t0 + until {
            tx.handle_timeout(now);
            while let Some(t) = tx.poll_transmit(now) {
                out.push((now, t.size));
            }
            now = tx
                .poll_timeout()
                .expect("the sender always has a timer")
                .max(now + Duration::from_micros(1));
        }
        out
    }

    #[test]
    fn sends_the_encoder_rate_paced_at_the_pacing_rate() {
        let t0 = Instant::now();
        let c = Fixed {
            rate: Bitrate::mbps(1),
            window: None,
            sent: 0,
            frames: 0,
        };
        let mut tx = SimSender::new(SenderConfig::default(), Box::new(c), t0);
        let out = drive(&mut tx, t0, Duration::from_secs(20));
        let bytes: u64 = out.iter().map(|(_, s)| s.as_bytes()).sum();
        let rate = bytes as f64 * 8.0 / 20.0;
        assert!((rate / 1e6 - 1.0).abs() < 0.06, "rate {rate}");
        // No two packets closer than their transmission time at 1.5 Mbit/s.
        for w in out.windows(2) {
            let gap = w[1].0 - w[0].0;
            let min = Bitrate::kbps(1500).time_to_send(w[0].1).unwrap();
            assert!(
                gap + Duration::from_micros(1) >= min,
                "gap {gap:?} < {min:?}"
            );
        }
        assert!(out.iter().all(|(_, s)| *s <= DataSize::bytes(1200)));
    }

    /// Asks for one probe at start and counts what it is told was sent.
    #[derive(Debug, Default)]
    struct Prober {
        asked: bool,
        padding: u64,
        padding_bytes: u64,
    }

    impl Controller for Prober {
        fn on_packet_sent(&mut self, p: &SentPacket) {
            if p.kind == PacketKind::Padding {
                self.padding += 1;
                self.padding_bytes += p.size.as_bytes();
            }
        }
        fn on_feedback(&mut self, _f: &Feedback<'_>, _now: Instant) {}
        fn poll_event(&mut self) -> Option<ControllerEvent> {
            if self.asked {
                return None;
            }
            self.asked = true;
            Some(ControllerEvent::Probe {
                rate: Bitrate::mbps(2),
                duration: Duration::from_millis(100),
            })
        }
        fn target_bitrate(&self) -> Bitrate {
            Bitrate::kbps(100)
        }
        fn pacing_rate(&self) -> Bitrate {
            Bitrate::mbps(2)
        }
        fn feedback_kind(&self) -> FeedbackKind {
            FeedbackKind::TransportWideCc
        }
        fn stats(&self) -> ControllerStats {
            ControllerStats {
                extra: vec![
                    ("padding", self.padding as f64),
                    ("padding_bytes", self.padding_bytes as f64),
                ],
                ..ControllerStats::default()
            }
        }
    }

    #[test]
    fn a_probe_sends_padding_at_its_rate_while_no_media_waits() {
        let t0 = Instant::now();
        let mut tx = SimSender::new(SenderConfig::default(), Box::<Prober>::default(), t0);
        let out = drive(&mut tx, t0, Duration::from_secs(1));
        let n = tx.padding_sent();
        let told = tx.controller().stats();
        assert_eq!(
            (
                told.extra_value("padding"),
                told.extra_value("padding_bytes")
            ),
            (Some(n as f64), Some(280.0 * n as f64)),
            "the controller is told of each padding packet, as padding"
        );
        // 2 Mbit/s for 100 ms is 25 kB, 89 packets of 280 bytes, less the time the first
        // frames (about 2.2 kB, paced at 2 Mbit/s) keep the pacer busy.
        assert!((60..=90).contains(&n), "{n} padding packets");
        let padding: Vec<_> = out
            .iter()
            .filter(|(_, s)| *s == DataSize::bytes(280))
            .collect();
        assert!(padding.len() as u64 >= n);
        assert!(
            padding
                .iter()
                .all(|(t, _)| *t < t0 + Duration::from_millis(100)),
            "padding only while the probe lasts"
        );
    }

    #[test]
    fn a_closed_window_holds_packets_back() {
        let t0 = Instant::now();
        let c = Fixed {
            rate: Bitrate::mbps(1),
            window: Some(DataSize::ZERO),
            sent: 0,
            frames: 0,
        };
        let mut tx = SimSender::new(SenderConfig::default(), Box::new(c), t0);
        let out = drive(&mut tx, t0, Duration::from_secs(1));
        assert!(out.is_empty());
        assert!(
            tx.samples()
                .last()
                .is_some_and(|s| s.queue > DataSize::ZERO)
        );
    }
}
