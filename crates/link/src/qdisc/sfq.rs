//! SFQ: stochastic fairness queuing (McKenney 1990; Linux `sch_sfq`).
//!
//! Flows are hashed into `divisor` buckets, each bucket owning at most one of `flows` queues;
//! active queues are served by deficit round robin with a quantum of one MTU. When the qdisc
//! is over its limit, a packet is dropped from the tail of the longest queue (Linux's default;
//! `headdrop` drops from its head instead), so a fat flow pays for the overflow.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use cg_types::{DataSize, Rng};
use serde::{Deserialize, Serialize};

use super::droptail::QueueLimit;
use super::{LinkInfo, Qdisc, report_drop, report_enqueue};
use crate::error::{Error, bounded};
use crate::event::{DropReason, EventSink};
use crate::packet::Packet;

/// SFQ parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SfqConfig {
    /// Total limit. Default 127 packets (Linux `tc-sfq`). CCR16 Table 1 sizes it to 300 ms of
    /// the link (`Time(300 ms)`); TMA24 §IV-C uses 63 packets for the cloud-gaming class.
    pub limit: QueueLimit,
    /// Maximum packets per flow (`depth`). Default 127 (Linux).
    pub depth: u32,
    /// Number of flow queues. Default 128 (Linux `SFQ_DEFAULT_FLOWS`).
    pub flows: u32,
    /// Hash buckets. Default 1024 (Linux `SFQ_DEFAULT_HASH_DIVISOR`).
    pub divisor: u32,
    /// DRR quantum in bytes. Default: the link MTU (Linux `psched_mtu`, 1514 B).
    pub quantum: Option<DataSize>,
    /// Re-key the hash this often (Linux `perturb`). Default: never (Linux ≥ 3.3).
    #[serde(with = "humantime_serde")]
    pub perturb: Option<Duration>,
    /// Drop from the head rather than the tail of the longest flow. Default `false`.
    pub headdrop: bool,
}

impl Default for SfqConfig {
    fn default() -> Self {
        SfqConfig {
            limit: QueueLimit::Packets(127),
            depth: 127,
            flows: 128,
            divisor: 1024,
            quantum: None,
            perturb: None,
            headdrop: false,
        }
    }
}

struct Slot<P> {
    q: VecDeque<Packet<P>>,
    bytes: u64,
    allot: i64,
    bucket: u32,
    active: bool,
}

/// An SFQ qdisc.
pub struct Sfq<P> {
    slots: Vec<Slot<P>>,
    /// Bucket → slot.
    buckets: Vec<Option<u16>>,
    free: Vec<u16>,
    /// Active slots in round-robin order; the front is served.
    ring: VecDeque<u16>,
    len: usize,
    bytes: u64,
    limit_packets: Option<usize>,
    limit_bytes: Option<u64>,
    depth: usize,
    quantum: i64,
    headdrop: bool,
    perturb: Option<Duration>,
    next_perturb: Option<Instant>,
    key: u32,
    rng: Rng,
}

