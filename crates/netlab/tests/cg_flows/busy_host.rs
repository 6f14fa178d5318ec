//! Issue #37: glass-to-glass latency on a busy host (busy loops beside the endpoints), plain
//! RTP and Chromium viewing a game, and the CPU adaptation's over-use rule.

use std::ops::RangeInclusive;

use super::*;

/// cg-recv's glass-to-glass median from 15 s (ms): issue #37's 50 ms above.
const G2G_MEDIAN_MS: RangeInclusive<f64> = 5.0..=50.0;

/// cg-recv's glass-to-glass 99th percentile in its worst 8-s window from 15 s (ms): issue
/// #37's 100 ms above.
const G2G_P99_MS: RangeInclusive<f64> = 5.0..=100.0;

/// The median share of the frame interval cg-send's encoder is busy from 15 s: under the CPU
/// adaptation's [`OVERUSE`] with a margin, or the adaptation steps the picture down. What the
/// encoder needs depends on how fast the machine runs that day, so this is no guard of the
/// endpoints' priority above a load: the test reads that from their `nice` directly. The runs
/// it was set from: `docs/notes/2026-12-07.md`.
const ENCODER_BUSY: RangeInclusive<f64> = 0.05..=0.78;

/// Chromium's mean jitter-buffer delay from 10 s (ms): issue #37's 30 ms above.
const JITTER_BUFFER_MS: RangeInclusive<f64> = 0.0..=30.0;

/// The page's glass-to-glass median at display (ms): no backlog (the busy host's failure
/// was half a second).
const PAGE_G2G_MEDIAN_MS: RangeInclusive<f64> = 5.0..=100.0;

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
    judge_gcc_glass_to_glass("busy-host", 40, BUSY_HOST);
}

/// The same beside a game at normal priority ([`GAME_AT_NORMAL_PRIORITY`]), on the same
/// bounds: cg-send and cg-recv raise themselves above the game (`--nice`), so the encoder
/// keeps its CPU. It guards netlab starting them where they raise themselves, which inside
/// its user namespace they cannot do themselves. The viewer is cg-recv: Chromium at the
/// game's priority on the same two cores would judge the viewer's host, which in a
/// deployment is another machine.
#[test]
#[cfg_attr(
    unoptimized,
    ignore = "judges speed and quality: run optimised (`--release`; `cargo xtask test` does)"
)]
fn camera_720p_beside_a_game_at_normal_priority_keeps_glass_to_glass_latency_low() {
    judge_gcc_glass_to_glass("beside-game", 30, GAME_AT_NORMAL_PRIORITY);
}

/// [`plain_glass_to_glass`] with send-side GCC for `secs` beside `load`, over the runs.
fn judge_gcc_glass_to_glass(name: &str, secs: u32, load: &str) {
    judge_runs(name, |run, spread| {
        plain_glass_to_glass(&format!("{name}-{run}"), "gcc", secs, load, run, spread);
    });
}

/// Issue #37's judged matrix in cg-recv: each controller, idle and on a busy host, 120 s of
/// the camera picture over the clean link, judged by [`plain_glass_to_glass`].
#[test]
#[ignore = "issue #37, long (6 × 120 s): run with `cargo xtask test --long`"]
fn plain_judged_matrix_every_controller_idle_and_busy() {
    judge_runs("plain matrix", |run, spread| {
        for controller in ["gcc", "gcc-remb", "scream"] {
            for load in ["", BUSY_HOST] {
                let busy = if load.is_empty() { "idle" } else { "busy" };
                plain_glass_to_glass(
                    &format!("plain-{controller}-{busy}-{run}"),
                    controller,
                    120,
                    load,
                    run,
                    spread,
                );
            }
        }
    });
}

