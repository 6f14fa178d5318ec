//! A constant-bit-rate datagram flow without congestion control — netlab's `udp` flow
//! (`__udp-send`), TMA24 §III-B's "No CCA" source — for simulated time: [`CbrSender`] sends
//! datagrams of one size at a (stepped) rate whatever happens to them, and [`CbrSink`]
//! counts what arrives. Nothing travels back.

use std::time::{Duration, Instant};

use cg_link::sim::{Delivered, Endpoint, Transmit};
use cg_types::{Bitrate, DataSize, Ecn};

use crate::ConfigError;
use crate::sim::packet::{Datagram, SimPacket};

/// A constant-bit-rate flow's parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct CbrConfig {
    /// Rate steps `(time since the sender's creation, rate)`: the last one at or before now
    /// applies, and the first one before it (as netlab's UDP sender). At least one.
    pub rate: Vec<(Duration, Bitrate)>,
    /// Bytes on the wire per datagram (netlab's `size` is the UDP payload: add 28 bytes of
    /// IP and UDP headers). Default 1228.
    pub size: DataSize,
    /// ECN codepoint sent. Default [`Ecn::NotEct`].
    pub ecn: Ecn,
    /// Delay from the sender's creation until its first datagram. Default zero.
    pub start: Duration,
    /// Time from the sender's creation after which it sends nothing (`None`: never stops).
    pub stop: Option<Duration>,
}

impl Default for CbrConfig {
    fn default() -> Self {
        CbrConfig {
            rate: vec![(Duration::ZERO, Bitrate::mbps(1))],
            size: DataSize::bytes(1228),
            ecn: Ecn::NotEct,
            start: Duration::ZERO,
            stop: None,
        }
    }
}

impl CbrConfig {
    /// Refuses a flow without a rate, rate steps out of order, a datagram outside
    /// `[44, 65535]` bytes on the wire (IP and UDP headers and at least 16 bytes, netlab's
    /// smallest payload), CE as the codepoint, a `stop` not after `start`.
    pub fn validate(&self) -> Result<(), ConfigError> {
        ConfigError::check(
            !self.rate.is_empty() && self.rate.windows(2).all(|w| w[0].0 < w[1].0),
            "rate",
            self.rate.len(),
            "at least one step, in increasing time",
        )?;
        ConfigError::check(
            (44..=65_535).contains(&self.size.as_bytes()),
            "size",
            self.size,
            "within [44, 65535] bytes",
        )?;
        ConfigError::check(self.ecn != Ecn::Ce, "ecn", self.ecn, "not CE")?;
        ConfigError::check(
            self.stop.is_none_or(|s| s > self.start),
            "stop",
            self.stop,
            format!("None or after start {:?}", self.start),
        )
    }

    fn rate_at(&self, since: Duration) -> Bitrate {
        self.rate
            .iter()
            .take_while(|(at, _)| *at <= since)
            .last()
            .or(self.rate.first())
            .map_or(Bitrate::ZERO, |s| s.1)
    }
}

/// A CBR sender and its sink, created at `now`. Check `cfg` with [`CbrConfig::validate`]
/// first: a datagram under one byte is sent as one byte.
pub fn cbr_pair(cfg: CbrConfig, now: Instant) -> (CbrSender, CbrSink) {
    (CbrSender::new(cfg, now), CbrSink::default())
}

/// Sends one datagram every `size / rate`, on time, from `start` until `stop`. A zero rate
/// sends nothing and looks again 100 ms later (as netlab's sender does).
#[derive(Debug, Clone)]
pub struct CbrSender {
    cfg: CbrConfig,
    created: Instant,
    next: Option<Instant>,
    stop_at: Option<Instant>,
    sent: u64,
}

impl CbrSender {
    fn new(mut cfg: CbrConfig, now: Instant) -> Self {
        cfg.size = cfg.size.max(DataSize::bytes(1));
        CbrSender {
            next: now.checked_add(cfg.start),
            stop_at: cfg.stop.and_then(|s| now.checked_add(s)),
            created: now,
            sent: 0,
            cfg,
        }
    }

    /// Datagrams sent.
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// The config in force.
    pub fn config(&self) -> &CbrConfig {
        &self.cfg
    }
}

impl Endpoint for CbrSender {
    type Payload = SimPacket;

    fn handle_packet(&mut self, _packet: Delivered<SimPacket>, _now: Instant) {}

    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit<SimPacket>> {
        loop {
            let at = self.next.filter(|t| *t <= now)?;
            if self.stop_at.is_some_and(|s| at >= s) {
                self.next = None;
                return None;
            }
            let rate = self.cfg.rate_at(at.saturating_duration_since(self.created));
            let Some(gap) = rate.time_to_send(self.cfg.size) else {
                self.next = at.checked_add(Duration::from_millis(100));
                continue;
            };
            self.next = at.checked_add(gap);
            self.sent += 1;
            return Some(Transmit {
                size: self.cfg.size,
                ecn: self.cfg.ecn,
                payload: SimPacket::Datagram(Datagram {
                    seq: self.sent - 1,
                    sent: at,
                }),
            });
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.next
    }

    fn handle_timeout(&mut self, _now: Instant) {}
}

/// Counts the datagrams that arrive.
#[derive(Debug, Clone, Default)]
pub struct CbrSink {
    received: u64,
    bytes: DataSize,
    ce: u64,
    /// Largest one-way delay seen.
    max_delay: Duration,
}

impl CbrSink {
    /// Datagrams received.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// Bytes on the wire received.
    pub fn bytes(&self) -> DataSize {
        self.bytes
    }

