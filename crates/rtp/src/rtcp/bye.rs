//! BYE (RFC 3550 §6.6): the sources leaving the session, and an optional reason.
//!
//! ```text
//!        0                   1                   2                   3
//!        0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//!       +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//!       |V=2|P|    SC   |   PT=BYE=203  |             length            |
//!       +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//!       |                           SSRC/CSRC                           |
//!       +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//!       :                              ...                              :
//!       +=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+
//! (opt) |     length    |               reason for leaving            ...
//!       +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! Our own parser rather than `rtc-rtcp`'s `Goodbye`, so that every length is checked here
//! against the one sub-packet [`super::parse`] hands over: the source count against the
//! packet, the reason's length octet against what follows it, and RTCP padding (P bit, the
//! last octet counting the padding, RFC 3550 §6.4.1) against the packet. Octets after the
//! reason (the null padding to the 32-bit boundary) are ignored.

use crate::Error;

/// RTCP packet type of BYE.
pub const PT_BYE: u8 = 203;

/// A parsed BYE.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Bye {
    /// The SSRC/CSRC identifiers leaving (SC of them, at most 31).
    pub sources: Vec<u32>,
    /// The reason for leaving, if given and non-empty (UTF-8 per RFC 3550 §6.6; invalid
    /// sequences are replaced, not rejected: it is for people to read).
    pub reason: Option<String>,
}

impl Bye {
    /// Parses one BYE sub-packet (header included, exactly as long as its length field says).
    pub fn parse(p: &[u8]) -> Result<Self, Error> {
        let bad = |why: &str| Error::MalformedRtcp(format!("BYE: {why}"));
        if p.len() < 4 || p[1] != PT_BYE {
            return Err(bad("not a BYE packet"));
        }
        let mut end = p.len();
        if p[0] & 0x20 != 0 {
            let pad = usize::from(p[end - 1]);
            if pad == 0 || pad > end - 4 {
                return Err(bad("padding count outside the packet"));
            }
            end -= pad;
        }
        let body = &p[4..end];
        let count = usize::from(p[0] & 0x1F);
        let Some((ids, rest)) = body.split_at_checked(4 * count) else {
            return Err(bad("source count overruns the packet"));
        };
        let sources = ids
            .chunks_exact(4)
            .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let reason = match rest.split_first() {
            None => None,
            Some((&len, text)) => {
                let Some(text) = text.get(..usize::from(len)) else {
                    return Err(bad("reason length overruns the packet"));
                };
                (!text.is_empty()).then(|| String::from_utf8_lossy(text).into_owned())
            }
        };
        Ok(Self { sources, reason })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtc_rtcp::goodbye::Goodbye;
    use rtc_shared::marshal::Marshal;

    fn rtc_rtcp_bye(sources: Vec<u32>, reason: &str) -> Vec<u8> {
        Goodbye {
            sources,
            reason: bytes::Bytes::copy_from_slice(reason.as_bytes()),
        }
        .marshal()
        .unwrap()
        .to_vec()
    }

    #[test]
    fn parses_what_rtc_rtcp_writes() {
        let b = Bye::parse(&rtc_rtcp_bye(vec![0x6367_0001], "")).unwrap();
        assert_eq!(
            b,
            Bye {
                sources: vec![0x6367_0001],
                reason: None
            }
        );
        for reason in ["x", "end", "stream ended", "é ✓ unicode"] {
            let b = Bye::parse(&rtc_rtcp_bye(vec![1, 2, 3], reason)).unwrap();
            assert_eq!(b.sources, vec![1, 2, 3]);
            assert_eq!(b.reason.as_deref(), Some(reason));
        }
    }

    #[test]
    fn no_sources_and_no_reason_is_valid() {
        assert_eq!(Bye::parse(&[0x80, 203, 0, 0]).unwrap(), Bye::default());
    }

    #[test]
    fn a_source_count_beyond_the_packet_is_an_error() {
        // SC = 31, one SSRC present.
        assert!(Bye::parse(&[0x9F, 203, 0, 1, 0, 0, 0, 1]).is_err());
        // SC = 2, one SSRC present.
        assert!(Bye::parse(&[0x82, 203, 0, 1, 0, 0, 0, 1]).is_err());
    }

    #[test]
    fn a_reason_length_beyond_the_packet_is_an_error() {
        // Reason length 255 with 3 octets after it.
        assert!(Bye::parse(&[0x81, 203, 0, 2, 0, 0, 0, 1, 255, b'a', b'b', b'c']).is_err());
        // Reason length 4 with 3 octets after it: off by one.
        assert!(Bye::parse(&[0x81, 203, 0, 2, 0, 0, 0, 1, 4, b'a', b'b', b'c']).is_err());
        // Reason length 3 fits exactly.
        let b = Bye::parse(&[0x81, 203, 0, 2, 0, 0, 0, 1, 3, b'a', b'b', b'c']).unwrap();
        assert_eq!(b.reason.as_deref(), Some("abc"));
    }

    #[test]
    fn padding_is_checked_and_removed() {
        // One SSRC, then 4 octets of padding (count 4 in the last octet).
        let b = Bye::parse(&[0xA1, 203, 0, 2, 0, 0, 0, 9, 0, 0, 0, 4]).unwrap();
        assert_eq!(b.sources, vec![9]);
        assert_eq!(b.reason, None);
        // The padding would cover the reason's text: the length now overruns.
        assert!(Bye::parse(&[0xA1, 203, 0, 2, 0, 0, 0, 9, 3, b'a', b'b', 2]).is_err());
        // Padding counts of 0 and beyond the packet.
        assert!(Bye::parse(&[0xA0, 203, 0, 1, 0, 0, 0, 0]).is_err());
        assert!(Bye::parse(&[0xA0, 203, 0, 1, 0, 0, 0, 9]).is_err());
        assert!(Bye::parse(&[0xA0, 203, 0, 0]).is_err());
    }

    #[test]
    fn invalid_utf8_in_the_reason_is_replaced() {
        let b = Bye::parse(&[0x80, 203, 0, 1, 2, 0xFF, b'a', 0]).unwrap();
        assert_eq!(b.reason.as_deref(), Some("\u{FFFD}a"));
    }

    #[test]
    fn no_input_panics() {
        // Every short packet with every first octet; every length octet in a 12-byte packet.
        for b0 in 0..=255u8 {
            for len in 0..16 {
                let mut p = vec![b0, 203];
                p.extend((0..len).map(|i| (i as u8).wrapping_mul(37) ^ b0));
                let _ = Bye::parse(&p);
            }
            let _ = Bye::parse(&[0x81, 203, 0, 2, 0, 0, 0, 1, b0, 1, 2, 3]);
            let _ = Bye::parse(&[0xA1, 203, 0, 2, 0, 0, 0, 1, 1, 1, 2, b0]);
        }
        assert!(Bye::parse(&[]).is_err());
        assert!(Bye::parse(&[0x80]).is_err());
    }
}
