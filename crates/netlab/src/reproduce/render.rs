//! The report's pages: `report.md` and the self-contained `report.html`, and the facts they
//! state (the machine; each run's backend, encoder and seed).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use super::measure::{Measured, Row, RunResult, RunSpread, stat_key};
use crate::papers::{Paper, PaperFigure, Relation, Verdict};

/// Facts of the reproduction that every report states.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// The machine: host name, CPU model and count, kernel.
    pub machine: String,
    /// Per preset: backend, encoder, seeds.
    pub runs: BTreeMap<String, String>,
    /// When the report was written (UTC, RFC 3339).
    pub written: String,
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

/// Backend, encoder and seeds of a preset's `runs` finished runs, from the first run's
/// `summary.json` and `scenario.toml` (the others differ in their seed only, one apart).
pub(super) fn run_facts(dir: &Path, run: &RunResult, runs: usize) -> String {
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
        // A published variant (`netlab reproduce --gcc-variant`, `--scream-variant`) is named.
        for w in args
            .windows(2)
            .filter(|w| w[0] == "--gcc-variant" || w[0] == "--scream-variant")
        {
            let who = if w[0] == "--gcc-variant" {
                "GCC"
            } else {
                "SCReAM"
            };
            let named = format!("{who} {}", w[1]);
            if !encoders.contains(&named) {
                encoders.push(named);
            }
        }
    }
    let enc = if encoders.is_empty() {
        "no cg flow".to_owned()
    } else {
        encoders.join(", ")
    };
    if runs > 1 {
        format!(
            "{backend} · {enc} · seeds {seed}–{} ({runs} runs)",
            seed + runs as i64 - 1
        )
    } else {
        format!("{backend} · {enc} · seed {seed}")
    }
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

fn number(v: f64) -> String {
    if v != 0.0 && v.abs() < 0.01 {
        format!("{v:.3e}")
    } else {
        format!("{v:.3}")
    }
}

/// Ours: the number, or the mean with its spread over the runs (`mean (min–max, n runs)`).
fn ours_text(m: &Measured, spread: Option<RunSpread>) -> String {
    match (m, spread) {
        (Measured::Value(v), Some(s)) => format!(
            "{} ({}–{}, {} runs)",
            number(*v),
            number(s.min),
            number(s.max),
            s.n
        ),
        (Measured::Value(v), None) => number(*v),
        (Measured::Missing(why), _) => format!("— ({why})"),
    }
}

