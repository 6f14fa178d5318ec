//! The run's processes: each started in its host's namespace (netlab itself as a helper, or
//! `__exec-at` in front of a program), the run waited out while they are watched, and all of
//! them stopped at its end.

use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use super::info::RunOptions;
use crate::scenario::Scenario;
use crate::sys::mono_ns;
use crate::{Error, Result};

/// A process of the run, started in a namespace.
pub(super) struct Helper {
    pub(super) name: String,
    pub(super) child: Child,
    pub(super) stdin: Option<ChildStdin>,
}

/// Runs netlab itself with `args` (a helper, or `__exec-at` in front of a program) in
/// namespace `ns`.
pub(super) fn spawn_in(ns: &str, args: &[String], name: &str, pipe_out: bool) -> Result<Helper> {
    let exe = std::env::current_exe().map_err(|e| Error::io("current_exe", e))?;
    // Helpers inherit the run's priority (nice −15 as root, see `isolate`): a starved
    // traffic generator would distort the measurement as much as a starved forwarder.
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", ns])
        .arg(exe)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(if pipe_out {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stderr(Stdio::inherit());
    let mut child = cmd
        .spawn()
        .map_err(|e| Error::io(format!("spawn {name}"), e))?;
    let stdin = child.stdin.take();
    Ok(Helper {
        name: name.to_owned(),
        child,
        stdin,
    })
}

/// An argument, from anything printable.
pub(super) fn s(v: impl ToString) -> String {
    v.to_string()
}

/// The run's traffic processes.
#[derive(Default)]
pub(super) struct Procs {
    /// Traffic generators and cg-send: they stop by themselves at their stop time.
    pub(super) senders: Vec<Helper>,
    /// cg-recv and browsers: stopped with SIGTERM.
    pub(super) cg_receivers: Vec<Helper>,
    /// Sinks and echo servers: stopped by closing their stdin.
    pub(super) helpers: Vec<Helper>,
}

impl Procs {
    fn all(&mut self) -> impl Iterator<Item = &mut Helper> {
        self.senders
            .iter_mut()
            .chain(&mut self.cg_receivers)
            .chain(&mut self.helpers)
    }

    /// Senders stop by themselves at their stop time: a moment, then they are killed;
    /// then the sinks' stdin is closed and the receivers get SIGTERM.
    pub(super) fn stop(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(5);
        for h in &mut self.senders {
            while h.child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            if h.child.try_wait().ok().flatten().is_none() {
                eprintln!("netlab: {} did not stop in time; killing it", h.name);
                h.child.kill().ok();
            }
            h.child.wait().ok();
        }
        std::thread::sleep(Duration::from_millis(200));
        for h in &mut self.helpers {
            h.stdin.take();
        }
        for h in &mut self.cg_receivers {
            // SAFETY: kill(2) on our own child's pid.
            unsafe { libc::kill(h.child.id() as libc::pid_t, libc::SIGTERM) };
        }
        let deadline = Instant::now() + Duration::from_secs(3);
        for h in &mut self.cg_receivers {
            while h.child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            h.child.kill().ok();
            h.child.wait().ok();
        }
        for h in &mut self.helpers {
            h.child.wait().ok();
        }
    }
}

/// Waits out the run (and 300 ms), stopping it if a traffic process fails; shows a
/// once-a-second progress line when the forwarder does not (`own_progress`).
pub(super) fn wait_for_end(
    opts: &RunOptions,
    sc: &Scenario,
    procs: &mut Procs,
    t0_ns: u64,
    own_progress: bool,
) -> Result<()> {
    let end_ns = t0_ns + sc.duration.as_nanos() as u64;
    let mut last_progress = mono_ns();
    while mono_ns() < end_ns + 300_000_000 {
        std::thread::sleep(Duration::from_millis(100));
        if let Some(why) = failed_early(procs.all(), t0_ns) {
            // The PID namespace takes the other processes down with the runner.
            return Err(Error::Process(why));
        }
        if own_progress && opts.progress && mono_ns() - last_progress > 1_000_000_000 {
            last_progress = mono_ns();
            eprintln!(
                "  [{:5.0}/{:.0} s]",
                (mono_ns() as f64 - t0_ns as f64) / 1e9,
                sc.duration.as_secs_f64()
            );
        }
    }
    Ok(())
}

/// A traffic process (sender, sink, `cg-send`, `cg-recv`, echo) that exited with an error
/// code before the run's end, described for the user. The run stops: its flow would otherwise
/// be measured as an idle flow for the rest of the run and reported as a result (a mistyped
/// `--pattern` gave 200 s of U = 0 and exit status 0). A process killed by a signal is not a
/// failure here: tests and fault experiments kill receivers on purpose.
fn failed_early<'a>(procs: impl Iterator<Item = &'a mut Helper>, t0_ns: u64) -> Option<String> {
    for h in procs {
        if let Ok(Some(st)) = h.child.try_wait()
            && st.code().is_some_and(|c| c != 0)
        {
            let t = (mono_ns() as f64 - t0_ns as f64) / 1e9;
            return Some(format!(
                "{} exited with {st} at t = {t:.1} s, before the run's end (its error is printed above); the run is stopped",
                h.name
            ));
        }
    }
    None
}
