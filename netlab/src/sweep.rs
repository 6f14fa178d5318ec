//! Parameter sweeps: `netlab sweep GRID.toml` expands a grid into points and runs them (all,
//! or one share with `--shard I/N`, so a Slurm job array spreads a grid over machines);
//! `netlab collect DIR` merges the points into one table and heat maps.
//!
//! A grid file:
//!
//! ```toml
//! name = "mmsys16-fig8"
//! description = "MMSys16 Fig. 8: the objective over ku × kd"
//! scenarios = ["preset:mmsys16-6.1-variable-capacity", "../scenarios/matched/gcc-remb-cubic-droptail-2mbit.toml"]
//! backend = "sim"                      # default; or "namespaces"
//!
//! [[axis]]
//! name = "ku"
//! send_arg = "--gcc-ku"                # appended, with the value, to every cg flow's send_args
//! log = { from = 1e-5, to = 0.1, n = 20 }   # or lin = {…}, or values = [...]
//!
//! [[axis]]
//! name = "kd"
//! send_arg = "--gcc-kd"
//! log = { from = 1e-5, to = 0.1, n = 20 }
//! ```
//!
//! Points are the product scenarios × axis values, numbered in that order (the last axis
//! fastest). Point `i` runs into `DIR/points/<i>/`; a point whose `summary.json` exists is not
//! run again, so an interrupted sweep resumes. A grid with a mistake is refused with file,
//! line and field before anything runs.
//!
//! `collect` reads every finished point and writes `DIR/collect.csv` (one row per point: its
//! scenario and values, link utilisation, the cg flows' throughput and mean and 95th-percentile
//! queuing delay, loss, Jain's index and MMSys16's objective) and, for a grid of two axes,
//! `DIR/heatmap.png`: the objective normalised to `[0, 1]` per scenario and summed over the
//! scenarios, as MMSys16 Fig. 8 draws it, with `DIR/collect.md` naming the best cell.
//!
//! MMSys16's objective (eq. 19–21, α = 2, β = 1, δ = 0.15): `U = Σ_i (x_i^(1−α)/(1−α) −
//! δ·ln y_i)` over the cg flows, `x_i` the flow's mean throughput (Mbit/s), `y_i` its mean
//! queuing delay (ms, at least 0.1 ms so that an empty queue stays finite).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use toml::Spanned;

use crate::papers::{from_toml, located};
use crate::report::{self, RunRequest};
use crate::scenario::{FlowKind, Scenario, presets};
use crate::{Error, Result};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGrid {
    name: String,
    #[serde(default)]
    description: String,
    scenarios: Spanned<Vec<Spanned<String>>>,
    #[serde(default)]
    backend: Option<Spanned<String>>,
    axis: Spanned<Vec<Spanned<RawAxis>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAxis {
    name: String,
    #[serde(default)]
    send_arg: Option<String>,
    #[serde(default)]
    recv_arg: Option<String>,
    #[serde(default)]
    values: Option<Spanned<Vec<f64>>>,
    #[serde(default)]
    log: Option<Spanned<Range>>,
    #[serde(default)]
    lin: Option<Spanned<Range>>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
struct Range {
    from: f64,
    to: f64,
    n: usize,
}

/// A checked grid.
#[derive(Debug, Clone)]
pub struct Grid {
    /// Its name.
    pub name: String,
    /// What it is for.
    pub description: String,
    /// The scenarios, loaded (with the base their traces resolve against).
    pub scenarios: Vec<(String, Scenario, PathBuf)>,
    /// Simulated time (default) or namespaces.
    pub sim: bool,
    /// The axes, in order.
    pub axes: Vec<Axis>,
}

/// One parameter and its values.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// Its name (a column of the results).
    pub name: String,
    /// The cg-send option that takes the value.
    pub send_arg: Option<String>,
    /// The cg-recv option that takes the value.
    pub recv_arg: Option<String>,
    /// The values.
    pub values: Vec<f64>,
}

/// One point of a grid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Its number.
    pub index: usize,
    /// The scenario's spec as written in the grid.
    pub scenario: String,
    /// Axis name → value.
    pub values: BTreeMap<String, f64>,
}

