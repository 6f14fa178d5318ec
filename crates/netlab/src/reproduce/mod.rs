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
//! Each preset runs as often as [`Runs`] says (by default as often as its paper averaged), run
//! `k` with the preset's seed plus `k − 1` into `OUT/<preset>/run-<k>/` (the first in
//! `OUT/<preset>/`). A row gives the mean over the runs with its spread and judges the mean:
//! the papers report means, and one seed is an anecdote.
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
//!
//! `select` picks the experiments, `measure` reads our numbers and pairs them with the
//! papers', `render` writes the pages; [`run`] drives them.

mod measure;
mod render;
mod select;
#[cfg(test)]
mod testing;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

pub use measure::{Measured, Row, RunResult, RunSpread, measure, measure_runs, rows};
pub use render::{Facts, html, machine, markdown};
pub use select::{experiments, matches};

use crate::papers::{self, Metric};
use crate::report::{self, RunRequest};
use crate::scenario::{Scenario, presets};
use crate::{Error, Result};
use render::run_facts;

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
    /// How many runs (seeds) each preset gets.
    pub runs: Runs,
    /// The published GCC every GCC flow runs (`--gcc-variant`, given to both programs with
    /// GCC-REMB); `None` runs the presets as shipped, with cg's GCC.
    pub gcc_variant: Option<cg_cc::gcc::GccVariant>,
    /// The published SCReAM every SCReAM flow runs (`--scream-variant`); `None` runs the
    /// presets as shipped.
    pub scream_variant: Option<cg_cc::scream::ScreamVariant>,
    /// With a variant: also run every preset as shipped (cg's algorithms) into
    /// `OUT/`[`DEFAULT_DIR`], and give its number and verdict beside the variant's in each
    /// row (`--beside-default`).
    pub beside_default: bool,
}

/// Where `--beside-default` puts the runs of the presets as shipped, under `--out`.
pub const DEFAULT_DIR: &str = "cg-default";

/// How many runs (seeds) a preset gets: run `k` (from 1) runs the preset with its seed plus
/// `k − 1`; the report gives the mean over the runs with their spread, and judges the mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runs {
    /// As many as the paper averaged for the preset's figures (the most any of them names;
    /// one where the paper does not say).
    Paper,
    /// This many for every preset.
    Each(u32),
}

impl Runs {
    /// `paper` or a count of at least 1 (the command line's `--runs`).
    pub fn parse(s: &str) -> std::result::Result<Runs, String> {
        if s == "paper" {
            return Ok(Runs::Paper);
        }
        match s.parse::<u32>() {
            Ok(n) if n >= 1 => Ok(Runs::Each(n)),
            _ => Err(format!("`{s}`: give `paper` or a count of at least 1")),
        }
    }

