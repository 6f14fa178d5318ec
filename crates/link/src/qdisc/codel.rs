//! CoDel (RFC 8289): controlled delay, sojourn-time based dropping at dequeue.
//!
//! `CodelState` is the per-queue control loop of RFC 8289 §5.5–5.6 (Linux's `codel_vars`),
//! shared with FQ-CoDel, which runs one per flow.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use cg_types::DataSize;
use serde::{Deserialize, Serialize};

use super::{LinkInfo, Qdisc, report_drop, report_enqueue, try_mark};
use crate::error::{Error, bounded};
use crate::event::{DropReason, EventSink, MarkReason};
use crate::packet::Packet;

/// CoDel parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CodelConfig {
    /// Acceptable standing sojourn time. Default 5 ms (RFC 8289 §4.3, Linux `tc-codel`).
    /// CCR16 Table 1: 13 ms at 1 Mb/s, 5 ms otherwise.
    #[serde(with = "humantime_serde")]
    pub target: Duration,
    /// Sliding window over which the minimum sojourn must stay above `target` before CoDel
    /// drops, and the base of its control law. Default 100 ms (RFC 8289 §4.2).
    #[serde(with = "humantime_serde")]
    pub interval: Duration,
    /// Queue limit in packets (tail drop beyond it, not counted by CoDel, RFC 8289 §5.4).
    /// Default 1000 (Linux `tc-codel`; CCR16 Table 1).
    pub limit: u32,
    /// Mark ECT packets CE instead of dropping them. Default `false` (Linux `tc-codel`
    /// `noecn`).
    pub ecn: bool,
}

impl Default for CodelConfig {
    fn default() -> Self {
        CodelConfig {
            target: Duration::from_millis(5),
            interval: Duration::from_millis(100),
            limit: 1000,
            ecn: false,
        }
    }
}

impl CodelConfig {
    /// CoDel with `target`, otherwise Linux defaults.
    pub fn with_target(target: Duration) -> Self {
        CodelConfig {
            target,
            ..CodelConfig::default()
        }
    }

    pub(crate) fn params(&self, link: LinkInfo) -> Result<CodelParams, Error> {
        if self.target.is_zero() {
            return Err(Error::ZeroLimit {
                what: "codel target",
            });
        }
        if self.interval.is_zero() {
            return Err(Error::ZeroLimit {
                what: "codel interval",
            });
        }
        bounded("codel target", self.target)?;
        bounded("codel interval", self.interval)?;
        Ok(CodelParams {
            target: self.target,
            interval: self.interval,
            ecn: self.ecn,
            mtu: link.mtu.as_bytes(),
        })
    }
}

/// The control-loop constants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CodelParams {
    pub(crate) target: Duration,
    pub(crate) interval: Duration,
    pub(crate) ecn: bool,
    /// `maxpacket`: no drop while the backlog is at most one MTU (RFC 8289 §5.6).
    pub(crate) mtu: u64,
}

/// A queue CoDel can pull from.
pub(crate) trait CodelQueue<P> {
    /// Removes the head packet, updating the queue's own counters.
    fn pop(&mut self) -> Option<Packet<P>>;
    /// Bytes still queued (after the pop).
    fn backlog(&self) -> u64;
}

/// Per-queue CoDel state (RFC 8289 §5.2).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CodelState {
    pub(crate) count: u32,
    pub(crate) lastcount: u32,
    pub(crate) dropping: bool,
    first_above_time: Option<Instant>,
    drop_next: Option<Instant>,
}

impl CodelState {
    /// `t + interval / √count` (RFC 8289 §5.6).
    fn control_law(t: Instant, count: u32, interval: Duration) -> Instant {
        t + interval.div_f64((count.max(1) as f64).sqrt())
    }

