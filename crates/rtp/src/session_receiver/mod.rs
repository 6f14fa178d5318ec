//! The receiving side of a media session: RTP in, frames and RTCP feedback out.
//!
//! An RTCP BYE from the sender (RFC 3550 §6.6, naming its media or RTX SSRC) raises
//! [`ReceiverEvent::Bye`] once and sets [`ReceiverStats::bye_received`], so an application can
//! tell a stream that ended cleanly from a sender that went silent.

mod assembler;
mod config;
mod feedback;
mod nack;
mod reception;

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use bytes::Bytes;
use cg_cc::{FeedbackKind, PacketKind, ReceiveSideEstimator, ReceivedPacket};
use cg_types::{DataSize, Ecn, MediaTime, RemoteTime, Rng};

pub use config::{FeedbackConfig, ReceiverConfig};

use crate::codec;
use crate::rtcp::{self, RtcpMessage};
use crate::rtp_packet::{ParsedRtp, is_rtcp, parse_rtp};
use crate::time::{NtpClock, WrapUnwrapper};
use crate::{Error, ReceivedFrame, Transmit, TransmitKind};
use assembler::{Assembled, Assembler, Inserted, Pkt};
use feedback::{CcfbRecorder, TwccRecorder};
use nack::{Gap, NackTracker};
use reception::Reception;

/// Something the receiver tells its driver / decoder.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ReceiverEvent {
    /// A complete, decodable frame.
    Frame(ReceivedFrame),
    /// The sender left the session: an RTCP BYE naming its media or RTX SSRC (RFC 3550
    /// §6.6). Raised for the first BYE only.
    Bye {
        /// The reason the sender gave, if any.
        reason: Option<String>,
    },
}

/// Counters for logs and plots.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReceiverStats {
    /// Media RTP packets accepted (first transmissions).
    pub media_packets: u64,
    /// Retransmissions received on the RTX stream.
    pub retransmissions: u64,
    /// Padding packets received.
    pub padding_packets: u64,
    /// RTP bytes received (all accepted packets).
    pub rtp_bytes: u64,
    /// Duplicate packets (already buffered).
    pub duplicates: u64,
    /// Packets that arrived after their frame was released or given up.
    pub late: u64,
    /// Datagrams dropped as malformed.
    pub malformed: u64,
    /// Packets from an SSRC or payload type we do not receive.
    pub unknown_source: u64,
    /// Received packets per ECN code point, indexed by the two ECN bits
    /// (Not-ECT, ECT(1), ECT(0), CE).
    pub ecn: [u64; 4],
    /// Frames released.
    pub frames: u64,
    /// Frames given up (packets missing past the timeout) or malformed.
    pub frames_lost: u64,
    /// Frames dropped because their reference chain was broken.
    pub frames_undecodable: u64,
    /// The playout-delay limits the sender asked for last (its playout-delay header
    /// extension), if it asked.
    pub playout_delay: Option<crate::PlayoutDelay>,
    /// Cumulative packets lost (RFC 3550 A.3).
    pub cumulative_lost: i64,
    /// Interarrival jitter (RFC 3550 A.8).
    pub jitter: Duration,
    /// RTCP packets sent, by kind.
    pub rr_sent: u64,
    /// REMB packets sent (alone or in an RR compound).
    pub remb_sent: u64,
    /// Transport-wide CC packets sent.
    pub twcc_sent: u64,
    /// RFC 8888 packets sent.
    pub ccfb_sent: u64,
    /// NACK packets sent.
    pub nacks_sent: u64,
    /// PLI packets sent.
    pub plis_sent: u64,
    /// RTCP datagrams received.
    pub rtcp_received: u64,
    /// The sender said BYE (RFC 3550 §6.6): the stream ended cleanly.
    pub bye_received: bool,
}

