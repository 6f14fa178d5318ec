//! A sweep's grid, checked: its scenarios, its axes and their values, and the points they
//! make (the product, the last axis fastest).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::scenario::Scenario;

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

impl Grid {
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
    pub(super) fn toml(&self, unit: Option<&str>, old: Option<&toml::Value>) -> toml::Value {
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
    pub(super) fn label(&self, i: usize) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::testing::GRID;
    use std::path::Path;

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
}
