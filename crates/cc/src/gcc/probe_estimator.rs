//! The probe-result estimator, as libwebrtc's `ProbeBitrateEstimator`: from the feedback of
//! the packets sent during one probe cluster (padding and media alike), the send rate over
//! the cluster's send times and the receive rate over its arrival times; the result is the
//! smaller of the two, and 95 % of the receive rate when it is under 90 % of the send rate
//! (the link was saturated: its rate was found). A cluster needs at least
//! [`MIN_PACKETS`] received packets; a receive rate more than twice the send rate is
//! discarded (compressed feedback, not capacity).
//!
//! A cg rule on top: a receive span stretched past the send span does not count as
//! saturation when packets arrived bunched (closer than half their send gap, which a link
//! that cannot carry the cluster never does) and the one-way delay does not grow through
//! the cluster (the robust slope of [`delay_slope`], under `1/0.9 − 1`), as a queue at a
//! bottleneck makes it grow. Such a cluster is a lower bound (`saturated` false) at the send
//! rate over `1 +` that slope. Reason: a receiving host's scheduling stall stamps the
//! cluster's last packets late, all at once, which stretches the span as a bottleneck
//! would, and a bottleneck rate caps the pacer (issue #37). A stall moves a few packets, a
//! bottleneck all of them, so the median of the pairwise slopes tells them apart; a link
//! shared with other traffic may stretch the span in a few gaps too, but never bunches.
//!
//! Beyond the papers (MMSys16 has no probing); send-side mode and the REMB receiver's
//! detector ([`super::probe_detector`]).

use cg_types::{Bitrate, DataSize};

/// Received packets a cluster needs (libwebrtc: 80 % of its 5 minimum probes, i.e. 4; we
/// ask for 5, as cg-rtp's padding packets are small).
pub const MIN_PACKETS: u32 = 5;
/// Longest send or receive span of a cluster (libwebrtc `kMaxClusterInterval`... 1 s).
const MAX_INTERVAL_US: i64 = 1_000_000;
/// Receive over send rate above which a cluster is discarded (`kMaxValidRatio`).
const MAX_VALID_RATIO: f64 = 2.0;
/// Below this receive / send ratio the link is taken as saturated
/// (`kMinRatioForUnsaturatedLink`).
pub(crate) const SATURATED_RATIO: f64 = 0.9;
/// The result's share of the receive rate on a saturated link
/// (`kTargetUtilizationFraction`).
const SATURATED_SHARE: f64 = 0.95;
/// Packets a cluster keeps for [`delay_slope`]: a 30 ms cluster at 12.5 Mbit/s is about 40
/// full-size packets; further ones count in the rates only.
const KEPT: usize = 96;

/// A valid cluster's result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProbeResult {
    /// The rate: the smaller of send and receive rate, or 95 % of the receive rate when
    /// the link was saturated.
    pub rate: Bitrate,
    /// The receive rate fell under 90 % of the send rate: the link's rate was found.
    /// Otherwise the link carried the cluster and the rate is only a lower bound of it.
    pub saturated: bool,
}

/// One cluster's received packets so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterStats {
    /// Cluster identifier.
    pub id: u32,
    packets: u32,
    first_send_us: i64,
    last_send_us: i64,
    first_arrival_us: i64,
    last_arrival_us: i64,
    size_total: u64,
    size_last_send: u64,
    size_first_arrival: u64,
    /// (send, arrival) of the first [`KEPT`] packets.
    times: Vec<(i64, i64)>,
}

impl ClusterStats {
    /// A cluster with no packet yet.
    pub fn new(id: u32) -> Self {
        ClusterStats {
            id,
            packets: 0,
            first_send_us: i64::MAX,
            last_send_us: i64::MIN,
            first_arrival_us: i64::MAX,
            last_arrival_us: i64::MIN,
            size_total: 0,
            size_last_send: 0,
            size_first_arrival: 0,
            times: Vec::new(),
        }
    }

    /// A packet of the cluster sent at `send_us` (sender clock) arrived at `arrival_us`
    /// (receiver clock).
    pub fn on_packet(&mut self, send_us: i64, arrival_us: i64, size: DataSize) {
        let b = size.as_bytes();
        self.packets += 1;
        self.size_total = self.size_total.saturating_add(b);
        if send_us < self.first_send_us {
            self.first_send_us = send_us;
        }
        if send_us >= self.last_send_us {
            self.last_send_us = send_us;
            self.size_last_send = b;
        }
        if arrival_us < self.first_arrival_us {
            self.first_arrival_us = arrival_us;
            self.size_first_arrival = b;
        }
        self.last_arrival_us = self.last_arrival_us.max(arrival_us);
        if self.times.len() < KEPT {
            self.times.push((send_us, arrival_us));
        }
    }

