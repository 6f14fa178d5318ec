//! The packet model: what the link needs to know about a packet, and the caller's payload.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Instant;

use cg_types::{DataSize, Ecn};
use serde::{Deserialize, Serialize};

/// An opaque packet identifier chosen by the caller (e.g. a sequence number it maps back to the
/// datagram's bytes). Events carry it, so a driver can follow one packet through the link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct PacketId(pub u64);

/// IP protocol numbers used by [`FlowId`] (IANA "Assigned Internet Protocol Numbers").
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
pub struct Protocol(pub u8);

impl Protocol {
    /// TCP (6).
    pub const TCP: Protocol = Protocol(6);
    /// UDP (17).
    pub const UDP: Protocol = Protocol(17);
}

/// The 5-tuple that identifies a flow: what FQ qdiscs hash and HTB rules match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct FlowId {
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// Source port (0 for protocols without ports).
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// IP protocol number.
    pub protocol: Protocol,
}

impl FlowId {
    /// A UDP flow for tests: `10.0.x.y:(5000+i) → 10.1.x.y:(6000+i)` where `x.y` encodes `i`.
    /// Distinct indices give distinct flows; [`FlowId::index`] gives `i` back.
    pub fn from_index(i: u16) -> Self {
        let [hi, lo] = i.to_be_bytes();
        FlowId {
            src: IpAddr::V4(Ipv4Addr::new(10, 0, hi, lo)),
            dst: IpAddr::V4(Ipv4Addr::new(10, 1, hi, lo)),
            src_port: 5000u16.wrapping_add(i),
            dst_port: 6000u16.wrapping_add(i),
            protocol: Protocol::UDP,
        }
    }

    /// The `i` of a flow made by [`FlowId::from_index`] (or its [`FlowId::reversed`]).
    pub fn index(&self) -> Option<u16> {
        match (self.src, self.dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                let (s, d) = (s.octets(), d.octets());
                let i = u16::from_be_bytes([s[2], s[3]]);
                let ok = s[..2] == [10, 0] && d[..2] == [10, 1]
                    || s[..2] == [10, 1] && d[..2] == [10, 0];
                (ok && s[2..] == d[2..]).then_some(i)
            }
            _ => None,
        }
    }

    /// The same flow seen from the other end (addresses and ports swapped).
    pub fn reversed(&self) -> Self {
        FlowId {
            src: self.dst,
            dst: self.src,
            src_port: self.dst_port,
            dst_port: self.src_port,
            protocol: self.protocol,
        }
    }

    /// A fast 32-bit hash of the 5-tuple, keyed by `perturbation` (Linux's `skb_get_hash`
    /// analogue; SFQ re-keys it when it perturbs). Not cryptographic; stable across versions.
    pub fn hash32(&self, perturbation: u32) -> u32 {
        fn addr(a: IpAddr) -> u128 {
            match a {
                IpAddr::V4(v) => u32::from(v) as u128,
                IpAddr::V6(v) => u128::from(v),
            }
        }
        const K: u64 = 0x9E37_79B9_7F4A_7C15;
        let (s, d) = (addr(self.src), addr(self.dst));
        let ports =
            (self.src_port as u64) << 24 | (self.dst_port as u64) << 8 | self.protocol.0 as u64;
        let mut h = (perturbation as u64) ^ K;
        for w in [
            s as u64,
            (s >> 64) as u64,
            d as u64,
            (d >> 64) as u64,
            ports,
        ] {
            h = (h ^ w).wrapping_mul(K);
            h ^= h >> 29;
        }
        (h ^ (h >> 32)) as u32
    }
}

impl fmt::Display for FlowId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{} → {}:{} proto {}",
            self.src, self.src_port, self.dst, self.dst_port, self.protocol.0
        )
    }
}

/// A DiffServ code point: the upper six bits of the IPv4 TOS / IPv6 Traffic Class (RFC 2474).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(try_from = "u8", into = "u8")]
pub struct Dscp(u8);

