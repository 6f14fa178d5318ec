//! What the viewer of a cg flow saw, on the same metrics whichever program watched: cg-recv's
//! statistics (`cg-recv-<flow>.jsonl`) or a browser's `getStats()` reports posted back through
//! cg-send's viewer page (`viewer-<flow>.jsonl`, the `inbound-rtp` video record).
//!
//! Counters are taken as differences across the statistics window: from the last record before
//! it (or zero, when the viewer started inside it) to the last record inside it. Freezes are
//! WebRTC's (a gap of at least max(3 × mean, mean + 150 ms)), which both viewers count; what
//! one viewer cannot measure is `None`, never a zero: cg-recv has no playout buffer to report,
//! a browser's page no glass-to-glass latency unless the sender stamps its pictures
//! (`cg-send --stamp`: the page reads the stamp of each picture it shows, a "cg-stamp" record).
//!
//! Where the latency went ([`Stages`]) comes from the sender's stages in the video-timing
//! header extension: cg-recv splits each frame's glass-to-glass latency; a browser reports its
//! slowest recent frame's stages (`googTimingFrameInfo`), on its own clock.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::dist::Dist;

/// The viewer's experience within the statistics window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ViewerSummary {
    /// Which program viewed: `cg-recv` or `chromium`.
    pub viewer: String,
    /// Frames decoded within the window.
    pub frames_decoded: u64,
    /// Mean decoded frame rate over the window, frames/s.
    pub fps: f64,
    /// The lowest decoded frame rate of a record inside the window (each over about a second),
    /// frames/s.
    pub fps_min: Option<f64>,
    /// Freezes by WebRTC's rule that ended within the window.
    pub freezes: u64,
    /// Their summed duration, s.
    pub frozen_s: f64,
    /// The longest of them, ms: the time frozen that a record added with its freezes (a
    /// viewer adds a freeze's whole duration when it ends), exact when a record ended one
    /// freeze and the sum of the freezes it ended otherwise; `None` without a freeze.
    #[serde(default)]
    pub longest_freeze_ms: Option<f64>,
    /// Times the decoded picture size changed within the window (a browser's reports come a
    /// second apart, so a size held for less than one report may be missed there).
    pub resolution_switches: u64,
    /// The picture size held in the most records of the window, width × height.
    pub held_size: Option<(u32, u32)>,
    /// Mean time a frame spent in the jitter buffer within the window (a browser's
    /// `jitterBufferDelay` / `jitterBufferEmittedCount`), ms.
    pub jitter_buffer_ms: Option<f64>,
    /// Of that, the time a complete frame waited for its playout time: the mean less the
    /// mean assembly time (first packet to last, a browser's `totalAssemblyTime` /
    /// `framesAssembledFromMultiplePackets`), ms. Near zero when the sender asks for no
    /// playout delay (`cg-send --profile gaming`); `None` from cg-recv.
    #[serde(default)]
    pub jitter_buffer_hold_ms: Option<f64>,
    /// Glass-to-glass latency, the medians of the records inside the window, ms.
    pub g2g_ms: Option<Dist>,
    /// The largest glass-to-glass latency of a frame decoded within the window, ms.
    pub g2g_max_ms: Option<f64>,
    /// Where the latency went, each stage's median within the window: over cg-recv's
    /// records, or over the distinct frames a browser reported as its slowest.
    #[serde(default)]
    pub stages_ms: Option<Stages>,
    /// Picture quality when the viewer scores it (`cg-send --stamp` with the camera or game
    /// pattern; cg-recv with `--reference`): luma PSNR of shown pictures against the source,
    /// dB. cg-recv scores every picture it can and reports means over its recent ones: this is
    /// the mean of its records' means inside the window. A browser's page posts a few shown
    /// pictures a second back to cg-send, which scores them: the mean of those scores.
    #[serde(default)]
    pub psnr_db: Option<f64>,
    /// The worst pictures, dB: cg-recv's lowest 5th percentile of a record inside the window;
    /// the 5th percentile of a page's scores inside it.
    #[serde(default)]
    pub psnr_low_db: Option<f64>,
    /// Pictures a browser's page had scored inside the window (`None` from cg-recv).
    #[serde(default)]
    pub psnr_scored: Option<u64>,
    /// How the page took the luma it posted, in its last record inside the window: `yuv`
    /// (the decoded plane itself) or `rgb` (back from a canvas's RGB); `None` from cg-recv.
    #[serde(default)]
    pub psnr_via: Option<String>,
}

