//! Helpers shared by the examples (not an example itself: cargo only builds
//! `examples/*.rs` and `examples/*/main.rs`).

use std::collections::HashMap;
use std::time::Duration;

/// User + system CPU time of every thread of this process, by thread name.
pub fn thread_cpu() -> HashMap<String, Duration> {
    let mut out = HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for entry in dir.flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some(stat) = cg_host::ProcStat::parse(&stat) else {
            continue;
        };
        let cpu = stat.cpu_time();
        *out.entry(stat.comm).or_default() += cpu;
    }
    out
}

/// User + system CPU time of this process's threads whose name starts with `prefix`
/// (GStreamer names streaming threads `element:pad`).
#[allow(dead_code)] // each example uses one of the two
pub fn thread_cpu_prefixed(prefix: &str) -> Duration {
    thread_cpu()
        .into_iter()
        .filter(|(name, _)| name.starts_with(prefix))
        .map(|(_, t)| t)
        .sum()
}
