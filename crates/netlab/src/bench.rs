//! `netlab bench`: the whole emulator (TUN forwarder + cg-link, real namespaces) under UDP
//! load at several rates; reports delivered throughput, forwarder CPU and timer lateness.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use crate::report::{RunRequest, run_and_report};
use crate::scenario::Scenario;
use crate::{Error, Result};

/// Runs one UDP flow at 95 % of each rate through an otherwise idle emulated link.
pub fn run(rates_mbps: &[u64], seconds: u64, out: &Path) -> Result<()> {
    let mut table = String::from(
        "rate Mb/s | offered | delivered Mb/s | forwarder CPU % | wake-ups/s | lateness p50 µs | p99 µs | p99.9 µs | max µs | TUN drops\n",
    );
    for &r in rates_mbps {
        let offered = r as f64 * 0.95;
        let text = format!(
            "name = \"bench-{r}\"\nduration = \"{seconds}s\"\n[forward]\ncapacity = \"{r}Mbit\"\ndelay = \"10ms\"\nqdisc = {{ kind = \"droptail\", limit = 1000 }}\n[reverse]\ncapacity = \"1Gbit\"\ndelay = \"10ms\"\n[[flows]]\nname = \"udp\"\nkind = \"udp\"\nrate = \"{}kbit\"\nsize = 1400\nfrom = \"s1\"\nto = \"r1\"\nstart = \"1s\"\n[metrics]\nwarmup = \"2s\"\n",
            (offered * 1000.0) as u64
        );
        let sc = Scenario::parse(&text, "<bench>", "bench", Path::new("."))?;
        let req = RunRequest {
            out: out.join(format!("{r}mbit")),
            base: ".".into(),
            coalesce: Duration::from_micros(100),
            // The RTT check is reported (summary.json) rather than enforced: a benchmark on a
            // loaded machine should still report its figures.
            skip_rtt_check: true,
            quiet: true,
            forwarder_rt: Some(crate::rt::DEFAULT_PRIORITY),
        };
        let s = run_and_report(&sc, &req)?;
        let fw = s
            .forwarder
            .ok_or_else(|| Error::Process("no forwarder stats".into()))?;
        let cpu = (fw.cpu_user_s + fw.cpu_sys_s) / fw.wall_s.max(1e-9) * 100.0;
        let line = format!(
            "{r:>9} | {offered:>7.1} | {:>14.2} | {cpu:>15.1} | {:>10.0} | {:>15.0} | {:>6.0} | {:>8.0} | {:>6.0} | {}\n",
            s.metrics.flows[0].throughput_mbps,
            fw.wakeups as f64 / fw.wall_s.max(1e-9),
            fw.lateness_us[0],
            fw.lateness_us[1],
            fw.lateness_us[2],
            fw.lateness_us[3],
            s.run.tun_drops[0]
        );
        eprint!("{line}");
        table.push_str(&line);
    }
    let _ = writeln!(table);
    print!("{table}");
    std::fs::write(out.join("bench.txt"), &table)
        .map_err(|e| Error::output(out.join("bench.txt"), e))
}
