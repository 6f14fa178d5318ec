//! Process plumbing shared by the `cg-send` and `cg-recv` binaries: logging, the runtime, the
//! shutdown signal and address arguments.

use std::process::ExitCode;
use std::time::Duration;

use crate::Error;

/// Resolves a `HOST:PORT` command-line argument (`what` names it in errors, e.g. `--to`).
pub fn resolve(what: &str, s: &str) -> Result<std::net::SocketAddr, Error> {
    use std::net::ToSocketAddrs;
    s.to_socket_addrs()
        .map_err(|e| {
            Error::Config(format!(
                "bad {what} address {s:?}: {e} (expected HOST:PORT)"
            ))
        })?
        .next()
        .ok_or_else(|| Error::Config(format!("{what} address {s:?} resolves to nothing")))
}

/// Logs to stderr, filtered by `RUST_LOG` (default `warn`, with `rtc_dtls::config` at `error`: as
/// the DTLS client it warns on every WebRTC session that it has no server name, which WebRTC does
/// not use — peers are checked by certificate fingerprint). Each line is stamped with
/// `CLOCK_MONOTONIC` in seconds, the clock of the statistics' `mono_ns`, so log lines of cg-send,
/// cg-recv and netlab's records line up (e.g. `RUST_LOG=cg_rtp=debug` traces key frames, PLIs and
/// frame losses).
pub fn init_tracing() {
    tracing_subscriber::fmt()
        .with_timer(MonotonicTimer)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "warn,rtc_dtls::config=error".into()),
        )
        .with_writer(std::io::stderr)
        .init();
}

/// Log timestamps: `CLOCK_MONOTONIC` seconds.
struct MonotonicTimer;

impl tracing_subscriber::fmt::time::FormatTime for MonotonicTimer {
    fn format_time(&self, w: &mut tracing_subscriber::fmt::format::Writer<'_>) -> std::fmt::Result {
        let ns = cg_media::HostTime::now().as_nanos();
        write!(
            w,
            "{}.{:06}",
            ns / 1_000_000_000,
            ns % 1_000_000_000 / 1_000
        )
    }
}

pub use cg_host::REALTIME_NICE;

/// Options both programs take about how long they run and where their statistics go.
#[derive(Debug, Clone, clap::Args)]
pub struct OutputArgs {
    /// Stop after this long (e.g. 30s); default: run until SIGINT/SIGTERM.
    #[arg(long, value_parser = humantime::parse_duration)]
    pub duration: Option<Duration>,
    /// Write statistics as newline-delimited JSON to stdout.
    #[arg(long)]
    pub json: bool,
    /// Write statistics as newline-delimited JSON to this file.
    #[arg(long, value_name = "PATH")]
    pub stats_file: Option<std::path::PathBuf>,
    /// Statistics interval.
    #[arg(long, default_value = "100ms", value_parser = humantime::parse_duration)]
    pub stats_interval: Duration,
    /// No status line on the terminal.
    #[arg(long, short)]
    pub quiet: bool,
}

impl OutputArgs {
    /// Where the statistics go: stdout, the file and the status line, as asked.
    pub fn stats_output(&self) -> Result<crate::output::StatsOutput, Error> {
        crate::output::StatsOutput::new(self.json, self.stats_file.as_deref(), self.quiet)
    }

    /// Completes after `--duration`, or at SIGINT or SIGTERM ([`shutdown`]).
    pub fn shutdown(&self) -> impl Future<Output = ()> + use<> {
        shutdown(self.duration)
    }
}

/// Options both programs take about their process.
#[derive(Debug, Clone, clap::Args)]
pub struct ProcessArgs {
    /// Nice value to raise the program's threads to, from −20 to 19 (threads it starts
    /// inherit it; a priority is only ever raised, never lowered, so a program started
    /// higher stays there). Needs root or CAP_SYS_NICE; without them the program runs as
    /// started and says so at info level.
    #[arg(long, value_name = "N", default_value_t = REALTIME_NICE, allow_negative_numbers = true,
          value_parser = clap::value_parser!(i32).range(-20..=19))]
    pub nice: i32,
}

impl ProcessArgs {
    /// Raises the calling thread's priority to `--nice` (see [`raise_priority`]), logging
    /// the outcome. Call first thing, before the runtime and the media pipelines start their
    /// threads, so that they inherit it.
    pub fn apply(&self) {
        match raise_priority(self.nice) {
            Ok(n) => tracing::debug!(nice = n, "priority"),
            Err(e) => tracing::info!(
                "cannot raise priority to nice {}: {e}; running as started",
                self.nice
            ),
        }
    }
}

/// Raises the calling thread — and the threads it starts afterwards, which inherit it — to
/// nice `nice` if that is a higher priority than it runs at; returns the nice value it runs
/// at. Changes nothing and fails where the process may not raise its priority.
pub fn raise_priority(nice: i32) -> Result<i32, std::io::Error> {
    // SAFETY: getpriority(2) and setpriority(2) on this thread's own id; errno is this
    // thread's. No memory is involved.
    unsafe {
        let tid = libc::gettid() as libc::id_t;
        *libc::__errno_location() = 0;
        let now = libc::getpriority(libc::PRIO_PROCESS, tid);
        if now == -1 && *libc::__errno_location() != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if now <= nice {
            return Ok(now);
        }
        if libc::setpriority(libc::PRIO_PROCESS, tid, nice) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(nice)
}

/// The two-worker tokio runtime the binaries run on.
pub fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::Io {
            what: "tokio runtime".into(),
            source: e,
        })
}

