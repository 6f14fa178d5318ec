//! The CLIs as a user runs them: error paths (clear message, non-zero exit), `--help`, and a
//! 5 s loopback session cg-send → cg-recv over 127.0.0.1 with VP8 at 320×180 whose
//! newline-delimited JSON statistics are parsed and checked. The binaries are built by cargo
//! for this test (cg-recv here; cg-send from the sibling package, found next to it).

use std::net::UdpSocket;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

fn recv_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_cg-recv"))
}

/// cg-send, built from the code under test next to cg-recv.
fn send_bin() -> PathBuf {
    cg_host::testing::build_next_to(env!("CARGO"), &recv_bin(), &["cg-sender"], &[]).join("cg-send")
}

fn run(bin: &PathBuf, args: &[&str]) -> Output {
    Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn help_lists_every_option() {
    let o = run(&send_bin(), &["--help"]);
    assert!(o.status.success());
    let h = String::from_utf8_lossy(&o.stdout);
    for opt in [
        "--to",
        "--cc",
        "--ecn",
        "--codec",
        "--source",
        "--width",
        "--height",
        "--fps",
        "--start-bitrate",
        "--min-bitrate",
        "--max-bitrate",
        "--json",
        "--stats-file",
        "--duration",
        "--playout-delay",
        "--profile",
        "--scream-variant",
        "gcc-remb",
        "scream",
        "l4s",
    ] {
        assert!(h.contains(opt), "cg-send --help lacks {opt}:\n{h}");
    }
    let o = run(&recv_bin(), &["--help"]);
    assert!(o.status.success());
    let h = String::from_utf8_lossy(&o.stdout);
    for opt in [
        "--listen",
        "--cc",
        "--codec",
        "--json",
        "--stats-file",
        "--peer-timeout",
        "--gcc-variant",
        "--gcc-threshold",
        "--gcc-ku",
        "--gcc-kd",
        "--gcc-static-gamma-ms",
        "--gcc-kalman-q",
    ] {
        assert!(h.contains(opt), "cg-recv --help lacks {opt}:\n{h}");
    }
}

#[test]
fn bad_addresses_are_clear_errors() {
    let o = run(&send_bin(), &["--to", "not-an-address", "--duration", "1s"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("bad --to address"), "{}", stderr(&o));
    let o = run(&send_bin(), &["--to", "127.0.0.1:0", "--duration", "1s"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("non-zero port"), "{}", stderr(&o));
    let o = run(
        &recv_bin(),
        &["--listen", "999.1.1.1:5", "--duration", "1s"],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("bad --listen address"),
        "{}",
        stderr(&o)
    );
    // An address that is not ours cannot be bound.
    let o = run(
        &recv_bin(),
        &["--listen", "192.0.2.1:5004", "--duration", "1s"],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("cannot bind 192.0.2.1:5004"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn port_in_use_is_a_clear_error() {
    let busy = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap().to_string();
    let o = run(&recv_bin(), &["--listen", &addr, "--duration", "1s"]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("cannot bind") && e.contains("address already in use"),
        "{e}"
    );
    let o = run(
        &send_bin(),
        &["--to", "127.0.0.1:9", "--bind", &addr, "--duration", "1s"],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("address already in use"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn unknown_codec_controller_and_ecn_are_clear_errors() {
    let o = run(&send_bin(), &["--to", "127.0.0.1:9", "--codec", "av1"]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("unknown encoder \"av1\"") && e.contains("vp8"),
        "{e}"
    );
    let o = run(&send_bin(), &["--to", "127.0.0.1:9", "--cc", "bbr"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("unknown controller"), "{}", stderr(&o));
    let o = run(&send_bin(), &["--to", "127.0.0.1:9", "--ecn", "ect2"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("unknown ECN mode"), "{}", stderr(&o));
    let o = run(&send_bin(), &["--to", "127.0.0.1:9", "--ecn", "ce"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("CE-marked"), "{}", stderr(&o));
    let o = run(&recv_bin(), &["--codec", "av1"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("unknown codec"), "{}", stderr(&o));
    for (args, want) in [
        (["--profile", "movie"], "unknown --profile"),
        (["--playout-delay", "fast"], "bad --playout-delay"),
        (["--playout-delay", "100ms,10ms"], "need minimum ≤ maximum"),
        (["--playout-delay", "50s"], "40.95 s"),
    ] {
        let o = run(&send_bin(), &[&["--to", "127.0.0.1:9"][..], &args].concat());
        assert!(!o.status.success());
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn gcc_settings_go_where_the_estimator_runs_and_wrong_ones_are_clear_errors() {
    let refused = |bin: &PathBuf, args: &[&str], want: &str| {
        let o = run(bin, args);
        assert!(!o.status.success(), "{args:?} was accepted");
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
    };
    let to = ["--to", "127.0.0.1:9"];
    // REMB: the estimator runs in cg-recv; send-side: in cg-send.
    refused(
        &send_bin(),
        &[&to[..], &["--gcc-ku", "0.1"]].concat(),
        "give them to cg-recv",
    );
    refused(
        &recv_bin(),
        &["--cc", "gcc", "--gcc-kd", "0.1"],
        "give them to cg-send",
    );
    refused(
        &recv_bin(),
        &["--cc", "scream", "--gcc-kalman-q", "0.1"],
        "give them to cg-send",
    );
    refused(
        &send_bin(),
        &[&to[..], &["--cc", "scream", "--gcc-ku", "0.1"]].concat(),
        "no GCC settings for SCReAM",
    );
    // Wrong values and combinations, by name.
    refused(
        &recv_bin(),
        &["--gcc-threshold", "fixed"],
        "expected adaptive or static",
    );
    refused(&recv_bin(), &["--gcc-ku=-1"], "k_up");
    refused(
        &recv_bin(),
        &["--gcc-threshold", "static", "--gcc-ku", "0.1"],
        "k_up",
    );
    refused(
        &recv_bin(),
        &["--gcc-static-gamma-ms", "0.5"],
        "static_gamma_ms",
    );
    refused(
        &send_bin(),
        &[&to[..], &["--cc", "gcc", "--gcc-kalman-q", "0"]].concat(),
        "kalman_q",
    );
    // The published variant: in REMB mode both programs take it; send-side, cg-send only.
    refused(
        &send_bin(),
        &[&to[..], &["--gcc-variant", "rfc8298"]].concat(),
        "expected cg, mmsys16 or 2013",
    );
    refused(
        &recv_bin(),
        &["--cc", "gcc", "--gcc-variant", "mmsys16"],
        "give them to cg-send",
    );
    refused(
        &send_bin(),
        &[&to[..], &["--scream-variant", "reference"]].concat(),
        "--scream-variant is SCReAM's",
    );
    refused(
        &send_bin(),
        &[&to[..], &["--cc", "scream", "--scream-variant", "rfc8298"]].concat(),
        "not implemented",
    );
    for (bin, args) in [
        (send_bin(), &["--to", "127.0.0.1:9", "--codec", "model"][..]),
        (recv_bin(), &["--listen", "127.0.0.1:0"][..]),
    ] {
        let o = run(
            &bin,
            &[args, &["--gcc-variant", "mmsys16", "--duration", "1s"]].concat(),
        );
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn nvenc_without_a_gpu_is_a_clear_error() {
    let o = run(&send_bin(), &["--to", "127.0.0.1:9", "--codec", "nvh264"]);
    if o.status.success() {
        eprintln!("an NVENC encoder works on this machine; nothing to check");
        return;
    }
    let e = stderr(&o);
    assert!(e.contains("nvh264enc is not available"), "{e}");
}

#[derive(serde::Deserialize)]
struct SendLine {
    t: f64,
    target_bps: u64,
    send_rate_bps: u64,
    frames_sent: u64,
    rtcp_received: u64,
}

#[derive(serde::Deserialize)]
struct RecvLine {
    t: f64,
    frames_decoded: u64,
    recv_rate_bps: u64,
    g2g_ms: Option<f64>,
    g2g_stages: Option<cg_receiver::G2gStages>,
    peer: Option<String>,
    playout_delay_ms: Option<[f64; 2]>,
    webrtc_freezes: u64,
    #[serde(default)]
    psnr_db: Option<f64>,
    #[serde(default)]
    pictures_scored: u64,
    #[serde(default)]
    codec: Option<String>,
}

/// Runs `cg-recv` (with `recv_args`, stats to a file) and `cg-send` (with `send_args`, JSON
/// on stdout) over loopback; returns the sender's output and the receiver's stats lines.
fn loopback(send_args: &[&str], recv_args: &[&str]) -> (Output, String) {
    let (send, stats, _) = loopback_logged(send_args, recv_args);
    (send, stats)
}

/// [`loopback`], with cg-recv's standard error as the third part.
fn loopback_logged(send_args: &[&str], recv_args: &[&str]) -> (Output, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let rstats = dir.path().join("recv.jsonl");
    let recv = Command::new(recv_bin())
        .args(["--listen", &listen, "--quiet", "--stats-file"])
        .arg(&rstats)
        .args(recv_args)
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let send = Command::new(send_bin())
        .args(["--to", &listen, "--json", "--quiet"])
        .args(send_args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(send.status.success(), "cg-send: {}", stderr(&send));
    // SIGTERM ends the receiver cleanly.
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: kill(2) on the child we spawned; no memory is involved.
    assert_eq!(unsafe { libc::kill(recv.id() as i32, libc::SIGTERM) }, 0);
    let out = recv.wait_with_output().unwrap();
    assert!(out.status.success(), "cg-recv: {}", stderr(&out));
    (
        send,
        std::fs::read_to_string(&rstats).unwrap(),
        stderr(&out),
    )
}

/// Plain RTP has no negotiation: a receiver told one codec says which one the stream is and
/// how to receive it, once, and decodes nothing instead of feeding its decoder garbage.
#[test]
fn a_stream_in_another_codec_is_named_once_with_the_option_that_receives_it() {
    let (send, rstats, log) = loopback_logged(
        &[
            "--cc",
            "gcc",
            "--codec",
            "x264",
            "--width",
            "320",
            "--height",
            "180",
            "--duration",
            "3s",
        ],
        &["--cc", "gcc", "--codec", "vp8"],
    );
    let said =
        "the stream is H.264, this receiver decodes VP8 only: run cg-recv --codec auto or h264";
    assert_eq!(log.matches(said).count(), 1, "cg-recv said: {log}");
    let last: RecvLine = serde_json::from_str(rstats.lines().last().expect("stats lines")).unwrap();
    assert_eq!(last.frames_decoded, 0);
    assert!(stderr(&send).contains("frames sent"));
}

/// The gaming profile sends H.264 and runs send-side GCC on libwebrtc's trendline detector
/// (its threshold lies in 6–600 ms, the Kalman detector's in 0.1–10); by default cg-recv
/// decodes whatever codec the stream's payload type names, so it needs no option for it.
#[test]
fn the_gaming_profile_sends_h264_on_the_trendline_detector_and_cg_recv_decodes_it_unasked() {
    let (send, rstats) = loopback(
        &[
            "--cc",
            "gcc",
            "--profile",
            "gaming",
            "--width",
            "320",
            "--height",
            "180",
            "--duration",
            "3s",
        ],
        &["--cc", "gcc"],
    );
    let last: RecvLine = serde_json::from_str(rstats.lines().last().expect("stats lines")).unwrap();
    assert_eq!(last.codec.as_deref(), Some("h264"), "{rstats}");
    assert!(
        last.frames_decoded >= 60,
        "{} frames decoded in 3 s",
        last.frames_decoded
    );
    let out = String::from_utf8(send.stdout.clone()).unwrap();
    let sent: serde_json::Value =
        serde_json::from_str(out.lines().last().expect("sender lines")).unwrap();
    let gamma = sent["extra"]["gamma"].as_f64().unwrap_or(f64::NAN);
    assert!(
        (6.0..=600.0).contains(&gamma),
        "threshold {gamma} ms: {sent}"
    );
    assert!(stderr(&send).contains("frames sent"));
}

#[test]
fn five_seconds_of_vp8_over_loopback_decode_and_report_json() {
    let (send, rstats) = loopback(
        &[
            "--cc",
            "gcc",
            "--codec",
            "vp8",
            "--width",
            "320",
            "--height",
            "180",
            "--duration",
            "5s",
            "--profile",
            "gaming",
        ],
        &["--cc", "gcc"],
    );
    let sent: Vec<SendLine> = String::from_utf8(send.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("cg-send --json lines parse"))
        .collect();
    let got: Vec<RecvLine> = rstats
        .lines()
        .map(|l| serde_json::from_str(l).expect("cg-recv stats lines parse"))
        .collect();
    // A line every 100 ms.
    assert!(sent.len() >= 40, "{} sender lines", sent.len());
    assert!(got.len() >= 45, "{} receiver lines", got.len());
    assert!(sent.windows(2).all(|w| w[1].t > w[0].t));
    assert!(got.windows(2).all(|w| w[1].t > w[0].t));
    let s = sent.last().unwrap();
    let r = got.last().unwrap();
    assert!(
        s.frames_sent >= 120,
        "≈150 frames in 5 s at 30 fps, sent {}",
        s.frames_sent
    );
    // The last line holds the final totals, the ones of the closing message.
    let done = stderr(&send);
    assert!(
        done.contains(&format!(": {} frames sent,", s.frames_sent)),
        "last line {} frames sent; stderr: {done}",
        s.frames_sent
    );
    assert!(r.frames_decoded <= s.frames_sent);
    assert!(s.rtcp_received > 10, "feedback flowed");
    assert!(s.target_bps > 0);
    assert!(sent.iter().any(|l| l.send_rate_bps > 100_000));
    assert!(
        r.frames_decoded * 10 >= s.frames_sent * 9,
        "decoded {} of {} frames",
        r.frames_decoded,
        s.frames_sent
    );
    assert!(got.iter().any(|l| l.recv_rate_bps > 100_000));
    assert!(got.iter().any(|l| l.peer.is_some()));
    let g2g: Vec<f64> = got.iter().filter_map(|l| l.g2g_ms).collect();
    assert!(!g2g.is_empty(), "glass-to-glass latency reported");
    assert!(g2g.iter().all(|&g| g > 0.0 && g < 2000.0), "{g2g:?}");
    // cg-send sends each frame's stages (video-timing); they account for the latency. Each
    // frame's stages add up to its latency exactly (the unit test
    // `a_frames_stages_add_up_to_its_glass_to_glass_latency`); a record holds the medians
    // over its few frames, which do not add up when two frames were slow in different stages,
    // so the check is over the run: the median of the records' stage sums is within 2 ms or
    // a fifth of their median glass to glass (stages all missing would sum to 0).
    let with_frames: Vec<&RecvLine> = got.iter().filter(|l| l.g2g_ms.is_some()).collect();
    let staged: Vec<(f64, cg_receiver::G2gStages)> = with_frames
        .iter()
        .filter_map(|l| Some((l.g2g_ms?, l.g2g_stages?)))
        .collect();
    assert!(
        staged.len() * 10 >= with_frames.len() * 9,
        "stages on {} of {} lines",
        staged.len(),
        with_frames.len()
    );
    let mut sums = Vec::new();
    let mut latencies = Vec::new();
    for (g, s) in &staged {
        let parts = [
            s.encode_ms,
            s.queue_ms,
            s.pacing_ms,
            s.network_ms,
            s.jitter_buffer_ms,
            s.decode_ms,
        ];
        assert!(parts.iter().all(|p| p.is_finite() && *p >= 0.0), "{s:?}");
        sums.push(parts.iter().sum::<f64>());
        latencies.push(*g);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (sum, g) = (median(&mut sums), median(&mut latencies));
    eprintln!(
        "stages add up to {sum:.1} ms against glass to glass {g:.1} ms (medians of {} records)",
        staged.len()
    );
    assert!(
        (sum - g).abs() <= 2f64.max(g / 5.0),
        "the stages' sums (median {sum:.1} ms) against glass to glass (median {g:.1} ms)"
    );
    // The gaming profile asks the receiver to render at once, and it hears so.
    assert_eq!(r.playout_delay_ms, Some([0.0, 0.0]));
    assert!(r.webrtc_freezes <= 1, "{} freezes", r.webrtc_freezes);
}

/// `cg-send --stamp` draws each picture's number; `cg-recv --reference` makes the source
/// picture again and scores what it decoded: well against the right source, as noise against
/// another one.
#[test]
fn stamped_pictures_are_scored_against_the_source_the_receiver_is_given() {
    let psnr = |reference: &str| {
        let (_, rstats) = loopback(
            &[
                "--cc",
                "gcc",
                "--pattern",
                "camera",
                "--stamp",
                "--width",
                "320",
                "--height",
                "180",
                "--start-bitrate",
                "1M",
                "--duration",
                "4s",
            ],
            &["--cc", "gcc", "--reference", reference],
        );
        let last: RecvLine = serde_json::from_str(rstats.lines().last().unwrap()).unwrap();
        (last.psnr_db, last.pictures_scored)
    };
    let (right, scored) = psnr("camera:320x180@30");
    let (wrong, _) = psnr("game:320x180@30");
    eprintln!("PSNR {right:?} over {scored} pictures; against another source {wrong:?}");
    assert!(scored >= 60, "{scored} pictures scored");
    assert!(right.is_some_and(|p| p > 22.0 && p < 60.0), "{right:?}");
    assert!(wrong.is_some_and(|p| p < 15.0), "{wrong:?}");
    // A reference that is no synthetic picture is refused before anything runs.
    let out = Command::new(recv_bin())
        .args(["--reference", "ball:320x180@30", "--duration", "1s"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("camera or game"), "{}", stderr(&out));
}

/// The model encoder at a rate and picture the real encoders cannot reach here (30 Mbit/s,
/// 1080p60), received by `cg-recv --codec model`: every record names the encoder, the frames
/// arrive and count as decoded, none is a decode error.
#[test]
fn the_model_encoder_at_30_mbps_over_loopback_is_received_and_counted() {
    let (send, rstats) = loopback(
        &[
            "--cc",
            "scream",
            "--encoder",
            "model",
            "--pattern",
            "game",
            "--width",
            "1920",
            "--height",
            "1080",
            "--fps",
            "60",
            "--start-bitrate",
            "20M",
            "--max-bitrate",
            "30M",
            "--duration",
            "4s",
        ],
        &["--cc", "scream", "--codec", "model", "--fps", "60"],
    );
    let sent: Vec<serde_json::Value> = String::from_utf8(send.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("cg-send --json lines parse"))
        .collect();
    let got: Vec<serde_json::Value> = rstats
        .lines()
        .map(|l| serde_json::from_str(l).expect("cg-recv stats lines parse"))
        .collect();
    assert!(sent.iter().all(|l| l["encoder"] == "model"));
    let (s, r) = (sent.last().unwrap(), got.last().unwrap());
    let frames_sent = s["frames_sent"].as_u64().unwrap();
    let decoded = r["frames_decoded"].as_u64().unwrap();
    assert!(
        frames_sent >= 200,
        "≈240 frames in 4 s at 60 fps: {frames_sent}"
    );
    assert!(
        decoded * 10 >= frames_sent * 9,
        "decoded {decoded} of {frames_sent}"
    );
    assert_eq!(r["decode_errors"], 0);
    assert_eq!(
        (r["width"].as_u64(), r["height"].as_u64()),
        (Some(1920), Some(1080))
    );
    assert!(
        sent.iter()
            .any(|l| l["encoder_bps"].as_u64() > Some(15_000_000)),
        "the model produced its megabits"
    );
}

#[test]
fn the_model_encoder_is_refused_where_pictures_are_needed() {
    let o = run(
        &send_bin(),
        &[
            "--to",
            "127.0.0.1:9",
            "--codec",
            "model",
            "--source",
            "screen",
        ],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("takes no file, screen or camera"),
        "{}",
        stderr(&o)
    );
    let o = run(&recv_bin(), &["--webrtc", "whip", "--codec", "model"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("not from a WHIP publisher"),
        "{}",
        stderr(&o)
    );
}
