//! Propagation: fixed delay, optional jitter without reordering, optional reordering and
//! duplication. Packets wait here after serialisation until their delivery time.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

use cg_types::Rng;
use serde::{Deserialize, Serialize};

use crate::error::{Error, bounded, probability};
use crate::event::{EventKind, EventSink, LinkEvent};
use crate::packet::Packet;

/// Propagation delay and its impairments.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DelayConfig {
    /// One-way propagation delay added after serialisation. Default 0.
    #[serde(with = "humantime_serde")]
    pub base: Duration,
    /// Standard deviation of a normal jitter added to `base` (the sum clamped at zero).
    /// Jitter never reorders: a packet is never delivered before the one serialised ahead of
    /// it, as on a real path whose delay varies (this clamp raises the mean delay when the
    /// jitter is large against the packet spacing). Default 0.
    #[serde(with = "humantime_serde")]
    pub jitter: Duration,
    /// Probability that a packet is held back by `reorder_delay` so that later packets
    /// overtake it. Default 0.
    pub reorder: f64,
    /// Extra delay of a reordered packet. Default 10 ms.
    #[serde(with = "humantime_serde")]
    pub reorder_delay: Duration,
    /// Probability that a packet is delivered twice (netem `duplicate`). Default 0.
    pub duplicate: f64,
}

impl Default for DelayConfig {
    /// No delay and no impairment; a reordered packet (once `reorder` is set) is held back
    /// 10 ms.
    fn default() -> Self {
        DelayConfig {
            base: Duration::ZERO,
            jitter: Duration::ZERO,
            reorder: 0.0,
            reorder_delay: Duration::from_millis(10),
            duplicate: 0.0,
        }
    }
}

impl DelayConfig {
    /// A fixed one-way delay and nothing else.
    pub fn fixed(base: Duration) -> Self {
        DelayConfig {
            base,
            ..DelayConfig::default()
        }
    }

    /// Checks the probabilities.
    pub fn validate(&self) -> Result<(), Error> {
        probability("reorder probability", self.reorder)?;
        probability("duplicate probability", self.duplicate)?;
        bounded("propagation delay", self.base)?;
        bounded("jitter", self.jitter)?;
        bounded("reorder delay", self.reorder_delay)?;
        Ok(())
    }
}

struct Entry<P> {
    at: Instant,
    seq: u64,
    packet: Packet<P>,
}

impl<P> PartialEq for Entry<P> {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl<P> Eq for Entry<P> {}
impl<P> PartialOrd for Entry<P> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<P> Ord for Entry<P> {
    /// Reversed: the earliest delivery is the heap's maximum.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// Packets in flight between the end of serialisation and delivery.
pub(crate) struct DelayLine<P> {
    config: DelayConfig,
    heap: BinaryHeap<Entry<P>>,
    seq: u64,
    /// Delivery time of the last in-order packet (the no-reordering floor for jitter).
    last: Option<Instant>,
    rng: Rng,
}

impl<P: Clone> DelayLine<P> {
    pub(crate) fn new(config: DelayConfig, rng: Rng) -> Result<Self, Error> {
        config.validate()?;
        Ok(DelayLine {
            config,
            heap: BinaryHeap::new(),
            seq: 0,
            last: None,
            rng,
        })
    }

    /// A packet whose serialisation ended at `sent`.
    pub(crate) fn push(&mut self, packet: Packet<P>, sent: Instant, events: &mut dyn EventSink) {
        let c = &self.config;
        let mut at = sent + c.base;
        if !c.jitter.is_zero() {
            let d = c.base.as_secs_f64() + c.jitter.as_secs_f64() * self.rng.normal();
            at = sent + Duration::from_secs_f64(d.max(0.0));
        }
        let reordered = c.reorder > 0.0 && self.rng.bernoulli(c.reorder);
        if reordered {
            at += c.reorder_delay;
        } else {
            if let Some(last) = self.last {
                at = at.max(last);
            }
            self.last = Some(at);
        }
        if c.duplicate > 0.0 && self.rng.bernoulli(c.duplicate) {
            events.push(LinkEvent::new(&packet, sent, EventKind::Duplicated));
            self.insert(at, packet.clone());
        }
        self.insert(at, packet);
    }

    fn insert(&mut self, at: Instant, packet: Packet<P>) {
        self.seq += 1;
        self.heap.push(Entry {
            at,
            seq: self.seq,
            packet,
        });
    }

