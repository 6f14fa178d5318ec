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

use std::ops::Range;

use serde::Deserialize;
use toml::Spanned;

use crate::Error;
use crate::input::{from_toml, located};

/// The shipped files: (paper id, path named in errors, text).
const FILES: [(&str, &str, &str); 3] = [
    (
        "mmsys16",
        "papers/mmsys16.toml",
        include_str!("../papers/mmsys16.toml"),
    ),
    (
        "ccr16",
        "papers/ccr16.toml",
        include_str!("../papers/ccr16.toml"),
    ),
    (
        "tma24",
        "papers/tma24.toml",
        include_str!("../papers/tma24.toml"),
    ),
];

/// What a `page` says when the plain-text copy has no page markers.
pub const PAGE_NOT_IN_TEXT_COPY: &str = "page not in the text copy";

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

/// One paper and its figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Paper {
    /// Short id, the file's stem (`mmsys16`).
    pub id: String,
    /// Full citation.
    pub citation: String,
    /// The plain-text copy the figures were transcribed from.
    pub text_copy: String,
    /// Provenance and measurement notes that hold for the whole paper.
    pub note: Option<String>,
    /// Its numbers, in file order.
    pub figures: Vec<PaperFigure>,
}

/// One number published in a paper.
#[derive(Debug, Clone, PartialEq)]
pub struct PaperFigure {
    /// The preset (`crates/netlab/scenarios/<name>.toml`) that runs this experiment; `None` when
    /// netlab has none.
    pub preset: Option<String>,
    /// Column label as printed (or the experiment, for numbers stated in the text).
    pub column: String,
    /// Row label as printed.
    pub row: String,
    /// Which flows of the experiment the number is about; `None` for a parameter.
    pub flows: Option<Flows>,
    /// What is measured.
    pub metric: Metric,
    /// Mean, percentile…: set for [`Metric::ThroughputMbps`], [`Metric::QueuingDelayMs`] and
    /// [`Metric::RttMs`].
    pub statistic: Option<Statistic>,
    /// The delay threshold of a [`Metric::QueuingDelayExceedance`], ms.
    pub threshold_ms: Option<f64>,
    /// Whether the paper gives a value, an approximation or a bound.
    pub relation: Relation,
    /// The paper's number, in [`Self::unit`], as printed.
    pub value: f64,
    /// The unit of `value` (and of the `ours` given to [`Self::verdict`]).
    pub unit: Unit,
    /// Which way is better.
    pub better: Better,
    /// The band within which ours counts as the paper's (see [`PaperFigure::verdict`]).
    pub tolerance: Tolerance,
    /// Runs the paper averaged over, when it says.
    pub runs: Option<u32>,
    /// Where it is printed.
    pub source: Source,
    /// The paper's words, for numbers stated in the text.
    pub quote: Option<String>,
    /// Doubts and readings: the group's note, then the entry's.
    pub notes: Vec<String>,
}

impl PaperFigure {
    /// The half-width of the band around `value`, in [`Self::unit`]:
    /// `max(tolerance.abs, tolerance.rel × |value|)`.
    pub fn band(&self) -> f64 {
        self.tolerance
            .abs
            .max(self.tolerance.rel * self.value.abs())
    }

    /// Our measurement `ours` (in [`Self::unit`]: per cent as 84.0, not 0.84) against the
    /// paper's number.
    ///
    /// With `band` = [`Self::band`] (edges inclusive):
    /// - [`Relation::Equal`] and [`Relation::Approx`]: [`Verdict::Within`] when
    ///   `|ours − value| ≤ band`;
    /// - [`Relation::AtMost`] (the paper says "less than value"): within when
    ///   `ours ≤ value + band`, however far below;
    /// - [`Relation::AtLeast`] ("more than value"): within when `ours ≥ value − band`.
    ///
    /// Outside, the side decides: [`Verdict::Better`] when ours lies on the paper's
    /// [`Self::better`] side, [`Verdict::Worse`] otherwise. With [`Better::Neither`] any
    /// departure is [`Verdict::Worse`]: failing to reproduce a number that has no good side.
    ///
    /// A non-finite `ours` (NaN: no measurement) is [`Verdict::Worse`], never a pass; a
    /// caller that must tell "not measured" apart checks `ours.is_finite()` first.
    pub fn verdict(&self, ours: f64) -> Verdict {
        if !ours.is_finite() {
            return Verdict::Worse;
        }
        let band = self.band();
        let (low, high) = match self.relation {
            Relation::Equal | Relation::Approx => (self.value - band, self.value + band),
            Relation::AtMost => (f64::NEG_INFINITY, self.value + band),
            Relation::AtLeast => (self.value - band, f64::INFINITY),
        };
        let side = if ours > high {
            Better::Higher
        } else if ours < low {
            Better::Lower
        } else {
            return Verdict::Within;
        };
        if side == self.better {
            Verdict::Better
        } else {
            Verdict::Worse
        }
    }
}

