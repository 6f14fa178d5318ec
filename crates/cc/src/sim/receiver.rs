//! The simulated media receiver: per-packet feedback generator, optional receive-side
//! estimator (REMB) fed with every packet (padding included, with its send time), and
//! RR-like loss reports.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use cg_link::sim::{Delivered, Endpoint, Transmit};
use cg_types::{DataSize, Ecn, RemoteTime};

use crate::controller::{
    FeedbackKind, LossReport, PacketKind, PacketResult, ReceiveSideEstimator, ReceivedPacket,
};
use crate::sim::packet::{FeedbackMessage, SimPacket};

/// Largest number of packet results in one feedback message; a larger gap in sequence
/// numbers is skipped rather than reported packet by packet.
const MAX_RESULTS: u64 = 4096;

/// Receiver parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct ReceiverConfig {
    /// Which per-packet feedback to send (from the controller's
    /// [`crate::Controller::feedback_kind`]). With [`FeedbackKind::Remb`] no per-packet
    /// feedback is sent; REMB comes from the estimator given to [`SimReceiver::new`].
    pub feedback: FeedbackKind,
    /// Transport-wide CC feedback period. Default 50 ms (libwebrtc sends every 50–250 ms).
    pub twcc_interval: Duration,
    /// RFC 8888 feedback period. Default 40 ms (SCReAM's RFC 8888 usage: about every 1–2
    /// frames; shared/notes).
    pub rfc8888_interval: Duration,
    /// RFC 8888: also send as soon as this many packets are unreported. `None`: only timed.
    /// Default `Some(16)`.
    pub rfc8888_packets: Option<usize>,
    /// RR-like loss report period. Default 1 s (RTCP interval of the papers' testbeds).
    pub rr_interval: Duration,
    /// The receiver's clock reads this much ahead of the sender's: arrival times in feedback
    /// are [`RemoteTime`]s with this offset, so controllers cannot rely on shared clocks.
    /// Default 1000 s.
    pub clock_offset: Duration,
    /// SSRC reported to the estimator. Default 1.
    pub ssrc: u32,
}

impl Default for ReceiverConfig {
    fn default() -> Self {
        ReceiverConfig {
            feedback: FeedbackKind::TransportWideCc,
            twcc_interval: Duration::from_millis(50),
            rfc8888_interval: Duration::from_millis(40),
            rfc8888_packets: Some(16),
            rr_interval: Duration::from_secs(1),
            clock_offset: Duration::from_secs(1000),
            ssrc: 1,
        }
    }
}

impl ReceiverConfig {
    /// The default config for a controller needing `feedback`.
    pub fn for_feedback(feedback: FeedbackKind) -> Self {
        ReceiverConfig {
            feedback,
            ..ReceiverConfig::default()
        }
    }
}

/// The simulated receiver: answers with the feedback the controller asked for
/// ([`ReceiverConfig::feedback`], normally `controller.feedback_kind()`):
/// transport-wide-CC-like results every 50 ms (arrival times, no ECN), or
/// RFC-8888-like results with the ECN seen every 40 ms or every 16 packets; runs a
/// [`ReceiveSideEstimator`](crate::ReceiveSideEstimator) and sends its REMBs when one is
/// given (GCC's REMB mode); and sends RR-like loss reports every second. Arrival times
/// are [`cg_types::RemoteTime`]s offset by 1000 s from the sender's clock, so controllers
/// cannot rely on a shared clock.
#[derive(Debug)]
pub struct SimReceiver {
    cfg: ReceiverConfig,
    estimator: Option<Box<dyn ReceiveSideEstimator>>,
    epoch: Instant,
    /// Results not yet reported: seq → (arrival, ECN).
    unreported: BTreeMap<u64, (RemoteTime, Ecn)>,
    last_reported: Option<u64>,
    highest: Option<(u64, Instant)>,
    next_feedback: Instant,
    next_rr: Instant,
    rr_base_highest: Option<u64>,
    rr_received: u64,
    cumulative_lost: i64,
    total_received: u64,
    out: VecDeque<FeedbackMessage>,
    remb_sent: u64,
    /// When the last frame's last packet (marker) arrived, and the longest time between two.
    last_frame_end: Option<Instant>,
    longest_frame_gap: Duration,
}