    /// The next delivery time.
    pub(crate) fn next_delivery(&self) -> Option<Instant> {
        self.heap.peek().map(|e| e.at)
    }

    /// The next packet due at or before `now`, with its delivery time.
    pub(crate) fn pop_due(&mut self, now: Instant) -> Option<(Instant, Packet<P>)> {
        if self.heap.peek()?.at > now {
            return None;
        }
        self.heap.pop().map(|e| (e.at, e.packet))
    }
}

impl<P> DelayLine<P> {
    /// Packets in flight.
    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{FlowId, PacketId};
    use cg_types::DataSize;

    fn line(c: DelayConfig) -> DelayLine<()> {
        DelayLine::new(c, Rng::new(3)).unwrap()
    }

    fn pkt(i: u64, now: Instant) -> Packet {
        Packet::new(
            PacketId(i),
            FlowId::from_index(0),
            DataSize::bytes(100),
            now,
            (),
        )
    }

    fn drain(l: &mut DelayLine<()>) -> Vec<(Instant, u64)> {
        let mut out = Vec::new();
        while let Some(t) = l.next_delivery() {
            let (at, p) = l.pop_due(t).unwrap();
            out.push((at, p.id.0));
        }
        out
    }

    #[test]
    fn fixed_delay_is_added_exactly() {
        let t0 = Instant::now();
        let mut l = line(DelayConfig::fixed(Duration::from_millis(25)));
        l.push(pkt(1, t0), t0, &mut Vec::new());
        assert_eq!(l.next_delivery(), Some(t0 + Duration::from_millis(25)));
        assert!(l.pop_due(t0 + Duration::from_millis(24)).is_none());
    }

    #[test]
    fn jitter_varies_delay_but_never_reorders() {
        let t0 = Instant::now();
        let mut l = line(DelayConfig {
            jitter: Duration::from_millis(10),
            ..DelayConfig::fixed(Duration::from_millis(50))
        });
        for i in 0..1000 {
            let t = t0 + Duration::from_millis(i);
            l.push(pkt(i, t), t, &mut Vec::new());
        }
        let out = drain(&mut l);
        assert!(out.windows(2).all(|w| w[0].1 < w[1].1), "in order");
        let delays: Vec<f64> = out
            .iter()
            .map(|(at, i)| (*at - (t0 + Duration::from_millis(*i))).as_secs_f64() * 1e3)
            .collect();
        let min = delays.iter().cloned().fold(f64::MAX, f64::min);
        let max = delays.iter().cloned().fold(0.0, f64::max);
        assert!(min < 45.0 && max > 60.0, "delays vary: {min}..{max}");
    }

    #[test]
    fn reordering_lets_later_packets_overtake() {
        let t0 = Instant::now();
        let mut l = line(DelayConfig {
            reorder: 0.1,
            ..DelayConfig::fixed(Duration::from_millis(5))
        });
        for i in 0..1000 {
            let t = t0 + Duration::from_millis(i);
            l.push(pkt(i, t), t, &mut Vec::new());
        }
        let out = drain(&mut l);
        let inversions = out.windows(2).filter(|w| w[0].1 > w[1].1).count();
        assert!((60..=140).contains(&inversions), "{inversions}");
    }

    #[test]
    fn duplication_delivers_copies() {
        let t0 = Instant::now();
        let mut l = line(DelayConfig {
            duplicate: 0.2,
            ..DelayConfig::fixed(Duration::ZERO)
        });
        let mut ev = Vec::new();
        for i in 0..1000 {
            l.push(pkt(i, t0), t0, &mut ev);
        }
        let n = drain(&mut l).len();
        assert_eq!(n, 1000 + ev.len());
        assert!((150..=250).contains(&ev.len()), "{}", ev.len());
    }

    #[test]
    fn reorder_delay_defaults_to_10ms_when_omitted() {
        // `#[serde(default)]` fills omitted fields from `Default`: a derived one gave 0 ms,
        // so `{ reorder = 0.1 }` reordered nothing.
        let c: DelayConfig = toml::from_str("reorder = 0.1").unwrap();
        assert_eq!(c.reorder_delay, Duration::from_millis(10));
        assert_eq!(
            DelayConfig::default().reorder_delay,
            Duration::from_millis(10)
        );
    }

    #[test]
    fn bad_probabilities_are_errors() {
        let c = DelayConfig {
            reorder: 2.0,
            ..DelayConfig::default()
        };
        assert!(DelayLine::<()>::new(c, Rng::new(0)).is_err());
    }
}
