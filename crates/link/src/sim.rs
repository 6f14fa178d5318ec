//! A simulated-time harness: sans-IO endpoints joined by a forward and a reverse [`Link`].
//!
//! Modelled on quinn's test `Pair` and str0m's `progress`: nothing sleeps; the harness
//! repeatedly lets every endpoint transmit, delivers what the links have ready, fires due
//! timers, and then jumps the clock to the earliest next wake-up of any endpoint or link.
//! With the links' seeds fixed, a run is a pure function of its inputs: the same seed gives
//! the same event log.

use std::collections::HashMap;
use std::time::Instant;

use cg_types::{DataSize, Ecn};

use crate::link::Link;
use crate::packet::{Dscp, FlowId, Packet, PacketId};

/// A sans-IO endpoint attached to the simulated network.
pub trait Endpoint {
    /// What travels in a packet (bytes for transport tests, structs for controller tests).
    type Payload: Clone;
    /// A packet arrived at `now` (its ECN may have been changed to CE by the link).
    fn handle_packet(&mut self, packet: Delivered<Self::Payload>, now: Instant);
    /// A packet to send now, if any; called until it returns `None` whenever the endpoint may
    /// have something (after `handle_packet` / `handle_timeout`, and at its `poll_timeout`).
    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit<Self::Payload>>;
    /// When the endpoint next wants `handle_timeout`.
    fn poll_timeout(&self) -> Option<Instant>;
    /// Timer fired (spurious calls are harmless).
    fn handle_timeout(&mut self, now: Instant);
}

impl<E: Endpoint + ?Sized> Endpoint for Box<E> {
    type Payload = E::Payload;
    fn handle_packet(&mut self, packet: Delivered<Self::Payload>, now: Instant) {
        (**self).handle_packet(packet, now)
    }
    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit<Self::Payload>> {
        (**self).poll_transmit(now)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        (**self).poll_timeout()
    }
    fn handle_timeout(&mut self, now: Instant) {
        (**self).handle_timeout(now)
    }
}

/// A packet an endpoint sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit<P> {
    /// Bytes on the wire, counted by the link.
    pub size: DataSize,
    /// ECN code point it is sent with.
    pub ecn: Ecn,
    /// What it carries.
    pub payload: P,
}

/// A packet handed to an endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivered<P> {
    /// Bytes on the wire.
    pub size: DataSize,
    /// ECN code point on arrival (CE if a qdisc marked it).
    pub ecn: Ecn,
    /// What it carries.
    pub payload: P,
    /// The flow it travelled on (the pair's forward flow, or its reverse).
    pub flow: FlowId,
}

struct Pair<S, R> {
    sender: S,
    receiver: R,
    flow: FlowId,
    /// The sender sits behind the reverse link: its packets cross the reverse link and the
    /// receiver's the forward one (a flow against the feedback's direction).
    reversed: bool,
    /// The `now` at which each endpoint's timer last fired (a timer that stays in the past
    /// after firing is not fired again at the same instant, so a sloppy endpoint cannot hang
    /// the simulation).
    sender_fired: Option<Instant>,
    receiver_fired: Option<Instant>,
}

/// N sender/receiver pairs sharing one forward bottleneck (senders → receivers) and one
/// reverse link (receivers → senders, for feedback). Pair `i`'s packets carry
/// [`FlowId::from_index`]`(i)` forward and its [`FlowId::reversed`] backward, so FQ qdiscs
/// separate the pairs. Pairs may be added mid-run, and a pair may also run the other way
/// ([`Sim::add_reversed_pair_with_flow`]: its data on the reverse link, its feedback on the
/// forward one), as a flow in the reverse direction does in the testbed.
pub struct Sim<S: Endpoint, R: Endpoint<Payload = S::Payload>> {
    forward: Link<S::Payload>,
    reverse: Link<S::Payload>,
    pairs: Vec<Pair<S, R>>,
    /// Which pair a packet belongs to, by the link it crossed (`true`: forward) and its flow,
    /// and whether it goes to the pair's receiver (`true`) or its sender.
    routes: HashMap<(bool, FlowId), (usize, bool)>,
    now: Instant,
    next_id: u64,
}

