//! Real-time priority for the emulated bottleneck.
//!
//! A kernel qdisc runs in softirq context, ahead of every user process; the user-space
//! forwarder is an ordinary process competing with the endpoints' encoders and decoders on the
//! same cores. A late forwarder wake-up stamps the packets that queued up in the TUN meanwhile
//! with one arrival time, so a smoothly paced flow reaches the emulated queue as a burst — and
//! an L4S step AQM (DualPI2 marks above 1 ms) marks the burst the sender never sent.
//!
//! Inside the run's user namespace the forwarder cannot raise its own scheduling class
//! (`SCHED_FIFO` needs `CAP_SYS_NICE` in the initial namespace). `netlab` outside does, when it
//! runs as root: [`promote_forwarder`] finds the forwarder among the runner's descendants and
//! moves all its threads to `SCHED_FIFO`. The endpoints stay at normal priority.
//!
//! Under cgroup v1 with real-time group scheduling, a process in any `cpu` cgroup but the root
//! has no real-time runtime (`cpu.rt_runtime_us` is 0 by default) and `SCHED_FIFO` is refused
//! even to root: a service manager, a CI runner or a container puts netlab in such a group.
//! Then the forwarder, and only it, is moved to the root `cpu` cgroup and promoted there.
//! A forwarder left at normal priority turns a paced flow into bursts and stretched trains
//! (an L4S flow's marks and rate then measure the forwarder, not the controller), so a
//! refusal is always reported, and the forwarder records its class in `forwarder.json` (`scheduling`
//! in `summary.json`), which the end-to-end tests check.

use std::path::Path;
use std::time::{Duration, Instant};

/// Default `SCHED_FIFO` priority of the forwarder (1–99). Low: above every normal process,
/// below the kernel's own real-time threads.
pub const DEFAULT_PRIORITY: u8 = 10;

/// The parent pid of `pid`, from `/proc/PID/stat` (`None` if it is gone).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(cg_host::ProcStat::parse(&stat)?.ppid)
}

/// Every live descendant of `root` (children, grandchildren, …).
fn descendants(root: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let pairs: Vec<(u32, u32)> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| Some((pid, parent_of(pid)?)))
        .collect();
    let mut out = Vec::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for &(pid, ppid) in &pairs {
            if ppid == p && !out.contains(&pid) {
                out.push(pid);
                frontier.push(pid);
            }
        }
    }
    out
}

