//! Queue disciplines behind one trait, and the serde-deserialisable config that builds them.
//!
//! Every qdisc is a sans-IO state machine: [`Qdisc::enqueue`] and [`Qdisc::dequeue`] take
//! `now`, report what they did to an [`EventSink`], and never read a clock. The [`crate::Link`]
//! drives one in simulated or real time; netlab's TUN forwarder can drive the same objects
//! with wall-clock `Instant`s, and its kernel-`tc` backend maps the same config types onto
//! `tc qdisc` command lines.

use std::time::Instant;

use cg_types::{Bitrate, DataSize, Ecn, Rng};
use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::event::{EventKind, EventSink, LinkEvent, MarkReason};
use crate::packet::Packet;

pub mod codel;
pub mod droptail;
pub mod dualpi2;
pub mod fq_codel;
pub mod htb;
pub mod pie;
pub mod sfq;

pub use codel::{Codel, CodelConfig};
pub use droptail::{DropTail, DropTailConfig, QueueLimit};
pub use dualpi2::{DualPi2, DualPi2Config};
pub use fq_codel::{FqCodel, FqCodelConfig};
pub use htb::{Htb, HtbClassConfig, HtbConfig, HtbMatch, HtbRule, IpPrefix};
pub use pie::{Pie, PieConfig};
pub use sfq::{Sfq, SfqConfig};

/// A queue discipline: where packets wait for the link, and which of them it drops or marks.
///
/// Contract:
/// - `enqueue` takes ownership; the packet is either queued (an [`EventKind::Enqueued`] event)
///   or dropped (an [`EventKind::Dropped`] event). Enqueuing may also drop *other* packets
///   (FQ overflow drops from the fattest flow).
/// - `dequeue(now)` returns the next packet to serialise, or `None`. AQMs that drop at dequeue
///   (CoDel) report those drops. A non-work-conserving qdisc (HTB) may return `None` while
///   non-empty; it then says through [`Qdisc::poll_timeout`] when to try again.
/// - The dequeuing caller (the link) emits [`EventKind::Dequeued`]; qdiscs do not, so that
///   nested qdiscs (HTB children) do not double-count.
/// - `poll_timeout` is the next instant the qdisc wants [`Qdisc::handle_timeout`] (PIE and
///   DualPI2 probability updates, HTB token refill); after `handle_timeout(t)` it is later than
///   `t` or `None`. Spurious calls are harmless.
pub trait Qdisc<P>: Send {
    /// Offers a packet at `now`.
    fn enqueue(&mut self, packet: Packet<P>, now: Instant, events: &mut dyn EventSink);
    /// Takes the next packet to send at `now`, if any.
    fn dequeue(&mut self, now: Instant, events: &mut dyn EventSink) -> Option<Packet<P>>;
    /// The packet at the head of the queue that would be considered next (before any AQM
    /// decision at dequeue), if the qdisc can tell cheaply.
    fn peek(&self) -> Option<&Packet<P>>;
    /// Packets held.
    fn len(&self) -> usize;
    /// Bytes held.
    fn bytes(&self) -> DataSize;
    /// Whether nothing is held.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// When the qdisc next wants [`Qdisc::handle_timeout`].
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    /// A timer fired.
    fn handle_timeout(&mut self, _now: Instant, _events: &mut dyn EventSink) {}
    /// The AQM's current drop/mark probability, for plots and logs: PIE's p, DualPI2's base
    /// p′. `None` for qdiscs without one.
    fn drop_probability(&self) -> Option<f64> {
        None
    }
    /// The link's rate changed (a capacity schedule stepped): limits given in time at the
    /// link rate are re-sized. Zero during an outage: a qdisc then keeps the limits it had
    /// (a buffer does not shrink because the link is down). Default: nothing.
    fn set_rate(&mut self, _rate: Bitrate) {}
}

