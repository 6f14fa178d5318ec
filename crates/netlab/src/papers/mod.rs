//! The seed papers' published figures, as data: one file per paper in `crates/netlab/papers/`
//! (`mmsys16.toml`: MMSys16 Tables 1–6 and Figs. 8–11; `ccr16.toml`: CCR16 §4.1–4.2;
//! `tma24.toml`: TMA24 Tables I–II), embedded in the binary and read by [`all`].
//!
//! Each [`PaperFigure`] is one number of a paper: the experiment it belongs to (a preset in
//! `crates/netlab/scenarios/`, or none), the row and column labels as printed, what it measures
//! ([`Metric`], [`Statistic`], [`Flows`]), the value in its printed [`Unit`], which way is
//! better, and where it comes from ([`Source`]: table or figure, section, page). Numbers the
//! paper states only in words are entries too, with the words in `quote` and a [`Relation`]
//! saying whether they are a value, an approximation or a bound.
//!
//! [`PaperFigure::verdict`] compares one of our measurements with the paper's number.
//!
//! # The files
//!
//! ```toml
//! [paper]
//! id = "mmsys16"                  # the file's stem
//! citation = "…"
//! text_copy = "….txt"             # the plain-text copy transcribed
//! note = "…"                      # optional
//!
//! [[group]]                       # one table (or a table's column, or one statement)
//! source = { table = "Table 1", section = "6.1", page = "page not in the text copy" }
//! preset = "mmsys16-6.1-variable-capacity"   # or "none"
//! column = "Value"
//! flows = "cg"
//! runs = 10
//! figures = [
//!   { row = "Channel Utilization", metric = "utilisation", value = 84.0, unit = "%", better = "higher" },
//! ]
//! ```
//!
//! An entry inherits its group's `source`, `preset`, `column`, `flows`, `runs` and `note`, and
//! may set `preset`, `column` and `flows` itself; it also takes `statistic`, `threshold_ms`,
//! `relation`, `tolerance = { abs, rel }`, `quote` and `note`. Unknown fields are refused; so is
//! an entry without a source, a value that is not finite, or a unit that does not fit the
//! metric. Problems are reported as the crate's located input error ([`Error::Scenario`]:
//! file, line, column and field), like a scenario's.
//!
//! `figure` holds the data's types, `read` the files' schema and checks, `verdict` the
//! comparison of ours with theirs.

mod figure;
mod read;
mod verdict;

pub use figure::{
    Better, Flows, Metric, PAGE_NOT_IN_TEXT_COPY, Page, Paper, PaperFigure, Relation, Source,
    Statistic, Tolerance, Unit,
};
pub use verdict::Verdict;

use crate::Error;
use crate::input::{from_toml, located};
use read::{Checker, RawFile};

/// The shipped files: (paper id, path named in errors, text).
const FILES: [(&str, &str, &str); 3] = [
    (
        "mmsys16",
        "papers/mmsys16.toml",
        include_str!("../../papers/mmsys16.toml"),
    ),
    (
        "ccr16",
        "papers/ccr16.toml",
        include_str!("../../papers/ccr16.toml"),
    ),
    (
        "tma24",
        "papers/tma24.toml",
        include_str!("../../papers/tma24.toml"),
    ),
];

/// Every shipped paper, parsed and checked, in the order MMSys16, CCR16, TMA24.
pub fn all() -> Result<Vec<Paper>, Error> {
    FILES
        .iter()
        .map(|(id, file, text)| {
            let paper = parse(text, file)?;
            if paper.id != *id {
                return Err(located(
                    text,
                    file,
                    0..0,
                    "paper.id",
                    format!("is `{}`, the file is {id}'s", paper.id),
                ));
            }
            Ok(paper)
        })
        .collect()
}

/// Parses and checks one paper file; `file` names it in errors.
pub fn parse(text: &str, file: &str) -> Result<Paper, Error> {
    let raw: RawFile = from_toml(text, file)?;
    Checker { text, file }.paper(raw)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::Path;

    use super::*;

    #[test]
    fn all_three_files_parse_and_check() {
        let papers = all().unwrap_or_else(|e| panic!("{e}"));
        let ids: Vec<&str> = papers.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, ["mmsys16", "ccr16", "tma24"]);
        for p in &papers {
            assert!(!p.citation.is_empty());
            for f in &p.figures {
                assert!(f.value.is_finite(), "{}: {} {}", p.id, f.column, f.row);
                assert_eq!(f.unit, f.metric.unit());
                assert!(f.source.table.is_some() || f.source.figure.is_some());
                assert!(!f.source.section.is_empty());
                assert!(f.band() >= 0.0);
            }
        }
    }

    #[test]
    fn every_table_the_issue_names_has_entries() {
        let papers = all().unwrap_or_else(|e| panic!("{e}"));
        let find = |id: &str| {
            papers
                .iter()
                .find(|p| p.id == id)
                .unwrap_or_else(|| panic!("no paper {id}"))
        };
        let tables = |id: &str| -> BTreeSet<String> {
            find(id)
                .figures
                .iter()
                .filter_map(|f| f.source.table.clone())
                .collect()
        };
        let mmsys = tables("mmsys16");
        for t in 1..=6 {
            assert!(mmsys.contains(&format!("Table {t}")), "MMSys16 Table {t}");
        }
        assert!(
            find("mmsys16")
                .figures
                .iter()
                .any(|f| f.source.figure.as_deref() == Some("Fig. 8")),
            "MMSys16 Fig. 8"
        );
        for s in ["4.1", "4.2"] {
            assert!(
                find("ccr16").figures.iter().any(|f| f.source.section == s),
                "CCR16 §{s}"
            );
        }
        let tma = tables("tma24");
        for t in ["Table I", "Table II"] {
            assert!(tma.contains(t), "TMA24 {t}");
        }
    }

    #[test]
    fn every_named_preset_is_a_scenario_file() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
        for p in all().unwrap_or_else(|e| panic!("{e}")) {
            for f in p.figures.iter().filter_map(|f| f.preset.as_ref()) {
                let path = dir.join(format!("{f}.toml"));
                assert!(path.is_file(), "{}: {} missing", p.id, path.display());
            }
        }
    }
}
