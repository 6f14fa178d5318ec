//! Receive-side probe detection (REMB mode), after libwebrtc's
//! `RemoteBitrateEstimatorAbsSendTime` (`ComputeClusters`, `FindBestProbe`,
//! `ProcessClusters`): the receiver finds the sender's probe clusters among the packets it
//! gets, from their send times (abs-send-time) and arrival times, and measures each
//! cluster's send and receive rates; a valid one may raise the estimate (and so the REMB
//! value) at once.
//!
//! libwebrtc tells probe packets apart by their regular send spacing, and only looks for
//! them in the first 2 s of a call (packets over 200 bytes, at most 15). cg's sender probes
//! later too (further, recovery and capacity probes, [`super::probe_controller`]) while its
//! paced media has a regular spacing of its own, which would read as a probe at the pacing
//! rate on every frame. So here a cluster is delimited by padding, which cg sends only for
//! probes: a cluster starts at a padding packet and takes every following packet, media
//! or padding, while the next padding packet is sent within [`MAX_PADDING_GAP`] of the
//! previous one (during a cluster media leaves at the probe rate too). Media after the
//! last padding packet of a run is not part of it. The sender leaves at least twice that
//! gap between clusters in REMB mode so that back-to-back clusters (3× then 6× at start)
//! are measured apart.
//!
//! A finished cluster is measured as [`ClusterStats`] does for send-side probing (send
//! rate over the send span, receive rate over the arrival span, 95 % of the receive rate on
//! a saturated link, at least [`super::probe_estimator::MIN_PACKETS`] packets — libwebrtc
//! asks for 4), and is ignored when its send span is below [`MIN_SPAN`]: over a few
//! milliseconds the arrival-time jitter of a real path is as large as the span itself.
//!
//! Beyond the papers (MMSys16 has no probing).

use std::time::Duration;

use cg_types::DataSize;

use crate::gcc::probe_estimator::{ClusterStats, ProbeResult};

/// Longest send-time gap between two padding packets of one cluster. A cluster at the
/// lowest probe rates cg sends (about 400 kbit/s for a recovery probe) has a 1200-byte
/// media packet (24 ms) between two padding packets at most.
pub const MAX_PADDING_GAP: Duration = Duration::from_millis(25);
/// Shortest send span of a cluster that is measured (the sender's clusters last at least
/// 30 ms, [`super::probe_controller::PROBE_DURATION`]).
pub const MIN_SPAN: Duration = Duration::from_millis(10);
/// Media packets buffered between two padding packets, at most (beyond, the run ends).
const MAX_PENDING: usize = 256;

#[derive(Debug, Clone)]
struct Run {
    stats: ClusterStats,
    first_send_us: i64,
    last_padding_send_us: i64,
    /// Media sent since the last padding packet: part of the cluster only if padding follows.
    pending: Vec<(i64, i64, DataSize)>,
}

/// The detector: feed it every received packet in arrival order.
#[derive(Debug, Clone, Default)]
pub struct ProbeDetector {
    run: Option<Run>,
    clusters: u64,
}

impl ProbeDetector {
    /// A packet sent at `send_us` (sender clock, µs) that arrived at `arrival_us` (receiver
    /// clock, µs); `padding` if it carried no payload. Returns the result of a valid cluster
    /// this packet ended.
    pub fn on_packet(
        &mut self,
        send_us: i64,
        arrival_us: i64,
        size: DataSize,
        padding: bool,
    ) -> Option<ProbeResult> {
        let gap_us = i64::try_from(MAX_PADDING_GAP.as_micros()).unwrap_or(i64::MAX);
        let within = self
            .run
            .as_ref()
            .is_some_and(|r| send_us.saturating_sub(r.last_padding_send_us) <= gap_us);
        if padding {
            if within && let Some(r) = self.run.as_mut() {
                for (s, a, b) in r.pending.drain(..) {
                    r.stats.on_packet(s, a, b);
                }
                r.stats.on_packet(send_us, arrival_us, size);
                r.last_padding_send_us = r.last_padding_send_us.max(send_us);
                return None;
            }
            let done = self.finish();
            let mut stats = ClusterStats::new(0);
            stats.on_packet(send_us, arrival_us, size);
            self.run = Some(Run {
                stats,
                first_send_us: send_us,
                last_padding_send_us: send_us,
                pending: Vec::new(),
            });
            return done;
        }
        if within
            && let Some(r) = self.run.as_mut()
            && r.pending.len() < MAX_PENDING
        {
            r.pending.push((send_us, arrival_us, size));
            return None;
        }
        self.finish()
    }

    /// Clusters measured (valid or not).
    pub fn clusters(&self) -> u64 {
        self.clusters
    }

