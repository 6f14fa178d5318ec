//! The real-time TUN forwarder: runs two cg-link [`Link`]s (forward and reverse) on wall-clock
//! time between two TUN devices in the router namespace.
//!
//! Policy routing (set up by the topology) sends everything arriving from the senders out of
//! TUN `tfwd` and everything from the receivers out of `trev`. The forwarder reads a packet
//! from `tfwd`, offers it to the forward link, and when the link delivers it writes it into
//! `trev`, where the kernel receives it and routes it on to the receiver; the reverse
//! direction mirrors this. CE marks set by the link are written into the IP header (IPv4
//! checksum fixed, [`crate::packet::set_ecn`]).
//!
//! Time model: the links are sans-IO and compute every dequeue and delivery at its exact
//! instant; the forwarder only decides when to wake. A packet arrives at its link when the
//! kernel sent it into the TUN ([`super::stamps`]), not when the forwarder read it: a
//! forwarder that did not run for a while (a host taking its CPU away) then reads a burst of
//! packets but the link sees them arrive as they were sent, and builds no queue the path
//! never had; they leave late by the stall, which the lateness below measures. It drains
//! all readable packets (up to a batch) and releases every due delivery in one wake-up, and wakes at most once per
//! `coalesce` interval (default 100 µs), so the wake-up rate stays bounded at high packet
//! rates. A packet therefore leaves at most `coalesce` + scheduler lateness after its
//! computed instant; both are measured ([`ForwarderStats`]).
//!
//! Until the run's t0 the forwarder uses a pair of *probe* links with the same qdisc, initial
//! rate and base delay but no outage, jitter, reordering, duplication or random loss
//! ([`super::linkcfg::probe_config`]), started at its own start, so the RTT check sees the
//! configured delay and initial rate; at t0 it switches to fresh links with the full
//! configuration whose capacity schedules start at t0.
//!
//! Duplication: cg-link delivers a duplicated packet twice; the second delivery of it is
//! logged as [`Kind::Copy`], not as a delivery, so the bottleneck's throughput counts each
//! packet once (the copy took no capacity) while the receiver sees both.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use cg_link::{
    DropReason, EventKind, FlowId, Link, LinkConfig, LinkEvent, Packet, PacketId, Protocol,
};
use cg_types::{DataSize, Ecn};
use serde::{Deserialize, Serialize};

use super::record::{Dir, FlowEntry, Kind, Record, reason};
use super::stamps::SentStamps;
use super::tun::Tun;
use crate::packet;
use crate::sys::realtime_ns;
use crate::{Error, Result};

/// Forwarder settings.
#[derive(Debug, Clone)]
pub struct ForwarderConfig {
    /// Forward link.
    pub forward: LinkConfig,
    /// Reverse link.
    pub reverse: LinkConfig,
    /// Bytes added to each IP packet's size for serialisation (14 = Ethernet, as tbf counts).
    pub overhead: u32,
    /// Scenario t0 (CLOCK_MONOTONIC ns).
    pub t0_ns: u64,
    /// Minimum interval between wake-ups.
    pub coalesce: Duration,
    /// Where to write `bottleneck.log`, `flows.json`, `forwarder.json`.
    pub out: PathBuf,
    /// TUN names.
    pub tun_forward: String,
    /// TUN names.
    pub tun_reverse: String,
}

