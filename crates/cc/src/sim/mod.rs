//! Simulated-time test support for controllers: a synthetic encoder, sender and receiver
//! endpoints for [`cg_link::sim::Sim`], a competing TCP bulk flow, and metrics.
//!
//! Everything here is deterministic (seeded [`cg_types::Rng`], simulated `Instant`s) and
//! sans-IO, so a 200 s scenario runs in well under a second of CPU in release builds.
//!
//! # Pieces
//!
//! - [`SyntheticEncoder`] ([`encoder`]): RFC 8593 §5's statistical video source — 30 fps,
//!   Laplacian frame-size and frame-interval noise, reaction latency `tau_v`, rate clipped to
//!   `[R_min, R_max]` (2 Mbit/s by default, the papers' VP8), periodic key frames with the
//!   burst-then-compensate shape.
//! - [`SimSender`]: any `Box<dyn Controller>` with the encoder, a packetiser and a pacer,
//!   obeying the controller's events. [`SimReceiver`]: the feedback the controller asked for,
//!   a [`ReceiveSideEstimator`]'s REMBs, RR-like loss reports, on a clock of its own.
//! - [`tcp`]: TCP bulk flows (Reno, CUBIC, BBR v1) to compete with the controllers —
//!   [`TcpSender`] and [`TcpReceiver`], built by [`tcp_pair`] from a [`TcpConfig`].
//! - [`CbrSender`] / [`CbrSink`] ([`cbr_pair`], [`CbrConfig`]): a constant-bit-rate datagram
//!   flow without congestion control (netlab's `udp` flow), stepped rate, nothing sent back.
//! - [`AnySender`] / [`AnyReceiver`]: a media, TCP or CBR endpoint, so that all share one
//!   `Sim<AnySender, AnyReceiver>` (`sim.add_pair(tx.into(), rx.into())`;
//!   `sim.sender(i).tcp()` gives a TCP sender's counters back).
//! - [`metrics`]: throughput, utilisation, queuing-delay percentiles (bottleneck sojourn
//!   times), loss ratio, Jain's index, rate series — all from the link's per-packet events.
//!
//! # Example
//!
//! ```
//! use std::time::{Duration, Instant};
//! use cg_cc::{ControllerConfig, ReceiveSideEstimator};
//! use cg_cc::gcc::GccConfig;
//! use cg_cc::sim::{self, metrics, ReceiverConfig, SenderConfig};
//! use cg_link::sim::Sim;
//! use cg_link::{Link, LinkConfig};
//! use cg_types::Bitrate;
//!
//! let start = Instant::now();
//! let forward = Link::new(LinkConfig::constant(Bitrate::mbps(1))
//!     .with_delay(Duration::from_millis(25))).unwrap();
//! let reverse = Link::new(LinkConfig::constant(Bitrate::mbps(10))
//!     .with_delay(Duration::from_millis(25))).unwrap();
//! let mut s = Sim::new(forward, reverse, start);
//! let gcc = GccConfig::default(); // REMB mode
//! let estimator: Box<dyn ReceiveSideEstimator> = Box::new(gcc.build_receiver(start).unwrap());
//! let (tx, rx) = sim::pair(SenderConfig::default(), ReceiverConfig::default(),
//!                          gcc.build(start).unwrap(), Some(estimator), start);
//! s.add_pair(tx, rx);
//! s.run_until(start + Duration::from_secs(5));
//! let ev = s.forward().events();
//! assert!(metrics::throughput(ev.iter(), None, start, s.now()) > Bitrate::kbps(100));
//! ```

mod any;
mod cbr;
/// RFC 8593's video model, shared with cg-media's model encoder.
pub use cg_video_model as encoder;
pub mod metrics;
mod packet;
mod receiver;
mod sender;
pub mod tcp;

use std::time::Instant;

pub use any::{AnyReceiver, AnySender};
pub use cbr::{CbrConfig, CbrSender, CbrSink, cbr_pair};
pub use encoder::{EncoderConfig, Frame, SyntheticEncoder};
pub use packet::{Datagram, FeedbackMessage, MediaPacket, SimPacket, TcpAck, TcpSegment};
pub use receiver::{ReceiverConfig, SimReceiver};
pub use sender::{SenderConfig, SenderSample, SimSender};
pub use tcp::{
    CongestionCause, CwndReduction, TcpCc, TcpConfig, TcpReceiver, TcpSample, TcpSender, tcp_pair,
};

use crate::controller::{Controller, ReceiveSideEstimator};

/// A sender for `controller` and a receiver answering with the feedback it asks for
/// (`receiver.feedback` is overridden by `controller.feedback_kind()`).
pub fn pair(
    sender: SenderConfig,
    mut receiver: ReceiverConfig,
    controller: Box<dyn Controller>,
    estimator: Option<Box<dyn ReceiveSideEstimator>>,
    now: Instant,
) -> (SimSender, SimReceiver) {
    receiver.feedback = controller.feedback_kind();
    (
        SimSender::new(sender, controller, now),
        SimReceiver::new(receiver, estimator, now),
    )
}

/// `t − base` in signed microseconds.
fn signed_micros(t: Instant, base: Instant) -> i64 {
    match t.checked_duration_since(base) {
        Some(d) => i64::try_from(d.as_micros()).unwrap_or(i64::MAX),
        None => -i64::try_from(base.saturating_duration_since(t).as_micros()).unwrap_or(i64::MAX),
    }
}
