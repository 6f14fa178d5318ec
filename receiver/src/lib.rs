//! `cg-receiver`: the receiving end of a cg video session — a tokio UDP driver (cg-net) feeding
//! a sans-IO RTP session (cg-rtp) whose frames go to a GStreamer decoder (cg-media), with the
//! feedback the sender's controller needs (REMB from a GCC receive-side estimator,
//! transport-wide CC, or RFC 8888 with ECN), NACKs and PLIs. The `cg-recv` binary is a thin
//! CLI over this library; `cg-sender` is the other end.
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
//! - The listening socket waits for the first datagram; its source becomes the peer, the
//!   datagrams that named it open a fresh [`cg_rtp::ReceiverSession`], and a cg-net driver
//!   runs the session from then on (it drops datagrams from anyone else). When the sender has
//!   been silent for [`ReceiverConfig::peer_timeout`] and someone else is sending, the session
//!   ends and the next sender is accepted: a restarted `cg-send` gets through.
//! - Every reassembled frame goes to the decoder with the sender's capture time (mapped
//!   through both sides' NTP clocks, which on one host are the same system clock), so the
//!   decoder measures glass-to-glass latency; freezes are gaps over 3 frame intervals.
//! - The decoder's key-frame requests (after a loss or decode error) become PLIs
//!   (`ReceiverSession::request_key_frame`).
//! - WebRTC mode ([`ReceiverConfig::whep_url`], [`ReceiverConfig::whip_http`]): the same
//!   session runs behind a cg-webrtc peer (ICE, DTLS-SRTP) on a driver that learns its peer.
//!   As a WHEP client it offers to view a server's stream and deletes its session at the end;
//!   as a WHIP server it takes one publisher at a time (a second gets a 503 until the first
//!   leaves) and serves the publisher page at `/`.
//!
//! # Time
//!
//! A driver: it reads the clock for statistics; the protocol logic below stays sans-IO.

mod config;
mod session;
mod stats;

pub use config::{ReceiverConfig, parse_codec};
pub use session::Receiver;
pub use stats::{FreezeRecord, Stats};

pub use cg_sender::{ControllerKind, Error};
