//! `netlab reproduce`: the papers' experiments run in network namespaces, or with `--sim` in
//! simulated time ([`crate::simrun`]), and held against the papers' own numbers
//! ([`crate::papers`]).
//!
//! For every preset a paper's figure names (all, or those matching `--only PATTERN`), the
//! preset runs as `netlab run` would run it (or simulated), into `OUT/<preset>/`; a preset whose
//! `OUT/<preset>/summary.json` already exists is not run again, so an interrupted reproduction
//! resumes where it stopped (delete the directory to run it again). Then one report is written:
//! `OUT/report.md` and a self-contained `OUT/report.html` (plots embedded), a row for every
//! number of the papers' tables — ours beside the paper's and a verdict (within the paper's
//! figure, better, worse), or why we have no number — and the run's facts (backend, encoder,
//! seed, machine).
//!
//! # How a paper's number is read from a run
//!
//! From `summary.json` (the preset's metrics window, its `warmup` to its end) and, for
//! throughput quartiles, the flow's per-bin rates in `flow-<name>.csv` (1 s averages):
//!
//! | metric | flows `cg` / `tcp` (one flow, or several) | flows `all` |
//! |---|---|---|
//! | throughput (mean) | the flows' rates summed | every forward flow summed |
//! | throughput (quartiles) | the 1 s rates of the flows summed | same |
//! | utilisation | the link's utilisation × the flows' share of delivered bytes | the link's |
//! | loss | the flows' loss ratios, weighted by delivered bytes | the link's |
//! | queuing delay (mean) | per-packet sojourn at the bottleneck, mean over the flows' packets | the link's |
//! | queuing delay (stddev, percentiles) | one flow's; for several flows, over their packets pooled (`qdelay_ms_by_kind`: the selection is every forward flow of a kind), or the link's when they are every flow | the link's |
//! | RTT (mean, percentiles) | the media sender's RTT samples (cg-send's, from RTCP): one flow's; the mean over several flows' samples | – |
//! | share of packets over a delay | the flows' shares, weighted by their packets | the link's |
//! | Jain's index | over the selected flows' rates | over every forward flow |
//!
//! Our queuing delay is the packet's sojourn in the bottleneck queue, measured per packet. The
//! GCC papers compute theirs from RTCP round trips (RTT − RTT_min), TMA24 from captures on both
//! sides of its router: the same quantity, sampled differently.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::Value;

use crate::papers::{self, Flows, Metric, Paper, PaperFigure, Relation, Statistic, Verdict};
use crate::report::{self, RunRequest};
use crate::scenario::presets;
use crate::{Error, Result};

/// What `netlab reproduce` was asked.
#[derive(Debug, Clone)]
pub struct Options {
    /// Output directory: one sub-directory per preset, and the report.
    pub out: PathBuf,
    /// Only the presets whose name matches this pattern (`*` matches anything).
    pub only: Option<String>,
    /// Simulated time ([`crate::simrun`]) instead of network namespaces.
    pub sim: bool,
    /// A finished two-axis sweep (`netlab sweep`, e.g. MMSys16 Fig. 8's ku × kd): its best
    /// cell answers the papers' parameter rows of the same names, its heat map joins the
    /// report.
    pub sweep: Option<PathBuf>,
    /// How each preset runs (its `out` and `base` are set per preset).
    pub run: RunRequest,
}

/// Whether `name` matches `pattern`, or one of its comma-separated alternatives: `*` stands
/// for any run of characters; without a `*`, a substring match.
pub fn matches(pattern: &str, name: &str) -> bool {
    if pattern.contains(',') {
        return pattern.split(',').any(|p| matches(p.trim(), name));
    }
    if !pattern.contains('*') {
        return name.contains(pattern);
    }
    let parts: Vec<&str> = pattern.split('*').collect();
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !name.starts_with(first) || name.len() < first.len() + last.len() {
        return false;
    }
    let mut rest = &name[first.len()..name.len() - last.len()];
    if !name.ends_with(last) {
        return false;
    }
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    true
}

/// The presets the papers' figures name, in paper order, each once, filtered by `only`.
pub fn experiments(papers: &[Paper], only: Option<&str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for f in papers.iter().flat_map(|p| &p.figures) {
        if let Some(p) = &f.preset
            && !out.contains(p)
            && only.is_none_or(|pat| matches(pat, p))
        {
            out.push(p.clone());
        }
    }
    out
}

/// Our number for a paper's figure, or why there is none.
#[derive(Debug, Clone, PartialEq)]
pub enum Measured {
    /// In the figure's unit.
    Value(f64),
    /// Not measured, and why.
    Missing(String),
}

/// One finished (or failed) run: its summary and per-flow 1 s rates.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// `summary.json`.
    pub summary: Value,
    /// Per flow name: the 1 s average rates (Mbit/s) inside the metrics window.
    pub rates: BTreeMap<String, Vec<f64>>,
}

