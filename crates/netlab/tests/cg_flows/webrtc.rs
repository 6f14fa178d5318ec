//! WebRTC mode: cg-send's WHEP server against plain RTP, viewed by cg-recv or Chromium (every
//! controller, H.264, the page's picture quality, an hour's soak), SCReAM's L4S run in both
//! modes, and Chromium publishing to cg-recv over WHIP.

use super::*;

/// Issue #41's soak: Chromium views cg-send for an hour (`SOAK_SECS` sets another length)
/// over the clean 50 Mbit/s link, 720p camera picture, send-side GCC, `--profile gaming`.
/// Judged from 10 s: no freeze over 500 ms and at least 29 fps in Chromium's own figures, and
/// cg-send's memory flat, its resident set over the last fifth of the run no more than 5 %
/// plus 4 MiB above the one over the second fifth (before it the allocator is still growing
/// its pools): a leak of a kilobyte a second fails an hour's run.
#[test]
#[ignore = "issue #41, long (1 h): run with `cargo test --release -p cg-netlab --test cg_flows webrtc_soak -- --include-ignored`"]
fn webrtc_soak_an_hour_with_a_chromium_viewer_keeps_memory_flat_and_never_freezes() {
    let secs: u32 = std::env::var("SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3600);
    let (summary, out) = webrtc_run(
        "soak",
        1,
        CLEAN_50MBIT,
        "1ms",
        "gcc",
        "not_ect",
        &format!(r#"{CAMERA_720P}, "--codec", "vp8", "--profile", "gaming", "--stamp""#),
        "chromium",
        secs,
        "",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let t0 = t0(&out);
    let sent = lines(&out.join("raw/cg-send-cg.jsonl"));
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
    let rss_between = |from: f64, to: f64| {
        let mut v: Vec<f64> = sent
            .iter()
            .filter(|l| (from..to).contains(&run_t(l, t0)))
            .map(|l| num(l, "rss_kib"))
            .filter(|k| k.is_finite())
            .collect();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
    };
    let fifth = f64::from(secs) / 5.0;
    let (early, late) = (
        rss_between(fifth, 2.0 * fifth),
        rss_between(4.0 * fifth, f64::from(secs)),
    );
    let peak = sent
        .iter()
        .map(|l| num(l, "rss_kib"))
        .filter(|k| k.is_finite())
        .fold(f64::NAN, f64::max);
    let v = &summary["metrics"]["flows"][0]["viewer"];
    eprintln!(
        "soak {secs} s: cg-send resident set (median KiB) {early:.0} over the second fifth, {late:.0} over the last, peak {peak:.0}; Chromium: {v}"
    );
    let mut spread = Spread::over_runs("soak");
    spread.require(
        1,
        v["viewer"] == "chromium",
        format!("no Chromium viewer summary: {v}"),
    );
    // No freeze at all is 0 ms.
    let longest = if v["freezes"] == 0 {
        0.0
    } else {
        num(v, "longest_freeze_ms")
    };
    spread.check(1, "longest freeze (ms)", longest, 0.0..=500.0);
    spread.check(1, "decoded frame rate (fps)", num(v, "fps"), 29.0..=30.5);
    spread.check(
        1,
        "cg-send's resident set, last fifth over second fifth (KiB)",
        late - early,
        -early..=early * 0.05 + 4096.0,
    );
    spread.judge();
}

/// Issue #15's bottleneck: 2 Mbit/s DropTail (300 ms), RTT 50 ms; with 640×360 `camera`.
const WEBRTC_2MBIT: &str = r#"capacity = "2Mbit"
delay = "25ms"
qdisc = { kind = "droptail", limit = "300ms" }"#;

const WEBRTC_VIDEO: &str =
    r#""--pattern", "camera", "--width", "640", "--height", "360", "--max-bitrate", "10M""#;

/// Link utilisation and the flow's queue-delay p95 of a run.
fn u_and_q95(s: &Value) -> (f64, f64) {
    let m = &s["metrics"];
    (
        num(&m["link"], "utilisation"),
        m["flows"][0]["qdelay_ms"]["p95"]
            .as_f64()
            .unwrap_or(f64::NAN),
    )
}

/// cg-send ↔ cg-recv in WebRTC mode (ICE, DTLS-SRTP, the SRTP tag in every packet) against
/// the same run in plain RTP mode, for both GCC modes. SCReAM's pair of runs is the L4S
/// test's ([`scream_l4s_through_dualpi2_20mbps_rtt30_plain_and_in_webrtc_mode`]): its RFC 8888
/// feedback with ECN is the harder case, and a third pair here would repeat it in CI's time.
/// Issue #15 asks for U and queue p95 within 10 %. U holds to that; the queue p95 of one 30 s
/// run does not even between two plain runs (`docs/notes/2026-11-29.md`), so the delay
/// bound is 10 % or 25 ms, whichever is larger, which still catches a WebRTC mode that lets
/// the queue build (the 300 ms buffer).
#[test]
#[cfg_attr(
    unoptimized,
    ignore = "judges speed and quality: run optimised (`--release`; `cargo xtask test` does)"
)]
fn webrtc_mode_matches_plain_rtp_for_both_gcc_modes() {
    judge_runs("WebRTC mode against plain RTP", |run, spread| {
        for cc in ["gcc", "gcc-remb"] {
            let mode_run = |mode: &str| {
                let name = format!("{mode}-{cc}-{run}");
                let v = if mode == "plain" { "off" } else { "cg" };
                webrtc_run(
                    &name,
                    run,
                    WEBRTC_2MBIT,
                    "25ms",
                    cc,
                    "not_ect",
                    WEBRTC_VIDEO,
                    v,
                    30,
                    "",
                )
            };
            let (plain, p_out) = match mode_run("plain") {
                Ok(r) => r,
                Err(e) => return spread.require(run, false, e),
            };
            let _ = std::fs::remove_dir_all(p_out.parent().unwrap());
            let (webrtc, w_out) = match mode_run("webrtc") {
                Ok(r) => r,
                Err(e) => return spread.require(run, false, e),
            };
            let ((up, qp), (uw, qw)) = (u_and_q95(&plain), u_and_q95(&webrtc));
            let recv = lines(&w_out.join("raw/cg-recv-cg.jsonl"));
            let decoded = recv.last().map_or(0.0, |l| num(l, "frames_decoded"));
            eprintln!(
                "{cc}: plain U {up:.3} q95 {qp:.1} ms; WebRTC U {uw:.3} q95 {qw:.1} ms, {decoded} frames decoded"
            );
            let _ = std::fs::remove_dir_all(w_out.parent().unwrap());
            spread.check(run, format!("{cc}: plain utilisation"), up, PLAIN_2MBIT_U);
            spread.check(
                run,
                format!("{cc}: WebRTC utilisation, relative to plain"),
                uw / up - 1.0,
                WEBRTC_RELATIVE_U,
            );
            let q_gap = (0.10 * qp).max(25.0);
            spread.check(
                run,
                format!("{cc}: WebRTC queue p95 - plain (ms)"),
                qw - qp,
                -q_gap..=q_gap,
            );
            // 30 s at 30 fps, judged from 10 s.
            spread.check(
                run,
                format!("{cc}: frames decoded over WebRTC"),
                decoded,
                500.0..=930.0,
            );
        }
    });
}

/// Plain RTP's utilisation of [`WEBRTC_2MBIT`] with [`WEBRTC_VIDEO`] for 30 s, against which
/// WebRTC mode is judged: the worst run measured less 0.04 (`docs/notes/2026-12-02-runs.md` §4).
const PLAIN_2MBIT_U: std::ops::RangeInclusive<f64> = 0.80..=1.0;

/// WebRTC mode's utilisation relative to plain RTP's. Issue #15's 10 % lies inside the
/// spread, because plain RTP's own utilisation varies from run to run as much; the range is
/// the worst run measured with a margin (`docs/notes/2026-12-02-runs.md` §4).
const WEBRTC_RELATIVE_U: std::ops::RangeInclusive<f64> = -0.15..=0.15;

/// The MIME type of the codec Chromium's last report says it decodes, from `viewer-cg.jsonl`.
fn chromium_codec(out: &Path) -> Option<String> {
    let reports = lines(&out.join("raw/viewer-cg.jsonl"));
    let stats = reports.last()?["report"]["stats"].as_array()?.clone();
    let inbound = stats
        .iter()
        .find(|s| s["type"] == "inbound-rtp" && s["kind"] == "video")?;
    let codec = stats.iter().find(|s| s["id"] == inbound["codecId"])?;
    codec["mimeType"].as_str().map(str::to_owned)
}

/// Issue #15's browser case: a headless Chromium (Debian's) views cg-send over WHEP through
/// a 2 Mbit/s DropTail bottleneck, RTT 50 ms, 30 s (as the cases below: the judge reads
/// from the first decoded frame, and 30 s keeps the CI within its 45 minutes), cg's
/// send-side GCC on Chromium's transport-wide feedback. The page posts `getStats()` every
/// second; judged on it.
#[test]
#[cfg_attr(
    unoptimized,
    ignore = "judges speed and quality: run optimised (`--release`; `cargo xtask test` does)"
)]
fn chromium_views_cg_send_over_whep_through_a_2mbps_bottleneck() {
    chromium_viewer("gcc", "gcc", "video/VP8", WEBRTC_VIDEO, "", 30);
}

