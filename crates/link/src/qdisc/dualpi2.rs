//! DualPI2 (RFC 9332, Linux `sch_dualpi2`): the coupled dual-queue AQM of L4S.
//!
//! - Classifier (RFC 9332 §2.3, RFC 9331 §5.1): ECT(1) and CE go to the L queue, the rest to
//!   the C queue.
//! - Base PI controller (§2.4, §A.1): every `tupdate`,
//!   p′ += α·(q − target) + β·(q − q_prev), clamped to [0, 1], where q is the larger of the two
//!   queues' head sojourn times (Linux).
//! - C queue: drop, or mark if ECT(0), with p_C = p′² (two independent draws, §2.4).
//! - L queue: mark with p_L = max(p_CL, step) where p_CL = k·p′ (coupling, §2.4) and the native
//!   step AQM marks every packet whose sojourn exceeds `step_threshold` (§2.4, §A.1).
//! - Overload (§4.2.3, §A.2): once p_CL ≥ 1, L packets also get the classic drop with p′².
//! - No probabilistic action while the total backlog is under two MTUs (§A.1).
//! - Scheduler: Linux's weighted round robin giving the C queue at least `c_protection` of the
//!   link when both are backlogged (the RFC's time-shifted FIFO is the alternative, §2.4).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use cg_types::{DataSize, Ecn, Rng};
use serde::{Deserialize, Serialize};

use super::{LinkInfo, Qdisc, report_drop, report_enqueue, try_mark};
use crate::error::{Error, bounded, positive, probability};
use crate::event::{DropReason, EventSink, MarkReason};
use crate::packet::Packet;

/// DualPI2 parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DualPi2Config {
    /// Total packet limit of both queues. Default 10000 (Linux). TMA24 §IV-D: 1000.
    pub limit: u32,
    /// PI target queuing delay. Default 15 ms (RFC 9332 §A.1, Linux).
    #[serde(with = "humantime_serde")]
    pub target: Duration,
    /// PI update period. Default 16 ms (RFC 9332 §A.1, Linux).
    #[serde(with = "humantime_serde")]
    pub tupdate: Duration,
    /// Integral gain α in Hz. Default 0.16 (RFC 9332 §A.1, Linux).
    pub alpha: f64,
    /// Proportional gain β in Hz. Default 3.2 (RFC 9332 §A.1, Linux).
    pub beta: f64,
    /// Coupling factor k: p_CL = k·p′. Default 2 (RFC 9332 §2.4, Linux).
    pub coupling_factor: f64,
    /// Sojourn above which every L packet is marked. Default 1 ms (RFC 9332 §A.1, Linux).
    #[serde(with = "humantime_serde")]
    pub step_threshold: Duration,
    /// Share of the link the C queue is guaranteed when both queues are busy. Default 0.1
    /// (Linux `c_protection` 10 %).
    pub c_protection: f64,
    /// Mark ECT(0) packets in the C queue instead of dropping them (classic ECN, RFC 3168).
    /// Default `true` (RFC 9332 §2.4: the Classic AQM marks ECN-capable packets instead of
    /// dropping them, as RFC 3168 AQMs do).
    pub classic_ecn: bool,
    /// Apply the classic drop to L packets once p_CL saturates (RFC 9332 §4.2.3, §A.2). Default `true`
    /// (Linux `drop_overload`).
    pub drop_overload: bool,
}

impl Default for DualPi2Config {
    fn default() -> Self {
        DualPi2Config {
            limit: 10_000,
            target: Duration::from_millis(15),
            tupdate: Duration::from_millis(16),
            alpha: 0.16,
            beta: 3.2,
            coupling_factor: 2.0,
            step_threshold: Duration::from_millis(1),
            c_protection: 0.1,
            classic_ecn: true,
            drop_overload: true,
        }
    }
}