impl<P> Sfq<P> {
    /// SFQ per `config`; `rng` draws the hash keys.
    pub fn new(config: &SfqConfig, link: LinkInfo, mut rng: Rng) -> Result<Self, Error> {
        let (limit_packets, limit_bytes) = match config.limit {
            QueueLimit::Packets(0) => return Err(Error::ZeroLimit { what: "sfq limit" }),
            QueueLimit::Packets(n) => (Some(n as usize), None),
            QueueLimit::Bytes(b) => (None, Some(b.as_bytes())),
            QueueLimit::Time(d) => (None, Some((link.rate * d).as_bytes())),
        };
        if limit_bytes == Some(0) {
            return Err(Error::ZeroLimit {
                what: "sfq byte/time limit",
            });
        }
        if config.depth == 0 {
            return Err(Error::ZeroLimit { what: "sfq depth" });
        }
        if config.flows == 0 || config.flows > 65536 {
            return Err(Error::InvalidParameter {
                what: "sfq flows",
                reason: format!("must be 1..=65536, got {}", config.flows),
            });
        }
        if config.divisor == 0 || config.divisor > 1 << 20 {
            return Err(Error::InvalidParameter {
                what: "sfq divisor",
                reason: format!("must be 1..=1048576, got {}", config.divisor),
            });
        }
        let quantum = config.quantum.unwrap_or(link.mtu).as_bytes();
        if quantum == 0 {
            return Err(Error::ZeroLimit {
                what: "sfq quantum",
            });
        }
        if let Some(d) = config.perturb {
            bounded("sfq perturb", d)?;
        }
        if config.perturb.is_some_and(|d| d.is_zero()) {
            return Err(Error::ZeroLimit {
                what: "sfq perturb",
            });
        }
        let n = config.flows as usize;
        let key = rng.next_u64() as u32;
        Ok(Sfq {
            slots: (0..n)
                .map(|_| Slot {
                    q: VecDeque::new(),
                    bytes: 0,
                    allot: 0,
                    bucket: 0,
                    active: false,
                })
                .collect(),
            buckets: vec![None; config.divisor as usize],
            free: (0..n as u16).rev().collect(),
            ring: VecDeque::with_capacity(n),
            len: 0,
            bytes: 0,
            limit_packets,
            limit_bytes,
            depth: config.depth as usize,
            quantum: quantum as i64,
            headdrop: config.headdrop,
            perturb: config.perturb,
            next_perturb: None,
            key,
            rng,
        })
    }

    fn over_limit(&self) -> bool {
        self.limit_packets.is_some_and(|l| self.len > l)
            || self.limit_bytes.is_some_and(|l| self.bytes > l)
    }

    fn bucket(&self, p: &Packet<P>) -> u32 {
        p.flow.hash32(self.key) % self.buckets.len() as u32
    }

    /// Removes one packet from slot `s` (head or tail), freeing the slot if it empties.
    fn drop_from(
        &mut self,
        s: u16,
        head: bool,
        now: Instant,
        reason: DropReason,
        events: &mut dyn EventSink,
    ) {
        let slot = &mut self.slots[s as usize];
        let p = if head {
            slot.q.pop_front()
        } else {
            slot.q.pop_back()
        };
        if let Some(p) = p {
            slot.bytes -= p.size.as_bytes();
            self.len -= 1;
            self.bytes -= p.size.as_bytes();
            report_drop(&p, reason, now, events);
        }
        if self.slots[s as usize].q.is_empty() {
            self.release(s);
        }
    }

    fn release(&mut self, s: u16) {
        let slot = &mut self.slots[s as usize];
        if slot.active {
            slot.active = false;
            self.buckets[slot.bucket as usize] = None;
            if let Some(i) = self.ring.iter().position(|&x| x == s) {
                self.ring.remove(i);
            }
            self.free.push(s);
        }
    }

    /// Re-keys the hash and re-files every queued packet (Linux `sfq_rehash`).
    fn rehash(&mut self, now: Instant, events: &mut dyn EventSink) {
        self.key = self.rng.next_u64() as u32;
        let mut all = Vec::with_capacity(self.len);
        while let Some(s) = self.ring.pop_front() {
            let slot = &mut self.slots[s as usize];
            all.extend(slot.q.drain(..));
            slot.bytes = 0;
            slot.active = false;
            self.buckets[slot.bucket as usize] = None;
            self.free.push(s);
        }
        self.len = 0;
        self.bytes = 0;
        for p in all {
            self.insert(p, now, events, false);
        }
    }

