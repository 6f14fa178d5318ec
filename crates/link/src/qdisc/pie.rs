//! PIE (RFC 8033): Proportional Integral controller Enhanced, probabilistic drop at enqueue.
//!
//! Follows RFC 8033 §4 and Linux `sch_pie` in its default timestamp mode (the queuing delay is
//! the sojourn time of the last dequeued packet, zero once the queue is empty).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use cg_types::{DataSize, Rng};
use serde::{Deserialize, Serialize};

use super::{LinkInfo, Qdisc, report_drop, report_enqueue, try_mark};
use crate::error::{Error, bounded, positive, probability};
use crate::event::{DropReason, EventSink, MarkReason};
use crate::packet::Packet;

/// PIE parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PieConfig {
    /// Target queuing delay (`QDELAY_REF`). Default 15 ms (RFC 8033 §5.1, Linux).
    /// CCR16 Table 1: 20 ms (the early draft's value).
    #[serde(with = "humantime_serde")]
    pub target: Duration,
    /// Probability update period (`T_UPDATE`). Default 15 ms (RFC 8033 §5.1, Linux).
    /// CCR16 Table 1: 30 ms.
    #[serde(with = "humantime_serde")]
    pub tupdate: Duration,
    /// Integral gain α in Hz. Default 0.125 (RFC 8033 §5.1; Linux `alpha 2` ÷ 16).
    pub alpha: f64,
    /// Proportional gain β in Hz. Default 1.25 (RFC 8033 §5.1; Linux `beta 20` ÷ 16).
    pub beta: f64,
    /// Burst allowance (`MAX_BURST`): no early drop for this long after the queue was idle.
    /// Default 150 ms (RFC 8033 §5.1).
    #[serde(with = "humantime_serde")]
    pub max_burst: Duration,
    /// Queue limit in packets. Default 1000 (Linux; CCR16 Table 1).
    pub limit: u32,
    /// Mark ECT packets CE instead of dropping while p ≤ `mark_ecn_threshold`. Default
    /// `false` (Linux `noecn`).
    pub ecn: bool,
    /// Drop probability above which even ECT packets are dropped. Default 0.1 (RFC 8033 §5.1).
    pub mark_ecn_threshold: f64,
}

impl Default for PieConfig {
    fn default() -> Self {
        PieConfig {
            target: Duration::from_millis(15),
            tupdate: Duration::from_millis(15),
            alpha: 0.125,
            beta: 1.25,
            max_burst: Duration::from_millis(150),
            limit: 1000,
            ecn: false,
            mark_ecn_threshold: 0.1,
        }
    }
}

/// A PIE queue.
pub struct Pie<P> {
    queue: VecDeque<Packet<P>>,
    bytes: u64,
    c: PieConfig,
    mtu: u64,
    rng: Rng,
    prob: f64,
    accu_prob: f64,
    qdelay: Duration,
    qdelay_old: Duration,
    burst_allowance: Duration,
    next_update: Option<Instant>,
}

impl<P> Pie<P> {
    /// PIE per `config`; `rng` draws its drop decisions.
    pub fn new(config: &PieConfig, link: LinkInfo, rng: Rng) -> Result<Self, Error> {
        if config.limit == 0 {
            return Err(Error::ZeroLimit { what: "pie limit" });
        }
        if config.target.is_zero() {
            return Err(Error::ZeroLimit { what: "pie target" });
        }
        if config.tupdate.is_zero() {
            return Err(Error::ZeroLimit {
                what: "pie tupdate",
            });
        }
        bounded("pie target", config.target)?;
        bounded("pie tupdate", config.tupdate)?;
        bounded("pie max_burst", config.max_burst)?;
        positive("pie alpha", config.alpha)?;
        positive("pie beta", config.beta)?;
        probability("pie mark_ecn_threshold", config.mark_ecn_threshold)?;
        Ok(Pie {
            queue: VecDeque::with_capacity((config.limit as usize).min(4096)),
            bytes: 0,
            c: *config,
            mtu: link.mtu.as_bytes(),
            rng,
            prob: 0.0,
            accu_prob: 0.0,
            qdelay: Duration::ZERO,
            qdelay_old: Duration::ZERO,
            burst_allowance: config.max_burst,
            next_update: None,
        })
    }

    /// The current drop probability.
    pub fn probability(&self) -> f64 {
        self.prob
    }

    /// The queuing delay PIE currently sees (sojourn of the last dequeued packet).
    pub fn queue_delay(&self) -> Duration {
        self.qdelay
    }

    /// The burst allowance left.
    pub fn burst_allowance(&self) -> Duration {
        self.burst_allowance
    }

