//! Hostile datagrams flooded at both endpoints: dropped and counted, without harm to the
//! stream or the processes' memory.

use super::*;

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
    cg_host::rss_kib(u32::try_from(pid).ok()).map(|k| k as f64)
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
    judge_runs("hostile", |run, spread| {
        for cc in CONTROLLERS {
            let toml = fault_scenario(
                &format!("hostile-{cc}"),
                cc,
                r#"capacity = "2Mbit""#,
                25,
                &camera_360p("10M"),
            );
            let flooded = Mutex::new(Err::<Flooded, String>("the flood did not start".into()));
            run_once(
                &format!("hostile {cc}"),
                &toml,
                run,
                spread,
                |out| *flooded.lock().unwrap() = flood_both(out, FROM, SECS),
                |run, spread, s, out| {
                    let f = flooded.lock().unwrap().clone()?;
                    let (u_clean, _) = clean_run(cc, run);
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
                    spread.require(
                        run,
                        f.to_send >= 90_000 && f.to_recv >= 90_000,
                        format!(
                            "the flood sent only {} and {} datagrams",
                            f.to_send, f.to_recv
                        ),
                    );
                    spread.check(
                        run,
                        format!("{cc}: share of the flood to cg-send counted foreign"),
                        fs / f.to_send as f64,
                        0.95..=1.0,
                    );
                    spread.check(
                        run,
                        format!("{cc}: share of the flood to cg-recv counted foreign"),
                        fr / f.to_recv as f64,
                        0.95..=1.0,
                    );
                    // Above the clean run's is that run's own spread, which says nothing;
                    // the other side is the link's.
                    spread.check(
                        run,
                        format!("{cc}: utilisation over the clean run's"),
                        u / u_clean,
                        0.95..=f64::INFINITY,
                    );
                    spread.check(run, format!("{cc}: utilisation"), u, 0.0..=1.0);
                    spread.check(
                        run,
                        format!("{cc}: cg-send's resident memory growth (MiB)"),
                        grow(f.rss_send),
                        -8.0..=8.0,
                    );
                    spread.check(
                        run,
                        format!("{cc}: cg-recv's resident memory growth (MiB)"),
                        grow(f.rss_recv),
                        -8.0..=8.0,
                    );
                    ran_on(spread, run, cc, ls, t0, 23.0..=30.0);
                    spread.check(
                        run,
                        format!("{cc}: receiver sessions"),
                        num(lr, "sessions"),
                        1.0..=1.0,
                    );
                    Ok(())
                },
            );
        }
    });
}
