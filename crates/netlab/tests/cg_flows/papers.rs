//! Issue #14: the papers' scenarios on camera-like and game-like content, 1280×720 at 30 fps
//! VP8, judged from t ≥ 10 s on what the bottleneck delivered and what the viewer saw.

use super::*;

/// A capacity drop on camera video: the encoder must scale the picture down (the fixed
/// 1280×720 VP8 stream cannot go below about 340 kbit/s on it), the receiver must follow the
/// new size, and the picture must not freeze for a second outside the 2 s after the drop.
#[test]
#[cfg_attr(
    unoptimized,
    ignore = "judges speed and quality: run optimised (`--release`; `cargo xtask test` does)"
)]
fn camera_capacity_drop_scales_the_picture_down_without_freezing() {
    let fwd = r#"schedule = [
  { at = "0s", rate = "2.5Mbit" },
  { at = "20s", rate = "500kbit" },
]
delay = "25ms"
qdisc = { kind = "droptail", limit = "300ms" }"#;
    let args = format!("{}, \"--start-bitrate\", \"2M\"", video_720p("camera"));
    let toml = scenario("cg-camera-drop", 40, fwd, "gcc", "not_ect", &args)
        .replace("@DELAY@", "25ms")
        .replace("@START@", "2M");
    run_judged(
        "camera-drop",
        &toml,
        |_| {},
        |run, spread, s, out| {
            let t0 = t0(out);
            let j = Judged::of(
                s,
                out,
                &[(10.0, 20.0), (22.0, 40.0)],
                &[],
                &[("cg", 5.0)],
                Some((20.0, 2.0)),
            );
            let sent = lines(&out.join("raw/cg-send-cg.jsonl"));
            let recv = lines(&out.join("raw/cg-recv-cg.jsonl"));
            let at = |v: &[Value], t: f64, k: &str| {
                v.iter()
                    .rfind(|l| run_t(l, t0) <= t)
                    .map_or(f64::NAN, |l| num(l, k))
            };
            let (w_before, w_after) = (at(&sent, 19.5, "width"), at(&sent, 39.0, "width"));
            let decoded_after = at(&recv, 39.5, "width");
            let rate_after = sent
                .iter()
                .filter(|l| (30.0..39.0).contains(&run_t(l, t0)))
                .map(|l| num(l, "encoder_bps"))
                .sum::<f64>()
                / sent
                    .iter()
                    .filter(|l| (30.0..39.0).contains(&run_t(l, t0)))
                    .count()
                    .max(1) as f64;
            eprintln!(
                "camera 2.5 → 0.5 Mb/s: coded width {w_before} → {w_after}, decoded width at the end {decoded_after}, encoder output 30–39 s {:.0} kb/s, U {:?}, loss {:.4}, longest freeze outside the drop {:.0} ms, decoded {:?}",
                rate_after / 1e3,
                j.u_phases,
                j.loss,
                j.longest_freeze_ms(),
                j.decoded_share
            );
            spread.check(run, "coded width before the drop", w_before, 960.0..=1280.0);
            spread.check(run, "coded width at the end", w_after, 160.0..=640.0);
            spread.require(
                run,
                decoded_after == w_after,
                format!("decoded width {decoded_after}, coded {w_after}"),
            );
            spread.check(
                run,
                "encoder output 30–39 s (kbit/s)",
                rate_after / 1e3,
                250.0..=600.0,
            );
            for (i, &u) in j.u_phases.iter().enumerate() {
                spread.check(run, format!("utilisation, phase {}", i + 1), u, DROP_U);
            }
            spread.check(run, "loss", j.loss, DROP_LOSS);
            spread.check(
                run,
                "longest freeze outside the drop (ms)",
                j.longest_freeze_ms(),
                0.0..=1000.0,
            );
            let decoded = j.decoded_share.first().copied().unwrap_or(f64::NAN);
            spread.check(run, "decoded share of the frames sent", decoded, 0.90..=1.0);
            Ok(())
        },
    );
}