/// A DualPI2 qdisc.
pub struct DualPi2<P> {
    l: VecDeque<Packet<P>>,
    c: VecDeque<Packet<P>>,
    l_bytes: u64,
    c_bytes: u64,
    cfg: DualPi2Config,
    mtu: u64,
    rng: Rng,
    /// p′, the base probability.
    prob: f64,
    prev_qdelay: Duration,
    /// WRR credit (Linux `c_protection_credit`): ≤ 0 serves L when both are backlogged.
    credit: i64,
    /// Credit weights per byte: L dequeues add `wc`, C dequeues subtract `wl`.
    wc: i64,
    wl: i64,
    next_update: Option<Instant>,
}

impl<P> DualPi2<P> {
    /// DualPI2 per `config`; `rng` draws its marking and dropping decisions.
    pub fn new(config: &DualPi2Config, link: LinkInfo, rng: Rng) -> Result<Self, Error> {
        if config.limit == 0 {
            return Err(Error::ZeroLimit {
                what: "dualpi2 limit",
            });
        }
        if config.tupdate.is_zero() {
            return Err(Error::ZeroLimit {
                what: "dualpi2 tupdate",
            });
        }
        if config.target.is_zero() {
            return Err(Error::ZeroLimit {
                what: "dualpi2 target",
            });
        }
        bounded("dualpi2 target", config.target)?;
        bounded("dualpi2 tupdate", config.tupdate)?;
        bounded("dualpi2 step_threshold", config.step_threshold)?;
        positive("dualpi2 alpha", config.alpha)?;
        positive("dualpi2 beta", config.beta)?;
        positive("dualpi2 coupling_factor", config.coupling_factor)?;
        probability("dualpi2 c_protection", config.c_protection)?;
        let wc = (config.c_protection * 100.0).round() as i64;
        Ok(DualPi2 {
            l: VecDeque::with_capacity(1024),
            c: VecDeque::with_capacity(1024),
            l_bytes: 0,
            c_bytes: 0,
            cfg: *config,
            mtu: link.mtu.as_bytes(),
            rng,
            prob: 0.0,
            prev_qdelay: Duration::ZERO,
            credit: 0,
            wc,
            wl: 100 - wc,
            next_update: None,
        })
    }

    /// The base probability p′.
    pub fn base_probability(&self) -> f64 {
        self.prob
    }

    /// The classic drop/mark probability p_C = p′².
    pub fn classic_probability(&self) -> f64 {
        self.prob * self.prob
    }

    /// The coupled L marking probability p_CL = min(k·p′, 1).
    pub fn coupled_probability(&self) -> f64 {
        (self.cfg.coupling_factor * self.prob).min(1.0)
    }

    /// Packets in the L and C queues.
    pub fn queue_lengths(&self) -> (usize, usize) {
        (self.l.len(), self.c.len())
    }

    fn head_delay(q: &VecDeque<Packet<P>>, now: Instant) -> Duration {
        q.front().map_or(Duration::ZERO, |p| {
            now.saturating_duration_since(p.enqueued)
        })
    }

    /// RFC 9332 §A.1 `dualpi2_update`.
    fn update(&mut self, now: Instant) {
        let q = Self::head_delay(&self.l, now).max(Self::head_delay(&self.c, now));
        let (qs, prev, target) = (
            q.as_secs_f64(),
            self.prev_qdelay.as_secs_f64(),
            self.cfg.target.as_secs_f64(),
        );
        let delta = self.cfg.alpha * (qs - target) + self.cfg.beta * (qs - prev);
        self.prob = (self.prob + delta).clamp(0.0, 1.0);
        self.prev_qdelay = q;
    }

    /// p′ > max(U1, U2): probability p′² with two draws (RFC 9332 §2.4).
    fn classic_hit(&mut self) -> bool {
        let (a, b) = (self.rng.next_f64(), self.rng.next_f64());
        self.prob > a.max(b)
    }

    fn backlog(&self) -> u64 {
        self.l_bytes + self.c_bytes
    }
}

