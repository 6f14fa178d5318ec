//! SCReAM v2 cost per acknowledged packet (target: ≤ 200 ns, issue #5).
//!
//! One iteration sends 16 packets of 1200 B and acknowledges them in one RFC 8888-style
//! report (the simulated receiver's "every 16 packets" cadence), 1 in 50 CE-marked, with a
//! varying queuing delay — the full per-packet path: `on_packet_sent`, `on_feedback` (flight,
//! OWD/base delay, α, loss detection, window update, rates), `send_allowance`. Criterion
//! reports time per element = per acknowledged packet.
//!
//! Two measurements of the same loop: `scream` is wall-clock time (criterion's default);
//! `scream_cpu` is the benchmark thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), which stays
//! meaningful on a machine shared with other jobs (preemption does not count).
//!
//! Run: `cargo bench -p cg-cc --bench scream -- --warm-up-time 1 --measurement-time 3`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use cg_cc::scream::ScreamConfig;
use cg_cc::{Controller, Feedback, PacketKind, PacketResult, SentPacket};
use cg_types::{DataSize, Ecn, RemoteTime};
use criterion::measurement::{Measurement, ValueFormatter, WallTime};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const BATCH: u64 = 16;

/// The calling thread's CPU time, in nanoseconds.
struct ThreadCpuTime;

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_THREAD_CPUTIME_ID is supported on Linux.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

static WALL: WallTime = WallTime;

impl Measurement for ThreadCpuTime {
    type Intermediate = u64;
    type Value = u64;
    fn start(&self) -> u64 {
        thread_cpu_ns()
    }
    fn end(&self, start: u64) -> u64 {
        thread_cpu_ns().saturating_sub(start)
    }
    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }
    fn zero(&self) -> u64 {
        0
    }
    fn to_f64(&self, v: &u64) -> f64 {
        *v as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        // Nanoseconds, like wall time.
        WALL.formatter()
    }
}

fn per_ack<M: Measurement>(c: &mut Criterion<M>, group: &str) {
    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Elements(BATCH));
    for (name, cfg) in [
        ("reference", ScreamConfig::reference()),
        ("draft", ScreamConfig::draft()),
    ] {
        g.bench_function(format!("send_and_ack_{name}"), |b| {
            let start = Instant::now();
            let mut s = cfg.build_scream(start).expect("a valid config");
            let mut now = start;
            let mut seq = 0u64;
            let mut t_us = 0i64;
            let mut results = Vec::with_capacity(BATCH as usize);
            b.iter(|| {
                results.clear();
                for _ in 0..BATCH {
                    now += Duration::from_micros(200);
                    t_us += 200;
                    s.on_packet_sent(&SentPacket {
                        seq,
                        size: DataSize::bytes(1200),
                        send_time: now,
                        ecn: Ecn::Ect1,
                        kind: PacketKind::Media,
                    });
                    let q = (seq % 97) as i64 * 20;
                    results.push(PacketResult {
                        seq,
                        arrival: Some(RemoteTime::from_micros(t_us + 15_000 + q)),
                        ecn: if seq.is_multiple_of(50) {
                            Ecn::Ce
                        } else {
                            Ecn::Ect1
                        },
                    });
                    seq += 1;
                }
                now += Duration::from_millis(1);
                t_us += 1000;
                s.on_feedback(
                    &Feedback {
                        packets: &results,
                        ..Feedback::default()
                    },
                    now,
                );
                black_box(s.send_allowance());
                black_box(s.target_bitrate());
            });
        });
    }
    g.finish();
}

fn wall(c: &mut Criterion) {
    per_ack(c, "scream");
}

fn cpu(c: &mut Criterion<ThreadCpuTime>) {
    per_ack(c, "scream_cpu");
}

criterion_group!(wall_time, wall);
criterion_group! {
    name = cpu_time;
    config = Criterion::default().with_measurement(ThreadCpuTime);
    targets = cpu
}
criterion_main!(wall_time, cpu_time);