    fn insert(
        &mut self,
        packet: Packet<P>,
        now: Instant,
        events: &mut dyn EventSink,
        report: bool,
    ) {
        let b = self.bucket(&packet);
        let s = match self.buckets[b as usize] {
            Some(s) => s,
            None => {
                let Some(s) = self.free.pop() else {
                    report_drop(&packet, DropReason::Overflow, now, events);
                    return;
                };
                let slot = &mut self.slots[s as usize];
                slot.bucket = b;
                slot.allot = self.quantum;
                slot.active = true;
                self.buckets[b as usize] = Some(s);
                self.ring.push_back(s);
                s
            }
        };
        if self.slots[s as usize].q.len() >= self.depth {
            if self.headdrop {
                self.drop_from(s, true, now, DropReason::QueueFull, events);
                return self.insert(packet, now, events, report);
            }
            report_drop(&packet, DropReason::QueueFull, now, events);
            return;
        }
        if report {
            report_enqueue(&packet, now, events);
        }
        let slot = &mut self.slots[s as usize];
        slot.bytes += packet.size.as_bytes();
        self.bytes += packet.size.as_bytes();
        self.len += 1;
        slot.q.push_back(packet);
        while self.over_limit() {
            let Some(longest) =
                self.ring.iter().copied().max_by_key(|&s| {
                    (self.slots[s as usize].q.len(), self.slots[s as usize].bytes)
                })
            else {
                break;
            };
            self.drop_from(longest, self.headdrop, now, DropReason::Overflow, events);
        }
    }
}

impl<P: Send> Qdisc<P> for Sfq<P> {
    fn enqueue(&mut self, mut packet: Packet<P>, now: Instant, events: &mut dyn EventSink) {
        if let (Some(d), None) = (self.perturb, self.next_perturb) {
            self.next_perturb = Some(now + d);
        }
        packet.enqueued = now;
        self.insert(packet, now, events, true);
    }

    fn dequeue(&mut self, _now: Instant, _events: &mut dyn EventSink) -> Option<Packet<P>> {
        loop {
            let &s = self.ring.front()?;
            let slot = &mut self.slots[s as usize];
            if slot.allot <= 0 {
                slot.allot += self.quantum;
                self.ring.rotate_left(1);
                continue;
            }
            let p = slot.q.pop_front().expect("an active slot holds packets");
            slot.bytes -= p.size.as_bytes();
            slot.allot -= p.size.as_bytes() as i64;
            self.len -= 1;
            self.bytes -= p.size.as_bytes();
            if slot.q.is_empty() {
                slot.active = false;
                self.buckets[slot.bucket as usize] = None;
                self.ring.pop_front();
                self.free.push(s);
            }
            return Some(p);
        }
    }

    fn peek(&self) -> Option<&Packet<P>> {
        self.ring
            .front()
            .and_then(|&s| self.slots[s as usize].q.front())
    }

    fn len(&self) -> usize {
        self.len
    }

    fn bytes(&self) -> DataSize {
        DataSize::bytes(self.bytes)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.next_perturb
    }

