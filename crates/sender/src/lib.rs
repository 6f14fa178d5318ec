//! `cg-sender`: a real-time video sender — a GStreamer encoder (cg-media) feeding a sans-IO
//! RTP session (cg-rtp) on a tokio UDP driver (cg-net), steered by a congestion controller
//! (cg-cc: GCC with REMB, GCC send-side, SCReAM v2). The `cg-send` binary is a thin CLI over
//! this library; `cg-receiver` is the other end.
//!
//! # Use
//!
//! A session is built from one [`SenderConfig`] (serde + `Default`: controller, ECN mode,
//! source, codec, resolution, frame rate, start/min/max bit rate, peer address), then run on
//! tokio with a stream of [`Stats`] and a shutdown future:
//!
//! ```no_run
//! # async fn f() -> Result<(), cg_sender::Error> {
//! use cg_sender::{ControllerKind, Ecn, Sender, SenderConfig};
//!
//! let mut sender = Sender::new(SenderConfig {
//!     peer: "127.0.0.1:5004".parse().unwrap(),
//!     controller: ControllerKind::Scream,
//!     ecn: Ecn::Ect1, // L4S
//!     ..SenderConfig::default()
//! })?;
//! let mut stats = sender.stats(16);
//! tokio::spawn(async move {
//!     while let Some(s) = stats.recv().await {
//!         println!("{}", s.status_line());
//!     }
//! });
//! sender.run(tokio::time::sleep(std::time::Duration::from_secs(10))).await?;
//! # Ok(()) }
//! ```
//!
//! # Embedding a sender and a receiver
//!
//! Each side is built from one config (serde + `Default`) and runs on tokio with a stream of
//! statistics and a shutdown future. Two seconds of 320×180 VP8 over loopback (this example
//! runs as a doc test):
//!
//! ```
//! use std::time::Duration;
//! use cg_receiver::{Receiver, ReceiverConfig};
//! use cg_sender::{ControllerKind, Sender, SenderConfig};
//!
//! # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
//! # async fn main() -> Result<(), cg_sender::Error> {
//! let mut receiver = Receiver::new(ReceiverConfig {
//!     listen: "127.0.0.1:0".parse().unwrap(),
//!     controller: ControllerKind::Gcc,
//!     ..ReceiverConfig::default()
//! })?;
//! let sender = Sender::new(SenderConfig {
//!     peer: receiver.local_addr(),
//!     controller: ControllerKind::Gcc,
//!     width: 320,
//!     height: 180,
//!     ..SenderConfig::default()
//! })?;
//! let mut stats = receiver.stats(64);
//! let rx = tokio::spawn(receiver.run(tokio::time::sleep(Duration::from_secs(3))));
//! sender.run(tokio::time::sleep(Duration::from_secs(2))).await?;
//! let last = rx.await.unwrap()?;
//! assert!(last.frames_decoded > 20, "{last:?}");
//! while let Ok(s) = stats.try_recv() {
//!     println!("{}", s.status_line());
//! }
//! # Ok(()) }
//! ```
//!
//! # What the glue does
//!
//! - Encoder frames (a std channel filled by GStreamer's streaming thread, moved into tokio by
//!   one small thread) are pushed into the [`cg_rtp::SenderSession`] inside the cg-net driver;
//!   the capture time is the host's `CLOCK_MONOTONIC` reading, which the session turns into the
//!   RTP timestamp and the abs-capture-time extension (NTP from the system clock at start, so a
//!   receiver on the same host computes glass-to-glass latency).
//! - The session raises `SenderEvent::TargetBitrate` when the controller's target moved (by at
//!   least [`SenderConfig::rate_change_threshold`], default 0: every change; cg-cc's
//!   `EncoderTarget`, the policy the simulations run too); the driver hands it to the encoder's
//!   `set_target_bitrate`, which a frame picks up as it enters the encoder. While the RTP circuit
//!   breaker (RFC 8083 §4.1) is open the session drops frames and the encoder idles at the minimum
//!   rate. A WHEP sender gives its one encoder the lowest target of the viewers whose feedback
//!   arrives.
//! - Every `SenderEvent::KeyFrameRequested` — PLI/FIR from the receiver, frames dropped by the
//!   pacer's queue bound, SCReAM's `DiscardQueue`, breaker recovery — becomes
//!   `Encoder::request_key_frame`, at most one per [`SenderConfig::key_frame_min_interval`]
//!   (500 ms; later requests are held and served together): on a congested path every key
//!   frame is several delta frames' worth of bytes, and answering each request made the queue
//!   overflow again, a key-frame spiral down to the minimum rate. A WHEP
//!   viewer that connects gets a key frame at once, outside that interval: one forced before
//!   it connected never reaches it (viewers connecting together share one).
//! - The pacer's queue bound is 1 s for GCC ([`SenderConfig::pacer_max_queue_delay`]): with
//!   cg-rtp's 250 ms a key frame at a few hundred kbit/s was dropped in part, the receiver saw
//!   the sequence gaps as loss and GCC's loss controller cut the rate to its floor.
//! - Shutdown: the session queues an RTCP BYE (RFC 3550 §6.6), the driver flushes it, then the
//!   driver and the encoder stop.
//!
//! # Time
//!
//! This crate is a driver: it reads the clock (for the session's `now` through cg-net, and
//! for the statistics). The protocol logic below it stays sans-IO.

mod config;
mod session;
mod stats;
pub mod whep;

pub use cg_app::{Error, cli, kbps, ms, ntp_now, output, pct};
pub use cg_types::Ecn;
pub use config::{ControllerKind, SenderConfig};
pub use session::Sender;
pub use stats::Stats;
pub use whep::{WhepConfig, WhepSender};
