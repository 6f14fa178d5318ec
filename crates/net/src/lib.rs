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
//!   [`DriverConfig::peer`] (others are counted in [`StatsSnapshot::foreign_datagrams`] and
//!   dropped), sleeps until the session's `poll_timeout` or the next datagram (no busy loop),
//!   drains `poll_transmit` into `sendmmsg` batches and `poll_event` into a bounded channel,
//!   counts everything in [`Stats`] (datagrams and bytes each way, ECN each way, foreign
//!   datagrams, send errors by errno, timer lateness), and stops when the `shutdown` future
//!   given to [`Driver::run`] completes. The application talks to the session through the
//!   [`DriverHandle`]: `call`/`query` run a closure on the session inside the driver (push a
//!   frame, read statistics), `next_event` takes its events.
//!
//! One turn of the driver's loop: handle the session's deadline if it is already due (timers
//! are never starved by a busy socket); drain `poll_transmit` into batches and send them;
//! forward events; arm the timer for `poll_timeout`; then wait, in priority order, for
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
//! **Decision: GRO stays on, with 256 bytes of control space per message.** The control
//! messages this socket enables (`UDP_GRO`, `SCM_TIMESTAMPNS`, `SO_RXQ_OVFL` after a drop, and
//! the TOS last) need up to 104 bytes, 112 with `IP_PKTINFO` as quinn-udp has it; 256 leaves
//! headroom. A unit test reproduces the defect with a 96-byte buffer (ECN comes back `None`). `MSG_CTRUNC` is checked on
//! every message and counted ([`RecvStats::control_truncated`]) rather than silently reading
//! as Not-ECT, and a missing TOS message is reported as `ecn: None`, never guessed. GRO only
//! merges packets whose IP headers agree (TOS included), so the buffer's one TOS is right for
//! every segment; [`RecvBatch::datagrams`] splits buffers back into the datagrams sent. Keeping
//! GRO is worth it: on loopback a GRO socket drained 100 000 GSO-sent 1200-byte datagrams
//! ~5× faster than one without (`tests/ecn_under_gro.rs`, which checks all 100 000 come back
//! ECT(1), with and without GRO, IPv4 and IPv6). [`SocketConfig::gro`] turns it off.
//!
//! # Speed
//!
//! Measured figures and the commands that produce them are in `benches/socket.rs` (criterion)
//! and `examples/pacing.rs`; see the crate README section in the report of issue #6.

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

pub use driver::{Driver, DriverConfig, DriverHandle, Finished};
pub use error::Error;
pub use session::Session;
pub use socket::{Datagram, RecvBatch, RecvStats, SendFailure, SocketConfig, Transmit, UdpSocket};
pub use stats::{LatencyHistogram, Stats, StatsSnapshot};
pub use timer::TimerKind;
