//! HTB: hierarchical token bucket (Devera 2002; Linux `sch_htb`, `tc-htb(8)`).
//!
//! Leaf classes under one root, each with a guaranteed `rate`, a `ceil` it may borrow up to,
//! token buckets of `burst` / `cburst` bytes, a `prio` (lower borrows spare bandwidth first),
//! a DRR `quantum`, and its own child qdisc. Packets are classified by ordered rules on the
//! 5-tuple, DSCP and ECN; unmatched packets go to `default_class`, or, if none is set, to
//! Linux's unshaped direct queue.
//!
//! Dequeue follows `htb_dequeue`: among backlogged classes that may send at their own rate
//! (tokens ≥ 0) the lowest `prio` wins, DRR within a prio; if none, classes that may borrow
//! (ctokens ≥ 0, and the root has tokens) in the same order. Sending charges the class's
//! tokens (unless it borrowed), its ctokens and the root's tokens (`htb_charge_class`). When
//! nothing may send, [`Qdisc::poll_timeout`] is the earliest instant a class will have tokens
//! again (Linux's watchdog).
//!
//! Deviation: classes form one level under the root (no inner classes); that is the shape of
//! every setup in the papers (TMA24 §IV-C) and of netlab's scenarios.

use std::collections::VecDeque;
use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;
use std::time::{Duration, Instant};

use cg_types::{Bitrate, DataSize, Ecn, Rng};
use serde::{Deserialize, Serialize};

use super::{BoxQdisc, LinkInfo, Qdisc, QdiscConfig, report_drop, report_enqueue};
use crate::error::Error;
use crate::event::{DropReason, EventSink};
use crate::packet::{Dscp, Packet, Protocol};

/// HTB parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct HtbConfig {
    /// The root's rate and ceil. Default: the link's rate.
    pub rate: Option<Bitrate>,
    /// The leaf classes; at least one.
    pub classes: Vec<HtbClassConfig>,
    /// Classification rules, tried in order; the first match wins.
    pub rules: Vec<HtbRule>,
    /// Class for packets no rule matches. Default: none (Linux: the unshaped direct queue).
    pub default_class: Option<String>,
    /// Divides a class's rate (bytes/s) into its default DRR quantum. Default 10 (Linux).
    pub r2q: u32,
    /// Packet limit of the direct queue. Default 1000 (Linux: the device's txqueuelen).
    pub direct_limit: u32,
}

/// One HTB class.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HtbClassConfig {
    /// Name the rules refer to.
    pub name: String,
    /// Guaranteed rate; must be positive.
    pub rate: Bitrate,
    /// Maximum rate when borrowing. Default: `rate` (tc-htb).
    #[serde(default)]
    pub ceil: Option<Bitrate>,
    /// Bucket size at `rate`. Default: rate × 1 ms + MTU (`tc`: rate / HZ + mtu, HZ = 1000).
    #[serde(default)]
    pub burst: Option<DataSize>,
    /// Bucket size at `ceil`. Default: ceil × 1 ms + MTU.
    #[serde(default)]
    pub cburst: Option<DataSize>,
    /// Priority, 0 (highest) to 7. Default 0 (tc-htb).
    #[serde(default)]
    pub prio: u8,
    /// DRR quantum. Default rate / r2q, clamped to [MTU, 200 000 B] (Linux).
    #[serde(default)]
    pub quantum: Option<DataSize>,
    /// The class's own queue. Default `pfifo` 1000 packets (Linux's default leaf qdisc).
    #[serde(default)]
    pub qdisc: Option<Box<QdiscConfig>>,
}

impl HtbClassConfig {
    /// A class with `rate`, `ceil` and `prio`, otherwise defaults.
    pub fn new(name: &str, rate: Bitrate, ceil: Bitrate, prio: u8) -> Self {
        HtbClassConfig {
            name: name.to_owned(),
            rate,
            ceil: Some(ceil),
            burst: None,
            cburst: None,
            prio,
            quantum: None,
            qdisc: None,
        }
    }

    /// This class with child qdisc `q`.
    pub fn with_qdisc(mut self, q: QdiscConfig) -> Self {
        self.qdisc = Some(Box::new(q));
        self
    }
}

/// A classification rule: every field given must match.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HtbRule {
    /// The class packets matching this rule go to.
    pub class: String,
    /// The conditions.
    #[serde(flatten)]
    pub matches: HtbMatch,
}

