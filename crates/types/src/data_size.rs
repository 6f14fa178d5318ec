//! Data sizes.

use std::fmt;
use std::ops::{Add, AddAssign, Div, Sub, SubAssign};
use std::str::FromStr;

use crate::Bitrate;
use crate::parse::{ParseError, split_number};

/// An amount of data in bytes.
///
/// Subtraction saturates at zero (bytes in flight must not wrap when feedback is duplicated).
/// Text forms: `"1500B"`, `"64KiB"`, `"32MB"`, `"1500"` (bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct DataSize(u64);

impl DataSize {
    /// Zero bytes.
    pub const ZERO: DataSize = DataSize(0);

    /// `bytes` bytes.
    pub const fn bytes(bytes: u64) -> Self {
        DataSize(bytes)
    }

    /// `kib` × 1024 bytes.
    pub const fn kibibytes(kib: u64) -> Self {
        DataSize(kib.saturating_mul(1024))
    }

    /// The size in bytes.
    pub const fn as_bytes(self) -> u64 {
        self.0
    }

    /// The size in bytes as a float.
    pub fn as_bytes_f64(self) -> f64 {
        self.0 as f64
    }

    /// The size in bits (saturating).
    pub const fn as_bits(self) -> u64 {
        self.0.saturating_mul(8)
    }

    /// A size from a float number of bytes; NaN and negatives give zero.
    pub fn from_bytes_f64(bytes: f64) -> Self {
        if bytes.is_nan() || bytes <= 0.0 {
            DataSize::ZERO
        } else if bytes >= u64::MAX as f64 {
            DataSize(u64::MAX)
        } else {
            DataSize(bytes.round() as u64)
        }
    }

    /// This size scaled by `factor` (saturating; NaN or negative give zero).
    pub fn mul_f64(self, factor: f64) -> Self {
        Self::from_bytes_f64(self.0 as f64 * factor)
    }
}

impl Add for DataSize {
    type Output = DataSize;
    fn add(self, rhs: DataSize) -> DataSize {
        DataSize(self.0.saturating_add(rhs.0))
    }
}

impl AddAssign for DataSize {
    fn add_assign(&mut self, rhs: DataSize) {
        *self = *self + rhs;
    }
}

/// Saturates at zero.
impl Sub for DataSize {
    type Output = DataSize;
    fn sub(self, rhs: DataSize) -> DataSize {
        DataSize(self.0.saturating_sub(rhs.0))
    }
}

impl SubAssign for DataSize {
    fn sub_assign(&mut self, rhs: DataSize) {
        *self = *self - rhs;
    }
}

impl std::iter::Sum for DataSize {
    fn sum<I: Iterator<Item = DataSize>>(iter: I) -> DataSize {
        iter.fold(DataSize::ZERO, Add::add)
    }
}

/// Time to send this size at a rate; `None` at zero rate.
impl Div<Bitrate> for DataSize {
    type Output = Option<std::time::Duration>;
    fn div(self, rhs: Bitrate) -> Option<std::time::Duration> {
        rhs.time_to_send(self)
    }
}

impl fmt::Display for DataSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0 as f64;
        if v >= 1e6 {
            write!(f, "{:.2} MB", v / 1e6)
        } else if v >= 1e4 {
            write!(f, "{:.1} kB", v / 1e3)
        } else {
            write!(f, "{} B", self.0)
        }
    }
}

impl FromStr for DataSize {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, ParseError> {
        let (value, unit) = split_number(s)?;
        let scale = match unit.as_str() {
            "" | "b" | "byte" | "bytes" => 1.0,
            "k" | "kb" => 1e3,
            "m" | "mb" => 1e6,
            "g" | "gb" => 1e9,
            "kib" => 1024.0,
            "mib" => 1024.0 * 1024.0,
            "gib" => 1024.0 * 1024.0 * 1024.0,
            other => {
                return Err(ParseError::UnknownUnit {
                    input: s.to_owned(),
                    unit: other.to_owned(),
                    expected: "B, kB, MB, GB, KiB, MiB, GiB",
                });
            }
        };
        let bytes = value * scale;
        if bytes >= u64::MAX as f64 {
            return Err(ParseError::OutOfRange(s.to_owned()));
        }
        Ok(DataSize(bytes.round() as u64))
    }
}

#[cfg(feature = "serde")]
mod serde_impl {
    use super::DataSize;
    use serde::de::{self, Visitor};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::fmt;

    /// Serialised as an integer number of bytes.
    impl Serialize for DataSize {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_u64(self.0)
        }
    }

    /// Accepts an integer (bytes) or a string with a unit (`"64KiB"`).
    impl<'de> Deserialize<'de> for DataSize {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl Visitor<'_> for V {
                type Value = DataSize;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("a size: bytes, or a string such as \"64KiB\"")
                }
                fn visit_u64<E: de::Error>(self, v: u64) -> Result<DataSize, E> {
                    Ok(DataSize(v))
                }
                fn visit_i64<E: de::Error>(self, v: i64) -> Result<DataSize, E> {
                    u64::try_from(v)
                        .map(DataSize)
                        .map_err(|_| E::custom(format!("size {v} is negative")))
                }
                fn visit_str<E: de::Error>(self, v: &str) -> Result<DataSize, E> {
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
    use std::time::Duration;

    #[test]
    fn parses_units() {
        assert_eq!("1500B".parse::<DataSize>().unwrap(), DataSize::bytes(1500));
        assert_eq!("64KiB".parse::<DataSize>().unwrap(), DataSize::bytes(65536));
        assert_eq!(
            "32 MB".parse::<DataSize>().unwrap(),
            DataSize::bytes(32_000_000)
        );
        assert!("12 parsecs".parse::<DataSize>().is_err());
    }

    #[test]
    fn subtraction_saturates() {
        assert_eq!(DataSize::bytes(3) - DataSize::bytes(5), DataSize::ZERO);
        let mut s = DataSize::bytes(10);
        s -= DataSize::bytes(20);
        assert_eq!(s, DataSize::ZERO);
    }

    #[test]
    fn size_over_rate_is_time() {
        assert_eq!(
            DataSize::bytes(125_000) / Bitrate::mbps(1),
            Some(Duration::from_secs(1))
        );
        assert_eq!(DataSize::bytes(1) / Bitrate::ZERO, None);
        assert_eq!(DataSize::bytes(1000) / Duration::ZERO, Bitrate::ZERO);
    }
}
