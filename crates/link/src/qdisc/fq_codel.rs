//! FQ-CoDel (RFC 8290): flow queuing with a CoDel instance per flow.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use cg_types::{DataSize, Rng};
use serde::{Deserialize, Serialize};

use super::codel::{CodelParams, CodelQueue, CodelState, Fifo};
use super::{LinkInfo, Qdisc, report_drop, report_enqueue};
use crate::error::Error;
use crate::event::{DropReason, EventSink};
use crate::packet::Packet;

/// FQ-CoDel parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FqCodelConfig {
    /// Per-flow CoDel target. Default 5 ms (RFC 8290 §5.2.2, Linux). CCR16 Table 1: 13 ms.
    #[serde(with = "humantime_serde")]
    pub target: Duration,
    /// Per-flow CoDel interval. Default 100 ms (RFC 8290 §5.2.1).
    #[serde(with = "humantime_serde")]
    pub interval: Duration,
    /// Total packet limit. Default 10240 (RFC 8290 §5.2.3, Linux; CCR16 Table 1).
    pub limit: u32,
    /// Total byte limit (`memory_limit`). Default 32 MiB (Linux).
    pub memory_limit: DataSize,
    /// Number of flow queues. Default 1024 (RFC 8290 §5.2.5).
    pub flows: u32,
    /// DRR quantum. Default: the link MTU, 1514 B (RFC 8290 §5.2.4, Linux).
    pub quantum: Option<DataSize>,
    /// Mark ECT packets instead of dropping. Default `true` (RFC 8290 §5.2.6, Linux).
    pub ecn: bool,
    /// At most this many packets dropped per overflow from the fattest flow. Default 64
    /// (Linux `drop_batch`).
    pub drop_batch: u32,
}

impl Default for FqCodelConfig {
    fn default() -> Self {
        FqCodelConfig {
            target: Duration::from_millis(5),
            interval: Duration::from_millis(100),
            limit: 10240,
            memory_limit: DataSize::bytes(32 << 20),
            flows: 1024,
            quantum: None,
            ecn: true,
            drop_batch: 64,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum List {
    None,
    New,
    Old,
}

struct Flow<P> {
    q: Fifo<P>,
    codel: CodelState,
    deficit: i64,
    list: List,
}

/// A flow's queue seen by CoDel: pops update the qdisc totals; the backlog is the qdisc's
/// (Linux passes `sch->qstats.backlog` to `codel_dequeue`).
struct View<'a, P> {
    q: &'a mut Fifo<P>,
    len: &'a mut usize,
    bytes: &'a mut u64,
}

impl<P> CodelQueue<P> for View<'_, P> {
    fn pop(&mut self) -> Option<Packet<P>> {
        let p = self.q.pop()?;
        *self.len -= 1;
        *self.bytes -= p.size.as_bytes();
        Some(p)
    }
    fn backlog(&self) -> u64 {
        *self.bytes
    }
}

/// An FQ-CoDel qdisc.
pub struct FqCodel<P> {
    flows: Vec<Flow<P>>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    params: CodelParams,
    quantum: i64,
    limit: usize,
    memory_limit: u64,
    drop_batch: usize,
    len: usize,
    bytes: u64,
    key: u32,
}

impl<P> FqCodel<P> {
    /// FQ-CoDel per `config`; `rng` keys the flow hash.
    pub fn new(config: &FqCodelConfig, link: LinkInfo, mut rng: Rng) -> Result<Self, Error> {
        if config.limit == 0 {
            return Err(Error::ZeroLimit {
                what: "fq_codel limit",
            });
        }
        if config.memory_limit == DataSize::ZERO {
            return Err(Error::ZeroLimit {
                what: "fq_codel memory_limit",
            });
        }
        if config.flows == 0 || config.flows > 65536 {
            return Err(Error::InvalidParameter {
                what: "fq_codel flows",
                reason: format!("must be 1..=65536, got {}", config.flows),
            });
        }
        if config.drop_batch == 0 {
            return Err(Error::ZeroLimit {
                what: "fq_codel drop_batch",
            });
        }
        let quantum = config.quantum.unwrap_or(link.mtu).as_bytes();
        if quantum == 0 {
            return Err(Error::ZeroLimit {
                what: "fq_codel quantum",
            });
        }
        let codel = super::CodelConfig {
            target: config.target,
            interval: config.interval,
            limit: config.limit,
            ecn: config.ecn,
        };
        Ok(FqCodel {
            flows: (0..config.flows)
                .map(|_| Flow {
                    q: Fifo::new(),
                    codel: CodelState::default(),
                    deficit: 0,
                    list: List::None,
                })
                .collect(),
            new_flows: VecDeque::with_capacity(config.flows as usize),
            old_flows: VecDeque::with_capacity(config.flows as usize),
            params: codel.params(link)?,
            quantum: quantum as i64,
            limit: config.limit as usize,
            memory_limit: config.memory_limit.as_bytes(),
            drop_batch: config.drop_batch as usize,
            len: 0,
            bytes: 0,
            key: rng.next_u64() as u32,
        })
    }

