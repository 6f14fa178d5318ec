//! Whole-process speed figures for issue #6 (cg-net's part), over loopback:
//!
//! - `send`: cg-rtp packetize + pace + cg-net send of 1200-byte RTP packets on one thread
//!   (one current-thread tokio runtime), as fast as the pacer allows at a 4 Gb/s pacing rate
//!   (third argument, in Mb/s),
//!   with a ReceiverSession on another driver thread taking everything (RFC 8888 feedback
//!   flowing back). Prints the sender's rate in Mb/s, per wall second and per second of its
//!   thread's CPU time (what one core would do on an idle machine), and the receiver's
//!   packets/s likewise.
//! - `recv`: the same at a pacing rate the receiver can follow (default 1250 Mb/s, ≈ 125 k
//!   packets/s; third argument, in Mb/s), to show it takes every packet with no kernel drops.
//! - `pacing`: a paced 50 Mb/s flow of 1200-byte datagrams for 10 s through the driver,
//!   with the timerfd timer and with tokio's timer, first with cg-net's probe source (every
//!   datagram has its own slot: its lateness is the pacing error), then with cg-rtp's sender
//!   (the driver's timer lateness against the pacer's `poll_timeout`). Prints p50/p99/p99.9/max.
//!
//! `cargo run --release -p cg-net --example speed -- send|recv|pacing|all [seconds] [Mb/s]`
//! (prefix `chrt -f 50` on a loaded machine: real-time priority keeps other processes from
//! delaying the driver's threads, which is what the timer figures are about).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use cg_cc::{FeedbackKind, FixedRate};
use cg_net::probe::{PacedSource, ProbeConfig};
use cg_net::{
    Datagram, Driver, DriverConfig, Session, SocketConfig, StatsSnapshot, TimerKind, Transmit,
    UdpSocket,
};
use cg_rtp::{
    Codec, EncodedFrame, FeedbackConfig, ReceiverConfig, ReceiverSession, SenderConfig,
    SenderEvent, SenderSession,
};
use cg_types::{Bitrate, DataSize, Ecn};

/// A SenderSession fed by a synthetic encoder that keeps `backlog` bytes queued.
struct Fed {
    sender: SenderSession,
    frame: Bytes,
    backlog: DataSize,
    frames: u64,
}

impl Fed {
    fn new(rate: Bitrate, frame_len: usize, backlog: DataSize, now: Instant) -> Self {
        let config = SenderConfig {
            ecn: Ecn::Ect1,
            ..SenderConfig::default()
        };
        let sender = SenderSession::new(config, Box::new(FixedRate::new(rate)), now)
            .expect("default config is valid");
        // VP8 P bit set: delta frames after the first (RFC 7741 §4.3).
        let frame = Bytes::from((0..frame_len).map(|i| (i as u8) | 1).collect::<Vec<u8>>());
        Fed {
            sender,
            frame,
            backlog,
            frames: 0,
        }
    }

    /// Tops the queue up to `backlog`; stops early if the session stops taking frames (queue
    /// bound, circuit breaker).
    fn feed(&mut self, now: Instant) {
        for _ in 0..16 {
            let before = self.sender.media_queue(now).size;
            if before >= self.backlog {
                return;
            }
            let mut data = self.frame.clone();
            if self.frames == 0 {
                let mut key = data.to_vec();
                key[0] &= !1;
                data = Bytes::from(key);
            }
            let frame = EncodedFrame {
                encoded: None,
                data,
                capture_time: now,
                key_frame: self.frames == 0,
                codec: Codec::Vp8,
            };
            if self.sender.push_frame(frame, now).is_err()
                || self.sender.media_queue(now).size <= before
            {
                return;
            }
            self.frames += 1;
        }
    }
}

impl Session for Fed {
    type Event = SenderEvent;
    fn handle_datagram(&mut self, d: &Datagram<'_>, now: Instant) {
        Session::handle_datagram(&mut self.sender, d, now);
    }
    fn handle_timeout(&mut self, now: Instant) {
        SenderSession::handle_timeout(&mut self.sender, now);
        self.feed(now);
    }
    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        self.feed(now);
        Session::poll_transmit(&mut self.sender, now)
    }
    fn poll_event(&mut self) -> Option<SenderEvent> {
        SenderSession::poll_event(&mut self.sender)
    }
    fn poll_timeout(&mut self) -> Option<Instant> {
        SenderSession::poll_timeout(&self.sender)
    }
}

