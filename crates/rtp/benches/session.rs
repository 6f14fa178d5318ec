//! Throughput of the sans-IO parts (the socket part is cg-net's bench):
//! - `packetize_pace`: frames in, paced RTP datagrams out (packetization, pacer, header
//!   extensions, serialization, history, sent log, controller callbacks), in bytes of video
//!   payload (1200 bytes per packet, the unit);
//! - `receive`: datagrams in (parse, stats, feedback records, frame assembly,
//!   depacketization), in packets.
//!
//! Run: `cargo bench -p cg-rtp -- --warm-up-time 1 --measurement-time 3`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use bytes::Bytes;
use cg_cc::{FeedbackKind, FixedRate};
use cg_rtp::{
    Codec, EncodedFrame, FeedbackConfig, FeedbackLossResponse, ReceiverConfig, ReceiverSession,
    SenderConfig, SenderSession,
};
use cg_types::{Bitrate, Ecn};
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};

/// Payload bytes of video per packet.
const PAYLOAD: usize = 1200;
/// Packets per frame.
const PER_FRAME: usize = 100;

fn sender_config() -> SenderConfig {
    let mut c = SenderConfig::default();
    // room for 1200 bytes of video after the 4-byte VP8 descriptor
    c.max_packet_size = 12 + c.extensions.max_overhead() + 2 + 4 + PAYLOAD;
    // No feedback ever comes back: neither the rate halving of RFC 8888 §5 nor the circuit
    // breaker may act within the simulated hours a long measurement covers (with the breaker
    // open no media packet left, and `send_frame` collected sender reports without end
    // until the bench ran out of memory).
    c.feedback_loss = FeedbackLossResponse::Off;
    c.rtcp_timeout = Duration::from_secs(365 * 86_400);
    c
}

fn frame(now: Instant, key: bool) -> EncodedFrame {
    let mut data = vec![0x5A; PAYLOAD * PER_FRAME];
    data[0] = if key { 0x10 } else { 0x11 };
    EncodedFrame {
        encoded: None,
        data: Bytes::from(data),
        capture_time: now,
        key_frame: key,
        codec: Codec::Vp8,
    }
}

/// Pushes one frame and drains it through the pacer at 10 Gbit/s of simulated time.
fn send_frame(tx: &mut SenderSession, now: &mut Instant, key: bool, out: &mut Vec<Bytes>) {
    tx.push_frame(frame(*now, key), *now).expect("valid frame");
    let mut sent = 0;
    while sent < PER_FRAME {
        match tx.poll_transmit(*now) {
            Some(t) => {
                if t.bytes.len() > 200 {
                    sent += 1;
                }
                out.push(t.bytes);
            }
            None => {
                let next = tx.poll_timeout().expect("packets queued: a pacer deadline");
                *now = next.max(*now + Duration::from_nanos(1));
                tx.handle_timeout(*now);
            }
        }
    }
}

fn packetize_pace(c: &mut Criterion) {
    let mut g = c.benchmark_group("sender");
    g.throughput(Throughput::Bytes((PAYLOAD * PER_FRAME) as u64));
    let t0 = Instant::now();
    let mut tx = SenderSession::new(
        sender_config(),
        Box::new(FixedRate::new(Bitrate::mbps(10_000)).feedback(FeedbackKind::TransportWideCc)),
        t0,
    )
    .unwrap();
    let mut now = t0;
    let mut out = Vec::with_capacity(PER_FRAME + 8);
    g.bench_function("packetize_pace_100x1200B_frame", |b| {
        b.iter(|| {
            out.clear();
            send_frame(&mut tx, &mut now, false, &mut out);
            black_box(out.len())
        })
    });
    g.finish();
}

fn receive(c: &mut Criterion) {
    let t0 = Instant::now();
    let mut tx = SenderSession::new(
        sender_config(),
        Box::new(FixedRate::new(Bitrate::mbps(10_000))),
        t0,
    )
    .unwrap();
    let mut now = t0;
    let mut dgrams = Vec::new();
    for k in 0..100 {
        send_frame(&mut tx, &mut now, k == 0, &mut dgrams);
    }
    let rtp: Vec<(Bytes, Instant)> = dgrams
        .into_iter()
        .filter(|b| b.len() > 200)
        .enumerate()
        .map(|(i, b)| (b, t0 + Duration::from_micros(i as u64 * 10)))
        .collect();
    let mut g = c.benchmark_group("receiver");
    g.throughput(Throughput::Elements(rtp.len() as u64));
    for (name, kind) in [
        ("rfc8888", FeedbackKind::Rfc8888),
        ("twcc", FeedbackKind::TransportWideCc),
    ] {
        g.bench_function(format!("receive_{}_packets_{name}", rtp.len()), |b| {
            b.iter_batched(
                || {
                    let cfg = ReceiverConfig {
                        feedback: FeedbackConfig::for_kind(kind),
                        ..ReceiverConfig::default()
                    };
                    ReceiverSession::new(cfg, None, t0).unwrap()
                },
                |mut rx| {
                    for (b, at) in &rtp {
                        let _ = rx.handle_input(b, Ecn::Ect1, *at);
                        while rx.poll_transmit(*at).is_some() {}
                    }
                    let mut frames = 0;
                    while rx.poll_event().is_some() {
                        frames += 1;
                    }
                    assert_eq!(frames, 100, "every frame reassembled");
                    rx
                },
                BatchSize::LargeInput,
            )
        });
    }
    g.finish();
}

criterion_group!(benches, packetize_pace, receive);
criterion_main!(benches);