/// Completes on SIGINT, SIGTERM or after `duration`.
pub async fn shutdown(duration: Option<Duration>) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        tracing::error!("cannot install signal handlers");
        return std::future::pending().await;
    };
    let timer = async {
        match duration {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = int.recv() => tracing::info!("SIGINT"),
        _ = term.recv() => tracing::info!("SIGTERM"),
        () = timer => {}
    }
}

/// A program's `main`: logging set up, `run` run, its error printed as `NAME: error: …`.
pub fn main<E: std::fmt::Display>(name: &str, run: impl FnOnce() -> Result<(), E>) -> ExitCode {
    init_tracing();
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{name}: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// GCC's settings on the command line (cg-send's and cg-recv's `--gcc-*` options): the
/// over-use threshold model and its gains, and the arrival-time filter's `Q`. They belong to
/// the delay-based estimator, which runs in cg-recv with `--cc gcc-remb` and in cg-send with
/// `--cc gcc`; each program refuses them where they would do nothing.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct GccArgs {
    /// The published GCC to run: `cg` (the default: MMSys16's design with libwebrtc's and
    /// cg's additions), `mmsys16` (Carlucci et al., MMSys 2016, as the paper gives it) or
    /// `2013` (De Cicco et al., Packet Video 2013: static threshold); the other --gcc-*
    /// settings apply over it. With --cc gcc-remb both cg-send and cg-recv run part of it:
    /// give it to both (docs/gcc-variants.md)
    #[arg(long, value_name = "NAME")]
    pub gcc_variant: Option<cg_cc::gcc::GccVariant>,
    /// GCC's over-use threshold: `adaptive` (MMSys16 eq. 17–18, the default) or `static` (the
    /// 2013 paper's γ̄, MMSys16 Figs. 9(a) and 11(a))
    #[arg(long, value_name = "MODEL")]
    pub gcc_threshold: Option<cg_cc::gcc::ThresholdChoice>,
    /// The adaptive threshold's ku (MMSys16 eq. 18, per ms; default 0.01)
    #[arg(long, value_name = "K")]
    pub gcc_ku: Option<f64>,
    /// The adaptive threshold's kd (MMSys16 eq. 18, per ms; default 0.00018)
    #[arg(long, value_name = "K")]
    pub gcc_kd: Option<f64>,
    /// The static threshold's γ̄ in ms (default 25/60 ms, the 2013 paper's)
    #[arg(long, value_name = "MS")]
    pub gcc_static_gamma_ms: Option<f64>,
    /// The arrival-time Kalman filter's state noise Q (MMSys16 eq. 15, ms²; default 1e-3)
    #[arg(long, value_name = "Q")]
    pub gcc_kalman_q: Option<f64>,
    /// GCC's delay detector: `kalman` (MMSys16's scalar Kalman filter and adaptive
    /// threshold, the default), `two-state` (the 2013 paper's filter) or `trendline`
    /// (libwebrtc's send-side trendline estimator, with its own threshold)
    #[arg(long, value_name = "MODEL")]
    pub gcc_filter: Option<cg_cc::gcc::ArrivalFilterModel>,
    /// Whether packets that arrive in a burst with the group being built join it (`on`,
    /// libwebrtc's 5 ms / 100 ms rule against a receiving host's scheduling stalls) or are
    /// grouped by frame or send time alone (`off`, the default, MMSys16 §3.3)
    #[arg(long, value_name = "on|off", value_parser = cg_cc::gcc::parse_on_off)]
    pub gcc_arrival_burst: Option<bool>,
}

impl GccArgs {
    /// The settings given.
    pub fn tuning(&self) -> cg_cc::gcc::GccTuning {
        cg_cc::gcc::GccTuning {
            variant: self.gcc_variant,
            threshold: self.gcc_threshold,
            k_up: self.gcc_ku,
            k_down: self.gcc_kd,
            static_gamma_ms: self.gcc_static_gamma_ms,
            kalman_q: self.gcc_kalman_q,
            filter: self.gcc_filter,
            arrival_burst: self.gcc_arrival_burst,
            ..cg_cc::gcc::GccTuning::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This thread's nice value.
    fn nice_now() -> i32 {
        // SAFETY: getpriority(2) on this thread's own id.
        unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) }
    }

    #[test]
    fn priority_is_raised_inherited_and_never_lowered() {
        // On threads of their own: the test harness's threads keep theirs.
        std::thread::spawn(|| {
            let before = nice_now();
            let want = (before - 3).max(-20);
            match raise_priority(want) {
                Ok(n) => {
                    assert_eq!((n, nice_now()), (want, want));
                    // A thread started now inherits it.
                    let child = std::thread::spawn(nice_now).join().unwrap();
                    assert_eq!(child, want);
                    // Asking for less is not a change.
                    assert_eq!(raise_priority(want + 5).unwrap(), want);
                    assert_eq!(nice_now(), want);
                }
                // Without root or CAP_SYS_NICE: refused, and nothing changed.
                Err(e) => {
                    assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied, "{e}");
                    assert_eq!(nice_now(), before);
                }
            }
        })
        .join()
        .unwrap();
    }
}