/// Utilisation of each phase of [`camera_capacity_drop_scales_the_picture_down_without_freezing`]:
/// the worst run measured less 0.09 (`docs/notes/2026-12-02-runs.md` §4).
const DROP_U: std::ops::RangeInclusive<f64> = 0.80..=1.0;

/// Its loss at the bottleneck: the drop to a fifth overflows the 300 ms buffer for a moment;
/// the worst run measured and its margin, as above.
const DROP_LOSS: std::ops::RangeInclusive<f64> = 0.0..=0.06;

/// MMSys16 §6.1's forward link: capacity 1 → 2.5 → 0.5 → 1 Mb/s, 50 s each, 25 ms one
/// way, DropTail 300 ms.
const MMSYS16_6_1_FWD: &str = r#"schedule = [
  { at = "0s", rate = "1Mbit" },
  { at = "50s", rate = "2.5Mbit" },
  { at = "100s", rate = "500kbit" },
  { at = "150s", rate = "1Mbit" },
]
delay = "25ms"
qdisc = { kind = "droptail", limit = "300ms" }"#;

/// MMSys16 §6.1: capacity 1 → 2.5 → 0.5 → 1 Mb/s, 50 s each, RTT 50 ms, DropTail 300 ms;
/// one flow of `controller` sending the camera picture.
fn mmsys16_6_1_camera(controller: &str, u: f64) {
    mmsys16_6_1(
        controller,
        "camera",
        Bounds {
            u,
            t90_s: 8.0,
            q95_ms: Some(60.0),
            loss: Some(0.005),
            freeze_ms: 1000.0,
            jain: None,
        },
    );
}