/// Most points a grid may have.
const MAX_POINTS: usize = 1_000_000;

impl Grid {
    /// Reads and checks a grid file (scenarios are loaded too: a scenario with a mistake is
    /// refused here, before anything runs).
    pub fn load(path: &Path) -> Result<Grid> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io(format!("read {}", path.display()), e))?;
        let base = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        Grid::parse(&text, &path.display().to_string(), base)
    }

    /// Parses and checks grid `text`; `file` names it in errors, `base` resolves scenario paths.
    pub fn parse(text: &str, file: &str, base: &Path) -> Result<Grid> {
        let raw: RawGrid = from_toml(text, file)?;
        let err = |span: std::ops::Range<usize>, field: &str, m: String| {
            located(text, file, span, field, m)
        };
        let sim = match raw
            .backend
            .as_ref()
            .map(|b| (b.get_ref().as_str(), b.span()))
        {
            None | Some(("sim", _)) => true,
            Some(("namespaces", _)) => false,
            Some((other, span)) => {
                return Err(err(
                    span,
                    "backend",
                    format!("`{other}`: expected \"sim\" or \"namespaces\""),
                ));
            }
        };
        if raw.scenarios.get_ref().is_empty() {
            return Err(err(raw.scenarios.span(), "scenarios", "no scenario".into()));
        }
        let mut scenarios = Vec::new();
        for (i, s) in raw.scenarios.get_ref().iter().enumerate() {
            let field = format!("scenarios[{i}]");
            let spec = s.get_ref();
            let loaded = if let Some(name) = spec.strip_prefix("preset:") {
                match presets::load(name) {
                    None => Err(format!("no preset `{name}`")),
                    Some(r) => r
                        .map(|sc| (sc, presets::trace_dir().to_path_buf()))
                        .map_err(|e| e.to_string()),
                }
            } else {
                let p = base.join(spec);
                Scenario::load(&p)
                    .map(|sc| {
                        (
                            sc,
                            p.parent()
                                .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
                        )
                    })
                    .map_err(|e| e.to_string())
            };
            let (sc, sbase) = loaded.map_err(|m| err(s.span(), &field, m))?;
            if sim && let Err(e) = crate::simrun::check(&sc) {
                return Err(err(s.span(), &field, e.to_string()));
            }
            scenarios.push((spec.clone(), sc, sbase));
        }
        if raw.axis.get_ref().is_empty() {
            return Err(err(raw.axis.span(), "axis", "no axis".into()));
        }
        let mut axes: Vec<Axis> = Vec::new();
        let mut points = scenarios.len();
        for (i, a) in raw.axis.get_ref().iter().enumerate() {
            let (span, a) = (a.span(), a.get_ref());
            let field = |f: &str| format!("axis[{i}].{f}");
            if a.name.is_empty() || axes.iter().any(|b| b.name == a.name) {
                return Err(err(
                    span,
                    &field("name"),
                    format!("`{}`: empty or repeated", a.name),
                ));
            }
            if a.send_arg.is_none() && a.recv_arg.is_none() {
                return Err(err(
                    span,
                    &field("send_arg"),
                    "give send_arg, recv_arg or both".into(),
                ));
            }
            let forms = [a.values.is_some(), a.log.is_some(), a.lin.is_some()];
            if forms.iter().filter(|x| **x).count() != 1 {
                return Err(err(
                    span,
                    &field("values"),
                    "give exactly one of values, log or lin".into(),
                ));
            }
            let values = if let Some(v) = &a.values {
                v.get_ref().clone()
            } else {
                let (r, log) = match (&a.log, &a.lin) {
                    (Some(r), _) => (r, true),
                    (_, Some(r)) => (r, false),
                    _ => unreachable!("one form is set"),
                };
                let (f, v) = (field(if log { "log" } else { "lin" }), *r.get_ref());
                if v.n == 0
                    || !v.from.is_finite()
                    || !v.to.is_finite()
                    || (log && (v.from <= 0.0 || v.to <= 0.0))
                {
                    return Err(err(
                        r.span(),
                        &f,
                        "needs n ≥ 1 and finite ends (positive for log)".into(),
                    ));
                }
                (0..v.n)
                    .map(|k| {
                        let x = if v.n == 1 {
                            0.0
                        } else {
                            k as f64 / (v.n - 1) as f64
                        };
                        let v = if log {
                            (v.from.ln() + x * (v.to.ln() - v.from.ln())).exp()
                        } else {
                            v.from + x * (v.to - v.from)
                        };
                        // Eleven significant digits: 0.01, not 0.010000000000000004.
                        format!("{v:.10e}").parse().unwrap_or(v)
                    })
                    .collect()
            };
            if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
                return Err(err(span, &field("values"), "needs finite values".into()));
            }
            points = points.saturating_mul(values.len());
            axes.push(Axis {
                name: a.name.clone(),
                send_arg: a.send_arg.clone(),
                recv_arg: a.recv_arg.clone(),
                values,
            });
        }
        if points > MAX_POINTS {
            return Err(err(
                raw.axis.span(),
                "axis",
                format!("{points} points (at most {MAX_POINTS})"),
            ));
        }
        Ok(Grid {
            name: raw.name,
            description: raw.description,
            scenarios,
            sim,
            axes,
        })
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.axes.iter().map(|a| a.values.len()).product::<usize>() * self.scenarios.len()
    }

    /// Whether there are none (never, for a checked grid).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Point `index` (scenarios, then the axes, the last fastest).
    pub fn point(&self, index: usize) -> Point {
        let mut rest = index;
        let mut values = BTreeMap::new();
        for a in self.axes.iter().rev() {
            values.insert(a.name.clone(), a.values[rest % a.values.len()]);
            rest /= a.values.len();
        }
        Point {
            index,
            scenario: self.scenarios[rest % self.scenarios.len()].0.clone(),
            values,
        }
    }

    /// The scenario of `p` with the point's values appended to its cg flows' arguments.
    fn scenario_of(&self, p: &Point) -> Option<(Scenario, PathBuf)> {
        let (_, sc, base) = self.scenarios.iter().find(|(s, _, _)| *s == p.scenario)?;
        let mut sc = sc.clone();
        for f in sc.flows.iter_mut().filter(|f| f.kind == FlowKind::Cg) {
            for a in &self.axes {
                let v = format!("{}", p.values[&a.name]);
                if let Some(arg) = &a.send_arg {
                    f.send_args.extend([arg.clone(), v.clone()]);
                }
                if let Some(arg) = &a.recv_arg {
                    f.recv_args.extend([arg.clone(), v]);
                }
            }
        }
        Some((sc, base.clone()))
    }
}

