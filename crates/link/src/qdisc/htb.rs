//! HTB: hierarchical token bucket (Devera 2002; Linux `sch_htb`, `tc-htb(8)`).
//!
//! A tree of classes under a root whose rate is the link's. Every class has a guaranteed
//! `rate`, a `ceil` it may borrow up to, token buckets of `burst` / `cburst` bytes, a `prio`
//! (lower borrows spare bandwidth first) and a DRR `quantum`; a class is inner if another
//! names it as `parent`, otherwise it is a leaf with its own child qdisc. Packets are
//! classified onto leaves by ordered rules on the 5-tuple, DSCP and ECN; unmatched packets go
//! to `default_class`, or, if none is set, to Linux's unshaped direct queue.
//!
//! Each class is in one of Linux's three modes: *can send* (ctokens ≥ 0 and tokens ≥ 0),
//! *may borrow* (ctokens ≥ 0, tokens < 0) or *can't send* (ctokens < 0). A leaf may send
//! from the nearest ancestor that can send if every class below it may borrow; the root lends
//! while it has tokens. Dequeue follows `htb_dequeue`: sending at a leaf's own rate first,
//! then borrowing from the deepest lender (Linux's lowest level), the root last; within that,
//! the lowest `prio`; DRR (a deficit per lending level) among equals. Sending `len` bytes charges every class on the
//! path its ctokens, and the lender and its ancestors their tokens (`htb_charge_class`). When
//! nothing may send, [`Qdisc::poll_timeout`] is the earliest instant a leaf may send again
//! (Linux's watchdog).

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
    /// The class this one borrows from. Default: the root.
    #[serde(default)]
    pub parent: Option<String>,
    /// DRR quantum. Default rate / r2q, clamped to [MTU, 200 000 B] (Linux).
    #[serde(default)]
    pub quantum: Option<DataSize>,
    /// The class's own queue (leaves only). Default `pfifo` 1000 packets (Linux's default
    /// leaf qdisc).
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
            parent: None,
            quantum: None,
            qdisc: None,
        }
    }

    /// This class under `parent`.
    pub fn with_parent(mut self, parent: &str) -> Self {
        self.parent = Some(parent.to_owned());
        self
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

/// Deepest class tree (Linux `TC_HTB_MAXDEPTH`, counting its root class, which is our root).
const MAX_DEPTH: usize = 7;
/// Lending ranks: 0 = the leaf's own rate, 1..=MAX_DEPTH = an inner class (deeper ones lend
/// first, as Linux's lower levels do), MAX_DEPTH + 1 = the root.
const RANKS: usize = MAX_DEPTH + 2;

struct Class<P> {
    name: String,
    prio: u8,
    quantum: i64,
    /// DRR deficit per lending rank (Linux `leaf.deficit[level]`).
    deficit: [i64; RANKS],
    depth: usize,
    tokens: Bucket,
    ctokens: Bucket,
    parent: Option<usize>,
    /// The child qdisc of a leaf; `None` for an inner class.
    q: Option<BoxQdisc<P>>,
}

impl<P> Class<P> {
    fn backlogged(&self) -> bool {
        self.q.as_ref().is_some_and(|q| !q.is_empty())
    }
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
    /// Per prio and lending rank: the class index where DRR resumes.
    rr: [[usize; RANKS]; 8],
    last: Option<Instant>,
    wake_at: Option<Instant>,
}

/// Where a leaf may send from: the lender's rank (see [`RANKS`]) and index (`None`: the root).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Lender {
    rank: usize,
    class: Option<usize>,
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
        let names: Vec<&str> = config.classes.iter().map(|c| c.name.as_str()).collect();
        for (i, n) in names.iter().enumerate() {
            if names[..i].contains(n) {
                return Err(Error::DuplicateClass((*n).to_owned()));
            }
        }
        let find = |name: &str, what: String| {
            names
                .iter()
                .position(|n| *n == name)
                .ok_or_else(|| Error::UnknownClass {
                    what,
                    class: name.to_owned(),
                })
        };
        let parents = config
            .classes
            .iter()
            .map(|c| match &c.parent {
                Some(p) => find(p, format!("class `{}` parent", c.name)).map(Some),
                None => Ok(None),
            })
            .collect::<Result<Vec<_>, Error>>()?;
        // Every parent chain must reach the root (no cycles) within Linux's depth.
        let mut depths = Vec::with_capacity(parents.len());
        for (i, c) in config.classes.iter().enumerate() {
            let mut node = parents[i];
            let mut steps = 0;
            while let Some(n) = node {
                steps += 1;
                if steps > parents.len() {
                    return Err(Error::InvalidParameter {
                        what: "HTB class parent",
                        reason: format!("class `{}` is its own ancestor", c.name),
                    });
                }
                node = parents[n];
            }
            if steps >= MAX_DEPTH {
                return Err(Error::InvalidParameter {
                    what: "HTB class parent",
                    reason: format!(
                        "class `{}` is nested deeper than {MAX_DEPTH} levels",
                        c.name
                    ),
                });
            }
            depths.push(steps);
        }
        let is_inner = |i: usize| parents.contains(&Some(i));
        let mut classes: Vec<Class<P>> = Vec::with_capacity(config.classes.len());
        for (i, c) in config.classes.iter().enumerate() {
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
            let q = if is_inner(i) {
                if c.qdisc.is_some() {
                    return Err(Error::InvalidParameter {
                        what: "HTB class qdisc",
                        reason: format!(
                            "class `{}` is an inner class (it has children); only leaves hold packets",
                            c.name
                        ),
                    });
                }
                None
            } else {
                let child_cfg = c.qdisc.as_deref().cloned().unwrap_or_default();
                Some(child_cfg.build(LinkInfo { rate: c.rate, mtu }, rng)?)
            };
            classes.push(Class {
                name: c.name.clone(),
                prio: c.prio,
                quantum: quantum as i64,
                deficit: [quantum as i64; RANKS],
                depth: depths[i],
                tokens: bucket(c.rate, c.burst),
                ctokens: bucket(ceil, c.cburst),
                parent: parents[i],
                q,
            });
        }
        let leaf = |name: &str, what: String| {
            let i = find(name, what.clone())?;
            if is_inner(i) {
                return Err(Error::InvalidParameter {
                    what: "HTB classification",
                    reason: format!("{what} names inner class `{name}`; packets go to leaves"),
                });
            }
            Ok(i)
        };
        let rules = config
            .rules
            .iter()
            .enumerate()
            .map(|(i, r)| {
                Ok((
                    r.matches.clone(),
                    leaf(&r.class, format!("rule {}", i + 1))?,
                ))
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let default = match &config.default_class {
            Some(name) => Some(leaf(name, "default_class".into())?),
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
            rr: [[0; RANKS]; 8],
            last: None,
            wake_at: None,
        })
    }
}