/// [`mmsys16_6_1_camera`] with another picture and bounds.
fn mmsys16_6_1(controller: &str, pattern: &str, bounds: Bounds) {
    let fwd = MMSYS16_6_1_FWD;
    let toml = scenario(
        &format!("cg-{controller}-6.1-{pattern}"),
        200,
        fwd,
        controller,
        "not_ect",
        &video_720p(pattern),
    )
    .replace("@DELAY@", "25ms")
    .replace(r#"recv_args = ["--start-bitrate", "@START@"]"#, "")
    .replace(r#"warmup = "5s""#, r#"warmup = "10s""#);
    judged_run(
        &format!("{controller} §6.1 {pattern}"),
        &toml,
        &[(10.0, 50.0), (50.0, 100.0), (100.0, 150.0), (150.0, 200.0)],
        &[50.0, 150.0],
        &[("cg", 10.0)],
        Some((100.0, 2.0)),
        bounds,
    );
}

/// Issue #37: MMSys16 §6.1's schedule on a busy host, the 720p camera picture both ways.
/// Headless Chromium views cg-send (send-side GCC, at most 2.5 Mbit/s, libwebrtc's cap for
/// VP8 at 720p); and Chromium sends the same picture (its fake camera playing it from a Y4M
/// file) to cg-recv: libwebrtc's GCC on the same bottleneck, picture and load. Both viewers
/// count freezes by WebRTC's rule, from 10 s. cg's viewer is frozen no longer than
/// libwebrtc's, and cg uses at least 0.88 of the link.
#[test]
#[ignore = "issue #37, long (2 × 200 s): run with `cargo xtask test --long`"]
fn mmsys16_6_1_with_a_chromium_viewer_freezes_no_longer_than_chromium_sending() {
    let file = CameraY4m::write(10);
    let y4m = &file.0;
    let fwd = MMSYS16_6_1_FWD;
    judge_runs("§6.1 busy with Chromium", |run, spread| {
        let one = |name: &str, send_args: &str, webrtc: &str| {
            let (s, out) = webrtc_run(
                &format!("{name}-{run}"),
                run,
                fwd,
                "25ms",
                "gcc",
                "not_ect",
                send_args,
                webrtc,
                200,
                BUSY_HOST,
            )
            .unwrap_or_else(|e| panic!("{e}"));
            let _ = std::fs::remove_dir_all(out.parent().unwrap());
            let v = s["metrics"]["flows"][0]["viewer"].clone();
            let u = num(&s["metrics"]["link"], "utilisation");
            eprintln!("§6.1 busy, {webrtc}: U {u:.3}, viewer {v}");
            (u, num(&v, "frozen_s"), num(&v, "freezes"))
        };
        let cg = one(
            "61-cg",
            r#""--pattern", "camera", "--width", "1280", "--height", "720", "--fps", "30", "--max-bitrate", "2.5M""#,
            "chromium",
        );
        let chromium = one(
            "61-chromium",
            &format!(r#""--use-file-for-fake-video-capture={}""#, y4m.display()),
            "chromium_publisher",
        );
        eprintln!(
            "frozen: cg → Chromium {:.2} s in {} freezes; Chromium → cg-recv {:.2} s in {} freezes",
            cg.1, cg.2, chromium.1, chromium.2
        );
        spread.check(run, "cg's utilisation", cg.0, 0.88..=1.0);
        spread.check(run, "cg's viewer frozen (s)", cg.1, 0.0..=200.0);
        // Frozen no longer than libwebrtc's viewer (NaN when it was not measured, which misses).
        spread.check(
            run,
            "cg's viewer frozen beyond libwebrtc's (s)",
            cg.1 - chromium.1,
            -200.0..=0.0,
        );
    });
}

/// `secs` of the 1280×720@30 camera picture as a Y4M file (415 MB for 10 s), removed when
/// dropped, a failed run included.
struct CameraY4m(PathBuf);

impl CameraY4m {
    fn write(secs: u32) -> CameraY4m {
        use std::io::Write;
        let path = std::env::temp_dir().join(format!("cg-camera-{}.y4m", std::process::id()));
        let file = CameraY4m(path);
        let mut video =
            cg_media::SyntheticVideo::new(cg_media::TestPattern::Camera, 1280, 720, 30.0).unwrap();
        let mut out = std::io::BufWriter::new(std::fs::File::create(&file.0).unwrap());
        writeln!(out, "YUV4MPEG2 W1280 H720 F30:1 Ip A1:1 C420jpeg").unwrap();
        let mut frame = Vec::new();
        for _ in 0..30 * secs {
            video.next_frame(&mut frame);
            out.write_all(b"FRAME\n").unwrap();
            out.write_all(&frame).unwrap();
        }
        out.flush().unwrap();
        file
    }
}

impl Drop for CameraY4m {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
#[ignore = "issue #14, long (200 s): run with `cargo xtask test --long`"]
fn gcc_send_side_mmsys16_6_1_camera() {
    mmsys16_6_1_camera("gcc", 0.88);
}

#[test]
#[ignore = "issue #14, long (200 s): run with `cargo xtask test --long`"]
fn gcc_remb_mmsys16_6_1_camera() {
    mmsys16_6_1_camera("gcc-remb", 0.88);
}

#[test]
#[ignore = "issue #14, long (200 s): run with `cargo xtask test --long`"]
fn scream_mmsys16_6_1_camera() {
    mmsys16_6_1_camera("scream", 0.92);
}

/// The regression case of issue #14, which asks that it not get worse: §6.1 on the faint
/// zone plate (low-contrast rings VP8 follows easily at 720p). Before #14's work send-side
/// GCC had U 0.832, q95 82 ms, t90 23.0 / 13.2 s, and GCC-REMB U 0.808; after its first round
/// (stop 20, one run each) U 0.898 / 0.891 / 0.917 (SCReAM), q95 47 / 70 / 32 ms, t90 at most
/// 8.2 / 12.6 / 6.6 s, no freeze over 0.33 s outside the drop. The bounds hold every
/// controller to those worst figures: U ≥ 0.88, q95 ≤ 75 ms, t90 ≤ 13 s, loss ≤ 0.5 %, no
/// freeze over 1 s.
#[test]
#[ignore = "issue #14, long (3 × 200 s): run with `cargo xtask test --long`"]
fn faint_zone_plate_mmsys16_6_1_every_controller() {
    for cc in ["gcc", "gcc-remb", "scream"] {
        mmsys16_6_1(
            cc,
            "faint-zone-plate",
            Bounds {
                u: 0.88,
                t90_s: 13.0,
                q95_ms: Some(75.0),
                loss: Some(0.005),
                freeze_ms: 1000.0,
                jain: None,
            },
        );
    }
}

/// A constant capacity, RTT 50 ms, DropTail 300 ms, `secs` long; `pattern` at 720p.
fn constant_capacity(controller: &str, rate: &str, pattern: &str, secs: u32, bounds: Bounds) {
    let fwd = format!(
        r#"capacity = "{rate}"
delay = "25ms"
qdisc = {{ kind = "droptail", limit = "300ms" }}"#
    );
    let toml = scenario(
        &format!("cg-{controller}-{rate}-{pattern}"),
        secs,
        &fwd,
        controller,
        "not_ect",
        &format!("{}, \"--max-bitrate\", \"10M\"", video_720p(pattern)),
    )
    .replace("@DELAY@", "25ms")
    .replace(r#"recv_args = ["--start-bitrate", "@START@"]"#, "")
    .replace(r#"warmup = "5s""#, r#"warmup = "10s""#);
    judged_run(
        &format!("{controller} {rate} {pattern}"),
        &toml,
        &[],
        &[],
        &[("cg", 10.0)],
        None,
        bounds,
    );
}

fn constant_bounds() -> Bounds {
    Bounds {
        u: 0.90,
        t90_s: f64::INFINITY,
        q95_ms: None,
        loss: None,
        freeze_ms: f64::INFINITY,
        jain: None,
    }
}

#[test]
#[ignore = "issue #14, long (200 s): run with `cargo xtask test --long`"]
fn constant_2mbps_camera_every_controller() {
    for cc in ["gcc", "gcc-remb", "scream"] {
        constant_capacity(cc, "2Mbit", "camera", 200, constant_bounds());
    }
}

#[test]
#[ignore = "issue #14, long (200 s): run with `cargo xtask test --long`"]
fn constant_1mbps_camera_every_controller() {
    for cc in ["gcc", "gcc-remb", "scream"] {
        constant_capacity(cc, "1Mbit", "camera", 200, constant_bounds());
    }
}

#[test]
#[ignore = "issue #14, long (200 s): run with `cargo xtask test --long`"]
fn game_at_5mbps_send_side_gcc() {
    constant_capacity(
        "gcc",
        "5Mbit",
        "game",
        200,
        Bounds {
            u: 0.85,
            freeze_ms: 500.0,
            ..constant_bounds()
        },
    );
}

/// MMSys16 §6.2: three GCC flows on 3 Mb/s started 30 s apart, 200 s, RTT 50 ms, DropTail
/// 300 ms, each sending the camera picture.
#[test]
#[ignore = "issue #14, long (200 s): run with `cargo xtask test --long`"]
fn three_gcc_flows_mmsys16_6_2_camera() {
    let flows: String = (1..=3)
        .map(|i| {
            format!(
                r#"
[[flows]]
name = "gcc{i}"
kind = "cg"
controller = "gcc"
from = "s{i}"
to = "r{i}"
start = "{}s"
send_args = [{}]
"#,
                (i - 1) * 30,
                video_720p("camera")
            )
        })
        .collect();
    let toml = format!(
        r#"name = "cg-three-gcc-camera"
duration = "200s"
seed = 1

[forward]
capacity = "3Mbit"
delay = "25ms"
qdisc = {{ kind = "droptail", limit = "300ms" }}

[reverse]
capacity = "100Mbit"
delay = "25ms"

[topology]
senders = 3
receivers = 3

[metrics]
warmup = "10s"
{flows}"#
    );
    judged_run(
        "three GCC flows §6.2 camera",
        &toml,
        &[],
        &[],
        &[("gcc1", 5.0), ("gcc2", 35.0), ("gcc3", 65.0)],
        None,
        Bounds {
            // The issue sets no utilisation bound here; this one only keeps a run where
            // the flows collapse (Jain's index is high for equal near-zero rates too) from
            // passing.
            u: 0.70,
            t90_s: f64::INFINITY,
            q95_ms: Some(100.0),
            loss: Some(0.005),
            freeze_ms: 1000.0,
            jain: Some(0.95),
        },
    );
}