    /// RFC 8033 §4.1 random dropping with the §5.4 de-randomisation (as Linux:
    /// never drop while the accumulated probability is below 0.85, always at 8.5).
    fn drop_early(&mut self, size: u64) -> bool {
        if !self.burst_allowance.is_zero() {
            return false;
        }
        if self.qdelay < self.c.target / 2 && self.prob < 0.2 {
            return false;
        }
        if self.bytes + size < 2 * self.mtu {
            return false;
        }
        if self.prob == 0.0 {
            self.accu_prob = 0.0;
        } else {
            self.accu_prob += self.prob;
        }
        if self.accu_prob < 0.85 {
            return false;
        }
        if self.accu_prob >= 8.5 {
            self.accu_prob = 0.0;
            return true;
        }
        if self.rng.bernoulli(self.prob) {
            self.accu_prob = 0.0;
            return true;
        }
        false
    }

    /// RFC 8033 §4.2 `calculate_drop_prob`, with Linux's auto-scaling of α and β and its
    /// guards.
    fn update(&mut self) {
        let (qd, qd_old, target) = (
            self.qdelay.as_secs_f64(),
            self.qdelay_old.as_secs_f64(),
            self.c.target.as_secs_f64(),
        );
        let (mut alpha, mut beta) = (self.c.alpha, self.c.beta);
        // Scale the gains down while p is small (RFC 8033 §4.2 table; Linux `pie.c`).
        if self.prob < 0.1 {
            alpha /= 2.0;
            beta /= 2.0;
            let mut bound = 0.01;
            while self.prob < bound && bound >= 1e-6 {
                alpha /= 4.0;
                beta /= 4.0;
                bound /= 10.0;
            }
        }
        let mut delta = alpha * (qd - target) + beta * (qd - qd_old);
        // Steps of at most +2 % once p ≥ 10 % (RFC 8033 §5.5, cap drop adjustment).
        if delta > 0.02 && self.prob >= 0.1 {
            delta = 0.02;
        }
        // Quick response to very high delay (≥ 250 ms).
        if self.qdelay > Duration::from_millis(250) {
            delta += 0.02;
        }
        self.prob = (self.prob + delta).clamp(0.0, 1.0);
        // Decay quickly when the queue has been idle for two updates.
        if self.qdelay.is_zero() && self.qdelay_old.is_zero() {
            self.prob -= self.prob / 64.0;
            if self.prob < 1e-9 {
                self.prob = 0.0;
            }
        }
        self.burst_allowance = self.burst_allowance.saturating_sub(self.c.tupdate);
        // Re-arm the burst allowance once idle (RFC 8033 §4.4, §5.3).
        if self.qdelay < self.c.target / 2
            && self.qdelay_old < self.c.target / 2
            && self.prob == 0.0
        {
            self.burst_allowance = self.c.max_burst;
            self.accu_prob = 0.0;
        }
        self.qdelay_old = self.qdelay;
    }

    /// Whether the periodic update still has anything to do.
    fn idle(&self) -> bool {
        self.queue.is_empty()
            && self.prob == 0.0
            && self.qdelay.is_zero()
            && self.qdelay_old.is_zero()
            && self.burst_allowance == self.c.max_burst
    }
}

impl<P: Send> Qdisc<P> for Pie<P> {
    fn enqueue(&mut self, mut packet: Packet<P>, now: Instant, events: &mut dyn EventSink) {
        if self.next_update.is_none() {
            self.next_update = Some(now + self.c.tupdate);
        }
        if self.queue.len() >= self.c.limit as usize {
            report_drop(&packet, DropReason::QueueFull, now, events);
            return;
        }
        if self.drop_early(packet.size.as_bytes()) {
            let may_mark = self.c.ecn && self.prob <= self.c.mark_ecn_threshold;
            if !try_mark(&mut packet, may_mark, MarkReason::Pie, now, events) {
                report_drop(&packet, DropReason::Pie, now, events);
                return;
            }
        }
        packet.enqueued = now;
        report_enqueue(&packet, now, events);
        self.bytes += packet.size.as_bytes();
        self.queue.push_back(packet);
    }

    fn dequeue(&mut self, now: Instant, _events: &mut dyn EventSink) -> Option<Packet<P>> {
        let p = self.queue.pop_front()?;
        self.bytes -= p.size.as_bytes();
        self.qdelay = if self.queue.is_empty() {
            Duration::ZERO
        } else {
            now.saturating_duration_since(p.enqueued)
        };
        Some(p)
    }

    fn peek(&self) -> Option<&Packet<P>> {
        self.queue.front()
    }

    fn len(&self) -> usize {
        self.queue.len()
    }

