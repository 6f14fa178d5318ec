//! Our number for each of the papers' figures, read from a finished run (see
//! [`crate::reproduce`]'s docs for what is read), and the report's rows: ours beside theirs
//! with the verdict.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::select::matches;
use crate::papers::{Flows, Metric, Paper, PaperFigure, Statistic, Verdict};
use crate::{Error, Result};

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

pub(super) fn stat_key(s: Statistic) -> &'static str {
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

/// Our number for `fig` in `run` (see [`crate::reproduce`]'s docs for what is read).
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
    /// Ours: the mean over the preset's runs that gave a number.
    pub ours: Measured,
    /// The spread of ours over the runs, when more than one gave a number.
    pub spread: Option<RunSpread>,
    /// Ours against the paper's, when we have a number: on the mean, as the papers average.
    pub verdict: Option<Verdict>,
    /// The same figure from the presets run as shipped (cg's algorithms), beside a
    /// variant's run (`netlab reproduce --beside-default`).
    pub beside: Option<Beside>,
}

/// A row's number from a second set of runs ([`Row::beside`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Beside {
    /// The mean over that set's runs.
    pub ours: Measured,
    /// Its spread.
    pub spread: Option<RunSpread>,
    /// It against the paper's.
    pub verdict: Option<Verdict>,
}

/// Our number's spread over a preset's runs (seeds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunSpread {
    /// The smallest run's number.
    pub min: f64,
    /// The largest run's number.
    pub max: f64,
    /// How many runs gave a number.
    pub n: usize,
}

/// The mean of `fig` over `runs` and its spread (more than one run); the first run's reason
/// when none gives a number.
pub fn measure_runs(fig: &PaperFigure, runs: &[RunResult]) -> (Measured, Option<RunSpread>) {
    let mut values = Vec::new();
    let mut why = None;
    for run in runs {
        match measure(fig, run) {
            Measured::Value(v) => values.push(v),
            Measured::Missing(w) => {
                why.get_or_insert(w);
            }
        }
    }
    if values.is_empty() {
        return (
            Measured::Missing(why.unwrap_or_else(|| "not run".into())),
            None,
        );
    }
    let n = values.len();
    let mean = values.iter().sum::<f64>() / n as f64;
    let spread = (n > 1).then(|| RunSpread {
        min: values.iter().copied().fold(f64::INFINITY, f64::min),
        max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        n,
    });
    (Measured::Value(mean), spread)
}

/// The report's rows: every figure of `papers` (filtered like the runs), with our number from
/// `runs` (per preset: its runs, one per seed, or why they are missing).
pub fn rows<'a>(
    papers: &'a [Paper],
    runs: &BTreeMap<String, std::result::Result<Vec<RunResult>, String>>,
    only: Option<&str>,
) -> Vec<Row<'a>> {
    let mut out = Vec::new();
    for paper in papers {
        for figure in &paper.figures {
            let (ours, spread) = match &figure.preset {
                None => (
                    Measured::Missing("netlab has no preset for this experiment".into()),
                    None,
                ),
                Some(p) if only.is_some_and(|pat| !matches(pat, p)) => continue,
                Some(p) => match runs.get(p) {
                    Some(Ok(runs)) => measure_runs(figure, runs),
                    Some(Err(e)) => (Measured::Missing(format!("run failed: {e}")), None),
                    None => (Measured::Missing("not run".into()), None),
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
                spread,
                verdict,
                beside: None,
            });
        }
    }
    out
}

/// Sets every row's [`Row::beside`] from `other`, the same papers' rows from another set of
/// runs (a row without a counterpart keeps `None`).
pub fn set_beside(rows: &mut [Row<'_>], other: &[Row<'_>]) {
    for r in rows {
        r.beside = other
            .iter()
            .find(|o| std::ptr::eq(o.figure, r.figure))
            .map(|o| Beside {
                ours: o.ours.clone(),
                spread: o.spread,
                verdict: o.verdict,
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report;
    use crate::reproduce::testing::{figure, run};

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
            include_str!("../../tests/data/short-gcc.toml")
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
}