    /// Datagrams that arrived CE-marked.
    pub fn ce(&self) -> u64 {
        self.ce
    }

    /// The largest one-way delay seen.
    pub fn max_delay(&self) -> Duration {
        self.max_delay
    }
}

impl Endpoint for CbrSink {
    type Payload = SimPacket;

    fn handle_packet(&mut self, packet: Delivered<SimPacket>, now: Instant) {
        let SimPacket::Datagram(d) = packet.payload else {
            return;
        };
        self.received += 1;
        self.bytes += packet.size;
        self.ce += u64::from(packet.ecn == Ecn::Ce);
        self.max_delay = self.max_delay.max(now.saturating_duration_since(d.sent));
    }

    fn poll_transmit(&mut self, _now: Instant) -> Option<Transmit<SimPacket>> {
        None
    }

    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    fn handle_timeout(&mut self, _now: Instant) {}
}

#[cfg(test)]
mod tests {
    use cg_link::qdisc::DropTailConfig;
    use cg_link::sim::Sim;
    use cg_link::{Link, LinkConfig, QdiscConfig};

    use super::*;

    fn sim(t0: Instant, mbps: u64) -> Sim<CbrSender, CbrSink> {
        let fwd = LinkConfig::constant(Bitrate::mbps(mbps))
            .with_delay(Duration::from_millis(10))
            .with_qdisc(QdiscConfig::DropTail(DropTailConfig::time(
                Duration::from_millis(50),
            )));
        let rev = LinkConfig::constant(Bitrate::mbps(100));
        Sim::new(Link::new(fwd).unwrap(), Link::new(rev).unwrap(), t0)
    }

    #[test]
    fn sends_its_rate_steps_on_time_and_stops() {
        let t0 = Instant::now();
        let mut s = sim(t0, 100);
        let cfg = CbrConfig {
            rate: vec![
                (Duration::from_secs(1), Bitrate::mbps(2)),
                (Duration::from_secs(3), Bitrate::mbps(8)),
                (Duration::from_secs(4), Bitrate::ZERO),
                (Duration::from_secs(5), Bitrate::mbps(1)),
            ],
            size: DataSize::bytes(1000),
            start: Duration::from_millis(500),
            stop: Some(Duration::from_secs(6)),
            ..CbrConfig::default()
        };
        assert_eq!(cfg.validate(), Ok(()));
        let (tx, rx) = cbr_pair(cfg, t0);
        s.add_pair(tx, rx);
        s.run_until(t0 + Duration::from_secs(10));
        // 0.5–3 s at 2 Mbit/s (the first step applies before its time), 3–4 s at 8, 4–5 s
        // nothing, 5–6 s at 1: 625 + 1000 + 0 + 125 datagrams of 1000 bytes.
        let sent = s.sender(0).sent();
        assert!((1748..=1752).contains(&sent), "{sent}");
        assert_eq!(
            s.receiver(0).received(),
            sent,
            "an uncongested link loses none"
        );
        assert_eq!(s.receiver(0).bytes(), DataSize::bytes(1000 * sent));
        assert_eq!(
            s.reverse().stats().total().arrived,
            0,
            "nothing travels back"
        );
    }

    #[test]
    fn does_not_slow_down_when_the_link_is_slower() {
        let t0 = Instant::now();
        let mut s = sim(t0, 5);
        let cfg = CbrConfig {
            rate: vec![(Duration::ZERO, Bitrate::mbps(10))],
            size: DataSize::bytes(1250),
            ecn: Ecn::Ect1,
            ..CbrConfig::default()
        };
        let (tx, rx) = cbr_pair(cfg, t0);
        s.add_pair(tx, rx);
        s.run_until(t0 + Duration::from_secs(4));
        assert_eq!(s.sender(0).sent(), 4001);
        let rx = s.receiver(0);
        // Half gets through; the queue stays full, at its 50 ms limit.
        assert!((1950..=2010).contains(&rx.received()), "{}", rx.received());
        assert!(
            rx.max_delay() >= Duration::from_millis(55),
            "{:?}",
            rx.max_delay()
        );
        assert!(
            rx.max_delay() <= Duration::from_millis(65),
            "{:?}",
            rx.max_delay()
        );
    }

    #[test]
    fn nonsense_is_refused_by_name() {
        let field = |c: CbrConfig| c.validate().map_err(|e| e.field);
        let d = CbrConfig::default;
        assert_eq!(
            field(CbrConfig {
                rate: vec![],
                ..d()
            }),
            Err("rate")
        );
        let two = |a, b| {
            vec![
                (Duration::from_secs(a), Bitrate::ZERO),
                (Duration::from_secs(b), Bitrate::ZERO),
            ]
        };
        assert_eq!(
            field(CbrConfig {
                rate: two(2, 1),
                ..d()
            }),
            Err("rate")
        );
        assert_eq!(
            field(CbrConfig {
                rate: two(1, 2),
                ..d()
            }),
            Ok(())
        );
        assert_eq!(
            field(CbrConfig {
                size: DataSize::bytes(20),
                ..d()
            }),
            Err("size")
        );
        assert_eq!(
            field(CbrConfig {
                ecn: Ecn::Ce,
                ..d()
            }),
            Err("ecn")
        );
        assert_eq!(
            field(CbrConfig {
                start: Duration::from_secs(2),
                stop: Some(Duration::from_secs(1)),
                ..d()
            }),
            Err("stop")
        );
    }
}
