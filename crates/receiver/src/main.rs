//! `cg-recv`: receive and decode a cg video stream. See `cg-recv --help`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use cg_media::SinkKind;
use cg_receiver::{ControllerKind, Error, Receiver, ReceiverConfig, parse_stream_codec};
use clap::Parser;

/// Receive, decode and report a live video stream from cg-send, sending the feedback its
/// congestion controller needs.
///
/// The first sender to send is received; after it has been silent for --peer-timeout the next
/// one is accepted. SIGINT or SIGTERM end the session.
#[derive(Parser, Debug)]
#[command(version, about, long_about, after_help = EXAMPLES)]
struct Args {
    /// Address to listen on (host:port). With --webrtc: the media socket's address, the ICE
    /// host candidate (an unspecified host picks the address that routes to the server).
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:5004")]
    listen: String,
    /// WebRTC mode: `whep-client URL` views the stream of a WHEP endpoint (e.g. `cg-send
    /// --webrtc whep`'s http://HOST:8080/whep); `whip` serves WHIP at --http for one publisher
    /// at a time (a browser's camera: open http://HTTP-ADDR/). --cc and --codec must match
    /// what the sender runs (a browser publishing runs GCC on transport-wide feedback: --cc gcc).
    #[arg(long, num_args = 1..=2, value_names = ["MODE", "URL"])]
    webrtc: Vec<String>,
    /// With --webrtc whip: the HTTP address of the WHIP endpoint (POST /whip) and the
    /// publisher page (GET /).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8081")]
    http: String,
    /// With --webrtc whip: write the publisher page's getStats() reports here, one JSON line
    /// each (open the page with ?report=1).
    #[arg(long, value_name = "PATH")]
    publisher_reports: Option<PathBuf>,
    /// The sender's congestion controller (decides the feedback): gcc-remb, gcc, scream.
    #[arg(long, default_value = "gcc-remb", value_name = "CC")]
    cc: String,
    #[command(flatten)]
    gcc: cg_app::cli::GccArgs,
    #[command(flatten)]
    process: cg_app::cli::ProcessArgs,
    /// Codec of the stream: auto (plain RTP: whichever codec the stream's payload type names,
    /// followed at its key frames; WebRTC mode: VP8), vp8, h264, h265 (that one only), or
    /// model (from `cg-send --codec model`: frames are checked and counted, not decoded; not
    /// with --webrtc whip).
    #[arg(long, default_value = "auto")]
    codec: String,
    /// Nominal frame rate of the stream (for freeze detection).
    #[arg(long, default_value_t = 30)]
    fps: u32,
    /// GCC-REMB: the receive-side estimator's start rate (give the sender's
    /// --start-bitrate). The first REMB, 0.5 s after the stream's first packet, carries
    /// the larger of it and the rate received, so a receiver that joins a running stream
    /// does not pull it down.
    #[arg(long, default_value = "300k")]
    start_bitrate: cg_types::Bitrate,
    /// Score each shown picture's luma PSNR against the source it came from, named by the
    /// stamp `cg-send --stamp` draws: PATTERN:WIDTHxHEIGHT@FPS of the sender's source, e.g.
    /// camera:1280x720@30 (the synthetic pictures are made again here, no file travels).
    #[arg(long, value_name = "SPEC")]
    reference: Option<cg_media::ReferenceSpec>,
    /// Show the decoded video in a window (needs a display) instead of decoding only.
    #[arg(long)]
    display: bool,
    /// A sender silent this long is forgotten and the next one accepted.
    #[arg(long, default_value = "3s", value_parser = humantime::parse_duration)]
    peer_timeout: Duration,
    #[command(flatten)]
    output: cg_app::cli::OutputArgs,
}