    /// RFC 8289 §5.6 `dodequeue`: the head packet and whether it may be dropped.
    fn dodequeue<P>(
        &mut self,
        q: &mut dyn CodelQueue<P>,
        params: &CodelParams,
        now: Instant,
    ) -> Option<(Packet<P>, bool)> {
        let Some(p) = q.pop() else {
            self.first_above_time = None;
            return None;
        };
        let sojourn = now.saturating_duration_since(p.enqueued);
        let mut ok_to_drop = false;
        if sojourn < params.target || q.backlog() <= params.mtu {
            self.first_above_time = None;
        } else {
            match self.first_above_time {
                None => self.first_above_time = Some(now + params.interval),
                Some(t) if now >= t => ok_to_drop = true,
                Some(_) => {}
            }
        }
        Some((p, ok_to_drop))
    }

    /// RFC 8289 §5.5 `dequeue`, with Linux's ECN handling (`codel_dequeue`): an ECT packet
    /// CoDel would drop is marked CE and sent instead, and the control law advances as if it
    /// had been dropped.
    pub(crate) fn dequeue<P>(
        &mut self,
        q: &mut dyn CodelQueue<P>,
        params: &CodelParams,
        now: Instant,
        events: &mut dyn EventSink,
    ) -> Option<Packet<P>> {
        let Some((mut p, mut ok_to_drop)) = self.dodequeue(q, params, now) else {
            self.dropping = false;
            return None;
        };
        if self.dropping {
            if !ok_to_drop {
                self.dropping = false;
            }
            while self.dropping && self.drop_next.is_some_and(|t| now >= t) {
                self.count = self.count.saturating_add(1);
                let next = self.drop_next.expect("checked in the loop condition");
                if try_mark(&mut p, params.ecn, MarkReason::Codel, now, events) {
                    self.drop_next = Some(Self::control_law(next, self.count, params.interval));
                    return Some(p);
                }
                report_drop(&p, DropReason::Codel, now, events);
                match self.dodequeue(q, params, now) {
                    None => {
                        self.dropping = false;
                        return None;
                    }
                    Some((np, ok)) => {
                        p = np;
                        ok_to_drop = ok;
                    }
                }
                if !ok_to_drop {
                    self.dropping = false;
                } else {
                    self.drop_next = Some(Self::control_law(next, self.count, params.interval));
                }
            }
        } else if ok_to_drop {
            let marked = try_mark(&mut p, params.ecn, MarkReason::Codel, now, events);
            if !marked {
                report_drop(&p, DropReason::Codel, now, events);
            }
            self.dropping = true;
            // Linux's re-entry rule (RFC 8289 §5.5): resume near the previous drop rate if
            // the last dropping episode ended recently.
            let delta = self.count.wrapping_sub(self.lastcount);
            self.count = 1;
            let recent = self
                .drop_next
                .is_some_and(|dn| now.saturating_duration_since(dn) < params.interval * 16);
            if delta > 1 && delta < u32::MAX / 2 && recent {
                self.count = delta;
            }
            self.drop_next = Some(Self::control_law(now, self.count, params.interval));
            self.lastcount = self.count;
            if marked {
                return Some(p);
            }
            return match self.dodequeue(q, params, now) {
                Some((np, _)) => Some(np),
                None => {
                    self.dropping = false;
                    None
                }
            };
        }
        Some(p)
    }
}

/// A FIFO of packets with byte accounting, the queue under CoDel.
pub(crate) struct Fifo<P> {
    pub(crate) packets: VecDeque<Packet<P>>,
    pub(crate) bytes: u64,
}

impl<P> Fifo<P> {
    pub(crate) fn new() -> Self {
        Fifo {
            packets: VecDeque::new(),
            bytes: 0,
        }
    }

    pub(crate) fn push(&mut self, p: Packet<P>) {
        self.bytes += p.size.as_bytes();
        self.packets.push_back(p);
    }
}