impl SimReceiver {
    /// A receiver starting at `now`; `estimator` runs for REMB-mode controllers.
    pub fn new(
        cfg: ReceiverConfig,
        estimator: Option<Box<dyn ReceiveSideEstimator>>,
        now: Instant,
    ) -> Self {
        SimReceiver {
            next_feedback: now + cfg.twcc_interval,
            next_rr: now + cfg.rr_interval,
            estimator,
            epoch: now,
            unreported: BTreeMap::new(),
            last_reported: None,
            highest: None,
            rr_base_highest: None,
            rr_received: 0,
            cumulative_lost: 0,
            total_received: 0,
            out: VecDeque::new(),
            remb_sent: 0,
            last_frame_end: None,
            longest_frame_gap: Duration::ZERO,
            cfg,
        }
    }

    /// The receive-side estimator, if any.
    pub fn estimator(&self) -> Option<&dyn ReceiveSideEstimator> {
        self.estimator.as_deref()
    }

    /// Media packets received.
    pub fn received(&self) -> u64 {
        self.total_received
    }

    /// The longest time between the arrivals of two frames' last packets, the time from
    /// the last one to `until` included: the freeze a receiver shows when frames are
    /// dropped at the sender (a discarded RTP queue, an encoder that skips) or stop coming.
    /// Frames broken by a loss at the bottleneck are not counted out (the simulation has no
    /// decoder). `None` if no frame arrived.
    pub fn longest_frame_gap(&self, until: Instant) -> Option<Duration> {
        let last = self.last_frame_end?;
        Some(
            self.longest_frame_gap
                .max(until.saturating_duration_since(last)),
        )
    }

    /// REMB messages sent.
    pub fn remb_sent(&self) -> u64 {
        self.remb_sent
    }

    fn remote(&self, t: Instant) -> RemoteTime {
        RemoteTime::from_duration(t.saturating_duration_since(self.epoch) + self.cfg.clock_offset)
    }

    fn per_packet(&self) -> bool {
        matches!(
            self.cfg.feedback,
            FeedbackKind::TransportWideCc | FeedbackKind::Rfc8888
        )
    }

    fn interval(&self) -> Duration {
        match self.cfg.feedback {
            FeedbackKind::Rfc8888 => self.cfg.rfc8888_interval,
            _ => self.cfg.twcc_interval,
        }
    }

    fn echo(&self, now: Instant) -> Option<(u64, Duration)> {
        self.highest
            .map(|(seq, at)| (seq, now.saturating_duration_since(at)))
    }

    fn flush_feedback(&mut self, now: Instant) {
        let Some((highest, _)) = self.highest else {
            return;
        };
        let mut packets = Vec::new();
        let from = match self.last_reported {
            Some(l) => l + 1,
            None => self.unreported.keys().next().copied().unwrap_or(highest),
        };
        let from = from.max(highest.saturating_sub(MAX_RESULTS));
        // Late arrivals of packets already reported lost.
        let late: Vec<u64> = self.unreported.range(..from).map(|(s, _)| *s).collect();
        for seq in late {
            if let Some((arrival, ecn)) = self.unreported.remove(&seq) {
                packets.push(PacketResult {
                    seq,
                    arrival: Some(arrival),
                    ecn,
                });
            }
        }
        if from <= highest {
            for seq in from..=highest {
                let r = self.unreported.remove(&seq);
                packets.push(PacketResult {
                    seq,
                    arrival: r.map(|(a, _)| a),
                    ecn: r.map_or(Ecn::NotEct, |(_, e)| e),
                });
            }
            self.last_reported = Some(highest);
        }
        if self.cfg.feedback == FeedbackKind::TransportWideCc {
            // Transport-wide CC carries no ECN.
            for p in &mut packets {
                p.ecn = Ecn::NotEct;
            }
        }
        if !packets.is_empty() {
            let echo = self.echo(now);
            let report_time =
                (self.cfg.feedback == FeedbackKind::Rfc8888).then(|| self.remote(now));
            self.out.push_back(FeedbackMessage {
                packets,
                echo,
                report_time,
                ..FeedbackMessage::default()
            });
        }
    }

