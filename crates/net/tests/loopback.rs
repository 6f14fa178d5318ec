//! The driver on real loopback sockets: a paced ECT(1) flow end to end, peer filtering, a
//! learned peer with per-datagram destinations, send errors, shutdown, IPv6, and ECN under GRO coalescing at high packet rates.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use cg_net::probe::{FrameSink, PacedSource, ProbeConfig, ProbeEvent};
use cg_net::{Datagram, Driver, DriverConfig, Session, SocketConfig, Transmit, UdpSocket};
use cg_types::{Bitrate, DataSize, Ecn};
use tokio::sync::oneshot;

fn socket(bind: &str) -> UdpSocket {
    UdpSocket::bind(&SocketConfig {
        bind: bind.parse().unwrap(),
        ..SocketConfig::default()
    })
    .unwrap()
}

/// Runs `source` → `sink` over loopback until the source has sent `total` datagrams and the
/// sink has had 300 ms more; returns (sender stats, receiver stats, sink, sink events).
async fn run_probe(
    bind: &str,
    config: ProbeConfig,
) -> (
    cg_net::StatsSnapshot,
    cg_net::StatsSnapshot,
    FrameSink,
    Vec<ProbeEvent>,
) {
    let tx = socket(bind);
    let rx = socket(bind);
    let (tx_addr, rx_addr) = (tx.local_addr(), rx.local_addr());
    let source = PacedSource::new(config);
    let total = source.total().expect("finite flow");
    let (send_driver, send_handle) = Driver::new(tx, source, DriverConfig::new(rx_addr)).unwrap();
    let (recv_driver, mut recv_handle) =
        Driver::new(rx, FrameSink::new(1), DriverConfig::new(tx_addr)).unwrap();
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let (stop_rx_tx, stop_rx_rx) = oneshot::channel::<()>();
    let sender = tokio::spawn(send_driver.run(async move {
        stop_tx_wait(stop_rx).await;
    }));
    let receiver = tokio::spawn(recv_driver.run(async move {
        stop_tx_wait(stop_rx_rx).await;
    }));
    // Wait for the source to finish (it stops scheduling after its last frame).
    loop {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if send_handle
            .query(|s: &mut PacedSource, _| s.sent())
            .await
            .unwrap()
            >= total
        {
            break;
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop_tx.send(()).unwrap();
    stop_rx_tx.send(()).unwrap();
    let sent = sender.await.unwrap().unwrap();
    let received = receiver.await.unwrap().unwrap();
    let mut events = Vec::new();
    while let Some(e) = recv_handle.try_next_event() {
        events.push(e);
    }
    assert!(
        send_handle.call(|_, _| {}).await.is_err(),
        "a stopped driver refuses commands"
    );
    (sent.stats, received.stats, received.session, events)
}

async fn stop_tx_wait(rx: oneshot::Receiver<()>) {
    let _ = rx.await;
}

#[tokio::test(flavor = "current_thread")]
async fn probe_flow_at_5_mbps_ect1_arrives_complete_ecn_intact_and_bit_exact() {
    // The same check as rtp_loopback.rs without the RTP stack, over 2 s (60 frames).
    let config = ProbeConfig {
        rate: Bitrate::mbps(5),
        ecn: Ecn::Ect1,
        frames: Some(60),
        ..ProbeConfig::default()
    };
    let started = Instant::now();
    let (sent, received, sink, events) = run_probe("127.0.0.1:0", config).await;
    let elapsed = started.elapsed();
    let total = 60 * 18;
    assert!(
        elapsed >= Duration::from_millis(1900),
        "paced over ~2 s, took {elapsed:?}"
    );
    assert_eq!(sent.datagrams_out, total);
    assert_eq!(sent.ecn_out[usize::from(Ecn::Ect1.bits())], total);
    assert_eq!(sent.send_errors, 0);
    assert_eq!(received.datagrams_in, total, "every datagram arrives");
    assert_eq!(
        received.ecn_in(Ecn::Ect1),
        total,
        "every one recorded as ECT(1)"
    );
    assert_eq!(received.ecn_in_missing, 0);
    assert_eq!(received.foreign_datagrams, 0);
    let c = sink.counts();
    assert_eq!(c.frames_intact, 60, "every frame bit-exact");
    assert_eq!(
        (c.frames_corrupt, c.malformed, c.frames_abandoned),
        (0, 0, 0)
    );
    assert_eq!(events.len(), 60);
    assert!(
        events
            .iter()
            .all(|e| matches!(e, ProbeEvent::Frame { intact: true, .. }))
    );
    // 5 Mb/s of 1200-byte datagrams: 521/s; the timer fires about once per datagram.
    assert!(
        sent.timer_wakeups > total / 2 && sent.timer_wakeups < total * 2,
        "{} wake-ups",
        sent.timer_wakeups
    );
}

#[tokio::test(flavor = "current_thread")]
async fn ipv6_flow_arrives_with_its_ecn() {
    let config = ProbeConfig {
        rate: Bitrate::mbps(20),
        ecn: Ecn::Ect0,
        frame: DataSize::bytes(50_000),
        frames: Some(10),
        ..ProbeConfig::default()
    };
    let (sent, received, sink, _) = run_probe("[::1]:0", config).await;
    assert_eq!(received.datagrams_in, sent.datagrams_out);
    assert_eq!(received.ecn_in(Ecn::Ect0), sent.datagrams_out);
    assert_eq!(sink.counts().frames_intact, 10);
}

/// Counts what it is handed; sends one datagram per command.
#[derive(Default)]
struct Echo {
    got: Vec<(Vec<u8>, Option<Ecn>, bool)>,
    out: Vec<Transmit>,
    polls: Arc<AtomicU64>,
}

impl Session for Echo {
    type Event = ();
    fn handle_datagram(&mut self, d: &Datagram<'_>, now: Instant) {
        assert!(d.arrival <= now, "kernel arrival precedes the read");
        self.got
            .push((d.payload.to_vec(), d.ecn, d.kernel_time.is_some()));
    }
    fn handle_timeout(&mut self, _: Instant) {}
    fn poll_transmit(&mut self, _: Instant) -> Option<Transmit> {
        if self.out.is_empty() {
            None
        } else {
            Some(self.out.remove(0))
        }
    }
    fn poll_timeout(&mut self) -> Option<Instant> {
        self.polls.fetch_add(1, Ordering::Relaxed);
        None
    }
}

async fn wait_for(mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !cond() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "current_thread")]
async fn datagrams_from_anyone_but_the_peer_are_counted_and_dropped() {
    let rx = socket("127.0.0.1:0");
    let mut peer = socket("127.0.0.1:0");
    let mut stranger = socket("127.0.0.1:0");
    let rx_addr = rx.local_addr();
    let (driver, handle) =
        Driver::new(rx, Echo::default(), DriverConfig::new(peer.local_addr())).unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(driver.run(stop_tx_wait(stopped)));
    for i in 0..5u8 {
        stranger
            .send(
                rx_addr,
                &Transmit {
                    payload: Bytes::from(vec![0xee; 100]),
                    ecn: Some(Ecn::Ce),
                    destination: None,
                },
            )
            .unwrap();
        peer.send(
            rx_addr,
            &Transmit {
                payload: Bytes::from(vec![i; 10]),
                ecn: Some(Ecn::Ect1),
                destination: None,
            },
        )
        .unwrap();
    }
    wait_for(|| handle.stats().datagrams_in + handle.stats().foreign_datagrams >= 10).await;
    stop.send(()).unwrap();
    let done = task.await.unwrap().unwrap();
    assert_eq!(done.stats.datagrams_in, 5);
    assert_eq!(done.stats.foreign_datagrams, 5);
    assert_eq!(done.stats.foreign_bytes, DataSize::bytes(500));
    let got = &done.session.got;
    assert_eq!(got.len(), 5, "only the peer's datagrams reach the session");
    for (i, (payload, ecn, stamped)) in got.iter().enumerate() {
        assert_eq!(payload, &vec![i as u8; 10]);
        assert_eq!(*ecn, Some(Ecn::Ect1));
        assert!(stamped, "kernel timestamp present");
    }
}

/// Answers every datagram to its source; the first answer also queues one datagram with no
/// destination, which a learned-peer driver cannot send.
#[derive(Default)]
struct Replier {
    out: Vec<Transmit>,
}

impl Session for Replier {
    type Event = ();
    fn handle_datagram(&mut self, d: &Datagram<'_>, _: Instant) {
        if self.out.is_empty() {
            self.out.push(Transmit {
                payload: Bytes::from_static(b"nowhere"),
                ecn: None,
                destination: None,
            });
        }
        self.out.push(Transmit {
            payload: Bytes::copy_from_slice(d.payload),
            ecn: Some(Ecn::Ect1),
            destination: Some(d.source),
        });
    }
    fn handle_timeout(&mut self, _: Instant) {}
    fn poll_transmit(&mut self, _: Instant) -> Option<Transmit> {
        (!self.out.is_empty()).then(|| self.out.remove(0))
    }
    fn poll_timeout(&mut self) -> Option<Instant> {
        None
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_learned_peer_driver_hears_anyone_and_sends_each_datagram_to_its_destination() {
    let rx = socket("127.0.0.1:0");
    let rx_addr = rx.local_addr();
    let mut a = socket("127.0.0.1:0");
    let mut b = socket("127.0.0.1:0");
    let (driver, handle) =
        Driver::new(rx, Replier::default(), DriverConfig::learned_peer()).unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(driver.run(stop_tx_wait(stopped)));
    // Equal sizes, so the replies to A and to B would be one GSO message if the socket
    // grouped across destinations.
    for i in 0..3u8 {
        for (s, tag) in [(&mut a, 0xa0), (&mut b, 0xb0)] {
            let t = Transmit {
                payload: Bytes::from(vec![tag | i; 50]),
                ecn: None,
                destination: None,
            };
            s.send(rx_addr, &t).unwrap();
        }
    }
    wait_for(|| handle.stats().datagrams_out >= 6).await;
    stop.send(()).unwrap();
    let done = task.await.unwrap().unwrap();
    assert_eq!(done.stats.datagrams_in, 6);
    assert_eq!(done.stats.foreign_datagrams, 0);
    assert_eq!(done.stats.datagrams_out, 6);
    assert_eq!(
        done.stats.send_errors, 1,
        "the datagram without a destination"
    );
    for (s, tag) in [(&a, 0xa0u8), (&b, 0xb0)] {
        let mut batch = s.recv_batch_buffer(8);
        let mut got = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(2);
        while got.len() < 3 && Instant::now() < deadline {
            if s.recv_batch(&mut batch).is_ok() {
                got.extend(batch.datagrams().map(|d| (d.payload[0], d.ecn)));
            }
        }
        let want: Vec<_> = (0..3).map(|i| (tag | i, Some(Ecn::Ect1))).collect();
        assert_eq!(got, want);
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_failing_send_is_counted_and_the_driver_carries_on() {
    let tx = socket("127.0.0.1:0");
    let rx = socket("127.0.0.1:0");
    let rx_addr = rx.local_addr();
    let session = Echo {
        out: vec![
            Transmit {
                payload: Bytes::from(vec![1; 100]),
                ecn: None,
                destination: None,
            },
            Transmit {
                payload: Bytes::from(vec![2; 70_000]),
                ecn: None,
                destination: None,
            }, // EMSGSIZE
            Transmit {
                payload: Bytes::from(vec![3; 100]),
                ecn: Some(Ecn::Ect1),
                destination: None,
            },
        ],
        ..Echo::default()
    };
    let (driver, handle) = Driver::new(tx, session, DriverConfig::new(rx_addr)).unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(driver.run(stop_tx_wait(stopped)));
    wait_for(|| handle.stats().datagrams_out + handle.stats().send_errors >= 3).await;
    // The driver is still alive and sends what it is given afterwards.
    handle
        .call(|s: &mut Echo, _| {
            s.out.push(Transmit {
                payload: Bytes::from(vec![4; 10]),
                ecn: None,
                destination: None,
            })
        })
        .await
        .unwrap();
    wait_for(|| handle.stats().datagrams_out >= 3).await;
    stop.send(()).unwrap();
    let done = task.await.unwrap().unwrap();
    assert_eq!(done.stats.send_errors, 1);
    assert_eq!(done.stats.datagrams_out, 3);
    assert_eq!(done.stats.ecn_out_socket_default, 2);
    let mut batch = rx.recv_batch_buffer(8);
    let mut lens = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(2);
    while lens.len() < 3 && Instant::now() < deadline {
        if rx.recv_batch(&mut batch).is_ok() {
            lens.extend(batch.datagrams().map(|d| d.payload.len()));
        }
    }
    assert_eq!(lens, vec![100, 100, 10]);
}

#[tokio::test(flavor = "current_thread")]
async fn an_idle_driver_sleeps_instead_of_spinning() {
    let rx = socket("127.0.0.1:0");
    let polls = Arc::new(AtomicU64::new(0));
    let session = Echo {
        polls: Arc::clone(&polls),
        ..Echo::default()
    };
    let (driver, _handle) = Driver::new(
        rx,
        session,
        DriverConfig::new("127.0.0.1:9".parse().unwrap()),
    )
    .unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(driver.run(stop_tx_wait(stopped)));
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.send(()).unwrap();
    let done = task.await.unwrap().unwrap();
    assert!(
        polls.load(Ordering::Relaxed) <= 3,
        "{} loop turns while idle",
        polls.load(Ordering::Relaxed)
    );
    assert_eq!(done.stats.timer_wakeups, 0);
}

#[test]
fn a_peer_of_the_other_family_is_refused() {
    let rx = socket("127.0.0.1:0");
    let peer: SocketAddr = "[::1]:5000".parse().unwrap();
    assert!(matches!(
        Driver::new(rx, Echo::default(), DriverConfig::new(peer)),
        Err(cg_net::Error::AddressFamily { .. })
    ));
}

/// A session whose deadline is always in the past (a pacer that is forever behind).
struct AlwaysDue {
    past: Instant,
    timeouts: u64,
    got: u64,
}

impl Session for AlwaysDue {
    type Event = ();
    fn handle_datagram(&mut self, _: &Datagram<'_>, _: Instant) {
        self.got += 1;
    }
    fn handle_timeout(&mut self, _: Instant) {
        self.timeouts += 1;
    }
    fn poll_transmit(&mut self, _: Instant) -> Option<Transmit> {
        None
    }
    fn poll_timeout(&mut self) -> Option<Instant> {
        Some(self.past)
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_session_forever_due_does_not_starve_the_socket_or_shutdown() {
    let rx = socket("127.0.0.1:0");
    let mut peer = socket("127.0.0.1:0");
    let rx_addr = rx.local_addr();
    let session = AlwaysDue {
        past: Instant::now(),
        timeouts: 0,
        got: 0,
    };
    let (driver, handle) = Driver::new(rx, session, DriverConfig::new(peer.local_addr())).unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(driver.run(stop_tx_wait(stopped)));
    for i in 0..20u8 {
        peer.send(
            rx_addr,
            &Transmit {
                payload: Bytes::from(vec![i; 50]),
                ecn: None,
                destination: None,
            },
        )
        .unwrap();
    }
    wait_for(|| handle.stats().datagrams_in >= 20).await;
    stop.send(()).unwrap();
    let done = tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("shutdown is honoured while the session is always due")
        .unwrap()
        .unwrap();
    assert_eq!(done.session.got, 20, "datagrams still reach the session");
    assert!(done.session.timeouts > 0);
}

/// Wants a wake-up every 10 µs for `until`.
struct Eager {
    next: Option<Instant>,
    until: Instant,
    timeouts: u64,
}

impl Session for Eager {
    type Event = ();
    fn handle_datagram(&mut self, _: &Datagram<'_>, _: Instant) {}
    fn handle_timeout(&mut self, now: Instant) {
        self.timeouts += 1;
        self.next = Some(now + Duration::from_micros(10)).filter(|&n| n < self.until);
    }
    fn poll_transmit(&mut self, _: Instant) -> Option<Transmit> {
        None
    }
    fn poll_timeout(&mut self) -> Option<Instant> {
        self.next
    }
}

#[tokio::test(flavor = "current_thread")]
async fn wake_ups_are_spaced_by_the_minimum_interval() {
    let rx = socket("127.0.0.1:0");
    let now = Instant::now();
    let session = Eager {
        next: Some(now),
        until: now + Duration::from_millis(100),
        timeouts: 0,
    };
    let config = DriverConfig {
        min_wake_interval: Duration::from_millis(2),
        ..DriverConfig::new("127.0.0.1:9".parse().unwrap())
    };
    let (driver, _handle) = Driver::new(rx, session, config).unwrap();
    let done = driver
        .run(tokio::time::sleep(Duration::from_millis(200)))
        .await
        .unwrap();
    // 100 ms of 10 µs deadlines, at most one wake-up per 2 ms: ≤ 51 (instead of 10 000).
    assert!(done.session.timeouts >= 2);
    assert!(
        done.session.timeouts <= 51,
        "{} wake-ups",
        done.session.timeouts
    );
    assert!(
        done.stats.lateness.max() >= Duration::from_millis(1),
        "deferred deadlines are late"
    );
}
