//! Issue #9's end-to-end checks of cg media flows in network namespaces: real `cg-send` and
//! `cg-recv` processes in the endpoint namespaces, the emulated bottleneck between them, the
//! metrics from `summary.json` (bottleneck side) and from the two processes' `--stats-file`
//! (media side).
//!
//! Heavy (GStreamer encodes in every run), so they run one at a time, at 640×360 where the
//! issue does not ask for 720p. They judge rates, delays and frame deliveries of real processes,
//! so they are ignored in debug builds (an unoptimised pacer and RTP stack on a 2-core machine
//! send late and in bursts, which is not what users run) and `cargo xtask test` runs them with
//! `cargo test --release -p cg-netlab --test cg_flows`. `cg-send` / `cg-recv` must sit next to the netlab binary; they
//! are built into the same target directory if missing.
//!
//! One test binary; its modules by subject: `plain` (issue #9), `busy_host` (issue #37),
//! `papers` (issue #14), `webrtc` (WebRTC mode, WHEP and WHIP); here what they share.

mod busy_host;
#[path = "../common/mod.rs"]
mod common;
mod papers;
mod plain;
mod webrtc;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;
use serde_json::Value;

/// Issue #37's clean link: 50 Mbit/s, 1 ms each way.
const CLEAN_50MBIT: &str = r#"capacity = "50Mbit"
delay = "1ms""#;

/// Issue #37's picture: 1280×720 at 30 fps, camera-like, at most 5 Mbit/s.
const CAMERA_720P: &str = r#""--width", "1280", "--height", "720", "--fps", "30", "--pattern", "camera", "--max-bitrate", "5M""#;

/// [`CAMERA_720P`]'s source, as `cg-recv --reference` names it.
const CAMERA_720P_SOURCE: &str = "camera:1280x720@30";

/// Issue #37's busy host: two busy loops at the lowest priority, the endpoints started at
/// nice 0 (cg-send and cg-recv then raise themselves).
const BUSY_HOST: &str = "\n[load]\nhogs = 2\nnice = 19\nendpoint_nice = 0\n";

/// A heavier load: the game beside the encoder at the priority a game runs at, two busy
/// loops at nice 0 on the two cores, as the endpoints start.
const GAME_AT_NORMAL_PRIORITY: &str = "\n[load]\nhogs = 2\nnice = 0\nendpoint_nice = 0\n";

/// One cg flow through `fwd` (one-way delay `delay`) for `secs`, warm-up 10 s, on seed `run`;
/// `webrtc` is its WebRTC mode (`off`, `cg`, `chromium`, `chromium_whep_js`,
/// `chromium_publisher`); `extra` is
/// appended to the flow's table. A netlab failure (an overloaded machine failing the topology
/// check, say) is an `Err`, which the caller records as a miss of the run. Returns the summary
/// and the output directory (removed by the caller).
#[allow(clippy::too_many_arguments)]
fn webrtc_run(
    name: &str,
    run: u64,
    fwd: &str,
    delay: &str,
    controller: &str,
    ecn: &str,
    send_args: &str,
    webrtc: &str,
    secs: u32,
    extra: &str,
) -> Result<(Value, PathBuf), String> {
    let recv_args = if webrtc == "chromium" || webrtc == "chromium_whep_js" {
        // The viewer is Chromium: cg-recv's arguments do not apply.
        String::new()
    } else if send_args.contains(r#""--stamp""#) {
        // Stamped pictures here are the 720p camera's: cg-recv scores them against it.
        format!(r#"recv_args = ["--start-bitrate", "300k", "--reference", "{CAMERA_720P_SOURCE}"]"#)
    } else if send_args.contains(r#""--codec", "model""#) {
        // The model encoder's frames: cg-recv counts them instead of decoding.
        r#"recv_args = ["--start-bitrate", "300k", "--codec", "model"]"#.to_owned()
    } else {
        r#"recv_args = ["--start-bitrate", "300k"]"#.to_owned()
    };
    let toml = scenario(&format!("cg-{name}"), secs, fwd, controller, ecn, send_args)
        .replace("@DELAY@", delay)
        .replace(r#"recv_args = ["--start-bitrate", "@START@"]"#, &recv_args)
        .replace(r#"warmup = "5s""#, r#"warmup = "10s""#)
        + &format!("webrtc = \"{webrtc}\"\n{extra}\n");
    let _guard = lock();
    run_netlab(name, &with_seed(&toml, run), |_| {}).map_err(|e| format!("{name}: {e}"))
}

/// Chromium's `inbound-rtp` video statistics from `viewer-cg.jsonl`, with their report times
/// (s since cg-send started).
fn chromium_inbound(out: &Path) -> Vec<(f64, Value)> {
    lines(&out.join("raw/viewer-cg.jsonl"))
        .into_iter()
        .filter_map(|l| {
            let t = num(&l, "t");
            let inbound = l["report"]["stats"]
                .as_array()?
                .iter()
                .find(|s| s["type"] == "inbound-rtp" && s["kind"] == "video")?
                .clone();
            Some((t, inbound))
        })
        .collect()
}
