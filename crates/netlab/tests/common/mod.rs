//! What the end-to-end test binaries share (`cg_flows`, `faults`, `namespaces`): building the
//! cg binaries next to netlab, one netlab run at a time, each case run [`runs`] times and its
//! figures judged on their spread ([`Spread`]), the statistics files read back, and the judged
//! figures (utilisation, t90, queue, loss, freezes, Jain).
//!
//! No case is re-run on failure: a range met only on a second try is a coin toss. `cargo
//! xtask test` makes one run of each case; `RUNS=5` (or `RUNS=6-10`, or `RUN=3` for one) makes
//! more, each on its own seed (run k on seed k), and prints every figure's spread beside its
//! range: that is how the ranges are set and checked.
//!
//! Rule for the ranges: a figure's goal (its issue's bound, a rule of the code) where every
//! run measured clears it; otherwise, and for the side a goal leaves open, the worst run
//! measured with a margin beyond it (0.04–0.09 of a utilisation, a quarter of the worst time
//! or count or more), each saying so. The runs behind them: `docs/notes/2026-12-02-runs.md`.
// Each test binary uses its own part of these helpers.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

pub use cg_host::testing::Spread;
use serde_json::Value;

static SERIAL: Mutex<()> = Mutex::new(());

pub fn lock() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

pub fn netlab_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_netlab"))
}

/// cg-send and cg-recv, built from the code under test next to netlab, cg-send with the
/// faults a test may inject (its `testing` feature: `--wedge-encoder-at`).
pub fn cg_binaries() -> (PathBuf, PathBuf) {
    let dir = cg_host::testing::build_next_to(
        env!("CARGO"),
        &netlab_bin(),
        &["cg-sender", "cg-receiver"],
        &["cg-sender/testing"],
    );
    (dir.join("cg-send"), dir.join("cg-recv"))
}

pub fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("netlab-cg-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir is writable");
    d
}

/// Runs `toml` with netlab; `during` runs while netlab does (given the output dir). netlab's
/// standard error, with its processes', is kept as `stderr.log` in the output dir. A run
/// during which the machine's hypervisor took more than [`MAX_STEAL`] of its CPU is counted
/// as starved ([`judge_runs`] runs again a starved run that missed).
pub fn run_netlab(
    name: &str,
    toml: &str,
    during: impl FnOnce(&Path),
) -> Result<(Value, PathBuf), String> {
    let (summary, out) = run_netlab_once(name, toml, during)?;
    if let Some(steal) = summary["forwarder"]["steal_share"].as_f64()
        && steal > MAX_STEAL
    {
        STARVED_RUNS.with(|n| n.set(n.get() + 1));
        eprintln!(
            "{name}: the hypervisor took {:.1} % of the machine's CPU during the run (more than {:.0} %): a starved host",
            100.0 * steal,
            100.0 * MAX_STEAL
        );
    }
    Ok((summary, out))
}

/// The share of the machine's CPU its hypervisor may take during a run that is judged as a
/// measurement of cg: past it, the stolen time stops the endpoints and the emulated link at
/// random for tens of milliseconds, and the flows' figures follow the host's load rather than
/// the code (the figures behind the value: `docs/notes/2026-12-03-steal.md`).
pub const MAX_STEAL: f64 = 0.05;

