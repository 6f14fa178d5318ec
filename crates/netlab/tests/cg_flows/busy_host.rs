//! Issue #37: glass-to-glass latency on a busy host (busy loops beside the endpoints), plain
//! RTP and Chromium viewing a game, and the CPU adaptation's over-use rule.

use super::*;

/// Issue #37: 1280×720 camera video capped at 5 Mbit/s over a clean 50 Mbit/s link, send-side
/// GCC, on a busy host (`[load]`: two busy loops at nice 19, the endpoints at nice 0 as a user
/// starts them), judged by [`plain_glass_to_glass`]. Runs and their figures:
/// `docs/notes/2026-11-28.md`. The pacer keeping up with its input matters here only when
/// GCC's pacing rate sits under the encoder's wire rate, which depends on its capacity
/// estimate, so that mechanism's own guard is the pacer's unit test
/// `a_rate_based_pacer_keeps_up_with_input_faster_than_its_rate`.
#[test]
#[cfg_attr(
    unoptimized,
    ignore = "judges speed and quality: run optimised (`--release`; `cargo xtask test` does)"
)]
fn camera_720p_on_a_busy_host_keeps_glass_to_glass_latency_low() {
    twice("busy-host", |attempt| {
        plain_glass_to_glass(&format!("busy-host-{attempt}"), "gcc", 40, BUSY_HOST)
    });
}

/// Issue #37's judged matrix in cg-recv: each controller, idle and on a busy host, 120 s of
/// the camera picture over the clean link, judged by [`plain_glass_to_glass`].
#[test]
#[ignore = "issue #37, long (6 × 120 s): run with `cargo xtask test --long`"]
fn plain_judged_matrix_every_controller_idle_and_busy() {
    let mut why = Vec::new();
    for controller in ["gcc", "gcc-remb", "scream"] {
        for load in ["", BUSY_HOST] {
            let busy = if load.is_empty() { "idle" } else { "busy" };
            why.extend(plain_glass_to_glass(
                &format!("plain-{controller}-{busy}"),
                controller,
                120,
                load,
            ));
        }
    }
    assert!(why.is_empty(), "{}", why.join("; "));
}