/// Our number against the paper's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Within the paper's figure's tolerance band.
    Within,
    /// Outside it, on the better side.
    Better,
    /// Outside it, on the worse side (or the number has no better side).
    Worse,
}

/// What a number measures. Each metric takes one [`Unit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Received rate of the flows, Mbit/s (the papers' "throughput", "bitrate", "goodput").
    ThroughputMbps,
    /// Received rate of the flows over the bottleneck capacity, % ("channel utilization").
    Utilisation,
    /// Bytes (or packets) lost over bytes sent, %.
    LossRatio,
    /// Queuing delay, ms, summarised by a [`Statistic`].
    QueuingDelayMs,
    /// Round-trip time the media sender measured (from RTCP), ms, summarised by a
    /// [`Statistic`]: what MMSys16 Fig. 10 plots, propagation delay included.
    RttMs,
    /// Share of packets whose queuing delay exceeds `threshold_ms`, %.
    QueuingDelayExceedance,
    /// Jain's fairness index, dimensionless.
    Jain,
    /// A gain of GCC's adaptive threshold (MMSys16 eq. 18, ku or kd), dimensionless.
    ThresholdGain,
}

impl Metric {
    /// As written in the files.
    pub fn as_str(self) -> &'static str {
        match self {
            Metric::ThroughputMbps => "throughput_mbps",
            Metric::Utilisation => "utilisation",
            Metric::LossRatio => "loss_ratio",
            Metric::QueuingDelayMs => "queuing_delay_ms",
            Metric::RttMs => "rtt_ms",
            Metric::QueuingDelayExceedance => "queuing_delay_exceedance",
            Metric::Jain => "jain",
            Metric::ThresholdGain => "threshold_gain",
        }
    }

    /// The unit values of this metric are written in.
    pub fn unit(self) -> Unit {
        match self {
            Metric::ThroughputMbps => Unit::MbitPerS,
            Metric::QueuingDelayMs | Metric::RttMs => Unit::Ms,
            Metric::Utilisation | Metric::LossRatio | Metric::QueuingDelayExceedance => {
                Unit::Percent
            }
            Metric::Jain | Metric::ThresholdGain => Unit::Dimensionless,
        }
    }

    /// Whether a [`Statistic`] is needed (and allowed).
    pub fn has_statistic(self) -> bool {
        matches!(
            self,
            Metric::ThroughputMbps | Metric::QueuingDelayMs | Metric::RttMs
        )
    }

    /// The default tolerance; an entry's `tolerance` overrides the parts it gives.
    ///
    /// | metric | abs | rel | why |
    /// |---|---|---|---|
    /// | `throughput_mbps` | 0 | 10 % | narrower than one congestion back-off (GCC's α = 0.85, MMSys16 eq. 3, moves the rate 15 %), wider than an encoder's wander about its target |
    /// | `utilisation` | 5 points | – | MMSys16 prints whole per cent of ten-run means; GCC takes ~25 s to reach a new capacity (§6.1), several points of a 50 s step by itself |
    /// | `loss_ratio` | 0.1 point | 25 % | losses are few and bursty and printed to one or two figures (0.7 %, 1.2 %); 0.1 % of a 200 s run at 1 Mbit/s is ~20 packets, one drop-tail overflow |
    /// | `queuing_delay_ms`, mean or percentile | 2 ms | 20 % | percentiles of RTCP-sampled RTTs rest on few samples in the tail; 2 ms is ten 1200-byte packets at 50 Mbit/s. At 1–3 Mbit/s one packet is 3–10 ms: those entries raise the floor to 10 ms in the data |
    /// | `queuing_delay_ms`, stddev | 2 ms | 30 % | a single run's second moment is noisier than its mean |
    /// | `rtt_ms` | as `queuing_delay_ms` | | the same samples with the propagation delay added |
    /// | `queuing_delay_exceedance` | 1 point | 10 % | shares of a single run (TMA24); 1 point keeps "0 %" from failing on a few late packets |
    /// | `jain` | 0.05 | – | printed to two decimals; two flows splitting 61/39 instead of 50/50 lose 0.046 |
    /// | `threshold_gain` | – | 5 % | one cell of MMSys16 Fig. 8's grid (200 log steps over four decades) is 10^(4/200) = 4.7 % |
    pub fn default_tolerance(self, statistic: Option<Statistic>) -> Tolerance {
        let (abs, rel) = match self {
            Metric::ThroughputMbps => (0.0, 0.10),
            Metric::Utilisation => (5.0, 0.0),
            Metric::LossRatio => (0.1, 0.25),
            Metric::QueuingDelayMs | Metric::RttMs if statistic == Some(Statistic::Stddev) => {
                (2.0, 0.30)
            }
            Metric::QueuingDelayMs | Metric::RttMs => (2.0, 0.20),
            Metric::QueuingDelayExceedance => (1.0, 0.10),
            Metric::Jain => (0.05, 0.0),
            Metric::ThresholdGain => (0.0, 0.05),
        };
        Tolerance { abs, rel }
    }
}

