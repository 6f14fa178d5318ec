//! Issue #17's fault suite: real `cg-send` and `cg-recv` through netlab's emulated bottleneck
//! with the faults real access networks have (an outage, reordering with duplication, burst
//! loss, jitter), for each controller (send-side GCC, GCC-REMB, SCReAM), each judged on what
//! the link carried and what the viewer saw.
//!
//! Every case is 640×360 at 30 fps of the `camera` picture through 2 Mbit/s DropTail
//! (300 ms), RTT 50 ms, unless it says otherwise. Like `cg_flows`, they judge rates and
//! delays of real processes, so they run in release only (`cargo xtask test` does), one at a
//! time, each netlab run once more if it fails.

mod common;

use std::path::Path;

use common::*;
use serde_json::Value;

/// The three controllers, as `netlab`'s flow `controller` names them.
const CONTROLLERS: [&str; 3] = ["gcc", "gcc-remb", "scream"];

/// One cg flow of `controller` through `forward` (a `[forward]` table's body; the one-way
/// delay is 25 ms both ways), `secs` long, warm-up 5 s.
fn fault_scenario(name: &str, controller: &str, forward: &str, secs: u32, video: &str) -> String {
    with_reverse(
        name,
        controller,
        forward,
        r#"capacity = "100Mbit""#,
        secs,
        video,
    )
}

/// [`fault_scenario`] with the reverse path's table body (`reverse`) too.
fn with_reverse(
    name: &str,
    controller: &str,
    forward: &str,
    reverse: &str,
    secs: u32,
    video: &str,
) -> String {
    format!(
        r#"name = "{name}"
duration = "{secs}s"
seed = 1

[forward]
delay = "25ms"
qdisc = {{ kind = "droptail", limit = "300ms" }}
{forward}

[reverse]
delay = "25ms"
{reverse}

[metrics]
warmup = "5s"

[[flows]]
name = "cg"
kind = "cg"
controller = "{controller}"
from = "s1"
to = "r1"
send_args = [{video}]
"#
    )
}

/// 640×360 at 30 fps of the camera picture, up to `max` (cg-send's `--max-bitrate`).
fn camera_360p(max: &str) -> String {
    format!(
        r#""--pattern", "camera", "--width", "640", "--height", "360", "--fps", "30", "--max-bitrate", "{max}""#
    )
}

/// A controller quantity of a stats line (`extra`), NaN when absent.
fn extra(line: &Value, name: &str) -> f64 {
    line["extra"][name].as_f64().unwrap_or(f64::NAN)
}

/// The growth of the counter `name` (in `extra`, or a top-level field with `top`) over the
/// samples from run time `from` s to the end.
fn counted_since(samples: &[Value], t0: u64, from: f64, name: &str, top: bool) -> f64 {
    let get = |l: &Value| if top { num(l, name) } else { extra(l, name) };
    let at = samples
        .iter()
        .find(|l| run_t(l, t0) >= from)
        .map_or(0.0, get);
    samples.last().map_or(0.0, get) - at
}

/// The back-offs a controller made from `from` s on that were not asked for by a real queue
/// or loss, as each controller counts them: GCC's over-use signals (the sender's estimator
/// in send-side mode, the receiver's in REMB mode) and SCReAM's loss and queue-delay
/// window reductions.
fn backoffs_since(controller: &str, out: &Path, from: f64) -> f64 {
    let t0 = t0(out);
    let sent = lines(&out.join("raw/cg-send-cg.jsonl"));
    let recv = lines(&out.join("raw/cg-recv-cg.jsonl"));
    match controller {
        "gcc" => counted_since(&sent, t0, from, "overuses", false),
        "gcc-remb" => counted_since(&recv, t0, from, "overuses", false),
        _ => {
            counted_since(&sent, t0, from, "loss_backoffs", false)
                + counted_since(&sent, t0, from, "delay_backoffs", false)
        }
    }
}

/// The link's utilisation from `summary.json` (IP bytes over capacity, after the warm-up).
fn utilisation(summary: &Value) -> f64 {
    num(&summary["metrics"]["link"], "utilisation")
}

