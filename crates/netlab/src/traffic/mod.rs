//! Traffic generators and sinks, run as `netlab __…` helper processes inside the hosts'
//! namespaces: kernel TCP bulk/on-off flows with a chosen congestion control, constant-rate
//! UDP with an ECN code point, and the UDP echo/probe pair used for the RTT check.
//!
//! Every helper waits for the run's t0 (a CLOCK_MONOTONIC instant shared by all namespaces)
//! plus its start offset, runs until its stop offset, and writes a CSV time series. Sinks run
//! until their stdin is closed by the runner.

pub mod cg;
pub mod probe;
pub mod seq;
pub mod tcp;
pub mod udp;

use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use cg_types::Bitrate;

/// A flag set when stdin reaches end of file (the runner's stop signal).
pub fn stop_on_stdin_eof() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let f = flag.clone();
    std::thread::spawn(move || {
        let mut b = [0u8; 64];
        let mut stdin = std::io::stdin();
        loop {
            match stdin.read(&mut b) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        f.store(true, Ordering::SeqCst);
    });
    flag
}

/// Sleeps until monotonic time `ns`.
pub fn sleep_until_mono(ns: u64) {
    let now = crate::sys::mono_ns();
    if ns > now {
        std::thread::sleep(Duration::from_nanos(ns - now));
    }
}

/// Seconds since t0 now.
pub fn since_t0(t0_ns: u64) -> f64 {
    (crate::sys::mono_ns() as f64 - t0_ns as f64) / 1e9
}

/// Rate steps as passed on the command line: `T:BPS,T:BPS` (seconds since t0, bit/s).
pub fn parse_steps(s: &str) -> Vec<(f64, Bitrate)> {
    s.split(',')
        .filter(|p| !p.is_empty())
        .filter_map(|p| {
            let (t, r) = p.split_once(':')?;
            Some((t.parse().ok()?, Bitrate::bps(r.parse().ok()?)))
        })
        .collect()
}

/// Formats rate steps for [`parse_steps`].
pub fn format_steps(steps: &[(Duration, Bitrate)]) -> String {
    steps
        .iter()
        .map(|(t, r)| format!("{}:{}", t.as_secs_f64(), r.as_bps()))
        .collect::<Vec<_>>()
        .join(",")
}

/// Bytes allowed by rate steps between `from` and `to` (seconds since t0).
pub fn allowed_bytes(steps: &[(f64, Bitrate)], from: f64, to: f64) -> f64 {
    let mut total = 0.0;
    for (i, (t, r)) in steps.iter().enumerate() {
        let end = steps.get(i + 1).map_or(f64::INFINITY, |s| s.0);
        let a = t.max(from);
        let b = end.min(to);
        if b > a {
            total += r.as_bps_f64() / 8.0 * (b - a);
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_round_trip_and_integrate() {
        let steps = vec![
            (Duration::ZERO, Bitrate::mbps(1)),
            (Duration::from_secs(10), Bitrate::mbps(2)),
        ];
        let parsed = parse_steps(&format_steps(&steps));
        assert_eq!(
            parsed,
            vec![(0.0, Bitrate::mbps(1)), (10.0, Bitrate::mbps(2))]
        );
        let b = allowed_bytes(&parsed, 5.0, 15.0);
        assert!((b - (5.0 * 125_000.0 + 5.0 * 250_000.0)).abs() < 1e-6);
    }
}
