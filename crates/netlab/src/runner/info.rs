//! What the runner is told (its options, from `netlab __runner`'s command line) and what it
//! records of the run (`raw/run.json`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// Runner options (from the command line).
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Output directory (raw files go to `out/raw`).
    pub out: PathBuf,
    /// Scenario file (a copy in the output directory).
    pub scenario: PathBuf,
    /// Directory relative paths of the scenario (traces) resolve against.
    pub base: PathBuf,
    /// Forwarder wake-up coalescing.
    pub coalesce: Duration,
    /// Skip the start-up RTT check (never in tests).
    pub skip_rtt_check: bool,
    /// Print progress to stderr.
    pub progress: bool,
}

/// What the runner records about the run (`raw/run.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunInfo {
    /// t0 (CLOCK_MONOTONIC ns).
    pub t0_ns: u64,
    /// Backend actually used.
    pub backend: String,
    /// Why the backend differs from the scenario's, if it does.
    pub backend_note: Option<String>,
    /// Kernel qdiscs found by probing.
    pub kernel_qdiscs: Vec<String>,
    /// RTT check: expected and measured (median, min) in ms.
    pub rtt_expected_ms: f64,
    /// Median measured RTT, ms.
    pub rtt_measured_ms: f64,
    /// Minimum measured RTT, ms.
    pub rtt_min_ms: f64,
    /// Packets dropped on the TUN transmit queues (forward, reverse): hidden drops.
    pub tun_drops: [u64; 2],
    /// UDP receive-buffer drops summed over receiving hosts (`RcvbufErrors`).
    pub udp_rcvbuf_errors: u64,
    /// Namespace prefix used.
    pub prefix: String,
    /// Setup time, s.
    pub setup_s: f64,
}

/// Reads `raw/run.json`.
pub fn read_info(out: &Path) -> Result<RunInfo> {
    let p = out.join("raw").join("run.json");
    let text =
        std::fs::read_to_string(&p).map_err(|e| Error::io(format!("read {}", p.display()), e))?;
    serde_json::from_str(&text).map_err(|e| Error::Process(format!("{}: {e}", p.display())))
}
