//! Test support: a trivial controller and a two-way wire with fixed delays and a drop filter,
//! driven in simulated time (jumping to the next wake-up).

#![allow(dead_code)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use cg_cc::{
    Controller, ControllerEvent, ControllerStats, Feedback, FeedbackKind, PacketResult,
    ReceiveSideEstimator, ReceivedPacket, SentPacket,
};
use cg_rtp::{
    Codec, EncodedFrame, ReceivedFrame, ReceiverEvent, ReceiverSession, SenderEvent, SenderSession,
    Transmit, TransmitKind,
};
use cg_types::{Bitrate, DataSize, Ecn};

/// What the fixed-rate controller saw.
#[derive(Debug, Default)]
pub struct Seen {
    pub sent: Vec<SentPacket>,
    pub results: Vec<PacketResult>,
    pub remb: Vec<Bitrate>,
    pub loss: Vec<f64>,
    pub rtt: Vec<Duration>,
    pub queues: Vec<cg_cc::MediaQueue>,
    /// Events for the controller to raise (after its own `events`), pushed by a test.
    pub raise: VecDeque<ControllerEvent>,
}

/// A controller with a fixed rate that records everything it is told.
#[derive(Debug)]
pub struct Fixed {
    pub rate: Bitrate,
    pub kind: FeedbackKind,
    pub seen: Arc<Mutex<Seen>>,
    pub events: VecDeque<ControllerEvent>,
    pub window: Option<DataSize>,
}

impl Fixed {
    pub fn new(rate: Bitrate, kind: FeedbackKind) -> (Box<Self>, Arc<Mutex<Seen>>) {
        let seen = Arc::new(Mutex::new(Seen::default()));
        (
            Box::new(Self {
                rate,
                kind,
                seen: seen.clone(),
                events: VecDeque::new(),
                window: None,
            }),
            seen,
        )
    }
}

impl Controller for Fixed {
    fn on_packet_sent(&mut self, p: &SentPacket) {
        self.seen.lock().unwrap().sent.push(*p);
    }
    fn on_feedback(&mut self, f: &Feedback<'_>, _now: Instant) {
        let mut s = self.seen.lock().unwrap();
        s.results.extend_from_slice(f.packets);
        s.remb.extend(f.remb);
        s.loss.extend(f.loss.map(|l| l.fraction_lost));
        s.rtt.extend(f.rtt);
    }
    fn on_media_queue(&mut self, q: cg_cc::MediaQueue, _now: Instant) {
        self.seen.lock().unwrap().queues.push(q);
    }
    fn poll_event(&mut self) -> Option<ControllerEvent> {
        self.events
            .pop_front()
            .or_else(|| self.seen.lock().unwrap().raise.pop_front())
    }
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
        self.kind
    }
    fn stats(&self) -> ControllerStats {
        ControllerStats::default()
    }
}

/// A receive-side estimator answering a constant REMB every 500 ms.
#[derive(Debug)]
pub struct ConstEstimator {
    pub rate: Bitrate,
    pub next: Option<Instant>,
    pub packets: u64,
    /// Packets it was given as padding, shared with the test.
    pub padding: Arc<std::sync::atomic::AtomicU64>,
}

