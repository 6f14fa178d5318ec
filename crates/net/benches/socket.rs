//! Socket-layer speed on loopback: send throughput of 1200-byte datagrams (one `sendmsg` per
//! datagram, one `sendmmsg` per 64, and `sendmmsg` + GSO) and receive rate of a prefilled
//! socket (with and without GRO).
//!
//! `cargo bench -p cg-net --bench socket -- --warm-up-time 1 --measurement-time 3`

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use cg_net::{SocketConfig, Transmit, UdpSocket};
use cg_types::{DataSize, Ecn};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

const PAYLOAD: usize = 1200;
const BATCH: usize = 64;

fn config(gro: bool, gso: bool) -> SocketConfig {
    SocketConfig {
        bind: "127.0.0.1:0".parse().expect("literal address"),
        gro,
        gso,
        recv_buffer: Some(DataSize::kibibytes(32 * 1024)),
        ..SocketConfig::default()
    }
}

fn batch() -> Vec<Transmit> {
    let payload = Bytes::from(vec![0xab; PAYLOAD]);
    (0..BATCH)
        .map(|_| Transmit {
            payload: payload.clone(),
            ecn: Some(Ecn::Ect1),
        })
        .collect()
}

/// A receiver draining `rx` on its own thread until `stop`.
fn drain(rx: UdpSocket, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut b = rx.recv_batch_buffer(64);
        while !stop.load(Ordering::Relaxed) {
            if rx.recv_batch(&mut b).is_err() {
                std::thread::sleep(Duration::from_micros(100));
            }
        }
    })
}

fn send(c: &mut Criterion) {
    let mut g = c.benchmark_group("send_1200B");
    g.throughput(Throughput::Bytes((PAYLOAD * BATCH) as u64));
    for (name, gso, batched) in [
        ("sendmsg_each", false, false),
        ("sendmmsg", false, true),
        ("sendmmsg_gso", true, true),
    ] {
        let mut tx = UdpSocket::bind(&config(true, gso)).expect("bind");
        let rx = UdpSocket::bind(&config(true, true)).expect("bind");
        let dest = rx.local_addr();
        let stop = Arc::new(AtomicBool::new(false));
        let drainer = drain(rx, Arc::clone(&stop));
        let batch = batch();
        g.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| {
                if batched {
                    let mut sent = 0;
                    while sent < batch.len() {
                        match tx.send_batch(dest, &batch[sent..]) {
                            Ok(n) => sent += n,
                            Err(f) if f.error.kind() == io::ErrorKind::WouldBlock => {
                                std::thread::yield_now()
                            }
                            Err(f) => panic!("send: {}", f.error),
                        }
                    }
                } else {
                    for t in &batch {
                        while let Err(e) = tx.send(dest, t) {
                            assert_eq!(e.kind(), io::ErrorKind::WouldBlock, "send: {e}");
                            std::thread::yield_now();
                        }
                    }
                }
            })
        });
        stop.store(true, Ordering::Relaxed);
        drainer.join().expect("drainer");
    }
    g.finish();
}

fn recv(c: &mut Criterion) {
    const ROUND: usize = 1024;
    let mut g = c.benchmark_group("recv_1200B");
    g.throughput(Throughput::Elements(ROUND as u64));
    for gro in [true, false] {
        let mut tx = UdpSocket::bind(&config(true, true)).expect("bind");
        let rx = UdpSocket::bind(&config(gro, true)).expect("bind");
        let dest = rx.local_addr();
        let batch = batch();
        let mut rb = rx.recv_batch_buffer(64);
        g.bench_function(
            BenchmarkId::from_parameter(if gro { "gro" } else { "no_gro" }),
            |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        for _ in 0..ROUND / BATCH {
                            tx.send_batch(dest, &batch)
                                .expect("the receive buffer holds a round");
                        }
                        let started = Instant::now();
                        let mut got = 0;
                        while got < ROUND {
                            match rx.recv_batch(&mut rb) {
                                Ok(_) => got += rb.datagrams().count(),
                                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                                Err(e) => panic!("recv: {e}"),
                            }
                        }
                        total += started.elapsed();
                    }
                    total
                })
            },
        );
        assert_eq!(
            rb.stats().kernel_drops,
            0,
            "rounds fit in the receive buffer"
        );
    }
    g.finish();
}

criterion_group!(benches, send, recv);
criterion_main!(benches);