impl<P> CodelQueue<P> for Fifo<P> {
    fn pop(&mut self) -> Option<Packet<P>> {
        let p = self.packets.pop_front()?;
        self.bytes -= p.size.as_bytes();
        Some(p)
    }
    fn backlog(&self) -> u64 {
        self.bytes
    }
}

/// CoDel over a single FIFO (Linux `sch_codel`).
pub struct Codel<P> {
    queue: Fifo<P>,
    state: CodelState,
    params: CodelParams,
    limit: usize,
}

impl<P> Codel<P> {
    /// CoDel per `config`.
    pub fn new(config: &CodelConfig, link: LinkInfo) -> Result<Self, Error> {
        if config.limit == 0 {
            return Err(Error::ZeroLimit {
                what: "codel limit",
            });
        }
        Ok(Codel {
            queue: Fifo::new(),
            state: CodelState::default(),
            params: config.params(link)?,
            limit: config.limit as usize,
        })
    }

    /// The current drop count (RFC 8289 `count_`).
    pub fn count(&self) -> u32 {
        self.state.count
    }

    /// Whether CoDel is in its dropping state.
    pub fn dropping(&self) -> bool {
        self.state.dropping
    }
}

impl<P: Send> Qdisc<P> for Codel<P> {
    fn enqueue(&mut self, mut packet: Packet<P>, now: Instant, events: &mut dyn EventSink) {
        if self.queue.packets.len() >= self.limit {
            report_drop(&packet, DropReason::QueueFull, now, events);
            return;
        }
        packet.enqueued = now;
        report_enqueue(&packet, now, events);
        self.queue.push(packet);
    }

    fn dequeue(&mut self, now: Instant, events: &mut dyn EventSink) -> Option<Packet<P>> {
        self.state
            .dequeue(&mut self.queue, &self.params, now, events)
    }

    fn peek(&self) -> Option<&Packet<P>> {
        self.queue.packets.front()
    }

    fn len(&self) -> usize {
        self.queue.packets.len()
    }

