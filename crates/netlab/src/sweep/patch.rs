//! A point's scenario: the key axes' values written into the base scenario's TOML source
//! (parsed and checked again), the argument axes' appended to its cg flows' arguments.

use std::fmt::Write as _;
use std::path::PathBuf;

use super::grid::{Axis, AxisValue, Grid, Point};
use crate::scenario::{FlowKind, Scenario};

/// Why a scenario with key-axis values set is not a scenario.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum KeyError {
    /// Axis `.0`'s key leads nowhere in the scenario.
    Path(usize, String),
    /// The scenario parser or the simulator refuses the result.
    Refused(String),
}

impl Grid {
    /// Scenario `s` with the key-axis values `set` (axis, value index) written into its TOML
    /// source, parsed and checked again; the scenario itself when `set` is empty.
    pub(super) fn with_keys(
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
    pub(super) fn scenario_of(
        &self,
        p: &Point,
    ) -> std::result::Result<(Scenario, PathBuf), String> {
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
pub(super) fn append_arg(sc: &mut Scenario, a: &Axis, value: &AxisValue) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::testing::KEY_GRID;
    use std::path::Path;

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
}
