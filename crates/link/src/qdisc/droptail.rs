//! DropTail: a FIFO with a limit in packets (`pfifo`), bytes (`bfifo`) or time (DT/300).

use std::collections::VecDeque;
use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

use cg_types::{Bitrate, DataSize};
use serde::{Deserialize, Serialize};

use super::{LinkInfo, Qdisc, report_drop, report_enqueue};
use crate::error::Error;
use crate::event::{DropReason, EventSink};
use crate::packet::Packet;

/// The size limit of a FIFO.
///
/// Deserialises from a packet count (`300`), a string in packets (`"300p"`), bytes
/// (`"450KB"`, `"1500B"`) or time (`"300ms"`, the papers' DT/300), or the tagged table it
/// serialises to (`{ packets = 300 }`, `{ time = "300ms" }`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", remote = "Self")]
pub enum QueueLimit {
    /// At most this many packets (Linux `pfifo limit N`): a packet arriving at a full queue
    /// is dropped.
    Packets(u32),
    /// At most this many bytes (Linux `bfifo limit B`): a packet that would take the backlog
    /// over the limit is dropped.
    Bytes(DataSize),
    /// At most this much time at the link's rate: a byte limit of `time × rate` (CCR16 /
    /// RFC 8867's DT/300 = 300 ms; MMSys16 §5.1 sets qM = Tq · C). With a capacity schedule
    /// the limit is re-sized at every step to the rate in force, as a testbed that sets the
    /// queue with each capacity change (packets already queued stay; arrivals are dropped
    /// until the backlog fits). With a trace it is sized at the trace's mean rate.
    #[serde(with = "humantime_serde")]
    Time(Duration),
}

impl QueueLimit {
    /// The limit in bytes at `rate`, packets counted as 1500 bytes each.
    pub fn bytes_at(self, rate: Bitrate) -> DataSize {
        match self {
            QueueLimit::Packets(p) => DataSize::bytes(u64::from(p) * 1500),
            QueueLimit::Bytes(b) => b,
            QueueLimit::Time(t) => rate * t,
        }
    }
}

impl FromStr for QueueLimit {
    type Err = String;

    /// `"300"`, `"300p"`, `"300pkts"`, `"300packets"`: packets; `"300ms"`, `"1.5s"`: time;
    /// anything else a byte size (`"450KB"`). Zero and negative limits are errors.
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        if t.starts_with('-') {
            return Err(format!("limit `{s}` is negative"));
        }
        let packets = t
            .strip_suffix("packets")
            .or_else(|| t.strip_suffix("pkts"))
            .or_else(|| t.strip_suffix('p'))
            .or_else(|| t.chars().all(|c| c.is_ascii_digit()).then_some(t));
        let limit = if let Some(n) = packets {
            QueueLimit::Packets(
                n.trim()
                    .parse()
                    .map_err(|_| format!("limit `{s}`: `{n}` is not a packet count"))?,
            )
        } else if t.ends_with('s') && !t.ends_with("bytes") {
            QueueLimit::Time(
                humantime::parse_duration(t)
                    .map_err(|e| format!("limit `{s}` is not a time like \"300ms\": {e}"))?,
            )
        } else {
            QueueLimit::Bytes(
                t.parse()
                    .map_err(|e| format!("limit `{s}` is not packets, bytes or time: {e}"))?,
            )
        };
        let zero = match limit {
            QueueLimit::Packets(p) => p == 0,
            QueueLimit::Bytes(b) => b == DataSize::ZERO,
            QueueLimit::Time(d) => d.is_zero(),
        };
        if zero {
            return Err(format!("limit `{s}` must be above zero"));
        }
        Ok(limit)
    }
}

impl Serialize for QueueLimit {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        QueueLimit::serialize(self, s)
    }
}

