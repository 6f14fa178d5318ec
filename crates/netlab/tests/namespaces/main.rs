//! End-to-end tests in real network namespaces (root or unprivileged user namespaces needed).
//!
//! Each test runs the `netlab` binary on a small scenario and checks `summary.json`. They are
//! timing-sensitive, so one global lock runs them one at a time even under the default
//! parallel test harness.
//!
//! One test binary; its modules by subject: `emulated` (the emulator's figures), `cleanup`
//! (refusals and what a run leaves), `kernel` (the `tc` backend); here the helpers they share.

mod cleanup;
mod emulated;
mod kernel;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

static SERIAL: Mutex<()> = Mutex::new(());

fn lock() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

fn netlab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_netlab"))
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("netlab-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir is writable");
    d
}

/// Removes the scratch directory of `name` (after a passing test).
fn cleanup(name: &str) {
    let _ = std::fs::remove_dir_all(
        std::env::temp_dir().join(format!("netlab-test-{name}-{}", std::process::id())),
    );
}

fn try_run(name: &str, toml: &str) -> Result<(Value, PathBuf), String> {
    try_run_with(name, toml, |_| {})
}

/// [`try_run`], with `during` run while netlab does (given the output directory).
fn try_run_with(
    name: &str,
    toml: &str,
    during: impl FnOnce(&Path),
) -> Result<(Value, PathBuf), String> {
    let dir = scratch(name);
    let file = dir.join("s.toml");
    std::fs::write(&file, toml).expect("write scenario");
    let out = dir.join("out");
    let child = netlab()
        .args([
            "run",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("netlab runs");
    during(&out);
    let o: Output = child.wait_with_output().expect("netlab ends");
    if !o.status.success() {
        return Err(format!(
            "netlab failed: {}\n{}",
            String::from_utf8_lossy(&o.stderr),
            String::from_utf8_lossy(&o.stdout)
        ));
    }
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    Ok((summary, out))
}

fn run(name: &str, toml: &str) -> (Value, PathBuf) {
    try_run(name, toml).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs a timing-sensitive scenario once per run (`RUNS=n` or `RUNS=a-b` for more, run k on
/// seed k; `RUN=k` for one) and checks each, without a re-run: a check met only on a second
/// try is a coin toss. Fails once, listing every run that missed; the outputs of those runs
/// are kept.
fn run_checked(name: &str, toml: &str, check: impl Fn(&Value, &Path) -> Result<(), String>) {
    let mut spread = cg_host::testing::Spread::over_runs(name);
    for k in cg_host::testing::repetitions("RUN", "RUNS", 1..=1) {
        let toml = if k == 1 {
            toml.to_owned()
        } else {
            format!("seed = {k}\n{toml}")
        };
        let result = try_run(&format!("{name}-{k}"), &toml).and_then(|(s, out)| {
            let r = check(&s, &out);
            if r.is_ok() {
                // Keep the outputs of failed runs only.
                let _ = std::fs::remove_dir_all(out.parent().expect("out is inside a scratch dir"));
            }
            r
        });
        spread.require(k, result.is_ok(), result.err().unwrap_or_default());
    }
    spread.judge();
}

macro_rules! ensure {
    ($cond:expr) => {
        let ok: bool = $cond;
        if !ok {
            return Err(stringify!($cond).to_owned());
        }
    };
    ($cond:expr, $($fmt:tt)+) => {
        let ok: bool = $cond;
        if !ok {
            return Err(format!($($fmt)+));
        }
    };
}
// By path, so that the modules (declared above it) have it.
use ensure;

fn f(v: &Value, path: &[&str]) -> f64 {
    let mut x = v;
    for p in path {
        x = match p.parse::<usize>() {
            Ok(i) => &x[i],
            Err(_) => &x[*p],
        };
    }
    x.as_f64()
        .unwrap_or_else(|| panic!("{path:?} missing in {v}"))
}

/// Processes whose command line mentions `needle` (our unique output path).
fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|s| s.chars().all(|c| c.is_ascii_digit()))
        else {
            continue;
        };
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(needle) {
                found.push(format!("{pid}: {cmd}"));
            }
        }
    }
    found
}

const UDP_DT300: &str = r#"
duration = "12s"
[forward]
capacity = "1Mbit"
delay = "25ms"
qdisc = { kind = "droptail", limit = "300ms" }
[reverse]
capacity = "100Mbit"
delay = "25ms"
[[flows]]
name = "udp"
kind = "udp"
rate = "2Mbit"
size = 1200
from = "s1"
to = "r1"
[metrics]
warmup = "3s"
"#;

/// The rows of a CSV output (header skipped), as numbers.
fn csv(path: &Path) -> Result<Vec<Vec<f64>>, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("read {}: {e}", path.display()))?;
    Ok(text
        .lines()
        .skip(1)
        .map(|l| {
            l.split(',')
                .map(|x| x.parse().unwrap_or(f64::NAN))
                .collect()
        })
        .collect())
}