    fn handle_timeout(&mut self, now: Instant, events: &mut dyn EventSink) {
        let (Some(due), Some(period)) = (self.next_perturb, self.perturb) else {
            return;
        };
        if now < due {
            return;
        }
        self.rehash(now, events);
        self.next_perturb = if self.len == 0 {
            None
        } else {
            Some(now + period)
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testing::{Source, run};
    use cg_types::{Bitrate, Ecn};

    /// Delivered rate and mean sojourn of `flow` after `from`.
    pub(crate) fn flow_share(
        out: &[(Instant, crate::Packet)],
        flow: u16,
        from: Instant,
        until: Instant,
    ) -> (Bitrate, Duration) {
        let mine: Vec<_> = out
            .iter()
            .filter(|(t, p)| *t >= from && p.flow == crate::FlowId::from_index(flow))
            .collect();
        let bytes: u64 = mine.iter().map(|(_, p)| p.size.as_bytes()).sum();
        let sojourn: Duration = mine.iter().map(|(t, p)| *t - p.enqueued).sum();
        (
            DataSize::bytes(bytes) / (until - from),
            sojourn / mine.len().max(1) as u32,
        )
    }

    #[test]
    fn thin_flow_keeps_its_rate_at_low_delay_beside_a_fat_one() {
        let t0 = Instant::now();
        let link = Bitrate::mbps(1);
        let mut q = Sfq::new(
            &SfqConfig {
                limit: QueueLimit::Time(Duration::from_millis(300)),
                ..SfqConfig::default()
            },
            LinkInfo::new(link),
            Rng::new(3),
        )
        .unwrap();
        let mut src = [
            Source {
                flow: 1,
                rate: Bitrate::kbps(200),
                size: 500,
                ecn: Ecn::NotEct,
                next: t0,
            },
            Source {
                flow: 2,
                rate: Bitrate::mbps(5),
                size: 1500,
                ecn: Ecn::NotEct,
                next: t0,
            },
        ];
        let dur = Duration::from_secs(20);
        let (_, out) = run(&mut q, link, &mut src, t0, dur);
        let (rate, sojourn) = flow_share(&out, 1, t0 + Duration::from_secs(2), t0 + dur);
        assert!(
            (rate.as_kbps_f64() - 200.0).abs() < 4.0,
            "thin flow got {rate}"
        );
        // At most one 1500 B packet of the fat flow (12 ms) ahead of it, and a bit of its own.
        assert!(
            sojourn < Duration::from_millis(30),
            "thin flow sojourn {sojourn:?}"
        );
        let (fat, fat_sojourn) = flow_share(&out, 2, t0 + Duration::from_secs(2), t0 + dur);
        assert!(fat.as_kbps_f64() > 780.0, "fat flow gets the rest: {fat}");
        assert!(
            fat_sojourn > Duration::from_millis(100),
            "the fat flow holds the queue"
        );
    }

    #[test]
    fn equal_flows_share_equally() {
        let t0 = Instant::now();
        let link = Bitrate::mbps(3);
        let mut q = Sfq::new(&SfqConfig::default(), LinkInfo::new(link), Rng::new(4)).unwrap();
        let mut src: Vec<Source> = (0..3)
            .map(|i| Source {
                flow: i,
                rate: Bitrate::mbps(2 + i as u64),
                size: 1000 + 200 * i as u64,
                ecn: Ecn::NotEct,
                next: t0,
            })
            .collect();
        let (_, out) = run(&mut q, link, &mut src, t0, Duration::from_secs(10));
        for i in 0..3 {
            let (r, _) = flow_share(
                &out,
                i,
                t0 + Duration::from_secs(1),
                t0 + Duration::from_secs(10),
            );
            assert!((r.as_mbps_f64() - 1.0).abs() < 0.05, "flow {i}: {r}");
        }
    }

    #[test]
    fn perturbation_rehashes_without_losing_packets() {
        let t0 = Instant::now();
        let link = Bitrate::mbps(1);
        let cfg = SfqConfig {
            perturb: Some(Duration::from_millis(100)),
            ..SfqConfig::default()
        };
        let mut q = Sfq::new(&cfg, LinkInfo::new(link), Rng::new(4)).unwrap();
        let mut src = [Source {
            flow: 1,
            rate: Bitrate::kbps(900),
            size: 1000,
            ecn: Ecn::NotEct,
            next: t0,
        }];
        let (ev, out) = run(&mut q, link, &mut src, t0, Duration::from_secs(2));
        let enq = ev
            .iter()
            .filter(|e| e.kind == crate::EventKind::Enqueued)
            .count();
        assert_eq!(enq, out.len() + q.len());
        assert!(
            out.windows(2).all(|w| w[0].1.id < w[1].1.id),
            "order kept within the flow"
        );
    }

    #[test]
    fn invalid_parameters_are_errors() {
        let l = LinkInfo::new(Bitrate::mbps(1));
        for c in [
            SfqConfig {
                limit: QueueLimit::Packets(0),
                ..SfqConfig::default()
            },
            SfqConfig {
                flows: 0,
                ..SfqConfig::default()
            },
            SfqConfig {
                divisor: 0,
                ..SfqConfig::default()
            },
            SfqConfig {
                depth: 0,
                ..SfqConfig::default()
            },
            SfqConfig {
                quantum: Some(DataSize::ZERO),
                ..SfqConfig::default()
            },
        ] {
            assert!(Sfq::<()>::new(&c, l, Rng::new(0)).is_err(), "{c:?}");
        }
    }
}
