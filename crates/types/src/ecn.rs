//! ECN code points (RFC 3168 §5, RFC 9331 for ECT(1) as the L4S identifier).

use std::fmt;
use std::str::FromStr;

/// The two ECN bits of the IPv4 TOS / IPv6 Traffic Class field.
///
/// The discriminants are the on-the-wire bit values (RFC 3168 §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum Ecn {
    /// `00`: not ECN-capable transport.
    #[default]
    NotEct = 0b00,
    /// `01`: ECN-capable, L4S identifier (RFC 9331 §4).
    Ect1 = 0b01,
    /// `10`: ECN-capable, classic (RFC 3168).
    Ect0 = 0b10,
    /// `11`: congestion experienced.
    Ce = 0b11,
}

impl Ecn {
    /// The code point in the two low bits of `tos` (the rest of the byte is ignored).
    pub const fn from_bits(tos: u8) -> Self {
        match tos & 0b11 {
            0b00 => Ecn::NotEct,
            0b01 => Ecn::Ect1,
            0b10 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }

    /// The two-bit wire value.
    pub const fn bits(self) -> u8 {
        self as u8
    }

    /// ECT(0), ECT(1) or CE: the transport declared itself ECN-capable.
    pub const fn is_ect(self) -> bool {
        !matches!(self, Ecn::NotEct)
    }

    /// Congestion experienced.
    pub const fn is_ce(self) -> bool {
        matches!(self, Ecn::Ce)
    }

    /// ECT(1) or CE: what a DualQ classifier sends to the L queue (RFC 9331 §5.1).
    pub const fn is_l4s(self) -> bool {
        self.bits() & 0b01 == 0b01
    }

    /// Short name as used in configs and logs: `not-ect`, `ect0`, `ect1`, `ce`.
    pub const fn name(self) -> &'static str {
        match self {
            Ecn::NotEct => "not-ect",
            Ecn::Ect1 => "ect1",
            Ecn::Ect0 => "ect0",
            Ecn::Ce => "ce",
        }
    }
}

impl fmt::Display for Ecn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An ECN name that is none of `not-ect`, `ect0`, `ect1`, `ce`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown ECN code point `{0}`; expected not-ect, ect0, ect1 or ce")]
pub struct UnknownEcn(pub String);

impl FromStr for Ecn {
    type Err = UnknownEcn;
    fn from_str(s: &str) -> Result<Self, UnknownEcn> {
        match s
            .trim()
            .to_ascii_lowercase()
            .replace(['(', ')', '_'], "")
            .as_str()
        {
            "not-ect" | "notect" | "none" | "off" => Ok(Ecn::NotEct),
            "ect0" | "classic" => Ok(Ecn::Ect0),
            "ect1" | "l4s" => Ok(Ecn::Ect1),
            "ce" => Ok(Ecn::Ce),
            _ => Err(UnknownEcn(s.to_owned())),
        }
    }
}

#[cfg(feature = "serde")]
mod serde_impl {
    use super::Ecn;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    impl Serialize for Ecn {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_str(self.name())
        }
    }

    impl<'de> Deserialize<'de> for Ecn {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            let s = String::deserialize(d)?;
            s.parse().map_err(serde::de::Error::custom)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_round_trip_and_mask_the_dscp() {
        for e in [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce] {
            assert_eq!(Ecn::from_bits(e.bits()), e);
            assert_eq!(Ecn::from_bits(0xb8 | e.bits()), e, "DSCP EF bits ignored");
        }
    }

    #[test]
    fn l4s_classification_follows_rfc9331() {
        assert!(Ecn::Ect1.is_l4s());
        assert!(Ecn::Ce.is_l4s());
        assert!(!Ecn::Ect0.is_l4s());
        assert!(!Ecn::NotEct.is_l4s());
    }

    #[test]
    fn parses_names() {
        assert_eq!("ECT(1)".parse::<Ecn>().unwrap(), Ecn::Ect1);
        assert_eq!("l4s".parse::<Ecn>().unwrap(), Ecn::Ect1);
        assert_eq!("not-ect".parse::<Ecn>().unwrap(), Ecn::NotEct);
        assert!("maybe".parse::<Ecn>().is_err());
    }
}
