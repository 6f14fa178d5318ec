//! The sending side of a media session: frames in, paced RTP and SR out, feedback to the
//! congestion controller.
//!
//! Sequence numbers are given on the way out. [`SenderSession::push_frame`] packetizes a frame
//! into the pacer without numbering it; [`SenderSession::poll_transmit`] assigns the RTP
//! sequence number (and the transport-wide one) to each packet as it leaves, then records it in
//! the retransmission history and the feedback log and reports it to the controller. Media the
//! pacer drops (its queue bound, SCReAM's `DiscardQueue`, a full queue) was never numbered, so
//! the receiver sees no gap: it does not count loss, NACK packets never sent, or feed a
//! loss-based controller losses the network did not cause. The drop still counts in
//! [`SenderStats::frames_dropped`] and asks the encoder for a key frame.
//!
//! Without a gap the receiver cannot tell that frames are missing, so after media was dropped
//! the session itself refuses delta frames until the encoder's key frame arrives (those deltas
//! reference dropped frames; the receiver would have had to discard them anyway). The queue
//! bound and the controller's discards never cut a frame short: the pacer finishes a frame
//! whose first packet has left.
//!
//! A key frame drops the queued frames ahead of it ([`SenderStats::frames_superseded`]): it
//! does not depend on them, and after a loss they are undecodable (measured in netlab,
//! 2.5 → 0.5 Mbit/s at 720p: the recovery key frame waited behind ~1 s of such frames, and
//! the freeze lasted over 2 s). That includes the rest of a frame already leaving: VP8's
//! first delta frame after a key frame asked for at a low rate can be 10–40 times the
//! per-frame budget (83 KB at 0.45 Mbit/s, 1.5 s of link time, measured with cg-media's
//! `rate_sweep --key-after`), and the next key frame waited behind it. The cut skips one
//! RTP sequence number, so the receiver sees the truncated frame as incomplete and skips to
//! the key frame. It also drops the queued retransmissions, and NACKs of packets sent before
//! the newest key frame are not answered ([`SenderStats::retransmissions_superseded`]): in
//! the same run, repairs of a 40 % loss burst had filled the 0.5 Mbit/s link for 1.6 s while
//! the key frame waited.
//!
//! A receiver that cannot decode repeats its PLI until a key frame arrives. A key frame that is
//! still queued, or whose last packet left less than two RTTs (+ 100 ms: one to arrive, one
//! for a NACK repair) ago, already answers those requests: they are counted
//! ([`SenderStats::key_frame_requests_in_flight`]) and not passed on. Otherwise, at a few hundred kbit/s, where a 720p key frame takes longer to send
//! than the receiver waits between PLIs, every repeat forced another key frame into the
//! queue, each delaying the one the receiver was waiting for (measured in netlab's demo: six
//! key frames and a 3 s freeze after a 2.5 → 0.5 Mbit/s step).

mod breaker;
mod config;
mod sent_log;

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use bytes::Bytes;
use cg_cc::{
    Controller, ControllerConfig, ControllerEvent, Feedback, FeedbackKind, LossReport, PacketKind,
    PacketResult, SentPacket,
};
use cg_types::{Bitrate, DataSize, Ecn, RemoteTime, Rng};
use rtc_rtcp::reception_report::ReceptionReport;
use rtc_rtcp::sender_report::SenderReport;

pub use breaker::BreakerState;
pub use config::{FeedbackLossResponse, PayloadTypes, SenderConfig};

use crate::history::{History, Stored};
use crate::pacer::{Dropped, Pacer, PacketClass, Queued, Release};
use crate::rtcp::{self, RtcpMessage, ccfb, twcc};
use crate::rtp_packet::{OutgoingRtp, is_rtcp, write_rtp};
use crate::time::{NtpClock, WrapUnwrapper, mid32_to_duration};
use crate::{EncodedFrame, Error, Transmit, TransmitKind, codec};
use breaker::Breaker;
use sent_log::SentLog;

/// Why the encoder is asked for a key frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyFrameReason {
    /// The receiver sent a PLI (RFC 4585 §6.3.1).
    Pli,
    /// The receiver sent a FIR (RFC 5104 §4.3.1).
    Fir,
    /// The pacer dropped queued frames (queue delay over its bound, or queue full).
    QueueOverflow,
    /// The controller discarded the queue (SCReAM) or asked for one.
    Controller,
    /// Media resumes after the circuit breaker closed.
    CircuitBreakerRecovered,
}

/// Something the sender tells its driver / encoder.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SenderEvent {
    /// Encode the next frame as a key frame.
    KeyFrameRequested(KeyFrameReason),
    /// Media was dropped: queued frames (the pacer's queue bound, a discard, a full queue), or
    /// a delta frame refused while the key frame that follows a drop is awaited (`packets`
    /// 0: it was never packetized).
    FramesDropped {
        /// Whole frames.
        frames: u64,
        /// Packets.
        packets: u64,
        /// Why.
        reason: KeyFrameReason,
    },
    /// The RTP circuit breaker changed state. While it is open the session drops every frame
    /// (media is paused) and [`SenderEvent::TargetBitrate`] gives the encoder its idle rate,
    /// the configured minimum.
    CircuitBreaker(BreakerState),
    /// The encoder's target moved past [`SenderConfig::encoder_target`]'s threshold: give it
    /// this rate. The first is the controller's start rate, which the encoder is built with
    /// and which is not raised.
    TargetBitrate(Bitrate),
}

