//! The emulated bottleneck in namespaces, measured: rate, loss and RTT against the
//! configuration, TCP over DropTail and CoDel, ECN marks, an outage, duplication and
//! reordering, DualPI2 beside CUBIC, an on/off flow.

use super::*;
use cg_netlab::emu::record;

#[test]
fn udp_2mbit_into_1mbit_droptail300_leaves_at_capacity_with_half_lost() {
    let _g = lock();
    run_checked("udp-dt300", UDP_DT300, |s, out| {
        let m = &s["metrics"];
        let rate = f(m, &["flows", "0", "throughput_mbps"]);
        ensure!((rate - 1.0).abs() <= 0.02, "delivered {rate} Mb/s");
        let loss = f(m, &["flows", "0", "loss_ratio"]);
        ensure!((loss - 0.5).abs() <= 0.03, "loss {loss}");
        let q50 = f(m, &["flows", "0", "qdelay_ms", "p50"]);
        // DT/300 at 1 Mb/s holds 37 500 B = 30 datagrams of 1228 B = 295 ms.
        ensure!(
            (270.0..=310.0).contains(&q50),
            "median queuing delay {q50} ms"
        );
        // Every drop is counted: the datagrams missing at the receiver are the bottleneck's
        // drops (a few packets of slack: drops are timed at the queue, gaps at the receiver).
        let tun = f(s, &["run", "tun_drops", "0"]);
        ensure!(tun == 0.0, "no hidden drops at 2 Mb/s: {tun}");
        let drops = f(m, &["flows", "0", "drops"]);
        let gaps = f(m, &["flows", "0", "receiver_lost"]);
        ensure!(drops > 500.0, "{drops}");
        ensure!(
            (gaps - drops).abs() <= 0.02 * drops + 5.0,
            "receiver gaps {gaps} vs bottleneck drops {drops}"
        );
        for png in ["rate.png", "delay.png", "loss.png"] {
            ensure!(
                std::fs::metadata(out.join(png))
                    .map(|m| m.len())
                    .unwrap_or(0)
                    > 10_000,
                "{png}"
            );
        }
        ensure!(out.join("flow-udp.csv").exists());
        // Nothing of the run survives it.
        ensure!(processes_mentioning(out.to_str().unwrap()).is_empty());
        Ok(())
    });
}

#[test]
fn idle_rtt_matches_the_configured_delay_within_one_millisecond() {
    let _g = lock();
    run_checked(
        "rtt",
        r#"
duration = "2s"
[forward]
capacity = "10Mbit"
delay = "30ms"
[reverse]
capacity = "10Mbit"
delay = "10ms"
[[flows]]
name = "tiny"
kind = "udp"
rate = "50kbit"
from = "s1"
to = "r1"
"#,
        |s, _out| {
            let expected = f(s, &["run", "rtt_expected_ms"]);
            ensure!((expected - 40.1).abs() < 0.1, "expected {expected}");
            let min = f(s, &["run", "rtt_min_ms"]);
            let median = f(s, &["run", "rtt_measured_ms"]);
            ensure!(
                (min - expected).abs() <= 1.0,
                "measured {min} vs {expected}"
            );
            // The median sees scheduling noise of a loaded machine; still close.
            ensure!(
                (median - expected).abs() <= 2.0,
                "median {median} vs {expected}"
            );
            Ok(())
        },
    );
}

fn tcp_scenario(qdisc: &str) -> String {
    format!(
        r#"
duration = "16s"
[forward]
capacity = "10Mbit"
delay = "25ms"
qdisc = {qdisc}
[reverse]
capacity = "100Mbit"
delay = "25ms"
[[flows]]
name = "cubic"
kind = "tcp"
cc = "cubic"
from = "s1"
to = "r1"
[metrics]
warmup = "6s"
"#
    )
}

