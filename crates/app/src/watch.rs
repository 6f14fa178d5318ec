//! A watch on a session loop: a thread of its own that notices when the loop stops turning,
//! and says where it stood and what every thread of the process was doing.
//!
//! The loop marks each step it takes ([`LoopWatch::beat`], with the step's name). A loop
//! that has not marked a step for its threshold is *stalled*: the watch then reads,
//! from `/proc/self/task`, each thread's name, scheduler state (`R` running, `S` sleeping,
//! `D` in uninterruptible I/O) and the kernel function it waits in (`wchan`), and the loop
//! thread's kernel stack where `/proc` shows it (root). When the loop marks its next step,
//! one warning gives the stall's length, the step it stalled in and that picture; the stall
//! is counted ([`LoopWatch::stalls`]).
//!
//! Why a watch and not a timed log line in the loop: a loop that is blocked cannot report
//! itself, and what matters is what held it — a lock (`futex_wait`), a file or pipe (`D`, a
//! file system's wait), the CPU (`R`), or an await on another task (the loop's step names the
//! await). The watch reads only `/proc` text and never touches the loop's state.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The shortest stall a watch reports.
pub const MIN_THRESHOLD: Duration = Duration::from_millis(250);

/// The watch on one loop; the watching thread ends when this is dropped.
#[derive(Debug)]
pub struct LoopWatch {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    name: &'static str,
    origin: Instant,
    threshold: Duration,
    /// Nanoseconds since `origin` of the last step.
    beat_ns: AtomicU64,
    /// The last step's name.
    step: Mutex<&'static str>,
    /// The loop thread, as `/proc/self/task` names it.
    tid: Option<u32>,
    stop: AtomicBool,
    stalls: AtomicU64,
    longest_ns: AtomicU64,
}

/// What the watch has seen: how many stalls and the longest.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stalls {
    /// Stalls of at least the threshold.
    pub count: u64,
    /// The longest of them.
    pub longest: Duration,
}

impl LoopWatch {
    /// Watches the calling thread's loop, `name` in the warnings; a loop without a step for
    /// `threshold` (at least [`MIN_THRESHOLD`]) is stalled. `None` if the watching thread
    /// cannot be started (the loop then runs unwatched).
    pub fn start(name: &'static str, threshold: Duration) -> Option<LoopWatch> {
        let shared = Arc::new(Shared {
            name,
            origin: Instant::now(),
            threshold: threshold.max(MIN_THRESHOLD),
            beat_ns: AtomicU64::new(0),
            step: Mutex::new("start"),
            tid: own_tid(),
            stop: AtomicBool::new(false),
            stalls: AtomicU64::new(0),
            longest_ns: AtomicU64::new(0),
        });
        let watched = Arc::clone(&shared);
        std::thread::Builder::new()
            .name(format!("{name}-watch"))
            .spawn(move || watch(&watched))
            .ok()?;
        Some(LoopWatch { shared })
    }

    /// The loop takes step `step` now.
    pub fn beat(&self, step: &'static str) {
        let s = &self.shared;
        *s.step.lock().unwrap_or_else(|e| e.into_inner()) = step;
        s.beat_ns.store(nanos_since(s.origin), Ordering::Release);
    }

    /// The stalls seen so far.
    pub fn stalls(&self) -> Stalls {
        Stalls {
            count: self.shared.stalls.load(Ordering::Relaxed),
            longest: Duration::from_nanos(self.shared.longest_ns.load(Ordering::Relaxed)),
        }
    }
}

impl Drop for LoopWatch {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
    }
}

fn nanos_since(origin: Instant) -> u64 {
    u64::try_from(origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// The watching thread: checks the loop's last step four times a threshold.
fn watch(s: &Shared) {
    let period = s.threshold / 4;
    // The stalled step (its beat and name) and the picture taken when it was noticed.
    let mut stalled: Option<(u64, &'static str, String)> = None;
    while !s.stop.load(Ordering::Relaxed) {
        std::thread::sleep(period);
        let beat = s.beat_ns.load(Ordering::Acquire);
        let now = nanos_since(s.origin);
        let age = Duration::from_nanos(now.saturating_sub(beat));
        match &stalled {
            None if age >= s.threshold => {
                let step = *s.step.lock().unwrap_or_else(|e| e.into_inner());
                stalled = Some((beat, step, thread_picture(s.tid)));
            }
            Some((at, step, picture)) if beat != *at => {
                let length = Duration::from_nanos(beat.saturating_sub(*at));
                s.stalls.fetch_add(1, Ordering::Relaxed);
                s.longest_ns.fetch_max(
                    u64::try_from(length.as_nanos()).unwrap_or(u64::MAX),
                    Ordering::Relaxed,
                );
                tracing::warn!(
                    loop_name = s.name,
                    stalled_ms = length.as_secs_f64() * 1e3,
                    step,
                    threads = %picture,
                    "the session loop stalled"
                );
                stalled = None;
            }
            _ => {}
        }
    }
}

/// The calling thread's id, from `/proc/thread-self` (`PID/task/TID`).
fn own_tid() -> Option<u32> {
    let link = std::fs::read_link("/proc/thread-self").ok()?;
    link.file_name()?.to_str()?.parse().ok()
}

/// Every thread of this process as `name:state:wchan`, the thread `loop_tid` marked `*` and
/// followed by its kernel stack where `/proc` shows it (root): what a stall's warning shows.
pub fn thread_picture(loop_tid: Option<u32>) -> String {
    let Ok(tids) = cg_host::threads(None) else {
        return "(no /proc/self/task)".to_owned();
    };
    let mut out = vec![];
    let mut stack = String::new();
    for tid in tids {
        let read = |f: &str| {
            std::fs::read_to_string(format!("/proc/self/task/{tid}/{f}")).unwrap_or_default()
        };
        let stat = cg_host::ProcStat::parse(&read("stat"));
        let (name, state) = stat
            .as_ref()
            .map_or(("?", '?'), |s| (s.comm.as_str(), s.state));
        let wchan = read("wchan");
        let wchan = if wchan.is_empty() || wchan == "0" {
            "-"
        } else {
            wchan.trim()
        };
        let mark = if Some(tid) == loop_tid { "*" } else { "" };
        out.push(format!("{mark}{name}:{state}:{wchan}"));
        if Some(tid) == loop_tid {
            stack = read("stack")
                .lines()
                .filter_map(|l| l.split_whitespace().nth(1))
                .take(8)
                .collect::<Vec<_>>()
                .join("<");
        }
    }
    out.sort();
    if stack.is_empty() {
        out.join(" ")
    } else {
        format!("{}; loop thread's kernel stack {stack}", out.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loop_that_stops_turning_is_counted_once_it_turns_again() {
        let watch = LoopWatch::start("test", MIN_THRESHOLD).expect("watch thread");
        for _ in 0..10 {
            watch.beat("turn");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(watch.stalls().count, 0);
        watch.beat("sleeping");
        std::thread::sleep(MIN_THRESHOLD * 2);
        // Not counted while it lasts: its length is known only when the loop turns again.
        assert_eq!(watch.stalls().count, 0);
        watch.beat("turn");
        std::thread::sleep(MIN_THRESHOLD);
        let s = watch.stalls();
        assert_eq!(s.count, 1);
        assert!(
            s.longest >= MIN_THRESHOLD * 2 && s.longest < MIN_THRESHOLD * 20,
            "{s:?}"
        );
    }

    #[test]
    fn the_picture_names_this_thread() {
        let tid = own_tid().expect("/proc/thread-self");
        let picture = thread_picture(Some(tid));
        assert!(picture.contains('*'), "{picture}");
    }
}
