//! The probe-result estimator, as libwebrtc's `ProbeBitrateEstimator`: from the feedback of
//! the packets sent during one probe cluster (padding and media alike), the send rate over
//! the cluster's send times and the receive rate over its arrival times; the result is the
//! smaller of the two, and 95 % of the receive rate when it is under 90 % of the send rate
//! (the link was saturated: its rate was found). A cluster needs at least
//! [`MIN_PACKETS`] received packets; a receive rate more than twice the send rate is
//! discarded (compressed feedback, not capacity).
//!
//! Beyond the papers (MMSys16 has no probing); send-side mode only.

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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
        let saturated = recv < SATURATED_RATIO * send;
        let rate = if saturated {
            SATURATED_SHARE * recv
        } else {
            send.min(recv)
        };
        Some(ProbeResult {
            rate: Bitrate::from_bps_f64(rate),
            saturated,
        })
    }
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