/// `--shard I/N`: run the points whose number is `I` modulo `N`.
pub fn parse_shard(s: &str) -> std::result::Result<(usize, usize), String> {
    let (i, n) = s
        .split_once('/')
        .ok_or_else(|| format!("`{s}`: expected I/N"))?;
    let (i, n): (usize, usize) = (
        i.trim()
            .parse()
            .map_err(|_| format!("`{s}`: I is not a number"))?,
        n.trim()
            .parse()
            .map_err(|_| format!("`{s}`: N is not a number"))?,
    );
    if n == 0 || i >= n {
        return Err(format!("`{s}`: needs 0 ≤ I < N"));
    }
    Ok((i, n))
}

/// Runs the points of `shard` (`(0, 1)`: all) of the grid at `grid_path` into `out`.
/// Returns (run, already done, failed).
pub fn run(
    grid_path: &Path,
    shard: (usize, usize),
    out: &Path,
    template: &RunRequest,
) -> Result<(usize, usize, usize)> {
    let grid = Grid::load(grid_path)?;
    std::fs::create_dir_all(out.join("points")).map_err(|e| Error::Output {
        path: out.to_path_buf(),
        detail: e.to_string(),
    })?;
    // The grid as run, for `collect` (every shard writes the same text), its scenario paths
    // made absolute so that they resolve from `out`.
    let copy = out.join("grid.toml");
    let text = std::fs::read_to_string(grid_path).map_err(|e| Error::io("read grid", e))?;
    let mut table: toml::Table = text
        .parse()
        .map_err(|e| Error::NotAvailable(format!("{e}")))?;
    let base = grid_path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if let Some(toml::Value::Array(list)) = table.get_mut("scenarios") {
        for v in list.iter_mut() {
            if let toml::Value::String(spec) = v
                && !spec.starts_with("preset:")
            {
                let abs =
                    std::fs::canonicalize(base.join(&*spec)).unwrap_or_else(|_| base.join(&*spec));
                *spec = abs.display().to_string();
            }
        }
    }
    let text =
        format!("# The grid as run by netlab sweep (scenario paths made absolute).\n{table}");
    std::fs::write(&copy, &text).map_err(|e| Error::Output {
        path: copy.clone(),
        detail: e.to_string(),
    })?;
    let (i, n) = shard;
    let mine: Vec<usize> = (0..grid.len()).filter(|k| k % n == i).collect();
    let (mut ran, mut done, mut failed) = (0, 0, 0);
    for (k, idx) in mine.iter().enumerate() {
        let p = grid.point(*idx);
        let dir = out.join("points").join(idx.to_string());
        let head = format!(
            "[{}/{}] point {idx} {} {:?}",
            k + 1,
            mine.len(),
            p.scenario,
            p.values
        );
        if dir.join("summary.json").exists() {
            done += 1;
            continue;
        }
        let Some((sc, base)) = grid.scenario_of(&p) else {
            failed += 1;
            continue;
        };
        eprintln!("{head}");
        std::fs::create_dir_all(&dir).map_err(|e| Error::Output {
            path: dir.clone(),
            detail: e.to_string(),
        })?;
        let point_json = serde_json::to_string_pretty(&p).expect("a point serialises");
        std::fs::write(dir.join("point.json"), point_json).map_err(|e| Error::Output {
            path: dir.clone(),
            detail: e.to_string(),
        })?;
        let result = if grid.sim {
            crate::simrun::run_and_report(&sc, &dir)
        } else {
            let req = RunRequest {
                out: dir.clone(),
                base,
                quiet: true,
                ..template.clone()
            };
            report::run_and_report(&sc, &req)
        };
        match result {
            Ok(_) => ran += 1,
            Err(e) => {
                eprintln!("{head}: failed: {e}");
                let _ = std::fs::remove_file(dir.join("summary.json"));
                failed += 1;
            }
        }
    }
    eprintln!(
        "sweep {}: shard {i}/{n}: {ran} run, {done} already done, {failed} failed",
        grid.name
    );
    Ok((ran, done, failed))
}