/// What the forwarder measured about itself (written to `forwarder.json`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ForwarderStats {
    /// Packets read from the TUNs (forward, reverse).
    pub packets_in: [u64; 2],
    /// Packets written out.
    pub packets_out: [u64; 2],
    /// Bytes written out.
    pub bytes_out: [u64; 2],
    /// Drops by the link model (queue, AQM, random loss).
    pub link_drops: [u64; 2],
    /// CE marks set.
    pub ce_marks: [u64; 2],
    /// Failed TUN writes (the packet is lost; counted here).
    pub write_errors: u64,
    /// Packets that were not IPv4/IPv6 (forwarded unclassified).
    pub unparsed: u64,
    /// Wake-ups.
    pub wakeups: u64,
    /// Lateness of timer wake-ups against the link's deadline, µs: p50, p99, p99.9, max.
    pub lateness_us: [f64; 4],
    /// Timer wake-ups measured.
    pub timer_wakeups: u64,
    /// User and system CPU seconds.
    pub cpu_user_s: f64,
    /// System CPU seconds.
    pub cpu_sys_s: f64,
    /// Wall-clock seconds the forwarder ran.
    pub wall_s: f64,
    /// Its scheduling class at the end of the run (`SCHED_FIFO 10` when `netlab` could
    /// promote it, see [`crate::rt`]).
    #[serde(default)]
    pub scheduling: String,
    /// Packets (forward, reverse) that arrived at their link when the kernel sent them
    /// ([`super::stamps`]), and those that arrived when read (no stamp matched).
    #[serde(default)]
    pub stamped: [u64; 2],
    #[serde(default)]
    pub unstamped: [u64; 2],
    /// How long after being sent packets were read, µs: p50, p99, p99.9, max (a stall of
    /// the forwarder shows here, not as a queue).
    #[serde(default)]
    pub read_delay_us: [f64; 4],
    /// The share of the machine's CPU time its hypervisor took (steal, `/proc/stat`) from
    /// t0 to the end: on a starved virtual machine every process, this one included, runs
    /// late, and the run measures the host more than the flows.
    #[serde(default)]
    pub steal_share: Option<f64>,
}

impl ForwarderStats {
    /// The share of the packets read that arrived at their kernel send stamp (0 with none).
    pub fn stamped_share(&self) -> f64 {
        let stamped = (self.stamped[0] + self.stamped[1]) as f64;
        let all = stamped + (self.unstamped[0] + self.unstamped[1]) as f64;
        if all > 0.0 { stamped / all } else { 0.0 }
    }
}

/// Histogram of lateness in microseconds (1 µs buckets up to 100 ms, then one overflow).
struct Lateness {
    buckets: Vec<u64>,
    max_us: f64,
    n: u64,
}

impl Lateness {
    const LEN: usize = 100_000;

    fn new() -> Self {
        Lateness {
            buckets: vec![0; Self::LEN + 1],
            max_us: 0.0,
            n: 0,
        }
    }

    fn add(&mut self, d: Duration) {
        let us = d.as_secs_f64() * 1e6;
        self.max_us = self.max_us.max(us);
        let i = (us as usize).min(Self::LEN);
        self.buckets[i] += 1;
        self.n += 1;
    }

    /// p50, p99, p99.9 and the maximum.
    fn summary(&self) -> [f64; 4] {
        [
            self.quantile(0.5),
            self.quantile(0.99),
            self.quantile(0.999),
            self.max_us,
        ]
    }

    fn quantile(&self, q: f64) -> f64 {
        if self.n == 0 {
            return 0.0;
        }
        let target = (q * self.n as f64).ceil().max(1.0) as u64;
        let mut acc = 0;
        for (i, c) in self.buckets.iter().enumerate() {
            acc += c;
            if acc >= target {
                return i as f64;
            }
        }
        self.max_us
    }
}

struct Side {
    link: Link<Vec<u8>>,
    dir: Dir,
    copies: Copies,
    /// Send stamps of the packets read from this side's TUN (`None` where the packet
    /// socket could not be opened: arrivals are then read times).
    stamps: Option<SentStamps>,
}

/// Tells the second delivery of a duplicated packet from the first: cg-link reports
/// [`EventKind::Duplicated`] when it makes the copy, before either is delivered.
#[derive(Default)]
struct Copies {
    /// Duplicated packets by id, and whether one of their two deliveries was seen.
    pending: HashMap<PacketId, bool>,
}