impl ReceiveSideEstimator for ConstEstimator {
    fn on_packet_received(&mut self, p: &ReceivedPacket) {
        self.packets += 1;
        if p.kind == cg_cc::PacketKind::Padding {
            self.padding
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        if self.next.is_none() {
            self.next = Some(p.arrival);
        }
    }
    fn handle_timeout(&mut self, _now: Instant) {}
    fn poll_timeout(&self) -> Option<Instant> {
        self.next
    }
    fn poll_remb(&mut self, now: Instant) -> Option<Bitrate> {
        let n = self.next?;
        if now < n {
            return None;
        }
        self.next = Some(now + Duration::from_millis(500));
        Some(self.rate)
    }
    fn estimate(&self) -> Bitrate {
        self.rate
    }
    fn stats(&self) -> Vec<(&'static str, f64)> {
        vec![]
    }
}

/// A frame of `len` bytes for `codec` (VP8 key/delta header bit; H.26x Annex-B with an IDR
/// or a non-IDR slice).
pub fn frame(codec: Codec, len: usize, key: bool, capture: Instant, salt: u8) -> EncodedFrame {
    let body = |n: usize| (0..n).map(move |i| (i as u8).wrapping_mul(31).wrapping_add(salt) | 1);
    let data: Vec<u8> = match codec {
        Codec::Vp8 => std::iter::once(if key { 0x10 } else { 0x11 })
            .chain(body(len.saturating_sub(1)))
            .collect(),
        Codec::H264 => {
            let mut v = vec![];
            if key {
                v.extend_from_slice(&[
                    0, 0, 0, 1, 0x67, 0x42, 0x00, 0x1F, 0, 0, 0, 1, 0x68, 0xCE, 0x3C, 0x80,
                ]);
                v.extend_from_slice(&[0, 0, 0, 1, 0x65]);
            } else {
                v.extend_from_slice(&[0, 0, 0, 1, 0x41]);
            }
            v.extend(body(len));
            v
        }
        Codec::H265 => {
            let mut v = vec![];
            if key {
                v.extend_from_slice(&[
                    0, 0, 0, 1, 0x40, 0x01, 0x0C, 0x01, 0, 0, 0, 1, 0x42, 0x01, 0x01, 0x60,
                ]);
                v.extend_from_slice(&[0, 0, 0, 1, 0x26, 0x01]);
            } else {
                v.extend_from_slice(&[0, 0, 0, 1, 0x02, 0x01]);
            }
            v.extend(body(len));
            v
        }
    };
    EncodedFrame {
        encoded: None,
        data: Bytes::from(data),
        capture_time: capture,
        key_frame: key,
        codec,
    }
}

/// Decides whether to drop a datagram put on the wire at an instant.
pub type DropFilter = Box<dyn FnMut(&Transmit, Instant) -> bool>;

/// A datagram in flight.
struct InFlight {
    at: Instant,
    bytes: Bytes,
    ecn: Ecn,
}

/// Sender and receiver joined by two fixed-delay paths, with drop filters.
pub struct Wire {
    pub now: Instant,
    pub sender: SenderSession,
    pub receiver: ReceiverSession,
    pub delay: Duration,
    fwd: VecDeque<InFlight>,
    rev: VecDeque<InFlight>,
    /// Drops forward datagrams for which it returns true.
    pub drop_fwd: DropFilter,
    /// Drops reverse datagrams for which it returns true.
    pub drop_rev: DropFilter,
    pub frames: Vec<ReceivedFrame>,
    pub sender_events: Vec<(Instant, SenderEvent)>,
    pub forward_sent: Vec<(Instant, TransmitKind, usize)>,
    /// Every datagram put on the wire, when `capture` is set: (time, forward?, bytes, ECN).
    pub capture: bool,
    pub captured: Vec<(Instant, bool, Bytes, Ecn)>,
}

impl Wire {
    /// Media the sender put on the wire in `[a, b)`, bit/s.
    pub fn media_rate(&self, a: Instant, b: Instant) -> f64 {
        self.forward_sent
            .iter()
            .filter(|(t, k, _)| *k == TransmitKind::Media && *t >= a && *t < b)
            .map(|(_, _, n)| 8.0 * *n as f64)
            .sum::<f64>()
            / (b - a).as_secs_f64()
    }

    pub fn new(
        sender: SenderSession,
        receiver: ReceiverSession,
        start: Instant,
        delay: Duration,
    ) -> Self {
        Self {
            now: start,
            sender,
            receiver,
            delay,
            fwd: VecDeque::new(),
            rev: VecDeque::new(),
            drop_fwd: Box::new(|_, _| false),
            drop_rev: Box::new(|_, _| false),
            frames: vec![],
            sender_events: vec![],
            forward_sent: vec![],
            capture: false,
            captured: vec![],
        }
    }

