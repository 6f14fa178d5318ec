//! Helpers shared by the examples (not an example itself: cargo only builds
//! `examples/*.rs` and `examples/*/main.rs`).

use std::collections::HashMap;
use std::time::Duration;

/// User + system CPU time of every thread of this process, by thread name.
pub fn thread_cpu() -> HashMap<String, Duration> {
    let tick = 100.0; // USER_HZ on Linux
    let mut out = HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for entry in dir.flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let name = stat[open + 1..close].to_owned();
        let fields: Vec<&str> = stat[close + 2..].split(' ').collect();
        // Fields after the name: state is index 0, utime index 11, stime index 12.
        let ticks: f64 = [11, 12]
            .iter()
            .filter_map(|&i| fields.get(i).and_then(|v| v.parse::<f64>().ok()))
            .sum();
        *out.entry(name).or_default() += Duration::from_secs_f64(ticks / tick);
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
