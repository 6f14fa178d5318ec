//! Reading a paper file: its schema (serde) and the checks that turn its groups and entries
//! into [`PaperFigure`]s, each mistake located at file, line and field.

use std::ops::Range;

use serde::Deserialize;
use toml::Spanned;

use super::figure::{
    Better, Flows, Metric, PAGE_NOT_IN_TEXT_COPY, Page, Paper, PaperFigure, Relation, Source,
    Statistic, Unit,
};
use crate::Error;
use crate::input::located;

// The files' schema.

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFile {
    paper: Spanned<RawPaper>,
    #[serde(default)]
    group: Vec<Spanned<RawGroup>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPaper {
    id: Spanned<String>,
    citation: Spanned<String>,
    text_copy: Spanned<String>,
    note: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGroup {
    source: Spanned<RawSource>,
    preset: Option<Spanned<String>>,
    column: Option<String>,
    flows: Option<Flows>,
    runs: Option<Spanned<u32>>,
    note: Option<String>,
    figures: Spanned<Vec<Spanned<RawFigure>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSource {
    table: Option<String>,
    figure: Option<String>,
    section: Spanned<String>,
    page: Spanned<toml::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFigure {
    preset: Option<Spanned<String>>,
    column: Option<String>,
    row: Spanned<String>,
    flows: Option<Flows>,
    metric: Metric,
    statistic: Option<Statistic>,
    threshold_ms: Option<Spanned<f64>>,
    #[serde(default)]
    relation: Relation,
    value: Spanned<f64>,
    unit: Spanned<Unit>,
    better: Better,
    tolerance: Option<Spanned<RawTolerance>>,
    quote: Option<String>,
    note: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTolerance {
    abs: Option<f64>,
    rel: Option<f64>,
}

// Checking.

/// Checks a file's entries into figures; every mistake is located in `text`.
pub(super) struct Checker<'a> {
    pub(super) text: &'a str,
    pub(super) file: &'a str,
}

impl Checker<'_> {
    fn err(&self, span: Range<usize>, field: &str, message: impl Into<String>) -> Error {
        located(self.text, self.file, span, field, message.into())
    }

    pub(super) fn paper(&self, raw: RawFile) -> Result<Paper, Error> {
        let paper_span = raw.paper.span();
        let p = raw.paper.into_inner();
        for (field, s) in [
            ("paper.id", &p.id),
            ("paper.citation", &p.citation),
            ("paper.text_copy", &p.text_copy),
        ] {
            if s.get_ref().trim().is_empty() {
                return Err(self.err(s.span(), field, "must not be empty"));
            }
        }
        let mut figures = Vec::new();
        for (g, group) in raw.group.into_iter().enumerate() {
            self.group(g, group, &mut figures)?;
        }
        if figures.is_empty() {
            return Err(self.err(paper_span, "group", "the file has no figures"));
        }
        Ok(Paper {
            id: p.id.into_inner(),
            citation: p.citation.into_inner(),
            text_copy: p.text_copy.into_inner(),
            note: p.note,
            figures,
        })
    }

    fn group(
        &self,
        g: usize,
        group: Spanned<RawGroup>,
        out: &mut Vec<PaperFigure>,
    ) -> Result<(), Error> {
        let at = format!("group[{g}]");
        let group = group.into_inner();
        let source = self.source(&format!("{at}.source"), group.source)?;
        let runs = match group.runs {
            Some(r) if *r.get_ref() == 0 => {
                return Err(self.err(r.span(), &format!("{at}.runs"), "must be at least 1"));
            }
            r => r.map(Spanned::into_inner),
        };
        let group_preset = match group.preset {
            Some(p) => Some(self.preset(&format!("{at}.preset"), p)?),
            None => None,
        };
        let figures_span = group.figures.span();
        let figures = group.figures.into_inner();
        if figures.is_empty() {
            return Err(self.err(figures_span, &format!("{at}.figures"), "is empty"));
        }
        for (i, fig) in figures.into_iter().enumerate() {
            let at = format!("{at}.figures[{i}]");
            let span = fig.span();
            let f = fig.into_inner();
            let preset = match f.preset {
                Some(p) => self.preset(&format!("{at}.preset"), p)?,
                None => group_preset.clone().ok_or_else(|| {
                    self.err(
                        span.clone(),
                        &format!("{at}.preset"),
                        "missing: name the preset in crates/netlab/scenarios/ or write \"none\"",
                    )
                })?,
            };
            let column = f
                .column
                .or_else(|| group.column.clone())
                .filter(|c| !c.trim().is_empty())
                .ok_or_else(|| {
                    self.err(span.clone(), &format!("{at}.column"), "missing or empty")
                })?;
            if f.row.get_ref().trim().is_empty() {
                return Err(self.err(f.row.span(), &format!("{at}.row"), "must not be empty"));
            }
            let flows = f.flows.or(group.flows);
            match (f.metric, flows) {
                (Metric::ThresholdGain, Some(_)) => {
                    return Err(self.err(
                        span,
                        &format!("{at}.flows"),
                        "a parameter (threshold_gain) is about no flows",
                    ));
                }
                (Metric::ThresholdGain, None) | (_, Some(_)) => {}
                (_, None) => {
                    return Err(self.err(
                        span,
                        &format!("{at}.flows"),
                        "missing: \"cg\", \"tcp\" or \"all\"",
                    ));
                }
            }
            match (f.metric.has_statistic(), f.statistic) {
                (true, None) => {
                    return Err(self.err(
                        span,
                        &format!("{at}.statistic"),
                        "missing: this metric needs mean, stddev or a percentile",
                    ));
                }
                (false, Some(_)) => {
                    return Err(self.err(
                        span,
                        &format!("{at}.statistic"),
                        "only throughput_mbps, queuing_delay_ms and rtt_ms take a statistic",
                    ));
                }
                _ => {}
            }
            let threshold_ms = match (f.metric, f.threshold_ms) {
                (Metric::QueuingDelayExceedance, Some(t)) => {
                    if !(t.get_ref().is_finite() && *t.get_ref() > 0.0) {
                        return Err(self.err(
                            t.span(),
                            &format!("{at}.threshold_ms"),
                            format!("must be finite and positive, got {}", t.get_ref()),
                        ));
                    }
                    Some(t.into_inner())
                }
                (Metric::QueuingDelayExceedance, None) => {
                    return Err(self.err(span, &format!("{at}.threshold_ms"), "missing"));
                }
                (_, Some(t)) => {
                    return Err(self.err(
                        t.span(),
                        &format!("{at}.threshold_ms"),
                        "only queuing_delay_exceedance takes a threshold",
                    ));
                }
                (_, None) => None,
            };
            let value = *f.value.get_ref();
            let value_field = format!("{at}.value");
            if !value.is_finite() {
                return Err(self.err(
                    f.value.span(),
                    &value_field,
                    format!("must be finite, got {value}"),
                ));
            }
            let unit = *f.unit.get_ref();
            if unit != f.metric.unit() {
                return Err(self.err(
                    f.unit.span(),
                    &format!("{at}.unit"),
                    format!(
                        "is \"{}\"; {} is written in \"{}\"",
                        unit.as_str(),
                        f.metric.as_str(),
                        f.metric.unit().as_str()
                    ),
                ));
            }
            let max = match f.metric {
                _ if unit == Unit::Percent => 100.0,
                Metric::Jain => 1.0,
                _ => f64::INFINITY,
            };
            if !(0.0..=max).contains(&value) {
                return Err(self.err(
                    f.value.span(),
                    &value_field,
                    format!("{value} is outside [0, {max}]"),
                ));
            }
            let mut tolerance = f.metric.default_tolerance(f.statistic);
            if let Some(t) = f.tolerance {
                let field = format!("{at}.tolerance");
                let (t_span, t) = (t.span(), t.into_inner());
                if t.abs.is_none() && t.rel.is_none() {
                    return Err(self.err(t_span, &field, "give abs, rel or both"));
                }
                for (part, v, slot) in [
                    ("abs", t.abs, &mut tolerance.abs),
                    ("rel", t.rel, &mut tolerance.rel),
                ] {
                    if let Some(v) = v {
                        if !(v.is_finite() && v >= 0.0) {
                            return Err(self.err(
                                t_span.clone(),
                                &format!("{field}.{part}"),
                                format!("must be finite and not negative, got {v}"),
                            ));
                        }
                        *slot = v;
                    }
                }
            }
            out.push(PaperFigure {
                preset,
                column,
                row: f.row.into_inner(),
                flows,
                metric: f.metric,
                statistic: f.statistic,
                threshold_ms,
                relation: f.relation,
                value,
                unit,
                better: f.better,
                tolerance,
                runs,
                source: source.clone(),
                quote: f.quote,
                notes: group.note.iter().chain(&f.note).cloned().collect(),
            });
        }
        Ok(())
    }

    fn source(&self, at: &str, raw: Spanned<RawSource>) -> Result<Source, Error> {
        let span = raw.span();
        let s = raw.into_inner();
        let nonempty = |v: &Option<String>| v.as_ref().is_some_and(|t| !t.trim().is_empty());
        if !nonempty(&s.table) && !nonempty(&s.figure) {
            return Err(self.err(span, at, "give the table or the figure the number is from"));
        }
        if s.section.get_ref().trim().is_empty() {
            return Err(self.err(
                s.section.span(),
                &format!("{at}.section"),
                "must not be empty",
            ));
        }
        let page = match s.page.get_ref() {
            toml::Value::Integer(n) if (1..=i64::from(u32::MAX)).contains(n) => {
                Page::Number(u32::try_from(*n).expect("checked to be in u32's range"))
            }
            toml::Value::String(t) if t == PAGE_NOT_IN_TEXT_COPY => Page::NotInTextCopy,
            _ => {
                return Err(self.err(
                    s.page.span(),
                    &format!("{at}.page"),
                    format!("must be a page number or \"{PAGE_NOT_IN_TEXT_COPY}\""),
                ));
            }
        };
        Ok(Source {
            table: s.table,
            figure: s.figure,
            section: s.section.into_inner(),
            page,
        })
    }

    /// `"none"` → `None`; otherwise a shipped preset's name.
    fn preset(&self, at: &str, raw: Spanned<String>) -> Result<Option<String>, Error> {
        let name = raw.get_ref();
        if name == "none" {
            return Ok(None);
        }
        if crate::scenario::presets::text(name).is_none() {
            return Err(self.err(
                raw.span(),
                at,
                format!(
                    "no preset `{name}` in crates/netlab/scenarios/ (write \"none\" if there is none)"
                ),
            ));
        }
        Ok(Some(raw.into_inner()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::papers::{Tolerance, parse};

    fn message(text: &str) -> String {
        match parse(text, "test.toml") {
            Ok(_) => panic!("accepted:\n{text}"),
            Err(e) => e.to_string(),
        }
    }

    const HEADER: &str = r#"
[paper]
id = "t"
citation = "A. Author, Title, 2016."
text_copy = "t.txt"
"#;

    #[test]
    fn an_entry_tolerance_overrides_only_what_it_gives() {
        let text = format!(
            "{HEADER}
[[group]]
source = {{ table = \"Table 1\", section = \"6.1\", page = 3 }}
preset = \"none\"
column = \"Value\"
flows = \"cg\"
figures = [
  {{ row = \"p50\", metric = \"queuing_delay_ms\", statistic = \"p50\", value = 10.0, unit = \"ms\", better = \"lower\", tolerance = {{ abs = 10.0 }} }},
]
"
        );
        let p = parse(&text, "test.toml").unwrap_or_else(|e| panic!("{e}"));
        let f = &p.figures[0];
        assert_eq!(
            f.tolerance,
            Tolerance {
                abs: 10.0,
                rel: 0.20
            }
        );
        assert_eq!(f.source.page, Page::Number(3));
        assert_eq!(f.preset, None);
    }

    /// A valid file with `entry` as its only figure.
    fn with_entry(entry: &str) -> String {
        format!(
            "{HEADER}
[[group]]
source = {{ table = \"Table 1\", section = \"6.1\", page = \"page not in the text copy\" }}
preset = \"mmsys16-6.1-variable-capacity\"
column = \"Value\"
flows = \"cg\"
figures = [
  {entry},
]
"
        )
    }

    #[test]
    fn the_test_file_is_valid_as_written() {
        let ok = with_entry(
            r#"{ row = "U", metric = "utilisation", value = 84.0, unit = "%", better = "higher" }"#,
        );
        let p = parse(&ok, "test.toml").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.figures.len(), 1);
        assert_eq!(
            p.figures[0].preset.as_deref(),
            Some("mmsys16-6.1-variable-capacity")
        );
    }

    #[test]
    fn an_unknown_field_is_refused_by_name() {
        let m = message(&with_entry(
            r#"{ row = "U", metric = "utilisation", value = 84.0, unit = "%", better = "higher", colour = "red" }"#,
        ));
        assert!(
            m.contains("field `colour`") && m.contains("unknown field"),
            "{m}"
        );
        assert!(m.starts_with("test.toml:"), "{m}");
    }

    #[test]
    fn a_group_without_source_is_refused() {
        let text = format!(
            "{HEADER}
[[group]]
preset = \"none\"
column = \"Value\"
flows = \"cg\"
figures = [
  {{ row = \"U\", metric = \"utilisation\", value = 84.0, unit = \"%\", better = \"higher\" }},
]
"
        );
        let m = message(&text);
        assert!(m.contains("field `source`") && m.contains("missing"), "{m}");
    }

    #[test]
    fn a_source_without_page_or_table_is_refused() {
        let text = with_entry(
            r#"{ row = "U", metric = "utilisation", value = 84.0, unit = "%", better = "higher" }"#,
        );
        let no_page = text.replace(", page = \"page not in the text copy\"", "");
        let m = message(&no_page);
        assert!(m.contains("field `page`") && m.contains("missing"), "{m}");
        let made_up = text.replace("\"page not in the text copy\"", "\"somewhere\"");
        let m = message(&made_up);
        assert!(m.contains("group[0].source.page"), "{m}");
        let no_table = text.replace("table = \"Table 1\", ", "");
        let m = message(&no_table);
        assert!(
            m.contains("group[0].source") && m.contains("table or the figure"),
            "{m}"
        );
    }

    #[test]
    fn a_non_finite_value_is_refused_by_name() {
        for v in ["nan", "inf", "-inf"] {
            let m = message(&with_entry(&format!(
                r#"{{ row = "U", metric = "utilisation", value = {v}, unit = "%", better = "higher" }}"#
            )));
            assert!(
                m.contains("field `group[0].figures[0].value`") && m.contains("finite"),
                "{m}"
            );
        }
    }

    #[test]
    fn an_unknown_metric_or_a_mismatched_unit_is_refused() {
        let m = message(&with_entry(
            r#"{ row = "U", metric = "happiness", value = 84.0, unit = "%", better = "higher" }"#,
        ));
        assert!(
            m.contains("field `metric`") && m.contains("happiness"),
            "{m}"
        );
        let m = message(&with_entry(
            r#"{ row = "U", metric = "utilisation", value = 0.84, unit = "1", better = "higher" }"#,
        ));
        assert!(m.contains("figures[0].unit"), "{m}");
    }

    #[test]
    fn missing_statistic_threshold_or_preset_is_refused() {
        let m = message(&with_entry(
            r#"{ row = "d", metric = "queuing_delay_ms", value = 20.0, unit = "ms", better = "lower" }"#,
        ));
        assert!(m.contains("figures[0].statistic"), "{m}");
        let m = message(&with_entry(
            r#"{ row = "d", metric = "queuing_delay_exceedance", value = 2.0, unit = "%", better = "lower" }"#,
        ));
        assert!(m.contains("figures[0].threshold_ms"), "{m}");
        let m = message(&with_entry(
            r#"{ preset = "no-such-preset", row = "U", metric = "utilisation", value = 84.0, unit = "%", better = "higher" }"#,
        ));
        assert!(
            m.contains("figures[0].preset") && m.contains("no-such-preset"),
            "{m}"
        );
    }

    #[test]
    fn a_percentage_above_100_is_refused() {
        let m = message(&with_entry(
            r#"{ row = "U", metric = "utilisation", value = 840.0, unit = "%", better = "higher" }"#,
        ));
        assert!(
            m.contains("figures[0].value") && m.contains("outside"),
            "{m}"
        );
    }
}