thread_local! {
    /// Runs [`run_netlab`] found starved, so far on this thread: each test runs on its own
    /// thread, so another test's starved run, between two of this one's, is not counted.
    static STARVED_RUNS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Attempts at a run that missed on a starved host ([`judge_runs`]).
pub const STARVED_ATTEMPTS: u32 = 3;

fn run_netlab_once(
    name: &str,
    toml: &str,
    during: impl FnOnce(&Path),
) -> Result<(Value, PathBuf), String> {
    cg_binaries();
    let dir = scratch(name);
    let file = dir.join("s.toml");
    std::fs::write(&file, toml).expect("write scenario");
    let out = dir.join("out");
    let child = Command::new(netlab_bin())
        .args([
            "run",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("netlab runs");
    during(&out);
    let o = child.wait_with_output().expect("netlab ends");
    // What netlab and its processes said (cg-send's stall warnings, Chromium's log) stays with
    // the run's output, which a run that missed keeps.
    if out.is_dir() {
        let _ = std::fs::write(out.join("stderr.log"), &o.stderr);
    }
    if !o.status.success() {
        return Err(format!(
            "netlab failed: {}\n{}",
            String::from_utf8_lossy(&o.stderr),
            String::from_utf8_lossy(&o.stdout)
        ));
    }
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("summary.json")).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    forwarder_was_real_time(&summary)?;
    Ok((summary, out))
}

/// A run as root whose emulated bottleneck's forwarder did not get `SCHED_FIFO` measured the
/// forwarder's scheduling, not the flows (`crates/netlab/src/rt.rs`): refused with the reason
/// rather than judged. Without root netlab cannot promote it and nothing is asked.
fn forwarder_was_real_time(summary: &Value) -> Result<(), String> {
    let root = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let uid = s.lines().find_map(|l| l.strip_prefix("Uid:"))?;
            Some(uid.split_whitespace().nth(1)? == "0")
        })
        .unwrap_or(false);
    match summary["forwarder"]["scheduling"].as_str() {
        Some(class) if root && !class.starts_with("SCHED_FIFO") => Err(format!(
            "the emulated bottleneck's forwarder ran at {class}, not SCHED_FIFO: its late \
             wake-ups burst and stretch the flows, so the figures are not the bottleneck's \
             (netlab says why on stderr when it was refused)"
        )),
        _ => Ok(()),
    }
}

/// The runs each case makes: `RUN=k` one (on seed k), `RUNS=n` (1–n) or `RUNS=a-b`,
/// otherwise one, on seed 1.
pub fn runs() -> Vec<u64> {
    cg_host::testing::repetitions("RUN", "RUNS", 1..=1)
}

/// `toml` on seed `run`: its top-level `seed` replaced (or set, where it names none).
pub fn with_seed(toml: &str, run: u64) -> String {
    let mut replaced = false;
    let mut out: Vec<String> = Vec::new();
    let mut top_level = true;
    for line in toml.lines() {
        if line.trim_start().starts_with('[') {
            top_level = false;
        }
        if top_level && !replaced && line.trim_start().starts_with("seed") {
            out.push(format!("seed = {run}"));
            replaced = true;
        } else {
            out.push(line.to_owned());
        }
    }
    let body = out.join("\n") + "\n";
    if replaced {
        body
    } else {
        format!("seed = {run}\n{body}")
    }
}

/// Makes every run of [`runs`] with `each` (given the run's number and the spread to record
/// into), then judges the spread: every figure's range printed beside its spread, and one
/// failure listing every run that missed.
///
/// A run that missed while its host was starved (the hypervisor took more than
/// [`MAX_STEAL`] of the machine's CPU, see [`run_netlab`]) is forgotten and run again, up to
/// [`STARVED_ATTEMPTS`] times, each time printed with what it missed. The bounds judge cg on
/// the machine the test runs on, busy or idle (load beside the endpoints is part of the
/// scenarios that want it); a virtual machine whose host withholds its CPU stops the emulated
/// link and every endpoint alike at random, and a miss then says more of the host than of
/// cg. A run that missed on a host that was not starved is never run again.
pub fn judge_runs(name: &str, mut each: impl FnMut(u64, &mut Spread)) {
    let starved_runs = || STARVED_RUNS.with(std::cell::Cell::get);
    let mut spread = Spread::over_runs(name);
    for run in runs() {
        for attempt in 1..=STARVED_ATTEMPTS {
            let mark = spread.mark();
            let starved_before = starved_runs();
            each(run, &mut spread);
            let starved = starved_runs() > starved_before;
            if spread.misses() == mark.misses() || !starved || attempt == STARVED_ATTEMPTS {
                break;
            }
            let missed = spread.roll_back(mark);
            eprintln!(
                "{name}: run {run} missed on a starved host, not judged; attempt {} of {STARVED_ATTEMPTS} follows. It missed:\n{}",
                attempt + 1,
                missed.join("\n")
            );
        }
    }
    spread.judge();
}

/// Runs `toml` ([`with_seed`] for each run of [`runs`]) and records each run with `check`
/// ([`run_once`]), then judges the spread.
pub fn run_judged(
    name: &str,
    toml: &str,
    during: impl Fn(&Path),
    check: impl Fn(u64, &mut Spread, &Value, &Path) -> Result<(), String>,
) {
    judge_runs(name, |run, spread| {
        run_once(name, toml, run, spread, &during, &check);
    });
}

