//! Speed on loopback, per core:
//!
//! - `send_1200B`: send throughput of 1200-byte datagrams — one `sendmsg` per datagram, one
//!   `sendmmsg` per 64, and `sendmmsg` with GSO (a receiver thread drains the socket);
//! - `rtp_packetize_pace_send`: cg-rtp's SenderSession packetizing 64-packet VP8 frames,
//!   pacing them (a 100 Gb/s pacing rate on a simulated clock, so only the CPU cost is
//!   measured) and cg-net sending them with GSO;
//! - `recv_1200B`: receive rate of a prefilled socket, with and without GRO.
//!
//! The machines this runs on are shared (2 cores, often a load of 10+), so wall-clock time
//! mostly measures the scheduler. Each benchmark therefore reports the **CPU time of the
//! measuring thread** (`CLOCK_THREAD_CPUTIME_ID`; kernel time of the system calls included,
//! softirq work done on the thread's behalf included when it runs inline), i.e. what one
//! core delivers. `CG_BENCH_WALL=1` measures wall-clock time instead.
//!
//! `cargo bench -p cg-net --bench socket -- --warm-up-time 1 --measurement-time 3`

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use cg_cc::FixedRate;
use cg_net::{Session, SocketConfig, Transmit, UdpSocket};
use cg_rtp::{Codec, EncodedFrame, SenderConfig, SenderSession};
use cg_types::{Bitrate, DataSize, Ecn};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

const PAYLOAD: usize = 1200;
const BATCH: usize = 64;

/// The clock benchmarks are measured with (see the file docs).
fn clock() -> Duration {
    if std::env::var_os("CG_BENCH_WALL").is_some() {
        static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        return START.get_or_init(Instant::now).elapsed();
    }
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write; the clock id is a Linux constant.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(
        rc, 0,
        "CLOCK_THREAD_CPUTIME_ID is always available on Linux"
    );
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

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
            destination: None,
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
            b.iter_custom(|iters| {
                let t0 = clock();
                for _ in 0..iters {
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
                }
                clock() - t0
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
                        let started = clock();
                        let mut got = 0;
                        while got < ROUND {
                            match rx.recv_batch(&mut rb) {
                                Ok(_) => got += rb.datagrams().count(),
                                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                                Err(e) => panic!("recv: {e}"),
                            }
                        }
                        total += clock() - started;
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

/// Paces at 100 Gb/s: the pacer never holds a packet back on the simulated clock below, so
/// the benchmark measures its bookkeeping, not its waiting.
const UNLIMITED: FixedRate = FixedRate {
    rate: Bitrate::mbps(100_000),
    pacing: Bitrate::mbps(100_000),
    feedback: cg_cc::FeedbackKind::Rfc8888,
};

fn rtp_send(c: &mut Criterion) {
    let mut g = c.benchmark_group("rtp_packetize_pace_send");
    let sender_config = SenderConfig {
        ecn: Ecn::Ect1,
        ..SenderConfig::default()
    };
    // One VP8 frame of exactly 64 full packets (P bit set: a delta frame after the first).
    let frame_len = 64 * sender_config.max_payload() - 1;
    g.throughput(Throughput::Bytes((64 * PAYLOAD) as u64));
    let mut tx = UdpSocket::bind(&config(true, true)).expect("bind");
    let rx = UdpSocket::bind(&config(true, true)).expect("bind");
    let dest = rx.local_addr();
    let stop = Arc::new(AtomicBool::new(false));
    let drainer = drain(rx, Arc::clone(&stop));
    let frame = Bytes::from(vec![0x01; frame_len]);
    let mut out: Vec<Transmit> = Vec::with_capacity(64);
    g.bench_function("vp8_1200B_gso", |b| {
        b.iter_custom(|iters| {
            // A fresh session per sample keeps the simulated clock far from the RTCP timeout.
            let mut now = Instant::now();
            let mut session = SenderSession::new(sender_config.clone(), Box::new(UNLIMITED), now)
                .expect("valid config");
            let t0 = clock();
            for i in 0..iters {
                let mut data = frame.clone();
                if i == 0 {
                    data = Bytes::from(vec![0x00; frame_len]);
                }
                let f = EncodedFrame {
                    encoded: None,
                    data,
                    capture_time: now,
                    key_frame: i == 0,
                    codec: Codec::Vp8,
                };
                session.push_frame(f, now).expect("frame accepted");
                now += Duration::from_micros(100);
                Session::handle_timeout(&mut session, now);
                while let Some(t) = Session::poll_transmit(&mut session, now) {
                    out.push(t);
                    if out.len() == 64 {
                        send_all(&mut tx, dest, &mut out);
                    }
                }
                send_all(&mut tx, dest, &mut out);
            }
            clock() - t0
        })
    });
    stop.store(true, Ordering::Relaxed);
    drainer.join().expect("drainer");
    g.finish();
}

fn send_all(tx: &mut UdpSocket, dest: std::net::SocketAddr, out: &mut Vec<Transmit>) {
    let mut sent = 0;
    while sent < out.len() {
        match tx.send_batch(dest, &out[sent..]) {
            Ok(n) => sent += n,
            Err(f) if f.error.kind() == io::ErrorKind::WouldBlock => std::thread::yield_now(),
            Err(f) => panic!("send: {}", f.error),
        }
    }
    out.clear();
}

criterion_group!(benches, send, rtp_send, recv);
criterion_main!(benches);
