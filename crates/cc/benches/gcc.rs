//! GCC hot paths: the delay-based path per received packet (receiver in REMB mode), and the
//! sender per acknowledged packet (send-side mode: `on_packet_sent` + its share of one
//! transport-wide feedback report of 20 results).
//!
//! `cargo bench -p cg-cc --bench gcc -- --warm-up-time 1 --measurement-time 3`
//!
//! Each path is measured twice: in wall-clock time (criterion's default), and in this
//! thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), which stays meaningful when the machine is
//! shared and the benchmark thread is preempted (the wall-clock figure then includes the
//! time other processes ran).

use std::hint::black_box;
use std::time::{Duration, Instant};

use cg_cc::gcc::GccConfig;
use cg_cc::{
    Controller, Feedback, PacketKind, PacketResult, ReceiveSideEstimator, ReceivedPacket,
    SentPacket,
};
use cg_types::{DataSize, Ecn, RemoteTime};
use criterion::measurement::{Measurement, ValueFormatter};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// This thread's CPU time.
fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_THREAD_CPUTIME_ID is supported on
    // Linux since 2.6.12.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Criterion measurement in thread CPU time.
struct CpuTime;

/// Formats nanoseconds (and elements per second).
struct NanosFormatter;

impl ValueFormatter for NanosFormatter {
    fn scale_values(&self, _typical: f64, _values: &mut [f64]) -> &'static str {
        "ns"
    }
    fn scale_throughputs(
        &self,
        _typical: f64,
        throughput: &Throughput,
        values: &mut [f64],
    ) -> &'static str {
        let n = match throughput {
            Throughput::Elements(n) | Throughput::Bytes(n) | Throughput::BytesDecimal(n) => *n,
            _ => 1,
        } as f64;
        for v in values.iter_mut() {
            *v = n * 1e9 / *v;
        }
        "elem/s (CPU)"
    }
    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "ns"
    }
}

impl Measurement for CpuTime {
    type Intermediate = Duration;
    type Value = Duration;
    fn start(&self) -> Duration {
        thread_cpu_time()
    }
    fn end(&self, start: Duration) -> Duration {
        thread_cpu_time().saturating_sub(start)
    }
    fn add(&self, a: &Duration, b: &Duration) -> Duration {
        *a + *b
    }
    fn zero(&self) -> Duration {
        Duration::ZERO
    }
    fn to_f64(&self, v: &Duration) -> f64 {
        v.as_nanos() as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        &NanosFormatter
    }
}

/// Packet `i` of a 1 Mbit/s stream: 4 packets of 1000 bytes per 33 ms frame, paced 2 ms
/// apart, 25 ms one-way delay plus a little queuing that comes and goes.
fn timing(i: u64) -> (Duration, Duration, u64) {
    let frame = i / 4;
    let send = Duration::from_micros(frame * 33_333 + (i % 4) * 2_000);
    let queue = Duration::from_micros((i % 97) * 50);
    (send, send + Duration::from_millis(25) + queue, frame)
}

fn receiver<M: Measurement>(c: &mut Criterion<M>, name: &str) {
    let t0 = Instant::now();
    let mut rx = GccConfig::default().build_receiver(t0).unwrap();
    let mut i = 0u64;
    let mut g = c.benchmark_group(name);
    g.throughput(Throughput::Elements(1));
    g.bench_function("receiver_per_packet", |b| {
        b.iter(|| {
            let (send, arrival, frame) = timing(i);
            i += 1;
            rx.on_packet_received(black_box(&ReceivedPacket {
                arrival: t0 + arrival,
                send_time: RemoteTime::from_duration(send),
                size: DataSize::bytes(1000),
                group: frame,
                ssrc: 1,
                kind: PacketKind::Media,
            }));
        })
    });
    g.finish();
    black_box(rx.estimate());
}

fn sender<M: Measurement>(c: &mut Criterion<M>, name: &str) {
    const BATCH: u64 = 20;
    let t0 = Instant::now();
    let mut tx = GccConfig::send_side().build_controller(t0).unwrap();
    let mut next = 0u64;
    let mut results = Vec::with_capacity(BATCH as usize);
    let mut g = c.benchmark_group(name);
    g.throughput(Throughput::Elements(BATCH));
    g.bench_function("sender_per_acked_packet", |b| {
        b.iter(|| {
            results.clear();
            for _ in 0..BATCH {
                let (send, arrival, _) = timing(next);
                tx.on_packet_sent(&SentPacket {
                    seq: next,
                    size: DataSize::bytes(1000),
                    send_time: t0 + send,
                    ecn: Ecn::NotEct,
                    kind: PacketKind::Media,
                });
                if next % 4 == 3 {
                    tx.on_frame_sent(next);
                }
                results.push(PacketResult {
                    seq: next,
                    arrival: Some(RemoteTime::from_duration(arrival)),
                    ecn: Ecn::NotEct,
                });
                next += 1;
            }
            let (_, last_arrival, _) = timing(next - 1);
            tx.on_feedback(
                black_box(&Feedback {
                    packets: &results,
                    ..Feedback::default()
                }),
                t0 + last_arrival + Duration::from_millis(25),
            );
        })
    });
    g.finish();
    black_box(tx.target_bitrate());
}

fn wall(c: &mut Criterion) {
    receiver(c, "gcc");
    sender(c, "gcc");
}

fn cpu(c: &mut Criterion<CpuTime>) {
    receiver(c, "gcc_cpu");
    sender(c, "gcc_cpu");
}

criterion_group!(wall_time, wall);
criterion_group! {
    name = cpu_time;
    config = Criterion::default().with_measurement(CpuTime);
    targets = cpu
}
criterion_main!(wall_time, cpu_time);