impl RunResult {
    /// Reads a run's directory (`summary.json`, `flow-*.csv`).
    pub fn load(dir: &Path) -> Result<RunResult> {
        let path = dir.join("summary.json");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| Error::io(format!("read {}", path.display()), e))?;
        let summary: Value = serde_json::from_str(&text).map_err(|e| Error::Output {
            path: path.clone(),
            detail: format!("not a netlab summary: {e}"),
        })?;
        let window = (
            summary["metrics"]["window_s"][0].as_f64().unwrap_or(0.0),
            summary["metrics"]["window_s"][1]
                .as_f64()
                .unwrap_or(f64::INFINITY),
        );
        let mut rates = BTreeMap::new();
        for f in summary["metrics"]["flows"].as_array().into_iter().flatten() {
            let Some(name) = f["name"].as_str() else {
                continue;
            };
            let csv = dir.join(format!("flow-{name}.csv"));
            if let Ok(text) = std::fs::read_to_string(&csv) {
                rates.insert(name.to_owned(), one_second_rates(&text, window));
            }
        }
        Ok(RunResult { summary, rates })
    }

    fn forward_flows(&self) -> Vec<&Value> {
        self.summary["metrics"]["flows"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|f| f["direction"] == "forward")
            .collect()
    }
}

/// 1 s averages of a flow CSV's `rate_mbps` over the bins inside `window` (s).
fn one_second_rates(csv: &str, window: (f64, f64)) -> Vec<f64> {
    let mut lines = csv.lines();
    let Some(header) = lines.next() else {
        return Vec::new();
    };
    let cols: Vec<&str> = header.split(',').collect();
    let (Some(ti), Some(ri)) = (
        cols.iter().position(|c| *c == "t_s"),
        cols.iter().position(|c| *c == "rate_mbps"),
    ) else {
        return Vec::new();
    };
    let mut per_second: BTreeMap<i64, (f64, u32)> = BTreeMap::new();
    for line in lines {
        let v: Vec<&str> = line.split(',').collect();
        let (Some(t), Some(r)) = (
            v.get(ti).and_then(|s| s.parse::<f64>().ok()),
            v.get(ri).and_then(|s| s.parse::<f64>().ok()),
        ) else {
            continue;
        };
        if t < window.0 || t >= window.1 || !r.is_finite() {
            continue;
        }
        let e = per_second.entry(t.floor() as i64).or_default();
        e.0 += r;
        e.1 += 1;
    }
    per_second
        .values()
        .filter(|(_, n)| *n > 0)
        .map(|(sum, n)| sum / f64::from(*n))
        .collect()
}

fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted.get(i.min(sorted.len() - 1)).copied()
}

fn stat_key(s: Statistic) -> &'static str {
    match s {
        Statistic::Mean => "mean",
        Statistic::Stddev => "stddev",
        Statistic::P5 => "p5",
        Statistic::P25 => "p25",
        Statistic::P50 => "p50",
        Statistic::P75 => "p75",
        Statistic::P95 => "p95",
    }
}