/// Runs `toml` on seed `run` (holding the netlab lock) and records the run into `spread`
/// with `check` (given the run, the spread, the summary and the output directory); an `Err`
/// from `check` or from netlab is a miss of the run. Its output is removed unless it missed.
pub fn run_once(
    name: &str,
    toml: &str,
    run: u64,
    spread: &mut Spread,
    during: impl Fn(&Path),
    check: impl Fn(u64, &mut Spread, &Value, &Path) -> Result<(), String>,
) {
    let _guard = lock();
    let misses = spread.misses();
    match run_netlab(&format!("{name}-{run}"), &with_seed(toml, run), &during) {
        Ok((summary, out)) => {
            let r = check(run, spread, &summary, &out);
            spread.require(
                run,
                r.is_ok(),
                format!("{name}: {}", r.err().unwrap_or_default()),
            );
            remove_unless_missed(spread, misses, &out);
        }
        Err(e) => spread.require(run, false, format!("{name}: {e}")),
    }
}

/// Removes the scratch directory of run output `out` unless `spread` has more misses than
/// `misses` (its count before the run was judged): a run that missed keeps what it wrote.
pub fn remove_unless_missed(spread: &Spread, misses: usize, out: &Path) {
    if spread.misses() == misses {
        let _ = std::fs::remove_dir_all(out.parent().expect("out is in a scratch dir"));
    } else {
        eprintln!("a run missed; its output is kept in {}", out.display());
    }
}

pub fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Whether `x` lies outside `lo..=hi`; NaN (nothing measured) lies outside every range.
pub fn outside(x: f64, lo: f64, hi: f64) -> bool {
    !(lo..=hi).contains(&x)
}

pub fn num(v: &Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or(f64::NAN)
}

/// Seconds of the run (since t0) of a stats line.
pub fn run_t(line: &Value, t0_ns: u64) -> f64 {
    (num(line, "mono_ns") - t0_ns as f64) / 1e9
}

pub fn t0(out: &Path) -> u64 {
    let run: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("raw/run.json")).unwrap()).unwrap();
    run["t0_ns"].as_u64().expect("run.json has t0_ns")
}

/// Freezes (run time of their start, duration ms) from cg-recv's stats.
pub fn freezes(recv: &[Value], t0_ns: u64) -> Vec<(f64, f64)> {
    let mut v = Vec::new();
    for l in recv {
        // FreezeRecord.start_t is on the receiver's own clock (`t`); map through mono_ns.
        let offset = run_t(l, t0_ns) - num(l, "t");
        for f in l["new_freezes"].as_array().into_iter().flatten() {
            v.push((num(f, "start_t") + offset, num(f, "duration_ms")));
        }
    }
    v
}

pub fn scenario(
    name: &str,
    duration_s: u32,
    forward: &str,
    controller: &str,
    ecn: &str,
    send_args: &str,
) -> String {
    format!(
        r#"name = "{name}"
duration = "{duration_s}s"
seed = 1

[forward]
{forward}

[reverse]
capacity = "100Mbit"
delay = "@DELAY@"

[metrics]
warmup = "5s"

[[flows]]
name = "cg"
kind = "cg"
controller = "{controller}"
ecn = "{ecn}"
from = "s1"
to = "r1"
send_args = [{send_args}]
recv_args = ["--start-bitrate", "@START@"]
"#
    )
}

/// The pid of the process whose command line contains `needle`.
pub fn pid_of(needle: &str, program: &str) -> Option<i32> {
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(needle) && cmd.split(' ').next().is_some_and(|p| p.ends_with(program)) {
                return Some(pid);
            }
        }
    }
    None
}