/// How a set of samples is summarised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Statistic {
    /// Mean.
    Mean,
    /// Standard deviation.
    Stddev,
    /// 5th percentile.
    P5,
    /// 25th percentile (first quartile).
    P25,
    /// Median.
    P50,
    /// 75th percentile (third quartile).
    P75,
    /// 95th percentile.
    P95,
}

/// The unit a value is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Unit {
    /// `"Mbit/s"`.
    #[serde(rename = "Mbit/s")]
    MbitPerS,
    /// `"ms"`.
    #[serde(rename = "ms")]
    Ms,
    /// `"%"`: 84 % is written 84.0.
    #[serde(rename = "%")]
    Percent,
    /// `"1"`: a pure number.
    #[serde(rename = "1")]
    Dimensionless,
}

impl Unit {
    /// As written in the files.
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::MbitPerS => "Mbit/s",
            Unit::Ms => "ms",
            Unit::Percent => "%",
            Unit::Dimensionless => "1",
        }
    }
}

/// Which way is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    /// More is better (utilisation, a media flow's rate, Jain's index).
    Higher,
    /// Less is better (delay, loss).
    Lower,
    /// Neither (a fair share, a competitor's rate, a parameter): written `"none"`.
    #[serde(rename = "none")]
    Neither,
}

/// Which flows of the experiment a number is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Flows {
    /// The media flows under test (`kind = "cg"`: GCC or SCReAM), together.
    Cg,
    /// The competing TCP flows, together.
    Tcp,
    /// Every flow on the bottleneck.
    All,
}

/// What the paper's number is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Relation {
    /// A value (every table cell).
    #[default]
    Equal,
    /// An approximate value: "around", "roughly".
    Approx,
    /// An upper bound: "less than", "below".
    AtMost,
    /// A lower bound: "higher than", "above".
    AtLeast,
}

/// A tolerance band: `max(abs, rel × |value|)` either side (see [`PaperFigure::verdict`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    /// Absolute floor, in the entry's unit.
    pub abs: f64,
    /// Relative part, a fraction of the paper's value.
    pub rel: f64,
}

/// Where a number is printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// `Table 1`, `Table II`.
    pub table: Option<String>,
    /// `Fig. 8`, `Figs. 6-7`.
    pub figure: Option<String>,
    /// Section number (`6.1`, `IV`).
    pub section: String,
    /// The page.
    pub page: Page,
}

/// A page reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Page {
    /// A page number of the published paper.
    Number(u32),
    /// The plain-text copy has no page markers (written [`PAGE_NOT_IN_TEXT_COPY`]).
    NotInTextCopy,
}

// ---------------------------------------------------------------------------------------
// The files' schema.

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
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

// ---------------------------------------------------------------------------------------
// Checking.

struct Checker<'a> {
    text: &'a str,
    file: &'a str,
}