impl<P> Htb<P> {
    /// The leaf class a packet goes to (`None`: the direct queue).
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

    /// Packets queued in class `i` (0 for inner classes).
    pub fn class_len(&self, i: usize) -> usize {
        self.classes
            .get(i)
            .and_then(|c| c.q.as_ref())
            .map_or(0, |q| q.len())
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

    /// Where leaf `i` may send from now, if anywhere (Linux's class modes, see module docs).
    fn lender(&self, i: usize) -> Option<Lender> {
        let mut node = Some(i);
        while let Some(n) = node {
            let c = &self.classes[n];
            if c.ctokens.tokens < 0.0 {
                return None;
            }
            if c.tokens.tokens >= 0.0 {
                let rank = if n == i { 0 } else { MAX_DEPTH - c.depth };
                return Some(Lender {
                    rank,
                    class: Some(n),
                });
            }
            node = c.parent;
        }
        (self.root.tokens >= 0.0).then_some(Lender {
            rank: MAX_DEPTH + 1,
            class: None,
        })
    }

    /// The leaf to serve: lowest lending rank, then lowest prio, DRR within that group.
    fn pick(&mut self) -> Option<(usize, Lender)> {
        let mut best: Option<(usize, u8)> = None;
        for (i, c) in self.classes.iter().enumerate() {
            if !c.backlogged() {
                continue;
            }
            if let Some(l) = self.lender(i) {
                let key = (l.rank, c.prio);
                if best.is_none_or(|b| key < b) {
                    best = Some(key);
                }
            }
        }
        let (rank, prio) = best?;
        let n = self.classes.len();
        let start = self.rr[prio as usize][rank] % n;
        // At most two passes: one to top up deficits, one to find a class with credit.
        for k in 0..2 * n + 1 {
            let i = (start + k) % n;
            if self.classes[i].prio != prio || !self.classes[i].backlogged() {
                continue;
            }
            let Some(l) = self.lender(i).filter(|l| l.rank == rank) else {
                continue;
            };
            let c = &mut self.classes[i];
            if c.deficit[rank] <= 0 {
                c.deficit[rank] += c.quantum;
                continue;
            }
            self.rr[prio as usize][rank] = i;
            return Some((i, l));
        }
        None
    }

    /// `htb_charge_class`: ctokens all the way up; tokens from the lender up.
    fn charge(&mut self, leaf: usize, lender: Lender, len: f64) {
        let mut node = Some(leaf);
        let mut lent = false;
        while let Some(n) = node {
            lent |= lender.class == Some(n);
            let c = &mut self.classes[n];
            c.ctokens.tokens -= len;
            if lent {
                c.tokens.tokens -= len;
            }
            node = c.parent;
        }
        self.root.tokens -= len;
    }

    /// Earliest instant a backlogged leaf may send again.
    fn next_send_time(&self, now: Instant) -> Option<Instant> {
        let mut best: Option<Duration> = None;
        for (i, c) in self.classes.iter().enumerate() {
            if !c.backlogged() {
                continue;
            }
            // For each possible lender on the path: the wait for every ctokens up to it and
            // for its own tokens; the leaf's wait is the shortest of these.
            let mut ceil_wait = Duration::ZERO;
            let mut node = Some(i);
            let mut wait: Option<Duration> = None;
            while let Some(n) = node {
                let k = &self.classes[n];
                ceil_wait = ceil_wait.max(k.ctokens.wait());
                let w = ceil_wait.max(k.tokens.wait());
                wait = Some(wait.map_or(w, |x| x.min(w)));
                node = k.parent;
            }
            let w = ceil_wait.max(self.root.wait());
            let wait = wait.map_or(w, |x| x.min(w));
            best = Some(best.map_or(wait, |b| b.min(wait)));
        }
        best.map(|d| now + d)
    }
}

impl<P: Send> Qdisc<P> for Htb<P> {
    fn enqueue(&mut self, mut packet: Packet<P>, now: Instant, events: &mut dyn EventSink) {
        self.refill(now);
        self.wake_at = None;
        match self.classify(&packet) {
            Some(i) => match &mut self.classes[i].q {
                Some(q) => q.enqueue(packet, now, events),
                None => report_drop(&packet, DropReason::Unclassified, now, events),
            },
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
            let Some((i, lender)) = self.pick() else {
                self.wake_at = self.next_send_time(now);
                return None;
            };
            let c = &mut self.classes[i];
            let q = c.q.as_mut().expect("pick only returns backlogged leaves");
            match q.dequeue(now, events) {
                Some(p) => {
                    c.deficit[lender.rank] -= p.size.as_bytes() as i64;
                    if c.deficit[lender.rank] <= 0 {
                        // Move on within this prio and rank next time (DRR).
                        self.rr[c.prio as usize][lender.rank] = i + 1;
                    }
                    self.charge(i, lender, p.size.as_bytes_f64());
                    self.wake_at = None;
                    return Some(p);
                }
                // The child dropped everything it held (an AQM): look again.
                None => continue,
            }
        }
    }