/// MMSys16's objective (eq. 19–21, α = 2, β = 1, δ = 0.15) over the cg flows of a summary.
pub fn objective(summary: &Value) -> Option<f64> {
    let flows: Vec<&Value> = summary["metrics"]["flows"]
        .as_array()?
        .iter()
        .filter(|f| f["kind"] == "cg" && f["direction"] == "forward")
        .collect();
    if flows.is_empty() {
        return None;
    }
    let mut u = 0.0;
    for f in flows {
        let x = f["throughput_mbps"].as_f64()?.max(1e-3);
        let y = f["qdelay_ms"]["mean"].as_f64()?.max(0.1);
        u += -1.0 / x - 0.15 * y.ln();
    }
    Some(u)
}

/// One collected point.
#[derive(Debug, Clone)]
pub struct Collected {
    /// The point.
    pub point: Point,
    /// Its summary.
    pub summary: Value,
}

/// Merges the finished points of the sweep in `out` into `collect.csv`, `collect.md` and, for
/// two axes, `heatmap.png`. Returns the Markdown.
pub fn collect(out: &Path) -> Result<String> {
    let (grid, got, missing) = gather(out)?;
    let mut csv = String::from("index,scenario");
    for a in &grid.axes {
        let _ = write!(csv, ",{}", a.name);
    }
    csv.push_str(",utilisation,cg_mbps,cg_qdelay_mean_ms,cg_qdelay_p95_ms,loss,jain,objective\n");
    for c in &got {
        let m = &c.summary["metrics"];
        let cg: Vec<&Value> = m["flows"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|f| f["kind"] == "cg")
            .collect();
        let mean = |key: &str, sub: &str| {
            let v: Vec<f64> = cg
                .iter()
                .filter_map(|f| {
                    if sub.is_empty() {
                        f[key].as_f64()
                    } else {
                        f[key][sub].as_f64()
                    }
                })
                .collect();
            if v.is_empty() {
                f64::NAN
            } else {
                v.iter().sum::<f64>() / v.len() as f64
            }
        };
        let _ = write!(csv, "{},{}", c.point.index, c.point.scenario);
        for a in &grid.axes {
            let _ = write!(csv, ",{}", c.point.values[&a.name]);
        }
        let _ = writeln!(
            csv,
            ",{:.4},{:.4},{:.3},{:.3},{:.5},{:.4},{:.5}",
            m["link"]["utilisation"].as_f64().unwrap_or(f64::NAN),
            mean("throughput_mbps", ""),
            mean("qdelay_ms", "mean"),
            mean("qdelay_ms", "p95"),
            m["link"]["loss_ratio"].as_f64().unwrap_or(f64::NAN),
            m["jain"].as_f64().unwrap_or(f64::NAN),
            objective(&c.summary).unwrap_or(f64::NAN),
        );
    }
    let write = |name: &str, bytes: &[u8]| -> Result<()> {
        let p = out.join(name);
        std::fs::write(&p, bytes).map_err(|e| Error::Output {
            path: p,
            detail: e.to_string(),
        })
    };
    write("collect.csv", csv.as_bytes())?;
    let mut md = format!(
        "# sweep {}\n\n{}\n\n{} of {} points collected{}.\n",
        grid.name,
        grid.description,
        got.len(),
        grid.len(),
        if missing.is_empty() {
            String::new()
        } else {
            format!(" (missing: {})", missing.len())
        }
    );
    if let [ax, ay] = grid.axes.as_slice() {
        let cells = normalised_objective(&grid, &got);
        if let Some(((x, y), best)) = cells
            .iter()
            .filter(|(_, v)| v.is_finite())
            .max_by(|a, b| a.1.total_cmp(b.1))
            .map(|(k, v)| (*k, *v))
        {
            let _ = writeln!(
                md,
                "\nObjective (MMSys16 eq. 21, normalised per scenario and summed over {} scenario(s)): best at {} = {:.3e}, {} = {:.3e} ({best:.3}).",
                grid.scenarios.len(),
                ax.name,
                ax.values[x],
                ay.name,
                ay.values[y]
            );
        }
        crate::plot::heatmap(&out.join("heatmap.png"), &grid.name, ax, ay, &cells)?;
        let _ = writeln!(md, "\n![heat map](heatmap.png)");
    }
    write("collect.md", md.as_bytes())?;
    Ok(md)
}