/// A 2 s outage at 2 Mbit/s, RTT 50 ms: the link carries 90 % of its capacity again within
/// 5 s of its return, the first frame after it is decoded within 1 s of the return, and
/// neither program restarts (one session at the receiver, the sender's statistics to the
/// end, no circuit-breaker trip).
#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "judges speed and quality: run in release (`cargo xtask test` does)"
)]
fn a_two_second_outage_is_recovered_within_five_seconds() {
    const DOWN: f64 = 14.0;
    const BACK: f64 = 16.0;
    for cc in CONTROLLERS {
        let toml = fault_scenario(
            &format!("outage-{cc}"),
            cc,
            r#"schedule = [ { at = "0s", rate = "2Mbit" }, { at = "14s", down = "2s" } ]"#,
            28,
            &camera_360p("10M"),
        );
        run_checked(
            &format!("outage {cc}"),
            &toml,
            |_| {},
            |s, out| {
                let t0 = t0(out);
                let bins = link_bins(out);
                let t90 = t90_after(&bins, BACK);
                let sent = lines(&out.join("raw/cg-send-cg.jsonl"));
                let recv = lines(&out.join("raw/cg-recv-cg.jsonl"));
                // The freeze the outage caused: the one that spans the link's return.
                let outage_freeze = freezes(&recv, t0)
                    .into_iter()
                    .find(|&(start, ms)| start < BACK && start + ms / 1e3 > DOWN);
                let picture_back = outage_freeze.map(|(start, ms)| start + ms / 1e3 - BACK);
                let last = sent.last().ok_or("no sender statistics")?;
                let sessions = recv.last().map_or(0.0, |l| num(l, "sessions"));
                eprintln!(
                    "outage {cc}: U {:.3}, t90 after the return {t90:?} s, outage freeze {outage_freeze:?} (picture back {picture_back:?} s after the return), sender to {:.1} s, breaker trips {}, receiver sessions {sessions}",
                    utilisation(s),
                    run_t(last, t0),
                    num(last, "breaker_trips"),
                );
                let mut bad = Vec::new();
                if !t90.is_some_and(|t| t <= 5.0) {
                    bad.push(format!("t90 after the return {t90:?} s > 5 s"));
                }
                if !picture_back.is_some_and(|t| t <= 1.0) {
                    bad.push(format!(
                        "picture back {picture_back:?} s after the return (> 1 s)"
                    ));
                }
                if run_t(last, t0) < 26.0 || num(last, "breaker_trips") > 0.0 || sessions != 1.0 {
                    bad.push("a program restarted or its breaker tripped".into());
                }
                if bad.is_empty() {
                    Ok(())
                } else {
                    Err(bad.join("; "))
                }
            },
        );
    }
}

/// 1 % of the packets held back 20 ms (later ones overtake them) and 1 % duplicated: the
/// link's utilisation within 3 % of the same run without them, no more back-offs than
/// that clean run made (a reordered packet is neither a loss nor a delay gradient), and no
/// frame decoded twice or undecodable.
#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "judges speed and quality: run in release (`cargo xtask test` does)"
)]
fn reordering_and_duplication_cost_no_rate_and_no_back_off() {
    for cc in CONTROLLERS {
        let clean = std::sync::Mutex::new(None::<(f64, f64)>);
        let toml = fault_scenario(
            &format!("clean-{cc}"),
            cc,
            r#"capacity = "2Mbit""#,
            30,
            &camera_360p("10M"),
        );
        run_checked(
            &format!("clean {cc}"),
            &toml,
            |_| {},
            |s, out| {
                let u = utilisation(s);
                let b = backoffs_since(cc, out, 5.0);
                eprintln!("clean {cc}: U {u:.3}, back-offs after 5 s {b}");
                *clean.lock().unwrap() = Some((u, b));
                if u.is_nan() {
                    Err("no utilisation".into())
                } else {
                    Ok(())
                }
            },
        );
        let (u_clean, b_clean) = clean.lock().unwrap().expect("the clean run was judged");
        let toml = fault_scenario(
            &format!("reorder-{cc}"),
            cc,
            r#"capacity = "2Mbit"
reorder = 0.01
reorder_delay = "20ms"
duplicate = 0.01"#,
            30,
            &camera_360p("10M"),
        );
        run_checked(
            &format!("reorder {cc}"),
            &toml,
            |_| {},
            |s, out| {
                let u = utilisation(s);
                let b = backoffs_since(cc, out, 5.0);
                let sent = lines(&out.join("raw/cg-send-cg.jsonl"));
                let recv = lines(&out.join("raw/cg-recv-cg.jsonl"));
                let (last_sent, last_recv) = (
                    sent.last().ok_or("no sender statistics")?,
                    recv.last().ok_or("no receiver statistics")?,
                );
                let link = &s["metrics"]["link"];
                let decoded = num(last_recv, "frames_decoded");
                let frames_sent = num(last_sent, "frames_sent");
                eprintln!(
                    "reorder {cc}: U {u:.3} (clean {u_clean:.3}), back-offs after 5 s {b} (clean {b_clean}), copies at the link {}, receiver: {} decoded of {} sent, {} decode errors, lost {}",
                    num(link, "duplicates"),
                    decoded,
                    frames_sent,
                    num(last_recv, "decode_errors"),
                    num(last_recv, "lost_packets"),
                );
                let mut bad = Vec::new();
                if u.is_nan() || u < 0.97 * u_clean {
                    bad.push(format!(
                        "U {u:.3} below 97 % of the clean run's {u_clean:.3}"
                    ));
                }
                if b > b_clean {
                    bad.push(format!(
                        "{b} back-offs against {b_clean} without reordering"
                    ));
                }
                if decoded > frames_sent || num(last_recv, "decode_errors") > 0.0 {
                    bad.push("a frame decoded twice or undecodable".into());
                }
                if bad.is_empty() {
                    Ok(())
                } else {
                    Err(bad.join("; "))
                }
            },
        );
    }
}

