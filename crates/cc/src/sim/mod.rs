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
//! - [`SimSender`]: wraps any `Box<dyn Controller>` with the encoder, a packetiser
//!   (≤ 1200-byte packets) and a pacer. The pacer releases packets at
//!   [`Controller::pacing_rate`]; if the controller returns
//!   [`send_allowance`](crate::Controller::send_allowance) `Some(bytes)`, a packet also waits
//!   until it fits (window-based controllers such as SCReAM). It reports every packet through
//!   `on_packet_sent` (and the last packet of each frame through `on_frame_sent`), the
//!   media queue through `on_media_queue`, passes feedback to `on_feedback` (with an RTT
//!   sample computed from the receiver's echo), and obeys
//!   [`ControllerEvent`](crate::ControllerEvent)s (`DiscardQueue` clears the queue and asks for
//!   a key frame; `RequestKeyFrame`; `Probe` sends padding packets of
//!   [`SenderConfig::padding_size`] at the probe's rate while no media waits, as cg-rtp's
//!   pacer does; the receiver reports them and feeds them, with their send times, to a REMB
//!   estimator as cg-rtp's receiver does). The encoder target is re-read
//!   at every frame. [`SimSender::samples`] keeps the controller's
//!   [`ControllerStats`](crate::ControllerStats) every 100 ms for plots and assertions.
//! - [`SimReceiver`]: answers with the feedback the controller asked for
//!   ([`ReceiverConfig::feedback`], normally `controller.feedback_kind()`):
//!   transport-wide-CC-like results every 50 ms (arrival times, no ECN), or
//!   RFC-8888-like results with the ECN seen every 40 ms or every 16 packets; runs a
//!   [`ReceiveSideEstimator`] and sends its REMBs when one is
//!   given (GCC's REMB mode); and sends RR-like loss reports every second. Arrival times
//!   are [`cg_types::RemoteTime`]s offset by 1000 s from the sender's clock, so controllers
//!   cannot rely on a shared clock.
//! - [`tcp`]: a TCP bulk flow to compete with the controllers — [`TcpSender`]
//!   (greedy, window-limited; slow start, then Reno AIMD or CUBIC per RFC 9438, unpaced, or
//!   BBR v1 as Linux's `tcp_bbr.c`, paced; losses found by the DupThresh-3 rule and not
//!   retransmitted; one reduction per window; RFC 6298 retransmission timeout; classic ECN
//!   with [`TcpConfig::ecn`] `= Ect0`) and
//!   [`TcpReceiver`] (one ACK per segment, echoing CE and the send time), built by
//!   [`tcp_pair`] from a [`TcpConfig`]. [`TcpSender::samples`] keeps the window and the
//!   smoothed RTT every 100 ms, [`TcpSender::reductions`] every window reduction.
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
pub use cg_types::video_model as encoder;
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
