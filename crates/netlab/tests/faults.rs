//! Issue #17's fault suite: real `cg-send` and `cg-recv` through netlab's emulated bottleneck
//! with the faults real access networks have (an outage, reordering with duplication, burst
//! loss, jitter, a feedback blackout) and hostile datagrams, for each controller (send-side
//! GCC, GCC-REMB, SCReAM), each judged on what the link carried and what the viewer saw, and a
//! receiver killed with `kill -9` and started anew.
//!
//! Every case is 640×360 at 30 fps of the `camera` picture through 2 Mbit/s DropTail
//! (300 ms), RTT 50 ms, unless it says otherwise. Like `cg_flows`, they judge rates and
//! delays of real processes, so they run in release only (`cargo xtask test` does), one at a
//! time, each netlab run once more if it fails.

mod common;

use std::path::Path;
use std::sync::Mutex;

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

/// The growth of the controller counter `name` (in `extra`) over the samples from run time
/// `from` s to the end.
fn counted_since(samples: &[Value], t0: u64, from: f64, name: &str) -> f64 {
    let at = samples
        .iter()
        .find(|l| run_t(l, t0) >= from)
        .map_or(0.0, |l| extra(l, name));
    samples.last().map_or(0.0, |l| extra(l, name)) - at
}

/// The back-offs a controller made from `from` s on, as it counts them: GCC's over-use signals
/// (the sender's estimator in send-side mode, the receiver's in REMB mode) and SCReAM's window
/// reductions of the kinds `scream` names (`loss_backoffs`, `delay_backoffs`).
fn backoffs_since(controller: &str, out: &Path, from: f64, scream: &[&str]) -> f64 {
    let t0 = t0(out);
    let sent = lines(&out.join("raw/cg-send-cg.jsonl"));
    let recv = lines(&out.join("raw/cg-recv-cg.jsonl"));
    match controller {
        "gcc" => counted_since(&sent, t0, from, "overuses"),
        "gcc-remb" => counted_since(&recv, t0, from, "overuses"),
        _ => scream
            .iter()
            .map(|k| counted_since(&sent, t0, from, k))
            .sum(),
    }
}

/// What reordering could be mistaken for: a loss (SCReAM's window reductions for loss; GCC's
/// over-uses, which also count the delay gradient of a held-back packet).
const REORDER_BACKOFFS: &[&str] = &["loss_backoffs"];

/// `Ok` when nothing is wrong, else every complaint.
fn verdict(bad: Vec<String>) -> Result<(), String> {
    if bad.is_empty() {
        Ok(())
    } else {
        Err(bad.join("; "))
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
    unoptimized,
    ignore = "judges speed and quality: run optimised (`--release`; `cargo xtask test` does)"
)]
fn a_two_second_outage_is_recovered_within_five_seconds() {
    const DOWN: f64 = 10.0;
    const BACK: f64 = 12.0;
    for cc in CONTROLLERS {
        let toml = fault_scenario(
            &format!("outage-{cc}"),
            cc,
            r#"schedule = [ { at = "0s", rate = "2Mbit" }, { at = "10s", down = "2s" } ]"#,
            22,
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
                // The link is 90 % full at once after the return while the queue the outage
                // left drains, so t90 alone says little: the sender must be back too, and stay
                // (the 5 s after the bound, to the end of the run). 85 %: GCC holds its rate
                // while the queue drains (under-use), and its Kalman filter takes seconds to
                // leave under-use; before the controllers left the outage's losses and delays
                // out, this was 70-73 %.
                let settled = utilisation_between(&bins, BACK + 5.0, BACK + 10.0);
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
                    "outage {cc}: U {:.3}, t90 after the return {t90:?} s, link fill 5-10 s after it {settled:.3}, outage freeze {outage_freeze:?} (picture back {picture_back:?} s after the return), sender to {:.1} s, breaker trips {}, receiver sessions {sessions}",
                    utilisation(s),
                    run_t(last, t0),
                    num(last, "breaker_trips"),
                );
                let mut bad = Vec::new();
                if !t90.is_some_and(|t| t <= 5.0) {
                    bad.push(format!("t90 after the return {t90:?} s > 5 s"));
                }
                if outside(settled, 0.85, 1.0) {
                    bad.push(format!(
                        "the link {:.0} % full 5-10 s after the return (not 85–100 %)",
                        settled * 100.0
                    ));
                }
                if !picture_back.is_some_and(|t| t <= 1.0) {
                    bad.push(format!(
                        "picture back {picture_back:?} s after the return (> 1 s)"
                    ));
                }
                if run_t(last, t0) < 20.0 || num(last, "breaker_trips") > 0.0 || sessions != 1.0 {
                    bad.push("a program restarted or its breaker tripped".into());
                }
                verdict(bad)
            },
        );
    }
}