/// The same with cg-send's H.264 (x264, Constrained Baseline, packetization-mode 1: the
/// profile Chromium decodes here), 30 s (measured: 829 of 834 frames decoded, no freeze, U
/// 0.920, jitter buffer 58.5 ms).
#[test]
#[cfg_attr(
    unoptimized,
    ignore = "judges speed and quality: run optimised (`--release`; `cargo xtask test` does)"
)]
fn chromium_views_an_h264_stream() {
    chromium_viewer(
        "h264",
        "gcc",
        "video/H264",
        &format!(r#"{WEBRTC_VIDEO}, "--codec", "x264""#),
        "",
        30,
    );
}

/// The same with SCReAM, on the RFC 8888 feedback Chromium offers behind its field trial
/// (measured: Chromium 156 reports every packet Not-ECT in it, so L4S cannot run with a
/// Chromium viewer; SCReAM runs on its delay signal). 30 s.
#[test]
#[cfg_attr(
    unoptimized,
    ignore = "judges speed and quality: run optimised (`--release`; `cargo xtask test` does)"
)]
fn chromium_views_scream_over_its_rfc8888_feedback() {
    chromium_viewer(
        "scream",
        "scream",
        "video/VP8",
        WEBRTC_VIDEO,
        r#"recv_args = ["--force-fieldtrials=WebRTC-RFC8888CongestionControlFeedback/Enabled,offer:true/"]"#,
        30,
    );
}