#[test]
fn tcp_cubic_fills_droptail300_with_high_utilisation_and_bufferbloat() {
    let _g = lock();
    run_checked(
        "tcp-dt300",
        &tcp_scenario(r#"{ kind = "droptail", limit = "300ms" }"#),
        |s, _out| {
            let m = &s["metrics"];
            let u = f(m, &["link", "utilisation"]);
            ensure!(u >= 0.90, "utilisation {u}");
            let q50 = f(m, &["flows", "0", "qdelay_ms", "p50"]);
            ensure!(q50 >= 150.0, "median queuing delay {q50} ms");
            let rtt = f(m, &["flows", "0", "rtt_ms", "p50"]);
            ensure!(rtt >= 200.0, "endpoint RTT {rtt} ms should show the queue");
            Ok(())
        },
    );
}

#[test]
fn tcp_cubic_under_codel_keeps_the_queue_short_at_high_utilisation() {
    let _g = lock();
    run_checked(
        "tcp-codel",
        &tcp_scenario(r#"{ kind = "codel" }"#),
        |s, _out| {
            let m = &s["metrics"];
            let u = f(m, &["link", "utilisation"]);
            ensure!(u >= 0.90, "utilisation {u}");
            let q50 = f(m, &["flows", "0", "qdelay_ms", "p50"]);
            ensure!(q50 <= 15.0, "median queuing delay {q50} ms");
            ensure!(
                f(m, &["flows", "0", "loss_ratio"]) > 0.0,
                "CoDel drops to keep the delay"
            );
            Ok(())
        },
    );
}

#[test]
fn ce_marks_reach_the_receiver_intact_and_reverse_traffic_flows() {
    let _g = lock();
    run_checked(
        "ecn",
        r#"
duration = "10s"
[forward]
capacity = "1Mbit"
delay = "10ms"
qdisc = { kind = "codel", ecn = true }
[reverse]
capacity = "100Mbit"
delay = "10ms"
[[flows]]
name = "ect0"
kind = "udp"
rate = "1.5Mbit"
ecn = "ect0"
from = "s1"
to = "r1"
[[flows]]
name = "back"
kind = "udp"
rate = "300kbit"
from = "r1"
to = "s1"
[metrics]
warmup = "2s"
"#,
        |s, _out| {
            let m = &s["metrics"];
            let marks = f(m, &["flows", "0", "ce_marks"]);
            let seen = f(m, &["flows", "0", "receiver_ce"]);
            ensure!(marks > 50.0, "CoDel with ECN marks: {marks}");
            // A CE packet with a broken IPv4 checksum would be discarded by the receiver's kernel.
            ensure!(
                seen >= 0.9 * marks,
                "receiver saw {seen} CE of {marks} marked"
            );
            ensure!(m["flows"][1]["direction"] == "reverse", "direction");
            let back = f(m, &["flows", "1", "throughput_mbps"]);
            ensure!((back - 0.3).abs() < 0.015, "reverse flow {back} Mb/s");
            Ok(())
        },
    );
}

#[test]
fn a_two_second_outage_delivers_nothing_then_the_queue_drains_at_capacity() {
    let _g = lock();
    // 1 Mb/s of UDP into 2 Mb/s, down from 4 s to 6 s; the queue holds the outage's 2 s of
    // datagrams (≈ 100).
    run_checked(
        "outage",
        r#"
duration = "10s"
[forward]
schedule = [ { at = "0s", rate = "2Mbit" }, { at = "4s", down = "2s" } ]
delay = "10ms"
qdisc = { kind = "droptail", limit = 1000 }
[reverse]
capacity = "100Mbit"
delay = "10ms"
[[flows]]
name = "udp"
kind = "udp"
rate = "1Mbit"
size = 1200
from = "s1"
to = "r1"
[metrics]
bin = "100ms"
"#,
        |s, out| {
            // What the receiver got, per 100 ms since t0:
            // t_s,bytes,packets,ce,ect,owd_mean_ms,owd_max_ms,lost,reordered,duplicates.
            let sink = csv(&out.join("raw").join("sink-udp.csv"))?;
            let packets = |from: f64, to: f64| -> f64 {
                sink.iter()
                    .filter(|r| r[0] >= from - 1e-6 && r[0] < to - 1e-6)
                    .map(|r| r[2])
                    .sum()
            };
            let before = packets(2.0, 4.0);
            ensure!(
                before > 180.0,
                "delivery before the outage: {before} datagrams in 2 s"
            );
            // Down from 4.0 s: the last datagrams serialised before it arrive 10 ms later.
            let during = packets(4.1, 6.0);
            ensure!(
                during == 0.0,
                "{during} datagrams arrived during the outage"
            );
            let after = packets(6.1, 8.0);
            ensure!(
                after > 300.0,
                "the queue drains at 2 Mb/s after: {after} datagrams in 1.9 s"
            );
            // They waited through the outage in the queue, and none was dropped there.
            let waited = sink
                .iter()
                .filter(|r| r[0] >= 5.95 && r[0] < 6.5)
                .map(|r| r[6])
                .fold(0.0, f64::max);
            ensure!(
                waited > 1900.0,
                "longest one-way delay after the outage {waited} ms"
            );
            let m = &s["metrics"];
            let lost = f(m, &["flows", "0", "receiver_lost"]);
            ensure!(lost == 0.0, "{lost} datagrams lost");
            // The link's own series: zero capacity and zero delivered in the outage, the
            // full 2 Mb/s while the backlog drains.
            let link = csv(&out.join("link.csv"))?;
            for r in &link {
                let (t, cap, got) = (r[0], r[1], r[2]);
                if (4.1..5.95).contains(&t) {
                    ensure!(
                        cap == 0.0 && got == 0.0,
                        "at {t} s: capacity {cap}, delivered {got}"
                    );
                }
                if (6.1..7.5).contains(&t) {
                    ensure!(
                        (got - 2.0).abs() < 0.25,
                        "at {t} s the link delivers {got} Mb/s"
                    );
                }
            }
            Ok(())
        },
    );
}

#[test]
fn duplicated_and_reordered_datagrams_are_counted_by_the_receiver_and_not_as_loss() {
    let _g = lock();
    // 2 Mb/s of 1000-byte datagrams (243/s, 4.1 ms apart) over a link that holds 5 % back by
    // 20 ms (overtaken by about 4 later ones) and delivers 5 % twice.
    run_checked(
        "dup-reorder",
        r#"
duration = "8s"
[forward]
capacity = "10Mbit"
delay = "10ms"
reorder = 0.05
reorder_delay = "20ms"
duplicate = 0.05
[[flows]]
name = "udp"
kind = "udp"
rate = "2Mbit"
size = 1000
from = "s1"
to = "r1"
[metrics]
warmup = "1s"
"#,
        |s, out| {
            let m = &s["metrics"];
            let flow = |k: &str| f(m, &["flows", "0", k]);
            let (dups, late, lost) = (
                flow("receiver_duplicates"),
                flow("receiver_reordered"),
                flow("receiver_lost"),
            );
            // ≈ 1700 datagrams in the window: 5 % is 85.
            ensure!(
                (45.0..=130.0).contains(&dups),
                "receiver saw {dups} duplicates"
            );
            ensure!(
                (45.0..=130.0).contains(&late),
                "receiver saw {late} reordered"
            );
            // Reordering is not loss: over the whole run every gap was filled. Within the
            // window, a gap opened in its last 20 ms may be filled just after it.
            let sink = csv(&out.join("raw").join("sink-udp.csv"))?;
            let net: f64 = sink.iter().map(|r| r[7]).sum();
            ensure!(net == 0.0, "{net} datagrams never arrived");
            ensure!(lost <= 2.0, "{lost} counted lost in the window");
            // The bottleneck logged the same copies, and counts them out of its throughput.
            let copies = flow("duplicates");
            ensure!(
                (copies - dups).abs() <= 3.0,
                "bottleneck copies {copies} against the receiver's {dups}"
            );
            let rate = flow("throughput_mbps");
            ensure!(
                (rate - 2.0).abs() < 0.04,
                "throughput without copies {rate} Mb/s"
            );
            let loss = f(m, &["link", "loss_ratio"]);
            ensure!(loss == 0.0, "link loss {loss}");
            Ok(())
        },
    );
}

#[test]
fn dualpi2_marks_an_ect1_flow_and_keeps_its_queue_short_beside_cubic() {
    let _g = lock();
    run_checked(
        "dualpi2",
        r#"
duration = "16s"
[forward]
capacity = "10Mbit"
delay = "10ms"
qdisc = { kind = "dualpi2" }
[reverse]
capacity = "100Mbit"
delay = "10ms"
[[flows]]
name = "l4s"
kind = "udp"
rate = "6Mbit"
ecn = "ect1"
from = "s1"
to = "r1"
[[flows]]
name = "cubic"
kind = "tcp"
cc = "cubic"
from = "s1"
to = "r1"
[metrics]
warmup = "6s"
"#,
        |s, _out| {
            let m = &s["metrics"];
            let l4s_marks = f(m, &["flows", "0", "ce_marks"]);
            let l4s_seen = f(m, &["flows", "0", "receiver_ce"]);
            ensure!(l4s_marks > 10.0, "ECT(1) flow gets CE marks: {l4s_marks}");
            ensure!(
                l4s_seen >= 0.9 * l4s_marks,
                "receiver saw {l4s_seen} of {l4s_marks}"
            );
            let l_q50 = f(m, &["flows", "0", "qdelay_ms", "p50"]);
            ensure!(l_q50 <= 2.0, "L-queue median delay {l_q50} ms");
            let c_rate = f(m, &["flows", "1", "throughput_mbps"]);
            ensure!(c_rate >= 2.0, "Cubic shares the link: {c_rate} Mb/s");
            let c_q50 = f(m, &["flows", "1", "qdelay_ms", "p50"]);
            ensure!(
                (3.0..=40.0).contains(&c_q50),
                "C-queue delay near the 15 ms target: {c_q50} ms"
            );
            Ok(())
        },
    );
}

#[test]
fn on_off_bbr_flow_sends_only_in_its_on_periods() {
    let _g = lock();
    run_checked(
        "onoff",
        r#"
duration = "11s"
[forward]
capacity = "10Mbit"
delay = "10ms"
qdisc = { kind = "droptail", limit = 200 }
[reverse]
capacity = "100Mbit"
delay = "10ms"
[[flows]]
name = "bbr"
kind = "tcp"
cc = "bbr"
from = "s1"
to = "r1"
start = "1s"
stop = "10s"
on = "2s"
off = "2s"
[metrics]
bin = "500ms"
"#,
        |s, out| {
            ensure!(f(s, &["metrics", "flows", "0", "throughput_mbps"]) > 1.0);
            // Per-bin rates: on in [1,3), [5,7), [9,10); off in [3.5,5) and [7.5,9) (half a second
            // of slack for the queue to drain).
            let csv = std::fs::read_to_string(out.join("flow-bbr.csv")).unwrap();
            for line in csv.lines().skip(1) {
                let v: Vec<f64> = line
                    .split(',')
                    .map(|x| x.parse().unwrap_or(f64::NAN))
                    .collect();
                let (t, rate) = (v[0], v[1]);
                let on = (1.5..2.5).contains(&t) || (5.5..6.5).contains(&t);
                let off = (3.5..4.5).contains(&t) || (7.5..8.5).contains(&t) || t < 0.5;
                if on {
                    ensure!(rate > 3.0, "t={t}: {rate} Mb/s while on");
                }
                if off {
                    ensure!(rate < 0.05, "t={t}: {rate} Mb/s while off");
                }
            }
            let sends = std::fs::read_to_string(out.join("raw/send-bbr.csv")).unwrap();
            let conns: std::collections::BTreeSet<&str> = sends
                .lines()
                .skip(1)
                .filter_map(|l| l.split(',').nth(1))
                .collect();
            ensure!(
                conns.len() == 3,
                "one connection per on-period: {}",
                conns.len()
            );
            Ok(())
        },
    );
}

/// [`packets_sent_while_the_forwarder_is_stopped_arrive_at_the_link_when_they_were_sent`]'s
/// scenario.
const FWD_STALL: &str = r#"
duration = "14s"
[forward]
capacity = "20Mbit"
delay = "5ms"
qdisc = { kind = "droptail", limit = "300ms" }
[reverse]
capacity = "100Mbit"
delay = "5ms"
[[flows]]
name = "udp"
kind = "udp"
rate = "10Mbit"
size = 1200
from = "s1"
to = "r1"
[metrics]
warmup = "2s"
"#;

/// The emulated link is the path, not the forwarder that runs it: packets sent while the
/// forwarder is stopped (as a host stops a virtual CPU) arrive at the link when the kernel
/// sent them, so its stalls build no queue. A 10 Mbit/s flow through a 20 Mbit/s DropTail
/// link, the forwarder stopped for 80 ms five times: without the send stamps each stall reads
/// as an 80 ms burst and queues up to 40 ms of it.
///
/// Judged on the packets that reach the link around each stop only: the generator runs on
/// the same starved host, and its own catch-up bursts after a stall of its thread queue
/// packets at other times.
#[test]
fn packets_sent_while_the_forwarder_is_stopped_arrive_at_the_link_when_they_were_sent() {
    let _g = lock();
    let name = "fwd-stall";
    // The stops, (SIGSTOP, SIGCONT) in CLOCK_MONOTONIC ns.
    let mut stops: Vec<(u64, u64)> = vec![];
    let stop_the_forwarder = |out: &Path| {
        // The forwarder: the process running `__forward` into this run's output.
        let needle = out.join("raw").to_str().unwrap().to_owned();
        let start = Instant::now();
        let forwarder = loop {
            let pid = processes_mentioning(&needle)
                .iter()
                .find(|p| p.contains("__forward"))
                .and_then(|p| p.split(':').next()?.parse::<i32>().ok());
            if let Some(pid) = pid {
                break pid;
            }
            assert!(start.elapsed() < Duration::from_secs(20), "no forwarder");
            std::thread::sleep(Duration::from_millis(20));
        };
        // Past the RTT check and the warm-up, into the measured window.
        std::thread::sleep(Duration::from_secs(7));
        for _ in 0..5 {
            let stopped = cg_netlab::sys::mono_ns();
            // SAFETY: kill(2) on the pid of this run's own forwarder.
            unsafe { libc::kill(forwarder, libc::SIGSTOP) };
            std::thread::sleep(Duration::from_millis(80));
            // SAFETY: as above.
            unsafe { libc::kill(forwarder, libc::SIGCONT) };
            stops.push((stopped, cg_netlab::sys::mono_ns()));
            std::thread::sleep(Duration::from_millis(700));
        }
    };
    let (s, out) =
        try_run_with(name, FWD_STALL, stop_the_forwarder).unwrap_or_else(|e| panic!("{e}"));
    // The stalls happened: the forwarder woke that late.
    let late_ms = f(&s, &["forwarder", "lateness_us", "3"]) / 1e3;
    assert!(
        late_ms >= 60.0,
        "the forwarder was never late ({late_ms} ms): it was not stopped"
    );
    let stamped = f(&s, &["forwarder", "stamped", "0"]);
    let unstamped = f(&s, &["forwarder", "unstamped", "0"]);
    assert!(
        stamped > 0.0 && unstamped <= 0.001 * stamped,
        "{unstamped} of {stamped} forward packets unstamped"
    );
    // And the link queued none of it: the packets that reached the link from each stop to
    // 20 ms after its restart.
    let t0 = cg_netlab::runner::read_info(&out)
        .unwrap_or_else(|e| panic!("{e}"))
        .t0_ns;
    let log = std::fs::File::open(out.join("raw/bottleneck.log")).expect("bottleneck.log");
    let records = record::read_all(&mut std::io::BufReader::new(log)).expect("records");
    let around: Vec<(usize, f64)> = stops
        .iter()
        .map(|&(stop, cont)| {
            let sojourns: Vec<f64> = records
                .iter()
                .filter(|r| r.kind == record::Kind::Dequeued && r.dir == record::Dir::Forward)
                .filter(|r| (stop..cont + 20_000_000).contains(&(t0 + r.t_ns - r.dur_ns)))
                .map(|r| r.dur_ns as f64 / 1e6)
                .collect();
            (sojourns.len(), sojourns.iter().copied().fold(0.0, f64::max))
        })
        .collect();
    eprintln!(
        "forwarder stopped 5 × 80 ms: (packets that reached the link from a stop to 20 ms after it, their longest sojourn in ms) {around:?}"
    );
    // 100 ms of a 10 Mbit/s flow is about 100 packets a stop.
    assert!(
        around.iter().all(|&(n, _)| n >= 50),
        "too few packets around the stops: {around:?}"
    );
    // Without the stamps every stop queues 40 ms. With them about one stop in twenty still
    // does (the netlab README's "Emulator design"): at most two of the five may, as three
    // would at that rate in one run in a thousand.
    let queued = around.iter().filter(|&&(_, max)| max > 20.0).count();
    assert!(
        queued <= 2,
        "{queued} of the forwarder's 5 stops queued packets over 20 ms: {around:?}"
    );
    cleanup(name);
}
