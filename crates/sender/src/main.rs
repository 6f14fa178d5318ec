//! `cg-send`: send a live video stream with congestion control. See `cg-send --help`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use cg_media::{DegradationPreference, FileFormat, SourceConfig, TestPattern};
use cg_sender::{ControllerKind, Ecn, Error, Sender, SenderConfig, WhepConfig, WhepSender};
use cg_types::Bitrate;
use clap::Parser;

/// Send a live video stream over RTP with congestion control (GCC, SCReAM) to a cg-recv.
///
/// The encoder follows the controller's target bit rate; the receiver (`cg-recv --listen`,
/// started with the same `--cc`) sends the feedback the controller needs. SIGINT or SIGTERM
/// end the session cleanly with an RTCP BYE.
#[derive(Parser, Debug)]
#[command(version, about, long_about, after_help = EXAMPLES)]
struct Args {
    /// Receiver address (host:port), as given to `cg-recv --listen`. Not with --webrtc.
    #[arg(
        long,
        value_name = "ADDR",
        required_unless_present = "webrtc",
        conflicts_with = "webrtc"
    )]
    to: Option<String>,
    /// Local address to bind (default: any address of the receiver's family, any port). With
    /// --webrtc: the address (IP or IP:port, the port is ignored) the media sockets bind to,
    /// the one viewers reach; default the --http address.
    #[arg(long, value_name = "ADDR")]
    bind: Option<String>,
    /// WebRTC mode: `whep` serves the stream to WebRTC viewers (a browser at
    /// http://HTTP-ADDR/, or `cg-recv --webrtc whep-client`), one peer and controller each.
    #[arg(long, value_name = "MODE")]
    webrtc: Option<String>,
    /// With --webrtc whep: the HTTP address of the WHEP endpoint (POST /whep) and the viewer
    /// page (GET /).
    #[arg(
        long,
        value_name = "ADDR",
        default_value = "127.0.0.1:8080",
        requires = "webrtc"
    )]
    http: String,
    /// With --webrtc whep: write the viewer pages' getStats() reports here, one JSON line
    /// each (open the page with ?report=1).
    #[arg(long, value_name = "PATH", requires = "webrtc")]
    viewer_reports: Option<PathBuf>,
    /// Congestion controller: gcc-remb (GCC, receiver-side estimate sent back as REMB), gcc
    /// (GCC send-side over transport-wide CC feedback), scream (SCReAM v2 over RFC 8888).
    /// cg-recv must be given the same.
    #[arg(long, default_value = "gcc-remb", value_name = "CC")]
    cc: String,
    #[command(flatten)]
    gcc: cg_sender::cli::GccArgs,
    /// The SCReAM v2 to run with --cc scream: `cg` (the default: the draft's constants with
    /// cg's additions), `draft` (the draft as written) or `reference` (Ericsson's reference
    /// code's constants), the last two without cg's additions (docs/scream-variants.md)
    #[arg(long, value_name = "NAME", default_value = "cg")]
    scream_variant: cg_cc::scream::ScreamVariant,
    #[command(flatten)]
    process: cg_sender::cli::ProcessArgs,
    /// ECN marking of media packets: off, ect0 (classic ECN), l4s (ECT(1)).
    #[arg(long, default_value = "off", value_name = "MODE")]
    ecn: String,
    /// Encoder: vp8, x264, nvh264, nvh265 (NVENC needs an NVIDIA GPU), or model: frames whose
    /// sizes follow RFC 8593's video model, no pictures, for rates this machine cannot encode
    /// (`--pattern camera` or `game`: the camera-like size profile; the receiver runs
    /// `cg-recv --codec model`, also as a WHEP viewer; a browser is refused). Also `--encoder`.
    /// Default vp8 (x264 with --profile gaming).
    #[arg(long, alias = "encoder")]
    codec: Option<String>,
    /// Picture source: videotest (videotestsrc), file (--file), screen (X11), camera (V4L2).
    #[arg(long, default_value = "videotest")]
    source: String,
    /// Test picture: camera (camera-like: natural texture, panning, sensor noise), game
    /// (fast motion, sprites, a HUD, a scene cut every 4 s), zone-plate (moving, hard to
    /// code), faint-zone-plate (low-contrast moving rings: VP8 at 720p follows targets from
    /// 0.3 to 4 Mbit/s), smpte (scrolling bars), ball (nearly static), snow (incompressible).
    #[arg(long, default_value = "zone-plate")]
    pattern: String,
    /// Video file for `--source file`: a .y4m file, or raw I420 (give --file-size and
    /// --file-fps).
    #[arg(long, value_name = "PATH")]
    file: Option<PathBuf>,
    /// Raw I420 file frame size, WxH.
    #[arg(long, value_name = "WxH")]
    file_size: Option<String>,
    /// Raw I420 file frame rate.
    #[arg(long, value_name = "FPS")]
    file_fps: Option<u32>,
    /// Camera device for `--source camera`.
    #[arg(long, default_value = "/dev/video0")]
    device: PathBuf,
    /// Encoded width in pixels (the largest: see --degradation).
    #[arg(long, default_value_t = 1280)]
    width: u32,
    /// Encoded height in pixels (the largest).
    #[arg(long, default_value_t = 720)]
    height: u32,
    /// Frames per second (the most).
    #[arg(long, default_value_t = 30)]
    fps: u32,
    /// What the encoder gives up when the target is too low for the picture:
    /// maintain-framerate (lower the resolution; for games and cameras), maintain-resolution
    /// (lower the frame rate; for screen content), balanced (both), disabled (code
    /// --width x --height at --fps whatever the target).
    #[arg(long, default_value = "maintain-framerate", value_name = "PREF")]
    degradation: String,
    /// Smallest picture the adaptation may code, WxH.
    #[arg(long, default_value = "320x180", value_name = "WxH")]
    min_size: String,
    /// Lowest frame rate the adaptation may code.
    #[arg(long, default_value_t = 7, value_name = "FPS")]
    min_fps: u32,
    /// Frame dropper: raw frames are skipped while the encoder's output runs more than this
    /// much of the target ahead (e.g. 500ms); `off` lets the encoder overshoot.
    #[arg(long, default_value = "500ms", value_name = "DURATION|off")]
    frame_dropper: String,
    /// The encoder's rate-control buffer (e.g. 300ms): how far its output may run from the
    /// target before it corrects; default the encoder's own (VP8 300 ms, x264 500 ms).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    rate_buffer: Option<std::time::Duration>,
    /// Draw a stamp into the top-left corner of every picture: the frame number and the
    /// wall-clock time, in black and white cells. A viewer reads it back: `cg-recv
    /// --reference` scores picture quality against the source, a browser page times glass to
    /// glass. Synthetic (`--pattern camera|game`) and file sources only.
    #[arg(long)]
    stamp: bool,
    /// Test only: wedge the encoder's pipeline once, this long after the start (the stall
    /// is noticed and the encoder rebuilt, as in the field).
    #[cfg(feature = "testing")]
    #[arg(long, hide = true, value_name = "DURATION", value_parser = humantime::parse_duration)]
    wedge_encoder_at: Option<std::time::Duration>,
    /// Start bit rate (e.g. 300k, 2.5M, 1Mbit).
    #[arg(long, default_value = "300k")]
    start_bitrate: Bitrate,
    /// Lowest bit rate the controller may choose.
    #[arg(long, default_value = "50k")]
    min_bitrate: Bitrate,
    /// Highest bit rate the controller may choose.
    #[arg(long, default_value = "5M")]
    max_bitrate: Bitrate,
    /// Maximum key-frame interval in frames (0: key frames only on request). Default 3000
    /// (libwebrtc's; 0 with --profile gaming): receivers ask (PLI) when they need one.
    #[arg(long, value_name = "FRAMES")]
    key_interval: Option<u32>,
    /// Ask the receiver to keep its playout delay within `MIN[,MAX]` (e.g. `0ms`: render each
    /// frame at once; `0ms,100ms`), with the playout-delay RTP header extension. A browser
    /// otherwise holds frames in its jitter buffer for a smooth cadence. Default: nothing
    /// asked (`0ms` with --profile gaming).
    #[arg(long, value_name = "MIN[,MAX]")]
    playout_delay: Option<String>,
    /// Defaults for a use, under the options given: `gaming` (cloud gaming: the viewer
    /// renders at once, --playout-delay 0ms; key frames only when the receiver asks,
    /// --key-interval 0; H.264, --codec x264, which a browser decodes in a fraction of VP8's
    /// time and whose rate buffer bounds a scene cut's frame; send-side GCC's delay detector
    /// libwebrtc's trendline, --gcc-filter trendline, which a busy viewer's arrival-time
    /// noise does not trip into false over-uses, and a push-back that does not recur within
    /// 10 s of feedback forgotten, so the pacer sends frames freely again; not with a
    /// --gcc-variant other than cg) or `default`.
    #[arg(long, value_name = "NAME", default_value = "default")]
    profile: String,
    /// Media older than this in the pacer is dropped (whole frames not yet started) and a key
    /// frame requested, e.g. 500ms. Default: 1 s for GCC, 250 ms for SCReAM.
    #[arg(long, value_parser = humantime::parse_duration)]
    pacer_queue_bound: Option<Duration>,
    /// RTP circuit-breaker RTCP timeout (RFC 8083 §4.1), e.g. 15s.
    #[arg(long, default_value = "15s", value_parser = humantime::parse_duration)]
    rtcp_timeout: Duration,
    /// The controller's feedback missing this long halves the rate, and again after each
    /// further period, down to 1/16, until it returns (RFC 8888 §5), e.g. 1s; `auto`: 0.5 s
    /// for transport-wide CC and RFC 8888, 3 s for REMB; `off`: only the circuit breaker acts.
    #[arg(long, default_value = "auto", value_name = "DURATION|auto|off")]
    feedback_timeout: String,
    #[command(flatten)]
    output: cg_sender::cli::OutputArgs,
}

