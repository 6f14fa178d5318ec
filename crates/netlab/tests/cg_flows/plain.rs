//! Issue #9's plain-RTP flows: GCC at 1 Mbit/s in both modes, a capacity drop, a sender
//! that fails at start, a receiver killed and restarted.

use super::*;

/// 640×360 at 30 fps of scrolling SMPTE bars (moving content whose key frames stay a few
/// times a delta frame; the zone plate's are far larger).
const VIDEO_360P: &str =
    r#""--width", "640", "--height", "360", "--fps", "30", "--pattern", "smpte""#;

fn gcc_one_mbps(controller: &str) {
    let fwd = r#"capacity = "1Mbit"
delay = "25ms"
qdisc = { kind = "droptail", limit = "300ms" }"#;
    let toml = scenario(
        &format!("cg-{controller}-1mbit"),
        30,
        fwd,
        controller,
        "not_ect",
        // GCC's increase from its 300 kb/s default start takes most of a 30 s run; start
        // near the capacity so the run measures the steady state.
        &format!("{VIDEO_360P}, \"--start-bitrate\", \"800k\""),
    )
    .replace("@DELAY@", "25ms")
    .replace("@START@", "800k");
    run_judged(
        &format!("{controller}-1mbit"),
        &toml,
        |_| {},
        |run, spread, s, out| {
            let s = &s["metrics"];
            let u = num(&s["link"], "utilisation");
            let flow = &s["flows"][0];
            let q95 = flow["qdelay_ms"]["p95"].as_f64().unwrap_or(f64::NAN);
            let loss = flow["loss_ratio"].as_f64().unwrap_or(f64::NAN);
            let sent = lines(&out.join("raw/cg-send-cg.jsonl"));
            let recv = lines(&out.join("raw/cg-recv-cg.jsonl"));
            let (Some(ls), Some(lr)) = (sent.last(), recv.last()) else {
                return Err("no cg statistics".into());
            };
            let frames_sent = num(ls, "frames_sent");
            let decoded = num(lr, "frames_decoded");
            let t0 = t0(out);
            let long: Vec<(f64, f64)> = freezes(&recv, t0)
                .into_iter()
                .filter(|&(t, d)| t >= 5.0 && d > 1000.0)
                .collect();
            eprintln!(
                "{controller} 1 Mb/s: U {u:.3}, q95 {q95:.1} ms, loss {loss:.4}, decoded {decoded} of {frames_sent} frames, long freezes {long:?}"
            );
            spread.check(run, "utilisation", u, ONE_MBIT_U);
            spread.check(run, "queue p95 (ms)", q95, ONE_MBIT_Q95_MS);
            spread.check(run, "loss", loss, 0.0..=0.01);
            spread.check(
                run,
                "decoded share of the frames sent",
                decoded / frames_sent,
                0.90..=1.0,
            );
            spread.check(
                run,
                "freezes over 1 s after 5 s",
                long.len() as f64,
                0.0..=0.0,
            );
            Ok(())
        },
    );
}

/// Utilisation of the 1 Mbit/s DropTail link by either GCC.
const ONE_MBIT_U: std::ops::RangeInclusive<f64> = 0.80..=1.0;

/// Its queue p95 (ms): the 300 ms buffer must not fill.
const ONE_MBIT_Q95_MS: std::ops::RangeInclusive<f64> = 0.0..=150.0;

#[test]
#[cfg_attr(
    unoptimized,
    ignore = "judges speed and quality: run optimised (`--release`; `cargo xtask test` does)"
)]
fn gcc_remb_one_flow_1mbps_rtt50_dt300() {
    gcc_one_mbps("gcc-remb");
}

#[test]
#[cfg_attr(
    unoptimized,
    ignore = "judges speed and quality: run optimised (`--release`; `cargo xtask test` does)"
)]
fn gcc_send_side_one_flow_1mbps_rtt50_dt300() {
    gcc_one_mbps("gcc");
}