/// The command line of `pid` as arguments.
fn cmdline(pid: u32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            b.split(|&c| c == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Moves every thread of `pid` to `SCHED_FIFO` at `priority`.
fn make_fifo(pid: u32, priority: u8) -> std::io::Result<()> {
    let param = libc::sched_param {
        sched_priority: i32::from(priority.clamp(1, 99)),
    };
    for tid in cg_host::threads(Some(pid))? {
        let Ok(tid) = i32::try_from(tid) else {
            continue;
        };
        // SAFETY: `param` is a valid sched_param; a stale tid only makes the call fail.
        if unsafe { libc::sched_setscheduler(tid, libc::SCHED_FIFO, &param) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Waits (up to `within`) for the forwarder writing to `raw` to appear below `root`, then
/// makes it `SCHED_FIFO` at `priority`. Returns why not, if it could not; the caller only
/// reports it. Meant for its own thread: it polls every 20 ms while `alive()` holds.
pub fn promote_forwarder(
    root: u32,
    raw: &Path,
    priority: u8,
    within: Duration,
    alive: impl Fn() -> bool,
) -> Result<u32, String> {
    let raw = raw.display().to_string();
    let deadline = Instant::now() + within;
    while Instant::now() < deadline && alive() {
        let found = descendants(root).into_iter().find(|&pid| {
            let args = cmdline(pid);
            args.iter().any(|a| a == "__forward")
                && args.windows(2).any(|w| w[0] == "--out" && w[1] == raw)
        });
        if let Some(pid) = found {
            return match make_fifo(pid, priority) {
                Ok(()) => Ok(pid),
                Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
                    let moved = move_to_root_cpu_cgroup(pid).map_err(|why| {
                        format!("SCHED_FIFO for the forwarder refused ({e}), and {why}")
                    })?;
                    make_fifo(pid, priority).map(|()| pid).map_err(|e2| {
                        format!(
                            "SCHED_FIFO for the forwarder refused ({e}), and again after moving it \
                             from cpu cgroup {moved} to the root one ({e2})"
                        )
                    })
                }
                Err(e) => Err(format!("SCHED_FIFO for the forwarder refused: {e}")),
            };
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err("the forwarder did not appear".into())
}

/// This process's scheduling class as text (`SCHED_FIFO 10`, `SCHED_OTHER`), for the report.
pub fn own_policy() -> String {
    // SAFETY: querying our own thread's policy and parameter; both pointers are valid.
    let (policy, prio) = unsafe {
        let mut p = libc::sched_param { sched_priority: 0 };
        let policy = libc::sched_getscheduler(0);
        libc::sched_getparam(0, &mut p);
        (policy, p.sched_priority)
    };
    match policy {
        libc::SCHED_FIFO => format!("SCHED_FIFO {prio}"),
        libc::SCHED_RR => format!("SCHED_RR {prio}"),
        libc::SCHED_OTHER => "SCHED_OTHER".into(),
        other => format!("policy {other}"),
    }
}

/// Sets this process's nice value (absolute, −20…19; raising priority needs root).
pub fn set_nice(nice: i32) -> crate::Result<()> {
    // SAFETY: setpriority on our own process; no pointers.
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice.clamp(-20, 19)) } != 0 {
        return Err(crate::Error::last_os(format!("setpriority({nice})")));
    }
    Ok(())
}

/// A busy loop (`[load]`): busy for `duty` of every 10 ms, asleep for the rest, until `stop`.
pub fn hog(duty: f64, stop: std::sync::Arc<std::sync::atomic::AtomicBool>) {
    const PERIOD: Duration = Duration::from_millis(10);
    let busy = PERIOD.mul_f64(duty.clamp(0.0, 1.0));
    let mut x = 0u64;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let start = Instant::now();
        while start.elapsed() < busy {
            for _ in 0..1000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        }
        if let Some(rest) = PERIOD.checked_sub(start.elapsed()).filter(|r| !r.is_zero()) {
            std::thread::sleep(rest);
        }
    }
}

/// The cgroup v1 `cpu` controller's path of `pid` (from `/proc/PID/cgroup`, a line such as
/// `4:cpu,cpuacct:/system.slice/x.service`), `None` without one (cgroup v2 only).
fn cpu_cgroup_v1(proc_cgroup: &str) -> Option<&str> {
    proc_cgroup.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (_, controllers, path) = (f.next()?, f.next()?, f.next()?);
        controllers.split(',').any(|c| c == "cpu").then_some(path)
    })
}

/// Where the cgroup v1 `cpu` controller is mounted, from `/proc/self/mountinfo` (a `cgroup`
/// file system whose super options name `cpu`).
fn cpu_mount_v1(mountinfo: &str) -> Option<&str> {
    mountinfo.lines().find_map(|l| {
        let (pre, post) = l.split_once(" - ")?;
        let mut post = post.split_whitespace();
        let (fstype, _source, opts) = (post.next()?, post.next()?, post.next()?);
        (fstype == "cgroup" && opts.split(',').any(|o| o == "cpu"))
            .then(|| pre.split_whitespace().nth(4))
            .flatten()
    })
}

/// Moves `pid` to the root of the cgroup v1 `cpu` hierarchy, where real-time runtime is
/// granted; returns the group it left, or why it could not.
fn move_to_root_cpu_cgroup(pid: u32) -> Result<String, String> {
    let cg = std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
        .map_err(|e| format!("its cgroup is unreadable ({e})"))?;
    let from = cpu_cgroup_v1(&cg)
        .ok_or("it has no cgroup v1 cpu controller to leave")?
        .to_owned();
    if from == "/" {
        return Err("it is in the root cpu cgroup already".into());
    }
    let info = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("/proc/self/mountinfo is unreadable ({e})"))?;
    let mount = cpu_mount_v1(&info).ok_or("the cgroup v1 cpu controller is not mounted here")?;
    std::fs::write(format!("{mount}/cgroup.procs"), pid.to_string())
        .map_err(|e| format!("moving it out of cpu cgroup {from} failed ({e})"))?;
    Ok(from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn descendants_include_grandchildren() {
        let mut child = Command::new("sh")
            .args(["-c", "sleep 5 & wait"])
            .spawn()
            .expect("sh runs");
        let root = child.id();
        let deadline = Instant::now() + Duration::from_secs(3);
        let mut found = false;
        while Instant::now() < deadline && !found {
            found = descendants(root)
                .iter()
                .any(|&p| cmdline(p).first().is_some_and(|a| a == "sleep"));
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = child.kill();
        let _ = child.wait();
        assert!(found, "sleep (a grandchild of this test) was not found");
    }

    #[test]
    fn the_cpu_cgroup_and_its_mount_are_read_from_proc_files() {
        let cg = "12:pids:/a\n4:cpu,cpuacct:/system.slice/ci.service\n0::/user.slice\n";
        assert_eq!(cpu_cgroup_v1(cg), Some("/system.slice/ci.service"));
        assert_eq!(cpu_cgroup_v1("4:cpuset:/\n0::/x\n"), None);
        let mi = "30 25 0:26 / /sys/fs/cgroup/cpuset rw,nosuid - cgroup cgroup rw,cpuset\n\
                  31 25 0:27 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct\n";
        assert_eq!(cpu_mount_v1(mi), Some("/sys/fs/cgroup/cpu,cpuacct"));
        assert_eq!(
            cpu_mount_v1("29 1 0:25 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"),
            None
        );
    }

    #[test]
    fn the_parent_is_read_from_proc() {
        assert_eq!(
            parent_of(std::process::id()),
            Some(std::os::unix::process::parent_id())
        );
        assert_eq!(parent_of(u32::MAX), None);
    }

    #[test]
    fn a_missing_forwarder_is_reported_not_waited_for_forever() {
        let t = Instant::now();
        let r = promote_forwarder(
            std::process::id(),
            Path::new("/nonexistent/raw"),
            DEFAULT_PRIORITY,
            Duration::from_millis(100),
            || true,
        );
        assert!(r.is_err());
        assert!(t.elapsed() < Duration::from_secs(2));
    }
}
