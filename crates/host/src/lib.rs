//! What a cg program reads of the host it runs on, apart from the unit types of cg-types,
//! which do no I/O:
//!
//! - [`ProcStat`] — the fields cg reads from a Linux `/proc/PID/stat` line (process tree,
//!   CPU time in [`USER_HZ`] ticks), parsed from its text, and a process's resident memory
//!   ([`rss_kib`], from `/proc/PID/status`; [`vm_rss_kib`] parses that text), and its
//!   threads ([`threads`], from `/proc/PID/task`), and the priority the calling thread runs
//!   at ([`thread_nice`]).
//! - [`is_per_package_cargo_var`] — which of the variables in a process's environment cargo
//!   set for one package's build, run or test, so that a cargo started from such a process
//!   (xtask, an end-to-end test) starts without them.
//! - [`REALTIME_NICE`] — the priority cg-send and cg-recv raise themselves to, which netlab
//!   must know to start them there inside its user namespace (where no process may raise
//!   its own).
//! - [`testing`] — for the workspace's tests: the cg programs an end-to-end test runs, built
//!   by cargo from the code under test next to the test's own binary, and the judge of a
//!   scenario's figures over many seeds or runs ([`testing::Spread`]).
//!
//! Driven by plain calls: the parsers take text and keep no state, and [`rss_kib`] reads
//! `/proc` when it is called (`None` where `/proc` does not tell). Nothing here reads a
//! clock; the CPU times are the kernel's tick counts, turned into a
//! [`std::time::Duration`] in one place ([`ProcStat::cpu_time`]). Only [`testing`] starts a
//! process (cargo) or panics: a test that cannot build its programs, or whose figures miss
//! their ranges, must fail.

mod cargo_env;
mod proc_stat;
pub mod testing;

pub use cargo_env::is_per_package_cargo_var;
pub use proc_stat::{ProcStat, USER_HZ, rss_kib, thread_nice, threads, vm_rss_kib};

/// The nice value cg-send and cg-recv raise themselves to unless told otherwise (`--nice`).
/// A frame must not wait for whatever else the host runs — a game beside the encoder, a
/// build beside the viewer — so the real-time path runs above normal priority, as libwebrtc
/// runs its encoder queue at high priority. A nice value rather than a real-time policy: a
/// runaway encoder then slows the host down instead of stalling it.
pub const REALTIME_NICE: i32 = -10;