/// 2 % Gilbert-Elliott loss in bursts of 4 packets on average: NACK/RTX repairs what it can
/// (retransmissions arrive and repair), a key frame is asked for only for what they could
/// not repair (no more PLIs than frames given up), and the picture never freezes for more
/// than 500 ms.
#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "judges speed and quality: run in release (`cargo xtask test` does)"
)]
fn burst_loss_is_repaired_without_long_freezes() {
    for cc in CONTROLLERS {
        let toml = fault_scenario(
            &format!("burst-{cc}"),
            cc,
            r#"capacity = "2Mbit"
loss = { mean = 0.02, burst = 4 }"#,
            30,
            &camera_360p("10M"),
        );
        run_checked(
            &format!("burst loss {cc}"),
            &toml,
            |_| {},
            |s, out| {
                let t0 = t0(out);
                let recv = lines(&out.join("raw/cg-recv-cg.jsonl"));
                let last = recv.last().ok_or("no receiver statistics")?;
                let longest = freezes(&recv, t0)
                    .into_iter()
                    .filter(|&(t, _)| t >= 5.0)
                    .map(|(_, ms)| ms)
                    .fold(0.0, f64::max);
                let (rtx, nacks, plis, frames_lost, decoded) = (
                    num(last, "retransmissions"),
                    num(last, "nacks_sent"),
                    num(last, "plis_sent"),
                    num(last, "frames_lost"),
                    num(last, "frames_decoded"),
                );
                eprintln!(
                    "burst loss {cc}: U {:.3}, link loss {:.4}, NACKs {nacks}, retransmissions received {rtx}, frames given up {frames_lost}, PLIs {plis}, decoded {decoded}, longest freeze after 5 s {longest:.0} ms",
                    utilisation(s),
                    num(&s["metrics"]["link"], "loss_ratio"),
                );
                let mut bad = Vec::new();
                if rtx == 0.0 || nacks == 0.0 {
                    bad.push("no NACK/RTX repair".into());
                }
                if plis > frames_lost + 1.0 {
                    bad.push(format!("{plis} PLIs for {frames_lost} frames given up"));
                }
                if longest > 500.0 {
                    bad.push(format!("a freeze of {longest:.0} ms"));
                }
                if bad.is_empty() {
                    Ok(())
                } else {
                    Err(bad.join("; "))
                }
            },
        );
    }
}