/// 1280×720 at 30 fps of cg-media's faint zone plate, whose VP8 rate follows targets from
/// 0.3 to 4 Mbit/s (scrolling SMPTE cannot go below ~0.6 Mbit/s at 640×360: after a drop to
/// 0.5 Mbit/s the encoder would overshoot whatever GCC asked).
const VIDEO_720P_FAINT: &str =
    r#""--width", "1280", "--height", "720", "--fps", "30", "--pattern", "faint-zone-plate""#;

#[test]
#[cfg_attr(
    unoptimized,
    ignore = "judges speed and quality: run optimised (`--release`; `cargo xtask test` does)"
)]
fn gcc_capacity_drop_2500_to_500_kbps() {
    let fwd = r#"schedule = [
  { at = "0s", rate = "2.5Mbit" },
  { at = "15s", rate = "500kbit" },
]
delay = "25ms"
qdisc = { kind = "droptail", limit = "300ms" }"#;
    let args = format!("{VIDEO_720P_FAINT}, \"--start-bitrate\", \"2M\"");
    let toml = scenario("cg-gcc-drop", 25, fwd, "gcc", "not_ect", &args)
        .replace("@DELAY@", "25ms")
        .replace("@START@", "2M");
    run_judged(
        "gcc-drop",
        &toml,
        |_| {},
        |run, spread, _s, out| {
            let t0 = t0(out);
            let sent = lines(&out.join("raw/cg-send-cg.jsonl"));
            let recv = lines(&out.join("raw/cg-recv-cg.jsonl"));
            let before: Vec<f64> = sent
                .iter()
                .filter(|l| (10.0..15.0).contains(&run_t(l, t0)))
                .map(|l| num(l, "send_rate_bps"))
                .collect();
            // The sending rate, averaged over 500 ms windows, below 0.6 Mb/s within 3 s.
            let after: Vec<(f64, f64)> = sent
                .iter()
                .filter(|l| run_t(l, t0) >= 15.0)
                .map(|l| (run_t(l, t0), num(l, "send_rate_bps")))
                .collect();
            let reached = after.windows(5).find_map(|w| {
                let mean = w.iter().map(|x| x.1).sum::<f64>() / 5.0;
                (mean < 600_000.0).then_some(w[4].0)
            });
            let all = freezes(&recv, t0);
            let longest = all
                .iter()
                .filter(|&&(t, _)| t >= 5.0)
                .map(|&(_, d)| d)
                .fold(0.0, f64::max);
            let long: Vec<(f64, f64)> = all
                .into_iter()
                .filter(|&(t, d)| t >= 5.0 && d > 2000.0)
                .collect();
            let mean_before = before.iter().sum::<f64>() / before.len().max(1) as f64;
            eprintln!(
                "GCC 2.5 → 0.5 Mb/s: rate before {:.0} kb/s, below 0.6 Mb/s at {reached:?} s, longest freeze after 5 s {longest:.0} ms, freezes over 2 s {long:?}",
                mean_before / 1e3
            );
            spread.check(
                run,
                "rate before the drop (kbit/s)",
                mean_before / 1e3,
                1000.0..=2500.0,
            );
            // Never is NaN, which misses.
            let after = reached.map_or(f64::NAN, |t| t - 15.0);
            spread.check(run, "below 0.6 Mbit/s after the drop (s)", after, 0.0..=3.0);
            spread.check(run, "longest freeze after 5 s (ms)", longest, 0.0..=2000.0);
            Ok(())
        },
    );
}