/// cg-send → cg-recv with `controller`, 1280×720 camera capped at 5 Mbit/s over the clean
/// 50 Mbit/s link for `secs`, `load` (a `[load]` table, or empty) beside it. The real-time
/// path must hold no backlog. From 15 s to the end: the median of cg-recv's per-report
/// glass-to-glass medians within issue #37's 50 ms, and the 99th percentile of its last 256
/// frames within 100 ms at every report (the worst 8-s window, stricter than the issue's
/// p99 over the run); at most 3 frames dropped by the sender; at least 97 % decoded; the
/// pictures' luma PSNR against the source (`--stamp`, `--reference`) 30–50 dB. Returns what
/// failed.
fn plain_glass_to_glass(name: &str, controller: &str, secs: u32, load: &str) -> Vec<String> {
    let busy = if load.is_empty() { "idle" } else { "busy" };
    let (_summary, out) = match webrtc_run(
        name,
        CLEAN_50MBIT,
        "1ms",
        controller,
        "not_ect",
        &format!(r#"{CAMERA_720P}, "--stamp""#),
        "off",
        secs,
        load,
    ) {
        Ok(r) => r,
        Err(e) => return vec![e],
    };
    let t0 = t0(&out);
    let recv = lines(&out.join("raw/cg-recv-cg.jsonl"));
    let sent = lines(&out.join("raw/cg-send-cg.jsonl"));
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
    let (Some(ls), Some(lr)) = (sent.last(), recv.last()) else {
        return vec![format!("{controller} {busy}: no cg statistics")];
    };
    let late: Vec<&Value> = recv.iter().filter(|l| run_t(l, t0) >= 15.0).collect();
    // NaN (no frame decoded in a window) fails the bound: `max` keeps it.
    let worst = late
        .iter()
        .map(|l| num(l, "g2g_p99_ms"))
        .fold(
            f64::NEG_INFINITY,
            |a, b| if b.is_nan() { b } else { a.max(b) },
        );
    let mut medians: Vec<f64> = late.iter().map(|l| num(l, "g2g_ms")).collect();
    medians.sort_by(f64::total_cmp);
    let median = medians.get(medians.len() / 2).copied().unwrap_or(f64::NAN);
    let worst_frame = late
        .iter()
        .map(|l| num(l, "g2g_max_ms"))
        .fold(f64::NEG_INFINITY, f64::max);
    let (dropped, frames) = (num(ls, "frames_dropped"), num(ls, "frames_encoded"));
    let decoded = num(lr, "frames_decoded");
    let stages = late
        .iter()
        .rev()
        .find(|l| l["g2g_stages"].is_object())
        .map(|l| l["g2g_stages"].to_string());
    // Picture quality from 15 s: the mean of the reports' PSNR means, the lowest p5.
    let psnr: Vec<f64> = late
        .iter()
        .map(|l| num(l, "psnr_db"))
        .filter(|p| !p.is_nan())
        .collect();
    let psnr_mean = psnr.iter().sum::<f64>() / psnr.len() as f64;
    let psnr_low = late
        .iter()
        .map(|l| num(l, "psnr_p5_db"))
        .fold(f64::INFINITY, f64::min);
    eprintln!(
        "cg-recv, 720p camera, {controller}, {busy} host: g2g from 15 s: median {median:.1} ms, p99 worst {worst:.1} ms over {} records, worst frame {worst_frame:.1} ms; sender dropped {dropped} of {frames} frames; decoded {decoded}; PSNR {psnr_mean:.2} dB (lowest p5 {psnr_low:.2}, {} pictures scored); last stages {}",
        late.len(),
        num(lr, "pictures_scored"),
        stages.unwrap_or_default(),
    );
    let mut why = Vec::new();
    if median.is_nan() || median > 50.0 {
        why.push(format!("glass-to-glass median {median:.1} ms (> 50 ms)"));
    }
    if late.is_empty() || worst.is_nan() || worst > 100.0 {
        why.push(format!(
            "glass-to-glass p99 reached {worst:.1} ms (> 100 ms)"
        ));
    }
    if dropped.is_nan() || dropped > 3.0 {
        why.push(format!("the sender dropped {dropped} frames (> 3)"));
    }
    // Every controller holds 5 Mbit/s here: 33.0–33.1 dB, p5 31.9 (docs/notes/2026-11-29.md).
    // A scorer matching the wrong picture scores near 10 dB, one comparing a picture with
    // itself 100.
    if !(30.0..=50.0).contains(&psnr_mean) {
        why.push(format!("picture quality {psnr_mean:.2} dB (not 30–50 dB)"));
    }
    if !(frames > 0.0 && decoded >= 0.97 * frames) {
        why.push(format!("decoded {decoded} of {frames} frames (< 97 %)"));
    }
    why.into_iter()
        .map(|w| format!("{controller} {busy}: {w}"))
        .collect()
}

/// Issue #37 in the browser: Chromium views a 1280×720 stream capped at 5 Mbit/s over a clean
/// 50 Mbit/s link, send-side GCC, `--profile gaming`, on a busy host (two busy loops at nice
/// 19), judged from 10 s on what Chromium's `getStats()` says (netlab's viewer summary): no
/// freeze by WebRTC's rule, the full frame rate, 720p held without a switch, and a mean
/// jitter-buffer delay within issue #37's 30 ms (it holds each frame's assembly time, so a
/// frame paced over most of a frame interval shows in it). Runs and their figures:
/// `docs/notes/2026-11-28.md`.
fn chromium_views_gaming_on_a_busy_host(name: &str, picture: &str, codec: &str) {
    let why = chromium_views_gaming(name, "gcc", picture, codec, 30, BUSY_HOST, 0);
    assert!(why.is_empty(), "{}", why.join("; "));
}

/// Chromium views `picture` at 1280×720 (`--profile gaming`, `codec`) from cg-send with
/// `controller` over the clean 50 Mbit/s link for `secs`, `load` (a `[load]` table, or empty)
/// beside it.
/// Judged on Chromium's own figures from 10 s (issue #37): no freeze, at least 29 fps, a mean
/// jitter-buffer delay of at most 30 ms, at most `switches` resolution switches and 720p held
/// (where the host cannot encode 720p within the CPU adaptation's budget, one step down to
/// 540p, as that rule asks), the latency's stages reported, and the page's picture-quality
/// scores.
/// Returns what failed. SCReAM runs on RFC 8888, which Chromium sends behind its field trial.
fn chromium_views_gaming(
    name: &str,
    controller: &str,
    picture: &str,
    codec: &str,
    secs: u32,
    load: &str,
    switches: u32,
) -> Vec<String> {
    let trial = if controller == "scream" {
        r#"recv_args = ["--force-fieldtrials=WebRTC-RFC8888CongestionControlFeedback/Enabled,offer:true/"]"#
    } else {
        ""
    };
    let (summary, out) = match webrtc_run(
        name,
        CLEAN_50MBIT,
        "1ms",
        controller,
        "not_ect",
        &format!(
            r#"{}, "--codec", "{codec}", "--profile", "gaming", "--stamp""#,
            CAMERA_720P.replace("camera", picture)
        ),
        "chromium",
        secs,
        &format!("{trial}\n{load}"),
    ) {
        Ok(r) => r,
        Err(e) => return vec![e],
    };
    // The encoder's busy share at 720p (cg-send's `encode_usage` over the last 5 s, the CPU
    // adaptation's signal), and whether it was over the adaptation's threshold at two checks
    // in a row.
    let usage: Vec<(f64, f64)> = lines(&out.join("raw/cg-send-cg.jsonl"))
        .iter()
        .filter(|l| num(l, "width") == 1280.0)
        .map(|l| (num(l, "t"), num(l, "encode_usage")))
        .filter(|(_, u)| !u.is_nan())
        .collect();
    let usage_720p = usage
        .iter()
        .filter(|(t, _)| *t >= 10.0)
        .fold(f64::NAN, |m, (_, u)| m.max(*u));
    let cpu_bound = overused_twice(&usage);
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
    let v = &summary["metrics"]["flows"][0]["viewer"];
    let busy = if load.is_empty() { "idle" } else { "busy" };
    eprintln!(
        "Chromium, gaming profile, {picture} picture, {codec}, {controller}, {busy} host (encoder busy at 720p up to {usage_720p:.2}): {v}"
    );
    let mut why = Vec::new();
    if v["viewer"] != "chromium" {
        why.push(format!("no Chromium viewer summary: {v}"));
    }
    if num(v, "freezes") != 0.0 {
        why.push(format!("{} freezes", num(v, "freezes")));
    }
    let fps = num(v, "fps");
    if fps.is_nan() || fps < 29.0 {
        why.push(format!("{fps} fps (< 29)"));
    }
    // 720p is held unless this host cannot encode it: an encoder busy for 85 % of the frame
    // interval at two checks in a row steps the picture down by the CPU adaptation's rule
    // (README), one step.
    let (allowed, sizes) = if cpu_bound {
        (switches + 1, vec![[1280, 720], [960, 540]])
    } else {
        (switches, vec![[1280, 720]])
    };
    let switched = num(v, "resolution_switches");
    let held_ok = sizes.iter().any(|s| v["held_size"] == serde_json::json!(s));
    if switched.is_nan() || switched > f64::from(allowed) || !held_ok {
        why.push(format!(
            "{switched} resolution switches (> {allowed}), held {} (encoder busy at 720p up to {usage_720p:.2})",
            v["held_size"]
        ));
    }
    // The page's picture quality: scored about twice a second, and in the range the 720p
    // camera and game pictures score at 5 Mbit/s in VP8 and x264 (30.7–34.7 dB measured, 28 at
    // 540p).
    let (psnr, scored) = (num(v, "psnr_db"), num(v, "psnr_scored"));
    if outside(psnr, 26.0, 45.0) || outside(scored, f64::from(secs - 10), f64::INFINITY) {
        why.push(format!(
            "picture quality on the page {psnr:.2} dB (not 26–45) over {scored} pictures"
        ));
    }
    let jb = num(v, "jitter_buffer_ms");
    if jb.is_nan() || jb > 30.0 {
        why.push(format!("mean jitter-buffer delay {jb} ms (> 30 ms)"));
    }
    // The gaming profile asks for no playout delay, so a complete frame goes to the decoder at
    // once: what the jitter buffer holds beyond the frame's assembly is near zero (0.1–1.2 ms
    // in 36 runs, 18.4 ms with the extension switched off; docs/notes/2026-11-29.md).
    let hold = num(v, "jitter_buffer_hold_ms");
    if outside(hold, -1.0, 5.0) {
        why.push(format!(
            "a complete frame waited {hold:.1} ms on average for its playout (not -1–5 ms)"
        ));
    }
    // The page reads each shown picture's stamp: glass to glass at display, without a
    // backlog (the busy host's failure was half a second).
    let g2g = v["g2g_ms"]["p50"].as_f64().unwrap_or(f64::NAN);
    if g2g.is_nan() || g2g > 100.0 {
        why.push(format!(
            "glass to glass on the page: median {g2g} ms (> 100 ms)"
        ));
    }
    // The browser hears each frame's sender stages (video-timing) and reports them.
    if v["stages_ms"]["pacing"].as_f64().is_none() {
        why.push(format!(
            "no latency stages from the browser: {}",
            v["stages_ms"]
        ));
    }
    why.into_iter()
        .map(|w| format!("{controller} {busy}: {w}"))
        .collect()
}

/// Issue #37's judged matrix: each controller, idle and on a busy host, 120 s of the camera
/// picture with a Chromium viewer, on the issue's bounds (at most 3 resolution switches after
/// 10 s, 720p held).
#[test]
#[ignore = "issue #37, long (6 × 120 s): run with `cargo xtask test --long`"]
fn chromium_judged_matrix_every_controller_idle_and_busy() {
    let mut why = Vec::new();
    for controller in ["gcc", "gcc-remb", "scream"] {
        for load in ["", BUSY_HOST] {
            let name = format!(
                "matrix-{controller}-{}",
                if load.is_empty() { "idle" } else { "busy" }
            );
            why.extend(chromium_views_gaming(
                &name, controller, "camera", "vp8", 120, load, 3,
            ));
        }
    }
    assert!(why.is_empty(), "{}", why.join("; "));
}

#[test]
#[cfg_attr(
    unoptimized,
    ignore = "judges speed and quality: run optimised (`--release`; `cargo xtask test` does)"
)]
fn chromium_views_a_gaming_stream_on_a_busy_host_smoothly_and_at_once() {
    chromium_views_gaming_on_a_busy_host("chromium-gaming-busy", "camera", "vp8");
}