impl<S, R> Sim<S, R>
where
    S: Endpoint,
    R: Endpoint<Payload = S::Payload>,
    S::Payload: Send + 'static,
{
    /// A simulation starting at `start`; the links' schedules and traces start then too.
    pub fn new(
        mut forward: Link<S::Payload>,
        mut reverse: Link<S::Payload>,
        start: Instant,
    ) -> Self {
        forward.start(start);
        reverse.start(start);
        Sim {
            forward,
            reverse,
            pairs: Vec::new(),
            routes: HashMap::new(),
            now: start,
            next_id: 0,
        }
    }

    /// Adds a sender/receiver pair; returns its index. At most 65536 pairs.
    pub fn add_pair(&mut self, sender: S, receiver: R) -> usize {
        let i = self.pairs.len();
        let flow =
            FlowId::from_index(u16::try_from(i).expect("at most 65536 pairs in one simulation"));
        self.add_pair_with_flow(sender, receiver, flow)
            .expect("from_index gives every pair its own flow")
    }

    /// Adds a sender/receiver pair whose forward packets carry `flow` (the 5-tuple queue
    /// disciplines hash and HTB rules match; the feedback carries its reverse); returns its
    /// index, or `None` when another pair already has `flow` or its reverse.
    pub fn add_pair_with_flow(&mut self, sender: S, receiver: R, flow: FlowId) -> Option<usize> {
        self.insert_pair(sender, receiver, flow, false)
    }

    /// Adds a pair whose sender sits behind the reverse link: its packets carry `flow` across
    /// the reverse link, and the receiver's carry `flow`'s reverse across the forward link
    /// (e.g. a TCP download against a video call's direction, MMSys16 §6.5). Returns its
    /// index, or `None` when another pair already has `flow` or its reverse.
    pub fn add_reversed_pair_with_flow(
        &mut self,
        sender: S,
        receiver: R,
        flow: FlowId,
    ) -> Option<usize> {
        self.insert_pair(sender, receiver, flow, true)
    }

    fn insert_pair(
        &mut self,
        sender: S,
        receiver: R,
        flow: FlowId,
        reversed: bool,
    ) -> Option<usize> {
        let taken = |f: FlowId| {
            self.routes.contains_key(&(true, f)) || self.routes.contains_key(&(false, f))
        };
        if taken(flow) || taken(flow.reversed()) {
            return None;
        }
        let i = self.pairs.len();
        // The sender's packets cross the forward link unless reversed; the receiver's the other.
        self.routes.insert((!reversed, flow), (i, true));
        self.routes.insert((reversed, flow.reversed()), (i, false));
        self.pairs.push(Pair {
            sender,
            receiver,
            flow,
            reversed,
            sender_fired: None,
            receiver_fired: None,
        });
        Some(i)
    }

    /// Runs until `until` (inclusive of events at `until`), jumping from event to event.
    pub fn run_until(&mut self, until: Instant) {
        loop {
            // Settle everything due at `now`: transmits, deliveries, timers, until quiet.
            loop {
                let mut progress = false;
                progress |= self.transmit_all();
                progress |= self.deliver_all();
                progress |= self.fire_timers();
                if !progress {
                    break;
                }
            }
            let Some(next) = self.next_wakeup() else {
                break;
            };
            if next > until {
                break;
            }
            self.now = next.max(self.now);
        }
        self.now = self.now.max(until);
    }

    /// The current simulated time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Pair `i`'s sender.
    pub fn sender(&self, i: usize) -> &S {
        &self.pairs[i].sender
    }

    /// Pair `i`'s sender, mutably.
    pub fn sender_mut(&mut self, i: usize) -> &mut S {
        &mut self.pairs[i].sender
    }

    /// Pair `i`'s receiver.
    pub fn receiver(&self, i: usize) -> &R {
        &self.pairs[i].receiver
    }

    /// Pair `i`'s receiver, mutably.
    pub fn receiver_mut(&mut self, i: usize) -> &mut R {
        &mut self.pairs[i].receiver
    }

    /// The forward (bottleneck) link: events and counters.
    pub fn forward(&self) -> &Link<S::Payload> {
        &self.forward
    }

    /// The reverse (feedback) link.
    pub fn reverse(&self) -> &Link<S::Payload> {
        &self.reverse
    }

    /// Pair `i`'s flow: what its sender's packets carry.
    pub fn flow(&self, i: usize) -> FlowId {
        self.pairs[i].flow
    }

    /// Whether pair `i`'s sender sits behind the reverse link.
    pub fn is_reversed(&self, i: usize) -> bool {
        self.pairs[i].reversed
    }

    /// Number of pairs.
    pub fn pairs(&self) -> usize {
        self.pairs.len()
    }

    fn transmit_all(&mut self) -> bool {
        let now = self.now;
        let mut any = false;
        for pair in &mut self.pairs {
            let (data, back) = if pair.reversed {
                (&mut self.reverse, &mut self.forward)
            } else {
                (&mut self.forward, &mut self.reverse)
            };
            while let Some(t) = pair.sender.poll_transmit(now) {
                data.handle_packet(make_packet(&mut self.next_id, pair.flow, t, now), now);
                any = true;
            }
            while let Some(t) = pair.receiver.poll_transmit(now) {
                let p = make_packet(&mut self.next_id, pair.flow.reversed(), t, now);
                back.handle_packet(p, now);
                any = true;
            }
        }
        any
    }

    fn deliver_all(&mut self) -> bool {
        let now = self.now;
        let mut any = false;
        for forward in [true, false] {
            loop {
                let link = if forward {
                    &mut self.forward
                } else {
                    &mut self.reverse
                };
                let Some(p) = link.poll_delivery(now) else {
                    break;
                };
                any = true;
                let Some(&(i, to_receiver)) = self.routes.get(&(forward, p.flow)) else {
                    continue;
                };
                let pair = &mut self.pairs[i];
                if to_receiver {
                    pair.receiver.handle_packet(delivered(p), now);
                    pair.receiver_fired = None;
                } else {
                    pair.sender.handle_packet(delivered(p), now);
                    pair.sender_fired = None;
                }
            }
        }
        any
    }

    fn fire_timers(&mut self) -> bool {
        let now = self.now;
        let mut any = false;
        for pair in &mut self.pairs {
            if pair.sender.poll_timeout().is_some_and(|t| t <= now)
                && pair.sender_fired != Some(now)
            {
                pair.sender.handle_timeout(now);
                pair.sender_fired = Some(now);
                any = true;
            }
            if pair.receiver.poll_timeout().is_some_and(|t| t <= now)
                && pair.receiver_fired != Some(now)
            {
                pair.receiver.handle_timeout(now);
                pair.receiver_fired = Some(now);
                any = true;
            }
        }
        any
    }

    fn next_wakeup(&self) -> Option<Instant> {
        let now = self.now;
        let endpoint = self.pairs.iter().flat_map(|p| {
            let s = p
                .sender
                .poll_timeout()
                .filter(|t| *t > now || p.sender_fired != Some(now));
            let r = p
                .receiver
                .poll_timeout()
                .filter(|t| *t > now || p.receiver_fired != Some(now));
            [s, r]
        });
        endpoint
            .chain([self.forward.poll_timeout(), self.reverse.poll_timeout()])
            .flatten()
            // A stale timer that already fired at `now` must not stop time.
            .map(|t| t.max(now))
            .filter(|t| *t > now)
            .min()
    }
}

