//! cg-net: the real-time UDP side of cg — an ECN-capable socket layer and a tokio driver that
//! runs a sans-IO session (cg-rtp's sender or receiver) on it.
//!
//! # What is here
//!
//! - [`UdpSocket`] ([`socket`]): a thin libc layer over one non-blocking UDP socket, IPv4 or
//!   IPv6. Sends with an ECN code point per socket ([`SocketConfig::ecn`], `IP_TOS` /
//!   `IPV6_TCLASS`) or per datagram ([`Transmit::ecn`], the same option as a control message);
//!   reads every datagram back with its code point (`IP_RECVTOS` / `IPV6_RECVTCLASS`) and a
//!   kernel receive timestamp (`SO_TIMESTAMPNS`). Batched: one `sendmmsg` per batch, with runs
//!   of equal-size datagrams merged into UDP GSO (`UDP_SEGMENT`) messages and a permanent
//!   fallback to plain messages if the kernel refuses GSO; one `recvmmsg` per [`RecvBatch`].
//!   Kernel drops on the socket (`SO_RXQ_OVFL`) and truncation are counted.
//! - [`Session`]: the small trait the driver runs (`handle_datagram`, `handle_timeout`,
//!   `poll_transmit`, `poll_event`, `poll_timeout`), implemented for cg-rtp's sessions in
//!   `rtp.rs` and for the [`probe`] flow (a paced source and a bit-exact frame sink for tests
//!   and calibration).
//! - [`Driver`]: a tokio task owning socket, session and timer. It accepts datagrams only from
//!   a fixed [`DriverConfig::peer`] (others are counted in [`StatsSnapshot::foreign_datagrams`]
//!   and dropped) or, for a session that learns its peer ([`Peer::Learned`], WebRTC's ICE),
//!   from anyone, sending each datagram to the destination the session gives it, sleeps until the session's `poll_timeout` or the next datagram (no busy loop),
//!   drains `poll_transmit` into `sendmmsg` batches and `poll_event` into a bounded channel,
//!   counts everything in [`Stats`] (datagrams and bytes each way, ECN each way, foreign
//!   datagrams, send errors by errno, timer lateness), and stops when the `shutdown` future
//!   given to [`Driver::run`] completes. The application talks to the session through the
//!   [`DriverHandle`]: `call`/`query` run a closure on the session inside the driver (push a
//!   frame, read statistics), `next_event` takes its events.
//!
//! One turn of the driver's loop: handle the session's deadline if it is already due (timers
//! are never starved by a busy socket); drain `poll_transmit` into batches and send them;
//! forward events; arm the timer for `poll_timeout` (but no sooner than
//! [`DriverConfig::min_wake_interval`], 100 µs, after the last timer wake-up, so that a pacer
//! at Gb/s rates wakes the thread ~10 000 times a second, not 100 000); then wait, in priority order, for
//! shutdown, a readable socket (at most `recv_calls_per_wake` × `recv_batch` messages per turn,
//! then a `yield_now` so the reactor and other tasks run), a writable socket after `EAGAIN`,
//! an application command, or the timer. A due timer goes through the reactor too, so a
//! session that is always behind schedule cannot starve the socket or shutdown (tested).
//!
//! Send errors never stop the driver: `EAGAIN` waits for the socket to become writable (nothing
//! is lost), any other errno (`ENOBUFS` from a full qdisc, `ECONNREFUSED`, `EMSGSIZE`…) drops
//! the datagrams of the failed message and is counted by kind.
//!
//! # Time
//!
//! The sessions run on [`std::time::Instant`] (`CLOCK_MONOTONIC`); the driver reads it once per
//! wake-up and passes it as `now`. The kernel stamps each datagram with `CLOCK_REALTIME`
//! ([`Datagram::kernel_time`], kept as reported); the socket layer maps the stamp onto the
//! `Instant` timeline ([`Datagram::arrival`]) by reading both clocks together right after each
//! `recvmmsg` and subtracting the datagram's age, measured on the wall clock, from the monotonic
//! reading. The age is exact to the ~100 ns between the two clock reads unless the wall clock is
//! stepped while the datagram waits (ages are clamped to 0..10 s). So `arrival` excludes the
//! time a datagram sat in the socket buffer while the task was descheduled — what a delay-based
//! controller needs — and may be earlier than the `now` of the previous session call.
//!
//! Timers: the driver sleeps on a `timerfd` ([`TimerKind::Precise`], default), not on
//! `tokio::time::sleep_until`, whose 1 ms wheel rounds each deadline up and so would add up to
//! 1 ms of pacing error (the target is p99 ≤ 0.5 ms at 50 Mb/s, one datagram per 192 µs);
//! [`TimerKind::Tokio`] remains selectable. The lateness of every wake-up against the deadline
//! is in [`StatsSnapshot::lateness`].
//!
//! # ECN and GRO
//!
//! RFC 3168 §5 puts ECN in the two low bits of the IPv4 TOS / IPv6 traffic class; cg's sessions
//! send ECT(1) for L4S (RFC 9331 §4) or ECT(0) and need every arriving code point for RFC 8888
//! feedback. Receive-side coalescing is where ECN gets lost in practice: UDP GRO hands several
//! datagrams to user space as one buffer with a `UDP_GRO` control message giving the segment
//! size, and quinn-udp 0.6.3's 96-byte control buffer is too small for timestamp + TOS + GRO +
//! overflow messages, so the TOS message is truncated and ECN reads as unknown.
//!
//! **Decision: GRO stays on, with 256 bytes of control space per message.** The control messages
//! this socket enables (`UDP_GRO`, `SCM_TIMESTAMPNS`, `SO_RXQ_OVFL` after a drop, and the TOS last)
//! need up to 104 bytes, 112 with `IP_PKTINFO` as quinn-udp has it; 256 leaves headroom. A unit
//! test reproduces the defect with a 96-byte buffer (ECN comes back `None`). `MSG_CTRUNC` is
//! checked on every message and counted ([`RecvStats::control_truncated`]) rather than silently
//! reading as Not-ECT, and a missing TOS message is reported as `ecn: None`, never guessed. GRO
//! only merges packets whose IP headers agree (TOS included), so the buffer's one TOS is right for
//! every segment; [`RecvBatch::datagrams`] splits buffers back into the datagrams sent. Keeping GRO
//! is worth it: on loopback a GRO socket drained 100 000 GSO-sent 1200-byte datagrams ~5× faster
//! than one without (measured 2026-11-21 with `tests/ecn_under_gro.rs`, which checks all 100 000
//! come back ECT(1), with and without GRO, IPv4 and IPv6). [`SocketConfig::gro`] turns it off.
//!
//! # Speed
//!
//! Measured 2026-11-21 on the project's machine (2 vCPUs shared with other builds, load average
//! 9–14 while measuring), release build, 1200-byte datagrams over loopback, with the commands
//! below:
//!
//! | what | figure | how |
//! |---|---|---|
//! | send, `sendmsg` per datagram | 1.7 Gb/s per core | `benches/socket.rs`, thread CPU time |
//! | send, `sendmmsg` ×64 | 2.1 Gb/s per core | 〃 |
//! | send, `sendmmsg` + GSO | 31 Gb/s per core | 〃 |
//! | cg-rtp packetize + pace + cg-net send (GSO) | 6.4 Gb/s per core | 〃 (pacer on a simulated clock) |
//! | receive, GRO on / off | 8.0 M / 0.78 M datagrams/s per core | 〃 (prefilled socket) |
//! | whole process: RTP sender driver, pacing 4 Gb/s | 3.3–3.5 Gb/s wall on one thread | `examples/speed.rs send` (`chrt -f 50`) |
//! | whole process: RTP receiver driver at 1.25 Gb/s | 123 k packets/s, 0 kernel drops, all ECT(1) | `examples/speed.rs recv` |
//! | timer lateness, cg-rtp sender at 50 Mb/s | p50 40 µs, p99 150 µs | `examples/speed.rs pacing` under `chrt -f 50` |
//! | pacing error per datagram, probe at 50 Mb/s | p50 50 µs, p99 240 µs (tokio timer: p99 1.9 ms) | 〃 |
//!
//! Without real-time priority on that loaded machine the scheduler dominates: timer lateness
//! p99 0.4–1.3 ms, per-datagram pacing error p99 ≈ 3 ms. Commands:
//! `cargo bench -p cg-net --bench socket -- --warm-up-time 1 --measurement-time 3` and
//! `chrt -f 50 target/release/examples/speed send|recv|pacing [seconds] [Mb/s]` after
//! `cargo build --release -p cg-net --example speed`.

mod clock;
mod driver;
mod error;
pub mod probe;
mod rtp;
mod session;
pub mod socket;
mod stats;
mod sys;
mod timer;

pub use driver::{Driver, DriverConfig, DriverHandle, Finished, Peer};
pub use error::Error;
pub use session::Session;
pub use socket::{Datagram, RecvBatch, RecvStats, SendFailure, SocketConfig, Transmit, UdpSocket};
pub use stats::{LatencyHistogram, Stats, StatsSnapshot};
pub use timer::TimerKind;
