//! The endpoints' faults: a feedback blackout on the reverse path, and a receiver killed with
//! `kill -9` and started anew.

use super::*;

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