impl<P, Q: Qdisc<P> + ?Sized> Qdisc<P> for Box<Q> {
    fn enqueue(&mut self, packet: Packet<P>, now: Instant, events: &mut dyn EventSink) {
        (**self).enqueue(packet, now, events)
    }
    fn dequeue(&mut self, now: Instant, events: &mut dyn EventSink) -> Option<Packet<P>> {
        (**self).dequeue(now, events)
    }
    fn peek(&self) -> Option<&Packet<P>> {
        (**self).peek()
    }
    fn len(&self) -> usize {
        (**self).len()
    }
    fn bytes(&self) -> DataSize {
        (**self).bytes()
    }
    fn is_empty(&self) -> bool {
        (**self).is_empty()
    }
    fn poll_timeout(&self) -> Option<Instant> {
        (**self).poll_timeout()
    }
    fn handle_timeout(&mut self, now: Instant, events: &mut dyn EventSink) {
        (**self).handle_timeout(now, events)
    }
    fn drop_probability(&self) -> Option<f64> {
        (**self).drop_probability()
    }
    fn set_rate(&mut self, rate: Bitrate) {
        (**self).set_rate(rate)
    }
}

/// A boxed qdisc, as built from a [`QdiscConfig`].
pub type BoxQdisc<P> = Box<dyn Qdisc<P>>;

/// What a qdisc may need to know about the link it sits on when it is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkInfo {
    /// The link's nominal rate: converts time-based limits (DT/300) into bytes, and is HTB's
    /// root rate. For a schedule or trace it is the mean rate (see [`crate::CapacityConfig`]).
    pub rate: Bitrate,
    /// The largest packet expected: CoDel's and PIE's "less than one/two MTU backlog" guards
    /// and FQ quanta. Default 1514 bytes (Ethernet frame without FCS, Linux `psched_mtu`).
    pub mtu: DataSize,
}

impl LinkInfo {
    /// A link of `rate` with a 1514-byte MTU.
    pub fn new(rate: Bitrate) -> Self {
        LinkInfo {
            rate,
            mtu: DataSize::bytes(1514),
        }
    }
}

/// Which queue discipline, with its parameters. Deserialises from TOML/JSON with a `kind`
/// tag, e.g. `{ kind = "codel", target = "13ms" }`; every omitted field takes its Linux default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum QdiscConfig {
    /// FIFO with a packet, byte or time limit (Linux `pfifo` / `bfifo`).
    #[serde(alias = "droptail", alias = "fifo", alias = "pfifo", alias = "bfifo")]
    DropTail(DropTailConfig),
    /// CoDel (RFC 8289).
    Codel(CodelConfig),
    /// PIE (RFC 8033).
    Pie(PieConfig),
    /// Stochastic fairness queuing (Linux `sfq`).
    Sfq(SfqConfig),
    /// FQ-CoDel (RFC 8290).
    FqCodel(FqCodelConfig),
    /// DualPI2 (RFC 9332).
    #[serde(alias = "dual_pi2")]
    Dualpi2(DualPi2Config),
    /// Hierarchical token bucket with classes and child qdiscs (Linux `htb`).
    Htb(HtbConfig),
    /// A named preset from the papers (see [`crate::presets`]), resolved against the link
    /// rate when built: `{ kind = "preset", name = "ccr16-codel" }`.
    Preset {
        /// One of [`crate::presets::NAMES`].
        name: String,
    },
}

impl Default for QdiscConfig {
    /// `pfifo` with 1000 packets: what Linux gives an interface with the default txqueuelen.
    fn default() -> Self {
        QdiscConfig::DropTail(DropTailConfig::default())
    }
}