/// The grid of the sweep in `out`, its finished points, and the numbers of the missing ones.
fn gather(out: &Path) -> Result<(Grid, Vec<Collected>, Vec<usize>)> {
    let grid = Grid::load(&out.join("grid.toml"))?;
    let mut got: Vec<Collected> = Vec::new();
    let mut missing = Vec::new();
    for idx in 0..grid.len() {
        let dir = out.join("points").join(idx.to_string());
        let summary: Option<Value> = std::fs::read_to_string(dir.join("summary.json"))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok());
        match summary {
            Some(summary) => got.push(Collected {
                point: grid.point(idx),
                summary,
            }),
            None => missing.push(idx),
        }
    }
    Ok((grid, got, missing))
}

/// The best cell of a two-axis sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct Best {
    /// The grid's name.
    pub grid: String,
    /// Axis name → the cell's value.
    pub values: BTreeMap<String, f64>,
    /// Points not (yet) finished.
    pub missing: usize,
}

/// The best cell of the two-axis sweep in `out`; `None` when the grid has not two axes or
/// no finished point.
pub fn best(out: &Path) -> Result<Option<Best>> {
    let (grid, got, missing) = gather(out)?;
    let [ax, ay] = grid.axes.as_slice() else {
        return Ok(None);
    };
    let cells = normalised_objective(&grid, &got);
    Ok(cells
        .iter()
        .filter(|(_, v)| v.is_finite())
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map(|(&(x, y), _)| {
            let values = BTreeMap::from([
                (ax.name.clone(), ax.values[x]),
                (ay.name.clone(), ay.values[y]),
            ]);
            Best {
                grid: grid.name.clone(),
                values,
                missing: missing.len(),
            }
        }))
}