impl Checker<'_> {
    fn err(&self, span: Range<usize>, field: &str, message: impl Into<String>) -> Error {
        located(self.text, self.file, span, field, message.into())
    }

    fn paper(&self, raw: RawFile) -> Result<Paper, Error> {
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
    use std::collections::BTreeSet;
    use std::path::Path;

    use super::*;

    fn figure(value: f64, relation: Relation, better: Better, abs: f64, rel: f64) -> PaperFigure {
        PaperFigure {
            preset: None,
            column: "Value".into(),
            row: "test".into(),
            flows: Some(Flows::Cg),
            metric: Metric::ThroughputMbps,
            statistic: Some(Statistic::Mean),
            threshold_ms: None,
            relation,
            value,
            unit: Unit::MbitPerS,
            better,
            tolerance: Tolerance { abs, rel },
            runs: None,
            source: Source {
                table: Some("Table 1".into()),
                figure: None,
                section: "1".into(),
                page: Page::NotInTextCopy,
            },
            quote: None,
            notes: Vec::new(),
        }
    }

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

    #[test]
    fn higher_is_better_outside_the_band_is_better_above_and_worse_below() {
        // Band 0.5 either side of 2.0 (exact in binary, so the edges are exact).
        let f = figure(2.0, Relation::Equal, Better::Higher, 0.5, 0.0);
        assert_eq!(f.verdict(2.0), Verdict::Within);
        assert_eq!(f.verdict(2.5), Verdict::Within);
        assert_eq!(f.verdict(1.5), Verdict::Within);
        assert_eq!(f.verdict(2.5 + 1e-9), Verdict::Better);
        assert_eq!(f.verdict(1.5 - 1e-9), Verdict::Worse);
    }

    #[test]
    fn lower_is_better_outside_the_band_is_better_below_and_worse_above() {
        // Relative band: 25 % of 8.0 = 2.0, above the 1.0 floor.
        let f = figure(8.0, Relation::Approx, Better::Lower, 1.0, 0.25);
        assert_eq!(f.band(), 2.0);
        assert_eq!(f.verdict(10.0), Verdict::Within);
        assert_eq!(f.verdict(6.0), Verdict::Within);
        assert_eq!(f.verdict(10.0 + 1e-9), Verdict::Worse);
        assert_eq!(f.verdict(6.0 - 1e-9), Verdict::Better);
        // The absolute floor holds around zero.
        let zero = figure(0.0, Relation::Equal, Better::Lower, 0.25, 0.25);
        assert_eq!(zero.verdict(0.25), Verdict::Within);
        assert_eq!(zero.verdict(0.5), Verdict::Worse);
    }

    #[test]
    fn bounds_accept_anything_on_their_side() {
        let at_most = figure(0.5, Relation::AtMost, Better::Lower, 0.25, 0.0);
        assert_eq!(at_most.verdict(0.0), Verdict::Within);
        assert_eq!(at_most.verdict(0.75), Verdict::Within);
        assert_eq!(at_most.verdict(1.0), Verdict::Worse);
        // "Losses higher than 1 %" (lower is better): fewer is better than the paper.
        let at_least = figure(1.0, Relation::AtLeast, Better::Lower, 0.25, 0.0);
        assert_eq!(at_least.verdict(5.0), Verdict::Within);
        assert_eq!(at_least.verdict(0.75), Verdict::Within);
        assert_eq!(at_least.verdict(0.5), Verdict::Better);
    }

    #[test]
    fn no_better_side_makes_any_departure_worse() {
        let f = figure(1.0, Relation::Approx, Better::Neither, 0.0, 0.5);
        assert_eq!(f.verdict(1.5), Verdict::Within);
        assert_eq!(f.verdict(2.0), Verdict::Worse);
        assert_eq!(f.verdict(0.25), Verdict::Worse);
    }

    #[test]
    fn a_missing_measurement_is_worse() {
        for better in [Better::Higher, Better::Lower, Better::Neither] {
            let f = figure(1.0, Relation::AtMost, better, 0.5, 0.0);
            assert_eq!(f.verdict(f64::NAN), Verdict::Worse);
            assert_eq!(f.verdict(f64::INFINITY), Verdict::Worse);
            assert_eq!(f.verdict(f64::NEG_INFINITY), Verdict::Worse);
        }
    }

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
