//! `cg-receiver`: the receiving end of a cg video session — a tokio UDP driver (cg-net) feeding
//! a sans-IO RTP session (cg-rtp) whose frames go to a GStreamer decoder (cg-media), with the
//! feedback the sender's controller needs (REMB from a GCC receive-side estimator,
//! transport-wide CC, or RFC 8888 with ECN), NACKs and PLIs. The `cg-recv` binary is a thin
//! CLI over this library; `cg-sender` is the other end.
//!
//! # Use
//!
//! A receiver is built from one [`ReceiverConfig`] (serde + `Default`) and runs on tokio with
//! a stream of statistics and a shutdown future; `cg-sender`'s crate docs embed a sender and a
//! receiver together (a tested example). This crate does not depend on `cg-sender`: what the
//! two programs share lives in `cg-app` and `cg-cc` ([`ControllerKind`]).
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
//!   decoder measures glass-to-glass latency; freezes are counted both as gaps over 3
//!   nominal frame intervals and by WebRTC's rule, as a browser counts them
//!   ([`cg_media::FreezeDetector`]).
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
mod has_receiver;
mod peer;
mod session;
mod state;
mod stats;
mod webrtc;

pub use config::{ReceiverConfig, StreamCodec, parse_codec, parse_stream_codec};
pub use session::Receiver;
pub use stats::{FreezeRecord, G2gStages, Stats};

pub use cg_app::Error;
pub use cg_cc::ControllerKind;