/// Conditions on a packet's 5-tuple, DSCP and ECN (`tc filter … u32 match …` analogues).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HtbMatch {
    /// Source address prefix.
    pub src: Option<IpPrefix>,
    /// Destination address prefix.
    pub dst: Option<IpPrefix>,
    /// Source port.
    pub src_port: Option<u16>,
    /// Destination port.
    pub dst_port: Option<u16>,
    /// IP protocol number.
    pub protocol: Option<Protocol>,
    /// DSCP.
    pub dscp: Option<Dscp>,
    /// ECN code point.
    pub ecn: Option<Ecn>,
}

impl HtbMatch {
    /// Whether `p` satisfies every condition.
    pub fn matches<P>(&self, p: &Packet<P>) -> bool {
        self.src.is_none_or(|n| n.contains(p.flow.src))
            && self.dst.is_none_or(|n| n.contains(p.flow.dst))
            && self.src_port.is_none_or(|v| v == p.flow.src_port)
            && self.dst_port.is_none_or(|v| v == p.flow.dst_port)
            && self.protocol.is_none_or(|v| v == p.flow.protocol)
            && self.dscp.is_none_or(|v| v == p.dscp)
            && self.ecn.is_none_or(|v| v == p.ecn)
    }
}

/// An address prefix, `10.0.0.0/8` or `2001:db8::/32`; a bare address is a host prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct IpPrefix {
    addr: IpAddr,
    len: u8,
}

impl IpPrefix {
    /// `addr/len`; `None` if `len` is longer than the address.
    pub fn new(addr: IpAddr, len: u8) -> Option<Self> {
        let max = if addr.is_ipv4() { 32 } else { 128 };
        (len <= max).then_some(IpPrefix { addr, len })
    }

    /// Whether `a` lies in this prefix.
    pub fn contains(&self, a: IpAddr) -> bool {
        fn bits(a: IpAddr) -> (u128, u8) {
            match a {
                IpAddr::V4(v) => (u32::from(v) as u128, 32),
                IpAddr::V6(v) => (u128::from(v), 128),
            }
        }
        let ((x, wx), (y, wy)) = (bits(self.addr), bits(a));
        if wx != wy {
            return false;
        }
        if self.len == 0 {
            return true;
        }
        let shift = wx - self.len;
        x >> shift == y >> shift
    }
}

impl FromStr for IpPrefix {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (a, l) = s.split_once('/').map_or((s, None), |(a, l)| (a, Some(l)));
        let addr: IpAddr = a.trim().parse().map_err(|e| format!("`{s}`: {e}"))?;
        let len = match l {
            Some(l) => l.trim().parse::<u8>().map_err(|e| format!("`{s}`: {e}"))?,
            None if addr.is_ipv4() => 32,
            None => 128,
        };
        IpPrefix::new(addr, len).ok_or_else(|| format!("`{s}`: prefix length too long"))
    }
}

impl TryFrom<String> for IpPrefix {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

impl From<IpPrefix> for String {
    fn from(p: IpPrefix) -> String {
        p.to_string()
    }
}

impl fmt::Display for IpPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

/// A token bucket in bytes (may go negative: HTB charges after sending).
#[derive(Debug, Clone, Copy)]
struct Bucket {
    /// Bytes per second.
    rate: f64,
    size: f64,
    tokens: f64,
}

impl Bucket {
    fn new(rate: Bitrate, size: DataSize) -> Self {
        Bucket {
            rate: rate.as_bps_f64() / 8.0,
            size: size.as_bytes_f64(),
            tokens: size.as_bytes_f64(),
        }
    }

    fn refill(&mut self, dt: Duration) {
        self.tokens = (self.tokens + self.rate * dt.as_secs_f64()).min(self.size);
    }

    /// Time until tokens ≥ 0.
    fn wait(&self) -> Duration {
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / self.rate) + Duration::from_nanos(1)
        }
    }
}

struct Class<P> {
    name: String,
    prio: u8,
    quantum: i64,
    deficit: i64,
    tokens: Bucket,
    ctokens: Bucket,
    q: BoxQdisc<P>,
}