/// The game picture cuts to a new scene every 4 s; a scene cut's frame is many times the
/// average (in either codec) and must reach the browser within the frames' cadence. H.264
/// (x264), what cloud-gaming services send and the codec the README advises for games.
#[test]
#[cfg_attr(
    unoptimized,
    ignore = "judges speed and quality: run optimised (`--release`; `cargo xtask test` does)"
)]
fn chromium_views_an_h264_game_on_a_busy_host_without_a_freeze_at_scene_cuts() {
    chromium_views_gaming_on_a_busy_host("chromium-game-busy-h264", "game", "x264");
}

/// The same game in VP8 (`--codec vp8` under the profile), whose cuts are as large and which
/// Chromium decodes slower: a cut reaches WebRTC's freeze threshold once the pacer holds it
/// near the bottleneck rate of a false over-use, which the profile's trendline detector and
/// GCC's push-back memory keep from happening (the runs: `docs/notes/2026-12-01.md`).
#[test]
#[cfg_attr(
    unoptimized,
    ignore = "judges speed and quality: run optimised (`--release`; `cargo xtask test` does)"
)]
fn chromium_views_a_vp8_game_on_a_busy_host_without_a_freeze_at_scene_cuts() {
    chromium_views_gaming_on_a_busy_host("chromium-game-busy-vp8", "game", "vp8");
}

