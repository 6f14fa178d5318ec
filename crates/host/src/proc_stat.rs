//! The fields cg reads from a Linux `/proc/PID/stat` (or `/proc/PID/task/TID/stat`) line.

use std::time::Duration;

/// Clock ticks per second of the times in `/proc/PID/stat` (`USER_HZ`, 100 on every Linux
/// architecture cg runs on).
pub const USER_HZ: u32 = 100;

/// One `/proc/PID/stat` line: "pid (comm) state ppid … utime stime …" (proc(5)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcStat {
    /// The command (thread) name, without its parentheses.
    pub comm: String,
    /// The scheduler state (field 3): `R` running, `S` sleeping, `D` waiting in the kernel
    /// uninterruptibly…
    pub state: char,
    /// The parent's pid (field 4).
    pub ppid: u32,
    /// User-mode CPU time, in [`USER_HZ`] ticks (field 14).
    pub utime_ticks: u64,
    /// Kernel-mode CPU time, in [`USER_HZ`] ticks (field 15).
    pub stime_ticks: u64,
    /// The nice value, -20 (highest priority) to 19 (field 19).
    pub nice: i32,
}

impl ProcStat {
    /// Parses a stat line; `None` if it is not one. The name may contain spaces and
    /// parentheses, so the fields after it start at the last `)`.
    pub fn parse(line: &str) -> Option<ProcStat> {
        let open = line.find('(')?;
        let close = line.rfind(')')?;
        let comm = line.get(open + 1..close)?.to_owned();
        // From field 3 (state) on: ppid is index 1, utime 11, stime 12, nice 16.
        let fields: Vec<&str> = line[close + 1..].split_whitespace().collect();
        let field = |i: usize| fields.get(i).and_then(|v| v.parse::<u64>().ok());
        Some(ProcStat {
            comm,
            state: fields.first()?.chars().next()?,
            ppid: u32::try_from(field(1)?).ok()?,
            utime_ticks: field(11)?,
            stime_ticks: field(12)?,
            nice: fields.get(16)?.parse().ok()?,
        })
    }

    /// User + system CPU time in ticks.
    pub fn cpu_ticks(&self) -> u64 {
        self.utime_ticks + self.stime_ticks
    }

    /// User + system CPU time.
    pub fn cpu_time(&self) -> Duration {
        Duration::from_secs_f64(self.cpu_ticks() as f64 / f64::from(USER_HZ))
    }
}

/// The nice value the calling thread runs at, which the threads it starts inherit (on Linux
/// a priority is a thread's own); `None` where `/proc` does not tell.
pub fn thread_nice() -> Option<i32> {
    Some(ProcStat::parse(&std::fs::read_to_string("/proc/thread-self/stat").ok()?)?.nice)
}

/// The thread ids of process `pid` (`None`: this process), from `/proc/PID/task`.
pub fn threads(pid: Option<u32>) -> std::io::Result<Vec<u32>> {
    let dir = pid.map_or_else(
        || "/proc/self/task".to_owned(),
        |p| format!("/proc/{p}/task"),
    );
    Ok(std::fs::read_dir(dir)?
        .flatten()
        .filter_map(|t| t.file_name().to_str()?.parse().ok())
        .collect())
}

/// Resident memory (`VmRSS`) of a `/proc/PID/status` text, KiB.
pub fn vm_rss_kib(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// Resident memory of process `pid` (`None`: this process), KiB; `None` where `/proc` does
/// not tell (the process is gone, or not Linux).
pub fn rss_kib(pid: Option<u32>) -> Option<u64> {
    let path = pid.map_or_else(
        || "/proc/self/status".to_owned(),
        |p| format!("/proc/{p}/status"),
    );
    vm_rss_kib(&std::fs::read_to_string(path).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_with_spaces_and_parentheses_parse() {
        let s = ProcStat::parse(
            "4242 (cg send (x)) S 1 4242 4242 0 -1 4194304 100 0 0 0 1234 56 0 0 10 -10 5 0 \
             100 1000 2000\n",
        )
        .unwrap();
        assert_eq!(s.comm, "cg send (x)");
        assert_eq!(s.state, 'S');
        assert_eq!(s.ppid, 1);
        assert_eq!(s.cpu_ticks(), 1290);
        assert_eq!(s.nice, -10);
        assert_eq!(s.cpu_time(), Duration::from_millis(12_900));
        let t = ProcStat::parse("12 (a) b) S 34 12 12 0 0 0 0 0 0 0 7 8 0 0 39 19").unwrap();
        assert_eq!(
            (t.comm.as_str(), t.ppid, t.cpu_ticks(), t.nice),
            ("a) b", 34, 15, 19)
        );
    }

    #[test]
    fn other_text_is_refused() {
        assert_eq!(ProcStat::parse("12 no-parenthesis S 34"), None);
        assert_eq!(ProcStat::parse("12 (short) S 34 1 1"), None);
        assert_eq!(ProcStat::parse(")12 (x S 1"), None);
        assert_eq!(ProcStat::parse(""), None);
    }

    #[test]
    fn resident_memory_is_read_from_the_status_text() {
        assert_eq!(
            vm_rss_kib("Name:\tcg-send\nVmRSS:\t   51234 kB\nVmSwap: 0 kB\n"),
            Some(51234)
        );
        assert_eq!(vm_rss_kib("Name:\tkthreadd\n"), None);
        assert_eq!(vm_rss_kib("VmRSS: lots kB\n"), None);
        assert!(rss_kib(None).is_some_and(|k| k > 0));
    }

    #[test]
    fn this_threads_nice_value_is_read() {
        // The test's thread runs at whatever the test runner started at; a thread started
        // from it inherits that.
        let here = thread_nice().expect("Linux /proc");
        assert!((-20..=19).contains(&here));
        let there = std::thread::spawn(thread_nice).join().unwrap();
        assert_eq!(there, Some(here));
    }

    #[test]
    fn this_process_has_this_thread() {
        let link = std::fs::read_link("/proc/thread-self").unwrap();
        let tid: u32 = link.file_name().unwrap().to_str().unwrap().parse().unwrap();
        assert!(threads(None).unwrap().contains(&tid));
        assert!(threads(Some(std::process::id())).unwrap().contains(&tid));
    }
}