/// The receiver session (sans-IO). See the crate docs for the driving loop.
#[derive(Debug)]
pub struct ReceiverSession {
    config: ReceiverConfig,
    estimator: Option<Box<dyn ReceiveSideEstimator>>,
    ntp: NtpClock,
    start: Instant,
    rng: Rng,
    media: Reception,
    rtx: Reception,
    ts_unwrap: WrapUnwrapper,
    abs_unwrap: WrapUnwrapper,
    assembler: Assembler,
    nack: NackTracker,
    twcc: TwccRecorder,
    ccfb: CcfbRecorder,
    next_rr: Instant,
    rr_due: bool,
    next_twcc: Instant,
    next_ccfb: Instant,
    last_pli: Option<Instant>,
    media_codec: Option<crate::Codec>,
    rtcp_out: VecDeque<Bytes>,
    events: VecDeque<ReceiverEvent>,
    assembled: Vec<Assembled>,
    stats: ReceiverStats,
}

impl ReceiverSession {
    /// A session starting at `now`. REMB feedback needs a receive-side estimator (GCC's
    /// receiver half); the other kinds take `None`.
    pub fn new(
        config: ReceiverConfig,
        estimator: Option<Box<dyn ReceiveSideEstimator>>,
        now: Instant,
    ) -> Result<Self, Error> {
        config.validate()?;
        if config.feedback.kind == FeedbackKind::Remb && estimator.is_none() {
            return Err(Error::Config("REMB feedback needs a ReceiveSideEstimator"));
        }
        let mut rng = Rng::new(config.seed);
        let first_rr = now + rr_interval(config.rr_interval, &mut rng);
        Ok(Self {
            estimator,
            ntp: NtpClock::new(now, config.ntp_at_start),
            start: now,
            rng,
            media: Reception::default(),
            rtx: Reception::default(),
            ts_unwrap: WrapUnwrapper::default(),
            abs_unwrap: WrapUnwrapper::default(),
            assembler: Assembler::new(config.max_buffered_packets),
            nack: NackTracker::new(
                config.nack_retry_interval,
                config.nack_max_retries,
                config.nack_max_missing,
            ),
            twcc: TwccRecorder::default(),
            ccfb: CcfbRecorder::new(
                config.feedback.ccfb_history,
                &[config.media_ssrc, config.rtx_ssrc],
            ),
            next_rr: first_rr,
            rr_due: false,
            next_twcc: now + config.feedback.twcc_interval,
            next_ccfb: now + config.feedback.ccfb_interval,
            last_pli: None,
            media_codec: None,
            rtcp_out: VecDeque::new(),
            events: VecDeque::new(),
            assembled: Vec::new(),
            stats: ReceiverStats::default(),
            config,
        })
    }

    /// A datagram from the sender (RTP, or RTCP such as SR), with the ECN code point it
    /// arrived with and its arrival time (a kernel timestamp where available).
    pub fn handle_input(&mut self, data: &[u8], ecn: Ecn, now: Instant) -> Result<(), Error> {
        let r = if is_rtcp(data) {
            self.handle_rtcp(data, now)
        } else {
            self.handle_rtp(data, ecn, now)
        };
        if r.is_err() {
            self.stats.malformed += u64::from(matches!(
                r,
                Err(Error::MalformedRtp(_) | Error::MalformedRtcp(_) | Error::NotRtp(_))
            ));
        }
        self.after_input(now);
        r
    }

    /// Timers: feedback, RR, NACK retries, frame timeouts, the estimator.
    pub fn handle_timeout(&mut self, now: Instant) {
        if let Some(e) = self.estimator.as_mut() {
            e.handle_timeout(now);
        }
        self.after_input(now);
        if now >= self.next_rr {
            // Built in poll_transmit so DLSR is measured to the sending time.
            self.rr_due = true;
            self.next_rr = now + rr_interval(self.config.rr_interval, &mut self.rng);
        }
        match self.config.feedback.kind {
            FeedbackKind::TransportWideCc if now >= self.next_twcc => {
                self.queue_twcc();
                self.next_twcc = now + self.config.feedback.twcc_interval;
            }
            FeedbackKind::Rfc8888 if now >= self.next_ccfb => {
                if self.ccfb.new_packets > 0 {
                    self.queue_ccfb(now);
                }
                self.next_ccfb = now + self.config.feedback.ccfb_interval;
            }
            _ => {}
        }
    }

