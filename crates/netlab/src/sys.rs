//! Thin wrappers over the system: the shared monotonic clock and external commands.

use std::process::{Command, Stdio};

use crate::{Error, Result};

/// `CLOCK_MONOTONIC` in nanoseconds. Every process of a run reads the same clock (network
/// namespaces do not virtualise it), so timestamps taken in different namespaces compare
/// directly; `std::time::Instant` reads the same clock on Linux.
pub fn mono_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// `CLOCK_REALTIME` now, ns (the clock of the kernel's packet timestamps).
pub fn realtime_ns() -> u64 {
    clock_ns(libc::CLOCK_REALTIME)
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; both clocks always exist on Linux.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The `Instant` that corresponds to monotonic time `ns`.
pub fn instant_of_mono(ns: u64) -> std::time::Instant {
    let now_i = std::time::Instant::now();
    let now_ns = mono_ns();
    if ns >= now_ns {
        now_i + std::time::Duration::from_nanos(ns - now_ns)
    } else {
        now_i
            .checked_sub(std::time::Duration::from_nanos(now_ns - ns))
            .unwrap_or(now_i)
    }
}

/// Runs a command to completion; its stdout on success, its stderr in the error otherwise.
pub fn run(program: &str, args: &[&str]) -> Result<String> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::io(format!("cannot start {program}"), e))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(Error::Command {
            command: format!("{program} {}", args.join(" ")),
            detail: format!(
                "{} ({})",
                String::from_utf8_lossy(&out.stderr).trim(),
                out.status
            ),
        })
    }
}

/// `ip ARGS…`.
pub fn ip(args: &[&str]) -> Result<String> {
    run("ip", args)
}

/// `ip -n NS ARGS…` (runs inside network namespace NS).
pub fn ip_in(ns: &str, args: &[&str]) -> Result<String> {
    let mut all = vec!["-n", ns];
    all.extend_from_slice(args);
    run("ip", &all)
}

/// Sets sysctls inside namespace `ns` (`key=value` pairs).
pub fn sysctl_in(ns: &str, pairs: &[&str]) -> Result<()> {
    let mut args = vec!["netns", "exec", ns, "sysctl", "-q", "-w"];
    args.extend_from_slice(pairs);
    run("ip", &args).map(drop)
}

/// Asks the kernel to kill this process when its parent dies (prctl PR_SET_PDEATHSIG).
pub fn die_with_parent() {
    // SAFETY: prctl with PR_SET_PDEATHSIG takes a signal number; no memory is passed.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
}

/// CPU time (user, system) of this process in seconds.
pub fn cpu_times() -> (f64, f64) {
    // SAFETY: zeroed rusage is a valid out-parameter for getrusage.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is valid and writable.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (tv(ru.ru_utime), tv(ru.ru_stime))
}

/// The machine's stolen CPU time and all its CPU time so far, in ticks (the `cpu` line of
/// `/proc/stat`: steal is the eighth field); `None` where it cannot be read.
pub fn cpu_steal() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    // user nice system idle iowait irq softirq steal (guest and guest_nice are in user).
    let all: u64 = fields.iter().take(8).sum();
    Some((*fields.get(7)?, all))
}
