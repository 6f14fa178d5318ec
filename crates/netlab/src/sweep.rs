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
//! recv_arg = "--gcc-ku"                # appended, with the value, to every cg flow's recv_args (GCC-REMB: the estimator runs in cg-recv)
//! log = { from = 1e-5, to = 0.1, n = 20 }   # or lin = {…}, or values = [...]
//!
//! [[axis]]
//! name = "kd"
//! recv_arg = "--gcc-kd"
//! log = { from = 1e-5, to = 0.1, n = 20 }
//! ```
//!
//! An axis takes its values to one place: `send_arg` (a cg-send option, appended with the
//! value to every cg flow's `send_args`), `recv_arg` (the same for cg-recv; an axis may give
//! both), or `key`, a field of the scenario itself, as a dotted path into its TOML:
//!
//! ```toml
//! [[axis]]
//! name = "rtt"
//! key = "forward.delay"                # also: forward.capacity, forward.qdisc.target, seed…
//! unit = "ms"                          # appended to each number: delay = "25ms"
//! values = [10, 25, 50]
//!
//! [[axis]]
//! name = "ntcp"
//! key = "flows.tcp.count"              # an array of tables is indexed by its entries' `name`
//! values = [1, 4, 9]                   #   (or by position: forward.schedule.1.rate)
//! ```
//!
//! Values are numbers (`values`, `log`, `lin`), written with `unit` appended when it is given,
//! otherwise as a TOML integer when the number is whole and the field is not already a float
//! (`count = 4`), else as a float; or strings (`values = ["codel", "pie"]`), written as they
//! are. A key axis's point is the base scenario's TOML source with the field set (the last
//! segment may be a field the base leaves out, `forward.jitter`; the tables on the way must
//! exist), written out again and parsed by the scenario parser, so every check of
//! [`Scenario::parse`] runs on it (and, for simulated grids, [`crate::simrun::check`]). The
//! point's `scenario.toml` is that text. Several AQMs are several scenarios of the grid: an
//! "AQM × RTT × flow count" grid lists the AQM presets and has a `forward.delay` and a
//! `flows.<name>.count` axis.
//!
//! Points are the product scenarios × axis values, numbered in that order (the last axis
//! fastest). Point `i` runs into `DIR/points/<i>/` with its values in `point.json`; a point
//! whose `summary.json` exists is not run again, so an interrupted sweep resumes. A grid with
//! a mistake is refused with file, line and field before anything runs: among them a `key`
//! that leads nowhere in a scenario (`axis[0].key`: no table on the way, no `[[flows]]` entry
//! of that name) and a value the scenario parser or the simulator refuses for some point
//! (`axis[0].values`, with the scenario, the values and the parser's field and message). Every
//! combination of the key axes' values is checked against every scenario when there are at
//! most 2 000 per scenario; above that, each value on its own.
//!
//! `collect` reads every finished point and writes `DIR/collect.csv` (one row per point: its
//! scenario and values, link utilisation, the cg flows' throughput and mean and 95th-percentile
//! queuing delay, loss, Jain's index and MMSys16's objective) and, for a grid of two axes,
//! `DIR/heatmap.png`: the objective normalised to `[0, 1]` per scenario and summed over the
//! scenarios, as MMSys16 Fig. 8 draws it (an axis of strings by position), with
//! `DIR/collect.md` naming the best cell.
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

use crate::input::{from_toml, located};
use crate::plot::HeatAxis;
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
    key: Option<Spanned<String>>,
    #[serde(default)]
    unit: Option<Spanned<String>>,
    #[serde(default)]
    values: Option<Spanned<Vec<AxisValue>>>,
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
    /// The scenario field that takes the value, as a dotted path (`forward.qdisc.target`,
    /// `flows.tcp.count`).
    pub key: Option<String>,
    /// Appended to numbers where they are written (`"ms"`: `25` becomes `"25ms"`).
    pub unit: Option<String>,
    /// The values.
    pub values: Vec<AxisValue>,
}

/// One value of an axis: a number or a string.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AxisValue {
    /// A number (`values = [5, 13]`, `log`, `lin`).
    Number(f64),
    /// A string, written as it is (`values = ["codel", "pie"]`).
    Text(String),
}