    /// The next datagram to send (RTCP).
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        if self.rr_due {
            self.rr_due = false;
            self.queue_rr(now);
        }
        self.rtcp_out.pop_front().map(|bytes| Transmit {
            bytes,
            ecn: Ecn::NotEct,
            kind: TransmitKind::Rtcp,
        })
    }

    /// When [`handle_timeout`](Self::handle_timeout) is next due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let fb = match self.config.feedback.kind {
            FeedbackKind::TransportWideCc => Some(self.next_twcc),
            FeedbackKind::Rfc8888 => Some(self.next_ccfb),
            FeedbackKind::Remb => None,
        };
        let pli = (self.assembler.needs_key_frame())
            .then(|| self.last_pli.map(|t| t + self.config.pli_min_interval))
            .flatten();
        [
            Some(self.next_rr),
            fb,
            self.nack.poll_timeout().filter(|_| self.config.nack),
            self.assembler.poll_timeout(self.frame_wait()),
            pli,
            self.estimator.as_ref().and_then(|e| e.poll_timeout()),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// The next event (frames out).
    pub fn poll_event(&mut self) -> Option<ReceiverEvent> {
        self.events.pop_front()
    }

    /// Counters.
    pub fn stats(&self) -> &ReceiverStats {
        &self.stats
    }

    /// The receive-side estimator (REMB mode), for its stats.
    pub fn estimator(&self) -> Option<&dyn ReceiveSideEstimator> {
        self.estimator.as_deref()
    }

    /// The configuration.
    pub fn config(&self) -> &ReceiverConfig {
        &self.config
    }

    /// Asks the sender for a key frame now (PLI), e.g. when the decoder failed.
    pub fn request_key_frame(&mut self, now: Instant) {
        self.send_pli(now);
    }

    fn handle_rtcp(&mut self, data: &[u8], now: Instant) -> Result<(), Error> {
        let msgs = rtcp::parse(data, self.config.feedback.ccfb_convention)?;
        self.stats.rtcp_received += 1;
        for m in msgs {
            match m {
                RtcpMessage::SenderReport(sr) => {
                    if sr.ssrc == self.config.media_ssrc {
                        self.media.on_sender_report(sr.ntp_time, now);
                    } else {
                        self.stats.unknown_source += 1;
                    }
                }
                RtcpMessage::Bye(bye) => self.on_bye(bye),
                _ => {}
            }
        }
        Ok(())
    }

    fn on_bye(&mut self, bye: rtcp::Bye) {
        let ours = bye
            .sources
            .iter()
            .any(|s| *s == self.config.media_ssrc || *s == self.config.rtx_ssrc);
        if !ours {
            self.stats.unknown_source += 1;
            return;
        }
        if !self.stats.bye_received {
            self.stats.bye_received = true;
            self.events
                .push_back(ReceiverEvent::Bye { reason: bye.reason });
        }
    }

    fn handle_rtp(&mut self, data: &[u8], ecn: Ecn, now: Instant) -> Result<(), Error> {
        let p = parse_rtp(data, &self.config.extensions)?;
        let is_media = p.ssrc == self.config.media_ssrc;
        let is_rtx =
            p.ssrc == self.config.rtx_ssrc && p.payload_type == self.config.payload_types.rtx;
        if !is_media && !is_rtx {
            self.stats.unknown_source += 1;
            return Err(Error::UnknownSsrc(p.ssrc));
        }
        let codec = if is_media {
            match self.config.payload_types.codec(p.payload_type) {
                Some(c) => Some(c),
                None => {
                    self.stats.unknown_source += 1;
                    return Err(Error::UnknownPayloadType(p.payload_type));
                }
            }
        } else {
            None
        };
        // Feedback records every packet that crossed the path, media, RTX and padding alike.
        self.stats.ecn[ecn.bits() as usize] += 1;
        self.stats.rtp_bytes += data.len() as u64;
        let arrival_us = i64::try_from(now.saturating_duration_since(self.start).as_micros())
            .unwrap_or(i64::MAX);
        if let Some(t) = p.transport_seq {
            self.twcc.on_packet(t, arrival_us);
        }
        self.ccfb.on_packet(p.ssrc, p.seq, ecn, now);
        if self.config.feedback.kind == FeedbackKind::Rfc8888
            && self.ccfb.new_packets >= self.config.feedback.ccfb_ack_packets
        {
            self.queue_ccfb(now);
            self.next_ccfb = now + self.config.feedback.ccfb_interval;
        }
        self.feed_estimator(&p, data.len(), now);
        match codec {
            Some(codec) => self.on_media(p, codec, now),
            None => self.on_rtx(p, now),
        }
    }

    fn feed_estimator(&mut self, p: &ParsedRtp, size: usize, now: Instant) {
        if self.estimator.is_none() {
            return;
        }
        let Some(abs) = p.abs_send_time else {
            return;
        };
        // Padding (an RTX packet sent for a probe) reaches the estimator too: it finds the
        // sender's probe clusters by it. Padding is either padding-only, or a copy of a packet
        // that already arrived (payload padding, what cg sends in WebRTC mode and libwebrtc
        // sends when RTX is negotiated); an RTX packet for a missing one is a retransmission.
        // Its RTP timestamp is the last media packet's, so it joins that frame's group.
        let kind = if p.ssrc != self.config.rtx_ssrc {
            PacketKind::Media
        } else if !self.repairs_a_loss(&p.payload) {
            PacketKind::Padding
        } else {
            PacketKind::Retransmission
        };
        let Some(est) = self.estimator.as_mut() else {
            return;
        };
        // abs-send-time: 6.18 fixed-point seconds, wrapping every 64 s.
        let units = self.abs_unwrap.unwrap(abs as u64, 24);
        let send_us = units * 1_000_000 / (1 << 18);
        let group = self.ts_unwrap.unwrap(p.timestamp as u64, 32).max(0) as u64;
        est.on_packet_received(&ReceivedPacket {
            arrival: now,
            send_time: RemoteTime::from_micros(send_us),
            size: DataSize::bytes(size as u64),
            group,
            ssrc: p.ssrc,
            kind,
        });
    }

    /// Whether an RTX payload (RFC 4588: the original sequence number first) carries a packet
    /// the NACK tracker misses; anything else on the RTX stream is padding.
    fn repairs_a_loss(&self, rtx_payload: &[u8]) -> bool {
        match rtx_payload {
            [a, b, ..] => self
                .nack
                .is_missing(self.media.peek(u16::from_be_bytes([*a, *b]))),
            _ => false,
        }
    }

    fn on_media(&mut self, p: ParsedRtp, codec: crate::Codec, now: Instant) -> Result<(), Error> {
        self.media_codec = Some(codec);
        let seq = self.media.on_packet(p.seq);
        self.stats.media_packets += 1;
        let ts = self.ts_unwrap.unwrap(p.timestamp as u64, 32);
        self.media.on_timing(
            MediaTime::from_duration(now.saturating_duration_since(self.start)),
            ts,
        );
        if self.nack.on_packet(seq, now) == Gap::TooLarge {
            self.send_pli(now);
        }
        self.buffer(seq, ts.max(0) as u64, p, codec, false, now)
    }

    /// RTX (RFC 4588 §4): the first two payload bytes are the original sequence number.
    fn on_rtx(&mut self, p: ParsedRtp, now: Instant) -> Result<(), Error> {
        self.rtx.on_packet(p.seq);
        if p.padded && p.payload.is_empty() {
            self.stats.padding_packets += 1;
            return Ok(());
        }
        if p.payload.len() < 3 {
            return Err(Error::MalformedRtp(
                "RTX payload shorter than OSN + 1".into(),
            ));
        }
        let Some(codec) = self.media_codec else {
            return Ok(()); // nothing to repair yet
        };
        if !self.repairs_a_loss(&p.payload) {
            // A copy of a packet that is here (payload padding: a probe, as the estimator
            // takes it) or was never asked for: counted as padding, not as received media, so
            // the reception report's loss does not go negative by the number of probes.
            self.stats.padding_packets += 1;
            return Ok(());
        }
        let osn = u16::from_be_bytes([p.payload[0], p.payload[1]]);
        self.stats.retransmissions += 1;
        let seq = self.media.on_packet(osn);
        self.nack.on_packet(seq, now);
        let ts = self.ts_unwrap.unwrap(p.timestamp as u64, 32);
        let mut orig = p;
        orig.payload = orig.payload.slice(2..);
        self.buffer(seq, ts.max(0) as u64, orig, codec, true, now)
    }

    fn buffer(
        &mut self,
        seq: u64,
        ts: u64,
        p: ParsedRtp,
        codec: crate::Codec,
        rtx: bool,
        now: Instant,
    ) -> Result<(), Error> {
        let info = match codec::inspect(codec, &p.payload) {
            Ok(i) => i,
            Err(e) => {
                self.stats.malformed += 1;
                return Err(e);
            }
        };
        if p.playout_delay.is_some() {
            self.stats.playout_delay = p.playout_delay;
        }
        let r = self.assembler.insert(
            seq,
            Pkt {
                codec,
                ts,
                marker: p.marker,
                payload: p.payload,
                arrival: now,
                capture_ntp: p.capture_ntp,
                video_timing: p.video_timing,
                rtx,
                info,
            },
        );
        match r {
            Inserted::Buffered => {}
            Inserted::Duplicate => self.stats.duplicates += 1,
            Inserted::Late => self.stats.late += 1,
        }
        Ok(())
    }

    /// Frames out, NACKs, PLI and REMB after any input or timer.
    fn after_input(&mut self, now: Instant) {
        let mut out = std::mem::take(&mut self.assembled);
        self.assembler.poll(now, self.frame_wait(), &mut out);
        for a in out.drain(..) {
            let capture_time = a.capture_ntp.and_then(|n| self.ntp.instant(n));
            self.events.push_back(ReceiverEvent::Frame(ReceivedFrame {
                data: Bytes::from(a.data),
                codec: a.codec,
                rtp_timestamp: MediaTime::from_ticks(a.ts),
                key_frame: a.key_frame,
                capture_time,
                sender_timing: a.video_timing,
                first_arrival: a.first_arrival,
                last_arrival: a.last_arrival,
                completed: now,
                retransmitted_packets: a.retransmitted,
            }));
        }
        self.assembled = out;
        let s = self.assembler.stats;
        self.stats.frames = s.frames;
        self.stats.frames_lost = s.frames_lost;
        self.stats.frames_undecodable = s.frames_undecodable;
        if let Some(n) = self.assembler.next_start() {
            self.nack.forget_below(n);
        }
        if self.config.nack {
            let due = self.nack.due(now);
            if !due.is_empty() {
                let seqs: Vec<u16> = due.iter().map(|s| *s as u16).collect();
                // NACK pairs cover 17 numbers each; chunk to keep packets small.
                for chunk in seqs.chunks(256) {
                    match rtcp::build_nack(self.config.ssrc, self.config.media_ssrc, chunk) {
                        Ok(b) => {
                            self.rtcp_out.push_back(b);
                            self.stats.nacks_sent += 1;
                        }
                        Err(e) => tracing::error!("cannot build NACK: {e}"),
                    }
                }
            }
        }
        if self.assembler.needs_key_frame()
            && self
                .last_pli
                .is_none_or(|t| now.saturating_duration_since(t) >= self.config.pli_min_interval)
        {
            self.send_pli(now);
        }
        if let Some(est) = self.estimator.as_mut()
            && let Some(rate) = est.poll_remb(now)
        {
            match rtcp::build_remb(self.config.ssrc, rate, vec![self.config.media_ssrc]) {
                Ok(b) => {
                    self.rtcp_out.push_back(b);
                    self.stats.remb_sent += 1;
                }
                Err(e) => tracing::error!("cannot build REMB: {e}"),
            }
        }
        self.stats.cumulative_lost = self.media.cumulative_lost();
        self.stats.jitter = Duration::from_micros(self.media.jitter() as u64 * 1_000 / 90);
    }

    /// How long an incomplete frame waits for a missing packet now (see
    /// [`ReceiverConfig::frame_timeout`]).
    fn frame_wait(&self) -> Duration {
        let c = &self.config;
        match self.nack.repair_time().filter(|_| c.nack) {
            Some(r) => (r * 2).min(c.frame_timeout_max).max(c.frame_timeout),
            None => c.frame_timeout,
        }
    }

    fn send_pli(&mut self, now: Instant) {
        match rtcp::build_pli(self.config.ssrc, self.config.media_ssrc) {
            Ok(b) => {
                self.rtcp_out.push_back(b);
                self.stats.plis_sent += 1;
                self.last_pli = Some(now);
                tracing::debug!("PLI sent");
            }
            Err(e) => tracing::error!("cannot build PLI: {e}"),
        }
    }

    /// RR + SDES (+ REMB in REMB mode, once the estimator has one to announce), RFC 3550
    /// §6.4.2.
    fn queue_rr(&mut self, now: Instant) {
        let mut blocks = Vec::new();
        blocks.extend(self.media.report(self.config.media_ssrc, now));
        blocks.extend(self.rtx.report(self.config.rtx_ssrc, now));
        let remb = self
            .estimator
            .as_ref()
            .and_then(|e| e.remb_estimate())
            .map(|r| (r, vec![self.config.media_ssrc]));
        let with_remb = remb.is_some();
        match rtcp::build_rr(self.config.ssrc, blocks, &self.config.cname, remb) {
            Ok(b) => {
                self.rtcp_out.push_back(b);
                self.stats.rr_sent += 1;
                self.stats.remb_sent += u64::from(with_remb);
            }
            Err(e) => tracing::error!("cannot build RR: {e}"),
        }
    }

    fn queue_twcc(&mut self) {
        if !self.twcc.has_news() {
            return;
        }
        let reports = self.twcc.build(self.config.ssrc, self.config.media_ssrc);
        match rtcp::build_twcc(reports) {
            Ok(v) => {
                self.stats.twcc_sent += v.len() as u64;
                self.rtcp_out.extend(v);
            }
            Err(e) => tracing::error!("cannot build transport-wide CC: {e}"),
        }
    }

    fn queue_ccfb(&mut self, now: Instant) {
        let ts = self.ntp.ntp_mid32(now);
        let Some(report) = self.ccfb.build(self.config.ssrc, ts, now) else {
            return;
        };
        match rtcp::build_ccfb(&report, self.config.feedback.ccfb_convention) {
            Ok(b) => {
                self.rtcp_out.push_back(b);
                self.stats.ccfb_sent += 1;
            }
            Err(e) => tracing::error!("cannot build RFC 8888 feedback: {e}"),
        }
    }
}

