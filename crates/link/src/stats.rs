//! Per-flow counters kept by the link from its own events.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::time::Duration;

use cg_types::DataSize;

use crate::event::{DropReason, EventKind, EventLog, EventSink, LinkEvent};
use crate::packet::FlowId;

/// Jain's fairness index `(Σx)² / (n·Σx²)` of per-flow rates: 1 for equal shares, `1/n` for
/// one taker. `None` for no flows or when every rate is zero (nobody got anything: not
/// "fair"). The one definition netlab's summaries and cg-cc's simulated scenarios share.
pub fn jain_index(rates: &[f64]) -> Option<f64> {
    let sum: f64 = rates.iter().sum();
    let sq: f64 = rates.iter().map(|x| x * x).sum();
    if rates.is_empty() || sq == 0.0 || !sq.is_finite() {
        return None;
    }
    Some(sum * sum / (rates.len() as f64 * sq))
}

/// Flows tracked individually; packets of further flows count only in the totals, so hostile
/// input (a port scan through netlab) cannot grow the map without bound.
pub const MAX_TRACKED_FLOWS: usize = 4096;

/// A fast non-cryptographic hasher for the per-flow map (FxHash's rotate-multiply): flow ids
/// are hashed several times per packet, and SipHash's DoS resistance buys nothing here since
/// the map is bounded by [`MAX_TRACKED_FLOWS`].
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher(u64);

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(b));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.write_u64(i as u64);
    }
    fn write_u16(&mut self, i: u16) {
        self.write_u64(i as u64);
    }
    fn write_u32(&mut self, i: u32) {
        self.write_u64(i as u64);
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

type FlowMap<V> = HashMap<FlowId, V, BuildHasherDefault<FxHasher>>;

/// Counters of one flow (or of all flows together).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FlowStats {
    /// Packets offered to the link.
    pub arrived: u64,
    /// Bytes offered to the link.
    pub arrived_bytes: DataSize,
    /// Packets accepted by the qdisc.
    pub enqueued: u64,
    /// Packets lost to random loss before the queue.
    pub lost: u64,
    /// Packets dropped by the queue (tail drop or AQM).
    pub dropped: u64,
    /// Bytes dropped by the queue.
    pub dropped_bytes: DataSize,
    /// Packets CE-marked.
    pub marked: u64,
    /// Packets dequeued for serialisation.
    pub dequeued: u64,
    /// Sum of the sojourn times of dequeued packets.
    pub sojourn_total: Duration,
    /// Largest sojourn time.
    pub sojourn_max: Duration,
    /// Packets delivered (duplicates included).
    pub delivered: u64,
    /// Bytes delivered.
    pub delivered_bytes: DataSize,
    /// Duplicates made.
    pub duplicated: u64,
}

impl FlowStats {
    /// Mean sojourn time of dequeued packets; `None` if none was dequeued (no traffic is not
    /// an empty queue).
    pub fn mean_sojourn(&self) -> Option<Duration> {
        (self.dequeued > 0)
            .then(|| self.sojourn_total / u32::try_from(self.dequeued).unwrap_or(u32::MAX))
    }

    /// (random losses + queue drops) / arrivals; `None` if nothing arrived (no traffic is
    /// not a loss-free run).
    pub fn loss_ratio(&self) -> Option<f64> {
        (self.arrived > 0).then(|| (self.lost + self.dropped) as f64 / self.arrived as f64)
    }

    fn record(&mut self, e: &LinkEvent) {
        match e.kind {
            EventKind::Enqueued => self.enqueued += 1,
            EventKind::Dropped(DropReason::RandomLoss) => self.lost += 1,
            EventKind::Dropped(_) => {
                self.dropped += 1;
                self.dropped_bytes += e.size;
            }
            EventKind::Marked(_) => self.marked += 1,
            EventKind::Dequeued { sojourn } => {
                self.dequeued += 1;
                self.sojourn_total += sojourn;
                self.sojourn_max = self.sojourn_max.max(sojourn);
            }
            EventKind::Duplicated => self.duplicated += 1,
            EventKind::Delivered { .. } => {
                self.delivered += 1;
                self.delivered_bytes += e.size;
            }
        }
    }
}

/// Totals and per-flow counters.
#[derive(Debug, Clone, Default)]
pub struct LinkStats {
    total: FlowStats,
    flows: FlowMap<FlowStats>,
    untracked: u64,
}

impl LinkStats {
    /// All flows together.
    pub fn total(&self) -> &FlowStats {
        &self.total
    }

    /// One flow's counters, if it was seen (and tracked).
    pub fn flow(&self, flow: &FlowId) -> Option<&FlowStats> {
        self.flows.get(flow)
    }

    /// Every tracked flow.
    pub fn flows(&self) -> impl Iterator<Item = (&FlowId, &FlowStats)> {
        self.flows.iter()
    }

    /// Events of flows beyond [`MAX_TRACKED_FLOWS`], counted only in the total.
    pub fn untracked_events(&self) -> u64 {
        self.untracked
    }

    pub(crate) fn arrived(&mut self, flow: &FlowId, size: DataSize) {
        self.total.arrived += 1;
        self.total.arrived_bytes += size;
        if let Some(f) = self.entry(flow) {
            f.arrived += 1;
            f.arrived_bytes += size;
        }
    }

    fn entry(&mut self, flow: &FlowId) -> Option<&mut FlowStats> {
        if self.flows.len() >= MAX_TRACKED_FLOWS && !self.flows.contains_key(flow) {
            self.untracked += 1;
            return None;
        }
        Some(self.flows.entry(*flow).or_default())
    }

    pub(crate) fn record(&mut self, e: &LinkEvent) {
        self.total.record(e);
        if let Some(f) = self.entry(&e.flow) {
            f.record(e);
        }
    }
}

/// The link's sink: every event updates the counters and goes to the bounded log.
pub(crate) struct Recorder {
    pub(crate) log: EventLog,
    pub(crate) stats: LinkStats,
}

impl EventSink for Recorder {
    fn push(&mut self, event: LinkEvent) {
        self.stats.record(&event);
        self.log.push(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_index_limits() {
        assert_eq!(jain_index(&[1.0, 1.0, 1.0]), Some(1.0));
        let j = jain_index(&[1.0, 0.0, 0.0, 0.0]).unwrap();
        assert!((j - 0.25).abs() < 1e-12);
        // MMSys16-like shares 1.3 vs 1.0: 5.29 / 5.38, worked by hand.
        let j = jain_index(&[1.3, 1.0]).unwrap();
        assert!((j - 0.983_271).abs() < 1e-6, "{j}");
        assert_eq!(jain_index(&[]), None);
        assert_eq!(
            jain_index(&[0.0, 0.0]),
            None,
            "all flows starved is not fair"
        );
        assert_eq!(jain_index(&[f64::NAN, 1.0]), None);
    }

    #[test]
    fn no_traffic_has_no_loss_ratio_and_no_sojourn() {
        let none = FlowStats::default();
        assert_eq!((none.loss_ratio(), none.mean_sojourn()), (None, None));
        let some = FlowStats {
            arrived: 4,
            dropped: 1,
            dequeued: 3,
            sojourn_total: Duration::from_millis(30),
            ..FlowStats::default()
        };
        assert_eq!(some.loss_ratio(), Some(0.25));
        assert_eq!(some.mean_sojourn(), Some(Duration::from_millis(10)));
    }
}