impl QdiscConfig {
    /// Checks the parameters and builds the qdisc; `rng` seeds its random decisions.
    pub fn build<P: Send + 'static>(
        &self,
        link: LinkInfo,
        rng: &mut Rng,
    ) -> Result<BoxQdisc<P>, Error> {
        Ok(match self {
            QdiscConfig::DropTail(c) => Box::new(DropTail::new(c, link)?),
            QdiscConfig::Codel(c) => Box::new(Codel::new(c, link)?),
            QdiscConfig::Pie(c) => Box::new(Pie::new(c, link, rng.fork())?),
            QdiscConfig::Sfq(c) => Box::new(Sfq::new(c, link, rng.fork())?),
            QdiscConfig::FqCodel(c) => Box::new(FqCodel::new(c, link, rng.fork())?),
            QdiscConfig::Dualpi2(c) => Box::new(DualPi2::new(c, link, rng.fork())?),
            QdiscConfig::Htb(c) => Box::new(Htb::new(c, link, rng)?),
            QdiscConfig::Preset { .. } => return self.resolve(link)?.build(link, rng),
        })
    }

    /// The `kind` it is written with (`"droptail"`, `"codel"`, `"fq_codel"`…): the name of
    /// the Linux qdisc for the kernel-backed ones.
    pub fn kind(&self) -> &'static str {
        match self {
            QdiscConfig::DropTail(_) => "droptail",
            QdiscConfig::Codel(_) => "codel",
            QdiscConfig::Pie(_) => "pie",
            QdiscConfig::Sfq(_) => "sfq",
            QdiscConfig::FqCodel(_) => "fq_codel",
            QdiscConfig::Dualpi2(_) => "dualpi2",
            QdiscConfig::Htb(_) => "htb",
            QdiscConfig::Preset { .. } => "preset",
        }
    }

    /// Checks the parameters without keeping the qdisc.
    pub fn validate(&self, link: LinkInfo) -> Result<(), Error> {
        self.build::<()>(link, &mut Rng::new(0)).map(drop)
    }
}

/// Marks `packet` CE if it is ECN-capable and `ecn` allows it (returns `true`: keep it),
/// otherwise returns `false` (the caller drops it). RFC 3168 §5: an AQM that would drop an
/// ECT packet may mark it instead.
pub(crate) fn try_mark<P>(
    packet: &mut Packet<P>,
    ecn: bool,
    reason: MarkReason,
    now: Instant,
    events: &mut dyn EventSink,
) -> bool {
    if ecn && packet.ecn.is_ect() {
        packet.ecn = Ecn::Ce;
        events.push(LinkEvent::new(packet, now, EventKind::Marked(reason)));
        true
    } else {
        false
    }
}

/// Reports a drop of `packet` (which is then dropped by going out of scope).
pub(crate) fn report_drop<P>(
    packet: &Packet<P>,
    reason: crate::event::DropReason,
    now: Instant,
    events: &mut dyn EventSink,
) {
    events.push(LinkEvent::new(packet, now, EventKind::Dropped(reason)));
}

/// Reports that `packet` was queued.
pub(crate) fn report_enqueue<P>(packet: &Packet<P>, now: Instant, events: &mut dyn EventSink) {
    events.push(LinkEvent::new(packet, now, EventKind::Enqueued));
}

/// Test helpers shared by the qdisc unit tests.
#[cfg(test)]
pub(crate) mod testing {
    use std::time::{Duration, Instant};

    use cg_types::{Bitrate, DataSize, Ecn};

    use super::Qdisc;
    use crate::event::{DropReason, EventKind, LinkEvent};
    use crate::packet::{FlowId, Packet, PacketId};

    /// A packet of `size` bytes on flow `flow` (from_index).
    pub fn pkt(id: u64, flow: u16, size: u64, now: Instant) -> Packet {
        Packet::new(
            PacketId(id),
            FlowId::from_index(flow),
            DataSize::bytes(size),
            now,
            (),
        )
    }

    /// A packet with an ECN code point.
    pub fn pkt_ecn(id: u64, flow: u16, size: u64, ecn: Ecn, now: Instant) -> Packet {
        pkt(id, flow, size, now).with_ecn(ecn)
    }

    /// One constant-bit-rate source.
    pub struct Source {
        pub flow: u16,
        pub rate: Bitrate,
        pub size: u64,
        pub ecn: Ecn,
        pub next: Instant,
    }