/// RFC 3550 §6.3.1 / A.7: the deterministic interval randomised over [0.5, 1.5] and divided
/// by e − 3/2 to compensate for timer reconsideration.
fn rr_interval(mean: Duration, rng: &mut Rng) -> Duration {
    let factor = 0.5 + rng.next_f64();
    mean.mul_f64(factor / (std::f64::consts::E - 1.5))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rtp_packet::{OutgoingRtp, write_rtp};
    use crate::{Codec, ExtensionIds};

    /// One RTP datagram with the default extension ids.
    fn rtp(
        ssrc: u32,
        payload_type: u8,
        seq: u16,
        timestamp: u32,
        marker: bool,
        payload: &[u8],
    ) -> Bytes {
        let out = OutgoingRtp {
            ssrc,
            payload_type,
            seq,
            timestamp,
            marker,
            payload,
            ..Default::default()
        };
        write_rtp(&out, &ExtensionIds::default()).unwrap()
    }

    /// VP8 frames of `300 × n` bytes (300-byte payloads) from sequence number `first`, RTP
    /// timestamps wrapping after the second frame: (seq, timestamp, marker, payload).
    fn packets(first: u16, frames: u32, n: usize) -> Vec<(u16, u32, bool, Bytes)> {
        let mut out = vec![];
        let mut seq = first;
        for f in 0..frames {
            let mut data = vec![f as u8 | 1; 300 * n];
            data[0] = if f == 0 { 0x10 } else { 0x11 };
            let payloads = codec::packetize(Codec::Vp8, &Bytes::from(data), 300, f as u16).unwrap();
            for (i, p) in payloads.iter().enumerate() {
                let ts = (u32::MAX - 6000).wrapping_add(f * 3000);
                out.push((seq, ts, i + 1 == payloads.len(), p.clone()));
                seq = seq.wrapping_add(1);
            }
        }
        out
    }

    /// [`packets`] as media datagrams.
    fn datagrams(first: u16, frames: u32, n: usize) -> Vec<Bytes> {
        packets(first, frames, n)
            .iter()
            .map(|(seq, ts, m, p)| rtp(0x6367_0001, 96, *seq, *ts, *m, p))
            .collect()
    }

    /// 60 frames of four packets at 30 frames/s; one packet of frame 20 is lost and its
    /// retransmission (RFC 4588) arrives `repair` after the NACK that asked for it — what a
    /// full bottleneck queue does to it. Returns (frames decoded, frames given up, PLIs).
    fn lose_one_and_repair_after(config: ReceiverConfig, repair: Duration) -> (usize, u64, u64) {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut rx = ReceiverSession::new(config, None, t0).unwrap();
        let pkts = packets(1000, 60, 4);
        let lost = 20 * 4 + 1;
        let mut rtx_at = None;
        let (mut next, mut decoded) = (0, 0);
        for k in 0..3000u64 {
            let now = t0 + ms(k);
            while next < pkts.len() && (next as u64 / 4) * 33 <= k {
                let (seq, ts, m, p) = &pkts[next];
                if next != lost {
                    rx.handle_input(&rtp(0x6367_0001, 96, *seq, *ts, *m, p), Ecn::NotEct, now)
                        .unwrap();
                }
                next += 1;
            }
            if rx.stats().nacks_sent > 0 && rtx_at.is_none() {
                rtx_at = Some(now + repair);
            }
            if rtx_at == Some(now) {
                let (seq, ts, m, p) = &pkts[lost];
                let mut payload = seq.to_be_bytes().to_vec();
                payload.extend_from_slice(p);
                rx.handle_input(
                    &rtp(0x6367_0002, 97, 1, *ts, *m, &payload),
                    Ecn::NotEct,
                    now,
                )
                .unwrap();
            }
            if rx.poll_timeout().is_some_and(|t| t <= now) {
                rx.handle_timeout(now);
            }
            while rx.poll_transmit(now).is_some() {}
            while let Some(ev) = rx.poll_event() {
                decoded += usize::from(matches!(ev, ReceiverEvent::Frame(_)));
            }
        }
        let s = rx.stats();
        (decoded, s.frames_lost, s.plis_sent)
    }

    /// A retransmission that crosses a full queue (here 400 ms after its NACK) still repairs
    /// its frame: the wait follows the repair time, not a fixed 300 ms.
    #[test]
    fn a_frame_waits_for_a_retransmission_slowed_by_a_queue() {
        let ms = Duration::from_millis;
        let (decoded, lost, plis) = lose_one_and_repair_after(ReceiverConfig::default(), ms(400));
        assert_eq!(
            (decoded, lost),
            (60, 0),
            "every frame decoded, none given up"
        );
        let first_plis = plis;
        // With the wait held at 300 ms the frame was given up before the repair came, and key
        // frames asked for (until one comes: none does here).
        let fixed = ReceiverConfig {
            frame_timeout_max: ms(300),
            ..Default::default()
        };
        let (decoded, lost, plis) = lose_one_and_repair_after(fixed, ms(400));
        assert_eq!(lost, 1);
        assert!(decoded < 60);
        assert!(
            plis > first_plis,
            "key frames asked for: {plis} against {first_plis}"
        );
        // A repair that never comes still gives the frame up, after at most 1 s.
        let (_, lost, _) = lose_one_and_repair_after(ReceiverConfig::default(), ms(10_000));
        assert_eq!(lost, 1);
    }

    #[test]
    fn sequence_and_timestamp_wrap_with_reordering_and_duplicates() {
        let t0 = Instant::now();
        let mut rx = ReceiverSession::new(ReceiverConfig::default(), None, t0).unwrap();
        let mut d = datagrams(65530, 6, 4);
        // reorder neighbours across the wrap and duplicate a few
        d.swap(5, 6);
        d.swap(9, 12);
        let dup = d[7].clone();
        d.insert(10, dup.clone());
        d.push(dup);
        for (i, b) in d.iter().enumerate() {
            rx.handle_input(b, Ecn::NotEct, t0 + Duration::from_millis(i as u64))
                .unwrap();
        }
        let mut ts = vec![];
        while let Some(ev) = rx.poll_event() {
            if let ReceiverEvent::Frame(f) = ev {
                assert_eq!(f.data.len(), 1200);
                ts.push(f.rtp_timestamp.ticks());
            }
        }
        assert_eq!(ts.len(), 6, "every frame across the wrap");
        assert!(ts.windows(2).all(|w| w[1] == w[0] + 3000), "{ts:?}");
        let s = rx.stats();
        assert_eq!(s.duplicates + s.late, 2);
        assert_eq!(
            s.cumulative_lost, -2,
            "duplicates count against loss (RFC 3550 A.3)"
        );
        assert_eq!(s.frames_lost, 0);
        assert_eq!(rx.nack.poll_timeout(), None, "nothing left missing");
    }

    #[test]
    fn a_bye_from_the_sender_is_reported_once_with_its_reason() {
        use rtc_rtcp::goodbye::Goodbye;
        use rtc_shared::marshal::Marshal;
        let t0 = Instant::now();
        let config = ReceiverConfig::default();
        let media_ssrc = config.media_ssrc;
        let mut rx = ReceiverSession::new(config, None, t0).unwrap();
        for b in datagrams(100, 2, 2) {
            rx.handle_input(&b, Ecn::NotEct, t0).unwrap();
        }
        while rx.poll_event().is_some() {}
        assert!(!rx.stats().bye_received);

        // A BYE for someone else is not ours.
        rx.handle_input(&rtcp::build_bye(0xDEAD).unwrap(), Ecn::NotEct, t0)
            .unwrap();
        assert_eq!(rx.poll_event(), None);
        assert_eq!(rx.stats().unknown_source, 1);
        // Malformed: a reason longer than the packet. An error, counted, no event.
        let bad = [0x81, 203, 0, 2, 0x63, 0x67, 0, 1, 9, b'b', b'y', b'e'];
        assert!(rx.handle_input(&bad, Ecn::NotEct, t0).is_err());
        assert_eq!(rx.stats().malformed, 1);
        assert_eq!(rx.poll_event(), None);
        assert!(!rx.stats().bye_received);

        let bye = Goodbye {
            sources: vec![media_ssrc],
            reason: Bytes::from_static(b"end of stream"),
        }
        .marshal()
        .unwrap();
        rx.handle_input(&bye, Ecn::NotEct, t0).unwrap();
        assert_eq!(
            rx.poll_event(),
            Some(ReceiverEvent::Bye {
                reason: Some("end of stream".into())
            })
        );
        assert!(rx.stats().bye_received);
        // Senders may repeat their BYE: one event.
        rx.handle_input(&rtcp::build_bye(media_ssrc).unwrap(), Ecn::NotEct, t0)
            .unwrap();
        assert_eq!(rx.poll_event(), None);
        assert!(rx.stats().bye_received);
    }
}