/// Per cell of a two-axis grid: the objective normalised to [0, 1] within each scenario
/// (min–max over the cells that scenario has), summed over the scenarios; NaN where a
/// scenario's point is missing.
pub fn normalised_objective(grid: &Grid, got: &[Collected]) -> BTreeMap<(usize, usize), f64> {
    let [ax, ay] = grid.axes.as_slice() else {
        return BTreeMap::new();
    };
    let cell = |p: &Point| {
        let x = ax.values.iter().position(|v| *v == p.values[&ax.name])?;
        let y = ay.values.iter().position(|v| *v == p.values[&ay.name])?;
        Some((x, y))
    };
    let mut out: BTreeMap<(usize, usize), f64> = BTreeMap::new();
    for x in 0..ax.values.len() {
        for y in 0..ay.values.len() {
            out.insert((x, y), 0.0);
        }
    }
    for (spec, _, _) in &grid.scenarios {
        let mine: Vec<((usize, usize), f64)> = got
            .iter()
            .filter(|c| c.point.scenario == *spec)
            .filter_map(|c| Some((cell(&c.point)?, objective(&c.summary)?)))
            .collect();
        let lo = mine.iter().map(|(_, v)| *v).fold(f64::INFINITY, f64::min);
        let hi = mine
            .iter()
            .map(|(_, v)| *v)
            .fold(f64::NEG_INFINITY, f64::max);
        let have: BTreeMap<(usize, usize), f64> = mine.into_iter().collect();
        for (k, total) in out.iter_mut() {
            match have.get(k) {
                Some(v) if hi > lo => *total += (v - lo) / (hi - lo),
                Some(_) => *total += 1.0,
                None => *total = f64::NAN,
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const GRID: &str = r#"
name = "t"
scenarios = ["preset:mmsys16-6.1-variable-capacity"]
[[axis]]
name = "ku"
send_arg = "--gcc-ku"
log = { from = 0.001, to = 0.1, n = 3 }
[[axis]]
name = "kd"
send_arg = "--gcc-kd"
values = [0.0001, 0.001]
"#;

    #[test]
    fn a_grid_expands_to_points_last_axis_fastest() {
        let g = Grid::parse(GRID, "g.toml", Path::new(".")).unwrap();
        assert!(g.sim);
        assert_eq!(g.len(), 6);
        let ku = &g.axes[0].values;
        assert!(
            (ku[0] - 0.001).abs() < 1e-12
                && (ku[1] - 0.01).abs() < 1e-12
                && (ku[2] - 0.1).abs() < 1e-12
        );
        let p = g.point(3);
        assert_eq!((p.values["ku"], p.values["kd"]), (ku[1], 0.001));
        let (sc, _) = g.scenario_of(&p).unwrap();
        let args = &sc.flows[0].send_args;
        assert_eq!(
            &args[args.len() - 4..],
            ["--gcc-ku", "0.01", "--gcc-kd", "0.001"]
        );
    }

    #[test]
    fn a_grid_with_a_mistake_is_refused_with_line_and_field() {
        let cases = [
            (
                GRID.replace("log = { from = 0.001", "log = { from = -1.0"),
                "axis[0].log",
                7,
            ),
            (
                GRID.replace(
                    "values = [0.0001, 0.001]",
                    "values = [0.1]\nlin = { from = 1.0, to = 2.0, n = 2 }",
                ),
                "axis[1].values",
                8,
            ),
            (
                GRID.replace("preset:mmsys16", "preset:nope"),
                "scenarios[0]",
                3,
            ),
            (
                GRID.replace("name = \"kd\"", "name = \"ku\""),
                "axis[1].name",
                8,
            ),
            (
                GRID.replace("send_arg = \"--gcc-kd\"", "sendarg = \"--gcc-kd\""),
                "sendarg",
                10,
            ),
            (format!("{GRID}backend = \"cloud\"\n"), "backend", 0),
        ];
        for (text, field, line) in cases {
            let e = match Grid::parse(&text, "g.toml", Path::new(".")) {
                Err(Error::Scenario(e)) => e,
                other => panic!("{field}: {other:?}"),
            };
            assert_eq!(e.field, field, "{e}");
            assert_eq!(e.file, "g.toml");
            if line > 0 {
                assert_eq!(e.line, line, "{e}");
            }
        }
        // A scenario the simulator cannot run is refused before anything runs.
        let bbr = GRID.replace(
            "preset:mmsys16-6.1-variable-capacity",
            "preset:tma24-4-htb-bbr",
        );
        let e = Grid::parse(&bbr, "g.toml", Path::new("."))
            .unwrap_err()
            .to_string();
        assert!(e.contains("BBR"), "{e}");
    }

    #[test]
    fn shards_split_the_points_and_parse_strictly() {
        assert_eq!(parse_shard("2/5"), Ok((2, 5)));
        assert!(
            parse_shard("5/5").is_err() && parse_shard("1").is_err() && parse_shard("a/2").is_err()
        );
    }

    #[test]
    fn a_sweep_resumes_and_collects_into_a_table_and_a_heat_map() {
        let dir = std::env::temp_dir().join(format!("netlab-sweep-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // A short single-flow scenario beside the grid.
        let sc = include_str!("../tests/data/short-gcc.toml");
        std::fs::write(dir.join("short.toml"), sc).unwrap();
        let grid = GRID
            .replace("preset:mmsys16-6.1-variable-capacity", "short.toml")
            .replace("n = 3", "n = 2");
        std::fs::write(dir.join("grid.toml"), grid).unwrap();
        let out = dir.join("out");
        let req = RunRequest {
            out: out.clone(),
            base: dir.clone(),
            coalesce: std::time::Duration::from_micros(100),
            skip_rtt_check: false,
            quiet: true,
            forwarder_rt: None,
        };
        // Two shards, as two array tasks would run them; the second run of shard 0 redoes nothing.
        assert_eq!(
            run(&dir.join("grid.toml"), (0, 2), &out, &req).unwrap(),
            (2, 0, 0)
        );
        assert_eq!(
            run(&dir.join("grid.toml"), (0, 2), &out, &req).unwrap(),
            (0, 2, 0)
        );
        let partial = collect(&out).unwrap();
        assert!(
            partial.contains("2 of 4 points collected (missing: 2)"),
            "{partial}"
        );
        assert_eq!(
            run(&dir.join("grid.toml"), (1, 2), &out, &req).unwrap(),
            (2, 0, 0)
        );
        let md = collect(&out).unwrap();
        assert!(
            md.contains("4 of 4 points collected.") && md.contains("best at ku"),
            "{md}"
        );
        let csv = std::fs::read_to_string(out.join("collect.csv")).unwrap();
        assert_eq!(csv.lines().count(), 5, "{csv}");
        assert!(out.join("heatmap.png").exists());
        let b = best(&out).unwrap().expect("a best cell");
        assert_eq!((b.grid.as_str(), b.missing), ("t", 0));
        assert!(b.values.keys().eq(["kd", "ku"]), "{b:?}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