    fn finish(&mut self) -> Option<ProbeResult> {
        let r = self.run.take()?;
        self.clusters += 1;
        let span_us = r.last_padding_send_us.saturating_sub(r.first_send_us);
        let min_us = i64::try_from(MIN_SPAN.as_micros()).unwrap_or(i64::MAX);
        if span_us < min_us {
            return None;
        }
        r.stats.result()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cg_types::Bitrate;

    /// Media (1200 bytes, every 33 ms) with a probe cluster of 280-byte padding packets at
    /// `probe_bps` for `cluster_ms` from 100 ms on, through a bottleneck of `cap_bps` 25 ms
    /// away. Returns the results the detector gave.
    fn run(probe_bps: f64, cluster_ms: i64, cap_bps: f64) -> Vec<Bitrate> {
        let mut d = ProbeDetector::default();
        let mut packets = Vec::new();
        let cluster_end = 100_000 + cluster_ms * 1000;
        // The frames sent during the cluster are left out: here they would come on top of
        // its rate, while a pacer sends them at it.
        for f in 0..10 {
            let t = f * 33_333;
            if !(100_000..cluster_end + 1_000).contains(&t) {
                packets.push((t, 1200, false));
            }
        }
        let gap = (280.0 * 8.0 / probe_bps * 1e6) as i64;
        let mut t = 100_000;
        while t < cluster_end {
            packets.push((t, 280, true));
            t += gap;
        }
        packets.sort_by_key(|p| p.0);
        let mut free = 0.0f64;
        let mut out = Vec::new();
        for (send, size, padding) in packets {
            free = free.max(send as f64) + size as f64 * 8.0 / cap_bps * 1e6;
            let arrival = free as i64 + 25_000;
            if let Some(r) = d.on_packet(send, arrival, DataSize::bytes(size), padding) {
                out.push(r.rate);
            }
        }
        out
    }

    #[test]
    fn a_cluster_at_three_times_the_estimate_through_a_fast_link_gives_its_rate() {
        // 900 kbit/s (3× a 300 kbit/s estimate) for 40 ms through 5 Mbit/s.
        let r = run(900e3, 40, 5e6);
        assert_eq!(r.len(), 1, "{r:?}");
        assert!((r[0].as_bps_f64() / 900e3 - 1.0).abs() < 0.05, "{}", r[0]);
    }

    #[test]
    fn a_cluster_spread_out_by_the_bottleneck_gives_about_the_bottleneck_rate() {
        // 2.7 Mbit/s into 1 Mbit/s: the packets arrive at 1 Mbit/s.
        let r = run(2.7e6, 40, 1e6);
        assert_eq!(r.len(), 1, "{r:?}");
        let bps = r[0].as_bps_f64();
        assert!((0.9e6..=1.0e6).contains(&bps), "{}", r[0]);
    }

    #[test]
    fn too_few_packets_or_too_short_a_cluster_gives_nothing() {
        // Four padding packets (2.7 ms of 900 kbit/s): too few.
        assert!(run(900e3, 9, 5e6).is_empty());
        // Nine padding packets in 8 ms at 2.7 Mbit/s: enough packets, too short.
        assert!(run(2.7e6, 7, 5e6).is_empty());
        // Without padding, paced media is never a probe.
        let mut d = ProbeDetector::default();
        for i in 0..100 {
            assert_eq!(
                d.on_packet(i * 4_000, i * 4_000 + 25_000, DataSize::bytes(1200), false),
                None
            );
        }
        assert_eq!(d.clusters(), 0);
    }

    #[test]
    fn clusters_a_gap_apart_are_measured_apart() {
        let mut d = ProbeDetector::default();
        let mut out = Vec::new();
        // 900 kbit/s for 64 ms, 50 ms of nothing, 1.8 Mbit/s for 32 ms, then media.
        let mut feed = |from: i64, to: i64, bps: f64, out: &mut Vec<Bitrate>| {
            let gap = (280.0 * 8.0 / bps * 1e6) as i64;
            let mut t = from;
            while t < to {
                out.extend(
                    d.on_packet(t, t + 25_000, DataSize::bytes(280), true)
                        .map(|r| r.rate),
                );
                t += gap;
            }
        };
        feed(0, 64_000, 900e3, &mut out);
        feed(114_000, 146_000, 1.8e6, &mut out);
        out.extend(
            d.on_packet(200_000, 225_000, DataSize::bytes(1200), false)
                .map(|r| r.rate),
        );
        assert_eq!(out.len(), 2, "{out:?}");
        assert!(
            (out[0].as_bps_f64() / 900e3 - 1.0).abs() < 0.05,
            "{}",
            out[0]
        );
        assert!(
            (out[1].as_bps_f64() / 1.8e6 - 1.0).abs() < 0.05,
            "{}",
            out[1]
        );
    }
}