/// cg-send's CPU adaptation steps the picture down when its encoder is busy this share of
/// the frame interval (libwebrtc's overuse threshold, cg-media's `adapt`) at two checks in a
/// row, [`CPU_WINDOW_S`] apart.
const OVERUSE: f64 = 0.85;

/// The CPU adaptation's window and check interval (s).
const CPU_WINDOW_S: f64 = 5.0;

/// Whether `usage` — (time, the encoder's busy share over the last [`CPU_WINDOW_S`]) from
/// cg-send's records — was at or above [`OVERUSE`] at two times one window apart (within a
/// record interval): what the CPU adaptation needs to step down, wherever its checks fell.
fn overused_twice(usage: &[(f64, f64)]) -> bool {
    let over: Vec<f64> = usage
        .iter()
        .filter(|(_, u)| *u >= OVERUSE)
        .map(|(t, _)| *t)
        .collect();
    over.iter()
        .any(|a| over.iter().any(|b| (b - a - CPU_WINDOW_S).abs() <= 0.15))
}

#[test]
fn overuse_counts_only_at_two_checks_a_window_apart() {
    let at = |pairs: &[(f64, f64)]| overused_twice(pairs);
    assert!(!at(&[]));
    assert!(
        !at(&[(10.0, 0.95), (10.1, 0.95), (12.0, 0.9)]),
        "one spell is one check"
    );
    assert!(at(&[(10.0, 0.9), (12.0, 0.5), (15.1, 0.86)]));
    assert!(!at(&[(10.0, 0.9), (15.0, 0.84)]));
}
