//! The link's faults: a two-second outage, reordering with duplication, burst loss and
//! jitter.

use super::*;

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
    judge_runs("outage", |run, spread| {
        for cc in CONTROLLERS {
            let toml = fault_scenario(
                &format!("outage-{cc}"),
                cc,
                r#"schedule = [ { at = "0s", rate = "2Mbit" }, { at = "10s", down = "2s" } ]"#,
                22,
                &camera_360p("10M"),
            );
            run_once(
                &format!("outage {cc}"),
                &toml,
                run,
                spread,
                |_| {},
                |run, spread, s, out| {
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
                    spread.check(
                        run,
                        format!("{cc}: t90 after the return (s)"),
                        t90.unwrap_or(f64::NAN),
                        OUTAGE_T90_S,
                    );
                    spread.check(
                        run,
                        format!("{cc}: link fill 5–10 s after the return"),
                        settled,
                        0.85..=1.0,
                    );
                    spread.check(
                        run,
                        format!("{cc}: picture back after the return (s)"),
                        picture_back.unwrap_or(f64::NAN),
                        0.0..=1.0,
                    );
                    ran_on(spread, run, cc, last, t0, 20.0..=26.0);
                    spread.check(run, format!("{cc}: receiver sessions"), sessions, 1.0..=1.0);
                    Ok(())
                },
            );
        }
    });
}

/// t90 after the outage's return (s): the 5 s of the doc above.
const OUTAGE_T90_S: std::ops::RangeInclusive<f64> = 0.0..=5.0;

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
    judge_runs("reorder", |run, spread| {
        for cc in CONTROLLERS {
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
            run_once(
                &format!("reorder {cc}"),
                &toml,
                run,
                spread,
                |_| {},
                |run, spread, s, out| {
                    let (u_clean, b_clean) = clean_run(cc, run);
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
                    // Above the clean run's is that run's own spread, which says nothing;
                    // the other side is the link's. The doc's 3 % lies inside the spread:
                    // the worst run measured less 0.03 (`docs/notes/2026-12-02-runs.md` §4).
                    spread.check(
                        run,
                        format!("{cc}: utilisation over the clean run's"),
                        u / u_clean,
                        0.94..=f64::INFINITY,
                    );
                    spread.check(run, format!("{cc}: utilisation"), u, 0.0..=1.0);
                    // GCC's over-uses on a full link vary by 1–2 between runs of 20 s (measured:
                    // 1–3 in clean runs); what reordering caused before the SCReAM fix was 18
                    // false losses in 30 s.
                    spread.check(
                        run,
                        format!("{cc}: back-offs beyond the clean run's"),
                        b - b_clean,
                        -5.0..=2.0,
                    );
                    spread.check(
                        run,
                        format!("{cc}: decoded share of the frames sent"),
                        decoded / frames_sent,
                        0.90..=1.0,
                    );
                    spread.check(
                        run,
                        format!("{cc}: decode errors"),
                        num(last_recv, "decode_errors"),
                        0.0..=0.0,
                    );
                    Ok(())
                },
            );
        }
    });
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
    judge_runs("burst loss", |run, spread| {
        for cc in CONTROLLERS {
            let toml = fault_scenario(
                &format!("burst-{cc}"),
                cc,
                r#"capacity = "2Mbit"
loss = { mean = 0.02, burst = 4 }"#,
                20,
                &camera_360p("10M"),
            );
            run_once(
                &format!("burst loss {cc}"),
                &toml,
                run,
                spread,
                |_| {},
                |run, spread, s, out| {
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
                    spread.require(
                        run,
                        rtx > 0.0 && nacks > 0.0,
                        format!("{cc}: no NACK/RTX repair"),
                    );
                    // Start-up PLIs (the receiver asks for its first key frame) are not repairs.
                    let later_plis = pli_at.iter().filter(|&&(t, _)| t >= 2.0).count() as f64;
                    spread.check(
                        run,
                        format!("{cc}: PLIs after the start beyond the frames given up"),
                        later_plis - frames_lost,
                        f64::NEG_INFINITY..=0.0,
                    );
                    spread.check(
                        run,
                        format!("{cc}: longest freeze after 5 s (ms)"),
                        longest,
                        0.0..=500.0,
                    );
                    spread.check(
                        run,
                        format!("{cc}: utilisation"),
                        utilisation(s),
                        BURST_LOSS_U,
                    );
                    Ok(())
                },
            );
        }
    });
}

/// Utilisation of the 2 Mbit/s link under 2 % burst loss: the worst run measured less 0.09
/// (`docs/notes/2026-12-02-runs.md` §4).
const BURST_LOSS_U: std::ops::RangeInclusive<f64> = 0.70..=1.0;

/// 1 ms of delay jitter (normal, σ = 1 ms) on a 10 Mbit/s link the flow does not fill (its
/// maximum is 4 Mbit/s, so no queue builds): no over-use signal (GCC) and no queue-delay
/// back-off (SCReAM) after the start-up probes.
#[test]
#[cfg_attr(
    unoptimized,
    ignore = "judges speed and quality: run optimised (`--release`; `cargo xtask test` does)"
)]
fn one_millisecond_of_jitter_is_not_congestion() {
    judge_runs("jitter", |run, spread| {
        for cc in CONTROLLERS {
            let toml = fault_scenario(
                &format!("jitter-{cc}"),
                cc,
                r#"capacity = "10Mbit"
jitter = "1ms""#,
                20,
                &camera_360p("4M"),
            );
            run_once(
                &format!("jitter {cc}"),
                &toml,
                run,
                spread,
                |_| {},
                |run, spread, s, out| {
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
                    spread.check(run, format!("{cc}: back-offs after 5 s"), b, 0.0..=0.0);
                    Ok(())
                },
            );
        }
    });
}