/// An HTB qdisc.
pub struct Htb<P> {
    classes: Vec<Class<P>>,
    rules: Vec<(HtbMatch, usize)>,
    default: Option<usize>,
    root: Bucket,
    direct: VecDeque<Packet<P>>,
    direct_bytes: u64,
    direct_limit: usize,
    /// Per prio (0..8): the class index where DRR resumes.
    rr: [usize; 8],
    last: Option<Instant>,
    wake_at: Option<Instant>,
}

impl<P: Send + 'static> Htb<P> {
    /// HTB per `config`; child qdiscs draw their randomness from `rng`.
    pub fn new(config: &HtbConfig, link: LinkInfo, rng: &mut Rng) -> Result<Self, Error> {
        if config.classes.is_empty() {
            return Err(Error::Empty {
                what: "HTB classes",
            });
        }
        let root_rate = config.rate.unwrap_or(link.rate);
        if root_rate == Bitrate::ZERO {
            return Err(Error::ZeroRate {
                what: "HTB root rate",
            });
        }
        let r2q = if config.r2q == 0 { 10 } else { config.r2q } as u64;
        let mtu = link.mtu;
        let bucket = |rate: Bitrate, size: Option<DataSize>| {
            let size = size.unwrap_or_else(|| rate * Duration::from_millis(1) + mtu);
            Bucket::new(rate, size.max(mtu))
        };
        let mut classes: Vec<Class<P>> = Vec::with_capacity(config.classes.len());
        for c in &config.classes {
            if classes.iter().any(|k| k.name == c.name) {
                return Err(Error::DuplicateClass(c.name.clone()));
            }
            if c.rate == Bitrate::ZERO {
                return Err(Error::ZeroRate {
                    what: "HTB class rate",
                });
            }
            let ceil = c.ceil.unwrap_or(c.rate);
            if ceil < c.rate {
                return Err(Error::InvalidParameter {
                    what: "HTB class ceil",
                    reason: format!("class `{}`: ceil {ceil} is below rate {}", c.name, c.rate),
                });
            }
            if c.prio > 7 {
                return Err(Error::InvalidParameter {
                    what: "HTB class prio",
                    reason: format!("class `{}`: prio {} is above 7", c.name, c.prio),
                });
            }
            let quantum = match c.quantum {
                Some(q) if q == DataSize::ZERO => {
                    return Err(Error::ZeroLimit {
                        what: "HTB class quantum",
                    });
                }
                Some(q) => q.as_bytes(),
                None => (c.rate.as_bps() / 8 / r2q).clamp(mtu.as_bytes(), 200_000),
            };
            let child_cfg = c.qdisc.as_deref().cloned().unwrap_or_default();
            let child_link = LinkInfo { rate: c.rate, mtu };
            classes.push(Class {
                name: c.name.clone(),
                prio: c.prio,
                quantum: quantum as i64,
                deficit: quantum as i64,
                tokens: bucket(c.rate, c.burst),
                ctokens: bucket(ceil, c.cburst),
                q: child_cfg.build(child_link, rng)?,
            });
        }
        let find = |name: &str, what: String| {
            classes
                .iter()
                .position(|c| c.name == name)
                .ok_or_else(|| Error::UnknownClass {
                    what,
                    class: name.to_owned(),
                })
        };
        let rules = config
            .rules
            .iter()
            .enumerate()
            .map(|(i, r)| {
                Ok((
                    r.matches.clone(),
                    find(&r.class, format!("rule {}", i + 1))?,
                ))
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let default = match &config.default_class {
            Some(name) => Some(find(name, "default_class".into())?),
            None => None,
        };
        let direct_limit = if config.direct_limit == 0 {
            1000
        } else {
            config.direct_limit
        } as usize;
        Ok(Htb {
            classes,
            rules,
            default,
            root: bucket(root_rate, None),
            direct: VecDeque::new(),
            direct_bytes: 0,
            direct_limit,
            rr: [0; 8],
            last: None,
            wake_at: None,
        })
    }
}

impl<P> Htb<P> {
    /// The class a packet goes to (`None`: the direct queue).
    pub fn classify(&self, p: &Packet<P>) -> Option<usize> {
        self.rules
            .iter()
            .find(|(m, _)| m.matches(p))
            .map(|(_, c)| *c)
            .or(self.default)
    }

    /// Index of the class named `name`.
    pub fn class_index(&self, name: &str) -> Option<usize> {
        self.classes.iter().position(|c| c.name == name)
    }

    /// Packets queued in class `i`.
    pub fn class_len(&self, i: usize) -> usize {
        self.classes.get(i).map_or(0, |c| c.q.len())
    }

    fn refill(&mut self, now: Instant) {
        let dt = self
            .last
            .map_or(Duration::ZERO, |l| now.saturating_duration_since(l));
        self.last = Some(self.last.map_or(now, |l| l.max(now)));
        if dt.is_zero() {
            return;
        }
        self.root.refill(dt);
        for c in &mut self.classes {
            c.tokens.refill(dt);
            c.ctokens.refill(dt);
        }
    }

    /// DRR among backlogged classes of one prio satisfying `ok`; returns the class served.
    fn pick(&mut self, prio: u8, borrow: bool) -> Option<usize> {
        let n = self.classes.len();
        let root_ok = self.root.tokens >= 0.0;
        let eligible = |c: &Class<P>| {
            c.prio == prio
                && !c.q.is_empty()
                && if borrow {
                    c.tokens.tokens < 0.0 && c.ctokens.tokens >= 0.0 && root_ok
                } else {
                    c.tokens.tokens >= 0.0 && c.ctokens.tokens >= 0.0
                }
        };
        if !self.classes.iter().any(eligible) {
            return None;
        }
        let start = self.rr[prio as usize] % n;
        // At most two passes: one to top up deficits, one to find a class with credit.
        for k in 0..2 * n + 1 {
            let i = (start + k) % n;
            let c = &mut self.classes[i];
            if !eligible(c) {
                continue;
            }
            if c.deficit <= 0 {
                c.deficit += c.quantum;
                continue;
            }
            self.rr[prio as usize] = i;
            return Some(i);
        }
        None
    }

    /// Earliest instant a backlogged class may send again.
    fn next_send_time(&self, now: Instant) -> Option<Instant> {
        self.classes
            .iter()
            .filter(|c| !c.q.is_empty())
            .map(|c| {
                let own = c.tokens.wait().max(c.ctokens.wait());
                let borrow = c.ctokens.wait().max(self.root.wait());
                now + own.min(borrow)
            })
            .min()
    }
}

impl<P: Send> Qdisc<P> for Htb<P> {
    fn enqueue(&mut self, mut packet: Packet<P>, now: Instant, events: &mut dyn EventSink) {
        self.refill(now);
        self.wake_at = None;
        match self.classify(&packet) {
            Some(i) => self.classes[i].q.enqueue(packet, now, events),
            None => {
                if self.direct.len() >= self.direct_limit {
                    report_drop(&packet, DropReason::QueueFull, now, events);
                    return;
                }
                packet.enqueued = now;
                report_enqueue(&packet, now, events);
                self.direct_bytes += packet.size.as_bytes();
                self.direct.push_back(packet);
            }
        }
    }

    fn dequeue(&mut self, now: Instant, events: &mut dyn EventSink) -> Option<Packet<P>> {
        self.refill(now);
        if let Some(p) = self.direct.pop_front() {
            self.direct_bytes -= p.size.as_bytes();
            return Some(p);
        }
        loop {
            let mut chosen = None;
            'outer: for borrow in [false, true] {
                for prio in 0..8u8 {
                    if let Some(i) = self.pick(prio, borrow) {
                        chosen = Some((i, borrow));
                        break 'outer;
                    }
                }
            }
            let Some((i, borrowed)) = chosen else {
                self.wake_at = self.next_send_time(now);
                return None;
            };
            let c = &mut self.classes[i];
            match c.q.dequeue(now, events) {
                Some(p) => {
                    let len = p.size.as_bytes_f64();
                    c.deficit -= p.size.as_bytes() as i64;
                    if c.deficit <= 0 {
                        // Move on within this prio next time (DRR).
                        self.rr[c.prio as usize] = i + 1;
                    }
                    if !borrowed {
                        c.tokens.tokens -= len;
                    }
                    c.ctokens.tokens -= len;
                    self.root.tokens -= len;
                    self.wake_at = None;
                    return Some(p);
                }
                // The child dropped everything it held (an AQM): look again.
                None => continue,
            }
        }
    }

    fn peek(&self) -> Option<&Packet<P>> {
        self.direct
            .front()
            .or_else(|| self.classes.iter().find_map(|c| c.q.peek()))
    }

    fn len(&self) -> usize {
        self.direct.len() + self.classes.iter().map(|c| c.q.len()).sum::<usize>()
    }

    fn bytes(&self) -> DataSize {
        DataSize::bytes(self.direct_bytes) + self.classes.iter().map(|c| c.q.bytes()).sum()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.classes
            .iter()
            .filter_map(|c| c.q.poll_timeout())
            .chain(self.wake_at)
            .min()
    }

    fn handle_timeout(&mut self, now: Instant, events: &mut dyn EventSink) {
        if self.wake_at.is_some_and(|w| w <= now) {
            self.wake_at = None;
        }
        for c in &mut self.classes {
            if c.q.poll_timeout().is_some_and(|t| t <= now) {
                c.q.handle_timeout(now, events);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::FlowId;
    use crate::qdisc::testing::{Source, run};

    fn two_classes() -> HtbConfig {
        HtbConfig {
            classes: vec![
                HtbClassConfig::new("prio", Bitrate::mbps(10), Bitrate::mbps(50), 0),
                HtbClassConfig::new("be", Bitrate::mbps(40), Bitrate::mbps(50), 1),
            ],
            rules: vec![HtbRule {
                class: "prio".into(),
                matches: HtbMatch {
                    dst_port: Some(6001),
                    ..HtbMatch::default()
                },
            }],
            default_class: Some("be".into()),
            ..HtbConfig::default()
        }
    }

    fn rates(out: &[(Instant, crate::Packet)], from: Instant, until: Instant) -> (f64, f64) {
        let r = |f| {
            out.iter()
                .filter(|(t, p)| *t >= from && p.flow == FlowId::from_index(f))
                .map(|(_, p)| p.size.as_bytes())
                .sum::<u64>() as f64
                * 8.0
                / (until - from).as_secs_f64()
                / 1e6
        };
        (r(1), r(2))
    }

    #[test]
    fn priority_class_keeps_its_guarantee_against_a_saturating_class() {
        let t0 = Instant::now();
        let link = Bitrate::mbps(50);
        let mut q = Htb::new(&two_classes(), LinkInfo::new(link), &mut Rng::new(1)).unwrap();
        let mut src = [
            Source {
                flow: 1,
                rate: Bitrate::mbps(10),
                size: 1200,
                ecn: Ecn::NotEct,
                next: t0,
            },
            Source {
                flow: 2,
                rate: Bitrate::mbps(80),
                size: 1500,
                ecn: Ecn::NotEct,
                next: t0,
            },
        ];
        let dur = Duration::from_secs(10);
        let (_, out) = run(&mut q, link, &mut src, t0, dur);
        let (p, be) = rates(&out, t0 + Duration::from_secs(1), t0 + dur);
        assert!((p - 10.0).abs() < 0.1, "priority class {p} Mb/s");
        assert!((be - 40.0).abs() < 0.5, "best effort {be} Mb/s");
        let sojourn = out
            .iter()
            .filter(|(_, p)| p.flow == FlowId::from_index(1))
            .map(|(t, p)| *t - p.enqueued)
            .max()
            .unwrap();
        assert!(
            sojourn < Duration::from_millis(5),
            "priority sojourn {sojourn:?}"
        );
    }

    #[test]
    fn unused_guarantee_is_lent_to_the_other_class() {
        let t0 = Instant::now();
        let link = Bitrate::mbps(50);
        let mut q = Htb::new(&two_classes(), LinkInfo::new(link), &mut Rng::new(1)).unwrap();
        let mut src = [
            Source {
                flow: 1,
                rate: Bitrate::mbps(4),
                size: 1200,
                ecn: Ecn::NotEct,
                next: t0,
            },
            Source {
                flow: 2,
                rate: Bitrate::mbps(80),
                size: 1500,
                ecn: Ecn::NotEct,
                next: t0,
            },
        ];
        let dur = Duration::from_secs(10);
        let (_, out) = run(&mut q, link, &mut src, t0, dur);
        let (p, be) = rates(&out, t0 + Duration::from_secs(1), t0 + dur);
        assert!((p - 4.0).abs() < 0.1, "priority class {p} Mb/s");
        assert!(
            (be - 46.0).abs() < 0.5,
            "best effort borrows the rest: {be} Mb/s"
        );
    }

    #[test]
    fn ceil_caps_a_lone_class() {
        let t0 = Instant::now();
        let link = Bitrate::mbps(50);
        let mut cfg = two_classes();
        cfg.classes[1].ceil = Some(Bitrate::mbps(30));
        cfg.classes[1].rate = Bitrate::mbps(20);
        let mut q = Htb::new(&cfg, LinkInfo::new(link), &mut Rng::new(1)).unwrap();
        let mut src = [Source {
            flow: 2,
            rate: Bitrate::mbps(80),
            size: 1500,
            ecn: Ecn::NotEct,
            next: t0,
        }];
        let dur = Duration::from_secs(5);
        let (_, out) = run(&mut q, link, &mut src, t0, dur);
        let (_, be) = rates(&out, t0 + Duration::from_secs(1), t0 + dur);
        assert!((be - 30.0).abs() < 0.5, "capped at ceil: {be} Mb/s");
    }

    #[test]
    fn rules_match_on_dscp_ecn_and_prefixes() {
        let t0 = Instant::now();
        let mut cfg = two_classes();
        cfg.rules = vec![
            HtbRule {
                class: "prio".into(),
                matches: HtbMatch {
                    dscp: Some(Dscp::EF),
                    ..HtbMatch::default()
                },
            },
            HtbRule {
                class: "prio".into(),
                matches: HtbMatch {
                    ecn: Some(Ecn::Ect1),
                    ..HtbMatch::default()
                },
            },
            HtbRule {
                class: "be".into(),
                matches: HtbMatch {
                    src: Some("10.0.0.0/16".parse().unwrap()),
                    ..HtbMatch::default()
                },
            },
        ];
        cfg.default_class = None;
        let q = Htb::<()>::new(&cfg, LinkInfo::new(Bitrate::mbps(50)), &mut Rng::new(1)).unwrap();
        let p = |f: u16| crate::qdisc::testing::pkt(0, f, 100, t0);
        assert_eq!(q.classify(&p(1).with_dscp(Dscp::EF)), Some(0));
        assert_eq!(q.classify(&p(1).with_ecn(Ecn::Ect1)), Some(0));
        assert_eq!(q.classify(&p(1)), Some(1));
        let mut other = p(1);
        other.flow.src = "192.168.0.1".parse().unwrap();
        assert_eq!(q.classify(&other), None, "direct queue");
    }

    #[test]
    fn a_rule_naming_no_class_is_an_error() {
        let mut cfg = two_classes();
        cfg.rules[0].class = "nope".into();
        let e = Htb::<()>::new(&cfg, LinkInfo::new(Bitrate::mbps(50)), &mut Rng::new(1)).err();
        assert!(matches!(e, Some(Error::UnknownClass { .. })), "{e:?}");
        let mut cfg = two_classes();
        cfg.default_class = Some("gone".into());
        assert!(matches!(
            Htb::<()>::new(&cfg, LinkInfo::new(Bitrate::mbps(50)), &mut Rng::new(1)),
            Err(Error::UnknownClass { .. })
        ));
        let mut cfg = two_classes();
        cfg.classes[0].rate = Bitrate::ZERO;
        assert!(Htb::<()>::new(&cfg, LinkInfo::new(Bitrate::mbps(50)), &mut Rng::new(1)).is_err());
        assert!(
            Htb::<()>::new(
                &HtbConfig::default(),
                LinkInfo::new(Bitrate::mbps(50)),
                &mut Rng::new(1)
            )
            .is_err()
        );
    }

    #[test]
    fn deserialises_with_child_qdiscs() {
        let cfg: HtbConfig = toml::from_str(
            r#"
            default_class = "be"
            [[classes]]
            name = "cg"
            rate = "10Mbit"
            ceil = "50Mbit"
            prio = 0
            qdisc = { kind = "sfq", limit = { packets = 63 } }
            [[classes]]
            name = "be"
            rate = "40Mbit"
            ceil = "50Mbit"
            prio = 1
            qdisc = { kind = "pfifo", limit = { packets = 250 } }
            [[rules]]
            class = "cg"
            protocol = 17
            dst = "10.1.0.0/16"
            "#,
        )
        .unwrap();
        assert_eq!(cfg.classes.len(), 2);
        assert_eq!(cfg.rules[0].matches.protocol, Some(Protocol::UDP));
        Htb::<()>::new(&cfg, LinkInfo::new(Bitrate::mbps(50)), &mut Rng::new(1)).unwrap();
    }
}
