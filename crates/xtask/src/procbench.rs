//! `cargo xtask procbench`: CPU and memory of the real `cg-send` and `cg-recv` processes.
//!
//! Builds both in release, runs them over the loopback interface at a fixed rate (the
//! controller's minimum = maximum = start rate, so that the encoder target does not move), and
//! samples `/proc/PID/stat` and `/proc/PID/status` once a second. After a warm-up it prints,
//! per process: CPU in % of one core (user + system), RSS at the end of the warm-up, at the
//! end and at most, and the RSS trend (least-squares slope, KiB per minute) — flat memory
//! shows as a slope near zero over a long run (`--duration 10m`).
//!
//! ```text
//! cargo xtask procbench [--rate 2M] [--size 1280x720] [--pattern faint-zone-plate]
//!     [--fps 30] [--duration 60s] [--warmup 10s]
//! ```

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{cargo, root, run};

struct Options {
    rate: String,
    size: (u32, u32),
    pattern: String,
    fps: u32,
    duration: Duration,
    warmup: Duration,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let (num, unit) = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .map_or((s, "s"), |i| s.split_at(i));
    let v: f64 = num
        .parse()
        .map_err(|_| format!("bad duration {s:?} (e.g. 60s, 10m)"))?;
    let secs = match unit {
        "s" => v,
        "m" | "min" => v * 60.0,
        "ms" => v / 1000.0,
        _ => return Err(format!("bad duration unit in {s:?} (s, m or ms)")),
    };
    if !secs.is_finite() || secs <= 0.0 {
        return Err(format!("duration {s:?} must be positive"));
    }
    Ok(Duration::from_secs_f64(secs))
}

fn options(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        rate: "2M".into(),
        size: (1280, 720),
        pattern: "faint-zone-plate".into(),
        fps: 30,
        duration: Duration::from_secs(60),
        warmup: Duration::from_secs(10),
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let value = it
            .next()
            .ok_or_else(|| format!("{flag} needs a value"))?
            .as_str();
        match flag.as_str() {
            "--rate" => o.rate = value.to_owned(),
            "--size" => {
                o.size = value
                    .split_once('x')
                    .and_then(|(w, h)| Some((w.parse().ok()?, h.parse().ok()?)))
                    .ok_or_else(|| format!("bad --size {value:?}; expected WxH"))?;
            }
            "--pattern" => o.pattern = value.to_owned(),
            "--fps" => o.fps = value.parse().map_err(|_| format!("bad --fps {value:?}"))?,
            "--duration" => o.duration = parse_duration(value)?,
            "--warmup" => o.warmup = parse_duration(value)?,
            other => return Err(format!("unknown procbench option {other}")),
        }
    }
    if o.warmup + Duration::from_secs(5) > o.duration {
        return Err("--duration must exceed --warmup by at least 5 s".into());
    }
    Ok(o)
}

/// CPU ticks (user + system) and RSS (KiB) of a live process.
fn sample(pid: u32) -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some((
        cg_host::ProcStat::parse(&stat)?.cpu_ticks(),
        cg_host::rss_kib(Some(pid))?,
    ))
}

/// Least-squares slope of `(t, y)`, y per unit of t.
fn slope(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    if n < 2.0 {
        return 0.0;
    }
    let (mt, my) = points
        .iter()
        .fold((0.0, 0.0), |(a, b), (t, y)| (a + t / n, b + y / n));
    let (num, den) = points.iter().fold((0.0, 0.0), |(a, b), (t, y)| {
        (a + (t - mt) * (y - my), b + (t - mt) * (t - mt))
    });
    if den > 0.0 { num / den } else { 0.0 }
}

struct Track {
    name: &'static str,
    child: Child,
    /// (seconds since start, CPU ticks, RSS KiB)
    samples: Vec<(f64, u64, u64)>,
}

impl Track {
    fn report(&self, warmup: f64) -> String {
        let after: Vec<&(f64, u64, u64)> = self.samples.iter().filter(|s| s.0 >= warmup).collect();
        let (Some(first), Some(last)) = (after.first(), after.last()) else {
            return format!("{:8} no samples after the warm-up", self.name);
        };
        let cpu =
            (last.1 - first.1) as f64 / f64::from(cg_host::USER_HZ) / (last.0 - first.0).max(1e-9)
                * 100.0;
        let max = after.iter().map(|s| s.2).max().unwrap_or(0);
        let trend = slope(
            &after
                .iter()
                .map(|s| (s.0 / 60.0, s.2 as f64))
                .collect::<Vec<_>>(),
        );
        format!(
            "{:8} CPU {:5.1} % of a core   RSS {:7.1} MB at {:.0} s, {:7.1} MB at {:.0} s, max {:7.1} MB, trend {:+.0} KiB/min",
            self.name,
            cpu,
            first.2 as f64 / 1024.0,
            first.0,
            last.2 as f64 / 1024.0,
            last.0,
            max as f64 / 1024.0,
            trend
        )
    }
}

fn free_port() -> Result<u16, String> {
    let s = std::net::UdpSocket::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"))?;
    s.local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("local_addr: {e}"))
}

fn spawn(bin: &Path, args: &[String], stdout: Stdio) -> Result<Child, String> {
    Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", bin.display()))
}

/// A number field of a flat JSON line.
fn field(line: &str, name: &str) -> Option<f64> {
    let v = line.split(&format!("\"{name}\":")).nth(1)?;
    v.split([',', '}']).next()?.trim().parse().ok()
}

/// The mean `send_rate_bps` of cg-send's `--json` lines from `from` seconds on (each line
/// covers one stats interval).
fn mean_send_rate(json: &str, from: f64) -> Option<f64> {
    let rates: Vec<f64> = json
        .lines()
        .filter(|l| field(l, "t").is_some_and(|t| t >= from))
        .filter_map(|l| field(l, "send_rate_bps"))
        .collect();
    (!rates.is_empty()).then(|| rates.iter().sum::<f64>() / rates.len() as f64)
}

