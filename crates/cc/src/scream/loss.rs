//! Loss detection (SCReAM v2 draft §4.2.1.1) and the loss-reaction gate.
//!
//! RACK-like (RFC 8985 §6.2 idea, time-based reordering window): a packet is lost when it is
//! still unacknowledged a reordering window after the received edge passed it, i.e. after a
//! packet sent later was acknowledged. Detection runs on every feedback and on the timer
//! [`Flight::loss_deadline`] returns.
//!
//! The window is `reorder_window` (30 ms) or, with `adaptive_reorder_window`, what RFC 8298
//! §4.1.2.4 asks: "If later feedback indicates that a previously lost marked packet was indeed
//! received, then the reordering window is updated to reflect the reordering delay", the time
//! from the edge passing the packet to its acknowledgement ([`ReorderWindow`]). A fixed 30 ms
//! is shorter than one RFC 8888 report interval (40 ms): a packet 20 ms late on the link often
//! reaches the sender one report after the packets that overtook it, more than 30 ms after
//! them, and was declared lost: every such packet was a false loss reaction, and a path that
//! reorders a little cost the flow part of its rate (figures:
//! `docs/notes/2026-12-01-figures-from-docs.md`).
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
                        if self.declared_lost.len() == super::flight::DECLARED_LOST_KEPT {
                            self.declared_lost.pop_front();
                        }
                        self.declared_lost.push_back((front.seq, t));
                    }
                    _ => break,
                }
            }
            self.packets.pop_front();
        }
        lost
    }

    /// A packet declared lost was acknowledged after all: when the edge had passed it
    /// (`None` if it was not declared lost, or is long forgotten).
    pub fn declared_lost_acked(&mut self, seq: u64) -> Option<Instant> {
        let i = self.declared_lost.iter().position(|&(s, _)| s == seq)?;
        self.declared_lost.remove(i).map(|(_, t)| t)
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

/// RFC 8298 §4.1.2.4's reordering window, learnt from the packets acknowledged after the
/// edge had passed them: 1.25 × the longest such delay over the last 5–10 s (two 5 s slots),
/// at least the configured window and at most the larger of sRTT and 100 ms (RACK, RFC 8985
/// §6.2, caps its window at sRTT: a longer one would only delay the reaction to real loss).
#[derive(Debug, Clone, Default)]
pub struct ReorderWindow {
    /// Longest reordering delay of the previous and the current slot.
    slots: [Duration; 2],
    slot_start: Option<Instant>,
    /// The window as of the last [`ReorderWindow::update`].
    current: Duration,
}

/// One slot of the reordering-delay maximum.
const REORDER_SLOT: Duration = Duration::from_secs(5);

impl ReorderWindow {
    /// A packet the edge had passed at `missing_since` was acknowledged at `now`.
    pub fn on_late_ack(&mut self, missing_since: Instant, now: Instant) {
        self.rotate(now);
        let d = now.saturating_duration_since(missing_since);
        self.slots[1] = self.slots[1].max(d);
    }

    fn rotate(&mut self, now: Instant) {
        let start = *self.slot_start.get_or_insert(now);
        let age = now.saturating_duration_since(start);
        if age >= 2 * REORDER_SLOT {
            self.slots = [Duration::ZERO; 2];
            self.slot_start = Some(now);
        } else if age >= REORDER_SLOT {
            self.slots = [self.slots[1], Duration::ZERO];
            self.slot_start = Some(start + REORDER_SLOT);
        }
    }

    /// Recomputes the window at `now` from the configured one and sRTT; returns it.
    pub fn update(&mut self, now: Instant, configured: Duration, srtt: Duration) -> Duration {
        self.rotate(now);
        let learnt = self.learnt().mul_f64(1.25);
        let cap = srtt.max(Duration::from_millis(100));
        self.current = configured.max(learnt.min(cap));
        self.current
    }

    /// The window as of the last update (zero before the first).
    pub fn current(&self) -> Duration {
        self.current
    }

    /// The longest reordering delay measured over the slots.
    pub fn learnt(&self) -> Duration {
        self.slots[0].max(self.slots[1])
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