/// The clean run the reordering and hostile-datagram cases compare with (2 Mbit/s, 25 s): its
/// utilisation and its back-offs after 5 s. Run once per controller and test process.
fn clean_run(cc: &'static str) -> (f64, f64) {
    static CLEAN: Mutex<Vec<(&str, (f64, f64))>> = Mutex::new(Vec::new());
    if let Some(&(_, r)) = CLEAN.lock().unwrap().iter().find(|(c, _)| *c == cc) {
        return r;
    }
    let toml = fault_scenario(
        &format!("clean-{cc}"),
        cc,
        r#"capacity = "2Mbit""#,
        25,
        &camera_360p("10M"),
    );
    let got = Mutex::new(None);
    run_checked(
        &format!("clean {cc}"),
        &toml,
        |_| {},
        |s, out| {
            let u = utilisation(s);
            let b = backoffs_since(cc, out, 5.0, REORDER_BACKOFFS);
            eprintln!("clean {cc}: U {u:.3}, back-offs after 5 s {b}");
            *got.lock().unwrap() = Some((u, b));
            if u.is_nan() {
                Err("no utilisation".into())
            } else {
                Ok(())
            }
        },
    );
    let r = got.into_inner().unwrap().expect("the clean run was judged");
    CLEAN.lock().unwrap().push((cc, r));
    r
}

/// 1 % of the packets held back 20 ms (later ones overtake them) and 1 % duplicated: the
/// link's utilisation within 3 % of the same run without them, at most two back-offs more
/// than that clean run made (GCC's over-uses, SCReAM's reductions for loss: a reordered
/// packet is neither a loss nor a delay gradient), and no
/// frame decoded twice or undecodable.
#[test]
#[cfg_attr(
    unoptimized,
    ignore = "judges speed and quality: run optimised (`--release`; `cargo xtask test` does)"
)]
fn reordering_and_duplication_cost_no_rate_and_no_back_off() {
    for cc in CONTROLLERS {
        let (u_clean, b_clean) = clean_run(cc);
        let toml = fault_scenario(
            &format!("reorder-{cc}"),
            cc,
            r#"capacity = "2Mbit"
reorder = 0.01
reorder_delay = "20ms"
duplicate = 0.01"#,
            25,
            &camera_360p("10M"),
        );
        run_checked(
            &format!("reorder {cc}"),
            &toml,
            |_| {},
            |s, out| {
                let u = utilisation(s);
                let b = backoffs_since(cc, out, 5.0, REORDER_BACKOFFS);
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
                if outside(u, 0.97 * u_clean, 1.0) {
                    bad.push(format!(
                        "U {u:.3} not within 97 % of the clean run's {u_clean:.3} to 1.0"
                    ));
                }
                // GCC's over-uses on a full link vary by 1–2 between runs of 20 s (measured:
                // 1–3 in clean runs); what reordering caused before the SCReAM fix was 18
                // false losses in 30 s.
                if b > b_clean + 2.0 {
                    bad.push(format!(
                        "{b} back-offs against {b_clean} without reordering"
                    ));
                }
                if decoded > frames_sent || num(last_recv, "decode_errors") > 0.0 {
                    bad.push("a frame decoded twice or undecodable".into());
                }
                verdict(bad)
            },
        );
    }
}

