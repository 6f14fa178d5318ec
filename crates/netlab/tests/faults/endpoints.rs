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
    judge_runs("feedback blackout", |run, spread| {
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
            run_once(
                &format!("feedback blackout {cc}"),
                &toml,
                run,
                spread,
                |_| {},
                |run, spread, s, out| {
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
                    spread.check(
                        run,
                        format!("{cc}: send rate before (kbit/s)"),
                        before / 1e3,
                        BLACKOUT_RATE_BEFORE_KBPS,
                    );
                    spread.check(
                        run,
                        format!("{cc}: send rate without feedback over before"),
                        during / before,
                        0.0..=0.6,
                    );
                    spread.check(
                        run,
                        format!("{cc}: t90 after the return (s)"),
                        t90.unwrap_or(f64::NAN),
                        BLACKOUT_T90_S,
                    );
                    spread.check(
                        run,
                        format!("{cc}: breaker trips"),
                        num(last, "breaker_trips"),
                        0.0..=0.0,
                    );
                    Ok(())
                },
            );
        }
    });
}

/// The send rate in the 4 s before the blackout (kbit/s): the 2 Mbit/s link filled.
const BLACKOUT_RATE_BEFORE_KBPS: std::ops::RangeInclusive<f64> = 1400.0..=2100.0;

/// t90 after the feedback's return (s): the 5 s of the doc above.
const BLACKOUT_T90_S: std::ops::RangeInclusive<f64> = 0.0..=5.0;

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
    judge_runs("killed receiver", |run, spread| {
        for cc in CONTROLLERS {
            let toml = fault_scenario(
                &format!("kill-recv-{cc}"),
                cc,
                r#"capacity = "2Mbit""#,
                22,
                &camera_360p("10M"),
            );
            let replaced = Mutex::new(None::<Replaced>);
            run_once(
                &format!("killed receiver {cc}"),
                &toml,
                run,
                spread,
                |out| {
                    *replaced.lock().unwrap() = replace_receiver(
                        out,
                        Duration::from_secs(8),
                        Duration::from_millis(500),
                        Duration::from_secs(12),
                    )
                },
                |run, spread, s, out| {
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
                    let first_frame = first_frame.unwrap_or(f64::NAN);
                    spread.check(
                        run,
                        format!("{cc}: first frame after the restart (s)"),
                        first_frame,
                        0.0..=3.0,
                    );
                    spread.check(
                        run,
                        format!("{cc}: longest freeze after the restart (ms)"),
                        longest_after,
                        0.0..=500.0,
                    );
                    spread.check(
                        run,
                        format!("{cc}: link t90 after the restart (s)"),
                        t90.unwrap_or(f64::NAN),
                        0.0..=5.0,
                    );
                    spread.check(run, format!("{cc}: utilisation"), utilisation(s), KILLED_U);
                    ran_on(spread, run, cc, last, t0, 20.0..=26.0);
                    Ok(())
                },
            );
        }
    });
}

/// The link's utilisation over a run with the receiver killed and replaced (the stream is
/// away for the half second of the gap and its restart).
const KILLED_U: std::ops::RangeInclusive<f64> = 0.70..=1.0;