impl<'de> Deserialize<'de> for QueueLimit {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{self, MapAccess, Visitor};
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = QueueLimit;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a limit such as 300 (packets), \"300ms\" or \"450KB\"")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<QueueLimit, E> {
                v.parse().map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<QueueLimit, E> {
                self.visit_str(&v.to_string())
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<QueueLimit, E> {
                self.visit_str(&v.to_string())
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<QueueLimit, A::Error> {
                QueueLimit::deserialize(de::value::MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_any(V)
    }
}

/// DropTail parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DropTailConfig {
    /// Queue limit. Default: 1000 packets (Linux `pfifo` on a device with the default
    /// `txqueuelen` 1000). CCR16 and MMSys16 use `Time(300 ms)`; TMA24 uses 250 packets.
    pub limit: QueueLimit,
}

impl Default for DropTailConfig {
    fn default() -> Self {
        DropTailConfig {
            limit: QueueLimit::Packets(1000),
        }
    }
}

impl DropTailConfig {
    /// DT/`ms`: a queue holding `ms` milliseconds at the link rate (CCR16 Table 1: DT/300).
    pub fn time(d: Duration) -> Self {
        DropTailConfig {
            limit: QueueLimit::Time(d),
        }
    }

    /// A `pfifo` of `n` packets.
    pub fn packets(n: u32) -> Self {
        DropTailConfig {
            limit: QueueLimit::Packets(n),
        }
    }

    /// A `bfifo` of `size` bytes.
    pub fn bytes(size: DataSize) -> Self {
        DropTailConfig {
            limit: QueueLimit::Bytes(size),
        }
    }
}

/// The limit after converting time into bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Limit {
    Packets(usize),
    Bytes(u64),
}

/// A tail-drop FIFO.
pub struct DropTail<P> {
    queue: VecDeque<Packet<P>>,
    bytes: u64,
    limit: Limit,
    /// The time limit, when the byte limit was derived from one (re-sized by `set_rate`).
    time_limit: Option<Duration>,
}

impl<P> DropTail<P> {
    /// A FIFO per `config` on `link`.
    pub fn new(config: &DropTailConfig, link: LinkInfo) -> Result<Self, Error> {
        let limit = match config.limit {
            QueueLimit::Packets(0) => {
                return Err(Error::ZeroLimit {
                    what: "droptail packet limit",
                });
            }
            QueueLimit::Packets(n) => Limit::Packets(n as usize),
            QueueLimit::Bytes(b) if b == DataSize::ZERO => {
                return Err(Error::ZeroLimit {
                    what: "droptail byte limit",
                });
            }
            QueueLimit::Bytes(b) => Limit::Bytes(b.as_bytes()),
            QueueLimit::Time(d) => {
                crate::error::bounded("droptail time limit", d)?;
                let b = link.rate * d;
                if b == DataSize::ZERO {
                    return Err(Error::ZeroLimit {
                        what: "droptail time limit (zero bytes at the link rate)",
                    });
                }
                Limit::Bytes(b.as_bytes())
            }
        };
        let cap = match limit {
            Limit::Packets(n) => n.min(4096),
            Limit::Bytes(b) => (b / 1000).min(4096) as usize,
        };
        Ok(DropTail {
            queue: VecDeque::with_capacity(cap + 1),
            bytes: 0,
            limit,
            time_limit: match config.limit {
                QueueLimit::Time(d) => Some(d),
                _ => None,
            },
        })
    }

    /// The byte limit, if the queue is limited in bytes (or time).
    pub fn byte_limit(&self) -> Option<DataSize> {
        match self.limit {
            Limit::Bytes(b) => Some(DataSize::bytes(b)),
            Limit::Packets(_) => None,
        }
    }
}

impl<P: Send> Qdisc<P> for DropTail<P> {
    fn set_rate(&mut self, rate: Bitrate) {
        // A zero rate (an outage step) keeps the last limit rather than dropping everything.
        if let Some(d) = self.time_limit
            && rate > Bitrate::ZERO
        {
            self.limit = Limit::Bytes((rate * d).as_bytes().max(1));
        }
    }

    fn enqueue(&mut self, mut packet: Packet<P>, now: Instant, events: &mut dyn EventSink) {
        let size = packet.size.as_bytes();
        let full = match self.limit {
            Limit::Packets(n) => self.queue.len() >= n,
            Limit::Bytes(b) => self.bytes + size > b,
        };
        if full {
            report_drop(&packet, DropReason::QueueFull, now, events);
            return;
        }
        packet.enqueued = now;
        report_enqueue(&packet, now, events);
        self.bytes += size;
        self.queue.push_back(packet);
    }

    fn dequeue(&mut self, _now: Instant, _events: &mut dyn EventSink) -> Option<Packet<P>> {
        let p = self.queue.pop_front()?;
        self.bytes -= p.size.as_bytes();
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testing::{Source, drops, run};
    use cg_types::{Bitrate, Ecn};

    #[test]
    fn limits_parse_in_packets_bytes_and_time_or_as_tagged_tables() {
        let p = |s: &str| s.parse::<QueueLimit>();
        assert_eq!(p("300"), Ok(QueueLimit::Packets(300)));
        assert_eq!(p("250p"), Ok(QueueLimit::Packets(250)));
        assert_eq!(p("250 packets"), Ok(QueueLimit::Packets(250)));
        assert_eq!(p("300ms"), Ok(QueueLimit::Time(Duration::from_millis(300))));
        assert_eq!(p("45KB"), Ok(QueueLimit::Bytes(DataSize::bytes(45_000))));
        assert!(p("0").unwrap_err().contains("above zero"));
        assert!(p("-3").unwrap_err().contains("negative"));
        assert!(p("many").is_err());
        assert_eq!(
            QueueLimit::Time(Duration::from_millis(300)).bytes_at(Bitrate::mbps(1)),
            DataSize::bytes(37_500)
        );
        #[derive(Deserialize, Serialize)]
        struct T {
            a: QueueLimit,
            b: QueueLimit,
            c: QueueLimit,
        }
        let t: T = toml::from_str("a = 63\nb = \"300ms\"\nc = { bytes = \"1500B\" }").unwrap();
        assert_eq!(t.a, QueueLimit::Packets(63));
        assert_eq!(t.b, QueueLimit::Time(Duration::from_millis(300)));
        assert_eq!(t.c, QueueLimit::Bytes(DataSize::bytes(1500)));
        // What it serialises to reads back.
        let back: T = toml::from_str(&toml::to_string(&t).unwrap()).unwrap();
        assert_eq!((back.a, back.b, back.c), (t.a, t.b, t.c));
    }

    #[test]
    fn packet_limit_drops_the_arrival_at_a_full_queue() {
        let now = Instant::now();
        let mut q =
            DropTail::new(&DropTailConfig::packets(2), LinkInfo::new(Bitrate::mbps(1))).unwrap();
        let mut ev = Vec::new();
        for i in 0..3 {
            q.enqueue(crate::qdisc::testing::pkt(i, 0, 100, now), now, &mut ev);
        }
        assert_eq!(q.len(), 2);
        assert_eq!(drops(&ev, DropReason::QueueFull), 1);
        assert_eq!(q.dequeue(now, &mut ev).map(|p| p.id.0), Some(0));
        assert_eq!(q.bytes(), DataSize::bytes(100));
    }

    #[test]
    fn time_limit_is_time_times_rate_in_bytes() {
        let q = DropTail::<()>::new(
            &DropTailConfig::time(Duration::from_millis(300)),
            LinkInfo::new(Bitrate::mbps(1)),
        )
        .unwrap();
        assert_eq!(q.byte_limit(), Some(DataSize::bytes(37_500)));
    }

    #[test]
    fn zero_limits_are_errors() {
        let l = LinkInfo::new(Bitrate::mbps(1));
        assert!(DropTail::<()>::new(&DropTailConfig::packets(0), l).is_err());
        assert!(DropTail::<()>::new(&DropTailConfig::bytes(DataSize::ZERO), l).is_err());
        assert!(DropTail::<()>::new(&DropTailConfig::time(Duration::ZERO), l).is_err());
    }

    #[test]
    fn dt300_bounds_the_sojourn_and_halves_a_double_rate_input() {
        let t0 = Instant::now();
        let rate = Bitrate::mbps(1);
        let mut q = DropTail::new(
            &DropTailConfig::time(Duration::from_millis(300)),
            LinkInfo::new(rate),
        )
        .unwrap();
        let mut src = [Source {
            flow: 0,
            rate: Bitrate::mbps(2),
            size: 1000,
            ecn: Ecn::NotEct,
            next: t0,
        }];
        let (ev, out) = run(&mut q, rate, &mut src, t0, Duration::from_secs(20));
        let max_sojourn = out.iter().map(|(t, p)| *t - p.enqueued).max().unwrap();
        assert!(max_sojourn <= Duration::from_millis(300), "{max_sojourn:?}");
        let sent = ev
            .iter()
            .filter(|e| e.kind == crate::event::EventKind::Enqueued)
            .count()
            + drops(&ev, DropReason::QueueFull);
        let loss = drops(&ev, DropReason::QueueFull) as f64 / sent as f64;
        assert!((loss - 0.5).abs() < 0.02, "loss {loss}");
    }
}