/// 2 % Gilbert-Elliott loss in bursts of 4 packets on average: NACK/RTX repairs what it can
/// (retransmissions arrive and repair), a key frame is asked for only for what they could
/// not repair (after the start-up request for the first key frame, no more PLIs than frames
/// given up), and the picture never freezes for more than 500 ms.
#[test]
#[cfg_attr(
    unoptimized,
    ignore = "judges speed and quality: run optimised (`--release`; `cargo xtask test` does)"
)]
fn burst_loss_is_repaired_without_long_freezes() {
    for cc in CONTROLLERS {
        let toml = fault_scenario(
            &format!("burst-{cc}"),
            cc,
            r#"capacity = "2Mbit"
loss = { mean = 0.02, burst = 4 }"#,
            20,
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
                // When each PLI went out, and the frames given up by then.
                let pli_at: Vec<(f64, f64)> = recv
                    .windows(2)
                    .filter(|w| num(&w[1], "plis_sent") > num(&w[0], "plis_sent"))
                    .map(|w| (run_t(&w[1], t0), num(&w[1], "frames_lost")))
                    .collect();
                eprintln!(
                    "burst loss {cc}: U {:.3}, link loss {:.4}, NACKs {nacks}, retransmissions received {rtx}, frames given up {frames_lost}, PLIs {plis} (at s, frames given up: {pli_at:?}), decoded {decoded}, decode errors {}, longest freeze after 5 s {longest:.0} ms",
                    utilisation(s),
                    num(&s["metrics"]["link"], "loss_ratio"),
                    num(last, "decode_errors"),
                );
                let mut bad = Vec::new();
                if rtx == 0.0 || nacks == 0.0 {
                    bad.push("no NACK/RTX repair".into());
                }
                // Start-up PLIs (the receiver asks for its first key frame) are not repairs.
                let later_plis = pli_at.iter().filter(|&&(t, _)| t >= 2.0).count() as f64;
                if later_plis > frames_lost {
                    bad.push(format!(
                        "{later_plis} PLIs after the start for {frames_lost} frames given up"
                    ));
                }
                if longest > 500.0 {
                    bad.push(format!("a freeze of {longest:.0} ms"));
                }
                verdict(bad)
            },
        );
    }
}