/// CPU time of the calling thread.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write; the clock id is a constant Linux supports.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(
        rc, 0,
        "CLOCK_THREAD_CPUTIME_ID is always available on Linux"
    );
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

struct Run<S> {
    stats: StatsSnapshot,
    session: S,
    wall: Duration,
    cpu: Duration,
}

/// Runs `make()`'s session on its own thread and current-thread runtime for `secs`.
fn run_driver<S: Session>(
    socket: UdpSocket,
    peer: SocketAddr,
    timer: TimerKind,
    secs: Duration,
    make: impl FnOnce(Instant) -> S + Send + 'static,
) -> std::thread::JoinHandle<Run<S>> {
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let config = DriverConfig {
                timer,
                ..DriverConfig::new(peer)
            };
            let (driver, _handle) =
                Driver::new(socket, make(Instant::now()), config).expect("driver");
            let (cpu0, wall0) = (thread_cpu(), Instant::now());
            let done = driver
                .run(tokio::time::sleep(secs))
                .await
                .expect("driver runs");
            Run {
                stats: done.stats,
                session: done.session,
                wall: wall0.elapsed(),
                cpu: thread_cpu() - cpu0,
            }
        })
    })
}

fn sockets() -> (UdpSocket, UdpSocket) {
    let config = SocketConfig {
        bind: "127.0.0.1:0".parse().expect("literal"),
        recv_buffer: Some(DataSize::kibibytes(16 * 1024)),
        ..SocketConfig::default()
    };
    (
        UdpSocket::bind(&config).expect("bind"),
        UdpSocket::bind(&config).expect("bind"),
    )
}

fn send(secs: Duration, rate: Bitrate) {
    let (tx, rx) = sockets();
    let (tx_addr, rx_addr) = (tx.local_addr(), rx.local_addr());
    let receiver = run_driver(
        rx,
        tx_addr,
        TimerKind::Precise,
        secs + Duration::from_millis(300),
        |now| {
            let config = ReceiverConfig {
                feedback: FeedbackConfig::for_kind(FeedbackKind::Rfc8888),
                max_buffered_packets: 65_536,
                ..ReceiverConfig::default()
            };
            ReceiverSession::new(config, None, now).expect("receiver")
        },
    );
    let sender = run_driver(tx, rx_addr, TimerKind::Precise, secs, move |now| {
        Fed::new(rate, 256 * 1024, DataSize::kibibytes(1024), now)
    });
    let s = sender.join().expect("sender thread");
    let r = receiver.join().expect("receiver thread");
    let st = s.session.sender.stats();
    let rt = r.session.stats();
    let bits = st.rtp_bytes as f64 * 8.0;
    println!(
        "send: {} RTP packets ({} frames of 256 KiB) in {:.2} s wall, {:.2} s sender-thread CPU",
        st.media_packets,
        st.frames_pushed,
        s.wall.as_secs_f64(),
        s.cpu.as_secs_f64()
    );
    println!(
        "send: packetize+pace+send {:.0} Mb/s per wall second, {:.0} Mb/s per CPU second; {} sendmmsg calls ({:.1} datagrams each), {} send errors, {} EAGAIN",
        bits / s.wall.as_secs_f64() / 1e6,
        bits / s.cpu.as_secs_f64() / 1e6,
        s.stats.send_calls,
        s.stats.datagrams_out as f64 / s.stats.send_calls.max(1) as f64,
        s.stats.send_errors,
        s.stats.send_would_block,
    );
    println!(
        "send: {} timer wake-ups, {} RTCP datagrams in",
        s.stats.timer_wakeups, s.stats.datagrams_in
    );
    let pkts = rt.media_packets as f64;
    println!(
        "recv: {} RTP packets, {} frames, {} ECT(1); {:.0} packets/s per wall second, {:.0} per CPU second ({:.2} s CPU); kernel drops {}, {} GRO buffers, {} recvmmsg calls",
        rt.media_packets,
        rt.frames,
        rt.ecn[usize::from(Ecn::Ect1.bits())],
        pkts / r.wall.as_secs_f64(),
        pkts / r.cpu.as_secs_f64(),
        r.cpu.as_secs_f64(),
        r.stats.kernel_drops,
        r.stats.gro_coalesced,
        r.stats.recv_calls,
    );
}