/// 1 ms of delay jitter (normal, σ = 1 ms) on a 10 Mbit/s link the flow does not fill (its
/// maximum is 4 Mbit/s, so no queue builds): no over-use signal (GCC) and no queue-delay
/// back-off (SCReAM) after the start-up probes.
#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "judges speed and quality: run in release (`cargo xtask test` does)"
)]
fn one_millisecond_of_jitter_is_not_congestion() {
    for cc in CONTROLLERS {
        let toml = fault_scenario(
            &format!("jitter-{cc}"),
            cc,
            r#"capacity = "10Mbit"
jitter = "1ms""#,
            30,
            &camera_360p("4M"),
        );
        run_checked(
            &format!("jitter {cc}"),
            &toml,
            |_| {},
            |s, out| {
                let b = backoffs_since(cc, out, 5.0);
                let t0 = t0(out);
                let sent = lines(&out.join("raw/cg-send-cg.jsonl"));
                let target: Vec<f64> = sent
                    .iter()
                    .filter(|l| run_t(l, t0) >= 5.0)
                    .map(|l| num(l, "target_bps"))
                    .collect();
                let mean = target.iter().sum::<f64>() / target.len().max(1) as f64;
                eprintln!(
                    "jitter {cc}: U {:.3}, queue p95 {:.1} ms, back-offs after 5 s {b}, mean target {:.0} kbit/s",
                    utilisation(s),
                    s["metrics"]["link"]["qdelay_ms"]["p95"]
                        .as_f64()
                        .unwrap_or(f64::NAN),
                    mean / 1e3
                );
                if b > 0.0 {
                    Err(format!("{b} back-offs on jitter alone"))
                } else {
                    Ok(())
                }
            },
        );
    }
}

/// The mean of the sender's `send_rate_bps` samples between run times `a` and `b` s.
fn send_rate_between(sent: &[Value], t0: u64, a: f64, b: f64) -> f64 {
    let v: Vec<f64> = sent
        .iter()
        .filter(|l| (a..b).contains(&run_t(l, t0)))
        .map(|l| num(l, "send_rate_bps"))
        .collect();
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// The reverse path down for 5 s (no feedback reaches the sender; media still flows): the
/// sender halves its rate after each period without feedback (RFC 8888 §5; 0.5 s with
/// transport-wide CC and RFC 8888, 3 s with REMB), so from one period (+0.5 s) into the
/// blackout it sends at most 60 % of its rate before; within 5 s of the feedback's return
/// the link carries 90 % of its capacity again; the circuit breaker (15 s) does not trip.
#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "judges speed and quality: run in release (`cargo xtask test` does)"
)]
fn a_feedback_blackout_cuts_the_rate_and_is_recovered_within_five_seconds() {
    const DOWN: f64 = 12.0;
    const BACK: f64 = 17.0;
    for cc in CONTROLLERS {
        let period = if cc == "gcc-remb" { 3.0 } else { 0.5 };
        let toml = with_reverse(
            &format!("blackout-{cc}"),
            cc,
            r#"capacity = "2Mbit""#,
            r#"schedule = [ { at = "0s", rate = "100Mbit" }, { at = "12s", down = "5s" } ]"#,
            28,
            &camera_360p("10M"),
        );
        run_checked(
            &format!("feedback blackout {cc}"),
            &toml,
            |_| {},
            |s, out| {
                let t0 = t0(out);
                let sent = lines(&out.join("raw/cg-send-cg.jsonl"));
                let last = sent.last().ok_or("no sender statistics")?;
                let before = send_rate_between(&sent, t0, DOWN - 4.0, DOWN);
                let during = send_rate_between(&sent, t0, DOWN + period + 0.5, BACK);
                let t90 = t90_after(&link_bins(out), BACK);
                eprintln!(
                    "feedback blackout {cc}: U {:.3}, send rate before {:.0} kbit/s, from {:.1} s to the return {:.0} kbit/s, rate halvings {}, breaker trips {}, t90 after the return {t90:?} s",
                    utilisation(s),
                    before / 1e3,
                    DOWN + period + 0.5,
                    during / 1e3,
                    num(last, "feedback_timeouts"),
                    num(last, "breaker_trips"),
                );
                let mut bad = Vec::new();
                if during.is_nan() || during > 0.6 * before {
                    bad.push(format!(
                        "sent {:.0} kbit/s without feedback against {:.0} before",
                        during / 1e3,
                        before / 1e3
                    ));
                }
                if !t90.is_some_and(|t| t <= 5.0) {
                    bad.push(format!("t90 after the return {t90:?} s > 5 s"));
                }
                if num(last, "breaker_trips") > 0.0 {
                    bad.push("the circuit breaker tripped".into());
                }
                if bad.is_empty() {
                    Ok(())
                } else {
                    Err(bad.join("; "))
                }
            },
        );
    }
}