    /// RFC 8290 §4.1 / Linux `fq_codel_drop`: drop from the head of the fattest flow, up to
    /// half its backlog or `drop_batch` packets.
    fn drop_fattest(&mut self, now: Instant, events: &mut dyn EventSink) {
        let Some((idx, fat)) = self
            .flows
            .iter()
            .enumerate()
            .max_by_key(|(_, f)| f.q.bytes)
            .map(|(i, f)| (i, f.q.bytes))
        else {
            return;
        };
        let threshold = fat / 2;
        let mut dropped = 0u64;
        let mut n = 0;
        let flow = &mut self.flows[idx];
        while n < self.drop_batch && dropped < threshold {
            let Some(p) = flow.q.pop() else { break };
            dropped += p.size.as_bytes();
            self.len -= 1;
            self.bytes -= p.size.as_bytes();
            report_drop(&p, DropReason::Overflow, now, events);
            n += 1;
        }
    }
}

impl<P: Send> Qdisc<P> for FqCodel<P> {
    fn enqueue(&mut self, mut packet: Packet<P>, now: Instant, events: &mut dyn EventSink) {
        let idx = (packet.flow.hash32(self.key) % self.flows.len() as u32) as usize;
        packet.enqueued = now;
        report_enqueue(&packet, now, events);
        self.len += 1;
        self.bytes += packet.size.as_bytes();
        let flow = &mut self.flows[idx];
        flow.q.push(packet);
        if flow.list == List::None {
            flow.list = List::New;
            flow.deficit = self.quantum;
            self.new_flows.push_back(idx as u32);
        }
        if self.len > self.limit || self.bytes > self.memory_limit {
            self.drop_fattest(now, events);
        }
    }

    fn dequeue(&mut self, now: Instant, events: &mut dyn EventSink) -> Option<Packet<P>> {
        loop {
            let from_new = !self.new_flows.is_empty();
            let idx = if from_new {
                *self.new_flows.front().expect("checked non-empty")
            } else {
                *self.old_flows.front()?
            } as usize;
            let flow = &mut self.flows[idx];
            if flow.deficit <= 0 {
                flow.deficit += self.quantum;
                flow.list = List::Old;
                if from_new {
                    self.new_flows.pop_front();
                } else {
                    self.old_flows.pop_front();
                }
                self.old_flows.push_back(idx as u32);
                continue;
            }
            let mut view = View {
                q: &mut flow.q,
                len: &mut self.len,
                bytes: &mut self.bytes,
            };
            match flow.codel.dequeue(&mut view, &self.params, now, events) {
                Some(p) => {
                    flow.deficit -= p.size.as_bytes() as i64;
                    return Some(p);
                }
                None => {
                    // RFC 8290 §4.2: an emptied new flow goes to the old list (so it cannot
                    // jump the queue again at once) unless that list is empty.
                    if from_new {
                        self.new_flows.pop_front();
                        if self.old_flows.is_empty() {
                            flow.list = List::None;
                        } else {
                            flow.list = List::Old;
                            self.old_flows.push_back(idx as u32);
                        }
                    } else {
                        self.old_flows.pop_front();
                        flow.list = List::None;
                    }
                }
            }
        }
    }

