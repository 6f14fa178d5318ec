//! Where a scenario's problems are: [`ScenarioError`] (file, line, column, field), the
//! parsing context that places them, and [`Origin`], where a link's fields were written so
//! that a problem found after loading is placed like a load error.

use std::fmt;
use std::ops::Range;

/// A scenario problem, located in its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    /// File name (or `<preset name>`).
    pub file: String,
    /// 1-based line (0 when the problem has no location, e.g. an unreadable file).
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// The field concerned (`forward.qdisc.kind`, `flows[2].from`…).
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            if !self.file.is_empty() {
                write!(f, "{}: ", self.file)?;
            }
            if !self.field.is_empty() {
                write!(f, "field `{}`: ", self.field)?;
            }
            write!(f, "{}", self.message)
        } else {
            write!(
                f,
                "{}:{}:{}: field `{}`: {}",
                self.file, self.line, self.column, self.field, self.message
            )
        }
    }
}

impl std::error::Error for ScenarioError {}

/// The text being parsed and the file it names in errors.
pub(super) struct Ctx<'a> {
    pub(super) file: &'a str,
    pub(super) text: &'a str,
}

impl Ctx<'_> {
    pub(super) fn err(
        &self,
        span: Range<usize>,
        field: &str,
        message: impl Into<String>,
    ) -> ScenarioError {
        let (line, column) = line_col(self.text, span.start);
        ScenarioError {
            file: self.file.to_owned(),
            line,
            column,
            field: field.to_owned(),
            message: message.into(),
        }
    }
}

/// 1-based line and column of byte `offset` of `text`.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = offset - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    (line, column)
}

/// The key written before the value at `offset` (`kind` in `kind = "foo"`), for serde errors.
pub(super) fn key_before(text: &str, offset: usize) -> String {
    let offset = offset.min(text.len());
    // An error at a key itself (an unknown field in an inline table) names that key.
    let rest = &text[offset..];
    let ident_len = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
        .unwrap_or(rest.len());
    if ident_len > 0 && rest[ident_len..].trim_start().starts_with('=') {
        return rest[..ident_len].to_owned();
    }
    let before = &text[..offset];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = &before[line_start..];
    if let Some(eq) = line.rfind('=') {
        let lhs = line[..eq].trim_end();
        let key: String = lhs
            .chars()
            .rev()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '-' || *c == '.')
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        if !key.is_empty() {
            return key;
        }
    }
    // A table header or a bare key: take the line's first word.
    let full_line = text[line_start..].lines().next().unwrap_or("");
    full_line
        .trim()
        .trim_matches(|c| c == '[' || c == ']')
        .split(['=', ' '])
        .next()
        .unwrap_or("")
        .to_owned()
}

/// Where a link's fields were written, so that a problem found after loading (the kernel
/// backend refusing a parameter `tc` cannot take) names file, line and field like a load
/// error does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Origin {
    pub(super) file: String,
    /// `forward.qdisc.target` → (line, column).
    pub(super) at: std::collections::BTreeMap<String, (usize, usize)>,
}

impl Origin {
    /// `field` was written at byte `offset` of the scenario text.
    pub(super) fn note(&mut self, cx: &Ctx<'_>, field: String, offset: usize) {
        self.at.insert(field, line_col(cx.text, offset));
    }

    /// The error `message` about `field` (`forward.qdisc.limit`), placed where the field was
    /// written, or where its nearest written parent (`forward.qdisc`, `forward`) was.
    pub fn error(&self, field: &str, message: impl Into<String>) -> ScenarioError {
        let mut key = field;
        let (line, column) = loop {
            if let Some(at) = self.at.get(key) {
                break *at;
            }
            match key.rfind(['.', '[']) {
                Some(i) => key = &key[..i],
                None => break (0, 0),
            }
        };
        ScenarioError {
            file: self.file.clone(),
            line,
            column,
            field: field.to_owned(),
            message: message.into(),
        }
    }
}