/// Our number for `fig` in `run` (see the module docs for what is read).
pub fn measure(fig: &PaperFigure, run: &RunResult) -> Measured {
    let missing = |why: &str| Measured::Missing(why.to_owned());
    let Some(which) = fig.flows else {
        return missing("a parameter, not a measurement");
    };
    let forward = run.forward_flows();
    let selected: Vec<&Value> = forward
        .iter()
        .copied()
        .filter(|f| match which {
            Flows::Cg => f["kind"] == "cg",
            Flows::Tcp => f["kind"] == "tcp",
            Flows::All => true,
        })
        .collect();
    if selected.is_empty() {
        return missing("the run has no such flow");
    }
    let every = selected.len() == forward.len();
    let link = &run.summary["metrics"]["link"];
    let num = |v: &Value| v.as_f64();
    let sum = |key: &str| selected.iter().filter_map(|f| f[key].as_f64()).sum::<f64>();
    // A per-packet quantity of the flows' queuing delays, averaged over their packets.
    let per_packet = |get: &dyn Fn(&Value) -> Option<f64>| {
        let (mut n, mut w) = (0.0, 0.0);
        for f in &selected {
            let q = &f["qdelay_ms"];
            if let (Some(k), Some(v)) = (q["n"].as_f64(), get(q)) {
                n += k;
                w += k * v;
            }
        }
        (n > 0.0).then(|| w / n)
    };
    let value = match fig.metric {
        Metric::ThresholdGain => return missing("a controller parameter, not a measurement"),
        Metric::ThroughputMbps => match fig.statistic {
            Some(Statistic::Mean) | None => Some(sum("throughput_mbps")),
            Some(
                s @ (Statistic::P5
                | Statistic::P25
                | Statistic::P50
                | Statistic::P75
                | Statistic::P95),
            ) => {
                let series: Vec<&Vec<f64>> = selected
                    .iter()
                    .filter_map(|f| f["name"].as_str().and_then(|n| run.rates.get(n)))
                    .collect();
                let len = series.iter().map(|s| s.len()).min().unwrap_or(0);
                let mut total: Vec<f64> = (0..len)
                    .map(|i| series.iter().map(|s| s[i]).sum())
                    .collect();
                total.sort_by(f64::total_cmp);
                let q = match s {
                    Statistic::P5 => 0.05,
                    Statistic::P25 => 0.25,
                    Statistic::P50 => 0.5,
                    Statistic::P75 => 0.75,
                    _ => 0.95,
                };
                quantile(&total, q)
            }
            Some(Statistic::Stddev) => return missing("rate spread is not reported"),
        },
        Metric::Utilisation => {
            let all: f64 = forward
                .iter()
                .filter_map(|f| f["delivered_bytes"].as_f64())
                .sum();
            let share = if all > 0.0 {
                sum("delivered_bytes") / all
            } else {
                0.0
            };
            num(&link["utilisation"]).map(|u| u * share * 100.0)
        }
        Metric::LossRatio => {
            if every {
                num(&link["loss_ratio"]).map(|l| l * 100.0)
            } else {
                let bytes = sum("delivered_bytes");
                let w: f64 = selected
                    .iter()
                    .filter_map(|f| {
                        Some(f["loss_ratio"].as_f64()? * f["delivered_bytes"].as_f64()?)
                    })
                    .sum();
                (bytes > 0.0).then(|| w / bytes * 100.0)
            }
        }
        Metric::QueuingDelayMs => {
            let stat = stat_key(fig.statistic.unwrap_or(Statistic::Mean));
            if every {
                num(&link["qdelay_ms"][stat])
            } else if let [one] = selected.as_slice() {
                num(&one["qdelay_ms"][stat])
            } else if stat == "mean" {
                per_packet(&|q| q["mean"].as_f64())
            } else {
                // The selected flows are every forward flow of one kind: their packets pooled.
                let kind = match which {
                    Flows::Cg => "cg",
                    Flows::Tcp => "tcp",
                    // Every flow is `every`, answered above.
                    Flows::All => return missing("a percentile over every flow is the link's"),
                };
                match num(&run.summary["metrics"]["qdelay_ms_by_kind"][kind][stat]) {
                    Some(v) => Some(v),
                    None => {
                        return missing(
                            "a percentile over several flows needs the pooled delays \
                             (qdelay_ms_by_kind), which this run's summary predates: run it again",
                        );
                    }
                }
            }
        }
        Metric::RttMs => {
            let stat = stat_key(fig.statistic.unwrap_or(Statistic::Mean));
            match selected.as_slice() {
                [one] => {
                    num(&one["rtt_ms"][stat]).filter(|_| one["rtt_ms"]["n"].as_f64() > Some(0.0))
                }
                _ if stat == "mean" => {
                    let (mut n, mut w) = (0.0, 0.0);
                    for f in &selected {
                        if let (Some(k), Some(v)) =
                            (f["rtt_ms"]["n"].as_f64(), f["rtt_ms"]["mean"].as_f64())
                        {
                            n += k;
                            w += k * v;
                        }
                    }
                    (n > 0.0).then(|| w / n)
                }
                _ => return missing("an RTT percentile over several flows is not reported"),
            }
        }
        Metric::QueuingDelayExceedance => {
            let i = match fig.threshold_ms.map(|t| t.round() as i64) {
                Some(10) => 0,
                Some(20) => 1,
                Some(50) => 2,
                Some(100) => 3,
                _ => return missing("netlab reports the shares over 10, 20, 50 and 100 ms only"),
            };
            if every {
                num(&link["qdelay_ms"]["share_above_10_20_50_100"][i]).map(|s| s * 100.0)
            } else {
                per_packet(&|q| q["share_above_10_20_50_100"][i].as_f64()).map(|s| s * 100.0)
            }
        }
        Metric::Jain => {
            let rates: Vec<f64> = selected
                .iter()
                .filter_map(|f| f["throughput_mbps"].as_f64())
                .collect();
            let s: f64 = rates.iter().sum();
            let s2: f64 = rates.iter().map(|r| r * r).sum();
            (s2 > 0.0).then(|| s * s / (rates.len() as f64 * s2))
        }
    };
    match value {
        Some(v) if v.is_finite() => Measured::Value(v),
        _ => missing("not in the run's summary"),
    }
}

/// One row of the report.
#[derive(Debug, Clone)]
pub struct Row<'a> {
    /// The paper.
    pub paper: &'a Paper,
    /// Its number.
    pub figure: &'a PaperFigure,
    /// Ours.
    pub ours: Measured,
    /// Ours against the paper's, when we have a number.
    pub verdict: Option<Verdict>,
}

/// The report's rows: every figure of `papers` (filtered like the runs), with our number from
/// `runs` (per preset: the run, or why it is missing).
pub fn rows<'a>(
    papers: &'a [Paper],
    runs: &BTreeMap<String, std::result::Result<RunResult, String>>,
    only: Option<&str>,
) -> Vec<Row<'a>> {
    let mut out = Vec::new();
    for paper in papers {
        for figure in &paper.figures {
            let ours = match &figure.preset {
                None => Measured::Missing("netlab has no preset for this experiment".into()),
                Some(p) if only.is_some_and(|pat| !matches(pat, p)) => continue,
                Some(p) => match runs.get(p) {
                    Some(Ok(run)) => measure(figure, run),
                    Some(Err(e)) => Measured::Missing(format!("run failed: {e}")),
                    None => Measured::Missing("not run".into()),
                },
            };
            let verdict = match ours {
                Measured::Value(v) => Some(figure.verdict(v)),
                Measured::Missing(_) => None,
            };
            out.push(Row {
                paper,
                figure,
                ours,
                verdict,
            });
        }
    }
    out
}

/// Facts of the reproduction that every report states.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// The machine: host name, CPU model and count, kernel.
    pub machine: String,
    /// Per preset: backend, encoder, seed.
    pub runs: BTreeMap<String, String>,
    /// When the report was written (UTC, RFC 3339).
    pub written: String,
}

fn verdict_word(v: Option<Verdict>) -> &'static str {
    match v {
        Some(Verdict::Within) => "within",
        Some(Verdict::Better) => "better",
        Some(Verdict::Worse) => "worse",
        None => "—",
    }
}