    /// Received packets so far.
    pub fn packets(&self) -> u32 {
        self.packets
    }

    /// The probe result, if the cluster is valid.
    pub fn result(&self) -> Option<ProbeResult> {
        if self.packets < MIN_PACKETS {
            return None;
        }
        let send_us = self.last_send_us.saturating_sub(self.first_send_us);
        let recv_us = self.last_arrival_us.saturating_sub(self.first_arrival_us);
        if send_us <= 0 || recv_us <= 0 || send_us > MAX_INTERVAL_US || recv_us > MAX_INTERVAL_US {
            return None;
        }
        // The last packet sent took no part in the send interval, the first received none
        // in the receive interval.
        let send_bits = (self.size_total - self.size_last_send) as f64 * 8.0;
        let recv_bits = (self.size_total - self.size_first_arrival) as f64 * 8.0;
        let send = send_bits / (send_us as f64 / 1e6);
        let recv = recv_bits / (recv_us as f64 / 1e6);
        if recv > MAX_VALID_RATIO * send {
            return None;
        }
        let mut saturated = recv < SATURATED_RATIO * send;
        let mut rate = if saturated {
            SATURATED_SHARE * recv
        } else {
            send.min(recv)
        };
        if saturated
            && bunched(&self.times)
            && let Some(slope) = delay_slope(&self.times)
            && slope < 1.0 / SATURATED_RATIO - 1.0
        {
            // The span was stretched at the receiver, not by a queue: the link carried the
            // bulk of the cluster at the send rate over `1 + slope`.
            saturated = false;
            rate = send / (1.0 + slope.max(0.0));
        }
        Some(ProbeResult {
            rate: Bitrate::from_bps_f64(rate),
            saturated,
        })
    }
}

/// Whether two packets sent one after the other (`times`: send, arrival) arrived closer
/// than half their send gap: what a receiving host that read them late, together, makes of
/// them. A link that could not carry the cluster spreads every packet at least as far as it
/// was sent, so a saturated cluster does not show it.
fn bunched(times: &[(i64, i64)]) -> bool {
    times
        .windows(2)
        .any(|w| w[1].0 > w[0].0 && 2 * (w[1].1 - w[0].1) < w[1].0 - w[0].0)
}