impl Dscp {
    /// Default forwarding (CS0).
    pub const DEFAULT: Dscp = Dscp(0);
    /// Expedited forwarding (46, RFC 3246).
    pub const EF: Dscp = Dscp(46);

    /// A code point from its 6-bit value; `None` above 63.
    pub const fn new(value: u8) -> Option<Self> {
        if value < 64 { Some(Dscp(value)) } else { None }
    }

    /// The code point in the upper six bits of `tos`.
    pub const fn from_tos(tos: u8) -> Self {
        Dscp(tos >> 2)
    }

    /// The 6-bit value.
    pub const fn value(self) -> u8 {
        self.0
    }
}

impl TryFrom<u8> for Dscp {
    type Error = String;
    fn try_from(v: u8) -> Result<Self, String> {
        Dscp::new(v).ok_or_else(|| format!("DSCP {v} is above 63"))
    }
}

impl From<Dscp> for u8 {
    fn from(d: Dscp) -> u8 {
        d.0
    }
}

/// One packet crossing the link, with the caller's `payload` riding along.
///
/// The link reads `size`, `flow`, `dscp` and `ecn`, may set `ecn` to CE, and stamps `arrival`
/// when the packet enters it. The payload is never inspected: it is whatever the driver needs
/// to put the packet back on the wire (bytes for netlab, a struct for simulated tests, `()` for
/// benchmarks that only need the id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<P = ()> {
    /// The caller's identifier.
    pub id: PacketId,
    /// Bytes on the wire, as the link counts them for serialisation and byte limits.
    pub size: DataSize,
    /// The 5-tuple.
    pub flow: FlowId,
    /// DiffServ code point.
    pub dscp: Dscp,
    /// ECN code point; a marking AQM sets it to [`Ecn::Ce`].
    pub ecn: Ecn,
    /// When the packet entered the link (set by [`crate::Link::handle_packet`]; qdiscs
    /// measure sojourn from [`Packet::enqueued`], which they stamp themselves).
    pub arrival: Instant,
    /// When the packet entered the queue discipline holding it.
    pub enqueued: Instant,
    /// The caller's payload.
    pub payload: P,
}

impl<P> Packet<P> {
    /// A packet of `size` bytes on `flow`, arriving at `now`, Not-ECT, DSCP 0.
    pub fn new(id: PacketId, flow: FlowId, size: DataSize, now: Instant, payload: P) -> Self {
        Packet {
            id,
            size,
            flow,
            dscp: Dscp::DEFAULT,
            ecn: Ecn::NotEct,
            arrival: now,
            enqueued: now,
            payload,
        }
    }

    /// The same packet with ECN code point `ecn`.
    pub fn with_ecn(mut self, ecn: Ecn) -> Self {
        self.ecn = ecn;
        self
    }

    /// The same packet with DSCP `dscp`.
    pub fn with_dscp(mut self, dscp: Dscp) -> Self {
        self.dscp = dscp;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_flows_are_distinct_and_round_trip() {
        let a = FlowId::from_index(1);
        let b = FlowId::from_index(300);
        assert_ne!(a, b);
        assert_eq!(a.index(), Some(1));
        assert_eq!(b.index(), Some(300));
        assert_eq!(b.reversed().index(), Some(300));
        assert_ne!(a.hash32(0), b.hash32(0));
        assert_ne!(a.hash32(0), a.hash32(1), "perturbation changes the hash");
    }

    #[test]
    fn hash_spreads_index_flows_over_buckets() {
        let mut used = [false; 1024];
        for i in 0..1024 {
            used[(FlowId::from_index(i).hash32(7) % 1024) as usize] = true;
        }
        let n = used.iter().filter(|u| **u).count();
        // A random function fills ~63 % of 1024 buckets with 1024 keys.
        assert!(n > 600, "{n} buckets used");
    }

    #[test]
    fn dscp_rejects_values_above_63() {
        assert_eq!(Dscp::new(46), Some(Dscp::EF));
        assert_eq!(Dscp::new(64), None);
        assert_eq!(Dscp::from_tos(0xb8 | 0b01), Dscp::EF);
    }
}
