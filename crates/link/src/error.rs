//! The crate's one error type: invalid configuration, caught at construction.

/// A configuration the link or a queue discipline cannot run with.
///
/// Every constructor in this crate validates its config and returns one of these rather than
/// panicking later on the hot path.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A rate that must be positive is zero.
    #[error("{what} must be a positive bit rate")]
    ZeroRate {
        /// Which setting.
        what: &'static str,
    },
    /// A probability outside `[0, 1]` or NaN.
    #[error("{what} must be a probability in [0, 1], got {value}")]
    InvalidProbability {
        /// Which setting.
        what: &'static str,
        /// The offending value.
        value: f64,
    },
    /// A limit (packets, bytes, time, flows, quantum) that must be non-zero is zero.
    #[error("{what} must not be zero")]
    ZeroLimit {
        /// Which setting.
        what: &'static str,
    },
    /// A numeric parameter outside its valid range (NaN, negative, too large).
    #[error("{what} is invalid: {reason}")]
    InvalidParameter {
        /// Which setting.
        what: &'static str,
        /// Why.
        reason: String,
    },
    /// A Mahimahi trace or a rate schedule with no entries.
    #[error("{what} is empty")]
    Empty {
        /// Which setting.
        what: &'static str,
    },
    /// A line of a Mahimahi trace that is not a millisecond timestamp, or goes backwards.
    #[error("Mahimahi trace line {line}: {reason}")]
    Trace {
        /// 1-based line number.
        line: usize,
        /// Why it was rejected.
        reason: String,
    },
    /// An HTB rule or default naming a class that does not exist.
    #[error("HTB {what} names class `{class}`, which is not defined")]
    UnknownClass {
        /// Where the name appeared (`rule 3`, `default_class`).
        what: String,
        /// The missing class.
        class: String,
    },
    /// Two HTB classes with one name.
    #[error("HTB class `{0}` is defined twice")]
    DuplicateClass(String),
    /// An unknown named preset.
    #[error("unknown preset `{name}`; known: {known}")]
    UnknownPreset {
        /// What was asked for.
        name: String,
        /// The names this crate knows.
        known: &'static str,
    },
}

/// Checks `p` is a probability.
pub(crate) fn probability(what: &'static str, p: f64) -> Result<f64, Error> {
    if (0.0..=1.0).contains(&p) {
        Ok(p)
    } else {
        Err(Error::InvalidProbability { what, value: p })
    }
}

/// Checks `v` is finite and positive.
pub(crate) fn positive(what: &'static str, v: f64) -> Result<f64, Error> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(Error::InvalidParameter {
            what,
            reason: format!("must be finite and positive, got {v}"),
        })
    }
}

/// The longest duration any setting may have: one day. Longer values are certainly typos, and
/// bounding them keeps every `Instant + Duration` in the crate far from overflow.
pub(crate) const MAX_DURATION: std::time::Duration = std::time::Duration::from_secs(86_400);

/// Checks `d` is at most [`MAX_DURATION`].
pub(crate) fn bounded(
    what: &'static str,
    d: std::time::Duration,
) -> Result<std::time::Duration, Error> {
    if d <= MAX_DURATION {
        Ok(d)
    } else {
        Err(Error::InvalidParameter {
            what,
            reason: format!("{d:?} is longer than one day"),
        })
    }
}