    fn settle(&mut self) {
        let now = self.now;
        for _ in 0..1_000 {
            let mut busy = false;
            while let Some(t) = self.sender.poll_transmit(now) {
                busy = true;
                self.forward_sent.push((now, t.kind, t.bytes.len()));
                if self.capture {
                    self.captured.push((now, true, t.bytes.clone(), t.ecn));
                }
                if !(self.drop_fwd)(&t, now) {
                    self.fwd.push_back(InFlight {
                        at: now + self.delay,
                        bytes: t.bytes,
                        ecn: t.ecn,
                    });
                }
            }
            while let Some(t) = self.receiver.poll_transmit(now) {
                busy = true;
                if self.capture {
                    self.captured.push((now, false, t.bytes.clone(), t.ecn));
                }
                if !(self.drop_rev)(&t, now) {
                    self.rev.push_back(InFlight {
                        at: now + self.delay,
                        bytes: t.bytes,
                        ecn: t.ecn,
                    });
                }
            }
            while self.fwd.front().is_some_and(|p| p.at <= now) {
                let p = self.fwd.pop_front().unwrap();
                let _ = self.receiver.handle_input(&p.bytes, p.ecn, now);
                busy = true;
            }
            while self.rev.front().is_some_and(|p| p.at <= now) {
                let p = self.rev.pop_front().unwrap();
                let _ = self.sender.handle_input(&p.bytes, p.ecn, now);
                busy = true;
            }
            if self.sender.poll_timeout().is_some_and(|t| t <= now) {
                self.sender.handle_timeout(now);
                busy = true;
            }
            if self.receiver.poll_timeout().is_some_and(|t| t <= now) {
                self.receiver.handle_timeout(now);
                busy = true;
            }
            while let Some(ev) = self.receiver.poll_event() {
                let ReceiverEvent::Frame(f) = ev else {
                    continue;
                };
                self.frames.push(f);
            }
            while let Some(ev) = self.sender.poll_event() {
                self.sender_events.push((now, ev));
            }
            if !busy {
                return;
            }
        }
        panic!("wire did not settle at {:?}", self.now);
    }

    fn next_wake(&self) -> Option<Instant> {
        [
            self.sender.poll_timeout(),
            self.receiver.poll_timeout(),
            self.fwd.front().map(|p| p.at),
            self.rev.front().map(|p| p.at),
        ]
        .into_iter()
        .flatten()
        .filter(|t| *t > self.now)
        .min()
    }

    /// Runs until `until`, pushing a frame from `source` whenever it has one due.
    pub fn run(
        &mut self,
        until: Instant,
        source: &mut dyn FnMut(Instant) -> (Option<EncodedFrame>, Instant),
    ) {
        let (mut pending, mut next_frame) = source(self.now);
        loop {
            if let Some(f) = pending.take() {
                let now = self.now;
                self.sender
                    .push_frame(f, now)
                    .expect("test frames are valid");
            }
            self.settle();
            let wake = self.next_wake().map_or(next_frame, |t| t.min(next_frame));
            if wake > until {
                self.now = until;
                self.settle();
                return;
            }
            // Some timers may sit exactly at `now` after settling (already handled); step.
            self.now = wake.max(self.now);
            if self.now >= next_frame {
                let (f, n) = source(self.now);
                pending = f;
                next_frame = n.max(self.now + Duration::from_micros(1));
            }
        }
    }
}

/// A source of `fps` frames of `size` bytes, a key frame first and every `key_every` frames.
pub fn cbr_source(
    codec: Codec,
    fps: u32,
    size: usize,
    key_every: u64,
) -> impl FnMut(Instant) -> (Option<EncodedFrame>, Instant) {
    let mut n = 0u64;
    let gap = Duration::from_secs(1) / fps;
    move |now| {
        let key = n.is_multiple_of(key_every);
        let f = frame(codec, size, key, now, n as u8);
        n += 1;
        (Some(f), now + gap)
    }
}