/// The same with GCC on REMB, which Chromium sends only for packets without a transport-wide
/// sequence number (libwebrtc's receive side gives those to its transport-wide feedback), so
/// cg-send leaves that extension out when its controller runs on REMB. Without REMB the
/// target climbs by the loss rule alone and the link stays far from full. 30 s.
#[test]
#[cfg_attr(
    unoptimized,
    ignore = "judges speed and quality: run optimised (`--release`; `cargo xtask test` does)"
)]
fn chromium_views_gcc_remb_on_the_rembs_it_sends() {
    chromium_viewer("remb", "gcc-remb", "video/VP8", WEBRTC_VIDEO, "", 30);
}

/// Issue #37: a browser's picture quality is scored as cg-recv's is. Two flows of the same
/// picture side by side (640×360 camera at a fixed 10 Mbit/s, no adaptation, so both encoders
/// code the same pictures at the same rate): one viewed by cg-recv (`--reference`), one by
/// Chromium, whose page posts two shown pictures a second back to cg-send for scoring. The page
/// takes the decoded luma itself (WebCodecs), so the two means differ only by which pictures
/// were scored: within [`PAGE_PSNR_GAP_DB`] either way. 25 s, judged from 10 s.
#[test]
#[cfg_attr(
    unoptimized,
    ignore = "judges speed and quality: run optimised (`--release`; `cargo xtask test` does)"
)]
fn a_browser_page_scores_picture_quality_as_cg_recv_does() {
    let send = r#""--width", "640", "--height", "360", "--fps", "30", "--pattern", "camera", "--start-bitrate", "10M", "--min-bitrate", "10M", "--max-bitrate", "10M", "--degradation", "disabled", "--codec", "vp8", "--profile", "gaming", "--stamp""#;
    let flow = |name: &str, from: &str, to: &str, webrtc: &str, recv: &str| {
        format!(
            "\n[[flows]]\nname = \"{name}\"\nkind = \"cg\"\ncontroller = \"gcc\"\nfrom = \"{from}\"\nto = \"{to}\"\nsend_args = [{send}]\n{recv}\nwebrtc = \"{webrtc}\"\n"
        )
    };
    // A Chromium viewer's flow must have its host pair to itself.
    let toml = format!(
        "name = \"cg-page-psnr\"\nduration = \"25s\"\nseed = 1\n\n[topology]\nsenders = 2\nreceivers = 2\n\n[forward]\n{CLEAN_50MBIT}\n\n[reverse]\ncapacity = \"100Mbit\"\ndelay = \"1ms\"\n\n[metrics]\nwarmup = \"10s\"\n{}{}",
        flow(
            "recv",
            "s1",
            "r1",
            "cg",
            r#"recv_args = ["--reference", "camera:640x360@30"]"#
        ),
        flow("page", "s2", "r2", "chromium", ""),
    );
    let (summary, out) = {
        let _guard = lock();
        run_netlab("page-psnr", &toml, |_| {}).unwrap_or_else(|e| panic!("{e}"))
    };
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
    let flows = &summary["metrics"]["flows"];
    let viewer = |i: usize| &flows[i]["viewer"];
    let (recv, page) = (num(viewer(0), "psnr_db"), num(viewer(1), "psnr_db"));
    let scored = num(viewer(1), "psnr_scored");
    eprintln!(
        "picture quality: cg-recv {recv:.2} dB, Chromium's page {page:.2} dB over {scored} pictures; viewers: {} / {}",
        viewer(0),
        viewer(1)
    );
    assert_eq!(
        (viewer(0)["viewer"].as_str(), viewer(1)["viewer"].as_str()),
        (Some("cg-recv"), Some("chromium"))
    );
    // Two a second over the 15 s window, less those skipped.
    assert!(scored >= 15.0, "the page had {scored} pictures scored");
    assert_eq!(
        viewer(1)["psnr_via"].as_str(),
        Some("yuv"),
        "Chromium hands the page the decoded frame"
    );
    assert!(
        !outside(page - recv, -PAGE_PSNR_GAP_DB, PAGE_PSNR_GAP_DB),
        "the page's {page:.2} dB against cg-recv's {recv:.2} dB"
    );
}