fn make_packet<P>(next_id: &mut u64, flow: FlowId, t: Transmit<P>, now: Instant) -> Packet<P> {
    let id = PacketId(*next_id);
    *next_id += 1;
    Packet {
        id,
        size: t.size,
        flow,
        dscp: Dscp::DEFAULT,
        ecn: t.ecn,
        arrival: now,
        enqueued: now,
        payload: t.payload,
    }
}

fn delivered<P>(p: Packet<P>) -> Delivered<P> {
    Delivered {
        size: p.size,
        ecn: p.ecn,
        payload: p.payload,
        flow: p.flow,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use cg_types::Bitrate;

    use super::*;
    use crate::event::EventKind;
    use crate::link::LinkConfig;
    use crate::loss::LossConfig;

    /// Sends a packet of `size` every `gap`; counts acks.
    struct CbrSender {
        gap: Duration,
        size: DataSize,
        next: Instant,
        seq: u64,
        acked: Vec<(u64, Instant)>,
        ecn: Ecn,
    }

    impl Endpoint for CbrSender {
        type Payload = u64;
        fn handle_packet(&mut self, p: Delivered<u64>, now: Instant) {
            self.acked.push((p.payload, now));
        }
        fn poll_transmit(&mut self, now: Instant) -> Option<Transmit<u64>> {
            if now < self.next {
                return None;
            }
            self.next += self.gap;
            self.seq += 1;
            Some(Transmit {
                size: self.size,
                ecn: self.ecn,
                payload: self.seq,
            })
        }
        fn poll_timeout(&self) -> Option<Instant> {
            Some(self.next)
        }
        fn handle_timeout(&mut self, _now: Instant) {}
    }

    /// Acks every packet with a 50-byte packet carrying its sequence number.
    #[derive(Default)]
    struct Acker {
        pending: Vec<u64>,
        received: Vec<(u64, Instant, Ecn)>,
    }

    impl Endpoint for Acker {
        type Payload = u64;
        fn handle_packet(&mut self, p: Delivered<u64>, now: Instant) {
            self.received.push((p.payload, now, p.ecn));
            self.pending.push(p.payload);
        }
        fn poll_transmit(&mut self, _now: Instant) -> Option<Transmit<u64>> {
            self.pending.pop().map(|seq| Transmit {
                size: DataSize::bytes(50),
                ecn: Ecn::NotEct,
                payload: seq,
            })
        }
        fn poll_timeout(&self) -> Option<Instant> {
            None
        }
        fn handle_timeout(&mut self, _now: Instant) {}
    }

    fn sender(start: Instant, gap_ms: u64) -> CbrSender {
        CbrSender {
            gap: Duration::from_millis(gap_ms),
            size: DataSize::bytes(1000),
            next: start,
            seq: 0,
            acked: Vec::new(),
            ecn: Ecn::NotEct,
        }
    }

    fn sim(seed: u64, t0: Instant) -> Sim<CbrSender, Acker> {
        let fwd = LinkConfig::constant(Bitrate::mbps(1))
            .with_delay(Duration::from_millis(20))
            .with_loss(LossConfig::Bernoulli { p: 0.05 })
            .with_seed(seed);
        let rev = LinkConfig {
            capacity: crate::CapacityConfig::Unlimited,
            ..LinkConfig::default()
        }
        .with_delay(Duration::from_millis(20));
        Sim::new(Link::new(fwd).unwrap(), Link::new(rev).unwrap(), t0)
    }

    #[test]
    fn packets_cross_both_links_with_their_delays() {
        let t0 = Instant::now();
        let mut s = sim(1, t0);
        s.add_pair(sender(t0, 10), Acker::default());
        s.run_until(t0 + Duration::from_secs(2));
        assert_eq!(s.now(), t0 + Duration::from_secs(2));
        let (seq, at) = s.sender(0).acked[0];
        // 8 ms serialisation + 20 ms forward + 20 ms back (an unlimited reverse link).
        let first_sent = t0 + Duration::from_millis(10) * (seq as u32 - 1);
        assert_eq!(at - first_sent, Duration::from_millis(48));
        let rx = &s.receiver(0).received;
        assert!(
            rx.len() > 180 && rx.len() < 200,
            "{} of 200 with 5 % loss",
            rx.len()
        );
        // Acks of the last 40 ms are still on their way back.
        let acked = s.sender(0).acked.len();
        assert!(
            acked <= rx.len() && acked + 5 >= rx.len(),
            "{acked} of {}",
            rx.len()
        );
    }

    #[test]
    fn same_seed_gives_the_same_event_log() {
        let log = |seed| {
            let t0 = Instant::now();
            let mut s = sim(seed, t0);
            s.add_pair(sender(t0, 5), Acker::default());
            s.run_until(t0 + Duration::from_secs(1));
            s.add_pair(sender(s.now(), 7), Acker::default());
            s.run_until(t0 + Duration::from_secs(3));
            let f: Vec<_> = s
                .forward()
                .events()
                .iter()
                .map(|e| (e.time - t0, e.id, e.flow, e.kind))
                .collect();
            let r: Vec<_> = s
                .reverse()
                .events()
                .iter()
                .map(|e| (e.time - t0, e.id, e.flow, e.kind))
                .collect();
            (f, r)
        };
        let a = log(42);
        assert_eq!(a, log(42));
        assert_ne!(a, log(43));
        assert!(
            a.0.iter()
                .any(|e| e.3 == EventKind::Dropped(crate::DropReason::RandomLoss))
        );
    }

    #[test]
    fn pairs_added_later_get_their_own_flow() {
        let t0 = Instant::now();
        let mut s = sim(1, t0);
        s.add_pair(sender(t0, 20), Acker::default());
        s.run_until(t0 + Duration::from_secs(1));
        let j = s.add_pair(sender(s.now(), 20), Acker::default());
        s.run_until(t0 + Duration::from_secs(2));
        assert_ne!(s.flow(0), s.flow(j));
        let f1 = s.forward().stats().flow(&s.flow(j)).unwrap();
        assert!(f1.arrived >= 49 && f1.arrived <= 51, "{}", f1.arrived);
        assert!(!s.receiver(j).received.is_empty());
    }

    #[test]
    fn a_reversed_pair_sends_on_the_reverse_link_and_is_answered_on_the_forward_one() {
        let t0 = Instant::now();
        let mut s = sim(1, t0);
        let fwd = s.add_pair(sender(t0, 10), Acker::default());
        let flow = FlowId::from_index(7);
        let rev = s
            .add_reversed_pair_with_flow(sender(t0, 10), Acker::default(), flow)
            .expect("a flow of its own");
        assert!(s.is_reversed(rev) && !s.is_reversed(fwd));
        assert!(
            s.add_pair_with_flow(sender(t0, 10), Acker::default(), flow.reversed())
                .is_none(),
            "a flow's reverse is taken too"
        );
        s.run_until(t0 + Duration::from_secs(2));
        let on = |l: &Link<u64>, f: FlowId| l.stats().flow(&f).map_or(0, |x| x.arrived);
        // The reversed pair's data crosses the reverse link, its acks the forward one.
        assert!(on(s.reverse(), flow) >= 199, "{}", on(s.reverse(), flow));
        assert_eq!(on(s.forward(), flow), 0);
        assert!(on(s.forward(), flow.reversed()) >= 190);
        // The reverse link is lossless and unlimited: every packet arrives, and is acked.
        assert!(s.receiver(rev).received.len() >= 199);
        assert!(s.sender(rev).acked.len() >= 180);
        // The forward pair is unaffected.
        assert!(on(s.forward(), s.flow(fwd)) >= 199);
        assert!(s.receiver(fwd).received.len() > 180);
    }

    #[test]
    fn boxed_endpoints_mix_in_one_simulation() {
        let t0 = Instant::now();
        let fwd = Link::new(LinkConfig::constant(Bitrate::mbps(1))).unwrap();
        let rev = Link::new(LinkConfig::constant(Bitrate::mbps(1))).unwrap();
        let mut s: Sim<Box<dyn Endpoint<Payload = u64>>, Acker> = Sim::new(fwd, rev, t0);
        s.add_pair(Box::new(sender(t0, 10)), Acker::default());
        s.run_until(t0 + Duration::from_millis(500));
        assert!(s.receiver(0).received.len() >= 49);
    }
}