/// A flow process that fails at start (here `cg-send` with an unknown `--pattern`) stops the
/// run with its name and exit status instead of 60 s of an idle flow reported as a result.
#[test]
fn a_sender_that_fails_at_start_stops_the_run_with_its_error() {
    let _guard = lock();
    let toml = scenario(
        "cg-bad-sender",
        60,
        r#"capacity = "2Mbit"
delay = "10ms""#,
        "gcc",
        "not_ect",
        r#""--pattern", "no-such-pattern""#,
    )
    .replace("@DELAY@", "10ms")
    .replace("@START@", "300k");
    let err = run_netlab("cg-bad-sender", &toml, |_| {}).expect_err("the run must fail");
    assert!(
        err.contains("unknown pattern") && err.contains("cg-send cg exited with exit status: 1"),
        "{err}"
    );
    // Stopped at the failure (netlab says when, in run time), not at the scenario's end.
    let at: f64 = err
        .split("at t = ")
        .nth(1)
        .and_then(|r| r.split(" s,").next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no run time in: {err}"));
    assert!(at < 10.0, "{err}");
    let _ = std::fs::remove_dir_all(
        std::env::temp_dir().join(format!("netlab-cg-cg-bad-sender-{}", std::process::id())),
    );
}

#[test]
#[cfg_attr(
    unoptimized,
    ignore = "judges speed and quality: run optimised (`--release`; `cargo xtask test` does)"
)]
fn killed_receiver_trips_the_breaker_and_a_restarted_one_gets_the_stream_back() {
    let fwd = r#"capacity = "2Mbit"
delay = "10ms"
qdisc = { kind = "droptail", limit = "300ms" }"#;
    let toml = scenario(
        "cg-breaker",
        26,
        fwd,
        "gcc",
        "not_ect",
        r#""--width", "320", "--height", "180", "--fps", "30", "--pattern", "smpte", "--rtcp-timeout", "3s""#,
    )
    .replace("@DELAY@", "10ms")
    .replace("@START@", "300k");
    let restarted = std::sync::Mutex::new(None::<Replaced>);
    run_judged(
        "breaker",
        &toml,
        |out| {
            // Kill cg-recv at ~9 s, keep its network namespace, start a new cg-recv there at
            // ~16 s (after the 3 s RTCP timeout has tripped the breaker).
            *restarted.lock().unwrap() = replace_receiver(
                out,
                Duration::from_secs(9),
                Duration::from_secs(7),
                Duration::from_secs(14),
            );
        },
        |run, spread, _s, out| {
            let t0 = t0(out);
            let sent = lines(&out.join("raw/cg-send-cg.jsonl"));
            let first = lines(&out.join("raw/cg-recv-cg.jsonl"));
            let second = restarted
                .lock()
                .unwrap()
                .as_ref()
                .map(|r| lines(&r.stats))
                .unwrap_or_default();
            let tripped: Vec<f64> = sent
                .iter()
                .filter(|l| l["breaker_open"].as_bool() == Some(true))
                .map(|l| run_t(l, t0))
                .collect();
            // The rate of a sample is over the 100 ms before it: skip the first open sample.
            let rate_while_open = sent
                .windows(2)
                .filter(|w| {
                    w[0]["breaker_open"].as_bool() == Some(true)
                        && w[1]["breaker_open"].as_bool() == Some(true)
                })
                .map(|w| num(&w[1], "send_rate_bps"))
                .fold(0.0, f64::max);
            let last = sent.last().ok_or("no sender statistics")?;
            let decoded_before = first.last().map_or(0.0, |l| num(l, "frames_decoded"));
            let decoded_after = second.last().map_or(0.0, |l| num(l, "frames_decoded"));
            eprintln!(
                "breaker: open at {:?}..{:?} s, max rate while open {rate_while_open:.0} b/s, sender ran to {:.1} s (trips {}), decoded before kill {decoded_before}, after restart {decoded_after}",
                tripped.first(),
                tripped.last(),
                run_t(last, t0),
                num(last, "breaker_trips")
            );
            // Killed at about 9 s, the RTCP timeout 3 s: open at about 12 s.
            let opened = tripped.first().copied().unwrap_or(f64::NAN);
            spread.check(run, "breaker opened (s)", opened, 9.0..=14.0);
            spread.check(
                run,
                "rate while open (bit/s)",
                rate_while_open,
                0.0..=50_000.0,
            );
            spread.check(run, "cg-send ran to (s)", run_t(last, t0), 22.0..=30.0);
            spread.require(
                run,
                last["breaker_open"].as_bool() == Some(false),
                "the breaker did not close after the receiver came back",
            );
            // 30 fps for about 9 s before the kill, and the new receiver for about 10 s.
            spread.check(
                run,
                "decoded before the kill",
                decoded_before,
                100.0..=300.0,
            );
            spread.check(
                run,
                "decoded after the restart",
                decoded_after,
                60.0..=450.0,
            );
            Ok(())
        },
    );
}
