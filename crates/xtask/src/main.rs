//! `cargo xtask` — the project's own automation, in Rust so it needs nothing but cargo.
//!
//! - `setup`: installs the Debian packages the workspace needs (apt-get, when root and something
//!   is missing). Idempotent; with nothing missing it makes one `dpkg-query` call.
//! - `test`: setup, then fmt check, clippy with `-D warnings`, and `cargo test --workspace`,
//!   all with `--all-features` so optional adapters (cg-cc's `webrtc`) are built and tested too.
//!   One build, in the `ci` profile: optimised as users run it, with the workspace's own
//!   overflow checks on. The end-to-end media tests among them
//!   (`crates/netlab/tests/cg_flows/`: real cg-send/cg-recv through namespaces, judged on
//!   rate, delay and frames; `crates/netlab/tests/faults/`: the same under outages,
//!   reordering, burst loss and jitter) are ignored in an unoptimised build; they print the
//!   figures they judge, and every test's output is shown after its binary's run
//!   (`--show-output`): the log holds every run's numbers, and ends with the failed tests'
//!   output and what each missed, and after it (each test binary run even when one failed)
//!   every failed test's panic message again. `test --long`
//!   also runs the 200 s scenarios of issue #14 (the papers' schedules on camera and game
//!   content, about 40 minutes), ignored otherwise.
//! - `demo`: setup, then the project's main job.
//! - `bench`: the criterion benchmarks.
//! - `procbench`: CPU and RSS of the real cg-send and cg-recv processes at a fixed rate
//!   ([`procbench`]).

mod procbench;

use std::env;
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::time::Instant;

use cg_host::testing::BUILD_ARGS_ENV;

/// Debian packages the workspace needs, with what needs them.
const PACKAGES: &[(&str, &str)] = &[
    ("pkg-config", "finding GStreamer at build time"),
    ("libgstreamer1.0-dev", "gstreamer-rs (cg-media)"),
    (
        "libgstreamer-plugins-base1.0-dev",
        "gstreamer-app, gstreamer-video",
    ),
    (
        "gstreamer1.0-plugins-base",
        "videotestsrc, appsrc/appsink, videoconvert",
    ),
    ("gstreamer1.0-plugins-good", "vp8enc, vp8dec"),
    ("gstreamer1.0-plugins-ugly", "x264enc"),
    ("gstreamer1.0-plugins-bad", "h265parse, nvcodec elements"),
    ("gstreamer1.0-libav", "avdec_h264, avdec_h265"),
    ("gstreamer1.0-tools", "gst-inspect-1.0 for diagnostics"),
    ("iproute2", "netlab: ip, tc"),
    ("iputils-ping", "netlab: RTT check"),
    ("iperf3", "netlab: TCP and UDP cross traffic"),
    ("ethtool", "netlab: offload settings"),
    ("tshark", "decoding captures of our RTP/RTCP in tests"),
    ("util-linux", "unshare for self-cleaning namespace runs"),
    (
        "slurm-wlm",
        "netlab sweeps on a Slurm cluster (the job-array test)",
    ),
    ("munge", "Slurm's authentication (the job-array test)"),
    (
        "chromium",
        "WebRTC mode: the browser viewer of the netlab tests",
    ),
];

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let Some(cmd) = args.first() else {
        usage();
        return ExitCode::FAILURE;
    };
    let rest = &args[1..];
    let result = match cmd.as_str() {
        "setup" => setup(),
        "test" => setup().and_then(|()| test(rest)),
        "demo" => setup().and_then(|()| demo(rest)),
        "bench" => bench(rest),
        "procbench" => setup().and_then(|()| procbench::procbench(rest)),
        "-h" | "--help" | "help" => {
            usage();
            Ok(())
        }
        other => Err(format!(
            "unknown command `{other}`; see `cargo xtask --help`"
        )),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn usage() {
    eprintln!(
        "usage: cargo xtask <command> [args]\n\n\
         commands:\n  \
         setup   install the Debian packages the workspace needs (apt-get, as root)\n  \
         test    setup, then cargo fmt --check, clippy -D warnings, cargo test --workspace (all features);\n          \
         --long adds the 200 s end-to-end scenarios (camera/game content, ~40 min)\n  \
         demo    setup, then run the project's main job (the netlab demo)\n  \
         bench   run the criterion benchmarks (extra args go to cargo bench)\n  \
         procbench [--rate 2M] [--size 1280x720] [--pattern P] [--fps 30] [--duration 60s] [--warmup 10s]\n          \
         CPU and RSS of cg-send and cg-recv over loopback at a fixed rate"
    );
}

/// The workspace root (xtask lives in crates/xtask).
fn root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .nth(2)
        .map(PathBuf::from)
        .unwrap_or(manifest)
}