/// 1 ms of delay jitter (normal, σ = 1 ms) on a 10 Mbit/s link the flow does not fill (its
/// maximum is 4 Mbit/s, so no queue builds): no over-use signal (GCC) and no queue-delay
/// back-off (SCReAM) after the start-up probes.
#[test]
#[cfg_attr(
    unoptimized,
    ignore = "judges speed and quality: run optimised (`--release`; `cargo xtask test` does)"
)]
fn one_millisecond_of_jitter_is_not_congestion() {
    for cc in CONTROLLERS {
        let toml = fault_scenario(
            &format!("jitter-{cc}"),
            cc,
            r#"capacity = "10Mbit"
jitter = "1ms""#,
            20,
            &camera_360p("4M"),
        );
        run_checked(
            &format!("jitter {cc}"),
            &toml,
            |_| {},
            |s, out| {
                let b = backoffs_since(cc, out, 5.0, &["loss_backoffs", "delay_backoffs"]);
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
    unoptimized,
    ignore = "judges speed and quality: run optimised (`--release`; `cargo xtask test` does)"
)]
fn a_feedback_blackout_cuts_the_rate_and_is_recovered_within_five_seconds() {
    const DOWN: f64 = 10.0;
    const BACK: f64 = 15.0;
    for cc in CONTROLLERS {
        let period = if cc == "gcc-remb" { 3.0 } else { 0.5 };
        let toml = with_reverse(
            &format!("blackout-{cc}"),
            cc,
            r#"capacity = "2Mbit""#,
            r#"schedule = [ { at = "0s", rate = "100Mbit" }, { at = "10s", down = "5s" } ]"#,
            24,
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
                verdict(bad)
            },
        );
    }
}

/// `kill -9` of cg-recv at ≈ 8 s and a new one started 0.5 s later in its place (same port
/// and arguments): the new receiver decodes its first frame within 3 s of its start and then
/// has no freeze over 500 ms, the link carries 90 % of its capacity again within 5 s of the
/// restart, and cg-send runs on (its statistics to the end, no circuit-breaker trip).
#[test]
#[cfg_attr(
    unoptimized,
    ignore = "judges speed and quality: run optimised (`--release`; `cargo xtask test` does)"
)]
fn a_killed_receiver_replaced_by_a_new_one_has_the_stream_back_within_three_seconds() {
    use std::time::Duration;
    for cc in CONTROLLERS {
        let toml = fault_scenario(
            &format!("kill-recv-{cc}"),
            cc,
            r#"capacity = "2Mbit""#,
            22,
            &camera_360p("10M"),
        );
        let replaced = Mutex::new(None::<Replaced>);
        run_checked(
            &format!("killed receiver {cc}"),
            &toml,
            |out| {
                *replaced.lock().unwrap() = replace_receiver(
                    out,
                    Duration::from_secs(8),
                    Duration::from_millis(500),
                    Duration::from_secs(12),
                )
            },
            |s, out| {
                let r = replaced.lock().unwrap();
                let r = r.as_ref().ok_or("the receiver was not replaced")?;
                let t0 = t0(out);
                let restart = (r.started_mono_ns as f64 - t0 as f64) / 1e9;
                let sent = lines(&out.join("raw/cg-send-cg.jsonl"));
                let first = lines(&out.join("raw/cg-recv-cg.jsonl"));
                let second = lines(&r.stats);
                let first_frame = second
                    .iter()
                    .find(|l| num(l, "frames_decoded") > 0.0)
                    .map(|l| run_t(l, t0) - restart);
                let longest_after = freezes(&second, t0)
                    .into_iter()
                    .map(|(_, ms)| ms)
                    .fold(0.0, f64::max);
                let t90 = t90_after(&link_bins(out), restart);
                let last = sent.last().ok_or("no sender statistics")?;
                let decoded = |v: &[Value]| v.last().map_or(0.0, |l| num(l, "frames_decoded"));
                eprintln!(
                    "killed receiver {cc}: restarted at {restart:.1} s; first frame {first_frame:?} s after it; longest freeze after {longest_after:.0} ms; link t90 after the restart {t90:?} s; U {:.3}; decoded {} before the kill, {} after; sender to {:.1} s, breaker trips {}",
                    utilisation(s),
                    decoded(&first),
                    decoded(&second),
                    run_t(last, t0),
                    num(last, "breaker_trips"),
                );
                let mut bad = Vec::new();
                if !first_frame.is_some_and(|t| t <= 3.0) {
                    bad.push(format!(
                        "first frame {first_frame:?} s after the restart (> 3 s)"
                    ));
                }
                if longest_after > 500.0 {
                    bad.push(format!("a {longest_after:.0} ms freeze after the restart"));
                }
                if !t90.is_some_and(|t| t <= 5.0) {
                    bad.push(format!("link t90 after the restart {t90:?} s > 5 s"));
                }
                if run_t(last, t0) < 20.0 || num(last, "breaker_trips") > 0.0 {
                    bad.push("cg-send stopped or its breaker tripped".into());
                }
                verdict(bad)
            },
        );
    }
}

/// A hostile datagram, the `i`-th from xorshift state `x`: random bytes of any length up to
/// 1400, an RTP header cut short, or RTP and RTCP (receiver report, transport-wide feedback)
/// naming the stream's SSRCs (cg's defaults) with random contents.
fn junk(x: &mut u64, i: u64) -> Vec<u8> {
    let mut next = || {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *x
    };
    let len = (next() % 1400) as usize;
    let mut b: Vec<u8> = (0..len).map(|_| next() as u8).collect();
    let media_ssrc = 0x6367_0001u32.to_be_bytes();
    match i % 5 {
        0 | 1 => {}
        2 => b.truncate((next() % 12) as usize),
        3 => {
            b.resize(b.len().max(12), 0);
            b[0] = 0x80;
            b[1] = 96;
            b[8..12].copy_from_slice(&media_ssrc);
        }
        _ => {
            b.resize(b.len().max(32), 0);
            b[0] = if (i / 5).is_multiple_of(2) {
                0x81
            } else {
                0x8F
            };
            b[1] = if (i / 5).is_multiple_of(2) { 201 } else { 205 };
            b[8..12].copy_from_slice(&media_ssrc);
        }
    }
    b
}

