//! The set-up RTT check: probes from the first sender to the first receiver before t0, held
//! against the RTT the scenario's links should give, so that a bypass, a wrong delay or an
//! overloaded emulator stops the run before it starts.

use std::time::Duration;

use super::info::RunOptions;
use crate::scenario::{Backend, Scenario};
use crate::topology::Topology;
use crate::traffic::probe::{ECHO_PORT, ProbeResult};
use crate::{Error, Result};

/// The set-up RTT check's tolerance below the configured RTT (ms): less is a bypass.
const RTT_EARLY_MS: f64 = 1.0;
/// ...and above it (ms): more is a wrong delay or an overloaded emulator.
const RTT_LATE_MS: f64 = 3.0;

/// The set-up RTT check's probes and what the scenario's links should give.
pub(super) struct RttCheck {
    pub(super) probe: ProbeResult,
    pub(super) expected_ms: f64,
}

/// Probes the RTT from the first sender to the first receiver (their echo servers run) and
/// refuses a run whose RTT is not the scenario's.
pub(super) fn check_rtt(
    opts: &RunOptions,
    sc: &Scenario,
    topo: &Topology,
    backend: Backend,
) -> Result<RttCheck> {
    let s1 = sc
        .hosts
        .iter()
        .position(|h| !h.is_receiver)
        .expect("at least one sender");
    let r1 = sc
        .hosts
        .iter()
        .position(|h| h.is_receiver)
        .expect("at least one receiver");
    let probe_out = crate::sys::run(
        "ip",
        &[
            "netns",
            "exec",
            &topo.ns(s1),
            &std::env::current_exe()
                .map_err(|e| Error::io("current_exe", e))?
                .display()
                .to_string(),
            "__probe",
            "--dst",
            &format!("{}:{ECHO_PORT}", sc.hosts[r1].addr),
            "--count",
            "15",
            "--gap-ms",
            "20",
        ],
    )?;
    let pr: ProbeResult = serde_json::from_str(&probe_out)
        .map_err(|e| Error::Process(format!("probe output: {e}")))?;
    let expected = expected_rtt_ms(sc, backend);
    let measured = pr.median_ms().unwrap_or(f64::NAN);
    if opts.progress {
        eprintln!(
            "netlab: RTT check {} → {}: measured {measured:.2} ms (min {:.2}), configured {expected:.2} ms",
            sc.hosts[s1].name,
            sc.hosts[r1].name,
            pr.min_ms().unwrap_or(f64::NAN)
        );
    }
    // The check uses the minimum of the 15 probes (like ping's "min"): a bypass shows as a
    // much shorter RTT, a misconfigured delay as a different one, while a scheduling hiccup
    // of a loaded machine on some probes does not fail the run. Early by more than
    // RTT_EARLY_MS cannot be timing (a route bypasses the bottleneck); late is allowed up
    // to RTT_LATE_MS, the timer lateness a busy 2-core host shows on every probe (a debug
    // build's emulator beside a parallel test: all 15 probes 1.0–1.1 ms late).
    let min = pr.min_ms().unwrap_or(f64::NAN);
    let off = min - expected;
    if !opts.skip_rtt_check && (off.is_nan() || !(-RTT_EARLY_MS..=RTT_LATE_MS).contains(&off)) {
        return Err(Error::Check(format!(
            "measured RTT {min:.2} ms (min of {} answered probes of {}; median {measured:.2} ms) is not within {RTT_EARLY_MS} ms below and {RTT_LATE_MS} ms above the configured {expected:.2} ms: a route bypasses the bottleneck, a delay is not the scenario's, or the emulator is overloaded",
            pr.rtts_ms.len(),
            pr.sent
        )));
    }
    Ok(RttCheck {
        probe: pr,
        expected_ms: expected,
    })
}

/// The RTT a 60-byte probe should see: both one-way delays plus serialisation at the initial
/// rates (queues empty).
pub fn expected_rtt_ms(sc: &Scenario, backend: Backend) -> f64 {
    let ser = |spec: &crate::scenario::LinkSpec| -> f64 {
        let r = spec.capacity.rate_at(Duration::ZERO).as_bps_f64();
        if r > 0.0 { 60.0 * 8.0 / r * 1e3 } else { 0.0 }
    };
    match backend {
        Backend::Emulated => {
            (sc.forward.delay.base + sc.reverse.delay.base).as_secs_f64() * 1e3
                + ser(&sc.forward)
                + ser(&sc.reverse)
        }
        Backend::Kernel => {
            (sc.forward.delay.base + sc.reverse.delay.base).as_secs_f64() * 1e3
                + 74.0 * 8.0
                    / sc.forward
                        .capacity
                        .rate_at(Duration::ZERO)
                        .as_bps_f64()
                        .max(1.0)
                    * 1e3
        }
    }
}