fn missing_packages() -> Result<Vec<&'static str>, String> {
    let names: Vec<&str> = PACKAGES.iter().map(|(p, _)| *p).collect();
    let out = Command::new("dpkg-query")
        .args(["-W", "-f=${Package} ${db:Status-Status}\n"])
        .args(&names)
        .output()
        .map_err(|e| {
            format!("cannot run dpkg-query ({e}): `cargo xtask setup` supports Debian/Ubuntu only")
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(not_installed(&names, &text))
}

/// The names in `wanted` that `dpkg-query -W -f='${Package} ${db:Status-Status}\n'` output
/// does not list as installed (packages dpkg has never heard of are absent from its output).
fn not_installed<'a>(wanted: &[&'a str], dpkg_output: &str) -> Vec<&'a str> {
    let installed: Vec<&str> = dpkg_output
        .lines()
        .filter_map(|l| l.trim_end().strip_suffix(" installed"))
        .collect();
    wanted
        .iter()
        .copied()
        .filter(|n| !installed.contains(n))
        .collect()
}

fn setup() -> Result<(), String> {
    let started = Instant::now();
    let missing = missing_packages()?;
    if missing.is_empty() {
        eprintln!(
            "xtask: setup: all {} packages present ({} ms)",
            PACKAGES.len(),
            started.elapsed().as_millis()
        );
        return Ok(());
    }
    let install = format!(
        "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends {}",
        missing.join(" ")
    );
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { geteuid() } == 0;
    if !root {
        let why: Vec<String> = missing
            .iter()
            .map(|m| {
                let reason = PACKAGES
                    .iter()
                    .find(|(p, _)| p == m)
                    .map_or("", |(_, r)| *r);
                format!("  {m}: {reason}")
            })
            .collect();
        return Err(format!(
            "missing Debian packages:\n{}\nrun as root:\n  sudo sh -c '{install}'",
            why.join("\n")
        ));
    }
    eprintln!("xtask: setup: installing {}", missing.join(" "));
    run(Command::new("apt-get").args(["update", "-qq"]))?;
    run(Command::new("apt-get")
        .env("DEBIAN_FRONTEND", "noninteractive")
        .args(["install", "-y", "-qq", "--no-install-recommends"])
        .args(&missing))?;
    let still = missing_packages()?;
    if !still.is_empty() {
        return Err(format!(
            "apt-get finished but these are still missing: {}",
            still.join(" ")
        ));
    }
    eprintln!(
        "xtask: setup: done in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

unsafe extern "C" {
    fn geteuid() -> u32;
}

/// A cargo command at the workspace root, without the variables `cargo run` set for xtask
/// itself (`CARGO_PKG_NAME=xtask`, …): a build script that watches one (ring's does) would
/// otherwise see other values than in a cargo started from a shell or from a test
/// (`cg_host::testing::build_next_to`), and rebuild ring and everything above it.
fn cargo() -> Command {
    let mut c = Command::new(env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.current_dir(root());
    for (key, _) in env::vars_os() {
        if key.to_str().is_some_and(cg_host::is_per_package_cargo_var) {
            c.env_remove(key);
        }
    }
    c
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let shown = format!("{cmd:?}");
    eprintln!("xtask: running {shown}");
    let status = cmd
        .status()
        .map_err(|e| format!("cannot start {shown}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{shown} failed with {status}"))
    }
}

fn test(extra: &[String]) -> Result<(), String> {
    // `--long` adds the 200 s end-to-end scenarios of the papers on camera and game content
    // (about 40 minutes more); everything else is passed to cargo test.
    let long = extra.iter().any(|a| a == "--long");
    let extra: Vec<&String> = extra.iter().filter(|a| *a != "--long").collect();
    run(cargo().args(["fmt", "--all", "--", "--check"]))?;
    run(cargo().args([
        "clippy",
        "--workspace",
        "--all-features",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))?;
    // Every test in one build of the `ci` profile (optimised, the workspace's overflow checks
    // on).
    // The tests that run cg-send, cg-recv and netlab build them with this run's selection, so
    // that build is this one (`cg_host::testing::build_next_to`).
    let selection = ["--profile", "ci", "--workspace", "--all-features"];
    let tests = |only: &[&str]| {
        let mut c = cargo();
        c.arg("test")
            .args(selection)
            .args(only)
            .env(
                BUILD_ARGS_ENV,
                format!("{} --bins --tests", selection[2..].join(" ")),
            )
            .args(&extra);
        if !extra.iter().any(|a| *a == "--") {
            c.arg("--");
        }
        // Every end-to-end test prints the figures it judged: keep them in the log, passed
        // or not. Captured and shown after the run, the passed tests' output first: a log
        // read from its end (CI's is) then ends with each failed test's figures and what it
        // missed, where `--nocapture` left a miss among the later tests' lines.
        c.arg("--show-output");
        c
    };
    run_tests(&tests(&[]))?;
    if long {
        run_tests(tests(&["--test", "cg_flows", "--test", "faults"]).arg("--ignored"))?;
    }
    Ok(())
}

/// Runs `cmd` (a `cargo test`) with `--no-fail-fast`, every test binary run even after one
/// failed, its standard output passed through line by line; when it fails, ends with every
/// failed test's panic message ([`panic_messages`]). CI shows a long log's head and tail only,
/// and its tail was the last failure's backtrace, without the figures any test missed.
fn run_tests(cmd: &Command) -> Result<(), String> {
    use std::io::{BufRead, BufReader, Write};
    // `--no-fail-fast` is cargo's, before the `--` that starts the test binaries' arguments.
    let args: Vec<_> = cmd.get_args().map(ToOwned::to_owned).collect();
    let dashes = args.iter().position(|a| a == "--").unwrap_or(args.len());
    let mut c = Command::new(cmd.get_program());
    c.args(&args[..dashes])
        .arg("--no-fail-fast")
        .args(&args[dashes..])
        .envs(cmd.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .stdout(std::process::Stdio::piped());
    for (k, v) in cmd.get_envs() {
        if v.is_none() {
            c.env_remove(k);
        }
    }
    if let Some(dir) = cmd.get_current_dir() {
        c.current_dir(dir);
    }
    let shown = format!("{c:?}");
    eprintln!("xtask: running {shown}");
    let mut child = c
        .spawn()
        .map_err(|e| format!("cannot start {shown}: {e}"))?;
    let out = child.stdout.take().expect("stdout is piped");
    let mut lines = Vec::new();
    let mut stdout = std::io::stdout().lock();
    // Lines that are not UTF-8 are passed through lossily; a closed stdout stops the echo
    // only, never the tests.
    for line in BufReader::new(out).split(b'\n') {
        let line = String::from_utf8_lossy(&line.map_err(|e| format!("reading {shown}: {e}"))?)
            .into_owned();
        let _ = writeln!(stdout, "{line}");
        lines.push(line);
    }
    drop(stdout);
    let status = child
        .wait()
        .map_err(|e| format!("waiting for {shown}: {e}"))?;
    if status.success() {
        return Ok(());
    }
    let messages = panic_messages(&lines);
    eprintln!(
        "\nxtask: {} failed test(s); what each said when it failed:",
        messages.len()
    );
    for m in &messages {
        eprintln!("\n{m}");
    }
    Err(format!("{shown} failed with {status}"))
}

/// The panic messages of the failed tests in a `cargo test` output: each from its `thread
/// '…' panicked at` line (the thread's id may stand between the two) to the first blank line,
/// backtrace or note (at most [`MESSAGE_LINES`] lines), in order. Only those under a
/// `failures:` header count: a passing test that expects a panic shows one among its output
/// (`successes:`).
fn panic_messages(lines: &[String]) -> Vec<String> {
    let mut messages = Vec::new();
    let mut current: Option<Vec<&str>> = None;
    let mut in_failures = false;
    for line in lines {
        match line.as_str() {
            "failures:" => in_failures = true,
            "successes:" => in_failures = false,
            l if l.starts_with("test result:") => in_failures = false,
            _ => {}
        }
        let ends = line.trim().is_empty()
            || line.starts_with("stack backtrace:")
            || line.starts_with("note: ")
            || line.starts_with("---- ");
        if let Some(m) = current.as_mut() {
            if ends {
                messages.push(current.take().expect("some").join("\n"));
            } else if m.len() < MESSAGE_LINES {
                m.push(line);
            }
        }
        // `thread 'NAME' panicked at …`, or with the thread's id: `thread 'NAME' (42) panicked`.
        if in_failures && line.starts_with("thread '") && line.contains(" panicked at ") {
            if let Some(m) = current.take() {
                messages.push(m.join("\n"));
            }
            current = Some(vec![line]);
        }
    }
    messages.extend(current.map(|m| m.join("\n")));
    messages
}

/// The most lines of one panic message [`run_tests`] repeats at the end.
const MESSAGE_LINES: usize = 60;

fn demo(extra: &[String]) -> Result<(), String> {
    // The demo's media flow runs cg-send and cg-recv, found next to the netlab binary.
    run(cargo().args(["build", "--release", "-p", "cg-sender", "-p", "cg-receiver"]))?;
    run(cargo()
        .args([
            "run",
            "--release",
            "-p",
            "cg-netlab",
            "--bin",
            "netlab",
            "--",
            "demo",
        ])
        .args(extra))
}

fn bench(extra: &[String]) -> Result<(), String> {
    run(cargo().args(["bench", "--workspace"]).args(extra))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_and_half_installed_packages_are_reported() {
        let out = "iperf3 installed\ntshark config-files\nethtool not-installed\n";
        assert_eq!(
            not_installed(&["iperf3", "tshark", "ethtool", "unknown-pkg"], out),
            vec!["tshark", "ethtool", "unknown-pkg"]
        );
    }

    #[test]
    fn each_panic_message_is_found_up_to_its_backtrace_or_note() {
        let out = [
            "test a ... FAILED",
            "successes:",
            "---- x::p stdout ----",
            "thread 'x::p' (7) panicked at src/p.rs:1:1:",
            "expected by a should_panic test",
            "failures:",
            "---- x::a stdout ----",
            "figures of a",
            "thread 'x::a' panicked at src/a.rs:1:2:",
            "l4s:",
            "run 1: U 0.67 outside [0.8, 1]",
            "stack backtrace:",
            "   0: std::panicking",
            "---- x::b stdout ----",
            "thread 'x::b' (20690) panicked at src/b.rs:3:4:",
            "assertion failed",
            "note: run with `RUST_BACKTRACE=1`",
            "thread 'x::c' panicked at src/c.rs:5:6:",
            "cut short",
        ]
        .map(String::from);
        assert_eq!(
            panic_messages(&out),
            [
                "thread 'x::a' panicked at src/a.rs:1:2:\nl4s:\nrun 1: U 0.67 outside [0.8, 1]",
                "thread 'x::b' (20690) panicked at src/b.rs:3:4:\nassertion failed",
                "thread 'x::c' panicked at src/c.rs:5:6:\ncut short",
            ]
        );
        assert!(panic_messages(&["test a ... ok".into()]).is_empty());
    }

    #[test]
    fn nothing_missing_when_all_installed() {
        assert!(not_installed(&["a", "b"], "a installed\nb installed\n").is_empty());
    }
}