/// How fast the one-way delay grows through a cluster: the Theil–Sen slope (the median of
/// the pairwise slopes) of arrival minus send time over send time, from `times` (send,
/// arrival); `None` from fewer than three packets with distinct send times. A queue that
/// builds at a bottleneck raises every later packet's delay, so most pairs slope up by
/// `send rate / bottleneck rate − 1`; a stall at the receiver stamps a few packets late at
/// once and moves few pairs (the median stands as long as under about 29 % of the packets
/// are moved).
fn delay_slope(times: &[(i64, i64)]) -> Option<f64> {
    let mut slopes = Vec::with_capacity(times.len() * times.len().saturating_sub(1) / 2);
    for (i, &(s1, a1)) in times.iter().enumerate() {
        for &(s2, a2) in &times[i + 1..] {
            let ds = s2 - s1;
            if ds != 0 {
                slopes.push(((a2 - s2) - (a1 - s1)) as f64 / ds as f64);
            }
        }
    }
    if slopes.len() < 3 {
        return None;
    }
    let mid = slopes.len() / 2;
    let (_, m, _) = slopes.select_nth_unstable_by(mid, f64::total_cmp);
    Some(*m)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` packets of 1000 bytes sent every `send_gap_us`, served by a bottleneck of
    /// `cap_bps` (25 ms away).
    fn cluster(n: i64, send_gap_us: i64, cap_bps: f64) -> ClusterStats {
        let mut c = ClusterStats::new(1);
        let tx = (8000.0 / cap_bps * 1e6) as i64;
        let mut free = 0;
        for i in 0..n {
            let send = i * send_gap_us;
            free = free.max(send) + tx;
            c.on_packet(send, free + 25_000, DataSize::bytes(1000));
        }
        c
    }

    #[test]
    fn below_capacity_the_result_is_the_send_rate_and_a_lower_bound() {
        // 1000 bytes every 4 ms: 2 Mbit/s through a 5 Mbit/s link.
        let r = cluster(10, 4000, 5e6).result().unwrap();
        assert!((r.rate.as_bps_f64() / 2e6 - 1.0).abs() < 0.01, "{r:?}");
        assert!(!r.saturated);
    }

    #[test]
    fn above_capacity_the_result_is_95_percent_of_the_receive_rate() {
        // 4 Mbit/s into 1 Mbit/s: packets arrive 8 ms apart.
        let r = cluster(10, 2000, 1e6).result().unwrap();
        assert!((r.rate.as_bps_f64() / 0.95e6 - 1.0).abs() < 0.01, "{r:?}");
        assert!(r.saturated);
    }

    /// `n` packets of 1000 bytes sent every `send_gap_us` over a fast link (25 ms away), read
    /// by a receiving host that stalls for `stall_us` as the first of the last `late` packets
    /// arrives: those are stamped at the stall's end, one after the other.
    fn stalled_cluster(n: i64, send_gap_us: i64, late: i64, stall_us: i64) -> ClusterStats {
        let mut c = ClusterStats::new(1);
        let first_late = n - late;
        let wake = first_late * send_gap_us + 25_000 + stall_us;
        for i in 0..n {
            let send = i * send_gap_us;
            let arrival = if i >= first_late {
                wake + (i - first_late) * 10
            } else {
                send + 25_000
            };
            c.on_packet(send, arrival, DataSize::bytes(1000));
        }
        c
    }

    #[test]
    fn a_receiving_host_stall_at_the_clusters_end_is_no_bottleneck() {
        // 5.3 Mbit/s for 13.5 ms (10 packets, what cg probes at the maximum), the last two
        // stamped after a 4 ms stall: the span reads 84 % of the send rate.
        let c = stalled_cluster(10, 1500, 2, 4000);
        let span = {
            let send = 9000.0 * 8.0 / 13.5e-3;
            let recv = 9000.0 * 8.0 / ((c.last_arrival_us - c.first_arrival_us) as f64 / 1e6);
            recv / send
        };
        assert!(
            span < SATURATED_RATIO,
            "the span alone reads saturation: {span}"
        );
        let r = c.result().unwrap();
        assert!(!r.saturated, "{r:?}");
        let send = 9000.0 * 8.0 / 13.5e-3;
        assert!((r.rate.as_bps_f64() / send - 1.0).abs() < 0.01, "{r:?}");
        // A stall longer still, over a third of the packets, moves the median too: then the
        // estimator cannot tell, and reads saturation as libwebrtc does.
        assert!(
            stalled_cluster(10, 1500, 4, 8000)
                .result()
                .unwrap()
                .saturated
        );
    }

    #[test]
    fn a_link_busy_with_other_traffic_inside_the_cluster_is_the_links_stretch() {
        // The cluster of the stall test, but the link sends others' packets for 4 ms after
        // the eighth: the last two arrive 4 ms late, spread as they were sent (no bunching),
        // so the span's verdict stands although few pairs' delay grows.
        let mut c = ClusterStats::new(1);
        for i in 0..10 {
            let send = i * 1500;
            let hole = if i >= 8 { 4000 } else { 0 };
            c.on_packet(send, send + 25_000 + hole, DataSize::bytes(1000));
        }
        assert!(delay_slope(&c.times).unwrap() < 1.0 / SATURATED_RATIO - 1.0);
        let r = c.result().unwrap();
        assert!(r.saturated, "{r:?}");
    }

    #[test]
    fn a_bottleneck_just_under_the_cluster_rate_is_found() {
        // 5.3 Mbit/s into 4.5 Mbit/s (85 %), 12 packets.
        let r = cluster(12, 1500, 4.5e6).result().unwrap();
        assert!(r.saturated, "{r:?}");
        assert!(
            (r.rate.as_bps_f64() / (0.95 * 4.5e6) - 1.0).abs() < 0.02,
            "{r:?}"
        );
    }

    #[test]
    fn the_delay_slope_is_the_median_pairwise_one() {
        assert_eq!(delay_slope(&[(0, 5), (10, 15)]), None, "one pair");
        let even: Vec<(i64, i64)> = (0..8).map(|i| (i * 100, i * 150)).collect();
        assert_eq!(delay_slope(&even), Some(0.5));
        let mut outlier = even.clone();
        outlier[7].1 += 10_000;
        assert_eq!(delay_slope(&outlier), Some(0.5), "one packet late");
    }

    #[test]
    fn too_few_packets_or_a_compressed_arrival_give_nothing() {
        assert_eq!(cluster(4, 4000, 5e6).result(), None);
        let mut c = ClusterStats::new(1);
        for i in 0..10 {
            c.on_packet(i * 10_000, 100_000 + i * 100, DataSize::bytes(1000));
        }
        assert_eq!(c.result(), None, "receive rate 100 times the send rate");
    }
}