/// cg-send → cg-recv with `controller`, 1280×720 camera capped at 5 Mbit/s over the clean
/// 50 Mbit/s link for `secs`, `load` (a `[load]` table, or empty) beside it. The real-time
/// path must hold no backlog. From 15 s to the end: the median of cg-recv's per-report
/// glass-to-glass medians within issue #37's 50 ms, and the 99th percentile of its last 256
/// frames within 100 ms at every report (the worst 8-s window, stricter than the issue's
/// p99 over the run); the encoder's median busy share within [`ENCODER_BUSY`]; on a loaded
/// host, cg-send and cg-recv at [`cg_host::REALTIME_NICE`]; at most 3 frames dropped by the
/// sender; at least 97 % decoded; the
/// pictures' luma PSNR against the source (`--stamp`, `--reference`) 30–50 dB. Records run
/// `run`'s figures into `spread`, each named after the controller and the load.
fn plain_glass_to_glass(
    name: &str,
    controller: &str,
    secs: u32,
    load: &str,
    run: u64,
    spread: &mut Spread,
) {
    let busy = if load.is_empty() { "idle" } else { "busy" };
    let figure = |what: &str| format!("{controller} {busy}: {what}");
    let misses = spread.misses();
    let (_summary, out) = match webrtc_run(
        name,
        run,
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
        Err(e) => return spread.require(run, false, e),
    };
    let t0 = t0(&out);
    let recv = lines(&out.join("raw/cg-recv-cg.jsonl"));
    let sent = lines(&out.join("raw/cg-send-cg.jsonl"));
    let (Some(ls), Some(lr)) = (sent.last(), recv.last()) else {
        return spread.require(run, false, figure("no cg statistics"));
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
    let g2g_median = median(late.iter().map(|l| num(l, "g2g_ms")).collect());
    let worst_frame = late
        .iter()
        .map(|l| num(l, "g2g_max_ms"))
        .fold(f64::NEG_INFINITY, f64::max);
    // The encoder's busy share of the frame interval (cg-send's `encode_usage`, the CPU
    // adaptation's signal) from 15 s, median.
    let usage = median(
        sent.iter()
            .filter(|l| run_t(l, t0) >= 15.0)
            .map(|l| num(l, "encode_usage"))
            .filter(|u| !u.is_nan())
            .collect(),
    );
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
    // What holds frames in the pacer: the link's push-back (GCC's over-uses, its standing-
    // queue cuts) and the pacing rate it left, from 15 s.
    let pacing_low = sent
        .iter()
        .filter(|l| run_t(l, t0) >= 15.0)
        .map(|l| num(l, "pacing_bps"))
        .fold(f64::INFINITY, f64::min);
    eprintln!(
        "cg-recv, 720p camera, {controller}, {busy} host: g2g from 15 s: median {g2g_median:.1} ms, p99 worst {worst:.1} ms over {} records, worst frame {worst_frame:.1} ms; sender dropped {dropped} of {frames} frames; decoded {decoded}; PSNR {psnr_mean:.2} dB (lowest p5 {psnr_low:.2}, {} pictures scored); sender's over-uses {}, standing-queue cuts {}, lowest pacing rate {:.1} Mbit/s; last stages {}",
        late.len(),
        num(lr, "pictures_scored"),
        num(&ls["extra"], "overuses"),
        num(&ls["extra"], "standing_decreases"),
        pacing_low / 1e6,
        stages.unwrap_or_default(),
    );
    spread.check(
        run,
        figure("glass-to-glass median (ms)"),
        g2g_median,
        G2G_MEDIAN_MS,
    );
    // No window without a decoded frame: `worst` is NaN then.
    let worst = if late.is_empty() { f64::NAN } else { worst };
    spread.check(
        run,
        figure("glass-to-glass p99, worst window (ms)"),
        worst,
        G2G_P99_MS,
    );
    spread.check(
        run,
        figure("encoder's busy share of the frame interval, median"),
        usage,
        ENCODER_BUSY,
    );
    // On a loaded host the endpoints run above the load, as they raise themselves on a
    // host (netlab starts them there: inside its user namespace they may not raise
    // themselves).
    if !load.is_empty() {
        for (who, last) in [("cg-send", ls), ("cg-recv", lr)] {
            let nice = last["nice"].as_i64();
            spread.require(
                run,
                nice == Some(i64::from(cg_host::REALTIME_NICE)),
                format!(
                    "{who} ran at nice {nice:?}, not {} above the load",
                    cg_host::REALTIME_NICE
                ),
            );
        }
    }
    spread.check(
        run,
        figure("frames dropped by the sender"),
        dropped,
        0.0..=3.0,
    );
    // Every controller holds 5 Mbit/s here: 33.0–33.1 dB, p5 31.9 (docs/notes/2026-11-29.md).
    // A scorer matching the wrong picture scores near 10 dB, one comparing a picture with
    // itself 100.
    spread.check(run, figure("PSNR (dB)"), psnr_mean, 30.0..=50.0);
    let share = if frames > 0.0 {
        decoded / frames
    } else {
        f64::NAN
    };
    spread.check(
        run,
        figure("decoded share of the frames encoded"),
        share,
        0.97..=1.0,
    );
    remove_unless_missed(spread, misses, &out);
}

/// The median of `v` (the upper one of an even count); NaN when `v` is empty.
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Issue #37 in the browser: Chromium views a 1280×720 stream capped at 5 Mbit/s over a clean
/// 50 Mbit/s link, send-side GCC, `--profile gaming`, on a host loaded by `load` (a `[load]`
/// table), judged from 10 s on what Chromium's `getStats()` says (netlab's viewer summary): no
/// freeze by WebRTC's rule, the full frame rate, 720p held without a switch, and a mean
/// jitter-buffer delay within issue #37's 30 ms (it holds each frame's assembly time, so a
/// frame paced over most of a frame interval shows in it). Runs and their figures:
/// `docs/notes/2026-11-28.md`.
fn chromium_views_gaming_on_a_busy_host(name: &str, picture: &str, codec: &str, load: &str) {
    judge_runs(name, |run, spread| {
        let viewing = Viewing {
            picture,
            codec,
            load,
            ..Viewing::camera("gcc", "")
        };
        chromium_views_gaming(&format!("{name}-{run}"), &viewing, run, spread);
    });
}

/// What Chromium views in [`chromium_views_gaming`], and on which page.
struct Viewing<'a> {
    controller: &'a str,
    /// `camera` or `game`, at 1280×720.
    picture: &'a str,
    /// cg-send's `--codec`.
    codec: &'a str,
    secs: u32,
    /// A `[load]` table, or empty for an idle host.
    load: &'a str,
    /// Resolution switches allowed from 10 s.
    switches: u32,
    /// netlab's `webrtc` mode: `chromium` (cg's page, which also reads the pictures' stamps
    /// and has them scored) or `chromium_whep_js` (the independent page, getStats() only).
    page: &'a str,
}

