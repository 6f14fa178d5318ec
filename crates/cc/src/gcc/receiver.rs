//! GCC's receiver side in REMB mode (MMSys16 Figure 1): the delay-based controller fed by
//! received packets, and REMB processing.
//!
//! Media and retransmissions feed the delay-based controller; padding counts in `R` and
//! the standing-queue check but joins no group of eq. (4) (unlike libwebrtc, see
//! [`DelayBasedController::on_padding`]). Every packet also feeds, with
//! [`GccConfig::probing`], the
//! [`ProbeDetector`]: a valid probe cluster's rate raises `Ar` (as a send-side probe
//! result does, [`DelayBasedController::on_probe_result`]) and the raised value goes out as
//! REMB at once.

use std::time::Instant;

use cg_types::Bitrate;

use crate::controller::{ConfigError, PacketKind, ReceiveSideEstimator, ReceivedPacket};
use crate::gcc::arrival::GroupKey;
use crate::gcc::config::{GccConfig, Grouping};
use crate::gcc::delay_based::{DelayBasedController, DelayBasedStats};
use crate::gcc::probe_detector::ProbeDetector;
use crate::gcc::remb::RembScheduler;
use crate::gcc::time::micros_since;

impl GccConfig {
    /// The receiver-side estimator for `GccMode::ReceiverSideRemb`, or the
    /// first value [`validate`](Self::validate) refuses.
    pub fn build_receiver(&self, now: Instant) -> Result<GccReceiver, ConfigError> {
        self.validate()?;
        Ok(GccReceiver::new(self, now))
    }
}

/// The receiver-side estimator: feed it every RTP packet, send what
/// [`poll_remb`](ReceiveSideEstimator::poll_remb) answers as REMB.
#[derive(Debug, Clone)]
pub struct GccReceiver {
    delay: DelayBasedController,
    remb: RembScheduler,
    grouping: Grouping,
    base: Instant,
    has_estimate: bool,
    /// `Ar` has its start (see [`GccConfig::remb_start_from_receive_rate`]).
    started: bool,
    last_arrival: Instant,
    probes: Option<ProbeDetector>,
    probe_results: u64,
    min: Bitrate,
    max: Bitrate,
}

impl GccReceiver {
    /// A receiver estimator starting at `now`.
    pub fn new(c: &GccConfig, now: Instant) -> Self {
        GccReceiver {
            delay: DelayBasedController::new(c),
            remb: RembScheduler::new(c.remb_interval, c.remb_drop_ratio),
            grouping: c.grouping,
            base: now,
            has_estimate: false,
            started: !c.remb_start_from_receive_rate,
            last_arrival: now,
            probes: c.probing.then(ProbeDetector::default),
            probe_results: 0,
            min: c.min_bitrate,
            max: c.max_bitrate.max(c.min_bitrate),
        }
    }

    /// Probe clusters whose rate raised `Ar`.
    pub fn probe_results(&self) -> u64 {
        self.probe_results
    }

    /// The delay-based quantities (`m`, `γ`, signal, state, `Ar`, `R`).
    pub fn delay_stats(&self) -> DelayBasedStats {
        *self.delay.stats()
    }
}

impl ReceiveSideEstimator for GccReceiver {
    fn on_packet_received(&mut self, p: &ReceivedPacket) {
        let key = match self.grouping {
            Grouping::Frame => GroupKey::Frame(p.group),
            Grouping::SendBurst { span } => GroupKey::Burst { span },
        };
        let arrival_us = micros_since(p.arrival, self.base);
        let send_us = p.send_time.as_micros();
        let padding = p.kind == PacketKind::Padding;
        let updated = if padding {
            self.delay.on_padding(send_us, arrival_us, p.size)
        } else {
            self.delay.on_packet(send_us, arrival_us, p.size, key)
        };
        if updated {
            self.has_estimate = true;
        }
        if let Some(r) = self
            .probes
            .as_mut()
            .and_then(|d| d.on_packet(send_us, arrival_us, p.size, padding))
            && self
                .delay
                .apply_probe_result(r.rate.min(self.max).max(self.min), r.saturated)
        {
            self.probe_results += 1;
            self.has_estimate = true;
            self.remb.send_now();
        }
        if !self.started {
            self.started = self.delay.start_from_receive_rate();
        }
        self.last_arrival = self.last_arrival.max(p.arrival);
    }

    fn handle_timeout(&mut self, _now: Instant) {}

