//! Scenario value types parsed from TOML strings: rates, durations, queue limits.
//!
//! Each implements `Deserialize` by parsing a string (or number), so a bad value becomes a
//! toml error that carries the value's span — hence file, line and field in the message.

use std::fmt;
use std::time::Duration;

use cg_types::{Bitrate, DataSize};
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};

/// A positive bit rate: `"2.5Mbit"`, `"500kbps"`, or a number of bit/s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(into = "String")]
pub struct Rate(pub Bitrate);

impl From<Rate> for String {
    fn from(r: Rate) -> String {
        format!("{}bps", r.0.as_bps())
    }
}

impl Rate {
    /// Parses a rate; negative, zero and malformed values are errors.
    pub fn parse(s: &str) -> Result<Self, String> {
        let t = s.trim();
        if t.starts_with('-') {
            return Err(format!("rate `{s}` is negative"));
        }
        let b: Bitrate = t
            .parse()
            .map_err(|e| format!("rate `{s}` is not a rate like \"2.5Mbit\": {e}"))?;
        if b == Bitrate::ZERO {
            return Err(format!(
                "rate `{s}` must be above zero (a link outage is a schedule step such as \
                 {{ at = \"60s\", down = \"2s\" }})"
            ));
        }
        Ok(Rate(b))
    }
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrOrNum("a rate such as \"10Mbit\"", Rate::parse))
    }
}

/// A non-negative duration in humantime form: `"25ms"`, `"1m 30s"`, `"0s"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Serialize)]
#[serde(into = "String")]
pub struct Dur(pub Duration);

impl From<Dur> for String {
    fn from(d: Dur) -> String {
        humantime::format_duration(d.0).to_string()
    }
}

impl Dur {
    /// Parses a duration; negative or malformed values are errors.
    pub fn parse(s: &str) -> Result<Self, String> {
        let t = s.trim();
        if t.starts_with('-') {
            return Err(format!("duration `{s}` is negative"));
        }
        humantime::parse_duration(t)
            .map(Dur)
            .map_err(|e| format!("duration `{s}` is not a duration like \"25ms\": {e}"))
    }
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrOrNum("a duration such as \"25ms\"", Dur::parse))
    }
}

/// A queue limit: in packets (`300`, `"300p"`), bytes (`"450KB"`, `"1500B"`) or time at the
/// current link rate (`"300ms"`, the papers' DT/300).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(into = "String")]
pub enum Limit {
    /// Packets.
    Packets(u32),
    /// Bytes.
    Bytes(DataSize),
    /// Time × link rate.
    Time(Duration),
}

impl From<Limit> for String {
    fn from(l: Limit) -> String {
        match l {
            Limit::Packets(p) => format!("{p}p"),
            Limit::Bytes(b) => format!("{}B", b.as_bytes()),
            Limit::Time(t) => humantime::format_duration(t).to_string(),
        }
    }
}

impl Limit {
    /// Parses a limit; zero and negative limits are errors.
    pub fn parse(s: &str) -> Result<Self, String> {
        let t = s.trim();
        if t.starts_with('-') {
            return Err(format!("limit `{s}` is negative"));
        }
        let lim = if let Some(n) = t
            .strip_suffix("packets")
            .or_else(|| t.strip_suffix("pkts"))
            .or_else(|| t.strip_suffix('p'))
            .or_else(|| t.chars().all(|c| c.is_ascii_digit()).then_some(t))
        {
            Limit::Packets(
                n.trim()
                    .parse()
                    .map_err(|_| format!("limit `{s}`: `{n}` is not a packet count"))?,
            )
        } else if t.ends_with("ms")
            || t.ends_with("us")
            || (t.ends_with('s') && !t.ends_with("bytes"))
        {
            Limit::Time(Dur::parse(t)?.0)
        } else {
            Limit::Bytes(
                t.parse()
                    .map_err(|e| format!("limit `{s}` is not packets, bytes or time: {e}"))?,
            )
        };
        let zero = match lim {
            Limit::Packets(p) => p == 0,
            Limit::Bytes(b) => b.as_bytes() == 0,
            Limit::Time(d) => d.is_zero(),
        };
        if zero {
            return Err(format!("limit `{s}` must be above zero"));
        }
        Ok(lim)
    }

    /// The limit in bytes at `rate` (packets counted as 1500 bytes each).
    pub fn bytes_at(self, rate: Bitrate) -> DataSize {
        match self {
            Limit::Packets(p) => DataSize::bytes(u64::from(p) * 1500),
            Limit::Bytes(b) => b,
            Limit::Time(t) => rate * t,
        }
    }
}

impl<'de> Deserialize<'de> for Limit {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrOrNum(
            "a limit such as 300 (packets), \"300ms\" or \"450KB\"",
            Limit::parse,
        ))
    }
}

/// A visitor accepting a string or a number and handing its text to a parser.
struct StrOrNum<F>(&'static str, F);

impl<'de, T, F: Fn(&str) -> Result<T, String>> Visitor<'de> for StrOrNum<F> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.0)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        (self.1)(v).map_err(E::custom)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        (self.1)(&v.to_string()).map_err(E::custom)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        (self.1)(&v.to_string()).map_err(E::custom)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
        (self.1)(&v.to_string()).map_err(E::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse_and_reject_negative_or_zero() {
        assert_eq!(
            Rate::parse("2.5Mbit").unwrap().0,
            Bitrate::from_mbps_f64(2.5)
        );
        assert!(Rate::parse("-1Mbit").unwrap_err().contains("negative"));
        assert!(Rate::parse("0").unwrap_err().contains("above zero"));
        assert!(Rate::parse("fast").is_err());
    }

    #[test]
    fn limits_in_packets_bytes_and_time() {
        assert_eq!(Limit::parse("300").unwrap(), Limit::Packets(300));
        assert_eq!(Limit::parse("250p").unwrap(), Limit::Packets(250));
        assert_eq!(
            Limit::parse("300ms").unwrap(),
            Limit::Time(Duration::from_millis(300))
        );
        assert!(matches!(Limit::parse("45KB").unwrap(), Limit::Bytes(_)));
        assert!(Limit::parse("0").is_err());
        assert!(Limit::parse("-3").is_err());
        assert_eq!(
            Limit::Time(Duration::from_millis(300)).bytes_at(Bitrate::mbps(1)),
            DataSize::bytes(37_500)
        );
    }

    #[test]
    fn durations_reject_negative() {
        assert_eq!(Dur::parse("25ms").unwrap().0, Duration::from_millis(25));
        assert!(Dur::parse("-5s").is_err());
    }
}