pub fn procbench(args: &[String]) -> Result<(), String> {
    let o = options(args)?;
    run(cargo().args(["build", "--release", "-p", "cg-sender", "-p", "cg-receiver"]))?;
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root().join("target"))
        .join("release");
    let port = free_port()?;
    let addr = format!("127.0.0.1:{port}");
    let s = |v: &str| v.to_owned();
    let recv = spawn(
        &dir.join("cg-recv"),
        &[
            s("--listen"),
            addr.clone(),
            s("--cc"),
            s("gcc"),
            s("--quiet"),
        ],
        Stdio::null(),
    )?;
    let mut tracks = vec![Track {
        name: "cg-recv",
        child: recv,
        samples: vec![],
    }];
    std::thread::sleep(Duration::from_millis(300));
    let mut send = spawn(
        &dir.join("cg-send"),
        &[
            s("--to"),
            addr,
            s("--cc"),
            s("gcc"),
            s("--width"),
            o.size.0.to_string(),
            s("--height"),
            o.size.1.to_string(),
            s("--fps"),
            o.fps.to_string(),
            s("--pattern"),
            o.pattern.clone(),
            s("--start-bitrate"),
            o.rate.clone(),
            s("--min-bitrate"),
            o.rate.clone(),
            s("--max-bitrate"),
            o.rate.clone(),
            s("--duration"),
            format!("{}ms", o.duration.as_millis()),
            s("--json"),
            s("--quiet"),
        ],
        Stdio::piped(),
    )?;
    // cg-send's statistics are read as they come: a full pipe would stall it.
    let stdout = send.stdout.take();
    let reader = std::thread::spawn(move || {
        use std::io::Read;
        let mut out = String::new();
        if let Some(mut so) = stdout {
            let _ = so.read_to_string(&mut out);
        }
        out
    });
    tracks.push(Track {
        name: "cg-send",
        child: send,
        samples: vec![],
    });
    eprintln!(
        "procbench: {} at {}x{} {} fps ({}), {:.0} s, warm-up {:.0} s",
        o.rate,
        o.size.0,
        o.size.1,
        o.fps,
        o.pattern,
        o.duration.as_secs_f64(),
        o.warmup.as_secs_f64()
    );
    let start = Instant::now();
    let mut next = start;
    loop {
        let t = start.elapsed().as_secs_f64();
        let mut sender_alive = false;
        for tr in &mut tracks {
            if let Some((ticks, rss)) = sample(tr.child.id())
                && tr.child.try_wait().ok().flatten().is_none()
            {
                tr.samples.push((t, ticks, rss));
                sender_alive |= tr.name == "cg-send";
            }
        }
        if !sender_alive {
            break;
        }
        if (t as u64).is_multiple_of(60) && t >= 1.0 && t.fract() < 0.5 {
            let rss: Vec<String> = tracks
                .iter()
                .filter_map(|tr| {
                    let s = tr.samples.last()?;
                    Some(format!("{} {:.1} MB", tr.name, s.2 as f64 / 1024.0))
                })
                .collect();
            eprintln!("procbench: {t:.0} s, RSS {}", rss.join(", "));
        }
        next += Duration::from_secs(1);
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
    let warmup = o.warmup.as_secs_f64();
    let reports: Vec<String> = tracks.iter().map(|t| t.report(warmup)).collect();
    let mut send = tracks.pop().expect("pushed above").child;
    let status = send.wait().map_err(|e| format!("cg-send: {e}"))?;
    let out = reader.join().unwrap_or_default();
    let mut recv = tracks.pop().expect("pushed above").child;
    // SIGTERM: the receiver shuts down cleanly.
    let _ = Command::new("kill").arg(recv.id().to_string()).status();
    let _ = recv.wait();
    if !status.success() {
        return Err(format!("cg-send ended with {status}"));
    }
    for r in &reports {
        println!("{r}");
    }
    let rate = mean_send_rate(&out, warmup).unwrap_or(f64::NAN);
    println!(
        "cg-send sending rate after the warm-up: {:.2} Mbit/s",
        rate / 1e6
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slope_and_options() {
        let flat: Vec<(f64, f64)> = (0..10).map(|i| (i as f64, 5.0)).collect();
        assert_eq!(slope(&flat), 0.0);
        let rising: Vec<(f64, f64)> = (0..10).map(|i| (i as f64, 2.0 * i as f64 + 1.0)).collect();
        assert!((slope(&rising) - 2.0).abs() < 1e-9);
        assert_eq!(parse_duration("10m").unwrap(), Duration::from_secs(600));
        assert_eq!(parse_duration("90").unwrap(), Duration::from_secs(90));
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("5h").is_err());
        let o = options(&[
            "--rate".into(),
            "20M".into(),
            "--size".into(),
            "640x360".into(),
        ])
        .unwrap();
        assert_eq!((o.rate.as_str(), o.size), ("20M", (640, 360)));
        assert!(options(&["--size".into(), "640".into()]).is_err());
        assert!(options(&["--duration".into(), "8s".into()]).is_err());
        assert!(options(&["--bogus".into(), "1".into()]).is_err());
        let json = "{\"t\":0.5,\"send_rate_bps\":9}\n{\"t\":11,\"send_rate_bps\":1999000,\"x\":1}\n\
                    {\"t\":12.0,\"send_rate_bps\":2001000}\n";
        assert_eq!(mean_send_rate(json, 10.0), Some(2_000_000.0));
        assert_eq!(mean_send_rate(json, 20.0), None);
    }
}
