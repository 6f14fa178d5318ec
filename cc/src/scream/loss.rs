//! Loss detection (SCReAM v2 draft §4.2.1.1) and the loss-reaction gate.
//!
//! RACK-like (RFC 8985 §6.2 idea, time-based reordering window): a packet is lost when it is
//! still unacknowledged `reorder_window` (30 ms) after the received edge passed it, i.e. after
//! a packet sent later was acknowledged. Detection runs on every feedback and on the timer
//! [`Flight::loss_deadline`] returns.
//!
//! The gate (reference implementation): a loss counts as a congestion event only if the
//! packet-loss-rate EWMA exceeds 1 % or `qdelay_avg` exceeds T/4, so sparse random loss on an
//! uncongested path does not pin the window.

use std::time::{Duration, Instant};

use super::config::LossGate;
use super::flight::Flight;

/// Packets declared lost by one detection pass.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Lost {
    /// How many.
    pub packets: u64,
    /// Their bytes.
    pub bytes: u64,
}

impl Flight {
    /// Declares lost every packet the edge passed more than `reorder_window` ago, and drops
    /// acknowledged packets from the history's front.
    pub fn detect_losses(&mut self, now: Instant, reorder_window: Duration) -> Lost {
        let mut lost = Lost::default();
        while let Some(front) = self.packets.front() {
            if self.highest_acked.is_none_or(|h| front.seq > h) {
                break;
            }
            if !front.acked {
                match front.missing_since {
                    Some(t) if now >= t + reorder_window => {
                        lost.packets += 1;
                        lost.bytes += u64::from(front.size);
                    }
                    _ => break,
                }
            }
            self.packets.pop_front();
        }
        lost
    }

    /// When the oldest missing packet will be declared lost, if any.
    pub fn loss_deadline(&self, reorder_window: Duration) -> Option<Instant> {
        let front = self.packets.front()?;
        if front.acked || self.highest_acked.is_none_or(|h| front.seq > h) {
            return None;
        }
        front.missing_since.map(|t| t + reorder_window)
    }
}

/// Packet-loss-rate EWMA and the reaction gate.
#[derive(Debug, Clone, Default)]
pub struct LossRate {
    /// Smoothed fraction of packets lost, in `[0, 1]`.
    pub rate: f64,
}

impl LossRate {
    /// Folds in one feedback's outcome (`lost` of `lost + delivered` packets).
    pub fn update(&mut self, lost: u64, delivered: u64, gain: f64) {
        let total = lost + delivered;
        if total == 0 {
            return;
        }
        let f = lost as f64 / total as f64;
        let g = gain.clamp(0.0, 1.0);
        self.rate = ((1.0 - g) * self.rate + g * f).clamp(0.0, 1.0);
    }

    /// Whether a detected loss is a congestion event.
    pub fn counts(&self, gate: Option<&LossGate>, qdelay_avg: Duration, target: Duration) -> bool {
        match gate {
            None => true,
            Some(g) => {
                self.rate > g.min_loss_rate
                    || qdelay_avg.as_secs_f64() > g.qdelay_fraction * target.as_secs_f64()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cg_types::Ecn;

    const REORDER: Duration = Duration::from_millis(30);

    #[test]
    fn packet_is_lost_only_after_the_reorder_window() {
        let t0 = Instant::now();
        let mut f = Flight::new(100);
        for s in 0..4 {
            f.on_sent(s, 1000, 0, Ecn::Ect1);
        }
        f.on_acked(0, t0);
        f.on_acked(2, t0 + Duration::from_millis(5)); // 1 is now missing
        assert_eq!(
            f.detect_losses(t0 + Duration::from_millis(5), REORDER),
            Lost::default()
        );
        assert_eq!(
            f.loss_deadline(REORDER),
            Some(t0 + Duration::from_millis(35))
        );
        // 29 ms later: still within the reorder window.
        assert_eq!(
            f.detect_losses(t0 + Duration::from_millis(34), REORDER)
                .packets,
            0
        );
        assert_eq!(
            f.detect_losses(t0 + Duration::from_millis(35), REORDER),
            Lost {
                packets: 1,
                bytes: 1000
            }
        );
        assert_eq!(f.loss_deadline(REORDER), None);
    }

    #[test]
    fn reordered_packet_arriving_within_the_window_is_not_lost() {
        let t0 = Instant::now();
        let mut f = Flight::new(100);
        for s in 0..3 {
            f.on_sent(s, 1000, 0, Ecn::Ect1);
        }
        f.on_acked(2, t0);
        f.on_acked(0, t0 + Duration::from_millis(10));
        f.on_acked(1, t0 + Duration::from_millis(20));
        assert_eq!(
            f.detect_losses(t0 + Duration::from_secs(1), REORDER)
                .packets,
            0
        );
        assert_eq!(f.len(), 0, "acknowledged packets leave the history");
    }

    #[test]
    fn packets_above_the_edge_are_never_declared_lost() {
        let t0 = Instant::now();
        let mut f = Flight::new(100);
        for s in 0..3 {
            f.on_sent(s, 1000, 0, Ecn::Ect1);
        }
        assert_eq!(
            f.detect_losses(t0 + Duration::from_secs(10), REORDER)
                .packets,
            0
        );
    }

    #[test]
    fn gate_needs_frequent_loss_or_a_queue() {
        let target = Duration::from_millis(60);
        let gate = LossGate::default();
        let mut r = LossRate::default();
        r.update(1, 999, 1.0 / 16.0);
        assert!(!r.counts(Some(&gate), Duration::ZERO, target));
        assert!(r.counts(Some(&gate), Duration::from_millis(16), target));
        assert!(r.counts(None, Duration::ZERO, target));
        for _ in 0..50 {
            r.update(5, 95, 1.0 / 16.0);
        }
        assert!(r.counts(Some(&gate), Duration::ZERO, target));
    }
}