fn relation_prefix(r: Relation) -> &'static str {
    match r {
        Relation::Equal => "",
        Relation::Approx => "≈ ",
        Relation::AtMost => "≤ ",
        Relation::AtLeast => "≥ ",
    }
}

fn label(f: &PaperFigure) -> String {
    let mut what = f.row.clone();
    if let Some(s) = f.statistic {
        let _ = write!(what, " ({})", stat_key(s));
    }
    if let Some(t) = f.threshold_ms.filter(|t| !f.row.contains(&format!("{t}"))) {
        let _ = write!(what, " (> {t} ms)");
    }
    what
}

fn source(f: &PaperFigure) -> String {
    let s = &f.source;
    let mut out = s
        .table
        .clone()
        .or_else(|| s.figure.clone())
        .unwrap_or_default();
    let _ = write!(out, " §{}", s.section);
    out.trim().to_owned()
}

fn ours_text(m: &Measured) -> String {
    match m {
        Measured::Value(v) if *v != 0.0 && v.abs() < 0.01 => format!("{v:.3e}"),
        Measured::Value(v) => format!("{v:.3}"),
        Measured::Missing(why) => format!("— ({why})"),
    }
}

fn counts(rows: &[Row<'_>], paper: &str) -> [usize; 4] {
    let mut c = [0; 4];
    for r in rows.iter().filter(|r| r.paper.id == paper) {
        c[match r.verdict {
            Some(Verdict::Within) => 0,
            Some(Verdict::Better) => 1,
            Some(Verdict::Worse) => 2,
            None => 3,
        }] += 1;
    }
    c
}

/// The Markdown report.
pub fn markdown(rows: &[Row<'_>], facts: &Facts) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# netlab reproduce: our runs against the papers\n");
    let _ = writeln!(md, "Written {} on {}.\n", facts.written, facts.machine);
    let _ = writeln!(
        md,
        "A verdict says whether our number lies within the paper's figure (its tolerance band, \
         `cg_netlab::papers`), on its better side, or on its worse side. Queuing delay is the \
         per-packet sojourn in the bottleneck queue.\n"
    );
    let _ = writeln!(
        md,
        "## Runs\n\n| preset | backend · encoder · seed |\n|---|---|"
    );
    for (p, f) in &facts.runs {
        let _ = writeln!(md, "| {p} | {f} |");
    }
    let mut papers: Vec<&Paper> = Vec::new();
    for r in rows {
        if !papers.iter().any(|p| p.id == r.paper.id) {
            papers.push(r.paper);
        }
    }
    for paper in papers {
        let [w, b, x, m] = counts(rows, &paper.id);
        let _ = writeln!(
            md,
            "\n## {}\n\n{}\n\n{w} within, {b} better, {x} worse, {m} without our number.\n",
            paper.id, paper.citation
        );
        let _ = writeln!(
            md,
            "| source | preset | column | what | paper | ours | unit | verdict |\n|---|---|---|---|---|---|---|---|"
        );
        for r in rows.iter().filter(|r| r.paper.id == paper.id) {
            let f = r.figure;
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {}{} | {} | {} | {} |",
                source(f),
                f.preset.as_deref().unwrap_or("none"),
                f.column,
                label(f),
                relation_prefix(f.relation),
                f.value,
                ours_text(&r.ours),
                f.unit.as_str(),
                verdict_word(r.verdict),
            );
        }
    }
    md
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The HTML report: the same tables, and each run's plots embedded (PNG as data URLs), so
/// the page is one self-contained file.
pub fn html(
    rows: &[Row<'_>],
    facts: &Facts,
    plots: &BTreeMap<String, Vec<(String, Vec<u8>)>>,
) -> String {
    use base64::Engine as _;
    let mut h = String::from(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>netlab reproduce</title>\
         <style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;font-size:90%}\
         td,th{border:1px solid #ccc;padding:2px 6px}.within{background:#dfd}.better{background:#bfb}\
         .worse{background:#fcc}.missing{color:#888}img{max-width:48%;margin:4px}</style></head><body>",
    );
    let _ = write!(
        h,
        "<h1>netlab reproduce: our runs against the papers</h1><p>Written {} on {}.</p>",
        escape(&facts.written),
        escape(&facts.machine)
    );
    h.push_str("<h2>Runs</h2><table><tr><th>preset</th><th>backend · encoder · seed</th></tr>");
    for (p, f) in &facts.runs {
        let _ = write!(h, "<tr><td>{}</td><td>{}</td></tr>", escape(p), escape(f));
    }
    h.push_str("</table>");
    let mut seen: Vec<&str> = Vec::new();
    for r in rows {
        let id = r.paper.id.as_str();
        if seen.contains(&id) {
            continue;
        }
        seen.push(id);
        let [w, b, x, m] = counts(rows, id);
        let _ = write!(
            h,
            "<h2>{}</h2><p>{}</p><p>{w} within, {b} better, {x} worse, {m} without our number.</p>\
             <table><tr><th>source</th><th>preset</th><th>column</th><th>what</th><th>paper</th>\
             <th>ours</th><th>unit</th><th>verdict</th></tr>",
            escape(id),
            escape(&r.paper.citation)
        );
        for r in rows.iter().filter(|r| r.paper.id == id) {
            let f = r.figure;
            let class = match r.verdict {
                None => "missing",
                v => verdict_word(v),
            };
            let _ = write!(
                h,
                "<tr class=\"{class}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}{}</td>\
                 <td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&source(f)),
                escape(f.preset.as_deref().unwrap_or("none")),
                escape(&f.column),
                escape(&label(f)),
                relation_prefix(f.relation),
                f.value,
                escape(&ours_text(&r.ours)),
                escape(f.unit.as_str()),
                verdict_word(r.verdict),
            );
        }
        h.push_str("</table>");
    }
    if !plots.is_empty() {
        h.push_str("<h2>Plots</h2>");
        for (preset, pngs) in plots {
            let _ = write!(h, "<h3>{}</h3>", escape(preset));
            for (name, png) in pngs {
                let _ = write!(
                    h,
                    "<img alt=\"{}\" src=\"data:image/png;base64,{}\">",
                    escape(name),
                    base64::engine::general_purpose::STANDARD.encode(png)
                );
            }
        }
    }
    h.push_str("</body></html>\n");
    h
}

/// The machine, as the report states it.
pub fn machine() -> String {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let host = read("/proc/sys/kernel/hostname").trim().to_owned();
    let kernel = read("/proc/sys/kernel/osrelease").trim().to_owned();
    let cpuinfo = read("/proc/cpuinfo");
    let model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .and_then(|r| r.split(':').nth(1))
        })
        .unwrap_or("unknown CPU")
        .trim()
        .to_owned();
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{host} ({cpus} × {model}, Linux {kernel})")
}

/// Backend, encoder and seed of a finished run, from its `summary.json` and `scenario.toml`.
fn run_facts(dir: &Path, run: &RunResult) -> String {
    let backend = run.summary["run"]["backend"]
        .as_str()
        .unwrap_or("?")
        .to_owned();
    let sc: toml::Table = std::fs::read_to_string(dir.join("scenario.toml"))
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or_default();
    let seed = sc
        .get("seed")
        .and_then(toml::Value::as_integer)
        .unwrap_or(1);
    let mut encoders: Vec<String> = Vec::new();
    for f in sc
        .get("flows")
        .and_then(toml::Value::as_array)
        .into_iter()
        .flatten()
    {
        if f.get("kind").and_then(toml::Value::as_str) != Some("cg") {
            continue;
        }
        let args: Vec<&str> = f
            .get("send_args")
            .and_then(toml::Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(toml::Value::as_str)
            .collect();
        let enc = args
            .windows(2)
            .find(|w| w[0] == "--codec" || w[0] == "--encoder")
            .map_or("vp8", |w| w[1])
            .to_owned();
        if !encoders.contains(&enc) {
            encoders.push(enc);
        }
    }
    let enc = if encoders.is_empty() {
        "no cg flow".to_owned()
    } else {
        encoders.join(", ")
    };
    format!("{backend} · {enc} · seed {seed}")
}

/// Runs (or reuses) every selected preset, then writes `report.md` and `report.html` in
/// `opts.out`. A preset that fails is reported as such; the others still run.
pub fn run(opts: &Options) -> Result<PathBuf> {
    let papers = papers::all()?;
    let only = opts.only.as_deref();
    let names = experiments(&papers, only);
    if names.is_empty() {
        return Err(Error::NotAvailable(format!(
            "no paper experiment matches {:?}; `netlab presets` lists them",
            only.unwrap_or("")
        )));
    }
    // The sweep is read at the end: a grid that no longer loads is refused now, not after
    // the runs.
    if let Some(dir) = &opts.sweep {
        crate::sweep::Grid::load(&dir.join("grid.toml"))?;
    }
    std::fs::create_dir_all(&opts.out).map_err(|e| Error::Output {
        path: opts.out.clone(),
        detail: e.to_string(),
    })?;
    let started = Instant::now();
    let mut runs = BTreeMap::new();
    let mut facts = Facts {
        machine: machine(),
        written: String::new(),
        runs: BTreeMap::new(),
    };
    let mut plots = BTreeMap::new();
    for (i, name) in names.iter().enumerate() {
        let dir = opts.out.join(name);
        let head = format!("[{}/{}] {name}", i + 1, names.len());
        let previous = RunResult::load(&dir).ok();
        let same_backend = previous
            .as_ref()
            .is_some_and(|r| (r.summary["run"]["backend"] == "simulated") == opts.sim);
        if previous.is_some() && !same_backend {
            // A run of the other kind (simulated / namespaces) is not this reproduction's.
            let _ = std::fs::remove_dir_all(&dir);
        }
        let result = if let Some(run) = previous.filter(|_| same_backend) {
            eprintln!("{head}: already run, reused ({})", dir.display());
            Ok(run)
        } else {
            match presets::load(name) {
                None => Err(format!("no preset `{name}`")),
                Some(Err(e)) => Err(e.to_string()),
                Some(Ok(sc)) => {
                    eprintln!(
                        "{head}: running {:.0} s (elapsed {:.0} s)",
                        sc.duration.as_secs_f64(),
                        started.elapsed().as_secs_f64()
                    );
                    let req = RunRequest {
                        out: dir.clone(),
                        base: presets::trace_dir().to_path_buf(),
                        ..opts.run.clone()
                    };
                    let done = if opts.sim {
                        report::run_simulated(&sc, &dir)
                    } else {
                        report::run_and_report(&sc, &req)
                    };
                    match done {
                        Ok(_) => RunResult::load(&dir).map_err(|e| e.to_string()),
                        Err(e) => {
                            eprintln!("{head}: failed: {e}");
                            // A partial directory would be taken as finished next time.
                            let _ = std::fs::remove_file(dir.join("summary.json"));
                            Err(e.to_string())
                        }
                    }
                }
            }
        };
        if let Ok(run) = &result {
            facts.runs.insert(name.clone(), run_facts(&dir, run));
            let pngs: Vec<(String, Vec<u8>)> = ["rate.png", "delay.png", "loss.png"]
                .iter()
                .filter_map(|f| Some(((*f).to_owned(), std::fs::read(dir.join(f)).ok()?)))
                .collect();
            plots.insert(name.clone(), pngs);
        }
        runs.insert(name.clone(), result);
    }
    facts.written = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let mut rows = rows(&papers, &runs, only);
    let mut sweep_md = String::new();
    if let Some(dir) = &opts.sweep {
        let collected = crate::sweep::collect(dir)?;
        if let Some(crate::sweep::Best {
            grid: name,
            values: best,
            missing,
        }) = crate::sweep::best(dir)?
        {
            for r in rows
                .iter_mut()
                .filter(|r| r.figure.metric == Metric::ThresholdGain)
            {
                if let Some(v) = best.get(&r.figure.row).and_then(|v| v.number()) {
                    r.ours = Measured::Value(v);
                    r.verdict = Some(r.figure.verdict(v));
                }
            }
            if let Ok(png) = std::fs::read(dir.join("heatmap.png")) {
                plots.insert(
                    format!("sweep {name}"),
                    vec![("heatmap.png".to_owned(), png)],
                );
            }
            sweep_md = format!(
                "\n## Sweep {name} ({})\n\n{}{}",
                dir.display(),
                collected.replace("# sweep", "###"),
                if missing > 0 {
                    format!("\n{missing} points missing.\n")
                } else {
                    String::new()
                }
            );
        }
    }
    let md = opts.out.join("report.md");
    let page = opts.out.join("report.html");
    for (path, text) in [
        (&md, markdown(&rows, &facts) + &sweep_md),
        (&page, html(&rows, &facts, &plots)),
    ] {
        std::fs::write(path, text).map_err(|e| Error::Output {
            path: path.clone(),
            detail: e.to_string(),
        })?;
    }
    eprintln!(
        "report: {} and {} ({} rows, {:.0} s)",
        md.display(),
        page.display(),
        rows.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(md)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::papers::Better;

    #[test]
    fn a_sweep_that_does_not_load_is_refused_before_anything_runs() {
        let tmp = std::env::temp_dir().join(format!("netlab-repro-sweep-{}", std::process::id()));
        let (sweep, out) = (tmp.join("sweep"), tmp.join("out"));
        std::fs::create_dir_all(&sweep).unwrap();
        std::fs::write(sweep.join("grid.toml"), "name = \"g\"\nscenarios = []\n").unwrap();
        let opts = Options {
            out: out.clone(),
            only: Some("mmsys16-6.1".into()),
            sim: true,
            sweep: Some(sweep),
            run: RunRequest {
                out: out.clone(),
                base: PathBuf::new(),
                coalesce: std::time::Duration::from_micros(100),
                skip_rtt_check: false,
                quiet: true,
                forwarder_rt: None,
            },
        };
        let e = super::run(&opts).unwrap_err().to_string();
        assert!(e.contains("grid.toml"), "{e}");
        assert!(!out.exists(), "nothing ran");
        std::fs::remove_dir_all(&tmp).ok();
    }

    #[test]
    fn patterns_match_substrings_and_globs() {
        assert!(matches("tma24", "tma24-4-htb-cubic"));
        assert!(matches("tma24-*-cubic", "tma24-4-htb-cubic"));
        assert!(matches("*cubic", "tma24-4-htb-cubic"));
        assert!(matches("*", "anything"));
        assert!(!matches("tma24-*-bbr", "tma24-4-htb-cubic"));
        assert!(!matches("mmsys*", "tma24-4-htb-cubic"));
        assert!(!matches("a*a", "a"));
        assert!(matches("mmsys16-*, tma24-4-*", "tma24-4-htb-cubic"));
        assert!(!matches("mmsys16-*,ccr16", "tma24-4-htb-cubic"));
    }

    #[test]
    fn every_preset_the_papers_name_exists_and_only_filters() {
        let papers = papers::all().unwrap();
        let all = experiments(&papers, None);
        assert!(all.len() >= 20, "{all:?}");
        for p in &all {
            assert!(
                presets::text(p).is_some(),
                "the papers name {p}, which is no preset"
            );
        }
        let tma = experiments(&papers, Some("tma24-4-*"));
        assert_eq!(tma.len(), 6, "{tma:?}");
        assert!(experiments(&papers, Some("no-such")).is_empty());
    }

    /// A run of two forward flows (cg, tcp) and the figures read from it.
    fn run() -> RunResult {
        let summary = serde_json::json!({
            "run": {"backend": "emulated"},
            "metrics": {
                "window_s": [10.0, 20.0],
                "link": {"utilisation": 0.9, "loss_ratio": 0.01,
                         "qdelay_ms": {"mean": 5.0, "p95": 9.0, "share_above_10_20_50_100": [0.2, 0.1, 0.0, 0.0]}},
                "flows": [
                    {"name": "cg", "kind": "cg", "direction": "forward", "throughput_mbps": 3.0,
                     "delivered_bytes": 3000.0, "loss_ratio": 0.0,
                     "qdelay_ms": {"n": 100.0, "mean": 2.0, "p95": 4.0, "share_above_10_20_50_100": [0.1, 0.0, 0.0, 0.0]}},
                    {"name": "tcp", "kind": "tcp", "direction": "forward", "throughput_mbps": 6.0,
                     "delivered_bytes": 6000.0, "loss_ratio": 0.015,
                     "qdelay_ms": {"n": 300.0, "mean": 6.0, "p95": 9.5, "share_above_10_20_50_100": [0.3, 0.1, 0.0, 0.0]}},
                    {"name": "acks", "kind": "tcp", "direction": "reverse", "throughput_mbps": 0.1,
                     "delivered_bytes": 100.0, "loss_ratio": 0.0, "qdelay_ms": {"n": 1.0, "mean": 0.0}}
                ],
                "jain": 0.9
            }
        });
        let mut rates = BTreeMap::new();
        rates.insert("cg".to_owned(), vec![1.0, 2.0, 3.0, 4.0, 5.0]);
        RunResult { summary, rates }
    }

    fn figure(text: &str) -> PaperFigure {
        let file = format!(
            "[paper]\nid = \"t\"\ncitation = \"c\"\ntext_copy = \"t.txt\"\n\n[[group]]\n\
             source = {{ table = \"Table 1\", section = \"1\", page = \"page not in the text copy\" }}\n\
             preset = \"none\"\ncolumn = \"c\"\nfigures = [ {{ row = \"r\", {text} }} ]\n"
        );
        papers::parse(&file, "t.toml")
            .unwrap_or_else(|e| panic!("{e}"))
            .figures
            .remove(0)
    }

    #[test]
    fn figures_are_read_from_the_flows_they_name() {
        let r = run();
        let m = |t: &str| measure(&figure(t), &r);
        let v = |x: f64| Measured::Value(x);
        let close = |a: Measured, b: f64| match a {
            Measured::Value(x) => assert!((x - b).abs() < 1e-9, "{x} != {b}"),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            m(
                "flows = \"cg\", metric = \"throughput_mbps\", statistic = \"mean\", value = 1.0, unit = \"Mbit/s\", better = \"higher\""
            ),
            v(3.0)
        );
        assert_eq!(
            m(
                "flows = \"cg\", metric = \"throughput_mbps\", statistic = \"p50\", value = 1.0, unit = \"Mbit/s\", better = \"higher\""
            ),
            v(3.0)
        );
        // 90 % of the link, a third of the bytes are the cg flow's.
        close(
            m(
                "flows = \"cg\", metric = \"utilisation\", value = 1.0, unit = \"%\", better = \"higher\"",
            ),
            30.0,
        );
        close(
            m(
                "flows = \"all\", metric = \"utilisation\", value = 1.0, unit = \"%\", better = \"higher\"",
            ),
            90.0,
        );
        close(
            m(
                "flows = \"tcp\", metric = \"loss_ratio\", value = 1.0, unit = \"%\", better = \"lower\"",
            ),
            1.5,
        );
        close(
            m(
                "flows = \"all\", metric = \"loss_ratio\", value = 1.0, unit = \"%\", better = \"lower\"",
            ),
            1.0,
        );
        assert_eq!(
            m(
                "flows = \"cg\", metric = \"queuing_delay_ms\", statistic = \"p95\", value = 1.0, unit = \"ms\", better = \"lower\""
            ),
            v(4.0)
        );
        assert_eq!(
            m(
                "flows = \"all\", metric = \"queuing_delay_ms\", statistic = \"p95\", value = 1.0, unit = \"ms\", better = \"lower\""
            ),
            v(9.0)
        );
        close(
            m(
                "flows = \"cg\", metric = \"queuing_delay_exceedance\", threshold_ms = 10.0, value = 1.0, unit = \"%\", better = \"lower\"",
            ),
            10.0,
        );
        assert!(matches!(
            m(
                "flows = \"cg\", metric = \"queuing_delay_exceedance\", threshold_ms = 30.0, value = 1.0, unit = \"%\", better = \"lower\""
            ),
            Measured::Missing(_)
        ));
        // Jain over both forward flows: (3 + 6)² / (2 × 45) = 0.9.
        close(
            m("flows = \"all\", metric = \"jain\", value = 1.0, unit = \"1\", better = \"higher\""),
            0.9,
        );
    }

    #[test]
    fn percentiles_over_several_flows_pool_their_packets() {
        // Two cg flows beside a TCP flow (MMSys16 Table 5): neither flow's own percentile nor
        // the link's is theirs; the pooled one is.
        let flow = |name: &str, kind: &str, p50: f64| {
            serde_json::json!({"name": name, "kind": kind, "direction": "forward",
                "throughput_mbps": 1.0, "delivered_bytes": 1000.0, "loss_ratio": 0.0,
                "qdelay_ms": {"n": 10.0, "mean": p50, "p50": p50, "p95": p50},
                "rtt_ms": {"n": 10.0, "mean": p50 + 50.0, "p50": p50 + 50.0, "p95": p50 + 60.0}})
        };
        let mut summary = serde_json::json!({
            "run": {"backend": "simulated"},
            "metrics": {
                "window_s": [0.0, 10.0],
                "link": {"utilisation": 0.9, "loss_ratio": 0.0, "qdelay_ms": {"p50": 99.0}},
                "flows": [flow("gcc1", "cg", 10.0), flow("gcc2", "cg", 30.0), flow("tcp", "tcp", 50.0)],
                "qdelay_ms_by_kind": {"cg": {"n": 20.0, "p50": 20.0, "p95": 29.0},
                                      "tcp": {"n": 10.0, "p50": 50.0, "p95": 50.0}}
            }
        });
        let p95 = figure(
            "flows = \"cg\", metric = \"queuing_delay_ms\", statistic = \"p95\", value = 1.0, unit = \"ms\", better = \"lower\"",
        );
        let run = |summary: &Value| RunResult {
            summary: summary.clone(),
            rates: BTreeMap::new(),
        };
        assert_eq!(measure(&p95, &run(&summary)), Measured::Value(29.0));
        // The mean RTT over both flows' samples; an RTT percentile over both is not reported.
        let rtt = |stat: &str| {
            figure(&format!(
                "flows = \"cg\", metric = \"rtt_ms\", statistic = \"{stat}\", value = 1.0, unit = \"ms\", better = \"lower\""
            ))
        };
        assert_eq!(measure(&rtt("mean"), &run(&summary)), Measured::Value(70.0));
        assert!(matches!(
            measure(&rtt("p95"), &run(&summary)),
            Measured::Missing(_)
        ));
        // A summary written before the pooled delays existed says so.
        summary["metrics"]
            .as_object_mut()
            .unwrap()
            .remove("qdelay_ms_by_kind");
        match measure(&p95, &run(&summary)) {
            Measured::Missing(why) => assert!(why.contains("run it again"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_simulated_run_pools_the_packets_of_its_flows_by_kind() {
        let text = format!(
            "{}\n[[flows]]\nname = \"cg2\"\nkind = \"cg\"\ncontroller = \"gcc-remb\"\nfrom = \"s1\"\nto = \"r1\"\n\
             send_args = [\"--max-bitrate\", \"2M\"]\n\n[[flows]]\nname = \"tcp\"\nkind = \"tcp\"\nfrom = \"s1\"\nto = \"r1\"\nstart = \"5s\"\n",
            include_str!("../tests/data/short-gcc.toml")
        );
        let sc = crate::scenario::Scenario::parse(&text, "t.toml", "t", Path::new("."))
            .unwrap_or_else(|e| panic!("{e}"));
        let dir = std::env::temp_dir().join(format!("netlab-pool-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let m = report::run_simulated(&sc, &dir).unwrap().metrics;
        let cg: Vec<&crate::metrics::FlowSummary> =
            m.flows.iter().filter(|f| f.kind == "cg").collect();
        let pooled = &m.qdelay_ms_by_kind["cg"];
        assert_eq!(pooled.n, cg[0].qdelay_ms.n + cg[1].qdelay_ms.n);
        assert_eq!(m.qdelay_ms_by_kind["tcp"].n, m.flows[2].qdelay_ms.n);
        let (lo, hi) = (
            cg[0].qdelay_ms.p95.min(cg[1].qdelay_ms.p95),
            cg[0].qdelay_ms.p95.max(cg[1].qdelay_ms.p95),
        );
        assert!(
            lo <= pooled.p95 && pooled.p95 <= hi,
            "{lo} {} {hi}",
            pooled.p95
        );
        // reproduce reads it for a figure about the cg flows.
        let run = RunResult::load(&dir).unwrap();
        let f = figure(
            "flows = \"cg\", metric = \"queuing_delay_ms\", statistic = \"p95\", value = 1.0, unit = \"ms\", better = \"lower\"",
        );
        assert_eq!(measure(&f, &run), Measured::Value(pooled.p95));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn the_report_has_a_row_for_every_figure_with_its_verdict() {
        let papers = papers::all().unwrap();
        let mut runs = BTreeMap::new();
        runs.insert("mmsys16-6.1-variable-capacity".to_owned(), Ok(run()));
        runs.insert("tma24-4-htb-cubic".to_owned(), Err("boom".to_owned()));
        let rows = rows(&papers, &runs, None);
        let figures: usize = papers.iter().map(|p| p.figures.len()).sum();
        assert_eq!(rows.len(), figures);
        let md = markdown(&rows, &Facts::default());
        assert!(md.contains("run failed: boom") && md.contains("not run"));
        assert!(rows.iter().any(|r| r.verdict.is_some()));
        let page = html(&rows, &Facts::default(), &BTreeMap::new());
        assert!(page.starts_with("<!doctype html>") && page.contains("mmsys16"));
        assert_eq!(page.matches("<tr class=").count(), figures);
        let only = rows_only(&papers, &runs);
        assert!(only.iter().all(|r| {
            r.figure
                .preset
                .as_deref()
                .is_none_or(|p| p.starts_with("tma24"))
        }));
    }

    fn rows_only<'a>(
        papers: &'a [Paper],
        runs: &BTreeMap<String, std::result::Result<RunResult, String>>,
    ) -> Vec<Row<'a>> {
        rows(papers, runs, Some("tma24"))
    }

    #[test]
    fn better_sides_follow_the_figure() {
        // A sanity check of the verdict words the report prints.
        let f = figure(
            "flows = \"cg\", metric = \"utilisation\", value = 80.0, unit = \"%\", better = \"higher\"",
        );
        assert_eq!(f.better, Better::Higher);
        assert_eq!(verdict_word(Some(f.verdict(95.0))), "better");
        assert_eq!(verdict_word(Some(f.verdict(82.0))), "within");
        assert_eq!(verdict_word(Some(f.verdict(60.0))), "worse");
    }
}
