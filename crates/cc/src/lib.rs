//! Congestion controllers for real-time media.
//!
//! Every controller here is a sans-IO state machine: no sockets, no clock,
//! no threads. The transport (`cg-rtp`) drives it:
//!
//! - it reports every packet it puts on the wire ([`Controller::on_packet_sent`]) and every
//!   feedback report it parses ([`Controller::on_feedback`]), passing `now` explicitly;
//! - it calls [`Controller::handle_timeout`] when [`Controller::poll_timeout`] says so (a
//!   spurious call is harmless);
//! - it reads the answers: [`Controller::target_bitrate`] for the encoder,
//!   [`Controller::pacing_rate`] for the pacer, [`Controller::send_allowance`] for
//!   window-based controllers, and drains [`Controller::poll_event`].
//!
//! Controllers that run at the receiver (GCC's REMB mode) implement
//! [`ReceiveSideEstimator`] instead; the receiver session feeds it and sends what it answers.
//!
//! [`gcc`]: Google Congestion Control as MMSys16 / PV 2013 describe it — receiver-side (REMB,
//! [`gcc::GccReceiver`]) or send-side over transport-wide feedback, built from
//! [`gcc::GccConfig`]; the transport should also report frame ends
//! ([`Controller::on_frame_sent`]). `webrtc_adapter` (feature `webrtc`) runs any controller
//! as webrtc-rs 0.21's `BandwidthEstimator`.
//!
//! `sim` (feature `sim`, on by default; the programs build without it): simulated-time test
//! support over `cg_link::sim` — RFC 8593 encoder model, sender/receiver endpoints for any
//! controller, competing TCP bulk flows (Reno, CUBIC, BBR), metrics.
//!
//! [`scream`]: SCReAM v2 with L4S — window-based, RFC 8888 feedback, send gate through
//! [`Controller::send_allowance`], RTP-queue discard through [`ControllerEvent::DiscardQueue`];
//! built from [`scream::ScreamConfig`] (reference or draft constants).
//!
//! Configs build controllers through [`ControllerConfig::build`], which refuses a value the
//! algorithm cannot run with ([`ConfigError`] names the field) instead of clamping it.
//! [`FixedRate`] holds one rate, for measuring a transport without control in the way.
//!
//! Time model: `now: Instant` is the local clock of whichever side runs the code. Arrival times
//! carried back in feedback are readings of the *peer's* clock and arrive as
//! [`cg_types::RemoteTime`]; only their differences (or delays compared with a base delay) mean
//! anything.

mod base_delay;
mod controller;
mod cubic;
mod encoder_target;
mod fixed;
pub mod gcc;
mod kind;
pub mod scream;
#[cfg(feature = "sim")]
pub mod sim;
#[cfg(feature = "webrtc")]
pub mod webrtc_adapter;

pub use controller::{
    ConfigError, Controller, ControllerConfig, ControllerEvent, ControllerStats, Feedback,
    FeedbackKind, LossReport, MediaQueue, PacketKind, PacketResult, ReceiveSideEstimator,
    ReceivedPacket, SentPacket,
};
pub use encoder_target::{EncoderTarget, EncoderTargetConfig};
pub use fixed::FixedRate;
pub use kind::{ControllerKind, UnknownController};