const EXAMPLES: &str = "Examples:
  cg-recv --listen 0.0.0.0:5004 --cc scream
  cg-recv --listen [::]:5004 --cc gcc --json | jq .frames_decoded
  cg-recv --webrtc whep-client http://10.0.0.1:8080/whep --cc gcc
  cg-recv --webrtc whip --http 127.0.0.1:8081 --cc gcc   (then open http://127.0.0.1:8081/)

Log detail: RUST_LOG=debug.";

fn main() -> ExitCode {
    let args = Args::parse();
    cg_app::cli::main("cg-recv", || run(args))
}

fn run(args: Args) -> Result<(), Error> {
    let config = config(&args)?;
    args.process.apply();
    let runtime = cg_app::cli::runtime()?;
    runtime.block_on(async move {
        let out = args.output.stats_output()?;
        let mut receiver = Receiver::new(config)?;
        tracing::info!(local = %receiver.local_addr(), "listening");
        let stats = receiver.stats(64);
        let last = out
            .around(
                stats,
                |s| s.status_line(),
                receiver.run(args.output.shutdown()),
            )
            .await?;
        let ending = match (last.bye_received, &last.peer) {
            (true, _) => "; the sender ended the stream (BYE)",
            (false, Some(_)) => "; no BYE from the sender",
            (false, None) => "",
        };
        eprintln!(
            "cg-recv: done after {:.1} s: {} frames decoded, {} lost, {} freezes (longest {:.0} ms; by WebRTC's rule {}, {:.0} ms frozen), {} resolution switches{ending}",
            last.t,
            last.frames_decoded,
            last.frames_lost,
            last.freezes,
            last.longest_freeze_ms,
            last.webrtc_freezes,
            last.webrtc_freeze_total_ms,
            last.resolution_switches
        );
        Ok(())
    })
}

/// The local address that routes to `url`'s host (no packet is sent: a UDP `connect` only
/// asks the kernel for the route).
fn route_to(url: &str) -> Result<std::net::IpAddr, Error> {
    let authority = url
        .split_once("://")
        .map_or(url, |(_, rest)| rest)
        .split('/')
        .next()
        .unwrap_or_default();
    let target = if authority.contains(':') && !authority.ends_with(']') {
        authority.to_owned()
    } else {
        format!("{authority}:80")
    };
    let peer = cg_app::cli::resolve("the WHEP URL's", &target)?;
    let bind: std::net::SocketAddr = if peer.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        ([0u16; 8], 0).into()
    };
    let s = std::net::UdpSocket::bind(bind)
        .and_then(|s| s.connect(peer).map(|()| s))
        .and_then(|s| s.local_addr())
        .map_err(|e| Error::Config(format!("no route to {peer} for the WHEP session: {e}")))?;
    Ok(s.ip())
}

fn config(a: &Args) -> Result<ReceiverConfig, Error> {
    let mut listen = cg_app::cli::resolve("--listen", &a.listen)?;
    let (mut whep_url, mut whip_http) = (None, None);
    match a.webrtc.as_slice() {
        [] => {}
        [mode, url] if mode == "whep-client" => {
            if listen.ip().is_unspecified() {
                listen.set_ip(route_to(url)?);
            }
            whep_url = Some(url.clone());
        }
        [mode] if mode == "whip" => {
            let http = cg_app::cli::resolve("--http", &a.http)?;
            if listen.ip().is_unspecified() {
                listen.set_ip(http.ip());
            }
            whip_http = Some(http);
        }
        [mode, ..] => {
            return Err(Error::Config(format!(
                "unknown --webrtc {mode:?}; cg-recv has `whep-client URL` and `whip`"
            )));
        }
    }
    let stream_codec = parse_stream_codec(&a.codec)?;
    let mut config = ReceiverConfig {
        listen,
        whep_url,
        whip_http,
        publisher_reports: a.publisher_reports.clone(),
        controller: ControllerKind::from_name(&a.cc)?,
        frame_rate: a.fps,
        sink: if a.display {
            SinkKind::Window
        } else {
            SinkKind::Fake
        },
        peer_timeout: a.peer_timeout,
        reference: a.reference,
        start_bitrate: a.start_bitrate,
        gcc: a.gcc.tuning(),
        stats_interval: a.output.stats_interval,
        ..ReceiverConfig::default()
    };
    stream_codec.apply_to(&mut config);
    config.validate()?;
    Ok(config)
}