    fn bytes(&self) -> DataSize {
        DataSize::bytes(self.queue.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{EventKind, LinkEvent};
    use crate::qdisc::testing::{Cc, Source, aimd, drops, run};
    use cg_types::{Bitrate, Ecn};

    fn codel(rate: Bitrate, ecn: bool) -> Codel<()> {
        Codel::new(
            &CodelConfig {
                ecn,
                ..CodelConfig::default()
            },
            LinkInfo::new(rate),
        )
        .unwrap()
    }

    fn overload(
        q: &mut Codel<()>,
        ecn: Ecn,
        secs: u64,
    ) -> (Vec<LinkEvent>, Vec<(Instant, crate::Packet)>, Instant) {
        let t0 = Instant::now();
        let rate = Bitrate::mbps(10);
        let mut src = [Source {
            flow: 0,
            rate: Bitrate::mbps(20),
            size: 1000,
            ecn,
            next: t0,
        }];
        let (ev, out) = run(q, rate, &mut src, t0, Duration::from_secs(secs));
        (ev, out, t0)
    }

    #[test]
    fn first_drops_are_spaced_by_interval_over_sqrt_count() {
        let mut q = codel(Bitrate::mbps(10), false);
        let (ev, _, _) = overload(&mut q, Ecn::NotEct, 2);
        let drops: Vec<Instant> = ev
            .iter()
            .filter(|e| e.kind == EventKind::Dropped(DropReason::Codel))
            .map(|e| e.time)
            .collect();
        assert!(drops.len() > 10);
        // First episode: count = 1, 2, 3, …; the n-th gap is interval/√n, quantised by one
        // 0.8 ms dequeue at 10 Mb/s.
        for n in 1..10 {
            let gap = (drops[n] - drops[n - 1]).as_secs_f64();
            let expected = 0.1 / (n as f64).sqrt();
            assert!(
                (gap - expected).abs() < 0.0009,
                "gap {n}: {gap} vs {expected}"
            );
        }
    }

    #[test]
    fn sojourn_settles_near_target_under_a_responsive_twice_overload() {
        // Four Reno-like AIMD senders starting at twice the link rate (50 ms RTT): CoDel's drops
        // bring the standing queue down to about its 5 ms target.
        let t0 = Instant::now();
        let mut q = codel(Bitrate::mbps(10), false);
        let flows = [(Cc::Reno, Ecn::NotEct); 4];
        let (_, out) = aimd(
            &mut q,
            Bitrate::mbps(10),
            Bitrate::mbps(5),
            &flows,
            t0,
            Duration::from_secs(40),
        );
        let mut late: Vec<Duration> = out
            .iter()
            .filter(|(t, _)| *t >= t0 + Duration::from_secs(10))
            .map(|(t, p)| *t - p.enqueued)
            .collect();
        late.sort();
        let median = late[late.len() / 2];
        assert!(
            median >= Duration::from_millis(2) && median <= Duration::from_millis(12),
            "median sojourn {median:?}"
        );
        // …while keeping the link busy.
        let bytes: u64 = out
            .iter()
            .filter(|(t, _)| *t >= t0 + Duration::from_secs(10))
            .map(|(_, p)| p.size.as_bytes())
            .sum();
        let util = bytes as f64 * 8.0 / 30.0 / 10e6;
        assert!(util > 0.85, "utilisation {util}");
    }

    #[test]
    fn unresponsive_twice_overload_raises_the_drop_rate_as_sqrt_count() {
        // Against an unresponsive CBR source CoDel's drop rate rises as √count (RFC 8289 §5.6):
        // after 2 s the gaps have shrunk well below the interval.
        let mut q = codel(Bitrate::mbps(10), false);
        let (ev, _, t0) = overload(&mut q, Ecn::NotEct, 4);
        let late = ev
            .iter()
            .filter(|e| {
                e.kind == EventKind::Dropped(DropReason::Codel)
                    && e.time >= t0 + Duration::from_secs(3)
            })
            .count();
        assert!(late > 30, "{late} drops in the 4th second");
        assert!(q.count() > 100, "count {}", q.count());
    }

    #[test]
    fn ecn_marks_instead_of_dropping() {
        let mut q = codel(Bitrate::mbps(10), true);
        let (ev, out, t0) = overload(&mut q, Ecn::Ect0, 3);
        assert_eq!(drops(&ev, DropReason::Codel), 0);
        let marks = ev
            .iter()
            .filter(|e| e.kind == EventKind::Marked(MarkReason::Codel))
            .count();
        assert!(marks > 10);
        assert_eq!(out.iter().filter(|(_, p)| p.ecn == Ecn::Ce).count(), marks);
        let _ = t0;
    }

    #[test]
    fn no_drops_below_target() {
        let t0 = Instant::now();
        let mut q = codel(Bitrate::mbps(10), false);
        let mut src = [Source {
            flow: 0,
            rate: Bitrate::mbps(9),
            size: 1000,
            ecn: Ecn::NotEct,
            next: t0,
        }];
        let (ev, _) = run(
            &mut q,
            Bitrate::mbps(10),
            &mut src,
            t0,
            Duration::from_secs(5),
        );
        assert_eq!(drops(&ev, DropReason::Codel), 0);
    }

    #[test]
    fn zero_parameters_are_errors() {
        let l = LinkInfo::new(Bitrate::mbps(1));
        assert!(
            Codel::<()>::new(
                &CodelConfig {
                    limit: 0,
                    ..CodelConfig::default()
                },
                l
            )
            .is_err()
        );
        assert!(
            Codel::<()>::new(
                &CodelConfig {
                    target: Duration::ZERO,
                    ..CodelConfig::default()
                },
                l
            )
            .is_err()
        );
        assert!(
            Codel::<()>::new(
                &CodelConfig {
                    interval: Duration::ZERO,
                    ..CodelConfig::default()
                },
                l
            )
            .is_err()
        );
    }
}
