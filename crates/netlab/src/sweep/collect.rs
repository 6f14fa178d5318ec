//! Collecting a sweep: its finished points merged into a table, MMSys16's objective per
//! point, and for two axes the normalised objective's heat map and best cell.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use super::grid::{AxisValue, Grid, Point};
use crate::plot::HeatAxis;
use crate::{Error, Result};

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
        std::fs::write(&p, bytes).map_err(|e| Error::output(p, e))
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
