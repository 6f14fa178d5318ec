//! IP header inspection and ECN rewriting for the TUN forwarder.
//!
//! The forwarder sees raw IPv4/IPv6 packets (TUN with `IFF_NO_PI`). It needs the flow identity
//! (5-tuple, for flow-queueing qdiscs and per-flow metrics), the ECN field (RFC 3168 §5) and the
//! ability to set CE. Setting CE in IPv4 changes the TOS byte, so the header checksum is updated
//! incrementally (RFC 1624 eqn. 3); IPv6 has no header checksum (RFC 8200 §3).

use cg_types::Ecn;

/// Transport protocol numbers we name in logs.
pub const PROTO_TCP: u8 = 6;
/// UDP.
pub const PROTO_UDP: u8 = 17;

/// The 5-tuple of a packet (addresses as 16 bytes; IPv4 is mapped into the last four).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct FiveTuple {
    /// Source address (IPv4 in the last four bytes).
    pub src: [u8; 16],
    /// Destination address.
    pub dst: [u8; 16],
    /// Source port (0 when the protocol has none).
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
    /// IP protocol number (IPv6: the first next-header value).
    pub proto: u8,
}

impl FiveTuple {
    /// A stable 64-bit hash (FNV-1a), used as flow identity by the bottleneck.
    pub fn hash64(&self) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut eat = |b: u8| {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        };
        self.src.iter().for_each(|b| eat(*b));
        self.dst.iter().for_each(|b| eat(*b));
        self.sport.to_be_bytes().iter().for_each(|b| eat(*b));
        self.dport.to_be_bytes().iter().for_each(|b| eat(*b));
        eat(self.proto);
        h
    }
}

/// What the forwarder learns from one packet's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Flow identity.
    pub tuple: FiveTuple,
    /// ECN code point on arrival.
    pub ecn: Ecn,
    /// DSCP (upper six bits of TOS / traffic class).
    pub dscp: u8,
}

/// Parses the IP header; `None` for anything that is not a well-formed IPv4/IPv6 header
/// (such packets are still forwarded, as flow 0 and Not-ECT).
pub fn parse(pkt: &[u8]) -> Option<Header> {
    match pkt.first()? >> 4 {
        4 => parse_v4(pkt),
        6 => parse_v6(pkt),
        _ => None,
    }
}

fn parse_v4(pkt: &[u8]) -> Option<Header> {
    if pkt.len() < 20 {
        return None;
    }
    let ihl = usize::from(pkt[0] & 0x0f) * 4;
    if ihl < 20 || pkt.len() < ihl {
        return None;
    }
    let tos = pkt[1];
    let proto = pkt[9];
    let mut tuple = FiveTuple {
        proto,
        ..FiveTuple::default()
    };
    tuple.src[12..].copy_from_slice(&pkt[12..16]);
    tuple.dst[12..].copy_from_slice(&pkt[16..20]);
    // Ports only in the first fragment.
    let frag_offset = u16::from_be_bytes([pkt[6], pkt[7]]) & 0x1fff;
    if frag_offset == 0 {
        ports(proto, &pkt[ihl..], &mut tuple);
    }
    Some(Header {
        tuple,
        ecn: Ecn::from_bits(tos),
        dscp: tos >> 2,
    })
}

fn parse_v6(pkt: &[u8]) -> Option<Header> {
    if pkt.len() < 40 {
        return None;
    }
    let tclass = (pkt[0] << 4) | (pkt[1] >> 4);
    let proto = pkt[6];
    let mut tuple = FiveTuple {
        proto,
        ..FiveTuple::default()
    };
    tuple.src.copy_from_slice(&pkt[8..24]);
    tuple.dst.copy_from_slice(&pkt[24..40]);
    ports(proto, &pkt[40..], &mut tuple);
    Some(Header {
        tuple,
        ecn: Ecn::from_bits(tclass),
        dscp: tclass >> 2,
    })
}

fn ports(proto: u8, l4: &[u8], tuple: &mut FiveTuple) {
    if (proto == PROTO_TCP || proto == PROTO_UDP) && l4.len() >= 4 {
        tuple.sport = u16::from_be_bytes([l4[0], l4[1]]);
        tuple.dport = u16::from_be_bytes([l4[2], l4[3]]);
    }
}