/// `--profile gaming`'s `GccConfig::push_back_memory` with send-side GCC.
const GAMING_PUSH_BACK_MEMORY: Duration = Duration::from_secs(10);

const EXAMPLES: &str = "Examples:
  cg-recv --listen 0.0.0.0:5004 --cc scream
  cg-send --to 10.0.0.2:5004 --cc scream --ecn l4s --codec vp8 --source videotest
  cg-send --to 127.0.0.1:5004 --cc gcc --width 640 --height 360 --duration 30s --stats-file s.jsonl
  cg-send --webrtc whep --http 127.0.0.1:8080 --cc gcc --pattern camera   (then open http://127.0.0.1:8080/)

Log detail: RUST_LOG=debug.";

fn main() -> ExitCode {
    let args = Args::parse();
    cg_sender::cli::main("cg-send", || run(args))
}

fn run(args: Args) -> Result<(), Error> {
    let config = config(&args)?;
    args.process.apply();
    let runtime = cg_sender::cli::runtime()?;
    if let Some(mode) = &args.webrtc {
        return runtime.block_on(run_whep(&args, mode, config));
    }
    runtime.block_on(async move {
        let out = args.output.stats_output()?;
        let mut sender = Sender::new(config)?;
        tracing::info!(local = %sender.local_addr(), "sending");
        let stats = sender.stats(64);
        let last = out
            .around(
                stats,
                |s| s.status_line(),
                sender.run(args.output.shutdown()),
            )
            .await?;
        eprintln!(
            "cg-send: done after {:.1} s: {} frames sent, {} dropped, {} media packets, {} retransmissions",
            last.t, last.frames_sent, last.frames_dropped, last.media_packets, last.retransmissions
        );
        Ok(())
    })
}

async fn run_whep(args: &Args, mode: &str, config: SenderConfig) -> Result<(), Error> {
    if mode != "whep" {
        return Err(Error::Config(format!(
            "unknown --webrtc mode {mode:?}; cg-send serves `whep`"
        )));
    }
    let http = cg_sender::cli::resolve("--http", &args.http)?;
    let media_ip = match &args.bind {
        Some(b) => match b.parse::<std::net::IpAddr>() {
            Ok(ip) => ip,
            Err(_) => cg_sender::cli::resolve("--bind", b)?.ip(),
        },
        None => http.ip(),
    };
    let out = args.output.stats_output()?;
    let mut sender = WhepSender::new(
        config,
        WhepConfig {
            report_file: args.viewer_reports.clone(),
            ..WhepConfig::new(http, media_ip)
        },
    )?;
    eprintln!(
        "cg-send: serving WHEP at http://{}/whep, viewer page http://{}/",
        sender.http_addr(),
        sender.http_addr()
    );
    let stats = sender.stats(64);
    out.around(
        stats,
        |s| {
            format!(
                "[{}] {}",
                s.viewer.as_deref().unwrap_or("-"),
                s.status_line()
            )
        },
        sender.run(args.output.shutdown()),
    )
    .await
    .map(|_| ())
}

fn config(a: &Args) -> Result<SenderConfig, Error> {
    let pattern = TestPattern::from_name(&a.pattern).ok_or_else(|| {
        let names: Vec<&str> = TestPattern::ALL.iter().map(|p| p.name()).collect();
        Error::Config(format!(
            "unknown pattern {:?}; expected one of {}",
            a.pattern,
            names.join(", ")
        ))
    })?;
    let source = match a.source.as_str() {
        "videotest" | "videotestsrc" | "test" => SourceConfig::TestPattern { pattern },
        "file" => {
            let path = a
                .file
                .clone()
                .ok_or_else(|| Error::Config("--source file needs --file PATH".into()))?;
            let format = match (&a.file_size, a.file_fps) {
                (Some(size), Some(fps)) => {
                    let (w, h) = size
                        .split_once('x')
                        .and_then(|(w, h)| Some((w.parse().ok()?, h.parse().ok()?)))
                        .ok_or_else(|| {
                            Error::Config(format!("bad --file-size {size:?}; expected WxH"))
                        })?;
                    FileFormat::RawI420 {
                        width: w,
                        height: h,
                        frame_rate: fps,
                    }
                }
                (None, None) => FileFormat::Y4m,
                _ => {
                    return Err(Error::Config(
                        "raw I420 files need both --file-size and --file-fps".into(),
                    ));
                }
            };
            SourceConfig::File {
                path,
                format,
                looping: true,
            }
        }
        "screen" => SourceConfig::Screen { display: None },
        "camera" => SourceConfig::Camera {
            device: a.device.clone(),
        },
        s => {
            return Err(Error::Config(format!(
                "unknown source {s:?}; expected videotest, file, screen, camera"
            )));
        }
    };
    let defaults = SenderConfig::default();
    // WHEP mode has no fixed peer (each viewer brings its own); the defaults stand in.
    let (peer, bind) = match &a.to {
        Some(to) => (
            cg_sender::cli::resolve("--to", to)?,
            a.bind
                .as_deref()
                .map(|b| cg_sender::cli::resolve("--bind", b))
                .transpose()?,
        ),
        None => (defaults.peer, None),
    };
    let gaming = match a.profile.as_str() {
        "gaming" => true,
        "default" => false,
        p => {
            return Err(Error::Config(format!(
                "unknown --profile {p:?}; expected gaming or default"
            )));
        }
    };
    let key_frame_interval = match a.key_interval {
        Some(k) => Some(k).filter(|&k| k > 0),
        None if gaming => None,
        None => defaults.key_frame_interval,
    };
    let playout_delay = match &a.playout_delay {
        Some(v) => Some(playout_delay(v)?),
        None => gaming.then_some(cg_rtp::PlayoutDelay::ZERO),
    };
    let controller = ControllerKind::from_name(&a.cc)?;
    let mut gcc = a.gcc.tuning();
    // The gaming profile tunes cg's GCC; a paper's variant runs as the paper gives it.
    if gaming
        && controller == ControllerKind::Gcc
        && gcc.variant.unwrap_or_default() == cg_cc::gcc::GccVariant::Cg
    {
        gcc.filter = gcc
            .filter
            .or(Some(cg_cc::gcc::ArrivalFilterModel::Trendline));
        gcc.push_back_memory = Some(Some(GAMING_PUSH_BACK_MEMORY));
    }
    let config = SenderConfig {
        peer,
        bind,
        controller,
        ecn: a.ecn.parse::<Ecn>().map_err(|_| {
            Error::Config(format!(
                "unknown ECN mode {:?}; expected one of off, ect0, l4s",
                a.ecn
            ))
        })?,
        source,
        codec: match &a.codec {
            Some(c) => c.clone(),
            None if gaming => "x264".into(),
            None => "vp8".into(),
        },
        width: a.width,
        height: a.height,
        frame_rate: a.fps,
        start_bitrate: a.start_bitrate,
        min_bitrate: a.min_bitrate,
        max_bitrate: a.max_bitrate,
        gcc,
        scream_variant: a.scream_variant,
        rtcp_timeout: a.rtcp_timeout,
        feedback_timeout: match a.feedback_timeout.as_str() {
            "auto" => None,
            d => Some(duration_or_off("--feedback-timeout", d, "1s")?.unwrap_or_default()),
        },
        stats_interval: a.output.stats_interval,
        key_frame_interval,
        playout_delay,
        pacer_max_queue_delay: a.pacer_queue_bound,
        adaptation: adaptation(a)?,
        frame_dropper: duration_or_off("--frame-dropper", &a.frame_dropper, "500ms")?,
        rate_buffer: a.rate_buffer,
        stamp: a.stamp,
        #[cfg(feature = "testing")]
        wedge_encoder_at: a.wedge_encoder_at,
        ..defaults
    };
    config.validate()?;
    Ok(config)
}

fn adaptation(a: &Args) -> Result<cg_media::AdaptationConfig, Error> {
    let preference = DegradationPreference::from_name(&a.degradation).ok_or_else(|| {
        let names: Vec<&str> = DegradationPreference::ALL
            .iter()
            .map(|p| p.name())
            .collect();
        Error::Config(format!(
            "unknown --degradation {:?}; expected one of {}",
            a.degradation,
            names.join(", ")
        ))
    })?;
    let (min_width, min_height) = a
        .min_size
        .split_once('x')
        .and_then(|(w, h)| Some((w.parse().ok()?, h.parse().ok()?)))
        .ok_or_else(|| Error::Config(format!("bad --min-size {:?}; expected WxH", a.min_size)))?;
    Ok(cg_media::AdaptationConfig {
        preference,
        min_width,
        min_height,
        min_frame_rate: a.min_fps,
        ..cg_media::AdaptationConfig::default()
    })
}

/// `--playout-delay MIN[,MAX]`: two durations (one: both), in whole ms.
fn playout_delay(v: &str) -> Result<cg_rtp::PlayoutDelay, Error> {
    let bad = |why: String| {
        Error::Config(format!(
            "bad --playout-delay {v:?}: {why}; expected MIN[,MAX], e.g. 0ms or 0ms,100ms"
        ))
    };
    let at = |d: &str| humantime::parse_duration(d.trim()).map_err(|e| bad(e.to_string()));
    let (min, max) = match v.split_once(',') {
        Some((a, b)) => (at(a)?, at(b)?),
        None => (at(v)?, at(v)?),
    };
    let d = cg_rtp::PlayoutDelay { min, max };
    d.validate().map_err(|e| bad(e.to_string()))?;
    Ok(d)
}

/// A duration option that also takes `off` (`None`); `example` goes in the error.
fn duration_or_off(flag: &str, value: &str, example: &str) -> Result<Option<Duration>, Error> {
    match value {
        "off" | "none" | "0" => Ok(None),
        d => humantime::parse_duration(d).map(Some).map_err(|e| {
            Error::Config(format!(
                "bad {flag} {d:?} ({e}); expected e.g. {example} or off"
            ))
        }),
    }
}
