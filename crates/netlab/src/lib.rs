//! `cg-netlab`: network-namespace testbeds with emulated and kernel bottlenecks, competing
//! kernel TCP, TOML scenarios, metrics and plots (binary `netlab`; see `crates/netlab/README.md`).
//!
//! # How a run is driven
//!
//! 1. [`scenario::Scenario::load`] parses and checks a TOML file completely; every problem is
//!    a [`scenario::ScenarioError`] naming file, line, column and field, before anything is
//!    created. [`report::preflight`] adds what the bottleneck model can build.
//! 2. [`isolate::spawn`] starts the runner (`netlab __runner`) inside fresh user, network,
//!    mount and PID namespaces, tied to the caller with `PR_SET_PDEATHSIG`: everything of the
//!    run is below a PID 1 that takes it all down when it ends, however it ends.
//! 3. [`runner::run`] builds the [`topology`] (hosts `s1…`/`r1…`, a router, veths, a private
//!    /16), starts the bottleneck — the [`emu::forwarder`] (two TUNs, policy routing, cg-link
//!    [`cg_link::Link`]s in real time) or the [`kernel`] `tc` backend after probing — checks
//!    that the measured RTT matches the configured one within 1 ms, starts the [`traffic`]
//!    helpers at a common t0 (CLOCK_MONOTONIC, shared by all namespaces), relays progress, and
//!    leaves raw results in `OUT/raw`. A traffic process that exits with an error code before
//!    the run's end (a `cg-send` refusing its arguments, say) stops the run with its name and
//!    status; one killed by a signal does not.
//! 4. [`metrics::compute`] turns the bottleneck's per-packet log ([`emu::record`]) and the
//!    endpoints' CSVs into throughput, utilisation, loss, queuing-delay distributions, CE
//!    marks, endpoint RTT and Jain's index; [`report`] writes `summary.json`, per-flow CSVs,
//!    [`plot`] PNGs and the stdout table.
//!
//! # Layout
//!
//! Modules depend downwards only, in the order a run reads: [`scenario`] at the bottom (and
//! [`error`] on it); the run — [`sys`], [`rt`], [`isolate`], [`packet`], [`topology`],
//! [`traffic`], [`emu`], [`kernel`], [`runner`], and [`simrun`] in simulated time; its
//! measurements — [`dist`], [`viewer`], [`metrics`]; its outputs — [`plot`], [`report`]; then
//! the experiments over many runs — [`papers`], [`sweep`], [`reproduce`], [`mod@bench`] — which
//! the `netlab` binary drives. (A unit test may run the layers above its module to see its
//! effect: a simulated run's metrics, say.)
//!
//! # Time model
//!
//! This crate is a driver: it reads the clock. The bottleneck model itself (cg-link) is
//! sans-IO and computes every dequeue and delivery at its exact instant; the forwarder only
//! chooses when to wake (all due work per wake-up, at most one wake-up per coalescing interval,
//! 100 µs by default) and measures how late it was against the model's deadlines.
//!
//! # Errors
//!
//! One [`Error`] enum; bad input (scenario files, packets) never panics: unparsable packets are
//! forwarded unclassified and counted.

pub mod bench;
pub mod dist;
pub mod emu;
pub mod error;
mod input;
pub mod isolate;
pub mod kernel;
pub mod metrics;
pub mod packet;
pub mod papers;
pub mod plot;
pub mod report;
pub mod reproduce;
pub mod rt;
pub mod runner;
pub mod scenario;
pub mod simrun;
pub mod sweep;
pub mod sys;
pub mod topology;
pub mod traffic;
pub mod viewer;

pub use error::{Error, Result};
