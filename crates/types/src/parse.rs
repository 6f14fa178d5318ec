//! Parsing of human-written quantities ("2.5Mbit", "1500B", "32MiB").

/// A quantity that could not be parsed from text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// The text has no number at its start.
    #[error("`{0}` does not start with a number")]
    NoNumber(String),
    /// The number is negative, not finite, or too large for the type.
    #[error("`{0}` is out of range (must be finite, non-negative and fit in 64 bits)")]
    OutOfRange(String),
    /// The unit suffix is not one this type knows.
    #[error("`{input}` has unknown unit `{unit}`; expected one of: {expected}")]
    UnknownUnit {
        /// The whole input.
        input: String,
        /// The suffix that was not recognised.
        unit: String,
        /// The accepted suffixes.
        expected: &'static str,
    },
}

/// Splits `"2.5 Mbit"` into `(2.5, "mbit")` (unit lower-cased, spaces trimmed).
pub(crate) fn split_number(input: &str) -> Result<(f64, String), ParseError> {
    let s = input.trim();
    let end = s
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '.' || *c == '_'))
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(end);
    let num: String = num.chars().filter(|c| *c != '_').collect();
    if num.is_empty() {
        return Err(ParseError::NoNumber(input.to_owned()));
    }
    let value: f64 = num
        .parse()
        .map_err(|_| ParseError::NoNumber(input.to_owned()))?;
    if !value.is_finite() || value < 0.0 || value >= u64::MAX as f64 {
        return Err(ParseError::OutOfRange(input.to_owned()));
    }
    Ok((value, unit.trim().to_ascii_lowercase()))
}