    /// Drives `q` as a link of `rate` fed by `sources` for `dur` starting at `t0`: a minimal
    /// bottleneck loop (the real one is [`crate::Link`]) so each qdisc is tested on its own.
    /// Returns the events and the dequeued packets with their dequeue times.
    pub fn run<Q: Qdisc<()> + ?Sized>(
        q: &mut Q,
        rate: Bitrate,
        sources: &mut [Source],
        t0: Instant,
        dur: Duration,
    ) -> (Vec<LinkEvent>, Vec<(Instant, Packet)>) {
        let end = t0 + dur;
        let mut events = Vec::new();
        let mut out = Vec::new();
        let mut now = t0;
        let mut busy_until = t0;
        let mut throttled_until: Option<Instant> = None;
        let mut id = 0;
        loop {
            let next_src = sources.iter().map(|s| s.next).min();
            let next_deq = if q.is_empty() {
                None
            } else {
                Some(busy_until.max(throttled_until.unwrap_or(now)).max(now))
            };
            let next_timer = q.poll_timeout().map(|t| t.max(now));
            let t = [next_src, next_deq, next_timer].into_iter().flatten().min();
            let Some(t) = t else { break };
            if t >= end {
                break;
            }
            now = t;
            if next_timer == Some(t) {
                q.handle_timeout(t, &mut events);
                if throttled_until.is_some_and(|u| u <= t) {
                    throttled_until = None;
                }
                continue;
            }
            if next_src == Some(t) {
                let s = sources
                    .iter_mut()
                    .find(|s| s.next == t)
                    .expect("a source is due at t");
                q.enqueue(pkt_ecn(id, s.flow, s.size, s.ecn, t), t, &mut events);
                id += 1;
                s.next += rate_gap(s.rate, s.size);
                throttled_until = None;
                continue;
            }
            match q.dequeue(t, &mut events) {
                Some(p) => {
                    busy_until = t + rate.time_to_send(p.size).expect("rate is positive");
                    events.push(LinkEvent::new(
                        &p,
                        t,
                        EventKind::Dequeued {
                            sojourn: t - p.enqueued,
                        },
                    ));
                    out.push((t, p));
                }
                None => {
                    // Empty after AQM drops, or throttled (HTB): wait for its timer or the
                    // next arrival.
                    throttled_until = Some(
                        q.poll_timeout()
                            .unwrap_or(end)
                            .max(t + Duration::from_nanos(1)),
                    );
                }
            }
        }
        (events, out)
    }

    /// Inter-packet gap of a CBR source.
    pub fn rate_gap(rate: Bitrate, size: u64) -> Duration {
        rate.time_to_send(DataSize::bytes(size))
            .expect("source rate is positive")
    }