fn quantiles(h: &cg_net::LatencyHistogram) -> String {
    let q = |p| {
        h.quantile(p).map_or("-".into(), |d: Duration| {
            format!("{:.0} µs", d.as_secs_f64() * 1e6)
        })
    };
    format!(
        "n={} p50={} p99={} p99.9={} max={:.0} µs, >0.5 ms: {:.3} %",
        h.count(),
        q(0.5),
        q(0.99),
        q(0.999),
        h.max().as_secs_f64() * 1e6,
        100.0 * h.fraction_above(Duration::from_micros(500))
    )
}

/// Drains a socket in a thread so the sender's datagrams have somewhere to go.
fn sink(rx: UdpSocket, secs: Duration) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let mut b = rx.recv_batch_buffer(64);
        let mut n = 0;
        let end = Instant::now() + secs + Duration::from_millis(200);
        while Instant::now() < end {
            match rx.recv_batch(&mut b) {
                Ok(_) => n += b.datagrams().count() as u64,
                Err(_) => std::thread::sleep(Duration::from_millis(1)),
            }
        }
        n
    })
}

fn pacing(secs: Duration) {
    for timer in [TimerKind::Precise, TimerKind::Tokio] {
        let (tx, rx) = sockets();
        let rx_addr = rx.local_addr();
        let drained = sink(rx, secs);
        let config = ProbeConfig {
            rate: Bitrate::mbps(50),
            frames: None,
            ..ProbeConfig::default()
        };
        let run = run_driver(tx, rx_addr, timer, secs, move |_| PacedSource::new(config))
            .join()
            .expect("thread");
        let received = drained.join().expect("sink");
        println!(
            "pacing {timer:?}, probe 50 Mb/s: {} sent, {received} received",
            run.session.sent()
        );
        println!(
            "  pacing error (hand-out time − schedule): {}",
            quantiles(run.session.lateness())
        );
        println!(
            "  driver timer lateness:                   {}",
            quantiles(&run.stats.lateness)
        );
    }
    for timer in [TimerKind::Precise, TimerKind::Tokio] {
        let (tx, rx) = sockets();
        let rx_addr = rx.local_addr();
        let drained = sink(rx, secs);
        let run = run_driver(tx, rx_addr, timer, secs, |now| {
            Fed::new(Bitrate::mbps(50), 20_000, DataSize::kibibytes(40), now)
        })
        .join()
        .expect("thread");
        let received = drained.join().expect("sink");
        let st = run.session.sender.stats();
        println!(
            "pacing {timer:?}, cg-rtp sender 50 Mb/s: {} packets, {:.1} Mb/s, {received} received",
            st.media_packets,
            st.rtp_bytes as f64 * 8.0 / run.wall.as_secs_f64() / 1e6
        );
        println!(
            "  driver timer lateness vs the pacer's poll_timeout: {}",
            quantiles(&run.stats.lateness)
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let what = args.get(1).map_or("all", String::as_str);
    let secs = Duration::from_secs_f64(args.get(2).and_then(|s| s.parse().ok()).unwrap_or(5.0));
    let rate = |default| Bitrate::mbps(args.get(3).and_then(|s| s.parse().ok()).unwrap_or(default));
    match what {
        "send" => send(secs, rate(4000)),
        "recv" => send(secs, rate(1250)),
        "pacing" => pacing(secs),
        "all" => {
            send(secs, rate(4000));
            send(secs, rate(1250));
            pacing(secs);
        }
        other => eprintln!("unknown figure {other:?}: send | recv | pacing | all"),
    }
}