/// How far a browser page's mean PSNR may lie from cg-recv's on the same picture and rate
/// (see [`a_browser_page_scores_picture_quality_as_cg_recv_does`]): the sampling of two
/// pictures a second.
const PAGE_PSNR_GAP_DB: f64 = 0.6;

/// Chromium views cg-send (`controller`, `send_args`) over WHEP through 2 Mbit/s DropTail
/// for `secs`; `chromium_args` is a `recv_args = [...]` line of extra Chromium arguments, or
/// empty. `name` names the runs; Chromium must decode `mime`.
fn chromium_viewer(
    name: &str,
    controller: &str,
    mime: &str,
    send_args: &str,
    chromium_args: &str,
    secs: u32,
) {
    judge_runs(&format!("chromium {name}"), |run, spread| {
        let (summary, out) = match webrtc_run(
            &format!("chromium-{name}-{run}"),
            run,
            WEBRTC_2MBIT,
            "25ms",
            controller,
            "not_ect",
            send_args,
            "chromium",
            secs,
            chromium_args,
        ) {
            Ok(r) => r,
            Err(e) => return spread.require(run, false, e),
        };
        let (u, q95) = u_and_q95(&summary);
        let reports = chromium_inbound(&out);
        let codec = chromium_codec(&out);
        let sent = lines(&out.join("raw/cg-send-cg.jsonl"));
        let frames_sent = sent.last().map_or(0.0, |l| num(l, "frames_sent"));
        let _ = std::fs::remove_dir_all(out.parent().unwrap());
        let Some((_, last)) = reports.last() else {
            return spread.require(run, false, "no getStats() report from the page");
        };
        let decoded = num(last, "framesDecoded");
        let jb = num(last, "jitterBufferDelay") / num(last, "jitterBufferEmittedCount");
        // A freeze over 500 ms after the first second of video: a report interval in which
        // freezeCount rose and totalFreezesDuration grew by more than 0.5 s.
        let first = reports
            .iter()
            .find(|(_, r)| num(r, "framesDecoded") > 0.0)
            .map_or(f64::INFINITY, |(t, _)| *t);
        let long_freezes: Vec<f64> = reports
            .windows(2)
            .filter(|w| w[1].0 > first + 1.0)
            .filter(|w| {
                num(&w[1].1, "freezeCount") > num(&w[0].1, "freezeCount")
                    && num(&w[1].1, "totalFreezesDuration") - num(&w[0].1, "totalFreezesDuration")
                        > 0.5
            })
            .map(|w| w[1].0)
            .collect();
        eprintln!(
            "Chromium over WHEP, {name} ({controller}): U {u:.3}, q95 {q95:.1} ms, decoded {decoded} of {frames_sent} frames sent, mean jitter buffer {:.1} ms, freezes {} ({:.2} s), long after the first second at {long_freezes:?}",
            jb * 1e3,
            num(last, "freezeCount"),
            num(last, "totalFreezesDuration")
        );
        spread.require(
            run,
            codec.as_deref() == Some(mime),
            format!("Chromium decodes {codec:?}, not {mime}"),
        );
        spread.require(
            run,
            frames_sent > 15.0 * f64::from(secs),
            format!("cg-send sent {frames_sent} frames"),
        );
        spread.check(
            run,
            "decoded share of the frames sent",
            decoded / frames_sent,
            0.95..=1.0,
        );
        spread.check(
            run,
            "freezes over 500 ms after the first second",
            long_freezes.len() as f64,
            0.0..=0.0,
        );
        spread.check(run, "utilisation", u, CHROMIUM_2MBIT_U);
        spread.check(run, "queue p95 (ms)", q95, CHROMIUM_2MBIT_Q95_MS);
        spread.check(
            run,
            "mean jitter-buffer delay (ms)",
            jb * 1e3,
            CHROMIUM_2MBIT_JITTER_BUFFER_MS,
        );
    });
}

