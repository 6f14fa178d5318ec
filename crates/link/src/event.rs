//! Per-packet events: the raw material for per-flow queuing delay, loss and throughput.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use cg_types::DataSize;

use crate::packet::{FlowId, Packet, PacketId};

/// Why a packet was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DropReason {
    /// Random loss on the link (Bernoulli or Gilbert-Elliott), before the queue.
    RandomLoss,
    /// Tail drop: the queue's packet, byte or time limit was reached.
    QueueFull,
    /// CoDel's control law (RFC 8289 §5), also per flow inside FQ-CoDel.
    Codel,
    /// PIE's probabilistic drop at enqueue (RFC 8033 §4.1).
    Pie,
    /// Head drop from the fattest flow when an FQ qdisc overflows (RFC 8290 §4.1, Linux SFQ).
    Overflow,
    /// DualPI2 classic drop with probability p′² (RFC 9332 §2.4), or its overload fallback.
    DualPi2,
    /// A packet no HTB rule matched while no default class is configured.
    Unclassified,
}

/// Why a packet was CE-marked instead of dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MarkReason {
    /// CoDel (RFC 8289 §5, ECN instead of drop).
    Codel,
    /// PIE with ECN while p ≤ mark_ecn_threshold (RFC 8033 §5.1).
    Pie,
    /// DualPI2 classic queue, ECT(0) packet, probability p′² (RFC 9332 §2.4).
    DualPi2Classic,
    /// DualPI2 L queue, coupled probability k·p′ (RFC 9332 §2.4).
    DualPi2Coupled,
    /// DualPI2 L queue, sojourn above the step threshold (RFC 9332 §2.5.1.2).
    DualPi2Step,
}

/// What happened to the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EventKind {
    /// Accepted into the queue discipline.
    Enqueued,
    /// Left the queue to be serialised; `sojourn` is the time it spent queued.
    Dequeued {
        /// Enqueue to dequeue.
        sojourn: Duration,
    },
    /// Dropped.
    Dropped(DropReason),
    /// Its ECN field was set to CE.
    Marked(MarkReason),
    /// A duplicate of it was made (netem-style duplication).
    Duplicated,
    /// Handed to the receiver; `latency` runs from arrival at the link to delivery.
    Delivered {
        /// Arrival at the link to delivery: queuing + serialisation + propagation.
        latency: Duration,
    },
}

/// One per-packet event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LinkEvent {
    /// When it happened.
    pub time: Instant,
    /// The caller's id of the packet.
    pub id: PacketId,
    /// Its flow.
    pub flow: FlowId,
    /// Its size on the wire.
    pub size: DataSize,
    /// What happened.
    pub kind: EventKind,
}

impl LinkEvent {
    /// An event about `packet`.
    pub fn new<P>(packet: &Packet<P>, time: Instant, kind: EventKind) -> Self {
        LinkEvent {
            time,
            id: packet.id,
            flow: packet.flow,
            size: packet.size,
            kind,
        }
    }
}

/// Where queue disciplines push their events.
pub trait EventSink {
    /// Record one event.
    fn push(&mut self, event: LinkEvent);
}

/// Discards everything (benchmarks, drivers that do not want events).
#[derive(Debug, Clone, Copy, Default)]
pub struct NullSink;

impl EventSink for NullSink {
    fn push(&mut self, _event: LinkEvent) {}
}

impl EventSink for Vec<LinkEvent> {
    fn push(&mut self, event: LinkEvent) {
        Vec::push(self, event);
    }
}

/// A bounded event log: the newest `limit` events are kept, older ones are counted and
/// discarded, so a long real-time run cannot grow memory without bound.
#[derive(Debug, Clone)]
pub struct EventLog {
    events: VecDeque<LinkEvent>,
    limit: Option<usize>,
    discarded: u64,
}

impl EventLog {
    /// A log keeping at most `limit` events (`None`: unbounded, for tests).
    pub fn new(limit: Option<usize>) -> Self {
        EventLog {
            events: VecDeque::new(),
            limit,
            discarded: 0,
        }
    }

    /// Takes the oldest event.
    pub fn pop(&mut self) -> Option<LinkEvent> {
        self.events.pop_front()
    }

    /// Forgets every event held (counters elsewhere are unaffected).
    pub fn clear(&mut self) {
        self.events.clear();
    }

    /// The events held, oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &LinkEvent> + ExactSizeIterator {
        self.events.iter()
    }

    /// How many are held.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether none are held.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// How many were discarded because the log was full.
    pub fn discarded(&self) -> u64 {
        self.discarded
    }
}

impl EventSink for EventLog {
    fn push(&mut self, event: LinkEvent) {
        if let Some(limit) = self.limit {
            if limit == 0 {
                self.discarded += 1;
                return;
            }
            if self.events.len() >= limit {
                self.events.pop_front();
                self.discarded += 1;
            }
        }
        self.events.push_back(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_log_keeps_the_newest_events() {
        let now = Instant::now();
        let p = Packet::new(
            PacketId(0),
            FlowId::from_index(0),
            DataSize::bytes(1),
            now,
            (),
        );
        let mut log = EventLog::new(Some(3));
        for i in 0..5 {
            let mut e = LinkEvent::new(&p, now, EventKind::Enqueued);
            e.id = PacketId(i);
            log.push(e);
        }
        assert_eq!(log.len(), 3);
        assert_eq!(log.discarded(), 2);
        assert_eq!(log.iter().next().map(|e| e.id), Some(PacketId(2)));
    }
}