    /// The runs of preset `name`.
    pub fn count(self, papers: &[papers::Paper], name: &str) -> u32 {
        match self {
            Runs::Each(n) => n,
            Runs::Paper => papers
                .iter()
                .flat_map(|p| &p.figures)
                .filter(|f| f.preset.as_deref() == Some(name))
                .filter_map(|f| f.runs)
                .max()
                .unwrap_or(1),
        }
    }
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
    std::fs::create_dir_all(&opts.out).map_err(|e| Error::output(&opts.out, e))?;
    let started = Instant::now();
    let mut facts = Facts {
        machine: machine(),
        written: String::new(),
        runs: BTreeMap::new(),
    };
    let mut plots = BTreeMap::new();
    let runs = run_set(opts, &papers, &names, started, &mut facts, &mut plots, "");
    let beside =
        if opts.beside_default && (opts.gcc_variant.is_some() || opts.scream_variant.is_some()) {
            let shipped = Options {
                out: opts.out.join(DEFAULT_DIR),
                gcc_variant: None,
                scream_variant: None,
                beside_default: false,
                ..opts.clone()
            };
            let mut unused = BTreeMap::new();
            let label = " (cg's default)";
            Some(run_set(
                &shipped,
                &papers,
                &names,
                started,
                &mut facts,
                &mut unused,
                label,
            ))
        } else {
            None
        };
    facts.written = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let mut rows = rows(&papers, &runs, only);
    if let Some(b) = &beside {
        measure::set_beside(&mut rows, &measure::rows(&papers, b, only));
    }
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
        std::fs::write(path, text).map_err(|e| Error::output(path, e))?;
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

/// The runs of every preset in `names` (or why it failed), each preset into
/// `opts.out/<preset>/`; each finished preset's facts go into `facts` (its name followed by
/// `label`) and its plots into `plots`.
fn run_set(
    opts: &Options,
    papers: &[papers::Paper],
    names: &[String],
    started: Instant,
    facts: &mut Facts,
    plots: &mut BTreeMap<String, Vec<(String, Vec<u8>)>>,
    label: &str,
) -> BTreeMap<String, std::result::Result<Vec<RunResult>, String>> {
    let mut runs = BTreeMap::new();
    for (i, name) in names.iter().enumerate() {
        let dir = opts.out.join(name);
        let n = opts.runs.count(papers, name);
        let mut done = Vec::new();
        let mut failed = None;
        for k in 1..=n {
            let head = if n > 1 {
                format!("[{}/{}] {name}{label}, run {k}/{n}", i + 1, names.len())
            } else {
                format!("[{}/{}] {name}{label}", i + 1, names.len())
            };
            match run_preset(opts, name, k, &run_dir(&dir, k), &head, started) {
                Ok(run) => done.push(run),
                Err(e) => {
                    failed = Some(if n > 1 { format!("run {k}: {e}") } else { e });
                    break;
                }
            }
        }
        if let (None, Some(first)) = (&failed, done.first()) {
            facts
                .runs
                .insert(format!("{name}{label}"), run_facts(&dir, first, done.len()));
            let pngs: Vec<(String, Vec<u8>)> = ["rate.png", "delay.png", "loss.png"]
                .iter()
                .filter_map(|f| Some(((*f).to_owned(), std::fs::read(dir.join(f)).ok()?)))
                .collect();
            plots.insert(name.clone(), pngs);
        }
        runs.insert(name.clone(), failed.map_or(Ok(done), Err));
    }
    runs
}

/// Where run `k` (from 1) of a preset whose first run is in `dir` goes: `dir` itself, then
/// `dir/run-<k>/`.
fn run_dir(dir: &Path, k: u32) -> PathBuf {
    if k == 1 {
        dir.to_path_buf()
    } else {
        dir.join(format!("run-{k}"))
    }
}

/// Runs (or reuses) run `k` of preset `name` into `dir`: the preset with its seed plus `k − 1`.
fn run_preset(
    opts: &Options,
    name: &str,
    k: u32,
    dir: &Path,
    head: &str,
    started: Instant,
) -> std::result::Result<RunResult, String> {
    let sc = match presets::load(name) {
        None => return Err(format!("no preset `{name}`")),
        Some(Err(e)) => return Err(e.to_string()),
        Some(Ok(sc)) => with_seed(&sc, sc.seed.wrapping_add(u64::from(k - 1)))?,
    };
    let sc = with_variants(&sc, opts.gcc_variant, opts.scream_variant)?;
    // A run is reused only when it ran this scenario, text for text (the same seed, the same
    // variant, the preset unchanged since), on the same backend.
    let previous = RunResult::load(dir).ok();
    let same = previous.as_ref().is_some_and(|r| {
        (r.summary["run"]["backend"] == "simulated") == opts.sim
            && std::fs::read_to_string(dir.join("scenario.toml")).is_ok_and(|t| t == sc.source)
    });
    if previous.is_some() && !same {
        // Another reproduction's run (a preset's first run holds its other runs' folders:
        // they go with it).
        let _ = std::fs::remove_dir_all(dir);
    }
    if let Some(run) = previous.filter(|_| same) {
        eprintln!("{head}: already run, reused ({})", dir.display());
        return Ok(run);
    }
    eprintln!(
        "{head}: running {:.0} s, seed {} (elapsed {:.0} s)",
        sc.duration.as_secs_f64(),
        sc.seed,
        started.elapsed().as_secs_f64()
    );
    let req = RunRequest {
        out: dir.to_path_buf(),
        base: presets::trace_dir().to_path_buf(),
        ..opts.run.clone()
    };
    let done = if opts.sim {
        report::run_simulated(&sc, dir)
    } else {
        report::run_and_report(&sc, &req)
    };
    match done {
        Ok(_) => RunResult::load(dir).map_err(|e| e.to_string()),
        Err(e) => {
            eprintln!("{head}: failed: {e}");
            // A partial directory would be taken as finished next time.
            let _ = std::fs::remove_file(dir.join("summary.json"));
            Err(e.to_string())
        }
    }
}

/// Scenario `sc` with every GCC flow running `gcc` (`--gcc-variant` in its `send_args`, and
/// with GCC-REMB in its `recv_args` too: both programs run part of it) and every SCReAM flow
/// running `scream` (`--scream-variant` in its `send_args`). Its source says so, so that the
/// run's `scenario.toml` records what ran.
fn with_variants(
    sc: &Scenario,
    gcc: Option<cg_cc::gcc::GccVariant>,
    scream: Option<cg_cc::scream::ScreamVariant>,
) -> std::result::Result<Scenario, String> {
    let mut table: toml::Table = sc
        .source
        .parse()
        .map_err(|e| format!("preset `{}` does not parse: {e}", sc.name))?;
    let mut changed = false;
    if let Some(flows) = table.get_mut("flows").and_then(toml::Value::as_array_mut) {
        for f in flows.iter_mut().filter_map(toml::Value::as_table_mut) {
            let controller = f.get("controller").and_then(toml::Value::as_str);
            let kind = f.get("kind").and_then(toml::Value::as_str);
            let (option, name, sides): (&str, Option<&str>, &[&str]) = match (kind, controller) {
                (Some("cg"), Some("gcc-remb")) => (
                    "--gcc-variant",
                    gcc.map(|v| v.name()),
                    &["send_args", "recv_args"],
                ),
                (Some("cg"), Some("gcc")) => {
                    ("--gcc-variant", gcc.map(|v| v.name()), &["send_args"])
                }
                (Some("cg"), Some("scream")) => {
                    ("--scream-variant", scream.map(|v| v.name()), &["send_args"])
                }
                _ => ("", None, &[]),
            };
            let Some(name) = name else { continue };
            for side in sides {
                let args = f
                    .entry((*side).to_owned())
                    .or_insert_with(|| toml::Value::Array(Vec::new()));
                if let Some(a) = args.as_array_mut() {
                    a.extend([option, name].map(toml::Value::from));
                    changed = true;
                }
            }
        }
    }
    if !changed {
        return Ok(sc.clone());
    }
    let named: Vec<String> = [
        gcc.map(|v| format!("--gcc-variant {v}")),
        scream.map(|v| format!("--scream-variant {v}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    let text = format!(
        "# preset:{}, run with {} (netlab reproduce)\n{table}",
        sc.name,
        named.join(" ")
    );
    Scenario::parse(&text, &sc.name, &sc.name, presets::trace_dir()).map_err(|e| e.to_string())
}

/// Preset `sc` run with `seed`; its source says so, so that the run's `scenario.toml` records
/// what ran.
fn with_seed(sc: &Scenario, seed: u64) -> std::result::Result<Scenario, String> {
    if seed == sc.seed {
        return Ok(sc.clone());
    }
    let mut table: toml::Table = sc
        .source
        .parse()
        .map_err(|e| format!("preset `{}` does not parse: {e}", sc.name))?;
    let value = i64::try_from(seed).map_err(|_| format!("seed {seed} is too large"))?;
    table.insert("seed".into(), toml::Value::Integer(value));
    let text = format!(
        "# preset:{}, run with seed {seed} (netlab reproduce --runs)\n{table}",
        sc.name
    );
    Scenario::parse(
        &text,
        &format!("preset:{} (seed {seed})", sc.name),
        &sc.name,
        presets::trace_dir(),
    )
    .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

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
            runs: Runs::Each(1),
            gcc_variant: None,
            scream_variant: None,
            beside_default: false,
        };
        let e = super::run(&opts).unwrap_err().to_string();
        assert!(e.contains("grid.toml"), "{e}");
        assert!(!out.exists(), "nothing ran");
        std::fs::remove_dir_all(&tmp).ok();
    }

    #[test]
    fn a_preset_runs_as_often_as_its_paper_averaged_unless_told() {
        let papers = papers::all().unwrap();
        assert_eq!(
            Runs::Paper.count(&papers, "mmsys16-6.1-variable-capacity"),
            10
        );
        assert_eq!(
            Runs::Each(3).count(&papers, "mmsys16-6.1-variable-capacity"),
            3
        );
        assert_eq!(Runs::Paper.count(&papers, "no-such-preset"), 1);
        assert_eq!(Runs::parse("paper"), Ok(Runs::Paper));
        assert_eq!(Runs::parse("4"), Ok(Runs::Each(4)));
        assert!(Runs::parse("0").is_err() && Runs::parse("many").is_err());
        assert_eq!(run_dir(Path::new("o/p"), 1), Path::new("o/p"));
        assert_eq!(run_dir(Path::new("o/p"), 3), Path::new("o/p/run-3"));
    }

    #[test]
    fn a_later_run_is_the_preset_with_the_next_seed_and_says_so() {
        let sc = presets::load("mmsys16-6.1-variable-capacity")
            .unwrap()
            .unwrap();
        let next = with_seed(&sc, sc.seed + 1).unwrap();
        assert_eq!(next.seed, sc.seed + 1);
        assert!(
            next.source
                .starts_with("# preset:mmsys16-6.1-variable-capacity, run with seed")
        );
        assert_eq!(
            (next.duration, next.flows.len()),
            (sc.duration, sc.flows.len())
        );
        assert_eq!(with_seed(&sc, sc.seed).unwrap(), sc);
    }

    #[test]
    fn a_variant_reaches_every_program_that_runs_part_of_it() {
        use cg_cc::gcc::GccVariant;
        use cg_cc::scream::ScreamVariant;
        let args = |sc: &Scenario, i: usize| {
            let f = &sc.flows[i];
            (f.send_args.join(" "), f.recv_args.join(" "))
        };
        // GCC-REMB: both programs; the TCP flow untouched.
        let sc = presets::load("mmsys16-4.2-gcc-vs-tcp-dt350")
            .unwrap()
            .unwrap();
        let v = with_variants(&sc, Some(GccVariant::Mmsys16), None).unwrap();
        let (send, recv) = args(&v, 0);
        assert!(send.ends_with("--gcc-variant mmsys16"), "{send}");
        assert!(recv.ends_with("--gcc-variant mmsys16"), "{recv}");
        assert_eq!(args(&v, 1), args(&sc, 1));
        assert!(
            v.source
                .starts_with("# preset:mmsys16-4.2-gcc-vs-tcp-dt350, run with")
        );
        // The variant runs in the simulator as given.
        crate::simrun::check(&v).unwrap();
        // SCReAM: nothing for GCC's variant; its own in the sender's args.
        let tma = presets::load("tma24-4-dualpi2-cubic").unwrap().unwrap();
        assert_eq!(
            with_variants(&tma, Some(GccVariant::Gcc2013), None).unwrap(),
            tma
        );
        let r = with_variants(&tma, None, Some(ScreamVariant::Reference)).unwrap();
        let (send, recv) = args(&r, 0);
        assert!(send.ends_with("--scream-variant reference"), "{send}");
        assert_eq!(recv, args(&tma, 0).1);
        crate::simrun::check(&r).unwrap();
        assert_eq!(with_variants(&tma, None, None).unwrap(), tma);
    }
}
