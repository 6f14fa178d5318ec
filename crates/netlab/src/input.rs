//! TOML input files besides scenarios (the papers' data, sweep grids), deserialised with
//! every mistake located as a scenario's: the crate's [`Error::Scenario`], naming file, line,
//! column and field.

use std::ops::Range;

use crate::Error;
use crate::scenario::{ScenarioError, line_col};

/// Deserialises a TOML input file; a mistake is the crate's located error (file, line,
/// column, field), as a scenario's.
pub(crate) fn from_toml<T: serde::de::DeserializeOwned>(
    text: &str,
    file: &str,
) -> Result<T, Error> {
    toml::from_str(text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        let message = e.message().trim().to_owned();
        let field = named_field(&message).unwrap_or_else(|| key_before(text, span.start));
        located(text, file, span, &field, message)
    })
}

/// The crate's located input error for `field` at byte `span.start` of `text`.
pub(crate) fn located(
    text: &str,
    file: &str,
    span: Range<usize>,
    field: &str,
    message: String,
) -> Error {
    let (line, column) = if span == (0..0) {
        (0, 0)
    } else {
        line_col(text, span.start)
    };
    Error::Scenario(ScenarioError {
        file: file.to_owned(),
        line,
        column,
        field: field.to_owned(),
        message,
    })
}

/// The field a serde message names: `missing field `source``, `unknown field `foo``.
fn named_field(message: &str) -> Option<String> {
    let rest = message
        .strip_prefix("missing field `")
        .or_else(|| message.strip_prefix("unknown field `"))?;
    rest.split('`').next().map(str::to_owned)
}

/// The key written at or before `offset` (`unit` in `unit = "kB"`), for serde errors.
fn key_before(text: &str, offset: usize) -> String {
    let offset = offset.min(text.len());
    let is_key = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    let before = &text[..offset];
    let Some(eq) = before.rfind('=') else {
        return String::new();
    };
    let key: String = before[..eq]
        .trim_end()
        .chars()
        .rev()
        .take_while(|c| is_key(*c))
        .collect();
    key.chars().rev().collect()
}