/// Counters and estimates for logs and plots.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SenderStats {
    /// Frames accepted by `push_frame`.
    pub frames_pushed: u64,
    /// Frames refused or dropped (queue bound, discard, circuit breaker, and delta frames
    /// refused while waiting for the key frame that follows a drop).
    pub frames_dropped: u64,
    /// Media packets sent (first transmissions).
    pub media_packets: u64,
    /// Retransmissions sent.
    pub retransmissions: u64,
    /// Padding packets sent.
    pub padding_packets: u64,
    /// RTP bytes sent (all kinds; RTP header + extensions + payload).
    pub rtp_bytes: u64,
    /// RTCP packets sent.
    pub rtcp_sent: u64,
    /// RTCP datagrams received and parsed.
    pub rtcp_received: u64,
    /// Datagrams dropped as malformed or unexpected.
    pub malformed: u64,
    /// Feedback items ignored (unknown SSRC or sequence number).
    pub feedback_ignored: u64,
    /// NACKed sequence numbers received.
    pub nacked: u64,
    /// Key-frame requests raised.
    pub key_frame_requests: u64,
    /// Queued frames dropped because a key frame arrived behind them, the one already leaving
    /// included (also in `frames_dropped`).
    pub frames_superseded: u64,
    /// Queued retransmissions dropped because a key frame arrived behind them, and NACKed
    /// packets not retransmitted because they are older than the newest key frame.
    pub retransmissions_superseded: u64,
    /// Receiver key-frame requests (PLI/FIR) not raised because a key frame was already on
    /// its way: still queued, or sent less than two RTTs (+ 100 ms) ago, so the receiver
    /// asked before it could have seen it, or before a NACK could have repaired it.
    pub key_frame_requests_in_flight: u64,
    /// Times the circuit breaker tripped.
    pub breaker_trips: u64,
    /// Silences of the feedback that halved the rate (see [`crate::FeedbackLossResponse`]).
    pub feedback_timeouts: u64,
    /// Last RTT from RR LSR/DLSR (RFC 3550 §6.4.1).
    pub rtt: Option<Duration>,
    /// Last fraction lost from an RR.
    pub fraction_lost: Option<f64>,
    /// Last REMB value.
    pub remb: Option<Bitrate>,
}

/// What waits in the pacer.
#[derive(Debug, Clone)]
enum Pending {
    /// A first transmission, numbered when it leaves.
    Media(Unsent),
    /// A retransmission of a sent packet (keeps its sequence number).
    Rtx(Stored),
}

/// A media packet before it is sent: everything but its sequence numbers.
#[derive(Debug, Clone)]
struct Unsent {
    timestamp: u32,
    /// Last packet of its frame.
    marker: bool,
    payload_type: u8,
    /// abs-capture-time, on the first packet of a frame.
    capture_ntp: Option<u64>,
    payload: Bytes,
}

/// The sender session (sans-IO). See the crate docs for the driving loop.
#[derive(Debug)]
pub struct SenderSession {
    config: SenderConfig,
    controller: Box<dyn Controller>,
    ntp: NtpClock,
    start: Instant,
    /// The unwrapped RTP sequence number of the next media packet to leave.
    seq: u64,
    rtx_seq: u16,
    ts_offset: u32,
    next_tx: u64,
    frame_id: u64,
    picture_id: u16,
    /// Media was dropped: delta frames are refused until a key frame (why it was dropped).
    awaiting_key: Option<KeyFrameReason>,
    /// The newest key frame: its RTP timestamp, and when its last packet left (`None` while
    /// it is queued). Answers PLIs/FIRs sent before the receiver could have seen it.
    key_in_flight: Option<(u32, Option<Instant>)>,
    /// The first RTP sequence number not yet assigned when the newest key frame was queued:
    /// NACKs of packets before it are not answered (the key frame replaces them).
    useful_from: u64,
    pacer: Pacer<Pending>,
    history: History,
    sent_log: SentLog,
    breaker: Breaker,
    rtcp_out: VecDeque<Bytes>,
    events: VecDeque<SenderEvent>,
    encoder_target: cg_cc::EncoderTarget,
    next_sr: Instant,
    sr_due: bool,
    twcc_ref: WrapUnwrapper,
    ccfb_ts: WrapUnwrapper,
    sr_packets: u32,
    sr_octets: u32,
    last_rtp_ts: Option<(u32, Instant)>,
    results: Vec<PacketResult>,
    stats: SenderStats,
}

impl SenderSession {
    /// A session starting at `now`, with a controller built from its config.
    pub fn with_controller_config(
        config: SenderConfig,
        cc: &dyn ControllerConfig,
        now: Instant,
    ) -> Result<Self, Error> {
        Self::new(config, cc.build(now)?, now)
    }

