//! GCC hot paths: the delay-based path per received packet (receiver in REMB mode), and the
//! sender per acknowledged packet (send-side mode: `on_packet_sent` + its share of one
//! transport-wide feedback report of 20 results).
//!
//! `cargo bench -p cg-cc --bench gcc -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;
use std::time::{Duration, Instant};

use cg_cc::gcc::GccConfig;
use cg_cc::{
    Controller, Feedback, PacketKind, PacketResult, ReceiveSideEstimator, ReceivedPacket,
    SentPacket,
};
use cg_types::{DataSize, Ecn, RemoteTime};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// Packet `i` of a 1 Mbit/s stream: 4 packets of 1000 bytes per 33 ms frame, paced 2 ms
/// apart, 25 ms one-way delay plus a little queuing that comes and goes.
fn timing(i: u64) -> (Duration, Duration, u64) {
    let frame = i / 4;
    let send = Duration::from_micros(frame * 33_333 + (i % 4) * 2_000);
    let queue = Duration::from_micros((i % 97) * 50);
    (send, send + Duration::from_millis(25) + queue, frame)
}

fn receiver(c: &mut Criterion) {
    let t0 = Instant::now();
    let mut rx = GccConfig::default().build_receiver(t0);
    let mut i = 0u64;
    let mut g = c.benchmark_group("gcc");
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
            }));
        })
    });
    g.finish();
    black_box(rx.estimate());
}

fn sender(c: &mut Criterion) {
    const BATCH: u64 = 20;
    let t0 = Instant::now();
    let mut tx = GccConfig::send_side().build_controller(t0);
    let mut next = 0u64;
    let mut results = Vec::with_capacity(BATCH as usize);
    let mut g = c.benchmark_group("gcc");
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

criterion_group!(benches, receiver, sender);
criterion_main!(benches);