impl<P: Send> Qdisc<P> for DualPi2<P> {
    fn enqueue(&mut self, mut packet: Packet<P>, now: Instant, events: &mut dyn EventSink) {
        if self.next_update.is_none() {
            self.next_update = Some(now + self.cfg.tupdate);
        }
        if self.l.len() + self.c.len() >= self.cfg.limit as usize {
            report_drop(&packet, DropReason::QueueFull, now, events);
            return;
        }
        packet.enqueued = now;
        report_enqueue(&packet, now, events);
        let size = packet.size.as_bytes();
        if packet.ecn.is_l4s() {
            self.l_bytes += size;
            self.l.push_back(packet);
        } else {
            self.c_bytes += size;
            self.c.push_back(packet);
        }
    }

    fn dequeue(&mut self, now: Instant, events: &mut dyn EventSink) -> Option<Packet<P>> {
        loop {
            let serve_l = !self.l.is_empty() && (self.c.is_empty() || self.credit <= 0);
            let mut p = if serve_l {
                let p = self.l.pop_front().expect("checked non-empty");
                self.l_bytes -= p.size.as_bytes();
                if !self.c.is_empty() {
                    self.credit += self.wc * p.size.as_bytes() as i64;
                }
                p
            } else if let Some(p) = self.c.pop_front() {
                self.c_bytes -= p.size.as_bytes();
                self.credit -= self.wl * p.size.as_bytes() as i64;
                p
            } else {
                self.credit = 0;
                return None;
            };
            let above_min = self.backlog() + p.size.as_bytes() >= 2 * self.mtu;
            if serve_l {
                let sojourn = now.saturating_duration_since(p.enqueued);
                let p_cl = self.cfg.coupling_factor * self.prob;
                if self.cfg.drop_overload && p_cl >= 1.0 && above_min && self.classic_hit() {
                    report_drop(&p, DropReason::DualPi2, now, events);
                    continue;
                }
                if sojourn > self.cfg.step_threshold {
                    try_mark(&mut p, true, MarkReason::DualPi2Step, now, events);
                } else if above_min && self.rng.bernoulli(p_cl) {
                    try_mark(&mut p, true, MarkReason::DualPi2Coupled, now, events);
                }
                return Some(p);
            }
            if above_min && self.classic_hit() {
                let ecn = self.cfg.classic_ecn && p.ecn == Ecn::Ect0;
                if !try_mark(&mut p, ecn, MarkReason::DualPi2Classic, now, events) {
                    report_drop(&p, DropReason::DualPi2, now, events);
                    continue;
                }
            }
            return Some(p);
        }
    }

    fn peek(&self) -> Option<&Packet<P>> {
        if !self.l.is_empty() && (self.c.is_empty() || self.credit <= 0) {
            self.l.front()
        } else {
            self.c.front()
        }
    }

    fn len(&self) -> usize {
        self.l.len() + self.c.len()
    }

    fn bytes(&self) -> DataSize {
        DataSize::bytes(self.backlog())
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.next_update
    }

    fn drop_probability(&self) -> Option<f64> {
        Some(self.prob)
    }