    fn send_rr(&mut self, now: Instant) {
        let Some((highest, _)) = self.highest else {
            return;
        };
        let base = self.rr_base_highest.map_or(0, |b| b + 1);
        let expected = (highest + 1).saturating_sub(base);
        let lost = expected as i64 - self.rr_received as i64;
        self.cumulative_lost += lost;
        let fraction = if expected == 0 || lost <= 0 {
            0.0
        } else {
            // The 8-bit field of RFC 3550 §6.4.1.
            ((lost as f64 / expected as f64) * 256.0).floor().min(255.0) / 256.0
        };
        self.rr_base_highest = Some(highest);
        self.rr_received = 0;
        let echo = self.echo(now);
        self.out.push_back(FeedbackMessage {
            loss: Some(LossReport {
                fraction_lost: fraction,
                cumulative_lost: self.cumulative_lost,
                extended_highest_seq: highest as u32,
            }),
            echo,
            ..FeedbackMessage::default()
        });
    }

    fn poll_remb(&mut self, now: Instant) {
        if let Some(est) = self.estimator.as_mut()
            && let Some(remb) = est.poll_remb(now)
        {
            self.remb_sent += 1;
            let echo = self.echo(now);
            self.out.push_back(FeedbackMessage {
                remb: Some(remb),
                echo,
                ..FeedbackMessage::default()
            });
        }
    }
}

impl Endpoint for SimReceiver {
    type Payload = SimPacket;

    fn handle_packet(&mut self, packet: Delivered<SimPacket>, now: Instant) {
        let SimPacket::Media(m) = packet.payload else {
            return;
        };
        self.total_received += 1;
        self.rr_received += 1;
        if m.marker && !m.padding {
            if let Some(last) = self.last_frame_end {
                self.longest_frame_gap = self
                    .longest_frame_gap
                    .max(now.saturating_duration_since(last));
            }
            self.last_frame_end = Some(now);
        }
        if self.highest.is_none_or(|(h, _)| m.seq > h) {
            self.highest = Some((m.seq, now));
        }
        if self.per_packet() && self.unreported.len() < 4 * MAX_RESULTS as usize {
            let arrival = self.remote(now);
            self.unreported.insert(m.seq, (arrival, packet.ecn));
            if self.cfg.feedback == FeedbackKind::Rfc8888
                && self
                    .cfg
                    .rfc8888_packets
                    .is_some_and(|n| self.unreported.len() >= n)
            {
                self.flush_feedback(now);
            }
        }
        if let Some(est) = self.estimator.as_mut() {
            // abs-send-time: the sender's clock, whose epoch is unknown here; the
            // simulation's sender clock is the shared Instant, expressed from our epoch.
            let send_time = RemoteTime::from_micros(super::signed_micros(m.send_time, self.epoch));
            // Padding too, as cg-rtp's receiver: the estimator finds probe clusters by it.
            est.on_packet_received(&ReceivedPacket {
                arrival: now,
                send_time,
                size: packet.size,
                group: m.frame,
                ssrc: self.cfg.ssrc,
                kind: if m.padding {
                    PacketKind::Padding
                } else {
                    PacketKind::Media
                },
            });
        }
        self.poll_remb(now);
    }

    fn poll_transmit(&mut self, _now: Instant) -> Option<Transmit<SimPacket>> {
        let msg = self.out.pop_front()?;
        Some(Transmit {
            size: msg.wire_size().max(DataSize::bytes(1)),
            ecn: Ecn::NotEct,
            payload: SimPacket::Feedback(msg),
        })
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let mut t = self.next_rr;
        if self.per_packet() {
            t = t.min(self.next_feedback);
        }
        if let Some(e) = self.estimator.as_ref().and_then(|e| e.poll_timeout()) {
            t = t.min(e);
        }
        Some(t)
    }