    fn peek(&self) -> Option<&Packet<P>> {
        self.direct.front().or_else(|| {
            self.classes
                .iter()
                .find_map(|c| c.q.as_ref().and_then(|q| q.peek()))
        })
    }

    fn len(&self) -> usize {
        self.direct.len()
            + self
                .classes
                .iter()
                .filter_map(|c| c.q.as_ref())
                .map(|q| q.len())
                .sum::<usize>()
    }

    fn bytes(&self) -> DataSize {
        DataSize::bytes(self.direct_bytes)
            + self
                .classes
                .iter()
                .filter_map(|c| c.q.as_ref())
                .map(|q| q.bytes())
                .sum()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.classes
            .iter()
            .filter_map(|c| c.q.as_ref()?.poll_timeout())
            .chain(self.wake_at)
            .min()
    }

    fn handle_timeout(&mut self, now: Instant, events: &mut dyn EventSink) {
        if self.wake_at.is_some_and(|w| w <= now) {
            self.wake_at = None;
        }
        for q in self.classes.iter_mut().filter_map(|c| c.q.as_mut()) {
            if q.poll_timeout().is_some_and(|t| t <= now) {
                q.handle_timeout(now, events);
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

    /// Delivered Mb/s of test flow `f` over `[from, until)`.
    fn mbps(out: &[(Instant, crate::Packet)], f: u16, from: Instant, until: Instant) -> f64 {
        out.iter()
            .filter(|(t, p)| *t >= from && p.flow == FlowId::from_index(f))
            .map(|(_, p)| p.size.as_bytes())
            .sum::<u64>() as f64
            * 8.0
            / (until - from).as_secs_f64()
            / 1e6
    }

    fn rule(class: &str, port: u16) -> HtbRule {
        HtbRule {
            class: class.into(),
            matches: HtbMatch {
                dst_port: Some(6000 + port),
                ..HtbMatch::default()
            },
        }
    }

    fn saturate(cfg: &HtbConfig, rates: &[(u16, u64)]) -> Vec<f64> {
        let t0 = Instant::now();
        let link = Bitrate::mbps(50);
        let mut q = Htb::new(cfg, LinkInfo::new(link), &mut Rng::new(1)).unwrap();
        let mut src: Vec<Source> = rates
            .iter()
            .map(|&(f, r)| Source {
                flow: f,
                rate: Bitrate::mbps(r),
                size: 1500,
                ecn: Ecn::NotEct,
                next: t0,
            })
            .collect();
        let dur = Duration::from_secs(10);
        let (_, out) = run(&mut q, link, &mut src, t0, dur);
        rates
            .iter()
            .map(|&(f, _)| mbps(&out, f, t0 + Duration::from_secs(2), t0 + dur))
            .collect()
    }

    #[test]
    fn leaves_borrow_from_their_parent_before_the_root() {
        // a (30 Mb/s) holds a1 and a2 (5 Mb/s each, prio 1); b (20 Mb/s, prio 0) is a sibling
        // of a. All saturate: a's unused 20 Mb/s goes to its own children, not to b, although
        // b has the better prio — the hierarchy at work.
        let cfg = HtbConfig {
            classes: vec![
                HtbClassConfig::new("a", Bitrate::mbps(30), Bitrate::mbps(50), 1),
                HtbClassConfig::new("a1", Bitrate::mbps(5), Bitrate::mbps(50), 1).with_parent("a"),
                HtbClassConfig::new("a2", Bitrate::mbps(5), Bitrate::mbps(50), 1).with_parent("a"),
                HtbClassConfig::new("b", Bitrate::mbps(20), Bitrate::mbps(50), 0),
            ],
            rules: vec![rule("a1", 1), rule("a2", 2), rule("b", 3)],
            ..HtbConfig::default()
        };
        let r = saturate(&cfg, &[(1, 40), (2, 40), (3, 40)]);
        assert!(
            (r[0] - 15.0).abs() < 0.5 && (r[1] - 15.0).abs() < 0.5,
            "a1, a2: {r:?}"
        );
        assert!((r[2] - 20.0).abs() < 0.5, "b: {r:?}");
    }

    #[test]
    fn an_inner_ceil_caps_its_subtree() {
        let cfg = HtbConfig {
            classes: vec![
                HtbClassConfig::new("a", Bitrate::mbps(20), Bitrate::mbps(30), 0),
                HtbClassConfig::new("a1", Bitrate::mbps(10), Bitrate::mbps(50), 0).with_parent("a"),
                HtbClassConfig::new("a2", Bitrate::mbps(10), Bitrate::mbps(50), 0).with_parent("a"),
                HtbClassConfig::new("b", Bitrate::mbps(20), Bitrate::mbps(50), 0),
            ],
            rules: vec![rule("a1", 1), rule("a2", 2), rule("b", 3)],
            ..HtbConfig::default()
        };
        // b wants only 5 Mb/s; 45 are spare, but a may not exceed its 30 Mb/s ceil.
        let r = saturate(&cfg, &[(1, 40), (2, 40), (3, 5)]);
        assert!((r[0] + r[1] - 30.0).abs() < 0.5, "a's subtree: {r:?}");
        assert!(
            (r[0] - r[1]).abs() < 0.5,
            "equal children share equally: {r:?}"
        );
        assert!((r[2] - 5.0).abs() < 0.1, "b: {r:?}");
    }

    #[test]
    fn bad_hierarchies_are_errors() {
        let l = LinkInfo::new(Bitrate::mbps(50));
        let class = |n: &str| HtbClassConfig::new(n, Bitrate::mbps(1), Bitrate::mbps(50), 0);
        let cycle = HtbConfig {
            classes: vec![class("a").with_parent("b"), class("b").with_parent("a")],
            ..HtbConfig::default()
        };
        assert!(matches!(
            Htb::<()>::new(&cycle, l, &mut Rng::new(1)),
            Err(Error::InvalidParameter { .. })
        ));
        let orphan = HtbConfig {
            classes: vec![class("a").with_parent("zz")],
            ..HtbConfig::default()
        };
        assert!(matches!(
            Htb::<()>::new(&orphan, l, &mut Rng::new(1)),
            Err(Error::UnknownClass { .. })
        ));
        let to_inner = HtbConfig {
            classes: vec![class("a"), class("a1").with_parent("a")],
            rules: vec![rule("a", 1)],
            ..HtbConfig::default()
        };
        assert!(Htb::<()>::new(&to_inner, l, &mut Rng::new(1)).is_err());
        let inner_qdisc = HtbConfig {
            classes: vec![
                class("a").with_qdisc(QdiscConfig::default()),
                class("a1").with_parent("a"),
            ],
            ..HtbConfig::default()
        };
        assert!(Htb::<()>::new(&inner_qdisc, l, &mut Rng::new(1)).is_err());
        let dup = HtbConfig {
            classes: vec![class("a"), class("a")],
            ..HtbConfig::default()
        };
        assert!(matches!(
            Htb::<()>::new(&dup, l, &mut Rng::new(1)),
            Err(Error::DuplicateClass(_))
        ));
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