/// A frame's latency stage by stage, ms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Stages {
    /// Capture to the encoder's output.
    pub encode: f64,
    /// The encoder's output to the frame queued for the pacer.
    pub queue: f64,
    /// Queued to its last packet leaving the pacer.
    pub pacing: f64,
    /// The last packet leaving to the last arriving. A browser's own frame timing puts the
    /// sender's stages on no clock of its own, so for a browser it is what its page measured
    /// from a picture's making (the stamp's wall clock) to its last packet's arrival
    /// (`receiveTime`) less the sender's stages, median against medians: it also holds the
    /// picture's wait for the encoder, which a browser's encode stage (encoder start to
    /// finish) leaves out. `None` without stamped pictures.
    pub network: Option<f64>,
    /// The first packet arriving to the last (a browser's `receive_start` to `receive_finish`:
    /// pacing as it arrived); `None` from cg-recv.
    pub arrival: Option<f64>,
    /// The last arrival to the decoder's input.
    pub jitter_buffer: f64,
    /// The decoder.
    pub decode: f64,
    /// The decoder's output to the picture's display (a browser's compositor): what its page
    /// measured from the last packet's arrival to the expected display, less the jitter
    /// buffer and the decoder, median against medians; `None` from cg-recv, which shows a
    /// picture as it is decoded.
    #[serde(default)]
    pub display: Option<f64>,
}

impl Stages {
    /// Each stage's median over `all` (`None` for none).
    fn median(all: &[Stages]) -> Option<Stages> {
        let med = |f: &dyn Fn(&Stages) -> Option<f64>| {
            let mut v: Vec<f64> = all.iter().filter_map(f).collect();
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied()
        };
        (!all.is_empty()).then(|| Stages {
            encode: med(&|s| Some(s.encode)).unwrap_or(f64::NAN),
            queue: med(&|s| Some(s.queue)).unwrap_or(f64::NAN),
            pacing: med(&|s| Some(s.pacing)).unwrap_or(f64::NAN),
            network: med(&|s| s.network),
            arrival: med(&|s| s.arrival),
            jitter_buffer: med(&|s| Some(s.jitter_buffer)).unwrap_or(f64::NAN),
            decode: med(&|s| Some(s.decode)).unwrap_or(f64::NAN),
            display: med(&|s| s.display),
        })
    }

    /// cg-recv's `g2g_stages` record.
    fn of_cg_recv(v: &Value) -> Option<Stages> {
        let s = v.get("g2g_stages")?;
        Some(Stages {
            encode: num(s, "encode_ms")?,
            queue: num(s, "queue_ms")?,
            pacing: num(s, "pacing_ms")?,
            network: num(s, "network_ms"),
            arrival: None,
            jitter_buffer: num(s, "jitter_buffer_ms")?,
            decode: num(s, "decode_ms")?,
            display: None,
        })
    }