/// cg-send arguments for 1280×720 at 30 fps of an in-process picture (`camera`, `game`).
pub fn video_720p(pattern: &str) -> String {
    format!(r#""--pattern", "{pattern}", "--width", "1280", "--height", "720", "--fps", "30""#)
}

/// The forward bottleneck's bins from `link.csv`: (t, capacity Mb/s, delivered Mb/s).
pub fn link_bins(out: &Path) -> Vec<(f64, f64, f64)> {
    std::fs::read_to_string(out.join("link.csv"))
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter_map(|l| {
            let v: Vec<f64> = l.split(',').filter_map(|x| x.parse().ok()).collect();
            (v.len() >= 3).then(|| (v[0], v[1], v[2]))
        })
        .collect()
}

/// Delivered over capacity between `a` and `b` s.
pub fn utilisation_between(bins: &[(f64, f64, f64)], a: f64, b: f64) -> f64 {
    let (cap, got) = bins
        .iter()
        .filter(|x| (a..b).contains(&x.0))
        .fold((0.0, 0.0), |(c, g), x| (c + x.1, g + x.2));
    if cap > 0.0 { got / cap } else { 0.0 }
}

/// Seconds after `at` until the delivered rate over a trailing 1 s first reaches 90 % of the
/// capacity (`None`: never before the next change or the end).
pub fn t90_after(bins: &[(f64, f64, f64)], at: f64) -> Option<f64> {
    let after: Vec<&(f64, f64, f64)> = bins.iter().filter(|x| x.0 >= at).collect();
    let per_s = (1.0 / (after.get(1)?.0 - after[0].0)).round() as usize;
    after.windows(per_s.max(1)).find_map(|w| {
        let mean = w.iter().map(|x| x.2).sum::<f64>() / w.len() as f64;
        let last = w[w.len() - 1];
        (mean >= 0.9 * last.1).then(|| last.0 + (last.0 - w[w.len().saturating_sub(2)].0) - at)
    })
}

/// What issue #14 judges one run on.
#[derive(Debug, Default)]
pub struct Judged {
    pub u: f64,
    pub u_phases: Vec<f64>,
    pub t90: Vec<Option<f64>>,
    pub q95: f64,
    pub loss: f64,
    /// Per flow: freezes after the excluded times, (start s, duration ms).
    pub freezes: Vec<Vec<(f64, f64)>>,
    pub decoded_share: Vec<f64>,
    pub jain: Option<f64>,
}

impl Judged {
    /// `phases` for per-phase U; `increases` for t90; freezes counted from each flow's
    /// `from` (its start + 5 s, or 10 s) and outside `quiet` (start, length).
    pub fn of(
        summary: &Value,
        out: &Path,
        phases: &[(f64, f64)],
        increases: &[f64],
        flows: &[(&str, f64)],
        quiet: Option<(f64, f64)>,
    ) -> Judged {
        let m = &summary["metrics"];
        let bins = link_bins(out);
        let t0 = t0(out);
        let mut j = Judged {
            u: num(&m["link"], "utilisation"),
            u_phases: phases
                .iter()
                .map(|&(a, b)| utilisation_between(&bins, a, b))
                .collect(),
            t90: increases.iter().map(|&t| t90_after(&bins, t)).collect(),
            q95: m["link"]["qdelay_ms"]["p95"].as_f64().unwrap_or(f64::NAN),
            loss: num(&m["link"], "loss_ratio"),
            jain: m["jain"].as_f64(),
            ..Judged::default()
        };
        for &(name, from) in flows {
            let recv = lines(&out.join(format!("raw/cg-recv-{name}.jsonl")));
            let sent = lines(&out.join(format!("raw/cg-send-{name}.jsonl")));
            j.freezes.push(
                freezes(&recv, t0)
                    .into_iter()
                    .filter(|&(t, _)| t >= from)
                    .filter(|&(t, _)| quiet.is_none_or(|(a, len)| !(a..a + len).contains(&t)))
                    .collect(),
            );
            let decoded = recv.last().map_or(0.0, |l| num(l, "frames_decoded"));
            let sent = sent.last().map_or(0.0, |l| num(l, "frames_sent"));
            j.decoded_share
                .push(if sent > 0.0 { decoded / sent } else { 0.0 });
        }
        j
    }

    pub fn longest_freeze_ms(&self) -> f64 {
        self.freezes
            .iter()
            .flatten()
            .map(|&(_, d)| d)
            .fold(0.0, f64::max)
    }

    /// Records the figures of `run` into `spread` against `b`'s ranges: utilisation up to 1,
    /// every t90, the queue, the loss and the longest freeze from 0; a t90 never reached and
    /// a figure measured from nothing are NaN, which miss.
    pub fn record(&self, run: u64, spread: &mut Spread, b: &Bounds) {
        spread.check(run, "utilisation", self.u, b.u..=1.0);
        for (i, t) in self.t90.iter().enumerate() {
            let t = t.unwrap_or(f64::NAN);
            spread.check(
                run,
                format!("t90 after increase {} (s)", i + 1),
                t,
                0.0..=b.t90_s,
            );
        }
        if let Some(q) = b.q95_ms {
            spread.check(run, "queue p95 (ms)", self.q95, 0.0..=q);
        }
        if let Some(l) = b.loss {
            spread.check(run, "loss", self.loss, 0.0..=l);
        }
        spread.check(
            run,
            "longest freeze (ms)",
            self.longest_freeze_ms(),
            0.0..=b.freeze_ms,
        );
        if let Some(jb) = b.jain {
            spread.check(run, "Jain", self.jain.unwrap_or(f64::NAN), jb..=1.0);
        }
    }
}

/// Issue #14's bounds for one scenario.
pub struct Bounds {
    pub u: f64,
    pub t90_s: f64,
    pub q95_ms: Option<f64>,
    pub loss: Option<f64>,
    pub freeze_ms: f64,
    pub jain: Option<f64>,
}

/// Runs `toml` and judges it.
#[allow(clippy::too_many_arguments)]
pub fn judged_run(
    name: &str,
    toml: &str,
    phases: &[(f64, f64)],
    increases: &[f64],
    flows: &[(&str, f64)],
    quiet: Option<(f64, f64)>,
    bounds: Bounds,
) {
    run_judged(
        name,
        toml,
        |_| {},
        |run, spread, s, out| {
            let j = Judged::of(s, out, phases, increases, flows, quiet);
            eprintln!(
                "{name}: U {:.3} (phases {:?}), t90 {:?} s, q95 {:.1} ms, loss {:.4}, longest freeze {:.0} ms ({} freezes), decoded {:?}, Jain {:?}",
                j.u,
                j.u_phases
                    .iter()
                    .map(|u| (u * 1000.0).round() / 1000.0)
                    .collect::<Vec<_>>(),
                j.t90,
                j.q95,
                j.loss,
                j.longest_freeze_ms(),
                j.freezes.iter().map(Vec::len).sum::<usize>(),
                j.decoded_share,
                j.jain
            );
            j.record(run, spread, &bounds);
            Ok(())
        },
    );
}

/// The pid of flow `cg`'s `program` (`cg-send`, `cg-recv`) in run `out`, waiting up to
/// `tries` × 100 ms for it to start.
pub fn wait_for_pid(out: &Path, program: &str, tries: u32) -> Option<i32> {
    let needle = out
        .join(format!("raw/{program}-cg.jsonl"))
        .display()
        .to_string();
    (0..tries).find_map(|_| {
        pid_of(&needle, program).or_else(|| {
            std::thread::sleep(std::time::Duration::from_millis(100));
            None
        })
    })
}

/// What [`replace_receiver`] did: the new cg-recv's statistics file and when it was started
/// (`CLOCK_MONOTONIC`, as the statistics' `mono_ns`).
pub struct Replaced {
    pub stats: PathBuf,
    pub started_mono_ns: u64,
}

/// `kill -9` of flow `cg`'s cg-recv in run `out` `kill_after` after it is found (≈ run time
/// 0), then, `gap` later, a new cg-recv in the same network namespace with the same arguments
/// (port, controller, start bit rate…) but its statistics in `out/restarted-recv.jsonl`, run
/// for `run_for`. `None` when the receiver was not found or the new one could not start.
pub fn replace_receiver(
    out: &Path,
    kill_after: std::time::Duration,
    gap: std::time::Duration,
    run_for: std::time::Duration,
) -> Option<Replaced> {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    let pid = wait_for_pid(out, "cg-recv", 100)?;
    let netns = std::fs::File::open(format!("/proc/{pid}/ns/net")).ok()?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let mut argv: Vec<String> = String::from_utf8_lossy(&cmdline)
        .split('\0')
        .filter(|a| !a.is_empty())
        .map(str::to_owned)
        .collect();
    let program = argv.remove(0);
    let stats = out.join("restarted-recv.jsonl");
    if let Some(i) = argv.iter().position(|a| a == "--stats-file") {
        argv[i + 1] = stats.display().to_string();
    }
    argv.extend([
        "--duration".to_owned(),
        format!("{}ms", run_for.as_millis()),
    ]);
    std::thread::sleep(kill_after);
    // SAFETY: kill(2) on a pid we just read from /proc.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    std::thread::sleep(gap);
    let fd = netns.as_raw_fd();
    let mut cmd = Command::new(program);
    cmd.args(&argv).stdin(Stdio::null());
    // SAFETY: setns(2) only, between fork and exec; `netns` outlives the spawn.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setns(fd, libc::CLONE_NEWNET) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let started_mono_ns = cg_netlab::sys::mono_ns();
    let mut child = cmd.spawn().ok()?;
    child.wait().ok()?;
    Some(Replaced {
        stats,
        started_mono_ns,
    })
}
