//! Reading a grid file: every mistake refused with file, line and field before anything
//! runs, the key axes' values checked against every scenario (each value, and every
//! combination up to [`MAX_CHECKED_COMBINATIONS`]), the argument axes' against the simulator.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::grid::{Axis, AxisValue, Grid};
use super::patch::{KeyError, append_arg};
use crate::input::{from_toml, located};
use crate::scenario::{Scenario, presets};
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

/// Most points a grid may have.
const MAX_POINTS: usize = 1_000_000;

/// Most combinations of key-axis values checked per scenario when a grid is loaded; above
/// it, each value is checked on its own.
const MAX_CHECKED_COMBINATIONS: usize = 2_000;

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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::testing::{GRID, KEY_GRID};

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
            include_str!("../../tests/data/short-gcc.toml")
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
}