/// A Chromium viewer's utilisation of [`WEBRTC_2MBIT`], every controller.
const CHROMIUM_2MBIT_U: std::ops::RangeInclusive<f64> = 0.85..=1.0;

/// Its queue p95 (ms): the 300 ms buffer must not fill.
const CHROMIUM_2MBIT_Q95_MS: std::ops::RangeInclusive<f64> = 0.0..=100.0;

/// Chromium's mean jitter-buffer delay behind [`WEBRTC_2MBIT`] (ms), which holds the frames'
/// assembly at 2 Mbit/s and Chromium's own playout delay (no `--profile gaming` here).
const CHROMIUM_2MBIT_JITTER_BUFFER_MS: std::ops::RangeInclusive<f64> = 10.0..=100.0;

/// SCReAM with ECT(1) through DualPI2 at 20 Mbit/s, RTT 30 ms, in plain RTP mode and then in
/// WebRTC mode. Plain mode: U 0.80–1.0, queue delay median and p95 at most 2 ms. WebRTC mode
/// (issue #15): the CE marks must cross SRTP and the tap into cg-recv's RFC 8888 reports and
/// reach the controller, and U and the queue delay p95 stay within the same bounds as plain
/// mode's. Each mode is judged on its own bounds: the difference of two runs spreads wider
/// than either run, and a bound on it sat inside its spread.
///
/// The frames are the model encoder's (RFC 8593 sizes at 30 fps, `CG-MODEL` in WebRTC mode):
/// the test judges the controller's L4S loop, and at 20 Mbit/s a real encoder and decoder
/// keep both of this machine's vCPUs busy, which is when its hypervisor takes CPU away from the
/// whole run (issue #38 asks for the model at these rates).
#[test]
#[cfg_attr(
    unoptimized,
    ignore = "judges speed and quality: run optimised (`--release`; `cargo xtask test` does)"
)]
fn scream_l4s_through_dualpi2_20mbps_rtt30_plain_and_in_webrtc_mode() {
    let fwd = r#"capacity = "20Mbit"
delay = "15ms"
qdisc = { kind = "dualpi2" }"#;
    let video = r#""--codec", "model", "--width", "1280", "--height", "720", "--fps", "30", "--start-bitrate", "5M", "--max-bitrate", "30M""#;
    judge_runs("l4s", |run, spread| {
        let mode_run = |mode: &str| {
            let name = format!("l4s-{mode}-{run}");
            let v = if mode == "plain" { "off" } else { "cg" };
            webrtc_run(&name, run, fwd, "15ms", "scream", "ect1", video, v, 30, "")
        };
        let misses = spread.misses();
        let (plain, p_out) = match mode_run("plain") {
            Ok(r) => r,
            Err(e) => return spread.require(run, false, e),
        };
        let (up, qp) = u_and_q95(&plain);
        let median = plain["metrics"]["flows"][0]["qdelay_ms"]["p50"]
            .as_f64()
            .unwrap_or(f64::NAN);
        eprintln!("SCReAM L4S 20 Mb/s DualPI2, plain: U {up:.3}, median qdelay {median:.2} ms");
        spread.check(run, "plain: median queue delay (ms)", median, 0.0..=2.0);
        // DualPI2's L queue marks from 1 ms: SCReAM's scalable reaction keeps it there, and
        // without it (α = 0) the queue stands above the marking step.
        spread.check(run, "plain: queue delay p95 (ms)", qp, L4S_20MBIT_Q95_MS);
        spread.check(run, "plain: utilisation", up, L4S_20MBIT_U);
        // A plain run that missed keeps its output.
        remove_unless_missed(spread, misses, &p_out);
        let misses = spread.misses();
        let (webrtc, w_out) = match mode_run("webrtc") {
            Ok(r) => r,
            Err(e) => return spread.require(run, false, e),
        };
        let (uw, qw) = u_and_q95(&webrtc);
        let recv = lines(&w_out.join("raw/cg-recv-cg.jsonl"));
        let sent = lines(&w_out.join("raw/cg-send-cg.jsonl"));
        let ce_received = recv
            .last()
            .map_or(0.0, |l| l["ecn"][3].as_f64().unwrap_or(0.0));
        let ect1_received = recv
            .last()
            .map_or(0.0, |l| l["ecn"][1].as_f64().unwrap_or(0.0));
        let ce_seen = sent
            .last()
            .map_or(0.0, |l| l["extra"]["ce_packets"].as_f64().unwrap_or(0.0));
        let link_ce = num(&webrtc["metrics"]["link"], "ce_marks");
        let viewer = |k: &str| recv.last().map_or(f64::NAN, |l| num(l, k));
        eprintln!(
            "SCReAM L4S 20 Mb/s DualPI2: plain U {up:.3} q95 {qp:.2} ms; WebRTC U {uw:.3} q95 {qw:.2} ms, ECT(1) {ect1_received} and CE {ce_received} received, CE in the controller {ce_seen}, CE at the link {link_ce}; the WebRTC viewer: {} frames, {} freezes ({} ms)",
            viewer("frames_received"),
            viewer("webrtc_freezes"),
            viewer("webrtc_freeze_total_ms"),
        );
        spread.require(
            run,
            ce_received > 0.0 && ce_seen > 0.0,
            format!("CE received {ce_received}, seen by SCReAM {ce_seen}"),
        );
        spread.require(
            run,
            ect1_received >= 1000.0,
            format!("only {ect1_received} packets arrived ECT(1)"),
        );
        spread.check(run, "WebRTC: queue delay p95 (ms)", qw, L4S_20MBIT_Q95_MS);
        spread.check(run, "WebRTC: utilisation", uw, L4S_20MBIT_U);
        remove_unless_missed(spread, misses, &w_out);
    });
}

