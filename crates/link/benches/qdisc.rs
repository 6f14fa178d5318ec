//! Enqueue + dequeue throughput of each queue discipline, and of a whole [`Link`] (issue #3
//! speed targets: ≥ 2 M packets/s DropTail, ≥ 1 M packets/s FQ-CoDel and DualPI2, one core).
//!
//! Each iteration enqueues a batch of 64 packets of 1500 B from 16 flows (half ECT(1), half
//! Not-ECT) and dequeues them all, with time advancing by one serialisation time per packet
//! at 1 Gb/s and the qdisc's timers fired when due, so the AQMs run their real per-packet code
//! (sojourn checks, hashing, probability draws) in steady state. Events go to a `NullSink`
//! (qdisc benches) or to the link's bounded log and per-flow counters (link bench).
//!
//! Run: `cargo bench -p cg-link -- --warm-up-time 1 --measurement-time 3`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use cg_link::packet::{FlowId, Packet, PacketId};
use cg_link::qdisc::{LinkInfo, QdiscConfig};
use cg_link::{Link, LinkConfig, NullSink, Qdisc, presets};
use cg_types::{Bitrate, DataSize, Ecn, Rng};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const BATCH: u64 = 64;
const STEP: Duration = Duration::from_nanos(12_000); // 1500 B at 1 Gb/s

fn packet(id: u64, flows: &[FlowId], now: Instant) -> Packet {
    let flow = flows[(id % flows.len() as u64) as usize];
    let ecn = if id.is_multiple_of(2) {
        Ecn::Ect1
    } else {
        Ecn::NotEct
    };
    Packet::new(PacketId(id), flow, DataSize::bytes(1500), now, ()).with_ecn(ecn)
}

fn bench_qdisc(c: &mut Criterion, name: &str, config: QdiscConfig) {
    let info = LinkInfo::new(Bitrate::mbps(1000));
    let mut q = config
        .build::<()>(info, &mut Rng::new(1))
        .expect("benchmark configs are valid");
    let flows: Vec<FlowId> = (0..16).map(FlowId::from_index).collect();
    let mut now = Instant::now();
    let mut id = 0u64;
    let mut sink = NullSink;
    let mut g = c.benchmark_group("qdisc");
    g.throughput(Throughput::Elements(BATCH));
    g.bench_function(name, |b| {
        b.iter(|| {
            for _ in 0..BATCH {
                q.enqueue(packet(id, &flows, now), now, &mut sink);
                id += 1;
            }
            for _ in 0..BATCH {
                now += STEP;
                if q.poll_timeout().is_some_and(|t| t <= now) {
                    q.handle_timeout(now, &mut sink);
                }
                black_box(q.dequeue(now, &mut sink));
            }
        })
    });
    g.finish();
}

fn bench_link(c: &mut Criterion, name: &str, qdisc: QdiscConfig) {
    let config = LinkConfig {
        qdisc,
        ..LinkConfig::constant(Bitrate::mbps(1000)).with_delay(Duration::from_millis(10))
    };
    let mut link: Link<()> = Link::new(config).expect("benchmark configs are valid");
    let flows: Vec<FlowId> = (0..16).map(FlowId::from_index).collect();
    let mut now = Instant::now();
    let mut id = 0u64;
    let mut g = c.benchmark_group("link");
    g.throughput(Throughput::Elements(BATCH));
    g.bench_function(name, |b| {
        b.iter(|| {
            // Offered at exactly the link rate: every packet is queued, serialised, delayed
            // and delivered, with events and per-flow counters kept.
            for _ in 0..BATCH {
                link.handle_packet(packet(id, &flows, now), now);
                id += 1;
                now += STEP;
                while let Some(p) = link.poll_delivery(now) {
                    black_box(p);
                }
                while link.poll_event().is_some() {}
            }
        })
    });
    g.finish();
}

fn qdiscs(c: &mut Criterion) {
    bench_qdisc(c, "droptail", QdiscConfig::default());
    bench_qdisc(c, "codel", QdiscConfig::Codel(Default::default()));
    bench_qdisc(c, "pie", QdiscConfig::Pie(Default::default()));
    bench_qdisc(c, "sfq", QdiscConfig::Sfq(Default::default()));
    bench_qdisc(c, "fq_codel", QdiscConfig::FqCodel(Default::default()));
    bench_qdisc(c, "dualpi2", QdiscConfig::Dualpi2(Default::default()));
    bench_qdisc(
        c,
        "htb_tma24",
        presets::tma24_htb(Bitrate::mbps(1000), Default::default())
            .expect("1 Gb/s exceeds the guarantee"),
    );
    bench_link(c, "droptail", QdiscConfig::default());
    bench_link(c, "fq_codel", QdiscConfig::FqCodel(Default::default()));
    bench_link(c, "dualpi2", QdiscConfig::Dualpi2(Default::default()));
}

criterion_group!(benches, qdiscs);
criterion_main!(benches);
