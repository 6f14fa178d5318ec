//! What the reproduction's unit tests share: a finished run to read figures from, and a
//! figure from a line of a paper file.

use std::collections::BTreeMap;

use super::measure::RunResult;
use crate::papers::{self, PaperFigure};

/// A run of two forward flows (cg, tcp) and the figures read from it.
pub(super) fn run() -> RunResult {
    let summary = serde_json::json!({
        "run": {"backend": "emulated"},
        "metrics": {
            "window_s": [10.0, 20.0],
            "link": {"utilisation": 0.9, "loss_ratio": 0.01,
                     "qdelay_ms": {"mean": 5.0, "p95": 9.0, "share_above_10_20_50_100": [0.2, 0.1, 0.0, 0.0]}},
            "flows": [
                {"name": "cg", "kind": "cg", "direction": "forward", "throughput_mbps": 3.0,
                 "delivered_bytes": 3000.0, "loss_ratio": 0.0,
                 "qdelay_ms": {"n": 100.0, "mean": 2.0, "p95": 4.0, "share_above_10_20_50_100": [0.1, 0.0, 0.0, 0.0]}},
                {"name": "tcp", "kind": "tcp", "direction": "forward", "throughput_mbps": 6.0,
                 "delivered_bytes": 6000.0, "loss_ratio": 0.015,
                 "qdelay_ms": {"n": 300.0, "mean": 6.0, "p95": 9.5, "share_above_10_20_50_100": [0.3, 0.1, 0.0, 0.0]}},
                {"name": "acks", "kind": "tcp", "direction": "reverse", "throughput_mbps": 0.1,
                 "delivered_bytes": 100.0, "loss_ratio": 0.0, "qdelay_ms": {"n": 1.0, "mean": 0.0}}
            ],
            "jain": 0.9
        }
    });
    let mut rates = BTreeMap::new();
    rates.insert("cg".to_owned(), vec![1.0, 2.0, 3.0, 4.0, 5.0]);
    RunResult { summary, rates }
}

/// The figure of a paper file whose one entry is `row = "r", {text}`.
pub(super) fn figure(text: &str) -> PaperFigure {
    let file = format!(
        "[paper]\nid = \"t\"\ncitation = \"c\"\ntext_copy = \"t.txt\"\n\n[[group]]\n\
         source = {{ table = \"Table 1\", section = \"1\", page = \"page not in the text copy\" }}\n\
         preset = \"none\"\ncolumn = \"c\"\nfigures = [ {{ row = \"r\", {text} }} ]\n"
    );
    papers::parse(&file, "t.toml")
        .unwrap_or_else(|e| panic!("{e}"))
        .figures
        .remove(0)
}
