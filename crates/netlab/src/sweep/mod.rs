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
//! [`Scenario::parse`](crate::scenario::Scenario::parse) runs on it (and, for simulated
//! grids, [`crate::simrun::check`]). The point's `scenario.toml` is that text. Several AQMs
//! are several scenarios of the grid: an "AQM × RTT × flow count" grid lists the AQM presets
//! and has a `forward.delay` and a `flows.<name>.count` axis.
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
//!
//! The parts: `grid` (the types), `parse` (the grid file, checked), `patch` (a point's
//! scenario), this module's [`run`] (one shard of the points) and `collect` (the table, the
//! heat map, the best cell).

mod collect;
mod grid;
mod parse;
mod patch;
#[cfg(test)]
mod testing;

use std::path::Path;

pub use collect::{Best, Collected, best, collect, normalised_objective, objective};
pub use grid::{Axis, AxisValue, Grid, Point};

use crate::report::{self, RunRequest};
use crate::{Error, Result};

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
    std::fs::create_dir_all(out.join("points")).map_err(|e| Error::output(out.to_path_buf(), e))?;
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
    std::fs::write(&copy, &text).map_err(|e| Error::output(&copy, e))?;
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
        std::fs::create_dir_all(&dir).map_err(|e| Error::output(&dir, e))?;
        let point_json = serde_json::to_string_pretty(&p).expect("a point serialises");
        std::fs::write(dir.join("point.json"), point_json).map_err(|e| Error::output(&dir, e))?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use testing::GRID;

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
        let sc = include_str!("../../tests/data/short-gcc.toml");
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