    /// A session starting at `now` driving `controller`.
    pub fn new(
        config: SenderConfig,
        controller: Box<dyn Controller>,
        now: Instant,
    ) -> Result<Self, Error> {
        config.validate()?;
        let mut rng = Rng::new(config.seed);
        let seq = (1 << 16) + (rng.next_u64() & 0x7FFF);
        let rtx_seq = (rng.next_u64() & 0x7FFF) as u16;
        let ts_offset = rng.next_u64() as u32;
        let pacer = Pacer::new(
            config.pacer.clone(),
            controller.pacing_rate(),
            DataSize::bytes(
                (config.transport_overhead + 12 + config.extensions.max_overhead()) as u64
                    + config.padding_bytes as u64,
            ),
        );
        Ok(Self {
            ntp: NtpClock::new(now, config.ntp_at_start),
            start: now,
            seq,
            rtx_seq,
            ts_offset,
            next_tx: 0,
            frame_id: 0,
            picture_id: (rng.next_u64() & 0x7FFF) as u16,
            awaiting_key: None,
            key_in_flight: None,
            useful_from: 0,
            pacer,
            history: History::new(config.history_packets, config.history_age),
            sent_log: SentLog::new(config.history_packets.max(4096) * 2),
            breaker: Breaker::new(
                config.rtcp_timeout,
                config.feedback_loss.period(controller.feedback_kind()),
            ),
            rtcp_out: VecDeque::new(),
            events: VecDeque::new(),
            encoder_target: config.encoder_target.start(controller.target_bitrate()),
            next_sr: now + config.sr_interval,
            sr_due: false,
            twcc_ref: WrapUnwrapper::default(),
            ccfb_ts: WrapUnwrapper::default(),
            sr_packets: 0,
            sr_octets: 0,
            last_rtp_ts: None,
            results: Vec::new(),
            stats: SenderStats::default(),
            controller,
            config,
        })
    }

    /// Queues an encoded frame for packetization and pacing. Its packets get their sequence
    /// numbers when they leave ([`poll_transmit`](Self::poll_transmit)).
    ///
    /// While the circuit breaker is open the frame is dropped (counted) and `Ok` is returned:
    /// that is policy, not an error of the caller. So is a delta frame after queued media was
    /// dropped, until the key frame asked for then arrives ([`SenderEvent::FramesDropped`]).
    pub fn push_frame(&mut self, frame: EncodedFrame, now: Instant) -> Result<(), Error> {
        if self.breaker.tripped() {
            self.stats.frames_dropped += 1;
            self.awaiting_key = Some(KeyFrameReason::CircuitBreakerRecovered);
            return Ok(());
        }
        if let Some(reason) = self.awaiting_key {
            if !frame.key_frame {
                self.frames_dropped(1, 0, reason);
                return Ok(());
            }
            self.awaiting_key = None;
        }
        let pt = self.config.payload_types.of(frame.codec);
        let payloads = codec::packetize(
            frame.codec,
            &frame.data,
            self.config.max_payload(),
            self.picture_id,
        )?;
        self.picture_id = self.picture_id.wrapping_add(1) & 0x7FFF;
        if !self.pacer.has_room(payloads.len()) {
            self.stats.frames_dropped += 1;
            let dropped = self.pacer.discard_media();
            // This frame is refused too: delta frames wait for the key frame either way.
            self.awaiting_key = Some(KeyFrameReason::QueueOverflow);
            self.queued_media_dropped(dropped, KeyFrameReason::QueueOverflow);
            return Ok(());
        }
        let ts = self.rtp_timestamp(frame.capture_time);
        if frame.key_frame {
            // A key frame starts a new decoding chain: frames still queued ahead of it (not
            // started) would only delay it. After a loss they are undecodable anyway — the
            // receiver asked for this key frame because it lost their references — and
            // otherwise they are older pictures the key frame supersedes.
            let (d, cut) = self.pacer.discard_all_media();
            if cut {
                // The frame leaving was cut short: one sequence number is skipped so that the
                // receiver sees a packet missing from it instead of a frame that looks whole
                // (its packets are followed by the key frame's, a new timestamp).
                self.seq += 1;
            }
            self.stats.frames_dropped += d.frames;
            self.stats.frames_superseded += d.frames;
            // Likewise retransmissions of packets before it: a key frame is what the receiver
            // needs, and after a loss burst the repairs can fill the link for seconds.
            let rtx = self.pacer.discard_retransmissions();
            self.stats.retransmissions_superseded += rtx as u64;
            self.useful_from = self.seq;
            self.key_in_flight = Some((ts, None));
            tracing::debug!(
                ts,
                bytes = frame.data.len(),
                packets = payloads.len(),
                superseded_frames = d.frames,
                superseded_rtx = rtx,
                "key frame queued"
            );
        }
        let capture_ntp = Some(self.ntp.ntp(frame.capture_time));
        let n = payloads.len();
        self.frame_id += 1;
        // Header + extensions (at most: abs-capture-time rides on first packets only).
        let ext = self.config.transport_overhead + self.config.extensions.max_overhead();
        for (i, payload) in payloads.into_iter().enumerate() {
            let size = DataSize::bytes((12 + ext + payload.len()) as u64);
            let unsent = Unsent {
                timestamp: ts,
                marker: i + 1 == n,
                payload_type: pt,
                capture_ntp: if i == 0 { capture_ntp } else { None },
                payload,
            };
            self.pacer.enqueue(
                PacketClass::Media,
                Queued {
                    item: Pending::Media(unsent),
                    size,
                    frame: self.frame_id,
                    enqueued: now,
                },
            );
        }
        self.stats.frames_pushed += 1;
        tracing::trace!(
            ts,
            bytes = frame.data.len(),
            key = frame.key_frame,
            queued = self.pacer.len(),
            queue_ms = self.pacer.media_delay(now).as_millis() as u64,
            "frame queued"
        );
        self.controller
            .on_media_queue(self.pacer.media_queue(now), now);
        self.drain_controller(now);
        Ok(())
    }

