//! The bottleneck: random loss → queue discipline → serialisation at the capacity →
//! propagation (delay, jitter, reordering, duplication) → delivery.

use std::time::Instant;

use cg_types::{Bitrate, DataSize, Rng};
use serde::{Deserialize, Serialize};

use crate::capacity::{Capacity, CapacityConfig};
use crate::delay::{DelayConfig, DelayLine};
use crate::error::Error;
use crate::event::{DropReason, EventKind, EventLog, EventSink, LinkEvent};
use crate::loss::{Loss, LossConfig};
use crate::packet::Packet;
use crate::qdisc::{BoxQdisc, LinkInfo, Qdisc, QdiscConfig};
use crate::stats::{LinkStats, Recorder};

/// Everything that defines a link. Deserialises from a netlab scenario's TOML; every field
/// may be omitted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LinkConfig {
    /// Serialisation rate. Default: constant 10 Mb/s.
    pub capacity: CapacityConfig,
    /// Propagation delay, jitter, reordering, duplication. Default: none.
    pub delay: DelayConfig,
    /// Random loss before the queue. Default: none.
    pub loss: LossConfig,
    /// Queue discipline. Default: `pfifo` 1000 packets (Linux's default device queue).
    pub qdisc: QdiscConfig,
    /// Largest packet expected (qdisc MTU guards, FQ quanta). Default 1514 B.
    pub mtu: DataSize,
    /// Seed of every random decision of this link (loss, jitter, AQM drops). Default 1.
    pub seed: u64,
    /// Newest per-packet events kept in [`Link::events`] (`None`: keep all). Default 1 Mi
    /// events; counters in [`Link::stats`] are kept regardless.
    pub event_limit: Option<usize>,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig {
            capacity: CapacityConfig::default(),
            delay: DelayConfig::default(),
            loss: LossConfig::None,
            qdisc: QdiscConfig::default(),
            mtu: DataSize::bytes(1514),
            seed: 1,
            event_limit: Some(1 << 20),
        }
    }
}

impl LinkConfig {
    /// A constant-rate link with the default qdisc and no delay.
    pub fn constant(rate: Bitrate) -> Self {
        LinkConfig {
            capacity: CapacityConfig::constant(rate),
            ..LinkConfig::default()
        }
    }

    /// This config with one-way propagation delay `d`.
    pub fn with_delay(mut self, d: std::time::Duration) -> Self {
        self.delay.base = d;
        self
    }

    /// This config with queue discipline `q`.
    pub fn with_qdisc(mut self, q: impl Into<QdiscConfig>) -> Self {
        self.qdisc = q.into();
        self
    }

    /// This config with random loss `loss`.
    pub fn with_loss(mut self, loss: LossConfig) -> Self {
        self.loss = loss;
        self
    }

    /// This config with seed `seed`.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// What the qdisc is told about the link.
    pub fn link_info(&self) -> LinkInfo {
        LinkInfo {
            rate: self.capacity.mean_rate(),
            mtu: self.mtu,
        }
    }

    /// Checks the whole config (what [`Link::new`] does, without keeping the link).
    pub fn validate(&self) -> Result<(), Error> {
        Link::<()>::new(self.clone()).map(drop)
    }
}

/// A sans-IO bottleneck link carrying packets with payload `P`.
///
/// Drive it with [`Link::handle_packet`] for each arriving packet, [`Link::poll_delivery`]
/// until it returns `None`, and [`Link::handle_timeout`] at [`Link::poll_timeout`]. Everything
/// that happens between two calls is computed at its exact instant (a dequeue at the
/// serialisation end, not at the late wake-up), so a real-time driver that wakes late loses
/// no accuracy, and a simulation just jumps from one `poll_timeout` to the next. Time never
/// goes backwards: an earlier `now` than already seen is treated as the latest one seen.
pub struct Link<P = ()> {
    config: LinkConfig,
    capacity: Capacity,
    qdisc: BoxQdisc<P>,
    loss: Loss,
    line: DelayLine<P>,
    /// The packet being serialised and when its last bit leaves.
    serving: Option<(Instant, Packet<P>)>,
    /// When to try the next dequeue, if the link is free and the queue is not empty.
    next_dequeue: Option<Instant>,
    /// The qdisc returned nothing while holding packets (HTB rate limits).
    throttled: bool,
    rec: Recorder,
    now: Option<Instant>,
    /// The rate last told to the qdisc ([`Qdisc::set_rate`]).
    told_rate: Bitrate,
}