/// Rewrites the ECN field of `pkt` to `ecn`; IPv4's header checksum is updated incrementally
/// (RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m')). Returns false (and leaves the packet alone)
/// when it is not a well-formed IP header.
pub fn set_ecn(pkt: &mut [u8], ecn: Ecn) -> bool {
    match pkt.first().map(|b| b >> 4) {
        Some(4) if pkt.len() >= 20 => {
            let old_word = u16::from_be_bytes([pkt[0], pkt[1]]);
            pkt[1] = (pkt[1] & !0b11) | ecn.bits();
            let new_word = u16::from_be_bytes([pkt[0], pkt[1]]);
            let hc = u16::from_be_bytes([pkt[10], pkt[11]]);
            let mut sum = u32::from(!hc) + u32::from(!old_word) + u32::from(new_word);
            while sum > 0xffff {
                sum = (sum & 0xffff) + (sum >> 16);
            }
            let new_hc = !(sum as u16);
            pkt[10..12].copy_from_slice(&new_hc.to_be_bytes());
            true
        }
        Some(6) if pkt.len() >= 40 => {
            // Traffic class spans the low nibble of byte 0 and the high nibble of byte 1;
            // the ECN bits are bits 4..5 of byte 1.
            pkt[1] = (pkt[1] & !0x30) | (ecn.bits() << 4);
            true
        }
        _ => false,
    }
}

/// The IPv4 header checksum of `hdr` (RFC 791 §3.1), computed from scratch: used by tests and
/// to verify the incremental update.
pub fn ipv4_checksum(hdr: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for (i, chunk) in hdr.chunks(2).enumerate() {
        if i == 5 {
            continue; // the checksum field itself
        }
        let word = u16::from_be_bytes([chunk[0], *chunk.get(1).unwrap_or(&0)]);
        sum += u32::from(word);
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4_udp(tos: u8) -> Vec<u8> {
        let mut p = vec![
            0x45, tos, 0, 28, 0x12, 0x34, 0x40, 0, 64, 17, 0, 0, 10, 0, 1, 2, 10, 0, 2, 2, 0x13,
            0x88, 0x13, 0x89, 0, 8, 0, 0,
        ];
        let c = ipv4_checksum(&p[..20]);
        p[10..12].copy_from_slice(&c.to_be_bytes());
        p
    }

    #[test]
    fn ipv4_header_gives_tuple_and_ecn() {
        let p = v4_udp(0b1011_1001);
        let h = parse(&p).unwrap();
        assert_eq!(h.ecn, Ecn::Ect1);
        assert_eq!(h.dscp, 0b101110);
        assert_eq!(h.tuple.sport, 5000);
        assert_eq!(h.tuple.dport, 5001);
        assert_eq!(h.tuple.proto, PROTO_UDP);
        assert_eq!(&h.tuple.src[12..], &[10, 0, 1, 2]);
    }

    #[test]
    fn setting_ce_keeps_ipv4_checksum_valid() {
        for tos in [0x00, 0x01, 0x02, 0xb9, 0xfe, 0xff] {
            let mut p = v4_udp(tos);
            assert!(set_ecn(&mut p, Ecn::Ce));
            assert_eq!(parse(&p).unwrap().ecn, Ecn::Ce);
            assert_eq!(p[1] >> 2, tos >> 2, "DSCP untouched");
            let stored = u16::from_be_bytes([p[10], p[11]]);
            assert_eq!(stored, ipv4_checksum(&p[..20]), "tos {tos:#x}");
        }
    }

    #[test]
    fn ipv6_traffic_class_ecn_is_read_and_set() {
        let mut p = vec![0u8; 48];
        p[0] = 0x6b; // version 6, traffic class high nibble 0xb
        p[1] = 0x90; // traffic class low nibble 0x9 → tclass 0xb9 → ECT(1)
        p[6] = PROTO_TCP;
        p[40..44].copy_from_slice(&[0x00, 0x50, 0x01, 0xbb]);
        let h = parse(&p).unwrap();
        assert_eq!(h.ecn, Ecn::Ect1);
        assert_eq!(h.tuple.sport, 80);
        assert_eq!(h.tuple.dport, 443);
        assert!(set_ecn(&mut p, Ecn::Ce));
        let h = parse(&p).unwrap();
        assert_eq!(h.ecn, Ecn::Ce);
        assert_eq!(h.dscp, 0xb9 >> 2);
    }

    #[test]
    fn garbage_is_not_parsed_and_not_modified() {
        for bad in [&[][..], &[0x45, 0, 0][..], &[0x7f; 40][..], &[0x4f; 20][..]] {
            assert!(parse(bad).is_none());
            let mut copy = bad.to_vec();
            if !(bad.len() >= 20 && bad[0] >> 4 == 4) {
                assert!(!set_ecn(&mut copy, Ecn::Ce));
                assert_eq!(copy, bad);
            }
        }
    }
}