impl AxisValue {
    /// The number, for a numeric value.
    pub fn number(&self) -> Option<f64> {
        match self {
            AxisValue::Number(v) => Some(*v),
            AxisValue::Text(_) => None,
        }
    }

    /// The value as written into an argument list or a string field: the number followed by
    /// `unit`, or the text.
    pub fn written(&self, unit: Option<&str>) -> String {
        match self {
            AxisValue::Number(v) => format!("{v}{}", unit.unwrap_or("")),
            AxisValue::Text(t) => t.clone(),
        }
    }

    /// As a TOML value for a field whose base value is `old` (if the base has it).
    fn toml(&self, unit: Option<&str>, old: Option<&toml::Value>) -> toml::Value {
        match self {
            AxisValue::Number(_) if unit.is_some() => toml::Value::String(self.written(unit)),
            AxisValue::Number(v) => {
                let float_field = matches!(old, Some(toml::Value::Float(_)));
                // Whole numbers in i64's exact range are integers (`count = 4`).
                if !float_field && v.fract() == 0.0 && v.abs() < 9.0e15 {
                    toml::Value::Integer(*v as i64)
                } else {
                    toml::Value::Float(*v)
                }
            }
            AxisValue::Text(t) => toml::Value::String(t.clone()),
        }
    }
}

impl std::fmt::Display for AxisValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AxisValue::Number(v) => write!(f, "{v}"),
            AxisValue::Text(t) => f.write_str(t),
        }
    }
}

impl Axis {
    /// Where each value sits on a plot: the numbers, or positions 0, 1, … for text.
    pub fn coords(&self) -> Vec<f64> {
        if let Some(v) = self.values.iter().map(AxisValue::number).collect() {
            return v;
        }
        (0..self.values.len()).map(|i| i as f64).collect()
    }

    /// Value `i` in short form (`1.000e-2`, or the text), for the collected Markdown.
    fn label(&self, i: usize) -> String {
        match &self.values[i] {
            AxisValue::Number(v) => format!("{v:.3e}"),
            AxisValue::Text(t) => t.clone(),
        }
    }
}

/// One point of a grid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Its number.
    pub index: usize,
    /// The scenario's spec as written in the grid.
    pub scenario: String,
    /// Axis name → value.
    pub values: BTreeMap<String, AxisValue>,
}

/// Most points a grid may have.
const MAX_POINTS: usize = 1_000_000;

/// Most combinations of key-axis values checked per scenario when a grid is loaded; above
/// it, each value is checked on its own.
const MAX_CHECKED_COMBINATIONS: usize = 2_000;

