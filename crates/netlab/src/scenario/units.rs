//! Scenario value types parsed from TOML strings: rates and durations (queue limits are
//! cg-link's `QueueLimit`).
//!
//! Each implements `Deserialize` by parsing a string (or number), so a bad value becomes a
//! toml error that carries the value's span — hence file, line and field in the message.

use std::fmt;
use std::time::Duration;

use cg_types::Bitrate;
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
    fn durations_reject_negative() {
        assert_eq!(Dur::parse("25ms").unwrap().0, Duration::from_millis(25));
        assert!(Dur::parse("-5s").is_err());
    }
}