    fn peek(&self) -> Option<&Packet<P>> {
        let idx = self.new_flows.front().or(self.old_flows.front())?;
        self.flows[*idx as usize].q.packets.front()
    }

    fn len(&self) -> usize {
        self.len
    }

    fn bytes(&self) -> DataSize {
        DataSize::bytes(self.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventKind;
    use crate::qdisc::testing::{Source, drops, run};
    use cg_types::{Bitrate, Ecn};

    fn share(
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
        let mut q =
            FqCodel::new(&FqCodelConfig::default(), LinkInfo::new(link), Rng::new(2)).unwrap();
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
        let (ev, out) = run(&mut q, link, &mut src, t0, dur);
        let (rate, sojourn) = share(&out, 1, t0 + Duration::from_secs(2), t0 + dur);
        assert!(
            (rate.as_kbps_f64() - 200.0).abs() < 4.0,
            "thin flow got {rate}"
        );
        assert!(
            sojourn < Duration::from_millis(15),
            "thin flow sojourn {sojourn:?}"
        );
        let thin_drops = ev
            .iter()
            .filter(|e| {
                matches!(e.kind, EventKind::Dropped(_)) && e.flow == crate::FlowId::from_index(1)
            })
            .count();
        assert_eq!(thin_drops, 0);
        let (fat, _) = share(&out, 2, t0 + Duration::from_secs(2), t0 + dur);
        assert!(fat.as_kbps_f64() > 780.0, "fat flow gets the rest: {fat}");
        assert!(drops(&ev, DropReason::Codel) > 0);
    }

    #[test]
    fn overflow_drops_from_the_fattest_flow() {
        let t0 = Instant::now();
        let cfg = FqCodelConfig {
            limit: 100,
            ..FqCodelConfig::default()
        };
        let mut q = FqCodel::new(&cfg, LinkInfo::new(Bitrate::mbps(1)), Rng::new(2)).unwrap();
        let mut ev = Vec::new();
        for i in 0..100 {
            q.enqueue(crate::qdisc::testing::pkt(i, 7, 1000, t0), t0, &mut ev);
        }
        q.enqueue(crate::qdisc::testing::pkt(100, 8, 1000, t0), t0, &mut ev);
        let dropped: Vec<_> = ev
            .iter()
            .filter(|e| e.kind == EventKind::Dropped(DropReason::Overflow))
            .collect();
        assert_eq!(dropped.len(), 50, "half the fat flow's backlog");
        assert!(
            dropped
                .iter()
                .all(|e| e.flow == crate::FlowId::from_index(7))
        );
        assert_eq!(dropped[0].id.0, 0, "from the head");
    }

    #[test]
    fn ecn_flows_are_marked_not_dropped() {
        let t0 = Instant::now();
        let link = Bitrate::mbps(1);
        let mut q =
            FqCodel::new(&FqCodelConfig::default(), LinkInfo::new(link), Rng::new(2)).unwrap();
        let mut src = [Source {
            flow: 1,
            rate: Bitrate::kbps(1200),
            size: 1000,
            ecn: Ecn::Ect0,
            next: t0,
        }];
        let (ev, _) = run(&mut q, link, &mut src, t0, Duration::from_secs(5));
        assert_eq!(drops(&ev, DropReason::Codel), 0);
        assert!(ev.iter().any(|e| matches!(e.kind, EventKind::Marked(_))));
    }

    #[test]
    fn invalid_parameters_are_errors() {
        let l = LinkInfo::new(Bitrate::mbps(1));
        for c in [
            FqCodelConfig {
                limit: 0,
                ..FqCodelConfig::default()
            },
            FqCodelConfig {
                flows: 0,
                ..FqCodelConfig::default()
            },
            FqCodelConfig {
                quantum: Some(DataSize::ZERO),
                ..FqCodelConfig::default()
            },
            FqCodelConfig {
                target: Duration::ZERO,
                ..FqCodelConfig::default()
            },
        ] {
            assert!(FqCodel::<()>::new(&c, l, Rng::new(0)).is_err(), "{c:?}");
        }
    }
}