impl Copies {
    /// Takes in `ev`; true if it is the second delivery of a duplicated packet.
    fn is_copy(&mut self, ev: &LinkEvent) -> bool {
        match ev.kind {
            EventKind::Duplicated => {
                self.pending.insert(ev.id, false);
                false
            }
            EventKind::Delivered { .. } => match self.pending.get_mut(&ev.id) {
                Some(true) => {
                    self.pending.remove(&ev.id);
                    true
                }
                Some(seen) => {
                    *seen = true;
                    false
                }
                None => false,
            },
            _ => false,
        }
    }
}

/// What the forwarder tells the runner on stdout: [`READY`](Self::READY) once its TUNs are
/// up, then once a second this line for the forward link (the runner shows it as progress).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ForwarderStatus {
    /// Seconds since t0.
    pub t_s: f64,
    /// Bytes delivered by the forward link.
    pub delivered_bytes: u64,
    /// Packets its queue dropped.
    pub drops: u64,
    /// Packets queued now.
    pub backlog_packets: u64,
    /// Packets it CE-marked.
    pub ce_marks: u64,
}

impl ForwarderStatus {
    /// The first line: the forwarder runs.
    pub const READY: &'static str = "ready";
    const PREFIX: &'static str = "status ";

    /// The line printed.
    pub fn line(&self) -> String {
        format!(
            "{}{}",
            Self::PREFIX,
            serde_json::to_string(self).expect("a status serialises")
        )
    }

    /// A status line read back; `None` for any other line.
    pub fn parse(line: &str) -> Option<ForwarderStatus> {
        serde_json::from_str(line.strip_prefix(Self::PREFIX)?).ok()
    }
}