/// SCReAM's plain-RTP utilisation of the 20 Mbit/s DualPI2 link: issue #38's 0.80 below.
const L4S_20MBIT_U: std::ops::RangeInclusive<f64> = 0.80..=1.0;

/// Its plain-RTP queue delay p95 (ms): DualPI2's 1 ms marking step with a margin of a
/// millisecond (docs/notes/2026-12-03-steal.md has the spread).
const L4S_20MBIT_Q95_MS: std::ops::RangeInclusive<f64> = 0.0..=2.0;

/// Issue #15's WHIP case: headless Chromium publishes its fake camera to cg-recv
/// (`--webrtc whip --cc gcc`) through a 1.5 Mbit/s DropTail bottleneck, RTT 50 ms, 40 s.
/// Chromium runs its own GCC on the transport-wide feedback cg-recv sends: its
/// `availableOutgoingBitrate` must come to within 20 % of the bottleneck, and cg-recv must
/// decode what it sent.
#[test]
#[cfg_attr(
    unoptimized,
    ignore = "judges speed and quality: run optimised (`--release`; `cargo xtask test` does)"
)]
fn chromium_publishes_to_cg_recv_over_whip_and_its_estimate_finds_the_bottleneck() {
    let fwd = r#"capacity = "1.5Mbit"
delay = "25ms"
qdisc = { kind = "droptail", limit = "300ms" }"#;
    judge_runs("whip", |run, spread| {
        let (_, out) = match webrtc_run(
            &format!("whip-{run}"),
            run,
            fwd,
            "25ms",
            "gcc",
            "not_ect",
            "",
            "chromium_publisher",
            40,
            "",
        ) {
            Ok(r) => r,
            Err(e) => return spread.require(run, false, e),
        };
        let reports: Vec<(f64, f64, f64)> = lines(&out.join("raw/publisher-cg.jsonl"))
            .iter()
            .filter_map(|l| {
                let stats = l["report"]["stats"].as_array()?;
                let pair = stats.iter().find(|s| {
                    s["type"] == "candidate-pair"
                        && s["nominated"] == true
                        && s["state"] == "succeeded"
                })?;
                let sent = stats
                    .iter()
                    .find(|s| s["type"] == "outbound-rtp" && s["kind"] == "video")?;
                Some((
                    num(l, "t"),
                    pair["availableOutgoingBitrate"]
                        .as_f64()
                        .unwrap_or(f64::NAN),
                    num(sent, "framesSent"),
                ))
            })
            .collect();
        let recv = lines(&out.join("raw/cg-recv-cg.jsonl"));
        let decoded = recv.last().map_or(0.0, |l| num(l, "frames_decoded"));
        let _ = std::fs::remove_dir_all(out.parent().unwrap());
        let mut estimates: Vec<f64> = reports
            .iter()
            .filter(|r| r.0 >= 10.0 && r.1.is_finite())
            .map(|r| r.1)
            .collect();
        estimates.sort_by(f64::total_cmp);
        let median = estimates
            .get(estimates.len() / 2)
            .copied()
            .unwrap_or(f64::NAN);
        let frames_sent = reports.last().map_or(0.0, |r| r.2);
        eprintln!(
            "Chromium over WHIP: availableOutgoingBitrate median {:.0} kbit/s after 10 s ({} reports), {decoded} of {frames_sent} frames decoded",
            median / 1e3,
            estimates.len()
        );
        spread.check(
            run,
            "availableOutgoingBitrate median after 10 s (kbit/s)",
            median / 1e3,
            1200.0..=1800.0,
        );
        spread.require(
            run,
            frames_sent > 300.0,
            format!("Chromium sent {frames_sent} frames"),
        );
        spread.check(
            run,
            "decoded share of the frames sent",
            decoded / frames_sent,
            // Above 1 when cg-recv decodes frames sent after Chromium's last report.
            0.90..=1.10,
        );
    });
}