    fn handle_timeout(&mut self, now: Instant, _events: &mut dyn EventSink) {
        let Some(mut due) = self.next_update else {
            return;
        };
        while due <= now {
            self.update(due);
            due += self.cfg.tupdate;
        }
        let idle = self.l.is_empty()
            && self.c.is_empty()
            && self.prob == 0.0
            && self.prev_qdelay.is_zero();
        self.next_update = if idle { None } else { Some(due) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventKind;
    use crate::packet::FlowId;
    use crate::qdisc::testing::{Cc, Source, aimd, run};
    use cg_types::Bitrate;

    fn dualpi2() -> DualPi2<()> {
        DualPi2::new(
            &DualPi2Config::default(),
            LinkInfo::new(Bitrate::mbps(20)),
            Rng::new(8),
        )
        .unwrap()
    }

    #[test]
    fn l_and_c_flows_overloading_together_get_low_and_target_delay_with_sqrt_coupling() {
        // ECT(1) at 10 Mb/s and Not-ECT at 12 Mb/s into 20 Mb/s: the excess must come out of
        // the C flow (p_C = 2/12), which the PI controller does while holding the queue at its
        // 15 ms target; the L flow is marked with p_CL = k·p′ = 2·√p_C and queues ≈ 1 ms.
        let t0 = Instant::now();
        let link = Bitrate::mbps(20);
        let mut q = dualpi2();
        let mut src = [
            Source {
                flow: 0,
                rate: Bitrate::mbps(10),
                size: 1000,
                ecn: Ecn::Ect1,
                next: t0,
            },
            Source {
                flow: 1,
                rate: Bitrate::mbps(12),
                size: 1000,
                ecn: Ecn::NotEct,
                next: t0,
            },
        ];
        let dur = Duration::from_secs(40);
        let (ev, out) = run(&mut q, link, &mut src, t0, dur);
        let from = t0 + Duration::from_secs(10);
        let (l, c) = (FlowId::from_index(0), FlowId::from_index(1));
        let sojourn = |f: FlowId| {
            let v: Vec<Duration> = out
                .iter()
                .filter(|(t, p)| *t >= from && p.flow == f)
                .map(|(t, p)| *t - p.enqueued)
                .collect();
            (v.iter().sum::<Duration>() / v.len() as u32, v.len())
        };
        let (l_delay, l_n) = sojourn(l);
        let (c_delay, c_n) = sojourn(c);
        assert!(
            l_delay <= Duration::from_millis(1),
            "L queue delay {l_delay:?}"
        );
        assert!(
            c_delay > Duration::from_millis(12) && c_delay < Duration::from_millis(18),
            "C queue delay {c_delay:?}"
        );
        // Neither starves: L keeps its 10 Mb/s, C gets the other 10.
        for (name, n) in [("L", l_n), ("C", c_n)] {
            let rate = n as f64 * 8000.0 / 30.0;
            assert!((rate / 10e6 - 1.0).abs() < 0.03, "{name} flow rate {rate}");
        }
        let count = |pred: &dyn Fn(&crate::LinkEvent) -> bool| {
            ev.iter().filter(|e| e.time >= from && pred(e)).count() as f64
        };
        let c_drops = count(&|e| e.flow == c && e.kind == EventKind::Dropped(DropReason::DualPi2));
        let c_total =
            count(&|e| e.flow == c && matches!(e.kind, EventKind::Dequeued { .. })) + c_drops;
        let l_step =
            count(&|e| e.flow == l && e.kind == EventKind::Marked(MarkReason::DualPi2Step));
        let l_coupled =
            count(&|e| e.flow == l && e.kind == EventKind::Marked(MarkReason::DualPi2Coupled));
        let l_total = count(&|e| e.flow == l && matches!(e.kind, EventKind::Dequeued { .. }));
        let p_c = c_drops / c_total;
        assert!((p_c - 2.0 / 12.0).abs() < 0.01, "p_C {p_c}");
        let p_l = l_coupled / (l_total - l_step);
        let ratio = p_l / (2.0 * p_c.sqrt());
        assert!(
            (0.9..=1.1).contains(&ratio),
            "p_L {p_l} vs 2√p_C {} (p_C {p_c})",
            2.0 * p_c.sqrt()
        );
    }

    #[test]
    fn responsive_scalable_and_classic_flows_both_get_throughput() {
        let t0 = Instant::now();
        let link = Bitrate::mbps(20);
        let mut q = dualpi2();
        let flows = [(Cc::Scalable, Ecn::Ect1), (Cc::Reno, Ecn::NotEct)];
        let (_, out) = aimd(
            &mut q,
            link,
            Bitrate::mbps(20),
            &flows,
            t0,
            Duration::from_secs(40),
        );
        let from = t0 + Duration::from_secs(10);
        let l: Vec<_> = out
            .iter()
            .filter(|(t, p)| *t >= from && p.flow == FlowId::from_index(0))
            .collect();
        let n_c = out
            .iter()
            .filter(|(t, p)| *t >= from && p.flow == FlowId::from_index(1))
            .count();
        let l_delay = l.iter().map(|(t, p)| *t - p.enqueued).sum::<Duration>() / l.len() as u32;
        assert!(l_delay < Duration::from_millis(2), "L delay {l_delay:?}");
        for n in [l.len(), n_c] {
            assert!(
                n as f64 * 8000.0 / 30.0 > 4e6,
                "a flow starves: {} vs {n_c}",
                l.len()
            );
        }
    }

    #[test]
    fn classifier_follows_the_ecn_field() {
        let t0 = Instant::now();
        let mut q = dualpi2();
        let mut ev = Vec::new();
        for (i, ecn) in [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce]
            .into_iter()
            .enumerate()
        {
            q.enqueue(
                crate::qdisc::testing::pkt_ecn(i as u64, 0, 100, ecn, t0),
                t0,
                &mut ev,
            );
        }
        assert_eq!(q.queue_lengths(), (2, 2));
    }

    #[test]
    fn overload_drops_l_packets_classically() {
        // An unresponsive ECT(1) flow at 2× the link saturates p_CL; L packets are then
        // dropped with p′² instead of only marked (RFC 9332 §4.2.3).
        let t0 = Instant::now();
        let mut q = dualpi2();
        let mut src = [Source {
            flow: 0,
            rate: Bitrate::mbps(40),
            size: 1000,
            ecn: Ecn::Ect1,
            next: t0,
        }];
        let (ev, _) = run(
            &mut q,
            Bitrate::mbps(20),
            &mut src,
            t0,
            Duration::from_secs(10),
        );
        assert!(q.coupled_probability() >= 1.0);
        let dropped = ev
            .iter()
            .filter(|e| e.kind == EventKind::Dropped(DropReason::DualPi2))
            .count();
        assert!(dropped > 1000, "{dropped}");
    }

    #[test]
    fn c_protection_keeps_a_tenth_for_the_classic_queue() {
        let t0 = Instant::now();
        let cfg = DualPi2Config {
            drop_overload: false,
            ..DualPi2Config::default()
        };
        let mut q = DualPi2::new(&cfg, LinkInfo::new(Bitrate::mbps(20)), Rng::new(1)).unwrap();
        let mut src = [
            Source {
                flow: 0,
                rate: Bitrate::mbps(30),
                size: 1000,
                ecn: Ecn::Ect1,
                next: t0,
            },
            Source {
                flow: 1,
                rate: Bitrate::mbps(30),
                size: 1000,
                ecn: Ecn::Ect0,
                next: t0,
            },
        ];
        let (_, out) = run(
            &mut q,
            Bitrate::mbps(20),
            &mut src,
            t0,
            Duration::from_secs(5),
        );
        let c = out
            .iter()
            .filter(|(_, p)| p.flow == FlowId::from_index(1))
            .count() as f64;
        let share = c / out.len() as f64;
        assert!((0.09..0.2).contains(&share), "C share {share}");
    }

    #[test]
    fn invalid_parameters_are_errors() {
        let l = LinkInfo::new(Bitrate::mbps(1));
        for c in [
            DualPi2Config {
                limit: 0,
                ..DualPi2Config::default()
            },
            DualPi2Config {
                alpha: f64::NAN,
                ..DualPi2Config::default()
            },
            DualPi2Config {
                coupling_factor: 0.0,
                ..DualPi2Config::default()
            },
            DualPi2Config {
                c_protection: 1.5,
                ..DualPi2Config::default()
            },
        ] {
            assert!(DualPi2::<()>::new(&c, l, Rng::new(0)).is_err(), "{c:?}");
        }
    }
}
