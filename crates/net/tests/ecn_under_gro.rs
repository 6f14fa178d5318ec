//! ECN must survive receive-side coalescing at high packet rates (a defect found in quinn-udp
//! 0.6.3 on these machines: its 96-byte control buffer truncates the TOS message of a GRO
//! buffer, so coalesced datagrams lost their ECN). 100 000 ECT(1) datagrams of 1200 bytes go out in GSO batches as fast as
//! the receiver drains them; every one must come back, marked ECT(1).

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use cg_net::{SocketConfig, Transmit, UdpSocket};
use cg_types::Ecn;

const COUNT: u64 = 100_000;
/// Datagrams in flight at most: well inside the 4 MiB receive buffer, so the test checks
/// ECN, not the kernel's buffer limit.
const WINDOW: u64 = 1024;
const BATCH: usize = 64;

struct Outcome {
    received: u64,
    ect1: u64,
    coalesced: u64,
    control_truncated: u64,
    kernel_drops: u32,
    rate: f64,
}

fn burst(bind: &str, gro: bool) -> Outcome {
    let bind = bind.parse().unwrap();
    let mut tx = UdpSocket::bind(&SocketConfig {
        bind,
        ..SocketConfig::default()
    })
    .unwrap();
    let rx = UdpSocket::bind(&SocketConfig {
        bind,
        gro,
        ..SocketConfig::default()
    })
    .unwrap();
    assert_eq!(rx.gro_enabled(), gro);
    let dest = rx.local_addr();
    let received = Arc::new(AtomicU64::new(0));
    let seen = Arc::clone(&received);
    let receiver = std::thread::spawn(move || {
        let mut batch = rx.recv_batch_buffer(64);
        let (mut n, mut ect1) = (0u64, 0u64);
        let deadline = Instant::now() + Duration::from_secs(60);
        while n < COUNT && Instant::now() < deadline {
            match rx.recv_batch(&mut batch) {
                Ok(_) => {
                    for d in batch.datagrams() {
                        n += 1;
                        ect1 += u64::from(d.ecn == Some(Ecn::Ect1) && d.payload.len() == 1200);
                    }
                    seen.store(n, Ordering::Release);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_micros(50))
                }
                Err(e) => panic!("recvmmsg: {e}"),
            }
        }
        (n, ect1, batch.stats())
    });
    let payload = Bytes::from(vec![0x5a; 1200]);
    let batch: Vec<Transmit> = (0..BATCH)
        .map(|_| Transmit {
            payload: payload.clone(),
            ecn: Some(Ecn::Ect1),
            destination: None,
        })
        .collect();
    let started = Instant::now();
    let mut sent = 0u64;
    while sent < COUNT {
        if sent - received.load(Ordering::Acquire) > WINDOW {
            std::thread::yield_now();
            continue;
        }
        let n = (COUNT - sent).min(BATCH as u64) as usize;
        match tx.send_batch(dest, &batch[..n]) {
            Ok(k) => sent += k as u64,
            Err(f) if f.error.kind() == io::ErrorKind::WouldBlock => std::thread::yield_now(),
            Err(f) => panic!("sendmmsg: {}", f.error),
        }
    }
    let (n, ect1, stats) = receiver.join().unwrap();
    let rate = n as f64 / started.elapsed().as_secs_f64();
    Outcome {
        received: n,
        ect1,
        coalesced: stats.gro_coalesced,
        control_truncated: stats.control_truncated,
        kernel_drops: stats.kernel_drops,
        rate,
    }
}

fn check(bind: &str, gro: bool) {
    let o = burst(bind, gro);
    eprintln!(
        "{bind} gro={gro}: {} datagrams at {:.0}/s, {} coalesced buffers, {} truncated control",
        o.received, o.rate, o.coalesced, o.control_truncated
    );
    assert_eq!(o.kernel_drops, 0, "the receive buffer never overflowed");
    assert_eq!(o.received, COUNT, "every datagram read back");
    assert_eq!(o.ect1, COUNT, "every one as ECT(1), 1200 bytes");
    assert_eq!(o.control_truncated, 0);
    if gro {
        assert!(
            o.coalesced > 0,
            "GSO sends reach a GRO socket coalesced, so the test exercises coalescing"
        );
    } else {
        assert_eq!(o.coalesced, 0);
    }
}

#[test]
fn ect1_survives_gro_coalescing_at_100k_datagrams_ipv4() {
    check("127.0.0.1:0", true);
}

#[test]
fn ect1_survives_at_100k_datagrams_without_gro_ipv4() {
    check("127.0.0.1:0", false);
}

#[test]
fn ect1_survives_gro_coalescing_at_100k_datagrams_ipv6() {
    check("[::1]:0", true);
}