/// Runs until stdin reaches end of file (the runner closes it to stop us).
pub fn run(cfg: ForwarderConfig) -> Result<()> {
    let started = Instant::now();
    let t0 = crate::sys::instant_of_mono(cfg.t0_ns);
    // SAFETY: PR_SET_TIMERSLACK takes a nanosecond value; 1 ns asks for precise timers.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    let mut tuns = [Tun::open(&cfg.tun_forward)?, Tun::open(&cfg.tun_reverse)?];
    let stamps = |tun: &Tun| match SentStamps::open(tun.name()) {
        Ok(s) => Some(s),
        Err(e) => {
            eprintln!(
                "netlab forwarder: no send stamps on {} ({e}): packets arrive at the link when read",
                tun.name()
            );
            None
        }
    };
    let new_link = |c: &LinkConfig, epoch: Instant| -> Result<Link<Vec<u8>>> {
        let mut l = Link::new(c.clone()).map_err(|e| Error::Process(format!("link: {e}")))?;
        l.start(epoch);
        Ok(l)
    };
    let mut sides = [
        Side {
            link: new_link(&super::linkcfg::probe_config(&cfg.forward), started)?,
            dir: Dir::Forward,
            copies: Copies::default(),
            stamps: stamps(&tuns[0]),
        },
        Side {
            link: new_link(&super::linkcfg::probe_config(&cfg.reverse), started)?,
            dir: Dir::Reverse,
            copies: Copies::default(),
            stamps: stamps(&tuns[1]),
        },
    ];
    let mut probing = true;
    let log_path = cfg.out.join("bottleneck.log");
    let mut log = BufWriter::with_capacity(
        1 << 20,
        File::create(&log_path)
            .map_err(|e| Error::io(format!("create {}", log_path.display()), e))?,
    );
    let mut flows: HashMap<FlowId, u16> = HashMap::new();
    let mut table: Vec<FlowEntry> = Vec::new();
    let mut stats = ForwarderStats::default();
    let mut late = Lateness::new();
    let mut read_delay = Lateness::new();
    let mut steal_at_t0 = None;
    let mut next_id: u64 = 0;
    let mut buf = vec![0u8; 65536];
    let mut last_status = Instant::now();
    // Tell the runner the TUNs exist.
    println!("{}", ForwarderStatus::READY);
    std::io::stdout().flush().ok();
    let stdin_fd = std::io::stdin().as_raw_fd();
    let mut stdin_open = true;
    while stdin_open {
        let now = Instant::now();
        stats.wakeups += 1;
        if probing && now >= t0 && sides.iter().all(|s| s.link.poll_timeout().is_none()) {
            sides[0].link = new_link(&cfg.forward, t0)?;
            sides[1].link = new_link(&cfg.reverse, t0)?;
            sides[0].copies = Copies::default();
            sides[1].copies = Copies::default();
            probing = false;
            steal_at_t0 = crate::sys::cpu_steal();
        }
        // Batched reads: drain each TUN (bounded per wake-up).
        for (i, side) in sides.iter_mut().enumerate() {
            for _ in 0..512 {
                let n = match tuns[i].recv(&mut buf) {
                    Ok(Some(n)) => n,
                    Ok(None) => break,
                    Err(e) => return Err(Error::io(format!("read {}", tuns[i].name()), e)),
                };
                stats.packets_in[i] += 1;
                let bytes = buf[..n].to_vec();
                let (flow, ecn, dscp) = match packet::parse(&bytes) {
                    Some(h) => (flow_id(&h.tuple), h.ecn, h.dscp),
                    None => {
                        stats.unparsed += 1;
                        (unknown_flow(), Ecn::NotEct, 0)
                    }
                };
                if !flows.contains_key(&flow) && table.len() < usize::from(u16::MAX) {
                    let index = table.len() as u16;
                    flows.insert(flow, index);
                    table.push(FlowEntry {
                        index,
                        dir: side.dir,
                        src: flow.src,
                        dst: flow.dst,
                        sport: flow.src_port,
                        dport: flow.dst_port,
                        proto: flow.protocol.0,
                    });
                }
                next_id += 1;
                // The clocks are read after the packet was: the wake-up's `now` may be long
                // past when the host took the CPU away inside this loop, and a stamp later
                // than it would read as no age at all.
                let read_at = Instant::now();
                let arrival = side
                    .stamps
                    .as_mut()
                    .and_then(|s| s.age(&bytes, realtime_ns()))
                    .and_then(|age| read_at.checked_sub(age))
                    .unwrap_or(read_at);
                read_delay.add(read_at - arrival);
                let size = DataSize::bytes(n as u64 + u64::from(cfg.overhead));
                let pkt = Packet::new(PacketId(next_id), flow, size, arrival, bytes)
                    .with_ecn(ecn)
                    .with_dscp(cg_link::Dscp::new(dscp).unwrap_or_default());
                side.link.handle_packet(pkt, arrival);
            }
        }
        // Releases and events, at the time the reads ended (packets may have arrived up to it).
        let now = Instant::now();
        for (i, side) in sides.iter_mut().enumerate() {
            side.link.handle_timeout(now);
            while let Some(mut p) = side.link.poll_delivery(now) {
                if p.ecn == Ecn::Ce && packet::parse(&p.payload).is_some_and(|h| h.ecn != Ecn::Ce) {
                    packet::set_ecn(&mut p.payload, Ecn::Ce);
                }
                let out = &mut tuns[1 - i];
                match out.send(&p.payload) {
                    Ok(()) => {
                        stats.packets_out[i] += 1;
                        stats.bytes_out[i] += p.payload.len() as u64;
                    }
                    Err(_) => stats.write_errors += 1,
                }
            }
            while let Some(ev) = side.link.poll_event() {
                if probing {
                    continue;
                }
                let copy = side.copies.is_copy(&ev);
                if let Some(mut rec) = record_of(&ev, side.dir, t0, &flows) {
                    if copy {
                        rec.kind = Kind::Copy;
                    }
                    match rec.kind {
                        Kind::Dropped => stats.link_drops[i] += 1,
                        Kind::Marked => stats.ce_marks[i] += 1,
                        _ => {}
                    }
                    rec.write_to(&mut log)
                        .map_err(|e| Error::io("write bottleneck.log", e))?;
                }
            }
        }
        if now.duration_since(last_status) >= Duration::from_secs(1) && !probing {
            last_status = now;
            let status = ForwarderStatus {
                t_s: now.saturating_duration_since(t0).as_secs_f64(),
                delivered_bytes: stats.bytes_out[0],
                drops: stats.link_drops[0],
                backlog_packets: sides[0].link.backlog() as u64,
                ce_marks: stats.ce_marks[0],
            };
            println!("{}", status.line());
            std::io::stdout().flush().ok();
        }
        // Sleep: until the next link deadline, but no sooner than last_wake + coalesce;
        // packets arriving meanwhile wake us through ppoll unless we are inside the
        // coalescing window.
        let last_wake = now;
        let deadline = sides.iter().filter_map(|s| s.link.poll_timeout()).min();
        let earliest = last_wake + cfg.coalesce;
        let now2 = Instant::now();
        if earliest > now2 {
            std::thread::sleep(earliest - now2);
        }
        let now3 = Instant::now();
        let wait = match deadline {
            Some(d) if d <= now3 => {
                late.add(now3 - d);
                stats.timer_wakeups += 1;
                continue;
            }
            Some(d) => Some(d - now3),
            None => Some(Duration::from_millis(200)),
        };
        let mut fds = [
            libc::pollfd {
                fd: tuns[0].as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: tuns[1].as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: stdin_fd,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        let ts = wait.map(|w| libc::timespec {
            tv_sec: w.as_secs() as libc::time_t,
            tv_nsec: w.subsec_nanos() as libc::c_long,
        });
        let tsp = ts.as_ref().map_or(std::ptr::null(), |t| t as *const _);
        // SAFETY: `fds` is a valid array of 3 pollfds; `tsp` is null or points to `ts`.
        let rc = unsafe { libc::ppoll(fds.as_mut_ptr(), 3, tsp, std::ptr::null()) };
        if rc == 0
            && let Some(d) = deadline
        {
            let n = Instant::now();
            if n >= d {
                late.add(n - d);
                stats.timer_wakeups += 1;
            }
        }
        if rc > 0 && fds[2].revents != 0 {
            let mut b = [0u8; 64];
            match std::io::stdin().read(&mut b) {
                Ok(0) | Err(_) => stdin_open = false,
                Ok(_) => {}
            }
        }
    }
    log.flush()
        .map_err(|e| Error::io("flush bottleneck.log", e))?;
    let (u, s) = crate::sys::cpu_times();
    stats.cpu_user_s = u;
    stats.cpu_sys_s = s;
    stats.wall_s = started.elapsed().as_secs_f64();
    stats.scheduling = crate::rt::own_policy();
    stats.lateness_us = late.summary();
    stats.read_delay_us = read_delay.summary();
    stats.steal_share =
        steal_at_t0
            .zip(crate::sys::cpu_steal())
            .and_then(|((s0, t0), (s1, t1))| {
                (t1 > t0).then(|| s1.saturating_sub(s0) as f64 / (t1 - t0) as f64)
            });
    for (i, side) in sides.iter().enumerate() {
        if let Some(s) = &side.stamps {
            stats.stamped[i] = s.stamped;
            stats.unstamped[i] = s.unstamped;
        }
    }
    write_json(&cfg.out.join("flows.json"), &table)?;
    write_json(&cfg.out.join("forwarder.json"), &stats)?;
    Ok(())
}

fn write_json<T: Serialize>(path: &std::path::Path, v: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(v).map_err(|e| Error::output(path, e))?;
    std::fs::write(path, text).map_err(|e| Error::output(path, e))
}

fn flow_id(t: &packet::FiveTuple) -> FlowId {
    let addr = |a: &[u8; 16]| -> IpAddr {
        if a[..12].iter().all(|b| *b == 0) {
            IpAddr::V4(Ipv4Addr::new(a[12], a[13], a[14], a[15]))
        } else {
            IpAddr::V6(Ipv6Addr::from(*a))
        }
    };
    FlowId {
        src: addr(&t.src),
        dst: addr(&t.dst),
        src_port: t.sport,
        dst_port: t.dport,
        protocol: Protocol(t.proto),
    }
}

fn unknown_flow() -> FlowId {
    FlowId {
        src: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        dst: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        src_port: 0,
        dst_port: 0,
        protocol: Protocol(0),
    }
}

/// A link event as the forwarder logs it (`None` for events it does not log); also the
/// simulated run's (`crate::simrun`).
pub(crate) fn record_of(
    ev: &LinkEvent,
    dir: Dir,
    t0: Instant,
    flows: &HashMap<FlowId, u16>,
) -> Option<Record> {
    let (kind, dur, why) = match ev.kind {
        EventKind::Dequeued { sojourn } => (Kind::Dequeued, sojourn, 0),
        EventKind::Delivered { latency } => (Kind::Delivered, latency, 0),
        EventKind::Dropped(r) => (
            Kind::Dropped,
            Duration::ZERO,
            match r {
                DropReason::RandomLoss => reason::RANDOM,
                DropReason::QueueFull => reason::QUEUE_FULL,
                _ => reason::AQM,
            },
        ),
        EventKind::Marked(_) => (Kind::Marked, Duration::ZERO, 0),
        _ => return None,
    };
    Some(Record {
        t_ns: u64::try_from(ev.time.saturating_duration_since(t0).as_nanos()).unwrap_or(u64::MAX),
        dur_ns: u64::try_from(dur.as_nanos()).unwrap_or(u64::MAX),
        flow: flows.get(&ev.flow).copied().unwrap_or(u16::MAX),
        size: u16::try_from(ev.size.as_bytes()).unwrap_or(u16::MAX),
        kind,
        reason: why,
        dir,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_line_reads_back_and_other_lines_are_not_statuses() {
        let st = ForwarderStatus {
            t_s: 12.5,
            delivered_bytes: 3_000_000,
            drops: 4,
            backlog_packets: 17,
            ce_marks: 9,
        };
        assert_eq!(ForwarderStatus::parse(&st.line()), Some(st));
        assert_eq!(ForwarderStatus::parse(ForwarderStatus::READY), None);
        assert_eq!(ForwarderStatus::parse("status 1 2 3 4 5"), None);
    }

    #[test]
    fn the_second_delivery_of_a_duplicated_packet_is_logged_as_a_copy() {
        // A link that duplicates every packet: each one is delivered twice, and exactly one
        // of its two deliveries is a copy.
        let mut cfg = LinkConfig::constant(cg_types::Bitrate::mbps(10));
        cfg.delay.duplicate = 1.0;
        let mut link: Link<Vec<u8>> = Link::new(cfg).unwrap();
        let t0 = Instant::now();
        let flow = unknown_flow();
        for i in 0..5 {
            let p = Packet::new(PacketId(i), flow, DataSize::bytes(100), t0, vec![0; 100]);
            link.handle_packet(p, t0);
        }
        let mut copies = Copies::default();
        let end = t0 + Duration::from_secs(1);
        link.handle_timeout(end);
        while link.poll_delivery(end).is_some() {}
        let mut delivered = 0;
        let mut copy_ids = Vec::new();
        while let Some(ev) = link.poll_event() {
            if copies.is_copy(&ev) {
                copy_ids.push(ev.id.0);
            } else if matches!(ev.kind, EventKind::Delivered { .. }) {
                delivered += 1;
            }
        }
        assert_eq!(delivered, 5);
        assert_eq!(copy_ids, vec![0, 1, 2, 3, 4]);
        assert!(copies.pending.is_empty());
    }

    #[test]
    fn lateness_quantiles_come_from_the_histogram() {
        let mut l = Lateness::new();
        for us in 0..100 {
            l.add(Duration::from_micros(us));
        }
        l.add(Duration::from_millis(500));
        assert_eq!(l.quantile(0.5), 50.0);
        assert_eq!(l.quantile(0.99), 99.0);
        assert_eq!(l.max_us, 500_000.0);
    }
}
