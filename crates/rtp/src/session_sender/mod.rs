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
//! does not depend on them, and after a loss they are undecodable, so they only delay the
//! recovery. That includes the rest of a frame already leaving: VP8's first delta frame after
//! a key frame asked for at a low rate can be many times the per-frame budget (cg-media's
//! `rate_sweep --key-after`), and the next key frame waited behind it. The cut skips one
//! RTP sequence number, so the receiver sees the truncated frame as incomplete and skips to
//! the key frame. It also drops the queued retransmissions, and NACKs of packets sent before
//! the newest key frame are not answered ([`SenderStats::retransmissions_superseded`]):
//! repairs of a loss burst at a capacity drop otherwise fill the link while the key frame
//! waits.
//!
//! A receiver that cannot decode repeats its PLI until a key frame arrives. A key frame that is
//! still queued, or whose last packet left less than two RTTs (+ 100 ms: one to arrive, one for a
//! NACK repair) ago, already answers those requests: they are counted
//! ([`SenderStats::key_frame_requests_in_flight`]) and not passed on. Otherwise, at a few hundred
//! kbit/s, where a 720p key frame takes longer to send than the receiver waits between PLIs, every
//! repeat forced another key frame into the queue, each delaying the one the receiver was waiting
//! for (figures for all three rules: `docs/notes/2026-12-01-figures-from-docs.md`).

// By concern: the public session (frames in, polls out) is here; what leaves and its
// numbering in `send`, feedback from the receiver in `feedback` (per-packet reports become
// controller results in `sent_log`), NACK repair in `retransmit`, dropped media and key-frame
// requests in `key_frames`, the RFC 8083 breaker in `breaker`.
mod breaker;
mod config;
mod feedback;
mod key_frames;
mod retransmit;
mod send;
mod sent_log;

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use bytes::Bytes;
use cg_cc::{Controller, ControllerConfig, ControllerEvent, PacketKind, PacketResult};
use cg_types::{Bitrate, DataSize, Ecn, Rng};

pub use breaker::BreakerState;
pub use config::{FeedbackLossResponse, PayloadTypes, SenderConfig};

use crate::history::{History, Stored};
use crate::pacer::{Pacer, PacketClass, Queued, Release};
use crate::rtcp;
use crate::rtp_packet::is_rtcp;
use crate::time::{NtpClock, WrapUnwrapper};
use crate::{EncodedFrame, Error, Transmit, TransmitKind, VideoTiming, codec};
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
    /// The frame's capture time and its video-timing so far, on its last packet; the pacer
    /// exit is filled in as it leaves.
    timing: Option<(Instant, VideoTiming)>,
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
        // A frame of one packet carries video-timing only where it fits beside the first
        // packet's extensions (the packet size allows for one or the other).
        let n = payloads.len();
        let fits = n > 1 || {
            let all = self.config.extensions.overhead(true, true);
            let len = payloads.first().map_or(0, Bytes::len);
            self.config.transport_overhead + 12 + all + 2 + len <= self.config.max_packet_size
        };
        let timing = self
            .config
            .extensions
            .video_timing
            .filter(|_| fits)
            .map(|_| {
                let at = |t: Option<Instant>| {
                    t.map_or(0, |t| VideoTiming::delta_ms(frame.capture_time, t))
                };
                (
                    frame.capture_time,
                    VideoTiming {
                        flags: VideoTiming::TIMER,
                        encode_start_ms: at(frame.encoded.map(|e| e.0)),
                        encode_finish_ms: at(frame.encoded.map(|e| e.1)),
                        packetization_finish_ms: at(Some(now)),
                        ..VideoTiming::default()
                    },
                )
            });
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
                timing: if i + 1 == n { timing } else { None },
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
        self.pacer.set_rate(self.controller.pacing_rate());
        self.pacer.set_burst(self.controller.pacing_burst());
        self.pacer.set_reduction(self.breaker.rate_factor());
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
}
