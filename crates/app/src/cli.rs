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

/// Logs to stderr, filtered by `RUST_LOG` (default `warn`, with `rtc_dtls::config` at
/// `error`: as the DTLS client it warns on every WebRTC session that it has no server name,
/// which WebRTC does not use — peers are checked by certificate fingerprint). Each line is stamped with
/// `CLOCK_MONOTONIC` in seconds, the clock of the statistics' `mono_ns`, so log lines of
/// cg-send, cg-recv and netlab's records line up (e.g. `RUST_LOG=cg_rtp=debug` traces key
/// frames, PLIs and frame losses).
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
            threshold: self.gcc_threshold,
            k_up: self.gcc_ku,
            k_down: self.gcc_kd,
            static_gamma_ms: self.gcc_static_gamma_ms,
            kalman_q: self.gcc_kalman_q,
            filter: self.gcc_filter,
            arrival_burst: self.gcc_arrival_burst,
        }
    }
}