    fn bytes(&self) -> DataSize {
        DataSize::bytes(self.bytes)
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
            self.update();
            due += self.c.tupdate;
        }
        self.next_update = if self.idle() { None } else { Some(due) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testing::{Source, drops, run};
    use cg_types::{Bitrate, Ecn};

    fn pie() -> Pie<()> {
        Pie::new(
            &PieConfig::default(),
            LinkInfo::new(Bitrate::mbps(10)),
            Rng::new(5),
        )
        .unwrap()
    }

    #[test]
    fn probability_rises_under_overload_and_decays_to_zero_after() {
        let t0 = Instant::now();
        let mut q = pie();
        let link = Bitrate::mbps(10);
        // (queue delay, p) after each 15 ms step: 1.5 s of 2× overload, then light load.
        let mut samples = Vec::new();
        let mut t = t0;
        for step in 0..400 {
            let rate = if step < 100 {
                Bitrate::mbps(20)
            } else {
                Bitrate::mbps(5)
            };
            let mut src = [Source {
                flow: 0,
                rate,
                size: 1000,
                ecn: Ecn::NotEct,
                next: t,
            }];
            run(&mut q, link, &mut src, t, Duration::from_millis(15));
            t += Duration::from_millis(15);
            samples.push((q.queue_delay(), q.probability()));
        }
        let target = PieConfig::default().target;
        // While the delay is above target and not falling, p never falls.
        for w in samples[..100].windows(2) {
            if w[1].0 > target && w[1].0 >= w[0].0 {
                assert!(
                    w[1].1 >= w[0].1,
                    "p fell while delay rose above target: {w:?}"
                );
            }
        }
        let peak = samples[..100].iter().map(|s| s.1).fold(0.0, f64::max);
        assert!(
            peak > 0.3,
            "2× unresponsive overload needs p ≈ 0.5; peak {peak}"
        );
        // After the overload: once the delay is below target, p only decays, down to 0.
        let calm = 100
            + samples[100..]
                .iter()
                .position(|s| s.0 < target / 2)
                .unwrap();
        for w in samples[calm..].windows(2) {
            assert!(w[1].1 <= w[0].1, "p rose in light load: {w:?}");
        }
        assert_eq!(samples.last().unwrap().1, 0.0);
        run(&mut q, link, &mut [], t, Duration::from_millis(200));
        assert_eq!(q.poll_timeout(), None, "an idle PIE stops its timer");
    }

    #[test]
    fn burst_allowance_spares_a_short_burst() {
        let t0 = Instant::now();
        let mut q = pie();
        // 140 ms at 3× the link rate after idle: the queue reaches ~90 ms, far above target,
        // but within the 150 ms burst allowance nothing is dropped early.
        let mut src = [Source {
            flow: 0,
            rate: Bitrate::mbps(30),
            size: 1000,
            ecn: Ecn::NotEct,
            next: t0,
        }];
        let (ev, _) = run(
            &mut q,
            Bitrate::mbps(10),
            &mut src,
            t0,
            Duration::from_millis(140),
        );
        assert_eq!(drops(&ev, DropReason::Pie), 0);
        // The same load sustained is dropped early once the allowance is spent.
        let mut q = pie();
        let mut src = [Source {
            flow: 0,
            rate: Bitrate::mbps(30),
            size: 1000,
            ecn: Ecn::NotEct,
            next: t0,
        }];
        let (ev, _) = run(
            &mut q,
            Bitrate::mbps(10),
            &mut src,
            t0,
            Duration::from_secs(2),
        );
        let first = ev
            .iter()
            .find(|e| e.kind == crate::event::EventKind::Dropped(DropReason::Pie))
            .expect("sustained overload is dropped");
        assert!(first.time - t0 >= Duration::from_millis(150));
    }

    #[test]
    fn ecn_marks_while_probability_is_low() {
        let t0 = Instant::now();
        let mut q = Pie::new(
            &PieConfig {
                ecn: true,
                ..PieConfig::default()
            },
            LinkInfo::new(Bitrate::mbps(10)),
            Rng::new(1),
        )
        .unwrap();
        let mut src = [Source {
            flow: 0,
            rate: Bitrate::mbps(11),
            size: 1000,
            ecn: Ecn::Ect0,
            next: t0,
        }];
        let (ev, _) = run(
            &mut q,
            Bitrate::mbps(10),
            &mut src,
            t0,
            Duration::from_secs(5),
        );
        // An unresponsive ECT source is first marked; only once p passes 10 % (marks do not
        // relieve the queue) does PIE drop (RFC 8033 §5.1).
        let first_mark = ev
            .iter()
            .find(|e| e.kind == crate::event::EventKind::Marked(MarkReason::Pie));
        let first_drop = ev
            .iter()
            .find(|e| e.kind == crate::event::EventKind::Dropped(DropReason::Pie));
        let first_mark = first_mark.expect("marks happen").time;
        assert!(first_drop.is_none_or(|d| d.time > first_mark));
    }

    #[test]
    fn invalid_parameters_are_errors() {
        let l = LinkInfo::new(Bitrate::mbps(1));
        let bad = [
            PieConfig {
                limit: 0,
                ..PieConfig::default()
            },
            PieConfig {
                alpha: f64::NAN,
                ..PieConfig::default()
            },
            PieConfig {
                beta: -1.0,
                ..PieConfig::default()
            },
            PieConfig {
                tupdate: Duration::ZERO,
                ..PieConfig::default()
            },
        ];
        for c in bad {
            assert!(Pie::<()>::new(&c, l, Rng::new(0)).is_err(), "{c:?}");
        }
    }
}