    /// A browser's `googTimingFrameInfo`: RTP timestamp, capture, encode start and finish,
    /// packetization, pacer exit, the two network slots, receive start and finish, decode
    /// start and finish, render, outlier and timer flags (libwebrtc's `TimingFrameInfo`).
    /// Returns the frame's RTP timestamp with its stages.
    fn of_timing_frame(info: &str) -> Option<(i64, Stages)> {
        let f: Vec<f64> = info
            .split(',')
            .map(|x| x.trim().parse::<f64>())
            .collect::<Result<_, _>>()
            .ok()?;
        let [
            ts,
            _capture,
            enc0,
            enc1,
            packetized,
            pacer,
            _n1,
            _n2,
            rx0,
            rx1,
            dec0,
            dec1,
            ..,
        ] = f[..]
        else {
            return None;
        };
        Some((
            ts as i64,
            Stages {
                encode: enc1 - enc0,
                queue: packetized - enc1,
                pacing: pacer - packetized,
                network: None,
                arrival: Some(rx1 - rx0),
                jitter_buffer: dec0 - rx1,
                decode: dec1 - dec0,
                display: None,
            },
        ))
    }
}

/// One viewer record: when (s since the run's t0) and the fields used.
struct Rec<'a> {
    t: f64,
    v: &'a Value,
}