/// Sends `per_s` hostile datagrams a second for `secs` to `port` on the loopback of the
/// network namespace of process `pid` (so from a foreign address, and without crossing the
/// bottleneck); returns how many were sent.
fn flood(pid: i32, port: u16, per_s: u64, secs: f64) -> std::thread::JoinHandle<u64> {
    use std::os::fd::AsRawFd;
    std::thread::spawn(move || {
        let Ok(ns) = std::fs::File::open(format!("/proc/{pid}/ns/net")) else {
            return 0;
        };
        // SAFETY: setns(2) moves only this thread into the namespace; `ns` is open.
        if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return 0;
        }
        let Ok(sock) = std::net::UdpSocket::bind("127.0.0.1:0") else {
            return 0;
        };
        let to = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        let start = std::time::Instant::now();
        let (mut x, mut sent) = (0x9E37_79B9_7F4A_7C15u64 ^ u64::from(port), 0u64);
        while start.elapsed().as_secs_f64() < secs {
            let due = (start.elapsed().as_secs_f64() * per_s as f64) as u64;
            while sent < due {
                let d = junk(&mut x, sent);
                if sock.send_to(&d, to).is_err() {
                    break;
                }
                sent += 1;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        sent
    })
}

/// The local port of the UDP socket process `pid` holds (from its fds and its namespace's
/// `/proc/net/udp`).
fn udp_port(pid: i32) -> Option<u16> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .ok()?
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter_map(|l| {
            let l = l.to_string_lossy().into_owned();
            l.strip_prefix("socket:[")
                .and_then(|r| r.strip_suffix(']'))
                .map(str::to_owned)
        })
        .collect();
    ["udp", "udp6"].iter().find_map(|f| {
        let table = std::fs::read_to_string(format!("/proc/{pid}/net/{f}")).ok()?;
        table.lines().skip(1).find_map(|l| {
            let v: Vec<&str> = l.split_whitespace().collect();
            (v.len() > 9 && inodes.iter().any(|i| i == v[9]))
                .then(|| u16::from_str_radix(v[1].rsplit(':').next()?, 16).ok())
                .flatten()
        })
    })
}

/// Resident memory of process `pid`, KiB.
fn rss_kib(pid: i32) -> Option<f64> {
    cg_types::rss_kib(u32::try_from(pid).ok()).map(|k| k as f64)
}

/// What the flood did: datagrams sent to cg-send and to cg-recv, and each process's RSS
/// (KiB) when it started and when it ended.
#[derive(Debug, Default, Clone, Copy)]
struct Flooded {
    to_send: u64,
    to_recv: u64,
    rss_send: (f64, f64),
    rss_recv: (f64, f64),
}