/// Why a scenario with key-axis values set is not a scenario.
#[derive(Debug, Clone, PartialEq)]
enum KeyError {
    /// Axis `.0`'s key leads nowhere in the scenario.
    Path(usize, String),
    /// The scenario parser or the simulator refuses the result.
    Refused(String),
}

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
        // Per axis: where its key and its values are written (for the key axes' checks).
        let mut spans: Vec<(std::ops::Range<usize>, std::ops::Range<usize>)> = Vec::new();
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
            match (&a.key, a.send_arg.is_some() || a.recv_arg.is_some()) {
                (None, false) => {
                    return Err(err(
                        span,
                        &field("send_arg"),
                        "give send_arg, recv_arg (or both), or key".into(),
                    ));
                }
                (Some(k), true) => {
                    return Err(err(
                        k.span(),
                        &field("key"),
                        "a key axis sets a scenario field: give key, or send_arg/recv_arg, \
                         not both"
                            .into(),
                    ));
                }
                (Some(k), false) => {
                    let key = k.get_ref();
                    if key.split('.').any(|s| s.trim().is_empty()) {
                        return Err(err(
                            k.span(),
                            &field("key"),
                            format!(
                                "`{key}`: expected a dotted path such as \"forward.delay\" or \
                                 \"flows.tcp.count\""
                            ),
                        ));
                    }
                }
                (None, true) if sim => {
                    // The simulator ignores the options it has no model for (the picture,
                    // the codec…): an axis over one would run the same point again and again.
                    use crate::simrun::{SIM_GCC_ARGS, SIM_SEND_ARGS};
                    let read = |o: &Option<String>, known: &[&str]| {
                        o.as_deref().is_none_or(|o| known.contains(&o))
                    };
                    let send: Vec<&str> =
                        SIM_SEND_ARGS.iter().chain(&SIM_GCC_ARGS).copied().collect();
                    for (o, f, known) in [
                        (&a.send_arg, "send_arg", &send[..]),
                        (&a.recv_arg, "recv_arg", &SIM_GCC_ARGS[..]),
                    ] {
                        if !read(o, known) {
                            return Err(err(
                                span.clone(),
                                &field(f),
                                format!(
                                    "`{}`: the simulator does not read it (it reads {}); run \
                                     this grid with backend = \"namespaces\"",
                                    o.as_deref().unwrap_or_default(),
                                    known.join(", ")
                                ),
                            ));
                        }
                    }
                }
                (None, true) => {}
            }
            if let Some(u) = &a.unit
                && (u.get_ref().trim().is_empty() || u.get_ref().contains(char::is_whitespace))
            {
                return Err(err(
                    u.span(),
                    &field("unit"),
                    format!(
                        "`{}`: expected a unit such as \"ms\" or \"Mbit\"",
                        u.get_ref()
                    ),
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
            let (values, values_span) = if let Some(v) = &a.values {
                let vals = v.get_ref().clone();
                let numbers = vals.iter().filter(|x| x.number().is_some()).count();
                if numbers != 0 && numbers != vals.len() {
                    return Err(err(
                        v.span(),
                        &field("values"),
                        "mixes numbers and strings".into(),
                    ));
                }
                if numbers == 0
                    && let Some(u) = &a.unit
                {
                    return Err(err(
                        u.span(),
                        &field("unit"),
                        "a unit is appended to numbers; these values are strings".into(),
                    ));
                }
                (vals, v.span())
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
                let vals = (0..v.n)
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
                        AxisValue::Number(format!("{v:.10e}").parse().unwrap_or(v))
                    })
                    .collect();
                (vals, r.span())
            };
            if values.is_empty()
                || values
                    .iter()
                    .any(|v| v.number().is_some_and(|x| !x.is_finite()))
            {
                return Err(err(span, &field("values"), "needs finite values".into()));
            }
            if values
                .iter()
                .enumerate()
                .any(|(k, v)| values[..k].contains(v))
            {
                return Err(err(
                    values_span,
                    &field("values"),
                    "a value is repeated".into(),
                ));
            }
            points = points.saturating_mul(values.len());
            spans.push((
                a.key.as_ref().map_or(span.clone(), |k| k.span()),
                values_span,
            ));
            axes.push(Axis {
                name: a.name.clone(),
                send_arg: a.send_arg.clone(),
                recv_arg: a.recv_arg.clone(),
                key: a.key.as_ref().map(|k| k.get_ref().clone()),
                unit: a.unit.as_ref().map(|u| u.get_ref().clone()),
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
        let grid = Grid {
            name: raw.name,
            description: raw.description,
            scenarios,
            sim,
            axes,
        };
        let blame = |axis: usize, on_key: bool, m: String| {
            let (k, v) = &spans[axis];
            let (span, f) = if on_key {
                (k.clone(), "key")
            } else {
                (v.clone(), "values")
            };
            err(span, &format!("axis[{axis}].{f}"), m)
        };
        grid.check_keys(&blame)?;
        grid.check_args(&blame)?;
        Ok(grid)
    }

    /// For a simulated grid, checks each scenario with each value of each argument axis on its
    /// own (the key axes at their first value) as the simulator will get it: a GCC setting
    /// on the side whose program refuses it, or a value that does not parse, is refused here
    /// rather than in every point.
    fn check_args(&self, blame: &dyn Fn(usize, bool, String) -> Error) -> Result<()> {
        if !self.sim {
            return Ok(());
        }
        let first: Vec<(usize, usize)> = (0..self.axes.len())
            .filter(|a| self.axes[*a].key.is_some())
            .map(|a| (a, 0))
            .collect();
        for (s, (spec, _, _)) in self.scenarios.iter().enumerate() {
            let Ok(base) = self.with_keys(s, &first) else {
                continue; // check_keys has said why.
            };
            for (a, ax) in self
                .axes
                .iter()
                .enumerate()
                .filter(|(_, ax)| ax.key.is_none())
            {
                for v in &ax.values {
                    let mut sc = base.clone();
                    append_arg(&mut sc, ax, v);
                    if let Err(e) = crate::simrun::check(&sc) {
                        return Err(blame(
                            a,
                            false,
                            format!("scenario `{spec}` with {} = {v}: {e}", ax.name),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// Checks every scenario with the key axes' values set: each value on its own, then every
    /// combination of them (at most [`MAX_CHECKED_COMBINATIONS`] per scenario). `blame(axis,
    /// on_key, message)` makes the error, placed on the axis's key or on its values.
    fn check_keys(&self, blame: &dyn Fn(usize, bool, String) -> Error) -> Result<()> {
        let keyed: Vec<usize> = (0..self.axes.len())
            .filter(|i| self.axes[*i].key.is_some())
            .collect();
        if keyed.is_empty() {
            return Ok(());
        }
        let describe = |set: &[(usize, usize)]| {
            set.iter()
                .map(|&(a, v)| {
                    let ax = &self.axes[a];
                    format!("{} = {}", ax.name, ax.values[v].written(ax.unit.as_deref()))
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        for s in 0..self.scenarios.len() {
            let spec = &self.scenarios[s].0;
            let check = |set: &[(usize, usize)], last: usize| -> Result<()> {
                match self.with_keys(s, set) {
                    Ok(_) => Ok(()),
                    Err(KeyError::Path(a, m)) => {
                        Err(blame(a, true, format!("scenario `{spec}`: {m}")))
                    }
                    Err(KeyError::Refused(m)) => Err(blame(
                        last,
                        false,
                        format!("scenario `{spec}` with {}: {m}", describe(set)),
                    )),
                }
            };
            for &a in &keyed {
                for v in 0..self.axes[a].values.len() {
                    check(&[(a, v)], a)?;
                }
            }
            let combinations = keyed
                .iter()
                .map(|a| self.axes[*a].values.len())
                .fold(1usize, usize::saturating_mul);
            if keyed.len() < 2 || combinations > MAX_CHECKED_COMBINATIONS {
                continue;
            }
            for mut rest in 0..combinations {
                let mut set = vec![(0, 0); keyed.len()];
                for (k, a) in keyed.iter().enumerate().rev() {
                    let n = self.axes[*a].values.len();
                    set[k] = (*a, rest % n);
                    rest /= n;
                }
                check(&set, keyed[keyed.len() - 1])?;
            }
        }
        Ok(())
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
            values.insert(a.name.clone(), a.values[rest % a.values.len()].clone());
            rest /= a.values.len();
        }
        Point {
            index,
            scenario: self.scenarios[rest % self.scenarios.len()].0.clone(),
            values,
        }
    }

    /// Scenario `s` with the key-axis values `set` (axis, value index) written into its TOML
    /// source, parsed and checked again; the scenario itself when `set` is empty.
    fn with_keys(
        &self,
        s: usize,
        set: &[(usize, usize)],
    ) -> std::result::Result<Scenario, KeyError> {
        let (spec, sc, base) = &self.scenarios[s];
        if set.is_empty() {
            return Ok(sc.clone());
        }
        let mut table: toml::Table = sc
            .source
            .parse()
            .map_err(|e| KeyError::Refused(format!("its source does not parse: {e}")))?;
        let mut head = format!("# {spec}, a point of netlab sweep `{}`:", self.name);
        for &(a, v) in set {
            let ax = &self.axes[a];
            let key = ax.key.as_deref().expect("only key axes are set");
            set_key(&mut table, key, &ax.values[v], ax.unit.as_deref())
                .map_err(|m| KeyError::Path(a, m))?;
            let _ = write!(
                head,
                " {key} = {}",
                ax.values[v].toml(ax.unit.as_deref(), None)
            );
        }
        let text = format!("{head}\n{table}");
        let point = Scenario::parse(&text, &format!("{spec} (sweep point)"), &sc.name, base)
            .map_err(|e| KeyError::Refused(format!("field `{}`: {}", e.field, e.message)))?;
        if self.sim
            && let Err(e) = crate::simrun::check(&point)
        {
            return Err(KeyError::Refused(e.to_string()));
        }
        Ok(point)
    }

    /// The scenario of `p`: its key axes' values set in the scenario, its other axes' values
    /// appended to its cg flows' arguments.
    fn scenario_of(&self, p: &Point) -> std::result::Result<(Scenario, PathBuf), String> {
        let s = self
            .scenarios
            .iter()
            .position(|(spec, _, _)| *spec == p.scenario)
            .ok_or_else(|| format!("no scenario `{}` in the grid", p.scenario))?;
        let mut set = Vec::new();
        for (a, ax) in self
            .axes
            .iter()
            .enumerate()
            .filter(|(_, ax)| ax.key.is_some())
        {
            let v = ax
                .values
                .iter()
                .position(|v| Some(v) == p.values.get(&ax.name))
                .ok_or_else(|| format!("no value of axis `{}` in the point", ax.name))?;
            set.push((a, v));
        }
        let mut sc = self.with_keys(s, &set).map_err(|e| match e {
            KeyError::Path(_, m) | KeyError::Refused(m) => m,
        })?;
        for a in self.axes.iter().filter(|a| a.key.is_none()) {
            append_arg(&mut sc, a, &p.values[&a.name]);
        }
        Ok((sc, self.scenarios[s].2.clone()))
    }
}

/// Appends argument axis `a`'s option with `value` to every cg flow of `sc`.
fn append_arg(sc: &mut Scenario, a: &Axis, value: &AxisValue) {
    let v = value.written(a.unit.as_deref());
    for f in sc.flows.iter_mut().filter(|f| f.kind == FlowKind::Cg) {
        if let Some(arg) = &a.send_arg {
            f.send_args.extend([arg.clone(), v.clone()]);
        }
        if let Some(arg) = &a.recv_arg {
            f.recv_args.extend([arg.clone(), v.clone()]);
        }
    }
}

/// Sets the field at the dotted path `key` of a scenario's TOML `root` to `value`. Tables on
/// the way must exist; an array of tables takes the next segment as an entry's `name` (or
/// else its position); the last segment may be new.
fn set_key(
    root: &mut toml::Table,
    key: &str,
    value: &AxisValue,
    unit: Option<&str>,
) -> std::result::Result<(), String> {
    let segments: Vec<&str> = key.split('.').collect();
    let mut table = root;
    let mut i = 0;
    loop {
        let seg = segments[i];
        let at = segments[..=i].join(".");
        if i + 1 == segments.len() {
            let v = value.toml(unit, table.get(seg));
            table.insert(seg.to_owned(), v);
            return Ok(());
        }
        let next = table
            .get_mut(seg)
            .ok_or_else(|| format!("`{key}`: the scenario has no `{at}`"))?;
        i += 1;
        table = match next {
            toml::Value::Table(t) => t,
            toml::Value::Array(items) => {
                let sel = segments[i];
                let by_name = items
                    .iter()
                    .position(|x| x.get("name").and_then(toml::Value::as_str) == Some(sel));
                let pos = by_name
                    .or_else(|| sel.parse::<usize>().ok().filter(|k| *k < items.len()))
                    .ok_or_else(|| {
                        format!("`{key}`: no `{at}` entry is named `{sel}` (nor is it a position)")
                    })?;
                i += 1;
                if i == segments.len() {
                    return Err(format!(
                        "`{key}` names an entry of `{at}`, not one of its fields"
                    ));
                }
                match &mut items[pos] {
                    toml::Value::Table(t) => t,
                    _ => return Err(format!("`{key}`: `{at}.{sel}` is not a table")),
                }
            }
            _ => return Err(format!("`{key}`: `{at}` is a value, not a table")),
        };
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
        let values: Vec<String> = p.values.iter().map(|(k, v)| format!("{k} = {v}")).collect();
        let head = format!(
            "[{}/{}] point {idx} {} {}",
            k + 1,
            mine.len(),
            p.scenario,
            values.join(", ")
        );
        if dir.join("summary.json").exists() {
            done += 1;
            continue;
        }
        let (sc, base) = match grid.scenario_of(&p) {
            Ok(x) => x,
            Err(e) => {
                eprintln!("{head}: failed: {e}");
                failed += 1;
                continue;
            }
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
            report::run_simulated(&sc, &dir)
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
            let v = c.point.values[&a.name].to_string();
            if v.contains([',', '"']) {
                let _ = write!(csv, ",\"{}\"", v.replace('"', "\"\""));
            } else {
                let _ = write!(csv, ",{v}");
            }
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
                "\nObjective (MMSys16 eq. 21, normalised per scenario and summed over {} scenario(s)): best at {} = {}, {} = {} ({best:.3}).",
                grid.scenarios.len(),
                ax.name,
                ax.label(x),
                ay.name,
                ay.label(y)
            );
        }
        let (cx, cy) = (ax.coords(), ay.coords());
        crate::plot::heatmap(
            &out.join("heatmap.png"),
            &grid.name,
            HeatAxis {
                name: &ax.name,
                coords: &cx,
            },
            HeatAxis {
                name: &ay.name,
                coords: &cy,
            },
            &cells,
        )?;
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
    pub values: BTreeMap<String, AxisValue>,
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
                (ax.name.clone(), ax.values[x].clone()),
                (ay.name.clone(), ay.values[y].clone()),
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
recv_arg = "--gcc-ku"
log = { from = 0.001, to = 0.1, n = 3 }
[[axis]]
name = "kd"
recv_arg = "--gcc-kd"
values = [0.0001, 0.001]
"#;

    #[test]
    fn a_grid_expands_to_points_last_axis_fastest() {
        let g = Grid::parse(GRID, "g.toml", Path::new(".")).unwrap();
        assert!(g.sim);
        assert_eq!(g.len(), 6);
        let ku = &g.axes[0].values;
        let n = |i: usize| ku[i].number().unwrap();
        assert!(
            (n(0) - 0.001).abs() < 1e-12
                && (n(1) - 0.01).abs() < 1e-12
                && (n(2) - 0.1).abs() < 1e-12
        );
        let p = g.point(3);
        assert_eq!(
            (&p.values["ku"], &p.values["kd"]),
            (&ku[1], &AxisValue::Number(0.001))
        );
        let (sc, _) = g.scenario_of(&p).unwrap();
        let args = &sc.flows[0].recv_args;
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
                GRID.replace("recv_arg = \"--gcc-kd\"", "recvarg = \"--gcc-kd\""),
                "recvarg",
                10,
            ),
            (
                // GCC-REMB's estimator runs in cg-recv: cg-send refuses its settings.
                GRID.replace("recv_arg = \"--gcc-kd\"", "send_arg = \"--gcc-kd\""),
                "axis[1].values",
                11,
            ),
            (
                // The simulator has no model of the picture: an axis over it runs one point.
                GRID.replace("recv_arg = \"--gcc-kd\"", "send_arg = \"--width\""),
                "axis[1].send_arg",
                8,
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
        // A scenario the simulator cannot run (a cg flow that stops early) is refused before
        // anything runs.
        let dir = std::env::temp_dir().join(format!("netlab-sweep-sim-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let early = format!(
            "{}stop = \"10s\"\n",
            include_str!("../tests/data/short-gcc.toml")
        );
        std::fs::write(dir.join("early.toml"), early).unwrap();
        let grid = GRID.replace("preset:mmsys16-6.1-variable-capacity", "early.toml");
        let e = Grid::parse(&grid, "g.toml", &dir).unwrap_err().to_string();
        assert!(
            e.contains("scenarios[0]") && e.contains("stops before the end"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).ok();
    }

    /// An "AQM × RTT × flow count" grid over two CCR16 §4.2 presets.
    const KEY_GRID: &str = r#"
name = "k"
scenarios = ["preset:ccr16-4.2-codel-3tcp-10mbit", "preset:ccr16-4.2-pie-3tcp-10mbit"]
[[axis]]
name = "rtt"
key = "forward.delay"
unit = "ms"
values = [10, 40]
[[axis]]
name = "ntcp"
key = "flows.tcp.count"
lin = { from = 1, to = 5, n = 3 }
[[axis]]
name = "ku"
recv_arg = "--gcc-ku"
values = [0.01]
"#;

    #[test]
    fn key_axes_set_the_scenario_field_of_each_point() {
        let g = Grid::parse(KEY_GRID, "g.toml", Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(g.len(), 2 * 2 * 3);
        assert_eq!(g.axes[0].key.as_deref(), Some("forward.delay"));
        // Point 10: the PIE preset (second scenario), rtt 40, ntcp 3 (the last axes fastest).
        let p = g.point(10);
        assert_eq!(p.scenario, "preset:ccr16-4.2-pie-3tcp-10mbit");
        assert_eq!(p.values["rtt"], AxisValue::Number(40.0));
        assert_eq!(p.values["ntcp"], AxisValue::Number(3.0));
        let (sc, _) = g.scenario_of(&p).unwrap();
        assert_eq!(sc.name, "ccr16-4.2-pie-3tcp-10mbit");
        assert_eq!(sc.forward.delay.base, std::time::Duration::from_millis(40));
        let tcp: Vec<&str> = sc
            .flows
            .iter()
            .filter(|f| f.kind == FlowKind::Tcp)
            .map(|f| f.name.as_str())
            .collect();
        assert_eq!(tcp, ["tcp-1", "tcp-2", "tcp-3"]);
        assert!(matches!(
            sc.forward.qdisc,
            cg_link::qdisc::QdiscConfig::Pie(_)
        ));
        // The count is written as an integer, the delay with its unit, and the point's
        // scenario text says which point it is; the recv_arg axis still reaches cg-recv.
        assert!(
            sc.source.contains("count = 3")
                && sc.source.contains("delay = \"40ms\"")
                && sc
                    .source
                    .starts_with("# preset:ccr16-4.2-pie-3tcp-10mbit, a point"),
            "{}",
            sc.source
        );
        let cg = sc.flows.iter().find(|f| f.kind == FlowKind::Cg).unwrap();
        assert_eq!(
            &cg.recv_args[cg.recv_args.len() - 2..],
            ["--gcc-ku", "0.01"]
        );
        // The base scenarios are untouched.
        assert_eq!(g.scenarios[1].1.forward.delay.base.as_millis(), 25);
        // A qdisc field and a string value; a point.json round-trips its values.
        let text = r#"
name = "t"
scenarios = ["preset:ccr16-4.1-codel-1mbit"]
[[axis]]
name = "target"
key = "forward.qdisc.target"
unit = "ms"
values = [5, 250]
[[axis]]
name = "cc"
key = "flows.gcc.controller"
values = ["gcc", "gcc-remb"]
"#;
        let g = Grid::parse(text, "g.toml", Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
        let p = g.point(2);
        let (sc, _) = g.scenario_of(&p).unwrap();
        match &sc.forward.qdisc {
            cg_link::qdisc::QdiscConfig::Codel(c) => assert_eq!(c.target.as_millis(), 250),
            other => panic!("{other:?}"),
        }
        assert_eq!(sc.flows[0].controller, "gcc");
        let json = serde_json::to_string(&p).unwrap();
        assert!(
            json.contains("\"target\":250.0") && json.contains("\"cc\":\"gcc\""),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<Point>(&json).unwrap(), p);
    }

    #[test]
    fn a_key_axis_with_a_mistake_is_refused_with_line_and_field() {
        let cases = [
            // A table on the way that the scenario does not have.
            (
                KEY_GRID.replace("forward.delay", "forward.qdsic.delay"),
                "axis[0].key",
                6,
                "no `forward.qdsic`",
            ),
            // No [[flows]] entry of that name.
            (
                KEY_GRID.replace("flows.tcp.count", "flows.udp.count"),
                "axis[1].key",
                11,
                "named `udp`",
            ),
            // A last segment the scenario parser does not know.
            (
                KEY_GRID.replace("forward.delay", "forward.dleay"),
                "axis[0].values",
                8,
                "dleay",
            ),
            // A value the scenario parser refuses for one point.
            (
                KEY_GRID.replace("values = [10, 40]", "values = [10, 40000]"),
                "axis[0].values",
                8,
                "forward.delay",
            ),
            (
                KEY_GRID.replace("n = 3 }", "n = 4 }"),
                "axis[1].values",
                12,
                "count",
            ),
            // key with send_arg, a unit on strings, mixed values.
            (
                KEY_GRID.replace("unit = \"ms\"", "send_arg = \"--x\""),
                "axis[0].key",
                6,
                "not both",
            ),
            (
                KEY_GRID.replace("values = [10, 40]", "values = [\"10ms\", \"40ms\"]"),
                "axis[0].unit",
                7,
                "strings",
            ),
            (
                KEY_GRID.replace("values = [10, 40]", "values = [10, \"40ms\"]"),
                "axis[0].values",
                8,
                "mixes",
            ),
            (
                KEY_GRID.replace("forward.delay", "forward..delay"),
                "axis[0].key",
                6,
                "dotted path",
            ),
            (
                KEY_GRID.replace("values = [10, 40]", "values = [10, 10]"),
                "axis[0].values",
                8,
                "repeated",
            ),
            // A point the simulator cannot run (a cg flow that stops before the end).
            (
                format!(
                    "{KEY_GRID}[[axis]]\nname = \"stop\"\nkey = \"flows.gcc.stop\"\nunit = \"s\"\nvalues = [400, 200]\n"
                ),
                "axis[3].values",
                21,
                "stops before the end",
            ),
        ];
        for (text, field, line, needle) in cases {
            let e = match Grid::parse(&text, "g.toml", Path::new(".")) {
                Err(Error::Scenario(e)) => e,
                other => panic!("{field}: {other:?}"),
            };
            assert_eq!((e.field.as_str(), e.line), (field, line), "{e}");
            assert_eq!(e.file, "g.toml");
            assert!(e.message.contains(needle), "{needle}: {e}");
        }
        // Values each fine on their own but not together: the TCP flows starting at 200 s
        // and stopping at 150 s. The combination is named, on the last key axis.
        let clash = r#"
name = "c"
scenarios = ["preset:ccr16-4.2-dt300-3tcp-10mbit"]
[[axis]]
name = "start"
key = "flows.tcp.start"
unit = "s"
values = [100, 200]
[[axis]]
name = "stop"
key = "flows.tcp.stop"
unit = "s"
values = [150, 300]
"#;
        let e = match Grid::parse(clash, "g.toml", Path::new(".")) {
            Err(Error::Scenario(e)) => e,
            other => panic!("{other:?}"),
        };
        assert_eq!((e.field.as_str(), e.line), ("axis[1].values", 13), "{e}");
        assert!(
            e.message.contains("start = 200s, stop = 150s")
                && e.message.contains("stop must be after start"),
            "{e}"
        );
    }

    #[test]
    fn the_shipped_grids_parse_and_check() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("sweeps");
        let mut names = Vec::new();
        for e in std::fs::read_dir(&dir).unwrap() {
            let path = e.unwrap().path();
            if path.extension().is_some_and(|x| x == "toml") {
                let g = Grid::load(&path).unwrap_or_else(|e| panic!("{e}"));
                assert!(!g.is_empty());
                names.push(g.name);
            }
        }
        names.sort();
        assert_eq!(
            names,
            [
                "ccr16-fig5-codel",
                "ccr16-fig5-pie",
                "mmsys16-fig7",
                "mmsys16-fig8"
            ]
        );
        // CCR16 Fig. 5's points set CoDel's and PIE's targets.
        let g = Grid::load(&dir.join("ccr16-fig5-pie.toml")).unwrap();
        let (sc, _) = g.scenario_of(&g.point(0)).unwrap();
        match sc.forward.qdisc {
            cg_link::qdisc::QdiscConfig::Pie(c) => assert_eq!(c.target.as_millis(), 5),
            other => panic!("{other:?}"),
        }
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
