//! Bit rates.

use std::fmt;
use std::ops::{Add, AddAssign, Div, Mul};
use std::str::FromStr;
use std::time::Duration;

use crate::DataSize;
use crate::parse::{ParseError, split_number};

/// A bit rate in bits per second.
///
/// Arithmetic saturates rather than wraps or panics: a rate derived from hostile input must
/// never bring a process down. Text forms: `"2.5Mbit"`, `"500kbps"`, `"1G"`, `"64000"` (bit/s).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Bitrate(u64);

impl Bitrate {
    /// Zero bits per second.
    pub const ZERO: Bitrate = Bitrate(0);
    /// The largest representable rate.
    pub const MAX: Bitrate = Bitrate(u64::MAX);

    /// `bps` bits per second.
    pub const fn bps(bps: u64) -> Self {
        Bitrate(bps)
    }

    /// `kbps` kilobits (1000 bits) per second.
    pub const fn kbps(kbps: u64) -> Self {
        Bitrate(kbps.saturating_mul(1_000))
    }

    /// `mbps` megabits (10^6 bits) per second.
    pub const fn mbps(mbps: u64) -> Self {
        Bitrate(mbps.saturating_mul(1_000_000))
    }

    /// A rate from a floating-point bits-per-second value; NaN and negatives give zero,
    /// values beyond the range give [`Bitrate::MAX`].
    pub fn from_bps_f64(bps: f64) -> Self {
        if bps.is_nan() || bps <= 0.0 {
            Bitrate::ZERO
        } else if bps >= u64::MAX as f64 {
            Bitrate::MAX
        } else {
            Bitrate(bps.round() as u64)
        }
    }

    /// A rate from megabits per second as a float (`2.5` → 2.5 Mbit/s).
    pub fn from_mbps_f64(mbps: f64) -> Self {
        Self::from_bps_f64(mbps * 1e6)
    }

    /// Bits per second.
    pub const fn as_bps(self) -> u64 {
        self.0
    }

    /// Bits per second as a float.
    pub fn as_bps_f64(self) -> f64 {
        self.0 as f64
    }

    /// Kilobits per second as a float.
    pub fn as_kbps_f64(self) -> f64 {
        self.0 as f64 / 1e3
    }

    /// Megabits per second as a float.
    pub fn as_mbps_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }

    /// This rate scaled by `factor` (saturating; NaN or negative factors give zero).
    pub fn mul_f64(self, factor: f64) -> Self {
        Self::from_bps_f64(self.0 as f64 * factor)
    }

    /// `self - other`, or zero if `other` is larger.
    pub const fn saturating_sub(self, other: Bitrate) -> Self {
        Bitrate(self.0.saturating_sub(other.0))
    }

    /// Time to send `size` at this rate; `None` at zero rate.
    pub fn time_to_send(self, size: DataSize) -> Option<Duration> {
        if self.0 == 0 {
            return None;
        }
        let nanos = (size.as_bits() as u128 * 1_000_000_000) / self.0 as u128;
        Some(Duration::from_nanos(
            u64::try_from(nanos).unwrap_or(u64::MAX),
        ))
    }
}

impl Add for Bitrate {
    type Output = Bitrate;
    fn add(self, rhs: Bitrate) -> Bitrate {
        Bitrate(self.0.saturating_add(rhs.0))
    }
}

impl AddAssign for Bitrate {
    fn add_assign(&mut self, rhs: Bitrate) {
        *self = *self + rhs;
    }
}

impl std::iter::Sum for Bitrate {
    fn sum<I: Iterator<Item = Bitrate>>(iter: I) -> Bitrate {
        iter.fold(Bitrate::ZERO, Add::add)
    }
}

/// Bytes sent in `duration` at this rate (rounded down).
impl Mul<Duration> for Bitrate {
    type Output = DataSize;
    fn mul(self, rhs: Duration) -> DataSize {
        let bits = self.0 as u128 * rhs.as_nanos() / 1_000_000_000;
        DataSize::bytes(u64::try_from(bits / 8).unwrap_or(u64::MAX))
    }
}

/// The rate at which `size` is sent in `duration`; zero for a zero duration.
impl Div<Duration> for DataSize {
    type Output = Bitrate;
    fn div(self, rhs: Duration) -> Bitrate {
        let nanos = rhs.as_nanos();
        if nanos == 0 {
            return Bitrate::ZERO;
        }
        let bps = self.as_bits() as u128 * 1_000_000_000 / nanos;
        Bitrate(u64::try_from(bps).unwrap_or(u64::MAX))
    }
}

impl fmt::Display for Bitrate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0 as f64;
        if v >= 1e9 {
            write!(f, "{:.3} Gbit/s", v / 1e9)
        } else if v >= 1e6 {
            write!(f, "{:.3} Mbit/s", v / 1e6)
        } else if v >= 1e3 {
            write!(f, "{:.1} kbit/s", v / 1e3)
        } else {
            write!(f, "{} bit/s", self.0)
        }
    }
}