impl<'a> Viewing<'a> {
    /// The camera picture in VP8 for 30 s on cg's page, with no switch allowed, beside `load`.
    fn camera(controller: &'a str, load: &'a str) -> Self {
        Self {
            controller,
            picture: "camera",
            codec: "vp8",
            secs: 30,
            load,
            switches: 0,
            page: "chromium",
        }
    }
}

/// Chromium views `v.picture` at 1280×720 (`--profile gaming`) from cg-send over the clean
/// 50 Mbit/s link.
/// Judged on Chromium's own figures from 10 s (issue #37): no freeze, at least 29 fps, a mean
/// jitter-buffer delay of at most 30 ms, at most `v.switches` resolution switches and 720p held
/// (where the host cannot encode 720p within the CPU adaptation's budget, one step down to
/// 540p, as that rule asks), the latency's stages reported, and on cg's page the pictures'
/// glass to glass and quality scores.
/// Records run `run`'s figures into `spread`, each named after the controller and the load.
/// SCReAM runs on RFC 8888, which Chromium sends behind its field trial.
fn chromium_views_gaming(name: &str, v: &Viewing<'_>, run: u64, spread: &mut Spread) {
    let Viewing {
        controller,
        picture,
        codec,
        secs,
        load,
        switches,
        page,
    } = *v;
    let busy = if load.is_empty() { "idle" } else { "busy" };
    let figure = |what: &str| format!("{controller} {busy}: {what}");
    let misses = spread.misses();
    let trial = if controller == "scream" {
        r#"recv_args = ["--force-fieldtrials=WebRTC-RFC8888CongestionControlFeedback/Enabled,offer:true/"]"#
    } else {
        ""
    };
    let (summary, out) = match webrtc_run(
        name,
        run,
        CLEAN_50MBIT,
        "1ms",
        controller,
        "not_ect",
        &format!(
            r#"{}, "--codec", "{codec}", "--profile", "gaming", "--stamp""#,
            CAMERA_720P.replace("camera", picture)
        ),
        page,
        secs,
        &format!("{trial}\n{load}"),
    ) {
        Ok(r) => r,
        Err(e) => return spread.require(run, false, e),
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
    let v = &summary["metrics"]["flows"][0]["viewer"];
    eprintln!(
        "Chromium ({page}), gaming profile, {picture} picture, {codec}, {controller}, {busy} host (encoder busy at 720p up to {usage_720p:.2}): {v}"
    );
    // The independent page is the one netlab wrote and Chromium opened.
    let independent = out.join("raw/whep-js-viewer-cg.html").is_file();
    spread.require(
        run,
        independent == (page == "chromium_whep_js"),
        figure(&format!("page {page}, whep.js page written: {independent}")),
    );
    if v["viewer"] != "chromium" {
        return spread.require(
            run,
            false,
            figure(&format!("no Chromium viewer summary: {v}")),
        );
    }
    spread.check(run, figure("freezes"), num(v, "freezes"), 0.0..=0.0);
    // What cg-send saw of itself: its session loop, its encoder and the viewer's driver kept
    // turning (each loop or encoder stall is logged on stderr with what every thread was
    // doing).
    let last = lines(&out.join("raw/cg-send-cg.jsonl"))
        .last()
        .cloned()
        .unwrap_or_default();
    for what in ["loop_stalls", "encoder_stalls", "driver_skips"] {
        spread.check(
            run,
            figure(&format!("cg-send's {what}")),
            num(&last, what),
            0.0..=0.0,
        );
    }
    spread.check(
        run,
        figure("decoded frame rate (fps)"),
        num(v, "fps"),
        29.0..=30.5,
    );
    // 720p is held unless this host cannot encode it: an encoder busy for 85 % of the frame
    // interval at two checks in a row steps the picture down by the CPU adaptation's rule
    // (README), one step.
    let (allowed, sizes) = if cpu_bound {
        (switches + 1, vec![[1280, 720], [960, 540]])
    } else {
        (switches, vec![[1280, 720]])
    };
    spread.check(
        run,
        figure("resolution switches"),
        num(v, "resolution_switches"),
        0.0..=f64::from(allowed),
    );
    spread.require(
        run,
        sizes.iter().any(|s| v["held_size"] == serde_json::json!(s)),
        figure(&format!(
            "held {} (encoder busy at 720p up to {usage_720p:.2})",
            v["held_size"]
        )),
    );
    spread.check(
        run,
        figure("mean jitter-buffer delay (ms)"),
        num(v, "jitter_buffer_ms"),
        JITTER_BUFFER_MS,
    );
    // The gaming profile asks for no playout delay, so a complete frame goes to the decoder at
    // once: what the jitter buffer holds beyond the frame's assembly is near zero (0.1–1.2 ms
    // in 36 runs, 18.4 ms with the extension switched off; docs/notes/2026-11-29.md).
    spread.check(
        run,
        figure("a complete frame's wait for its playout (ms)"),
        num(v, "jitter_buffer_hold_ms"),
        -1.0..=5.0,
    );
    if page == "chromium" {
        // cg's page scores the pictures about twice a second, in the range the 720p camera
        // and game pictures score at 5 Mbit/s in VP8 and x264 (30.7–34.7 dB measured, 28 at
        // 540p).
        spread.check(
            run,
            figure("PSNR on the page (dB)"),
            num(v, "psnr_db"),
            26.0..=45.0,
        );
        spread.check(
            run,
            figure("pictures scored on the page"),
            num(v, "psnr_scored"),
            f64::from(secs - 10)..=f64::from(secs * 3),
        );
        // It reads each shown picture's stamp: glass to glass at display, without a
        // backlog (the busy host's failure was half a second).
        spread.check(
            run,
            figure("glass to glass on the page, median (ms)"),
            v["g2g_ms"]["p50"].as_f64().unwrap_or(f64::NAN),
            PAGE_G2G_MEDIAN_MS,
        );
    }
    // The browser hears each frame's sender stages (video-timing) and reports them.
    spread.require(
        run,
        v["stages_ms"]["pacing"].as_f64().is_some(),
        figure(&format!(
            "no latency stages from the browser: {}",
            v["stages_ms"]
        )),
    );
    remove_unless_missed(spread, misses, &out);
}

/// Issue #37's judged matrix: each controller, idle and on a busy host, 120 s of the camera
/// picture with a Chromium viewer, on the issue's bounds (at most 3 resolution switches after
/// 10 s, 720p held).
#[test]
#[ignore = "issue #37, long (6 × 120 s): run with `cargo xtask test --long`"]
fn chromium_judged_matrix_every_controller_idle_and_busy() {
    judge_runs("chromium matrix", |run, spread| {
        for controller in ["gcc", "gcc-remb", "scream"] {
            for load in ["", BUSY_HOST] {
                let name = format!(
                    "matrix-{controller}-{}-{run}",
                    if load.is_empty() { "idle" } else { "busy" }
                );
                let viewing = Viewing {
                    secs: 120,
                    switches: 3,
                    ..Viewing::camera(controller, load)
                };
                chromium_views_gaming(&name, &viewing, run, spread);
            }
        }
    });
}

#[test]
#[cfg_attr(
    unoptimized,
    ignore = "judges speed and quality: run optimised (`--release`; `cargo xtask test` does)"
)]
fn chromium_views_a_gaming_stream_on_a_busy_host_smoothly_and_at_once() {
    chromium_views_gaming_on_a_busy_host("chromium-gaming-busy", "camera", "vp8", BUSY_HOST);
}