    /// A datagram from the receiver (RTCP).
    pub fn handle_input(&mut self, data: &[u8], ecn: Ecn, now: Instant) -> Result<(), Error> {
        let _ = ecn;
        if !is_rtcp(data) {
            self.stats.malformed += 1;
            return Err(Error::NotRtp("sender expects RTCP only"));
        }
        let msgs = match rtcp::parse(data, self.config.ccfb_convention) {
            Ok(m) => m,
            Err(e) => {
                self.stats.malformed += 1;
                return Err(e);
            }
        };
        self.stats.rtcp_received += 1;
        for m in msgs {
            self.handle_rtcp(m, now);
        }
        self.drain_controller(now);
        Ok(())
    }

    /// Timers: controller, sender reports, circuit breaker, queue bound, history expiry.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.controller.handle_timeout(now);
        self.drain_controller(now);
        if now >= self.next_sr {
            // Built in poll_transmit so its NTP timestamp is the sending time (RFC 3550
            // §6.4.1), however late the driver drains.
            self.sr_due = true;
            self.next_sr = now + self.config.sr_interval;
        }
        let breaker = self.breaker.check(now);
        self.stats.feedback_timeouts = self.breaker.reductions();
        if let Some(state) = breaker {
            self.stats.breaker_trips += 1;
            let dropped = self.pacer.discard_media();
            if dropped.frames > 0 {
                self.stats.frames_dropped += dropped.frames;
                // The key frame is asked for when the breaker recovers.
                self.awaiting_key = Some(KeyFrameReason::CircuitBreakerRecovered);
            }
            self.events.push_back(SenderEvent::CircuitBreaker(state));
        }
        self.enforce_queue_bound(now);
        self.history.expire(now);
    }

    /// The next datagram to send.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        if self.sr_due {
            self.sr_due = false;
            self.queue_sr(now);
        }
        if let Some(bytes) = self.rtcp_out.pop_front() {
            self.stats.rtcp_sent += 1;
            return Some(Transmit {
                bytes,
                ecn: Ecn::NotEct,
                kind: TransmitKind::Rtcp,
            });
        }
        if self.breaker.tripped() {
            return None;
        }
        self.enforce_queue_bound(now);
        self.pacer.set_rate(
            self.controller
                .pacing_rate()
                .mul_f64(self.breaker.rate_factor()),
        );
        let allowance = self.controller.send_allowance();
        let release = self.pacer.poll(now, allowance)?;
        let t = match release {
            Release::Packet(_, q) => match q.item {
                Pending::Media(m) => self.send_media(m, now),
                Pending::Rtx(s) => self.send_rtx(Some(s), PacketKind::Retransmission, now),
            },
            Release::Padding(_) => match self
                .history
                .newest()
                .filter(|_| self.config.payload_padding)
            {
                Some(s) => {
                    let t = self.send_rtx(Some(s), PacketKind::Padding, now);
                    if let Ok(t) = &t {
                        // The probe's clock by the size that left, not the padding size.
                        let on_wire = self.config.transport_overhead + t.bytes.len();
                        self.pacer.padding_sent_as(DataSize::bytes(on_wire as u64));
                    }
                    t
                }
                None => self.send_rtx(None, PacketKind::Padding, now),
            },
        };
        // The controller may have asked for something (a probe once the queue emptied).
        self.drain_controller(now);
        match t {
            Ok(t) => Some(t),
            Err(e) => {
                tracing::error!("dropping a packet that failed to serialize: {e}");
                None
            }
        }
    }

    /// When [`handle_timeout`](Self::handle_timeout) or
    /// [`poll_transmit`](Self::poll_transmit) is next due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let pacer = if self.breaker.tripped() {
            None
        } else {
            self.pacer.poll_timeout()
        };
        [
            pacer,
            self.pacer.limit_deadline(),
            Some(self.next_sr),
            self.breaker.deadline(),
            self.controller.poll_timeout(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// The next event, if any. The encoder's target is checked here, so a driver that polls
    /// events after every input and timeout hears every move.
    pub fn poll_event(&mut self) -> Option<SenderEvent> {
        // Zero while the breaker pauses media: the encoder idles at the configured minimum.
        if let Some(rate) = self.encoder_target.update(self.target_bitrate()) {
            self.events.push_back(SenderEvent::TargetBitrate(rate));
        }
        self.events.pop_front()
    }

    /// The rate last given to the encoder ([`SenderEvent::TargetBitrate`]).
    pub fn encoder_target(&self) -> Bitrate {
        self.encoder_target.announced()
    }

    /// The bit rate the encoder should produce now: the controller's target, halved for each
    /// period without feedback ([`FeedbackLossResponse`]), zero while the circuit breaker is
    /// open.
    pub fn target_bitrate(&self) -> Bitrate {
        if self.breaker.tripped() {
            Bitrate::ZERO
        } else {
            self.controller
                .target_bitrate()
                .mul_f64(self.breaker.rate_factor())
        }
    }

    /// Counters.
    pub fn stats(&self) -> &SenderStats {
        &self.stats
    }

    /// The controller (for its stats).
    pub fn controller(&self) -> &dyn Controller {
        self.controller.as_ref()
    }

    /// The media queue in front of the pacer.
    pub fn media_queue(&self, now: Instant) -> cg_cc::MediaQueue {
        self.pacer.media_queue(now)
    }

    /// Whether the circuit breaker is open.
    pub fn circuit_breaker_tripped(&self) -> bool {
        self.breaker.tripped()
    }

    /// Whether feedback is arriving: the breaker is closed and the rate is not reduced for
    /// missing feedback ([`FeedbackLossResponse`]).
    pub fn hears_feedback(&self) -> bool {
        !self.breaker.tripped() && self.breaker.rate_factor() == 1.0
    }

    /// The configuration.
    pub fn config(&self) -> &SenderConfig {
        &self.config
    }

    /// A BYE to send when the session ends (RFC 3550 §6.6).
    pub fn close(&mut self) {
        match rtcp::build_bye(self.config.ssrc) {
            Ok(b) => self.rtcp_out.push_back(b),
            Err(e) => tracing::error!("cannot build BYE: {e}"),
        }
    }

    fn rtp_timestamp(&self, capture: Instant) -> u32 {
        // 90 kHz video clock (RFC 6184 §8.2.1, RFC 7741 §6.1, RFC 7798 §7.1).
        let d = capture.saturating_duration_since(self.start);
        let ticks = (d.as_nanos() * 90_000 / 1_000_000_000) as u64;
        self.ts_offset.wrapping_add(ticks as u32)
    }

    fn enforce_queue_bound(&mut self, now: Instant) {
        let d = self.pacer.enforce_limit(now);
        if d.frames > 0 {
            self.queued_media_dropped(d, KeyFrameReason::QueueOverflow);
        }
    }

    /// Queued media was dropped: counts it, refuses delta frames until a key frame if whole
    /// frames went (the frames after a dropped one do not decode without it), and asks for
    /// the key frame.
    fn queued_media_dropped(&mut self, d: Dropped, reason: KeyFrameReason) {
        self.frames_dropped(d.frames, d.packets, reason);
        if d.frames > 0 {
            self.awaiting_key = Some(reason);
        }
        self.request_key_frame(reason);
    }

    /// Counts dropped frames and tells the driver.
    fn frames_dropped(&mut self, frames: u64, packets: u64, reason: KeyFrameReason) {
        if frames == 0 {
            return;
        }
        if packets > 0 && self.key_in_flight.is_some_and(|(_, sent)| sent.is_none()) {
            // Queued frames were dropped, perhaps the key frame: it answers nothing now.
            self.key_in_flight = None;
        }
        self.stats.frames_dropped += frames;
        tracing::debug!(frames, packets, ?reason, "queued frames dropped");
        self.events.push_back(SenderEvent::FramesDropped {
            frames,
            packets,
            reason,
        });
    }

    /// A PLI or FIR: passed on unless a key frame already on its way answers it.
    fn receiver_wants_key_frame(&mut self, reason: KeyFrameReason, now: Instant) {
        if self.key_frame_in_flight(now) {
            self.stats.key_frame_requests_in_flight += 1;
            tracing::debug!(?reason, "key frame request answered by the one in flight");
        } else {
            tracing::debug!(?reason, "key frame request passed to the encoder");
            self.request_key_frame(reason);
        }
    }

    /// Whether a key frame already on its way answers a receiver's request made at `now`.
    fn key_frame_in_flight(&self, now: Instant) -> bool {
        match self.key_in_flight {
            None => false,
            Some((_, None)) => true,
            Some((_, Some(sent))) => {
                // The receiver sees it an RTT after it left; if a packet of it was lost, a NACK
                // round trip later it is repaired.
                let rtt = self.stats.rtt.unwrap_or(Duration::from_millis(100));
                now < sent + 2 * rtt + Duration::from_millis(100)
            }
        }
    }

    fn request_key_frame(&mut self, reason: KeyFrameReason) {
        self.stats.key_frame_requests += 1;
        self.events
            .push_back(SenderEvent::KeyFrameRequested(reason));
    }

    fn drain_controller(&mut self, now: Instant) {
        while let Some(ev) = self.controller.poll_event() {
            match ev {
                ControllerEvent::DiscardQueue => {
                    let d = self.pacer.discard_media();
                    self.queued_media_dropped(d, KeyFrameReason::Controller);
                    self.controller
                        .on_media_queue(self.pacer.media_queue(now), now);
                }
                ControllerEvent::RequestKeyFrame => {
                    self.request_key_frame(KeyFrameReason::Controller)
                }
                ControllerEvent::Probe { rate, duration } => {
                    self.pacer.start_probe(rate, duration, now)
                }
                other => tracing::debug!(?other, "controller event not handled"),
            }
        }
    }

    fn next_transport_seq(&mut self) -> u64 {
        let tx = self.next_tx;
        self.next_tx += 1;
        tx
    }

    fn finish_send(
        &mut self,
        bytes: Bytes,
        tx: u64,
        ssrc: u32,
        rtp_seq: u16,
        kind: PacketKind,
        now: Instant,
    ) -> Transmit {
        let size = DataSize::bytes((self.config.transport_overhead + bytes.len()) as u64);
        self.sent_log.record(tx, ssrc, rtp_seq);
        self.controller.on_packet_sent(&SentPacket {
            seq: tx,
            size,
            send_time: now,
            ecn: self.config.ecn,
            kind,
        });
        self.breaker.on_media_sent(now);
        self.stats.rtp_bytes += bytes.len() as u64;
        Transmit {
            bytes,
            ecn: self.config.ecn,
            kind: match kind {
                PacketKind::Media => TransmitKind::Media,
                PacketKind::Retransmission => TransmitKind::Retransmission,
                PacketKind::Padding => TransmitKind::Padding,
            },
        }
    }

    /// A first transmission: the packet gets its RTP and transport-wide sequence numbers
    /// now, as it leaves the pacer.
    fn send_media(&mut self, m: Unsent, now: Instant) -> Result<Transmit, Error> {
        // Numbered before serializing: a packet that fails to serialize (a bug) leaves a gap,
        // which tells the receiver its frame is incomplete.
        let seq = self.seq;
        self.seq += 1;
        let tx = self.next_transport_seq();
        let bytes = write_rtp(
            &OutgoingRtp {
                ssrc: self.config.ssrc,
                payload_type: m.payload_type,
                seq: seq as u16,
                timestamp: m.timestamp,
                marker: m.marker,
                payload: &m.payload,
                abs_send_time: Some(self.ntp.abs_send_time(now)),
                transport_seq: Some(tx as u16),
                capture_ntp: m.capture_ntp,
                padding: 0,
            },
            &self.config.extensions,
        )?;
        self.stats.media_packets += 1;
        self.sr_packets = self.sr_packets.wrapping_add(1);
        self.sr_octets = self.sr_octets.wrapping_add(m.payload.len() as u32);
        self.last_rtp_ts = Some((m.timestamp, now));
        let end_of_frame = m.marker;
        if end_of_frame
            && let Some((ts, sent @ None)) = &mut self.key_in_flight
            && *ts == m.timestamp
        {
            *sent = Some(now);
            tracing::debug!(ts = m.timestamp, seq, "key frame sent");
        }
        self.history.insert(Stored {
            seq,
            timestamp: m.timestamp,
            marker: m.marker,
            capture_ntp: m.capture_ntp,
            payload: m.payload,
            sent: now,
            last_retransmit: None,
        });
        let rtp_seq = seq as u16;
        let t = self.finish_send(bytes, tx, self.config.ssrc, rtp_seq, PacketKind::Media, now);
        if end_of_frame {
            // Lets send-side GCC group packets by frame (MMSys16 eq. 4).
            self.controller.on_frame_sent(tx);
        }
        self.controller
            .on_media_queue(self.pacer.media_queue(now), now);
        Ok(t)
    }

    /// An RTX packet (RFC 4588 §4): a retransmission of `s`, or padding only when `None`;
    /// `kind` says whether it answers a NACK or pads a probe (payload padding carries `s`).
    fn send_rtx(
        &mut self,
        s: Option<Stored>,
        kind: PacketKind,
        now: Instant,
    ) -> Result<Transmit, Error> {
        let tx = self.next_transport_seq();
        let seq = self.rtx_seq;
        self.rtx_seq = self.rtx_seq.wrapping_add(1);
        let mut payload = Vec::new();
        let (timestamp, marker, capture_ntp, padding) = match &s {
            Some(s) => {
                payload.reserve(2 + s.payload.len());
                payload.extend_from_slice(&(s.seq as u16).to_be_bytes());
                payload.extend_from_slice(&s.payload);
                (s.timestamp, s.marker, s.capture_ntp, 0)
            }
            None => (
                self.last_rtp_ts.map(|(t, _)| t).unwrap_or(self.ts_offset),
                false,
                None,
                self.config.padding_bytes,
            ),
        };
        let bytes = write_rtp(
            &OutgoingRtp {
                ssrc: self.config.rtx_ssrc,
                payload_type: self.config.payload_types.rtx,
                seq,
                timestamp,
                marker,
                payload: &payload,
                abs_send_time: Some(self.ntp.abs_send_time(now)),
                transport_seq: Some(tx as u16),
                capture_ntp,
                padding,
            },
            &self.config.extensions,
        )?;
        match kind {
            PacketKind::Retransmission => self.stats.retransmissions += 1,
            _ => self.stats.padding_packets += 1,
        }
        Ok(self.finish_send(bytes, tx, self.config.rtx_ssrc, seq, kind, now))
    }

    /// SR + SDES (RFC 3550 §6.4.1). The RTP timestamp is extrapolated from the last sent
    /// packet to `now` at 90 kHz so lip-sync and RTT work.
    fn queue_sr(&mut self, now: Instant) {
        let rtp_time = match self.last_rtp_ts {
            Some((ts, at)) => {
                let d = now.saturating_duration_since(at);
                ts.wrapping_add((d.as_nanos() * 90_000 / 1_000_000_000) as u32)
            }
            None => self.rtp_timestamp(now),
        };
        let sr = SenderReport {
            ssrc: self.config.ssrc,
            ntp_time: self.ntp.ntp(now),
            rtp_time,
            packet_count: self.sr_packets,
            octet_count: self.sr_octets,
            ..Default::default()
        };
        match rtcp::build_sr(sr, &self.config.cname) {
            Ok(b) => self.rtcp_out.push_back(b),
            Err(e) => tracing::error!("cannot build SR: {e}"),
        }
    }

    fn ours(&self, ssrc: u32) -> bool {
        ssrc == self.config.ssrc || ssrc == self.config.rtx_ssrc
    }

    /// RTCP on our streams arrived; `kind`: the congestion feedback it is, if any (receiver
    /// reports count as REMB mode's: its loss-based controller reads them). Per-packet
    /// reports feed every send-side controller whichever format carries them (a Chromium
    /// viewer of SCReAM sends transport-wide CC), REMB and RRs feed GCC-REMB.
    fn feedback_seen(&mut self, now: Instant, kind: Option<FeedbackKind>) {
        let per_packet = |k: FeedbackKind| k != FeedbackKind::Remb;
        let feeds =
            kind.is_some_and(|k| per_packet(k) == per_packet(self.controller.feedback_kind()));
        if let Some(state) = self.breaker.on_feedback(now, feeds) {
            self.events.push_back(SenderEvent::CircuitBreaker(state));
            self.request_key_frame(KeyFrameReason::CircuitBreakerRecovered);
        }
    }

    fn handle_rtcp(&mut self, m: RtcpMessage, now: Instant) {
        match m {
            RtcpMessage::ReceiverReport(rr) => self.handle_reports(&rr.reports, now),
            RtcpMessage::SenderReport(sr) => self.handle_reports(&sr.reports, now),
            RtcpMessage::Remb { ssrcs, bitrate } => {
                if !ssrcs.iter().any(|s| self.ours(*s)) {
                    self.stats.feedback_ignored += 1;
                    return;
                }
                self.feedback_seen(now, Some(FeedbackKind::Remb));
                self.stats.remb = Some(bitrate);
                self.controller.on_feedback(
                    &Feedback {
                        remb: Some(bitrate),
                        ..Default::default()
                    },
                    now,
                );
            }
            RtcpMessage::TransportCc(t) => self.handle_twcc(&t, now),
            RtcpMessage::Ccfb(r) => self.handle_ccfb(&r, now),
            RtcpMessage::Nack { media_ssrc, seqs } => {
                if media_ssrc != self.config.ssrc {
                    self.stats.feedback_ignored += 1;
                    return;
                }
                self.feedback_seen(now, None);
                self.handle_nack(&seqs, now);
            }
            RtcpMessage::Pli { media_ssrc } => {
                if media_ssrc != self.config.ssrc {
                    self.stats.feedback_ignored += 1;
                    return;
                }
                self.feedback_seen(now, None);
                self.receiver_wants_key_frame(KeyFrameReason::Pli, now);
            }
            RtcpMessage::Fir { ssrcs } => {
                if !ssrcs.contains(&self.config.ssrc) {
                    self.stats.feedback_ignored += 1;
                    return;
                }
                self.feedback_seen(now, None);
                self.receiver_wants_key_frame(KeyFrameReason::Fir, now);
            }
            RtcpMessage::Bye(_) | RtcpMessage::Other => {}
        }
    }

    /// RR/SR report blocks: loss figures and RTT = now − LSR − DLSR (RFC 3550 §6.4.1).
    fn handle_reports(&mut self, reports: &[ReceptionReport], now: Instant) {
        for rb in reports {
            if rb.ssrc != self.config.ssrc {
                if rb.ssrc != self.config.rtx_ssrc {
                    self.stats.feedback_ignored += 1;
                } else {
                    self.feedback_seen(now, Some(FeedbackKind::Remb));
                }
                continue;
            }
            self.feedback_seen(now, Some(FeedbackKind::Remb));
            let rtt = (rb.last_sender_report != 0)
                .then(|| {
                    let a = self.ntp.ntp_mid32(now);
                    let v = a.wrapping_sub(rb.last_sender_report).wrapping_sub(rb.delay);
                    // A negative result wraps to a huge value: a bogus block, no sample.
                    (v < 0x0010_0000).then(|| mid32_to_duration(v))
                })
                .flatten();
            // total_lost is a 24-bit two's-complement field (RFC 3550 §6.4.1).
            let cumulative = ((rb.total_lost << 8) as i32 >> 8) as i64;
            let loss = LossReport {
                fraction_lost: rb.fraction_lost as f64 / 256.0,
                cumulative_lost: cumulative,
                extended_highest_seq: rb.last_sequence_number,
            };
            self.stats.fraction_lost = Some(loss.fraction_lost);
            if rtt.is_some() {
                self.stats.rtt = rtt;
            }
            self.controller.on_feedback(
                &Feedback {
                    loss: Some(loss),
                    rtt,
                    ..Default::default()
                },
                now,
            );
        }
    }

    fn handle_twcc(
        &mut self,
        t: &rtc_rtcp::transport_feedbacks::transport_layer_cc::TransportLayerCc,
        now: Instant,
    ) {
        let Some(highest) = self.sent_log.highest() else {
            self.stats.feedback_ignored += 1;
            return;
        };
        self.feedback_seen(now, Some(FeedbackKind::TransportWideCc));
        let reference_us =
            self.twcc_ref.unwrap(t.reference_time as u64, 24) * twcc::REFERENCE_UNIT_US;
        let mut results = std::mem::take(&mut self.results);
        results.clear();
        for (seq16, arrival) in twcc::decode(t, reference_us) {
            // Unwrap near the highest sent transport sequence number.
            let diff = seq16.wrapping_sub(highest as u16) as i16 as i64;
            let Some(tx) = u64::try_from(highest as i64 + diff).ok() else {
                self.stats.feedback_ignored += 1;
                continue;
            };
            if tx > highest || !self.sent_log.contains(tx) {
                self.stats.feedback_ignored += 1;
                continue;
            }
            if self.sent_log.mark(tx, arrival.is_some()) {
                results.push(PacketResult {
                    seq: tx,
                    arrival: arrival.map(RemoteTime::from_micros),
                    ecn: Ecn::NotEct,
                });
            }
        }
        if !results.is_empty() {
            self.controller.on_feedback(
                &Feedback {
                    packets: &results,
                    ..Default::default()
                },
                now,
            );
        }
        self.results = results;
    }

    fn handle_ccfb(&mut self, r: &ccfb::Report, now: Instant) {
        // Report timestamp: 16.16 s; arrival = timestamp − ATO / 1024 s (RFC 8888 §3.1).
        let ts_units = self.ccfb_ts.unwrap(r.report_timestamp as u64, 32);
        let ts_us = ts_units * 1_000_000 / 65_536;
        let mut results = std::mem::take(&mut self.results);
        results.clear();
        let mut any = false;
        for b in &r.blocks {
            if !self.ours(b.media_ssrc) {
                self.stats.feedback_ignored += 1;
                continue;
            }
            any = true;
            for (i, m) in b.metrics.iter().enumerate() {
                let seq = b.begin_seq.wrapping_add(i as u16);
                let Some(tx) = self.sent_log.lookup_rtp(b.media_ssrc, seq) else {
                    self.stats.feedback_ignored += 1;
                    continue;
                };
                if m.received && m.ato >= ccfb::ATO_OVER_RANGE {
                    // Arrived, but the time is unknown: nothing a controller can use.
                    continue;
                }
                if self.sent_log.mark(tx, m.received) {
                    results.push(PacketResult {
                        seq: tx,
                        arrival: m.received.then(|| {
                            RemoteTime::from_micros(ts_us - m.ato as i64 * 1_000_000 / 1024)
                        }),
                        ecn: if m.received { m.ecn } else { Ecn::NotEct },
                    });
                }
            }
        }
        if any {
            self.feedback_seen(now, Some(FeedbackKind::Rfc8888));
        }
        if !results.is_empty() {
            // Controllers expect send order; blocks of two SSRCs interleave.
            results.sort_by_key(|p| p.seq);
            self.controller.on_feedback(
                &Feedback {
                    packets: &results,
                    report_time: Some(RemoteTime::from_micros(ts_us)),
                    ..Default::default()
                },
                now,
            );
        }
        self.results = results;
    }

    fn handle_nack(&mut self, seqs: &[u16], now: Instant) {
        self.stats.nacked += seqs.len() as u64;
        // The highest sequence number sent (numbers are assigned as packets leave).
        let highest = self.seq.saturating_sub(1);
        let min_interval = self
            .stats
            .rtt
            .map(|r| r.mul_f64(0.8))
            .unwrap_or(Duration::from_millis(20))
            .max(Duration::from_millis(5));
        for &s in seqs {
            let diff = s.wrapping_sub(highest as u16) as i16 as i64;
            let Ok(seq) = u64::try_from(highest as i64 + diff) else {
                self.stats.feedback_ignored += 1;
                continue;
            };
            if seq > highest {
                self.stats.feedback_ignored += 1;
                continue;
            }
            if seq < self.useful_from {
                self.stats.retransmissions_superseded += 1;
                continue;
            }
            match self.history.take_for_retransmit(seq, now, min_interval) {
                Some(stored) => {
                    tracing::debug!(seq, "retransmission queued");
                    let size = DataSize::bytes(
                        (self.config.transport_overhead + 14 + stored.payload.len()) as u64,
                    );
                    self.pacer.enqueue(
                        PacketClass::Retransmission,
                        Queued {
                            item: Pending::Rtx(stored),
                            size,
                            frame: 0,
                            enqueued: now,
                        },
                    );
                }
                None => self.stats.feedback_ignored += 1,
            }
        }
    }
}
