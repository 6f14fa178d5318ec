//! Enqueue + dequeue throughput of each queue discipline (issue #3 speed targets:
//! ≥ 2 M packets/s DropTail, ≥ 1 M packets/s FQ-CoDel and DualPI2, one core).
//!
//! Each iteration enqueues a batch of packets from several flows and dequeues them all, with
//! time advancing by one serialisation time per packet at 1 Gb/s, so the AQMs run their real
//! per-packet code (sojourn checks, hashing, probability draws) in steady state.

use std::hint::black_box;
use std::time::{Duration, Instant};

use cg_link::packet::{FlowId, Packet, PacketId};
use cg_link::qdisc::{LinkInfo, QdiscConfig};
use cg_link::{NullSink, Qdisc};
use cg_types::{Bitrate, DataSize, Ecn, Rng};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const BATCH: u64 = 64;

fn bench_one(c: &mut Criterion, name: &str, config: QdiscConfig) {
    let info = LinkInfo::new(Bitrate::mbps(1000));
    let mut q = config
        .build::<()>(info, &mut Rng::new(1))
        .expect("benchmark configs are valid");
    let flows: Vec<FlowId> = (0..16).map(FlowId::from_index).collect();
    let t0 = Instant::now();
    let mut now = t0;
    let step = Duration::from_nanos(12_000); // 1500 B at 1 Gb/s
    let mut id = 0u64;
    let mut sink = NullSink;
    let mut g = c.benchmark_group("qdisc");
    g.throughput(Throughput::Elements(BATCH));
    g.bench_function(name, |b| {
        b.iter(|| {
            for i in 0..BATCH {
                let flow = flows[(i % flows.len() as u64) as usize];
                let ecn = if i % 2 == 0 { Ecn::Ect1 } else { Ecn::NotEct };
                let p =
                    Packet::new(PacketId(id), flow, DataSize::bytes(1500), now, ()).with_ecn(ecn);
                id += 1;
                q.enqueue(p, now, &mut sink);
            }
            for _ in 0..BATCH {
                now += step;
                if let Some(t) = q.poll_timeout().filter(|t| *t <= now) {
                    q.handle_timeout(t, &mut sink);
                }
                black_box(q.dequeue(now, &mut sink));
            }
        })
    });
    g.finish();
}

fn qdiscs(c: &mut Criterion) {
    bench_one(c, "droptail", QdiscConfig::default());
}

criterion_group!(benches, qdiscs);
criterion_main!(benches);