/// Floods cg-send's and cg-recv's ports (see [`flood`]) from run time `from` s for `secs`
/// s, 10 000 datagrams a second each, and reads both processes' RSS before and after.
fn flood_both(out: &Path, from: f64, secs: f64) -> Result<Flooded, String> {
    let find = |what: &str| wait_for_pid(out, what, 200).ok_or(format!("no {what} process found"));
    let (send, recv) = (find("cg-send")?, find("cg-recv")?);
    // netlab writes run.json (and its t0) at the end: wait on cg-send's own clock (its
    // statistics' `t`; it starts at run time 0).
    let stats = out.join("raw/cg-send-cg.jsonl");
    for _ in 0..600 {
        if lines(&stats).last().is_some_and(|l| num(l, "t") >= from) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let port = |pid: i32| {
        udp_port(pid).ok_or_else(|| {
            format!(
                "no UDP socket found for pid {pid} ({}; fds {:?})",
                std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
                    .unwrap_or_default()
                    .replace('\0', " "),
                std::fs::read_dir(format!("/proc/{pid}/fd"))
                    .map(|d| d
                        .flatten()
                        .filter_map(|e| std::fs::read_link(e.path()).ok())
                        .collect::<Vec<_>>())
                    .unwrap_or_default()
            )
        })
    };
    let (send_port, recv_port) = (port(send)?, port(recv)?);
    let before = (rss_kib(send), rss_kib(recv));
    let a = flood(send, send_port, 10_000, secs);
    let b = flood(recv, recv_port, 10_000, secs);
    let (to_send, to_recv) = (a.join().unwrap_or(0), b.join().unwrap_or(0));
    let after = (rss_kib(send), rss_kib(recv));
    let kib = |v: Option<f64>| v.unwrap_or(f64::NAN);
    Ok(Flooded {
        to_send,
        to_recv,
        rss_send: (kib(before.0), kib(after.0)),
        rss_recv: (kib(before.1), kib(after.1)),
    })
}

/// Hostile datagrams from a foreign address — random bytes, truncated RTP, RTP and RTCP naming
/// the stream's SSRCs — at 10 000 a second for 10 s to each of cg-send's and cg-recv's ports
/// (from 8 s on): every one is dropped and counted (each program's `foreign_datagrams`), the
/// link's utilisation stays within 5 % of the clean run, neither program stops, and neither
/// grows by more than 8 MiB of resident memory over the flood.
#[test]
#[cfg_attr(
    unoptimized,
    ignore = "judges speed and quality: run optimised (`--release`; `cargo xtask test` does)"
)]
fn hostile_datagrams_are_dropped_and_counted_without_harm() {
    const FROM: f64 = 8.0;
    const SECS: f64 = 10.0;
    for cc in CONTROLLERS {
        let (u_clean, _) = clean_run(cc);
        let toml = fault_scenario(
            &format!("hostile-{cc}"),
            cc,
            r#"capacity = "2Mbit""#,
            25,
            &camera_360p("10M"),
        );
        let flooded = Mutex::new(Err::<Flooded, String>("the flood did not start".into()));
        run_checked(
            &format!("hostile {cc}"),
            &toml,
            |out| *flooded.lock().unwrap() = flood_both(out, FROM, SECS),
            |s, out| {
                let f = flooded.lock().unwrap().clone()?;
                let t0 = t0(out);
                let sent = lines(&out.join("raw/cg-send-cg.jsonl"));
                let recv = lines(&out.join("raw/cg-recv-cg.jsonl"));
                let (ls, lr) = (
                    sent.last().ok_or("no sender statistics")?,
                    recv.last().ok_or("no receiver statistics")?,
                );
                let u = utilisation(s);
                let (fs, fr) = (num(ls, "foreign_datagrams"), num(lr, "foreign_datagrams"));
                let grow = |(a, b): (f64, f64)| (b - a) / 1024.0;
                eprintln!(
                    "hostile {cc}: U {u:.3} (clean {u_clean:.3}); to cg-send {} sent, {fs} counted foreign; to cg-recv {} sent, {fr} counted foreign; RSS growth cg-send {:.1} MiB ({:.0} → {:.0} KiB), cg-recv {:.1} MiB; sender to {:.1} s, receiver sessions {}",
                    f.to_send,
                    f.to_recv,
                    grow(f.rss_send),
                    f.rss_send.0,
                    f.rss_send.1,
                    grow(f.rss_recv),
                    run_t(ls, t0),
                    num(lr, "sessions"),
                );
                let mut bad = Vec::new();
                if f.to_send < 90_000 || f.to_recv < 90_000 {
                    bad.push(format!(
                        "the flood sent only {} and {} datagrams",
                        f.to_send, f.to_recv
                    ));
                }
                if fs < 0.95 * f.to_send as f64 || fr < 0.95 * f.to_recv as f64 {
                    bad.push("hostile datagrams not counted".into());
                }
                if outside(u, 0.95 * u_clean, 1.0) {
                    bad.push(format!(
                        "U {u:.3} not within 95 % of the clean run's {u_clean:.3} to 1.0"
                    ));
                }
                let over = |g: f64| g.is_nan() || g > 8.0;
                if over(grow(f.rss_send)) || over(grow(f.rss_recv)) {
                    bad.push("resident memory grew by more than 8 MiB".into());
                }
                if run_t(ls, t0) < 23.0 || num(lr, "sessions") != 1.0 {
                    bad.push("a program stopped or restarted".into());
                }
                verdict(bad)
            },
        );
    }
}