fn counts(rows: &[Row<'_>], paper: &str) -> [usize; 4] {
    counts_of(rows, paper, |r| r.verdict)
}

/// [`counts`] of the verdicts `verdict` picks from each row.
fn counts_of(
    rows: &[Row<'_>],
    paper: &str,
    verdict: impl Fn(&Row<'_>) -> Option<Verdict>,
) -> [usize; 4] {
    let mut c = [0; 4];
    for r in rows.iter().filter(|r| r.paper.id == paper) {
        c[match verdict(r) {
            Some(Verdict::Within) => 0,
            Some(Verdict::Better) => 1,
            Some(Verdict::Worse) => 2,
            None => 3,
        }] += 1;
    }
    c
}

/// The line that counts a paper's verdicts; with [`Row::beside`], both sets'.
fn counts_line(rows: &[Row<'_>], paper: &str) -> String {
    let [w, b, x, m] = counts(rows, paper);
    let mut line = format!("{w} within, {b} better, {x} worse, {m} without our number.");
    if rows.iter().any(|r| r.beside.is_some()) {
        let [w, b, x, m] = counts_of(rows, paper, |r| r.beside.as_ref().and_then(|o| o.verdict));
        line = format!(
            "The variant: {line} cg's default beside it: {w} within, {b} better, {x} worse, {m} \
             without a number."
        );
    }
    line
}

/// The cells of [`Row::beside`] (number, verdict); none without it.
fn beside_cells(r: &Row<'_>) -> Option<[String; 2]> {
    let o = r.beside.as_ref()?;
    Some([
        ours_text(&o.ours, o.spread),
        verdict_word(o.verdict).to_owned(),
    ])
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
        "## Runs\n\n| preset | backend · encoder · seeds |\n|---|---|"
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
    let beside = rows.iter().any(|r| r.beside.is_some());
    for paper in papers {
        let _ = writeln!(
            md,
            "\n## {}\n\n{}\n\n{}\n",
            paper.id,
            paper.citation,
            counts_line(rows, &paper.id)
        );
        let _ = writeln!(
            md,
            "| source | preset | column | what | paper | ours | unit | verdict |{}\n|---|---|---|---|---|---|---|---|{}",
            if beside {
                " cg's default | its verdict |"
            } else {
                ""
            },
            if beside { "---|---|" } else { "" },
        );
        for r in rows.iter().filter(|r| r.paper.id == paper.id) {
            let f = r.figure;
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {}{} | {} | {} | {} |{}",
                source(f),
                f.preset.as_deref().unwrap_or("none"),
                f.column,
                label(f),
                relation_prefix(f.relation),
                f.value,
                ours_text(&r.ours, r.spread),
                f.unit.as_str(),
                verdict_word(r.verdict),
                beside_cells(r).map_or(String::new(), |[o, v]| format!(" {o} | {v} |")),
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
    h.push_str("<h2>Runs</h2><table><tr><th>preset</th><th>backend · encoder · seeds</th></tr>");
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
        let _ = write!(
            h,
            "<h2>{}</h2><p>{}</p><p>{}</p>\
             <table><tr><th>source</th><th>preset</th><th>column</th><th>what</th><th>paper</th>\
             <th>ours</th><th>unit</th><th>verdict</th>{}</tr>",
            escape(id),
            escape(&r.paper.citation),
            escape(&counts_line(rows, id)),
            if rows.iter().any(|r| r.beside.is_some()) {
                "<th>cg's default</th><th>its verdict</th>"
            } else {
                ""
            },
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
                 <td>{}</td><td>{}</td><td>{}</td>{}</tr>",
                escape(&source(f)),
                escape(f.preset.as_deref().unwrap_or("none")),
                escape(&f.column),
                escape(&label(f)),
                relation_prefix(f.relation),
                f.value,
                escape(&ours_text(&r.ours, r.spread)),
                escape(f.unit.as_str()),
                verdict_word(r.verdict),
                beside_cells(r).map_or(String::new(), |[o, v]| format!(
                    "<td>{}</td><td class=\"{}\">{v}</td>",
                    escape(&o),
                    if r.beside.as_ref().is_some_and(|b| b.verdict.is_some()) {
                        v.as_str()
                    } else {
                        "missing"
                    }
                )),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::papers::{self, Better};
    use crate::reproduce::measure::rows;
    use crate::reproduce::testing::{figure, run};

    #[test]
    fn the_report_has_a_row_for_every_figure_with_its_verdict() {
        let papers = papers::all().unwrap();
        let mut runs = BTreeMap::new();
        runs.insert(
            "mmsys16-6.1-variable-capacity".to_owned(),
            Ok(vec![run(), run()]),
        );
        runs.insert("tma24-4-htb-cubic".to_owned(), Err("boom".to_owned()));
        let rows = rows(&papers, &runs, None);
        let figures: usize = papers.iter().map(|p| p.figures.len()).sum();
        assert_eq!(rows.len(), figures);
        let md = markdown(&rows, &Facts::default());
        assert!(md.contains("run failed: boom") && md.contains("not run"));
        // Two runs: the mean, with the spread and the count beside it.
        assert!(md.contains(", 2 runs) |"), "{md}");
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

    #[test]
    fn cg_s_default_stands_beside_the_variant_in_every_row_it_has() {
        let papers = papers::all().unwrap();
        let preset = "mmsys16-6.1-variable-capacity";
        let mut variant = BTreeMap::new();
        variant.insert(preset.to_owned(), Ok(vec![run()]));
        let mut shipped = BTreeMap::new();
        shipped.insert(preset.to_owned(), Err("boom".to_owned()));
        let mut rows = rows(&papers, &variant, Some("mmsys16"));
        let plain = markdown(&rows, &Facts::default());
        assert!(!plain.contains("cg's default"), "{plain}");
        crate::reproduce::measure::set_beside(
            &mut rows,
            &crate::reproduce::rows(&papers, &shipped, Some("mmsys16")),
        );
        assert!(rows.iter().all(|r| r.beside.is_some()));
        let md = markdown(&rows, &Facts::default());
        assert!(
            md.contains("| verdict | cg's default | its verdict |"),
            "{md}"
        );
        // Every table row has the two cells more: the preset's, the shipped run's failure.
        let ours = rows
            .iter()
            .filter(|r| r.figure.preset.as_deref() == Some(preset))
            .count();
        assert!(ours > 0);
        assert_eq!(
            md.matches("| — (run failed: boom) | — |").count(),
            ours,
            "{md}"
        );
        assert!(md.contains("cg's default beside it: 0 within"), "{md}");
        let page = html(&rows, &Facts::default(), &BTreeMap::new());
        assert!(page.contains("<th>cg's default</th>"));
        assert_eq!(
            page.matches("<td>— (run failed: boom)</td><td class=\"missing\">")
                .count(),
            ours
        );
    }

    fn rows_only<'a>(
        papers: &'a [Paper],
        runs: &BTreeMap<String, std::result::Result<Vec<RunResult>, String>>,
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