fn num(v: &Value, key: &str) -> Option<f64> {
    v.get(key).and_then(Value::as_f64)
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .map(|t| {
            t.lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The viewer summary of flow `flow` from the files in `raw`, within `window` (s since t0,
/// whose CLOCK_MONOTONIC is `t0_ns`); `None` when no viewer wrote a record inside the window.
pub fn summarise(raw: &Path, flow: &str, t0_ns: u64, window: (f64, f64)) -> Option<ViewerSummary> {
    let t_of = |v: &Value| num(v, "mono_ns").map(|ns| (ns - t0_ns as f64) / 1e9);
    let recv = lines(&raw.join(format!("cg-recv-{flow}.jsonl")));
    let recs: Vec<Rec> = recv
        .iter()
        .filter_map(|v| Some(Rec { t: t_of(v)?, v }))
        .collect();
    if let Some(s) = from_cg_recv(&recs, window) {
        return Some(s);
    }
    let page = lines(&raw.join(format!("viewer-{flow}.jsonl")));
    let entries = |pick: &dyn Fn(&Value) -> bool| -> Vec<Rec> {
        page.iter()
            .filter_map(|l| {
                let v = l["report"]["stats"].as_array()?.iter().find(|s| pick(s))?;
                Some(Rec { t: t_of(l)?, v })
            })
            .collect()
    };
    let recs = entries(&|s| s["type"] == "inbound-rtp" && s["kind"] == "video");
    let stamps = entries(&|s| s["type"] == "cg-stamp");
    let scores = entries(&|s| s["type"] == "cg-quality");
    from_chromium(&recs, &stamps, &scores, window)
}

/// The records inside `window`, and the last one before it.
fn split<'a, 'b>(
    recs: &'b [Rec<'a>],
    window: (f64, f64),
) -> (Option<&'b Rec<'a>>, Vec<&'b Rec<'a>>) {
    let before = recs.iter().rfind(|r| r.t < window.0);
    let inside = recs
        .iter()
        .filter(|r| r.t >= window.0 && r.t < window.1)
        .collect();
    (before, inside)
}

/// `key`'s growth from `before` (zero when absent) to `last`.
fn growth(before: Option<&Rec>, last: &Rec, key: &str) -> f64 {
    let b = before.and_then(|r| num(r.v, key)).unwrap_or(0.0);
    (num(last.v, key).unwrap_or(0.0) - b).max(0.0)
}

/// The largest time frozen one record added along with a freeze, ms (see
/// [`ViewerSummary::longest_freeze_ms`]).
fn longest_freeze(before: Option<&Rec>, inside: &[&Rec], n: &Names) -> Option<f64> {
    let mut prev = before;
    let mut longest: Option<f64> = None;
    for &r in inside {
        if growth(prev, r, n.freezes) > 0.0 {
            let ms = growth(prev, r, n.frozen.0) * n.frozen.1 * 1e3;
            longest = Some(longest.map_or(ms, |l| l.max(ms)));
        }
        prev = Some(r);
    }
    longest
}

/// The size in the most records, and the changes from one record to the next.
fn sizes(before: Option<&Rec>, inside: &[&Rec], w: &str, h: &str) -> (Option<(u32, u32)>, u64) {
    let size = |r: &Rec| {
        let (w, h) = (num(r.v, w)? as u32, num(r.v, h)? as u32);
        (w > 0 && h > 0).then_some((w, h))
    };
    let mut held: std::collections::BTreeMap<(u32, u32), u64> = Default::default();
    let mut switches = 0;
    let mut last = before.and_then(size);
    for s in inside.iter().filter_map(|r| size(r)) {
        *held.entry(s).or_default() += 1;
        if last.is_some_and(|l| l != s) {
            switches += 1;
        }
        last = Some(s);
    }
    let most = held.into_iter().max_by_key(|(_, n)| *n).map(|(s, _)| s);
    (most, switches)
}

/// The names one viewer gives the common figures.
struct Names {
    viewer: &'static str,
    frames: &'static str,
    fps: &'static str,
    freezes: &'static str,
    /// Time frozen, and its unit in seconds.
    frozen: (&'static str, f64),
    size: (&'static str, &'static str),
}

const CG_RECV: Names = Names {
    viewer: "cg-recv",
    frames: "frames_decoded",
    fps: "decoded_fps",
    freezes: "webrtc_freezes",
    frozen: ("webrtc_freeze_total_ms", 1e-3),
    size: ("width", "height"),
};

const CHROMIUM: Names = Names {
    viewer: "chromium",
    frames: "framesDecoded",
    fps: "framesPerSecond",
    freezes: "freezeCount",
    frozen: ("totalFreezesDuration", 1.0),
    size: ("frameWidth", "frameHeight"),
};

/// The figures both viewers give, from the records around `window`; resolution switches
/// counted from one record to the next. Also the records: the last before, those inside.
fn common<'a, 'b>(
    recs: &'b [Rec<'a>],
    window: (f64, f64),
    n: &Names,
) -> Option<(ViewerSummary, Option<&'b Rec<'a>>, Vec<&'b Rec<'a>>)> {
    let (before, inside) = split(recs, window);
    let last = *inside.last()?;
    let since = before.map_or(inside[0].t, |b| b.t);
    let frames = growth(before, last, n.frames);
    let (held_size, resolution_switches) = sizes(before, &inside, n.size.0, n.size.1);
    let summary = ViewerSummary {
        viewer: n.viewer.into(),
        frames_decoded: frames as u64,
        fps: frames / (last.t - since).max(1e-9),
        fps_min: inside
            .iter()
            .filter_map(|r| num(r.v, n.fps))
            .reduce(f64::min),
        freezes: growth(before, last, n.freezes) as u64,
        frozen_s: growth(before, last, n.frozen.0) * n.frozen.1,
        longest_freeze_ms: longest_freeze(before, &inside, n),
        resolution_switches,
        held_size,
        jitter_buffer_ms: None,
        jitter_buffer_hold_ms: None,
        g2g_ms: None,
        g2g_max_ms: None,
        stages_ms: None,
        psnr_db: None,
        psnr_low_db: None,
        psnr_scored: None,
        psnr_via: None,
    };
    Some((summary, before, inside))
}

/// cg-recv counts every switch itself and measures glass-to-glass latency.
fn from_cg_recv(recs: &[Rec], window: (f64, f64)) -> Option<ViewerSummary> {
    let (mut s, before, inside) = common(recs, window, &CG_RECV)?;
    let last = *inside.last()?;
    s.resolution_switches = growth(before, last, "resolution_switches") as u64;
    let mut g2g: Vec<f64> = inside.iter().filter_map(|r| num(r.v, "g2g_ms")).collect();
    s.g2g_ms = (!g2g.is_empty()).then(|| Dist::of(&mut g2g));
    s.g2g_max_ms = inside
        .iter()
        .filter_map(|r| num(r.v, "g2g_max_ms"))
        .reduce(f64::max);
    let stages: Vec<Stages> = inside
        .iter()
        .filter_map(|r| Stages::of_cg_recv(r.v))
        .collect();
    s.stages_ms = Stages::median(&stages);
    let psnr: Vec<f64> = inside.iter().filter_map(|r| num(r.v, "psnr_db")).collect();
    s.psnr_db = (!psnr.is_empty()).then(|| psnr.iter().sum::<f64>() / psnr.len() as f64);
    s.psnr_low_db = inside
        .iter()
        .filter_map(|r| num(r.v, "psnr_p5_db"))
        .reduce(f64::min);
    Some(s)
}

/// A browser reports its jitter buffer; the page, glass to glass when the sender stamps its
/// pictures (`stamps`: its "cg-stamp" records, each over the second before it) and picture
/// quality when the sender scores what it posts back (`scores`: its "cg-quality" records).
fn from_chromium(
    recs: &[Rec],
    stamps: &[Rec],
    scores: &[Rec],
    window: (f64, f64),
) -> Option<ViewerSummary> {
    let (mut s, before, inside) = common(recs, window, &CHROMIUM)?;
    let (_, scored) = split(scores, window);
    let mut psnr: Vec<f64> = scored
        .iter()
        .filter_map(|r| r.v.get("scores")?.as_array())
        .flatten()
        .filter_map(Value::as_f64)
        .collect();
    if !psnr.is_empty() {
        psnr.sort_by(f64::total_cmp);
        s.psnr_db = Some(psnr.iter().sum::<f64>() / psnr.len() as f64);
        s.psnr_low_db = Some(psnr[psnr.len() * 5 / 100]);
        s.psnr_scored = Some(psnr.len() as u64);
    }
    s.psnr_via = scored
        .iter()
        .rev()
        .find_map(|r| r.v.get("via")?.as_str())
        .map(str::to_owned);
    let (_, stamped) = split(stamps, window);
    let stamped: Vec<&Rec> = stamped
        .into_iter()
        .filter(|r| num(r.v, "frames").is_some_and(|n| n > 0.0))
        .collect();
    let mut g2g: Vec<f64> = stamped.iter().filter_map(|r| num(r.v, "g2gMs")).collect();
    s.g2g_ms = (!g2g.is_empty()).then(|| Dist::of(&mut g2g));
    s.g2g_max_ms = stamped
        .iter()
        .filter_map(|r| num(r.v, "g2gMaxMs"))
        .reduce(f64::max);
    let last = *inside.last()?;
    let emitted = growth(before, last, "jitterBufferEmittedCount");
    s.jitter_buffer_ms =
        (emitted > 0.0).then(|| growth(before, last, "jitterBufferDelay") / emitted * 1e3);
    let assembled = growth(before, last, "framesAssembledFromMultiplePackets");
    s.jitter_buffer_hold_ms = s
        .jitter_buffer_ms
        .filter(|_| assembled > 0.0)
        .map(|jb| jb - growth(before, last, "totalAssemblyTime") / assembled * 1e3);
    // The same frame stays the slowest for many reports: each frame counts once.
    let frames: std::collections::BTreeMap<i64, Stages> = inside
        .iter()
        .filter_map(|r| Stages::of_timing_frame(r.v.get("googTimingFrameInfo")?.as_str()?))
        .collect();
    s.stages_ms = Stages::median(&frames.into_values().collect::<Vec<_>>());
    if let Some(st) = s.stages_ms.as_mut() {
        // The page's two parts of glass to glass, split at the last packet's arrival.
        let part = |key: &str| {
            let mut v: Vec<f64> = stamped.iter().filter_map(|r| num(r.v, key)).collect();
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied()
        };
        st.network = part("arrivedMs").map(|a| a - st.encode - st.queue - st.pacing);
        st.display = part("afterArrivalMs").map(|a| a - st.jitter_buffer - st.decode);
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, lines: &[Value]) {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(dir.join(name), text + "not json\n").unwrap();
    }

    fn dir(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("netlab-viewer-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    const T0: u64 = 1_000_000_000_000;

    fn at(s: f64) -> u64 {
        T0 + (s * 1e9) as u64
    }

    #[test]
    fn cg_recv_counters_are_taken_across_the_window() {
        let d = dir("recv");
        let rec = |t: f64, frames: u64, freezes: u64, frozen: f64, w: u32, sw: u64, g2g: f64| {
            serde_json::json!({
                "mono_ns": at(t), "frames_decoded": frames, "decoded_fps": frames.min(30),
                "webrtc_freezes": freezes, "webrtc_freeze_total_ms": frozen,
                "resolution_switches": sw, "width": w, "height": w * 9 / 16,
                "g2g_ms": g2g, "g2g_max_ms": g2g + 10.0,
                "g2g_stages": {"encode_ms": 5.0, "queue_ms": 0.0, "pacing_ms": g2g / 2.0,
                    "network_ms": 1.0, "jitter_buffer_ms": 0.1, "decode_ms": 2.0},
                "psnr_db": 30.0 + t, "psnr_p5_db": 20.0 + t,
            })
        };
        write(
            &d,
            "cg-recv-cg.jsonl",
            &[
                rec(1.0, 20, 1, 300.0, 640, 0, 90.0),
                rec(2.0, 50, 1, 300.0, 1280, 1, 50.0),
                rec(3.0, 80, 2, 550.0, 1280, 1, 40.0),
                rec(4.0, 110, 2, 550.0, 1280, 1, 60.0),
                rec(5.0, 140, 2, 550.0, 640, 2, 45.0),
            ],
        );
        let s = summarise(&d, "cg", T0, (1.5, 4.5)).expect("records in the window");
        assert_eq!(s.viewer, "cg-recv");
        assert_eq!(s.frames_decoded, 90);
        assert_eq!(s.fps, 30.0);
        assert_eq!((s.freezes, s.frozen_s), (1, 0.25));
        // The freeze that ended before the window is not the window's.
        assert_eq!(s.longest_freeze_ms, Some(250.0));
        assert_eq!(s.resolution_switches, 1);
        assert_eq!(s.held_size, Some((1280, 720)));
        assert_eq!(s.g2g_ms.as_ref().map(|g| g.p50), Some(50.0));
        assert_eq!(s.g2g_max_ms, Some(70.0));
        let st = s.stages_ms.expect("stages");
        assert_eq!((st.pacing, st.network, st.arrival), (25.0, Some(1.0), None));
        assert_eq!((s.jitter_buffer_ms, s.jitter_buffer_hold_ms), (None, None));
        // Records at 2, 3 and 4 s.
        assert_eq!((s.psnr_db, s.psnr_low_db), (Some(33.0), Some(22.0)));
        assert_eq!(
            summarise(&d, "cg", T0, (10.0, 20.0)),
            None,
            "nothing inside"
        );
        assert_eq!(summarise(&d, "other", T0, (0.0, 20.0)), None, "no file");
        std::fs::remove_dir_all(&d).ok();
    }

    #[test]
    fn a_browser_s_inbound_rtp_reports_give_the_same_summary() {
        let d = dir("page");
        // Chromium 156's format, one report of a run: the frame's pacer exit 46 ms after
        // capture, its packets arriving over 34 ms, decoded in 4 ms.
        let slow = |ts: u32, pacer: i32| {
            format!(
                "{ts},-47,-47,-35,-34,{pacer},-47,-47,49648457,49648491,49648491,49648495,0,0,1"
            )
        };
        let rep = |t: f64, frames: u64, freezes: u64, frozen: f64, w: u32, jb: f64| {
            serde_json::json!({"viewer": "v1", "t": t, "mono_ns": at(t), "report": {"stats": [
                {"type": "candidate-pair"},
                {"type": "inbound-rtp", "kind": "video", "framesDecoded": frames,
                 "framesPerSecond": 30, "freezeCount": freezes, "totalFreezesDuration": frozen,
                 "frameWidth": w, "frameHeight": w * 9 / 16,
                 "jitterBufferDelay": jb, "jitterBufferEmittedCount": frames,
                 "totalAssemblyTime": jb / 3.0, "framesAssembledFromMultiplePackets": frames / 2,
                 "googTimingFrameInfo": if t < 2.5 { slow(7, -1) } else { slow(9, -4) }},
                // The page's stamp reader: nothing read in the first second.
                {"type": "cg-stamp", "frames": if t < 1.5 { 0 } else { 30 },
                 "g2gMs": if t < 1.5 { None } else { Some(110.0 - 20.0 * t) },
                 "g2gMaxMs": if t < 1.5 { None } else { Some(150.0 - 30.0 * t) },
                 "arrivedMs": if t < 1.5 { None } else { Some(60.0 - 5.0 * t) },
                 "afterArrivalMs": if t < 1.5 { None } else { Some(20.0) }},
                // The sender's scores of the pictures the page posted back.
                {"type": "cg-quality", "scores": [30.0 + t, 34.0 + t], "unread": 0, "skipped": 0,
                 "via": "yuv"},
            ]}})
        };
        write(
            &d,
            "viewer-cg.jsonl",
            &[
                rep(1.0, 30, 0, 0.0, 1280, 0.6),
                rep(2.0, 60, 1, 0.4, 960, 1.2),
                rep(3.0, 90, 1, 0.4, 1280, 2.4),
            ],
        );
        let s = summarise(&d, "cg", T0, (1.5, 10.0)).expect("reports in the window");
        assert_eq!(s.viewer, "chromium");
        assert_eq!((s.frames_decoded, s.fps), (60, 30.0));
        assert_eq!((s.freezes, s.frozen_s), (1, 0.4));
        assert_eq!(s.longest_freeze_ms, Some(400.0));
        let calm = summarise(&d, "cg", T0, (2.5, 10.0)).expect("a report in the window");
        assert_eq!((calm.freezes, calm.longest_freeze_ms), (0, None));
        assert_eq!(s.resolution_switches, 2);
        // (2.4 − 0.6) s over 60 frames.
        assert!((s.jitter_buffer_ms.unwrap() - 30.0).abs() < 1e-9);
        // Assembly (0.8 − 0.2) s over the 30 frames of many packets: 20 ms of the 30 held.
        assert!((s.jitter_buffer_hold_ms.unwrap() - 10.0).abs() < 1e-9);
        // The page's glass to glass: 70 and 50 ms, the largest frame 90 ms.
        let g2g = s.g2g_ms.expect("stamped pictures");
        assert_eq!((g2g.p50, s.g2g_max_ms), (70.0, Some(90.0)));
        // Two distinct slowest frames in the window (pacing 33 and 30 ms): the median of two
        // is the larger.
        let st = s.stages_ms.expect("stages");
        assert_eq!(
            (st.encode, st.queue, st.pacing, st.arrival),
            (12.0, 1.0, 33.0, Some(34.0))
        );
        assert_eq!((st.jitter_buffer, st.decode), (0.0, 4.0));
        // The page's split at the last packet's arrival: 50 (of 50 and 45) ms from the making,
        // 20 ms to the display; the network is what the sender's stages leave of the first,
        // the display what the jitter buffer and decoder leave of the second.
        assert_eq!((st.network, st.display), (Some(4.0), Some(16.0)));
        // Scores 32, 36, 33, 37 dB: their mean, the lowest as the 5th percentile of four.
        assert_eq!(
            (s.psnr_db, s.psnr_low_db, s.psnr_scored),
            (Some(34.5), Some(32.0), Some(4))
        );
        assert_eq!(s.psnr_via.as_deref(), Some("yuv"));
        assert_eq!(Stages::of_timing_frame("1,2,3"), None);
        assert_eq!(
            Stages::of_timing_frame("a,b,c,d,e,f,g,h,i,j,k,l,m,n,o"),
            None
        );
        std::fs::remove_dir_all(&d).ok();
    }
}