impl FromStr for Bitrate {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, ParseError> {
        let (value, unit) = split_number(s)?;
        let unit = unit
            .trim_end_matches("/s")
            .trim_end_matches("ps")
            .trim_end_matches("it")
            .trim_end_matches('b');
        let scale = match unit {
            "" => 1.0,
            "k" => 1e3,
            "m" => 1e6,
            "g" => 1e9,
            other => {
                return Err(ParseError::UnknownUnit {
                    input: s.to_owned(),
                    unit: other.to_owned(),
                    expected: "bit/s, kbit/s, Mbit/s, Gbit/s (also bps, kbps, k, Mbit, M, …)",
                });
            }
        };
        let bps = value * scale;
        if bps >= u64::MAX as f64 {
            return Err(ParseError::OutOfRange(s.to_owned()));
        }
        Ok(Bitrate(bps.round() as u64))
    }
}

#[cfg(feature = "serde")]
mod serde_impl {
    use super::Bitrate;
    use serde::de::{self, Visitor};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::fmt;

    /// Serialised as an integer number of bits per second.
    impl Serialize for Bitrate {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_u64(self.0)
        }
    }

    /// Accepts an integer (bit/s) or a string with a unit (`"2.5Mbit"`).
    impl<'de> Deserialize<'de> for Bitrate {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl Visitor<'_> for V {
                type Value = Bitrate;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("a bit rate: bits per second, or a string such as \"2.5Mbit\"")
                }
                fn visit_u64<E: de::Error>(self, v: u64) -> Result<Bitrate, E> {
                    Ok(Bitrate(v))
                }
                fn visit_i64<E: de::Error>(self, v: i64) -> Result<Bitrate, E> {
                    u64::try_from(v)
                        .map(Bitrate)
                        .map_err(|_| E::custom(format!("bit rate {v} is negative")))
                }
                fn visit_f64<E: de::Error>(self, v: f64) -> Result<Bitrate, E> {
                    if v.is_finite() && v >= 0.0 {
                        Ok(Bitrate::from_bps_f64(v))
                    } else {
                        Err(E::custom(format!("bit rate {v} is negative or not finite")))
                    }
                }
                fn visit_str<E: de::Error>(self, v: &str) -> Result<Bitrate, E> {
                    v.parse().map_err(E::custom)
                }
            }
            d.deserialize_any(V)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_common_spellings() {
        assert_eq!("2.5Mbit".parse::<Bitrate>().unwrap(), Bitrate::kbps(2500));
        assert_eq!("500 kbps".parse::<Bitrate>().unwrap(), Bitrate::kbps(500));
        assert_eq!("1G".parse::<Bitrate>().unwrap(), Bitrate::mbps(1000));
        assert_eq!("64000".parse::<Bitrate>().unwrap(), Bitrate::bps(64000));
        assert_eq!("10Mbit/s".parse::<Bitrate>().unwrap(), Bitrate::mbps(10));
        assert_eq!("1_000bps".parse::<Bitrate>().unwrap(), Bitrate::kbps(1));
    }

    #[test]
    fn rejects_bad_text() {
        assert!("fast".parse::<Bitrate>().is_err());
        assert!("-1M".parse::<Bitrate>().is_err());
        assert!("3 furlongs".parse::<Bitrate>().is_err());
        assert!("".parse::<Bitrate>().is_err());
    }

    #[test]
    fn rate_times_duration_is_size_and_back() {
        let r = Bitrate::mbps(1);
        let s = r * Duration::from_millis(300);
        assert_eq!(s, DataSize::bytes(37_500));
        assert_eq!(s / Duration::from_millis(300), r);
        assert_eq!(
            r.time_to_send(DataSize::bytes(1250)),
            Some(Duration::from_millis(10))
        );
        assert_eq!(Bitrate::ZERO.time_to_send(DataSize::bytes(1)), None);
    }

    #[test]
    fn float_conversions_saturate() {
        assert_eq!(Bitrate::from_bps_f64(f64::NAN), Bitrate::ZERO);
        assert_eq!(Bitrate::from_bps_f64(-5.0), Bitrate::ZERO);
        assert_eq!(Bitrate::from_bps_f64(f64::INFINITY), Bitrate::MAX);
        assert_eq!(Bitrate::MAX + Bitrate::bps(1), Bitrate::MAX);
        assert_eq!(Bitrate::mbps(2).mul_f64(1.5), Bitrate::mbps(3));
    }

    #[test]
    fn displays_with_a_unit() {
        assert_eq!(Bitrate::kbps(2500).to_string(), "2.500 Mbit/s");
        assert_eq!(Bitrate::bps(12).to_string(), "12 bit/s");
    }
}