    /// How a test sender reacts to congestion signals.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Cc {
        /// Reno-like: halve at most once per RTT on a drop or CE mark.
        Reno,
        /// Scalable (DCTCP/Prague-like, RFC 9331 §4.3): −½ packet per CE mark, halve on a drop.
        Scalable,
    }

    /// Drives `q` (a link of `link`) with rate-based AIMD senders, one per `flows` entry
    /// (flow index = position), each starting at `start`. 50 ms RTT: signals reach the sender
    /// one RTT after the drop or dequeue; +1 packet per RTT per RTT otherwise. Returns the
    /// events and the dequeued packets.
    pub fn aimd<Q: Qdisc<()> + ?Sized>(
        q: &mut Q,
        link: Bitrate,
        start: Bitrate,
        flows: &[(Cc, Ecn)],
        t0: Instant,
        dur: Duration,
    ) -> (Vec<LinkEvent>, Vec<(Instant, Packet)>) {
        struct Flow {
            cc: Cc,
            ecn: Ecn,
            rate: f64,
            next: Instant,
            last_cut: Instant,
            /// (when the sender learns, was it a drop).
            signals: std::collections::VecDeque<(Instant, bool)>,
        }
        let rtt = Duration::from_millis(50).as_secs_f64();
        let bits = 8000.0;
        let mut fl: Vec<Flow> = flows
            .iter()
            .enumerate()
            .map(|(i, &(cc, ecn))| Flow {
                cc,
                ecn,
                rate: start.as_bps_f64(),
                next: t0 + Duration::from_micros(137 * i as u64),
                last_cut: t0,
                signals: Default::default(),
            })
            .collect();
        let delay = Duration::from_millis(50);
        let mut busy_until = t0;
        let mut events = Vec::new();
        let mut all = Vec::new();
        let mut out = Vec::new();
        let mut id = 0;
        let end = t0 + dur;
        let mut now = t0;
        while now < end {
            let next_send = fl.iter().map(|f| f.next).min().expect("at least one flow");
            let deq = if q.is_empty() {
                None
            } else {
                Some(busy_until.max(now))
            };
            let timer = q.poll_timeout();
            let t = [Some(next_send), deq, timer]
                .into_iter()
                .flatten()
                .min()
                .expect("a sender is always due");
            now = t.max(now);
            if timer == Some(t) {
                q.handle_timeout(now, &mut events);
            } else if t == next_send {
                let i = fl
                    .iter()
                    .position(|f| f.next == t)
                    .expect("one flow is due");
                let f = &mut fl[i];
                q.enqueue(pkt_ecn(id, i as u16, 1000, f.ecn, now), now, &mut events);
                id += 1;
                f.rate += bits * bits / (f.rate * rtt * rtt);
                f.rate = f.rate.min(link.as_bps_f64() * 4.0);
                f.next = now + Duration::from_secs_f64(bits / f.rate);
            } else if let Some(p) = q.dequeue(now, &mut events) {
                busy_until = now + link.time_to_send(p.size).expect("positive link rate");
                events.push(LinkEvent::new(
                    &p,
                    now,
                    EventKind::Dequeued {
                        sojourn: now - p.enqueued,
                    },
                ));
                if p.ecn == Ecn::Ce {
                    fl[p.flow.index().expect("test flow") as usize]
                        .signals
                        .push_back((now + delay, false));
                }
                out.push((now, p));
            } else {
                busy_until = q
                    .poll_timeout()
                    .unwrap_or(next_send)
                    .max(now + Duration::from_nanos(1));
            }
            for e in events.drain(..) {
                if matches!(e.kind, EventKind::Dropped(_)) {
                    fl[e.flow.index().expect("test flow") as usize]
                        .signals
                        .push_back((e.time + delay, true));
                }
                all.push(e);
            }
            for f in &mut fl {
                while f.signals.front().is_some_and(|c| c.0 <= now) {
                    let (_, drop) = f.signals.pop_front().expect("checked non-empty");
                    if f.cc == Cc::Scalable && !drop {
                        f.rate = (f.rate - 0.5 * bits / rtt).max(bits / rtt);
                    } else if (now - f.last_cut).as_secs_f64() >= rtt {
                        f.rate /= 2.0;
                        f.last_cut = now;
                    }
                }
            }
        }
        (all, out)
    }

    /// Drops of one reason.
    pub fn drops(events: &[LinkEvent], reason: DropReason) -> usize {
        events
            .iter()
            .filter(|e| e.kind == EventKind::Dropped(reason))
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn every_kind_deserialises_with_linux_defaults() {
        let cases = [
            (
                r#"kind = "pfifo""#,
                QdiscConfig::DropTail(DropTailConfig::default()),
            ),
            (
                r#"kind = "codel""#,
                QdiscConfig::Codel(CodelConfig::default()),
            ),
            (r#"kind = "pie""#, QdiscConfig::Pie(PieConfig::default())),
            (r#"kind = "sfq""#, QdiscConfig::Sfq(SfqConfig::default())),
            (
                r#"kind = "fq_codel""#,
                QdiscConfig::FqCodel(FqCodelConfig::default()),
            ),
            (
                r#"kind = "dualpi2""#,
                QdiscConfig::Dualpi2(DualPi2Config::default()),
            ),
        ];
        for (text, want) in cases {
            let got: QdiscConfig = toml::from_str(text).unwrap();
            assert_eq!(got, want, "{text}");
        }
        let c: QdiscConfig =
            toml::from_str("kind = \"codel\"\ntarget = \"13ms\"\necn = true").unwrap();
        assert_eq!(
            c,
            QdiscConfig::Codel(CodelConfig {
                target: Duration::from_millis(13),
                ecn: true,
                ..CodelConfig::default()
            })
        );
        assert!(
            toml::from_str::<QdiscConfig>("kind = \"codel\"\ntargett = \"13ms\"").is_err(),
            "typos are errors"
        );
    }

    #[test]
    fn presets_resolve_against_the_link_rate() {
        let p: QdiscConfig = toml::from_str("kind = \"preset\"\nname = \"ccr16-codel\"").unwrap();
        let link = LinkInfo::new(Bitrate::mbps(1));
        assert_eq!(
            p.resolve(link).unwrap(),
            crate::presets::ccr16_codel(Bitrate::mbps(1))
        );
        p.validate(link).unwrap();
        let bad = QdiscConfig::Preset { name: "x".into() };
        assert!(matches!(
            bad.validate(link),
            Err(Error::UnknownPreset { .. })
        ));
    }
}