/// The same viewed on a page that shares no code with cg (netlab's `chromium_whep_js`:
/// medooze's whip-whep client, opened from a file, so another origin than cg-send's): it
/// offers audio as well as video, both `sendrecv`, posts its offer before it has a candidate
/// and trickles them by `PATCH`, which cg-send refuses (`405`). Judged as on cg's page, less
/// what only cg's page measures (the stamps' glass to glass, picture quality).
#[test]
#[cfg_attr(
    unoptimized,
    ignore = "judges speed and quality: run optimised (`--release`; `cargo xtask test` does)"
)]
fn an_independent_whep_page_views_a_gaming_stream_on_a_busy_host_smoothly() {
    judge_runs("whep-js-gaming-busy", |run, spread| {
        let viewing = Viewing {
            page: "chromium_whep_js",
            ..Viewing::camera("gcc", BUSY_HOST)
        };
        chromium_views_gaming(&format!("whep-js-gaming-busy-{run}"), &viewing, run, spread);
    });
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
    chromium_views_gaming_on_a_busy_host("chromium-game-busy-h264", "game", "x264", BUSY_HOST);
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
    chromium_views_gaming_on_a_busy_host("chromium-game-busy-vp8", "game", "vp8", BUSY_HOST);
}

/// A wedged encoder while Chromium views the 720p camera picture (`--profile gaming`, VP8,
/// idle host): cg-send wedges its own pipeline 15 s in (`--wedge-encoder-at`, feature
/// `testing`), notices the stall and rebuilds the encoder. The viewer sees one freeze, no
/// longer than the stall's notice and the rebuild ([`RESTART_FREEZE_MS`]), then the picture
/// at 720p and the full frame rate again (from 5 s after the wedge); cg-send counts one
/// stall and one restart.
#[test]
#[cfg_attr(
    unoptimized,
    ignore = "judges speed and quality: run optimised (`--release`; `cargo xtask test` does)"
)]
fn a_wedged_encoder_is_rebuilt_and_a_chromium_viewer_sees_one_short_freeze() {
    judge_runs("wedged encoder", |run, spread| {
        let misses = spread.misses();
        let (summary, out) = match webrtc_run(
            &format!("wedge-{run}"),
            run,
            CLEAN_50MBIT,
            "1ms",
            "gcc",
            "not_ect",
            &format!(
                r#"{CAMERA_720P}, "--codec", "vp8", "--profile", "gaming", "--wedge-encoder-at", "{WEDGE_AT_S}s""#
            ),
            "chromium",
            30,
            "",
        ) {
            Ok(r) => r,
            Err(e) => return spread.require(run, false, e),
        };
        let last = lines(&out.join("raw/cg-send-cg.jsonl"))
            .last()
            .cloned()
            .unwrap_or_default();
        // Chromium's decoded frame rate from 5 s after the wedge (both count from cg-send's
        // start) to its last report.
        let reports = chromium_inbound(&out);
        let from = reports.iter().rev().find(|(t, _)| *t <= WEDGE_AT_S + 5.0);
        let after = match (from, reports.last()) {
            (Some((a, fa)), Some((b, fb))) if b > a => {
                (num(fb, "framesDecoded") - num(fa, "framesDecoded")) / (b - a)
            }
            _ => f64::NAN,
        };
        let v = &summary["metrics"]["flows"][0]["viewer"];
        eprintln!(
            "wedged encoder: cg-send stalls {} restarts {}; Chromium {after:.2} fps from 5 s after the wedge, {v}",
            num(&last, "encoder_stalls"),
            num(&last, "encoder_restarts"),
        );
        spread.check(
            run,
            "cg-send's encoder stalls",
            num(&last, "encoder_stalls"),
            1.0..=1.0,
        );
        spread.check(
            run,
            "cg-send's encoder restarts",
            num(&last, "encoder_restarts"),
            1.0..=1.0,
        );
        spread.check(run, "freezes", num(v, "freezes"), 1.0..=1.0);
        spread.check(
            run,
            "the freeze (ms)",
            num(v, "longest_freeze_ms"),
            RESTART_FREEZE_MS,
        );
        spread.check(
            run,
            "frame rate after the restart (fps)",
            after,
            29.0..=30.5,
        );
        spread.require(
            run,
            v["held_size"] == serde_json::json!([1280, 720]),
            format!("held {}", v["held_size"]),
        );
        remove_unless_missed(spread, misses, &out);
    });
}

/// When [`a_wedged_encoder_is_rebuilt_and_a_chromium_viewer_sees_one_short_freeze`] wedges
/// the encoder (s into the run; its statistics window starts at 10 s).
const WEDGE_AT_S: f64 = 15.0;

/// The viewer's freeze at a wedged encoder (ms): the stall is noticed after a second without
/// a frame (cg-send's `ENCODER_STALL`), read once a statistics interval, and the rebuilt
/// pipeline's first frame, a key frame, takes its start-up; a synthetic source's pipeline is
/// rebuilt without waiting for the wedged one's teardown, which costs a camera's viewer a
/// second more. The runs it was set from: `docs/notes/2026-12-06.md`.
const RESTART_FREEZE_MS: RangeInclusive<f64> = 1000.0..=2000.0;

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