    fn handle_timeout(&mut self, now: Instant) {
        if self.per_packet() && now >= self.next_feedback {
            self.flush_feedback(now);
            self.next_feedback = now + self.interval();
        }
        if now >= self.next_rr {
            self.send_rr(now);
            self.next_rr = now + self.cfg.rr_interval;
        }
        if let Some(est) = self.estimator.as_mut() {
            est.handle_timeout(now);
        }
        self.poll_remb(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::packet::MediaPacket;
    use cg_link::FlowId;

    fn media(seq: u64, ecn: Ecn, t0: Instant) -> Delivered<SimPacket> {
        Delivered {
            size: DataSize::bytes(1000),
            ecn,
            payload: SimPacket::Media(MediaPacket {
                padding: false,
                seq,
                frame: seq / 2,
                send_time: t0,
                size: DataSize::bytes(1000),
                marker: seq % 2 == 1,
            }),
            flow: FlowId::from_index(0),
        }
    }

    fn feedback(rx: &mut SimReceiver, now: Instant) -> Vec<FeedbackMessage> {
        let mut v = Vec::new();
        while let Some(t) = rx.poll_transmit(now) {
            if let SimPacket::Feedback(m) = t.payload {
                v.push(m);
            }
        }
        v
    }

    #[test]
    fn transport_wide_feedback_reports_gaps_as_lost_and_late_arrivals_later() {
        let t0 = Instant::now();
        let mut rx = SimReceiver::new(ReceiverConfig::default(), None, t0);
        let ms = |n| t0 + Duration::from_millis(n);
        for seq in [0, 1, 3] {
            rx.handle_packet(media(seq, Ecn::Ce, t0), ms(10 + seq));
        }
        assert_eq!(rx.poll_timeout(), Some(ms(50)));
        rx.handle_timeout(ms(50));
        let fb = feedback(&mut rx, ms(50));
        assert_eq!(fb.len(), 1);
        let got: Vec<_> = fb[0]
            .packets
            .iter()
            .map(|p| (p.seq, p.arrival.is_some()))
            .collect();
        assert_eq!(got, [(0, true), (1, true), (2, false), (3, true)]);
        assert!(
            fb[0].packets.iter().all(|p| p.ecn == Ecn::NotEct),
            "TWCC has no ECN"
        );
        // Arrival times are remote times 1000 s ahead of the sender's clock.
        let a0 = fb[0].packets[0].arrival.map(|a| a.as_micros());
        assert_eq!(a0, Some(1_000_010_000));
        // Packet 2 turns up late: reported received in the next feedback.
        rx.handle_packet(media(2, Ecn::NotEct, t0), ms(60));
        rx.handle_timeout(ms(100));
        let fb = feedback(&mut rx, ms(100));
        let got: Vec<_> = fb[0]
            .packets
            .iter()
            .map(|p| (p.seq, p.arrival.is_some()))
            .collect();
        assert_eq!(got, [(2, true)]);
    }

    #[test]
    fn rfc8888_feedback_carries_ecn_and_goes_out_every_n_packets() {
        let t0 = Instant::now();
        let cfg = ReceiverConfig::for_feedback(FeedbackKind::Rfc8888);
        let mut rx = SimReceiver::new(cfg, None, t0);
        for seq in 0..16 {
            rx.handle_packet(media(seq, Ecn::Ce, t0), t0 + Duration::from_millis(1));
        }
        let fb = feedback(&mut rx, t0 + Duration::from_millis(1));
        assert_eq!(
            fb.len(),
            1,
            "16 packets trigger a report before the 40 ms timer"
        );
        assert_eq!(fb[0].packets.len(), 16);
        assert!(fb[0].packets.iter().all(|p| p.ecn == Ecn::Ce));
    }

    #[test]
    fn receiver_reports_give_the_fraction_lost() {
        let t0 = Instant::now();
        let cfg = ReceiverConfig::for_feedback(FeedbackKind::Remb);
        let mut rx = SimReceiver::new(cfg, None, t0);
        for seq in (0..100).filter(|s| s % 4 != 0) {
            rx.handle_packet(media(seq, Ecn::NotEct, t0), t0);
        }
        rx.handle_timeout(t0 + Duration::from_secs(1));
        let fb = feedback(&mut rx, t0 + Duration::from_secs(1));
        let loss = fb.iter().find_map(|m| m.loss).expect("an RR");
        assert_eq!(loss.fraction_lost, 64.0 / 256.0);
        assert_eq!(loss.cumulative_lost, 25);
        assert!(
            fb.iter().all(|m| m.packets.is_empty()),
            "REMB mode: no per-packet feedback"
        );
    }
}