    fn poll_timeout(&self) -> Option<Instant> {
        let ar = self.remb_estimate()?;
        if self.remb.is_due(self.last_arrival, ar) {
            return Some(self.last_arrival);
        }
        self.remb.next_periodic()
    }

    fn poll_remb(&mut self, now: Instant) -> Option<Bitrate> {
        let ar = self.remb_estimate()?;
        self.remb.poll(now, ar)
    }

    fn estimate(&self) -> Bitrate {
        self.delay.estimate()
    }

    /// `Ar` once a group has been measured and (with
    /// [`GccConfig::remb_start_from_receive_rate`]) `Ar` has its start.
    fn remb_estimate(&self) -> Option<Bitrate> {
        (self.has_estimate && self.started).then(|| self.delay.estimate())
    }

    fn stats(&self) -> Vec<(&'static str, f64)> {
        let s = self.delay.stats();
        let mut v = s.extra();
        v.extend([
            ("a_r", s.a_r.as_bps_f64()),
            ("probe_results", self.probe_results as f64),
            ("standing_decreases", self.delay.standing_decreases() as f64),
        ]);
        v
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use cg_types::{DataSize, RemoteTime};

    fn packet(t0: Instant, i: u64, extra_queue_us: u64) -> ReceivedPacket {
        let frame = i / 4;
        let send = Duration::from_micros(frame * 33_333 + (i % 4) * 2_000);
        ReceivedPacket {
            arrival: t0 + send + Duration::from_micros(25_000 + extra_queue_us),
            send_time: RemoteTime::from_duration(send),
            size: DataSize::bytes(1000),
            group: frame,
            ssrc: 1,
            kind: PacketKind::Media,
        }
    }

    #[test]
    fn remb_is_sent_once_an_estimate_exists_then_every_second() {
        let t0 = Instant::now();
        let mut rx = GccConfig::default().build_receiver(t0).unwrap();
        assert_eq!(rx.poll_timeout(), None);
        assert_eq!(rx.poll_remb(t0), None, "nothing measured yet");
        let mut sent = Vec::new();
        for i in 0..(4 * 30 * 5) {
            let p = packet(t0, i, 0);
            rx.on_packet_received(&p);
            if rx.poll_timeout().is_some_and(|t| t <= p.arrival) {
                rx.handle_timeout(p.arrival);
                if let Some(r) = rx.poll_remb(p.arrival) {
                    sent.push((p.arrival, r));
                }
            }
        }
        assert!(
            sent.len() >= 4 && sent.len() <= 6,
            "{} REMBs in 5 s",
            sent.len()
        );
        for w in sent.windows(2) {
            let gap = w[1].0 - w[0].0;
            assert!(
                gap >= Duration::from_secs(1) && gap < Duration::from_millis(1100),
                "{gap:?}"
            );
        }
        let stats = rx.stats();
        assert!(stats.iter().any(|(n, v)| *n == "m" && v.is_finite()));
    }

    #[test]
    fn a_growing_queue_cuts_the_estimate_and_sends_remb_at_once() {
        let t0 = Instant::now();
        let cfg = GccConfig {
            start_bitrate: cg_types::Bitrate::mbps(1),
            ..GccConfig::default()
        };
        let mut rx = cfg.build_receiver(t0).unwrap();
        let mut last = None;
        let mut early = false;
        for i in 0..(4 * 30 * 20u64) {
            // From 10 s on, each frame queues 3 ms more than the previous one.
            let frame = i / 4;
            let q = frame.saturating_sub(300) * 3_000;
            let p = packet(t0, i, q);
            rx.on_packet_received(&p);
            if rx.poll_timeout().is_some_and(|t| t <= p.arrival) {
                rx.handle_timeout(p.arrival);
                if let Some(r) = rx.poll_remb(p.arrival) {
                    if let Some((at, prev)) = last
                        && r < prev
                        && p.arrival - at < Duration::from_secs(1)
                    {
                        early = true;
                    }
                    last = Some((p.arrival, r));
                }
            }
        }
        assert!(early, "a >3 % decrease went out before the 1 s period");
        assert!(
            rx.delay_stats().link_capacity.is_some(),
            "over-use was seen"
        );
    }

    #[test]
    fn a_probe_cluster_raises_the_estimate_and_goes_out_as_remb_at_once() {
        let t0 = Instant::now();
        let at = |us: u64| t0 + Duration::from_micros(us);
        let run = |cfg: &GccConfig| {
            let mut rx = cfg.build_receiver(t0).unwrap();
            // 300 kbit/s of media for 2 s (1250 bytes a frame), 25 ms away.
            for f in 0..60u64 {
                let send = f * 33_333;
                rx.on_packet_received(&ReceivedPacket {
                    arrival: at(send + 25_000),
                    send_time: RemoteTime::from_micros(send as i64),
                    size: DataSize::bytes(1250),
                    group: f,
                    ssrc: 1,
                    kind: PacketKind::Media,
                });
                rx.poll_remb(at(send + 25_000));
            }
            let before = rx.estimate();
            // A 40 ms cluster of 280-byte padding at 900 kbit/s (2.49 ms apart), then the
            // next frame, more than 25 ms after the last padding, which ends it.
            let start = 60 * 33_333;
            for i in 0..17u64 {
                let send = start + i * 2_489;
                rx.on_packet_received(&ReceivedPacket {
                    arrival: at(send + 25_000),
                    send_time: RemoteTime::from_micros(send as i64),
                    size: DataSize::bytes(280),
                    group: 59,
                    ssrc: 1,
                    kind: PacketKind::Padding,
                });
            }
            let send = start + 70_000;
            let now = at(send + 25_000);
            rx.on_packet_received(&ReceivedPacket {
                arrival: now,
                send_time: RemoteTime::from_micros(send as i64),
                size: DataSize::bytes(1250),
                group: 61,
                ssrc: 1,
                kind: PacketKind::Media,
            });
            (before, rx.poll_remb(now), rx.probe_results())
        };
        let (before, remb, n) = run(&GccConfig::default());
        assert!(before < Bitrate::kbps(400), "{before}");
        assert_eq!(n, 1);
        let remb = remb.expect("a REMB at once, not a second after the last");
        assert!(remb >= Bitrate::kbps(850), "{remb}");
        // Without probing (the papers), the same packets do not raise it.
        let off = GccConfig {
            probing: false,
            ..GccConfig::default()
        };
        let (_, remb, n) = run(&off);
        assert_eq!(n, 0);
        assert!(remb.is_none_or(|r| r < Bitrate::kbps(400)), "{remb:?}");
    }

    /// A receiver started under a running stream (`packet`: 4 × 1000 bytes a frame at
    /// 30 fps, 960 kbit/s) announces what it receives, not its start rate; with the switch
    /// off, the start rate (300 kbit/s) goes out first.
    #[test]
    fn a_receiver_joining_a_running_stream_starts_from_what_it_receives() {
        let t0 = Instant::now();
        // The first REMB, and the lowest estimate offered before it (what a receiver
        // report would have carried).
        let first_remb = |cfg: GccConfig| {
            let mut rx = cfg.build_receiver(t0).unwrap();
            let mut lowest: Option<Bitrate> = None;
            (0..4 * 30 * 3).find_map(|i| {
                let p = packet(t0, i, 0);
                rx.on_packet_received(&p);
                if let Some(e) = rx.remb_estimate() {
                    lowest = Some(lowest.map_or(e, |l| l.min(e)));
                }
                rx.poll_timeout()
                    .is_some_and(|t| t <= p.arrival)
                    .then(|| rx.poll_remb(p.arrival).map(|r| (p.arrival - t0, r, lowest)))
                    .flatten()
            })
        };
        let start = Bitrate::kbps(300);
        let (at, r, lowest) = first_remb(GccConfig {
            start_bitrate: start,
            ..GccConfig::default()
        })
        .expect("a REMB");
        assert!(r >= Bitrate::kbps(900), "{r} at {at:?}");
        assert!(at <= Duration::from_millis(600), "{at:?}");
        // Nothing lower to bundle with a receiver report before the first REMB either.
        assert!(
            lowest.is_some_and(|l| l >= Bitrate::kbps(900)),
            "{lowest:?}"
        );
        let (_, r, _) = first_remb(GccConfig {
            start_bitrate: start,
            remb_start_from_receive_rate: false,
            ..GccConfig::default()
        })
        .expect("a REMB");
        assert!(r <= Bitrate::kbps(310), "{r}");
        // A start rate above what arrives stays the start.
        let (_, r, _) = first_remb(GccConfig {
            start_bitrate: Bitrate::mbps(2),
            ..GccConfig::default()
        })
        .expect("a REMB");
        assert!(r >= Bitrate::kbps(1900), "{r}");
    }
}
