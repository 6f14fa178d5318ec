//! SCReAM v2 cost per acknowledged packet (target: ≤ 200 ns, issue #5).
//!
//! One iteration sends 16 packets of 1200 B and acknowledges them in one RFC 8888-style
//! report (the simulated receiver's "every 16 packets" cadence), 1 in 50 CE-marked, with a
//! varying queuing delay — the full per-packet path: `on_packet_sent`, `on_feedback` (flight,
//! OWD/base delay, α, loss detection, window update, rates), `send_allowance`. Criterion
//! reports time per element = per acknowledged packet.
//!
//! Run: `cargo bench -p cg-cc --bench scream -- --warm-up-time 1 --measurement-time 3`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use cg_cc::scream::ScreamConfig;
use cg_cc::{Controller, Feedback, PacketKind, PacketResult, SentPacket};
use cg_types::{DataSize, Ecn, RemoteTime};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const BATCH: u64 = 16;

fn per_ack(c: &mut Criterion) {
    let mut g = c.benchmark_group("scream");
    g.throughput(Throughput::Elements(BATCH));
    for (name, cfg) in [
        ("reference", ScreamConfig::reference()),
        ("draft", ScreamConfig::draft()),
    ] {
        g.bench_function(format!("send_and_ack_{name}"), |b| {
            let start = Instant::now();
            let mut s = cfg.build_scream(start);
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

criterion_group!(benches, per_ack);
criterion_main!(benches);