impl<P: Clone + Send + 'static> Link<P> {
    /// Validates `config` and builds the link. Its schedule or trace starts at the first
    /// `now` it is given (or at [`Link::start`]).
    pub fn new(config: LinkConfig) -> Result<Self, Error> {
        if config.mtu == DataSize::ZERO {
            return Err(Error::ZeroLimit { what: "link mtu" });
        }
        let mut rng = Rng::new(config.seed);
        let capacity = Capacity::new(&config.capacity)?;
        let qdisc = config.qdisc.build(config.link_info(), &mut rng.fork())?;
        let loss = Loss::new(config.loss, rng.fork())?;
        let line = DelayLine::new(config.delay, rng.fork())?;
        let rec = Recorder {
            log: EventLog::new(config.event_limit),
            stats: LinkStats::default(),
        };
        let told_rate = config.link_info().rate;
        Ok(Link {
            config,
            capacity,
            qdisc,
            loss,
            line,
            serving: None,
            next_dequeue: None,
            throttled: false,
            told_rate,
            rec,
            now: None,
        })
    }

    /// Starts the capacity schedule or trace at `epoch` (if no earlier `now` did).
    pub fn start(&mut self, epoch: Instant) {
        self.capacity.anchor(epoch);
        self.now.get_or_insert(epoch);
    }

    /// A packet arrives at the link at `now`: random loss, then the qdisc.
    pub fn handle_packet(&mut self, mut packet: Packet<P>, now: Instant) {
        let now = self.advance(now);
        packet.arrival = now;
        packet.enqueued = now;
        self.rec.stats.arrived(&packet.flow, packet.size);
        if self.loss.lose() {
            self.rec.push(LinkEvent::new(
                &packet,
                now,
                EventKind::Dropped(DropReason::RandomLoss),
            ));
            return;
        }
        let rate = self.capacity.rate_at(now);
        if rate != self.told_rate {
            self.told_rate = rate;
            self.qdisc.set_rate(rate);
        }
        self.qdisc.enqueue(packet, now, &mut self.rec);
        if self.serving.is_none() && !self.qdisc.is_empty() {
            self.next_dequeue = Some(match self.next_dequeue {
                Some(t) if t > now && !self.throttled => t,
                _ => self.capacity.service_start(now),
            });
            self.throttled = false;
        }
        self.advance(now);
    }

    /// Runs everything due at or before `now` (serialisation ends, dequeues, qdisc timers).
    pub fn handle_timeout(&mut self, now: Instant) {
        self.advance(now);
    }

    /// The next packet delivered at or before `now` (call until `None`). Its `ecn` may have
    /// been set to CE on the way.
    pub fn poll_delivery(&mut self, now: Instant) -> Option<Packet<P>> {
        self.advance(now);
        let (at, packet) = self.line.pop_due(now)?;
        let latency = at.saturating_duration_since(packet.arrival);
        self.rec.push(LinkEvent::new(
            &packet,
            at,
            EventKind::Delivered { latency },
        ));
        Some(packet)
    }

    /// The oldest event not yet taken (for drivers that stream events out; tests usually read
    /// [`Link::events`] instead).
    pub fn poll_event(&mut self) -> Option<LinkEvent> {
        self.rec.log.pop()
    }

    /// The next instant anything happens: a serialisation end, a dequeue, a qdisc timer or a
    /// delivery. `None` when the link is idle and empty.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let dequeue = if self.serving.is_none() && !self.qdisc.is_empty() {
            self.next_dequeue
        } else {
            None
        };
        [
            self.serving.as_ref().map(|s| s.0),
            dequeue,
            self.qdisc.poll_timeout(),
            self.line.next_delivery(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Processes everything due at or before `now`, in time order; returns the effective now.
    fn advance(&mut self, now: Instant) -> Instant {
        let now = match self.now {
            Some(prev) if prev > now => prev,
            _ => now,
        };
        self.capacity.anchor(now);
        self.now = Some(now);
        let mut timer_stuck_at = None;
        loop {
            let finish = self.serving.as_ref().map(|s| s.0);
            let dequeue = if self.serving.is_none() && !self.qdisc.is_empty() {
                self.next_dequeue
            } else {
                None
            };
            let timer = self
                .qdisc
                .poll_timeout()
                .filter(|t| Some(*t) != timer_stuck_at);
            let Some(t) = [finish, dequeue, timer].into_iter().flatten().min() else {
                break;
            };
            if t > now {
                break;
            }
            if finish == Some(t) {
                let (_, packet) = self
                    .serving
                    .take()
                    .expect("finish is Some only while serving");
                self.line.push(packet, t, &mut self.rec);
                self.next_dequeue = Some(self.capacity.service_start(t));
            } else if timer == Some(t) {
                self.qdisc.handle_timeout(t, &mut self.rec);
                if self.qdisc.poll_timeout().is_some_and(|next| next <= t) {
                    // A qdisc breaking the timer contract must not hang the link.
                    timer_stuck_at = Some(t);
                }
            } else {
                match self.qdisc.dequeue(t, &mut self.rec) {
                    Some(packet) => {
                        let sojourn = t.saturating_duration_since(packet.enqueued);
                        self.rec
                            .push(LinkEvent::new(&packet, t, EventKind::Dequeued { sojourn }));
                        let end = self.capacity.finish(t, packet.size);
                        self.serving = Some((end, packet));
                        self.throttled = false;
                    }
                    None => {
                        // Empty after dequeue-time drops, or throttled: retry at the qdisc's
                        // timer (or the end of an outage then), or when the next packet
                        // arrives.
                        self.throttled = !self.qdisc.is_empty();
                        self.next_dequeue = self
                            .qdisc
                            .poll_timeout()
                            .filter(|x| *x > t)
                            .map(|x| self.capacity.service_start(x));
                    }
                }
            }
        }
        now
    }
}

impl<P> Link<P> {
    /// The configuration it was built from.
    pub fn config(&self) -> &LinkConfig {
        &self.config
    }

    /// The newest per-packet events (bounded by [`LinkConfig::event_limit`]).
    pub fn events(&self) -> &EventLog {
        &self.rec.log
    }

    /// Totals and per-flow counters since the start.
    pub fn stats(&self) -> &LinkStats {
        &self.rec.stats
    }

    /// The queue discipline (its backlog, its AQM state through its own accessors).
    pub fn qdisc(&self) -> &dyn Qdisc<P> {
        &*self.qdisc
    }

    /// Packets queued (not counting the one being serialised).
    pub fn backlog(&self) -> usize {
        self.qdisc.len()
    }

    /// Bytes queued.
    pub fn backlog_bytes(&self) -> DataSize {
        self.qdisc.bytes()
    }

    /// Packets serialised and not yet delivered.
    pub fn in_flight(&self) -> usize {
        self.line.len()
    }

    /// Whether a packet is being serialised.
    pub fn busy(&self) -> bool {
        self.serving.is_some()
    }

    /// The capacity in force at `t`: zero during a schedule's outage, a trace's mean rate for
    /// traces.
    pub fn rate_at(&self, t: Instant) -> Bitrate {
        self.capacity.rate_at(t)
    }
}

impl<P> std::fmt::Debug for Link<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("config", &self.config)
            .field("backlog", &self.qdisc.len())
            .field("in_flight", &self.line.len())
            .field("busy", &self.serving.is_some())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::time::Duration;

    use cg_types::Ecn;

    use super::*;
    use crate::capacity::{MahimahiTrace, RateStep};
    use crate::packet::{FlowId, PacketId};
    use crate::qdisc::DropTailConfig;

    /// A constant-bit-rate source for link tests.
    pub(crate) struct Cbr {
        pub flow: FlowId,
        pub rate: Bitrate,
        pub size: DataSize,
        pub ecn: Ecn,
        pub next: Instant,
        pub stop: Option<Instant>,
    }

    impl Cbr {
        pub(crate) fn new(i: u16, rate: Bitrate, size: u64, start: Instant) -> Self {
            Cbr {
                flow: FlowId::from_index(i),
                rate,
                size: DataSize::bytes(size),
                ecn: Ecn::NotEct,
                next: start,
                stop: None,
            }
        }
    }

    /// Feeds `link` from `sources` until `until`; returns deliveries with their times.
    pub(crate) fn drive(
        link: &mut Link<()>,
        sources: &mut [Cbr],
        until: Instant,
    ) -> Vec<(Instant, Packet<()>)> {
        let mut out = Vec::new();
        let mut id = 0;
        loop {
            let src = sources
                .iter()
                .filter(|s| s.stop.is_none_or(|stop| s.next < stop))
                .map(|s| s.next)
                .min();
            let Some(now) = [src, link.poll_timeout()].into_iter().flatten().min() else {
                break;
            };
            if now > until {
                break;
            }
            for s in sources.iter_mut() {
                if s.next == now && s.stop.is_none_or(|stop| s.next < stop) {
                    let p = Packet::new(PacketId(id), s.flow, s.size, now, ()).with_ecn(s.ecn);
                    id += 1;
                    link.handle_packet(p, now);
                    s.next += s
                        .rate
                        .time_to_send(s.size)
                        .expect("source rate is positive");
                }
            }
            link.handle_timeout(now);
            while let Some(p) = link.poll_delivery(now) {
                out.push((now, p));
            }
        }
        out
    }

    /// Bytes delivered in each whole window of `w` from `t0`.
    pub(crate) fn per_window(
        out: &[(Instant, Packet<()>)],
        t0: Instant,
        w: Duration,
        n: usize,
    ) -> Vec<u64> {
        let mut bins = vec![0u64; n];
        for (t, p) in out {
            let k = ((*t - t0).as_nanos() / w.as_nanos()) as usize;
            if k < n {
                bins[k] += p.size.as_bytes();
            }
        }
        bins
    }

    #[test]
    fn a_packet_takes_serialisation_plus_propagation() {
        let t0 = Instant::now();
        let mut link =
            Link::new(LinkConfig::constant(Bitrate::mbps(1)).with_delay(Duration::from_millis(20)))
                .unwrap();
        link.handle_packet(
            Packet::new(
                PacketId(7),
                FlowId::from_index(0),
                DataSize::bytes(1250),
                t0,
                (),
            ),
            t0,
        );
        assert_eq!(link.poll_timeout(), Some(t0 + Duration::from_millis(10)));
        link.handle_timeout(t0 + Duration::from_millis(10));
        assert_eq!(link.poll_timeout(), Some(t0 + Duration::from_millis(30)));
        assert!(link.poll_delivery(t0 + Duration::from_millis(29)).is_none());
        let p = link.poll_delivery(t0 + Duration::from_millis(30)).unwrap();
        assert_eq!(p.id, PacketId(7));
        assert_eq!(link.poll_timeout(), None);
        let kinds: Vec<_> = link.events().iter().map(|e| e.kind).collect();
        assert_eq!(
            kinds,
            vec![
                EventKind::Enqueued,
                EventKind::Dequeued {
                    sojourn: Duration::ZERO
                },
                EventKind::Delivered {
                    latency: Duration::from_millis(30)
                },
            ]
        );
    }

    #[test]
    fn a_late_driver_gets_exact_times() {
        // Three back-to-back packets, the driver wakes only once, long after: deliveries and
        // sojourns are those of an on-time driver.
        let t0 = Instant::now();
        let mut link = Link::new(LinkConfig::constant(Bitrate::mbps(1))).unwrap();
        for i in 0..3 {
            link.handle_packet(
                Packet::new(
                    PacketId(i),
                    FlowId::from_index(0),
                    DataSize::bytes(1250),
                    t0,
                    (),
                ),
                t0,
            );
        }
        let late = t0 + Duration::from_secs(1);
        while link.poll_delivery(late).is_some() {}
        let sojourns: Vec<_> = link
            .events()
            .iter()
            .filter_map(|e| match e.kind {
                EventKind::Dequeued { sojourn } => Some(sojourn.as_millis()),
                _ => None,
            })
            .collect();
        assert_eq!(sojourns, vec![0, 10, 20]);
        let delivered: Vec<_> = link
            .events()
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Delivered { .. }))
            .map(|e| (e.time - t0).as_millis())
            .collect();
        assert_eq!(delivered, vec![10, 20, 30]);
    }

    #[test]
    fn dt300_at_1mbps_bounds_delay_and_passes_1mbps_of_a_2mbps_input() {
        let t0 = Instant::now();
        let cfg = LinkConfig::constant(Bitrate::mbps(1)).with_qdisc(QdiscConfig::DropTail(
            DropTailConfig::time(Duration::from_millis(300)),
        ));
        let mut link = Link::new(cfg).unwrap();
        let mut src = [Cbr::new(0, Bitrate::mbps(2), 1200, t0)];
        let out = drive(&mut link, &mut src, t0 + Duration::from_secs(30));
        // Queue delay ≤ 300 ms, plus one packet's serialisation (9.6 ms at 1 Mb/s).
        let max_latency = out.iter().map(|(t, p)| *t - p.arrival).max().unwrap();
        assert!(
            max_latency <= Duration::from_millis(300) + Duration::from_micros(9600),
            "{max_latency:?}"
        );
        assert!(
            max_latency >= Duration::from_millis(290),
            "the queue did fill: {max_latency:?}"
        );
        // Output rate over 5..30 s: 1 Mb/s ± 1 %.
        let bytes: u64 = out
            .iter()
            .filter(|(t, _)| *t >= t0 + Duration::from_secs(5))
            .map(|(_, p)| p.size.as_bytes())
            .sum();
        let rate = DataSize::bytes(bytes) / Duration::from_secs(25);
        assert!((rate.as_bps_f64() / 1e6 - 1.0).abs() < 0.01, "{rate}");
        let loss = link.stats().total().loss_ratio().unwrap_or(f64::NAN);
        assert!((loss - 0.5).abs() < 0.02, "loss {loss}");
    }

    /// A link config with a capacity schedule of (seconds, Mbit/s) steps.
    fn schedule(steps: &[(u64, f64)]) -> LinkConfig {
        LinkConfig {
            capacity: CapacityConfig::Schedule {
                steps: steps
                    .iter()
                    .map(|&(s, m)| RateStep {
                        duration: Duration::from_secs(s),
                        rate: Bitrate::from_mbps_f64(m),
                    })
                    .collect(),
                repeat: false,
            },
            ..LinkConfig::default()
        }
    }

    #[test]
    fn dt300_follows_a_capacity_schedule_step_down() {
        // 2.5 Mb/s for 10 s, then 0.5 Mb/s; a 3 Mb/s input keeps the queue full. The DT/300
        // limit is re-sized at the step (qM = Tq · C): once the 2.5 Mb/s backlog has drained,
        // the queuing delay is back at 300 ms, not the 1.5 s a limit sized at 2.5 Mb/s would
        // hold at 0.5 Mb/s (or the 0.9 s of one sized at the schedule's mean rate).
        let t0 = Instant::now();
        let cfg = LinkConfig {
            qdisc: QdiscConfig::DropTail(DropTailConfig::time(Duration::from_millis(300))),
            ..schedule(&[(10, 2.5), (20, 0.5)])
        };
        let mut link = Link::new(cfg).unwrap();
        link.start(t0);
        let mut src = [Cbr::new(0, Bitrate::mbps(3), 1200, t0)];
        let out = drive(&mut link, &mut src, t0 + Duration::from_secs(30));
        let latency = |from: u64, to: u64| {
            out.iter()
                .filter(|(_, p)| {
                    p.arrival >= t0 + Duration::from_secs(from)
                        && p.arrival < t0 + Duration::from_secs(to)
                })
                .map(|(t, p)| *t - p.arrival)
                .max()
                .unwrap()
        };
        let packet = Duration::from_micros(19_200); // 1200 B at 0.5 Mb/s
        // (Packets that arrive in the last 0.3 s before the step leave after it.)
        assert!(latency(5, 9) <= Duration::from_millis(300) + packet);
        // The 2.5 Mb/s backlog (≈ 94 kB) takes 1.5 s to leave at 0.5 Mb/s; meanwhile
        // arrivals are dropped.
        let backlog = out
            .iter()
            .filter(|(_, p)| p.arrival < t0 + Duration::from_secs(10))
            .map(|(t, p)| *t - p.arrival)
            .max()
            .unwrap();
        assert!(backlog > Duration::from_millis(1000), "{backlog:?}");
        let after = latency(13, 30);
        assert!(
            after <= Duration::from_millis(300) + packet && after >= Duration::from_millis(280),
            "{after:?}"
        );
    }

    #[test]
    fn delivered_rate_tracks_a_schedule_within_2_percent_per_second() {
        let t0 = Instant::now();
        let cfg = schedule(&[(5, 1.0), (5, 2.5), (5, 0.5), (5, 1.0)]);
        let mut link = Link::new(cfg).unwrap();
        link.start(t0);
        let mut src = [Cbr::new(0, Bitrate::mbps(4), 1000, t0)];
        let out = drive(&mut link, &mut src, t0 + Duration::from_secs(20));
        let bins = per_window(&out, t0, Duration::from_secs(1), 20);
        for (k, b) in bins.iter().enumerate() {
            let cap = link.rate_at(t0 + Duration::from_secs(k as u64) + Duration::from_millis(500));
            let got = *b as f64 * 8.0;
            assert!(
                (got / cap.as_bps_f64() - 1.0).abs() < 0.02,
                "window {k}: {got} vs {cap}"
            );
        }
    }

    #[test]
    fn delivered_rate_tracks_a_mahimahi_trace_within_2_percent_per_second() {
        let t0 = Instant::now();
        // A 4-second trace: 6, 12, 3, 9 Mb/s seconds (500, 1000, 250, 750 opportunities).
        let mut ms = Vec::new();
        for (sec, n) in [500u64, 1000, 250, 750].into_iter().enumerate() {
            ms.extend((1..=n).map(|k| sec as u64 * 1000 + k * 1000 / n));
        }
        let trace = MahimahiTrace::new(ms.clone()).unwrap();
        let cfg = LinkConfig {
            capacity: CapacityConfig::Trace { trace },
            ..LinkConfig::default()
        };
        let mut link = Link::new(cfg).unwrap();
        link.start(t0);
        let mut src = [Cbr::new(0, Bitrate::mbps(15), 1500, t0)];
        let out = drive(&mut link, &mut src, t0 + Duration::from_secs(12));
        let bins = per_window(&out, t0, Duration::from_secs(1), 12);
        for (k, b) in bins.iter().enumerate().skip(1) {
            let opp = ms
                .iter()
                .filter(|&&m| (m - 1) / 1000 == (k % 4) as u64)
                .count() as u64;
            let cap = opp * 1500;
            assert!(
                (*b as f64 / cap as f64 - 1.0).abs() < 0.02,
                "window {k}: {b} vs {cap}"
            );
        }
    }

    /// Times (from `t0`) of the events of `kind` that `pick` selects.
    fn event_times(link: &Link<()>, t0: Instant, pick: fn(&EventKind) -> bool) -> Vec<Duration> {
        link.events()
            .iter()
            .filter(|e| pick(&e.kind))
            .map(|e| e.time - t0)
            .collect()
    }

    #[test]
    fn an_outage_delivers_nothing_and_the_queue_drains_after_it() {
        // 1 Mb/s, down from 5 s to 7 s, then 1 Mb/s again; 20 ms propagation; a 0.5 Mb/s
        // source that keeps sending through the outage into a queue large enough to hold it.
        let t0 = Instant::now();
        let delay = Duration::from_millis(20);
        let cfg = LinkConfig {
            qdisc: QdiscConfig::DropTail(DropTailConfig::packets(1000)),
            ..schedule(&[(5, 1.0), (2, 0.0), (10, 1.0)]).with_delay(delay)
        };
        let mut link = Link::new(cfg).unwrap();
        link.start(t0);
        assert_eq!(link.rate_at(t0 + Duration::from_secs(6)), Bitrate::ZERO);
        let mut src = [Cbr::new(0, Bitrate::kbps(500), 1200, t0)];
        let out = drive(&mut link, &mut src, t0 + Duration::from_secs(15));
        let (down, up) = (Duration::from_secs(5), Duration::from_secs(7));
        // Nothing delivered from one propagation delay after the link went down until one
        // after it came back (the packet serialising at 5 s pauses and finishes after 7 s).
        let during: Vec<_> = out
            .iter()
            .map(|(t, _)| *t - t0)
            .filter(|t| *t > down + delay && *t < up + delay)
            .collect();
        assert!(during.is_empty(), "delivered during the outage: {during:?}");
        // Nothing leaves the queue while the link is down: packets wait in the qdisc, not in
        // the transmitter.
        let dequeued = event_times(&link, t0, |k| matches!(k, EventKind::Dequeued { .. }));
        assert!(
            !dequeued.iter().any(|t| *t > down && *t < up),
            "dequeued during the outage"
        );
        // The 2 s backlog (125 kB) leaves at the full 1 Mb/s once the link is back, and is gone
        // within 2 s (1 Mb/s out against 0.5 Mb/s in).
        let after: Vec<_> = out
            .iter()
            .filter(|(t, _)| *t >= t0 + up + delay)
            .cloned()
            .collect();
        let bins = per_window(&after, t0 + up + delay, Duration::from_millis(500), 4);
        for (k, b) in bins.iter().enumerate() {
            let mbps = *b as f64 * 8.0 / 0.5 / 1e6;
            assert!(
                (mbps - 1.0).abs() < 0.03,
                "window {k} after the outage: {mbps} Mb/s"
            );
        }
        let waited = out
            .iter()
            .filter(|(_, p)| p.arrival >= t0 + down && p.arrival < t0 + up)
            .map(|(t, p)| *t - p.arrival)
            .max()
            .unwrap();
        assert!(waited > Duration::from_millis(1900), "{waited:?}");
        let late = out
            .iter()
            .filter(|(_, p)| p.arrival >= t0 + Duration::from_secs(10))
            .map(|(t, p)| *t - p.arrival)
            .max()
            .unwrap();
        assert!(
            late < Duration::from_millis(40),
            "the queue drained: {late:?}"
        );
        let s = link.stats().total();
        assert_eq!(s.dropped, 0);
        assert_eq!(s.lost, 0);
    }

    #[test]
    fn a_packet_arriving_during_an_outage_waits_in_the_queue_until_it_ends() {
        // Down from 1 s to 3 s; the link is idle when a packet arrives at 1.5 s.
        let t0 = Instant::now();
        let s = Duration::from_millis;
        let mut link = Link::new(schedule(&[(1, 1.0), (2, 0.0), (10, 1.0)])).unwrap();
        link.start(t0);
        let p = Packet::new(
            PacketId(1),
            FlowId::from_index(0),
            DataSize::bytes(1250),
            t0,
            (),
        );
        link.handle_packet(p, t0 + s(1500));
        assert_eq!(
            (link.backlog(), link.busy()),
            (1, false),
            "queued, not serialising"
        );
        assert_eq!(
            link.poll_timeout(),
            Some(t0 + s(3000)),
            "the end of the outage"
        );
        link.handle_timeout(t0 + s(2999));
        assert_eq!(link.backlog(), 1);
        let out = drive(&mut link, &mut [], t0 + s(4000));
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].0, t0 + s(3010), "served from 3 s, 10 ms at 1 Mb/s");
        let sojourn: Vec<_> = link
            .events()
            .iter()
            .filter_map(|e| match e.kind {
                EventKind::Dequeued { sojourn } => Some((e.time - t0, sojourn)),
                _ => None,
            })
            .collect();
        assert_eq!(sojourn, vec![(s(3000), s(1500))]);
    }

    #[test]
    fn droptail_fills_to_its_limit_during_an_outage_and_drops_the_rest() {
        // The limit in time keeps its size at the last positive rate (300 ms at 1 Mb/s =
        // 37 500 B) rather than falling to zero bytes with the rate or holding everything.
        let limits = [
            (
                DropTailConfig::time(Duration::from_millis(300)),
                37_500 - 1228,
                37_500,
            ),
            (DropTailConfig::packets(50), 50 * 1228, 50 * 1228),
        ];
        for (dt, lo, hi) in limits {
            let t0 = Instant::now();
            let cfg = LinkConfig {
                qdisc: QdiscConfig::DropTail(dt),
                ..schedule(&[(5, 1.0), (2, 0.0), (10, 1.0)])
            };
            let mut link = Link::new(cfg).unwrap();
            link.start(t0);
            // 0.8 Mb/s of 1228-byte packets: no queue before the outage.
            let mut src = [Cbr::new(0, Bitrate::kbps(800), 1228, t0)];
            drive(&mut link, &mut src, t0 + Duration::from_millis(6990));
            let backlog = link.backlog_bytes().as_bytes();
            assert!((lo..=hi).contains(&backlog), "{dt:?}: backlog {backlog} B");
            let drops = event_times(&link, t0, |k| {
                matches!(k, EventKind::Dropped(DropReason::QueueFull))
            });
            assert!(
                drops.iter().all(|t| *t > Duration::from_secs(5)),
                "{dt:?}: dropped before the outage"
            );
            // 1.99 s of arrivals (≈ 162 packets) minus what the queue holds.
            let expected = 1.99 * 800e3 / (1228.0 * 8.0) - backlog as f64 / 1228.0;
            assert!(
                (drops.len() as f64 - expected).abs() <= 3.0,
                "{dt:?}: {} drops, expected {expected:.0}",
                drops.len()
            );
        }
    }

    #[test]
    fn a_mahimahi_trace_with_a_gap_delivers_nothing_in_it_and_drains_after() {
        // 12 Mb/s (an opportunity each ms) for 2 s, no opportunity for 3 s, 12 Mb/s for 1 s.
        let t0 = Instant::now();
        let ms: Vec<u64> = (1..=2000).chain(5000..=6000).collect();
        let cfg = LinkConfig {
            capacity: CapacityConfig::Trace {
                trace: MahimahiTrace::new(ms).unwrap(),
            },
            qdisc: QdiscConfig::DropTail(DropTailConfig::packets(200)),
            ..LinkConfig::default()
        };
        let mut link = Link::new(cfg).unwrap();
        link.start(t0);
        let mut src = [Cbr::new(0, Bitrate::mbps(6), 1500, t0)];
        let out = drive(&mut link, &mut src, t0 + Duration::from_millis(4990));
        assert_eq!(
            link.backlog(),
            200,
            "the queue fills to its limit in the gap"
        );
        let dropped = link.stats().total().dropped;
        // 2.99 s of 500 packets/s, less the 200 queued (and the few queued at 2 s).
        assert!((1290..=1300).contains(&dropped), "{dropped}");
        let out2 = drive(&mut link, &mut src, t0 + Duration::from_secs(6));
        let gap = (Duration::from_millis(2000), Duration::from_millis(5000));
        assert!(
            !out.iter()
                .chain(&out2)
                .any(|(t, _)| *t - t0 > gap.0 && *t - t0 < gap.1),
            "delivered in the gap"
        );
        // From 5 s every opportunity is used until the 200 queued and the new arrivals are
        // through: 400 packets in the first 400 ms.
        let first = out2
            .iter()
            .filter(|(t, _)| *t - t0 < Duration::from_millis(5400))
            .count();
        assert!(first >= 395, "{first} delivered in 5.0-5.4 s");
        let late = out2
            .iter()
            .filter(|(_, p)| p.arrival >= t0 + Duration::from_millis(5500))
            .map(|(t, p)| *t - p.arrival)
            .max()
            .unwrap();
        assert!(late <= Duration::from_millis(2), "drained: {late:?}");
    }

    #[test]
    fn random_loss_happens_before_the_queue() {
        let t0 = Instant::now();
        let cfg =
            LinkConfig::constant(Bitrate::mbps(10)).with_loss(LossConfig::Bernoulli { p: 0.2 });
        let mut link = Link::new(cfg).unwrap();
        let mut src = [Cbr::new(0, Bitrate::mbps(1), 1000, t0)];
        drive(&mut link, &mut src, t0 + Duration::from_secs(20));
        let s = link.stats().total();
        assert_eq!(s.dropped, 0);
        assert!((s.lost as f64 / s.arrived as f64 - 0.2).abs() < 0.02);
        assert_eq!(s.enqueued + s.lost, s.arrived);
    }

    #[test]
    fn same_seed_same_event_log_and_other_seed_differs() {
        let run = |seed| {
            let t0 = Instant::now();
            let mut cfg = LinkConfig::constant(Bitrate::mbps(1))
                .with_loss(LossConfig::GilbertElliott {
                    p: 0.05,
                    r: 0.3,
                    loss_good: 0.0,
                    loss_bad: 0.8,
                })
                .with_seed(seed);
            cfg.delay.jitter = Duration::from_millis(5);
            let mut link = Link::new(cfg).unwrap();
            let mut src = [Cbr::new(0, Bitrate::mbps(2), 1000, t0)];
            drive(&mut link, &mut src, t0 + Duration::from_secs(5));
            link.events()
                .iter()
                .map(|e| (e.time - t0, e.id, e.kind))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(9), run(9));
        assert_ne!(run(9), run(10));
    }

    #[test]
    fn tma24_htb_preset_through_the_link_keeps_the_cloud_gaming_rate() {
        let t0 = Instant::now();
        let rate = Bitrate::mbps(50);
        let cfg = LinkConfig {
            qdisc: QdiscConfig::Preset {
                name: "tma24-htb".into(),
            },
            ..LinkConfig::constant(rate)
        };
        let mut link = Link::new(cfg).unwrap();
        let mut tcp = Cbr::new(2, Bitrate::mbps(80), 1500, t0);
        tcp.flow.protocol = crate::packet::Protocol::TCP;
        let mut src = [Cbr::new(1, Bitrate::mbps(10), 1200, t0), tcp];
        let until = t0 + Duration::from_secs(10);
        let out = drive(&mut link, &mut src, until);
        let from = t0 + Duration::from_secs(1);
        let rate_of = |f: FlowId| {
            let b: u64 = out
                .iter()
                .filter(|(t, p)| *t >= from && p.flow == f)
                .map(|(_, p)| p.size.as_bytes())
                .sum();
            b as f64 * 8.0 / 9.0 / 1e6
        };
        let cg = rate_of(FlowId::from_index(1));
        let be = rate_of(src[1].flow);
        assert!((cg - 10.0).abs() < 0.1, "CG {cg} Mb/s");
        assert!((be - 40.0).abs() < 0.5, "BE {be} Mb/s");
        let cg_stats = link.stats().flow(&FlowId::from_index(1)).unwrap();
        assert_eq!(cg_stats.dropped, 0);
        assert!(
            cg_stats.sojourn_max < Duration::from_millis(5),
            "{:?}",
            cg_stats.sojourn_max
        );
    }

    #[test]
    fn aqm_timers_run_through_the_link_and_stop_when_idle() {
        let t0 = Instant::now();
        let cfg =
            LinkConfig::constant(Bitrate::mbps(10)).with_qdisc(crate::presets::tma24_dualpi2());
        let mut link = Link::new(cfg).unwrap();
        let mut src = [Cbr::new(0, Bitrate::mbps(15), 1000, t0)];
        src[0].stop = Some(t0 + Duration::from_secs(3));
        drive(&mut link, &mut src, t0 + Duration::from_secs(3));
        assert!(
            link.stats().total().dropped > 0,
            "the PI controller drops the excess"
        );
        assert!(link.qdisc().drop_probability().is_some_and(|p| p > 0.0));
        drive(&mut link, &mut [], t0 + Duration::from_secs(60));
        assert_eq!(link.poll_timeout(), None, "idle link, idle controller");
        assert_eq!(link.qdisc().drop_probability(), Some(0.0));
        assert_eq!(link.backlog(), 0);
    }

    #[test]
    fn invalid_configs_are_typed_errors() {
        assert!(matches!(
            Link::<()>::new(LinkConfig::constant(Bitrate::ZERO)),
            Err(Error::ZeroRate { .. })
        ));
        let bad_loss = LinkConfig::default().with_loss(LossConfig::Bernoulli { p: f64::NAN });
        assert!(matches!(
            Link::<()>::new(bad_loss),
            Err(Error::InvalidProbability { .. })
        ));
        let bad_q =
            LinkConfig::default().with_qdisc(QdiscConfig::DropTail(DropTailConfig::packets(0)));
        assert!(matches!(
            Link::<()>::new(bad_q),
            Err(Error::ZeroLimit { .. })
        ));
    }

    #[test]
    fn config_deserialises_from_toml_with_defaults() {
        let cfg: LinkConfig = toml::from_str(
            r#"
            seed = 4
            capacity = { kind = "constant", rate = "2.5Mbit" }
            delay = { base = "25ms", jitter = "2ms" }
            loss = { kind = "gilbert_elliott", p = 0.01, r = 0.5 }
            qdisc = { kind = "droptail", limit = { time = "300ms" } }
            "#,
        )
        .unwrap();
        assert_eq!(cfg.capacity, CapacityConfig::constant(Bitrate::kbps(2500)));
        assert_eq!(cfg.delay.base, Duration::from_millis(25));
        assert_eq!(
            cfg.qdisc,
            QdiscConfig::DropTail(DropTailConfig::time(Duration::from_millis(300)))
        );
        assert!(matches!(cfg.loss, LossConfig::GilbertElliott { loss_bad, .. } if loss_bad == 1.0));
        assert_eq!(cfg.mtu, DataSize::bytes(1514));
        cfg.validate().unwrap();
    }
}
