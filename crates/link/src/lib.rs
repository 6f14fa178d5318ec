//! A sans-IO model of a bottleneck link, with every queue discipline of the papers, and a
//! simulated-time harness built on it.
//!
//! # What it is
//!
//! A [`Link`] is the path a packet takes through a bottleneck:
//!
//! ```text
//! handle_packet ─▶ random loss ─▶ qdisc ─▶ serialisation at the capacity ─▶ propagation ─▶ poll_delivery
//!                  (Bernoulli,     (DropTail, CoDel,  (constant, schedule,  (delay, jitter,
//!                   Gilbert-        PIE, SFQ, FQ-CoDel, Mahimahi trace)      reordering,
//!                   Elliott)        DualPI2, HTB)                            duplication)
//! ```
//!
//! Every step reports per-packet [`LinkEvent`]s — enqueued, dequeued with its sojourn time,
//! dropped with its [`DropReason`], CE-marked with its [`MarkReason`], duplicated, delivered
//! with its latency — kept in a bounded [`EventLog`] and summed per flow in [`LinkStats`]: the
//! raw material for per-flow queuing delay, loss and throughput.
//!
//! # How it is driven
//!
//! Sans-IO, like quinn-proto's `Connection`: the driver calls [`Link::handle_packet`] for each
//! arriving packet, drains [`Link::poll_delivery`], and calls [`Link::handle_timeout`] at
//! [`Link::poll_timeout`] — the next serialisation end, dequeue, qdisc timer (PIE's and
//! DualPI2's `tupdate`, HTB's token refill) or delivery. The same object runs
//!
//! - in **simulated time**: the [`sim`] harness joins sans-IO [`sim::Endpoint`]s (controllers,
//!   RTP sessions) through a forward and a reverse link and jumps from event to event;
//! - in **real time**: netlab's TUN forwarder passes wall-clock `Instant`s and sleeps until
//!   `poll_timeout`. Work due between two calls is done at its exact instant (a dequeue
//!   happens when the previous packet's last bit left, not when the driver woke), so a late
//!   wake-up costs no accuracy.
//!
//! Queue disciplines sit behind one trait, [`Qdisc`] (`enqueue(packet, now)`,
//! `dequeue(now)`, `peek`, `len`, `bytes`, timers), and are built from serde-deserialisable
//! configs ([`QdiscConfig`], `kind = "codel"` etc. in netlab's TOML) whose `Default` is
//! Linux's and whose fields document their default and source. The kernel-`tc` backend maps
//! the same configs onto `tc`. Invalid configurations (zero rates, NaN probabilities, empty
//! traces, zero limits, HTB rules naming no class) are [`Error`]s at construction.
//!
//! Outages: a capacity schedule step of rate zero takes the link down for its duration
//! (nothing is serialised; arrivals queue and the qdisc drops at its limit; the head of the
//! queue leaves when the link returns; see [`CapacityConfig::Schedule`]). A Mahimahi trace
//! with no opportunities for a while behaves the same way.
//!
//! # Time model
//!
//! No clock is ever read: every input carries `now: Instant`, and `now` never goes backwards
//! (an earlier one is taken as the latest seen). Capacity is a service curve: a packet's
//! serialisation end is computed from its size by integrating a rate schedule or walking a
//! Mahimahi trace's delivery opportunities, so nothing ticks per millisecond. A link's
//! schedule or trace starts at its first `now` (or [`Link::start`]). Random decisions
//! (loss, jitter, reordering, duplication, AQM drops, hash keys) come from [`cg_types::Rng`]
//! streams forked from [`LinkConfig::seed`]: the same seed and inputs give the same event log.
//!
//! # Queue disciplines
//!
//! | qdisc | module | specification | defaults from | paper presets ([`presets`]) |
//! |---|---|---|---|---|
//! | DropTail (packets, bytes, time) | [`qdisc::droptail`] | Linux `pfifo`/`bfifo` | Linux (1000 packets) | CCR16 DT/300; TMA24 250 packets |
//! | CoDel | [`qdisc::codel`] | RFC 8289 §5 (Linux re-entry, ECN) | RFC 8289 / Linux | CCR16 (13 ms at 1 Mb/s) |
//! | PIE | [`qdisc::pie`] | RFC 8033 §4–5 (Linux timestamp mode) | Linux (15 ms / 15 ms) | CCR16 (20 ms / 30 ms) |
//! | SFQ | [`qdisc::sfq`] | Linux `sch_sfq` | Linux (127 packets, 128 flows) | CCR16 (300 ms); TMA24 63 packets in HTB |
//! | FQ-CoDel | [`qdisc::fq_codel`] | RFC 8290 §4 | RFC 8290 / Linux | CCR16 (13 ms, 10240 packets) |
//! | DualPI2 | [`qdisc::dualpi2`] | RFC 9332 (Linux WRR scheduler) | RFC 9332 §A.1 / Linux | TMA24 (limit 1000) |
//! | HTB | [`qdisc::htb`] | Linux `sch_htb`, `tc-htb(8)` | tc-htb | TMA24 two-class setup |
//!
//! ECN: CoDel, PIE, FQ-CoDel and DualPI2 mark ECT packets CE where their specification says
//! to instead of dropping them (DualPI2 always marks its L queue).
//!
//! # Speed
//!
//! Enqueue + dequeue in steady state allocates nothing (`tests/alloc_free.rs` counts). The
//! criterion benchmarks (`benches/qdisc.rs`, `cargo bench -p cg-link -- --warm-up-time 1
//! --measurement-time 3`), two runs on 2026-11-21 on the shared 2-core build machine under a
//! load average of 12–13 (so these are floors), in packets enqueued + dequeued per second: DropTail
//! 8.9–16.5 M, CoDel 4.5–6.1 M, PIE 7.4–8.0 M, SFQ 3.8–4.8 M, FQ-CoDel 3.0–3.4 M, DualPI2
//! 5.9–6.2 M, HTB (TMA24 preset) 2.0 M; a whole link (qdisc, serialisation, delay line, events
//! and per-flow counters) 0.49–0.75 M. 1 Gb/s of 1500-byte packets is 83 k packets/s.
//!
//! # Example
//!
//! ```
//! use std::time::{Duration, Instant};
//! use cg_link::{Link, LinkConfig, Packet, PacketId, FlowId, presets};
//! use cg_types::{Bitrate, DataSize};
//!
//! let cfg = LinkConfig::constant(Bitrate::mbps(1))
//!     .with_delay(Duration::from_millis(25))
//!     .with_qdisc(presets::ccr16_dt300());
//! let mut link: Link<&str> = Link::new(cfg)?;
//! let t0 = Instant::now();
//! let p = Packet::new(PacketId(1), FlowId::from_index(0), DataSize::bytes(1250), t0, "hello");
//! link.handle_packet(p, t0);
//! // 10 ms of serialisation at 1 Mb/s, then 25 ms of propagation.
//! let mut now = t0;
//! while let Some(t) = link.poll_timeout() {
//!     now = t;
//!     link.handle_timeout(now);
//!     if let Some(p) = link.poll_delivery(now) {
//!         assert_eq!(p.payload, "hello");
//!     }
//! }
//! assert_eq!(now - t0, Duration::from_millis(35));
//! assert_eq!(link.stats().total().delivered, 1);
//! # Ok::<(), cg_link::Error>(())
//! ```

pub mod capacity;
pub mod delay;
pub mod error;
pub mod event;
pub mod link;
pub mod loss;
pub mod packet;
pub mod presets;
pub mod qdisc;
pub mod sim;
pub mod stats;

pub use capacity::{CapacityConfig, MahimahiTrace, RateStep};
pub use delay::DelayConfig;
pub use error::Error;
pub use event::{DropReason, EventKind, EventLog, EventSink, LinkEvent, MarkReason, NullSink};
pub use link::{Link, LinkConfig};
pub use loss::LossConfig;
pub use packet::{Dscp, FlowId, Packet, PacketId, Protocol};
pub use qdisc::{LinkInfo, Qdisc, QdiscConfig};
pub use stats::{FlowStats, LinkStats};
