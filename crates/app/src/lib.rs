//! What the `cg-send` and `cg-recv` programs (and the crates behind them, cg-sender and
//! cg-receiver) share, so that neither depends on the other: the [`Error`] a session fails
//! with, the process plumbing of [`cli`] (logging, the runtime, the shutdown signal, address
//! arguments), the statistics [`output`] and the formatters of its status line, and the NTP
//! clock both ends stamp their reports with.

pub mod cli;
mod error;
pub mod output;
pub mod watch;

pub use error::Error;

/// The NTP time (RFC 5905 64-bit: seconds since 1900 in the high half) now, from the system
/// clock: what [`cg_rtp::SenderConfig::ntp_at_start`] wants, so that sender and receiver on
/// one host map capture times onto the same clock.
pub fn ntp_now() -> u64 {
    const UNIX_TO_NTP: u64 = 2_208_988_800;
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = d.as_secs() + UNIX_TO_NTP;
    let frac = (u64::from(d.subsec_nanos()) << 32) / 1_000_000_000;
    (secs << 32) | frac
}

/// `1234k` or `12.3M`.
pub fn kbps(bps: u64) -> String {
    if bps >= 10_000_000 {
        format!("{:.1}M", bps as f64 / 1e6)
    } else {
        format!("{}k", bps / 1000)
    }
}

/// `12.3ms` or `-`.
pub fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_owned(), |v| format!("{v:.1}ms"))
}

/// `1.2%` or `-`.
pub fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_owned(), |v| format!("{:.1}%", v * 100.0))
}
