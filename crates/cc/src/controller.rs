//! The interface every congestion controller implements.
//!
//! Modelled on quinn-proto's `Controller` / `ControllerFactory`: the config type builds the
//! controller, optional hooks have default bodies, and inputs come as structs.

use std::fmt;
use std::time::{Duration, Instant};

use cg_types::{Bitrate, DataSize, Ecn, RemoteTime};

/// What a sent packet carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PacketKind {
    /// Media (first transmission).
    #[default]
    Media,
    /// A retransmission answering a NACK.
    Retransmission,
    /// Padding or a probe the controller asked for.
    Padding,
}

/// A packet the transport has just put on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SentPacket {
    /// Transport-wide sequence number, unwrapped to 64 bits (monotonic per session).
    pub seq: u64,
    /// Size on the wire counted by the controller: RTP header, extensions and payload
    /// (IP/UDP overhead is the transport's to add if it wants; it must be consistent).
    pub size: DataSize,
    /// When it left (local clock).
    pub send_time: Instant,
    /// The ECN code point it was sent with.
    pub ecn: Ecn,
    /// Media, retransmission or padding.
    pub kind: PacketKind,
}

/// The fate of one sent packet, as a feedback report tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketResult {
    /// Transport-wide sequence number, unwrapped to match [`SentPacket::seq`].
    pub seq: u64,
    /// When it arrived, on the receiver's clock; `None` if reported as not received.
    pub arrival: Option<RemoteTime>,
    /// The ECN code point the receiver saw (RFC 8888); `NotEct` where the feedback format
    /// carries none (transport-wide CC).
    pub ecn: Ecn,
}

/// A receiver report's loss figures (RFC 3550 §6.4.1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LossReport {
    /// Fraction lost since the previous report, in `[0, 1]` (the 8-bit field / 256).
    pub fraction_lost: f64,
    /// Cumulative number of packets lost (may be negative with duplicates).
    pub cumulative_lost: i64,
    /// Extended highest sequence number received.
    pub extended_highest_seq: u32,
}

/// Which feedback the receiver must send for a controller to work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeedbackKind {
    /// REMB (draft-alvestrand-rmcat-remb) from a receiver-side estimator, plus RR.
    Remb,
    /// Transport-wide congestion control feedback (draft-holmer-rmcat-transport-wide-cc-extensions-01).
    TransportWideCc,
    /// RFC 8888 congestion-control feedback (with ECN).
    Rfc8888,
}

/// One feedback event, however it arrived. Fields a message type does not carry are empty.
#[derive(Debug, Clone, Copy, Default)]
pub struct Feedback<'a> {
    /// Per-packet results (transport-wide CC or RFC 8888), in report order.
    pub packets: &'a [PacketResult],
    /// A REMB value.
    pub remb: Option<Bitrate>,
    /// Receiver-report loss figures.
    pub loss: Option<LossReport>,
    /// A round-trip-time sample (from LSR/DLSR or from feedback timing).
    pub rtt: Option<Duration>,
    /// When the receiver wrote this report, on its own clock (RFC 8888's report timestamp;
    /// transport-wide CC has none). Minus a packet's arrival it is how long the receiver held
    /// that packet's result before reporting it.
    pub report_time: Option<RemoteTime>,
}

/// The state of the media (RTP) queue in front of the pacer, for controllers that steer it
/// (SCReAM's RTP-queue integral controller and queue discard).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MediaQueue {
    /// Bytes waiting.
    pub size: DataSize,
    /// How long the oldest waiting packet has waited.
    pub delay: Duration,
}

/// Something a controller asks the transport to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ControllerEvent {
    /// Drop everything queued for sending and ask the encoder for a key frame
    /// (SCReAM: RTP queue delay above its limit).
    DiscardQueue,
    /// Ask the encoder for a key frame.
    RequestKeyFrame,
    /// Send padding at this rate for this long to probe for capacity.
    Probe {
        /// Padding rate on top of media.
        rate: Bitrate,
        /// How long to pad.
        duration: Duration,
    },
}

/// The controller's state for logs and plots.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ControllerStats {
    /// The rate for the encoder.
    pub target: Bitrate,
    /// The rate for the pacer.
    pub pacing: Bitrate,
    /// Congestion window, for window-based controllers.
    pub cwnd: Option<DataSize>,
    /// Bytes sent and not yet acknowledged or declared lost.
    pub bytes_in_flight: Option<DataSize>,
    /// Smoothed round-trip time.
    pub rtt: Option<Duration>,
    /// The controller's estimate of the bottleneck queuing delay.
    pub queue_delay: Option<Duration>,
    /// Controller-specific quantities the papers plot, by name (e.g. GCC's `m`, `gamma`,
    /// `state`, `a_r`, `a_s`, `n_dd`; SCReAM's `alpha`). Only quantities that are known
    /// appear, and every value is finite: a quantity not measured yet, or not part of the
    /// configured model, is left out rather than given as NaN.
    pub extra: Vec<(&'static str, f64)>,
}

impl ControllerStats {
    /// The [`extra`](Self::extra) quantity called `name`, if the controller reports it.
    pub fn extra_value(&self, name: &str) -> Option<f64> {
        self.extra.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }
}

/// A sender-side congestion controller.
///
/// Every method that changes state takes `now`; none reads a clock. Bad input (arrival before
/// send, time going backwards, duplicated or unknown sequence numbers) must never panic and
/// must keep the target within the configured `[min, max]`.
pub trait Controller: Send + fmt::Debug {
    /// A packet has been put on the wire.
    fn on_packet_sent(&mut self, packet: &SentPacket);

    /// A feedback report has arrived.
    fn on_feedback(&mut self, feedback: &Feedback<'_>, now: Instant);

    /// A timer set through [`poll_timeout`](Self::poll_timeout) has fired (or a spurious wake-up).
    fn handle_timeout(&mut self, now: Instant) {
        let _ = now;
    }

    /// When [`handle_timeout`](Self::handle_timeout) should next be called.
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    /// The packet `last_seq`, already reported through
    /// [`on_packet_sent`](Self::on_packet_sent), ended a video frame (it carried the RTP
    /// marker bit). Optional: controllers that group packets by frame (GCC's arrival-time
    /// filter, MMSys16 eq. (4)) use it to form groups in send-side mode; without it they fall
    /// back to grouping by send time.
    fn on_frame_sent(&mut self, last_seq: u64) {
        let _ = last_seq;
    }

    /// The media queue's state after the transport enqueued or sent media.
    fn on_media_queue(&mut self, queue: MediaQueue, now: Instant) {
        let _ = (queue, now);
    }

    /// Something the transport must do; drain until `None`.
    fn poll_event(&mut self) -> Option<ControllerEvent> {
        None
    }

    /// The bit rate the encoder should produce.
    fn target_bitrate(&self) -> Bitrate;

    /// The rate the pacer releases packets at.
    fn pacing_rate(&self) -> Bitrate;

    /// How far the pacer may run ahead of [`pacing_rate`](Self::pacing_rate): a frame that
    /// reaches an idle pacer sends this much of the rate at once, the rest paced (libwebrtc's
    /// `PacingController` send-burst interval; the pacer caps the burst at 63 KB as it does).
    /// Default zero: every packet paced.
    fn pacing_burst(&self) -> Duration {
        Duration::ZERO
    }

    /// For window-based controllers: how many more bytes may be put in flight now. `None`
    /// means the controller is purely rate-based.
    fn send_allowance(&self) -> Option<DataSize> {
        None
    }

    /// The feedback this controller needs from the receiver.
    fn feedback_kind(&self) -> FeedbackKind;

    /// The state for logs and plots.
    fn stats(&self) -> ControllerStats;
}

/// A config that builds a [`Controller`] (quinn-proto's `ControllerFactory`).
pub trait ControllerConfig {
    /// The first value the controller cannot run with, if any (what
    /// [`build`](Self::build) refuses).
    fn validate(&self) -> Result<(), ConfigError>;

    /// A fresh controller starting at `now`, or the first value it cannot run with.
    fn build(&self, now: Instant) -> Result<Box<dyn Controller>, ConfigError>;

    /// The feedback the receiver must send (what [`Controller::feedback_kind`] of the built
    /// controller says).
    fn feedback_kind(&self) -> FeedbackKind;

    /// The receiver's half of a controller whose estimate is made at the receiver (GCC in
    /// REMB mode), starting at `now`; `None` for a controller that runs at the sender only.
    fn build_receive_side(
        &self,
        now: Instant,
    ) -> Result<Option<Box<dyn ReceiveSideEstimator>>, ConfigError> {
        let _ = now;
        Ok(None)
    }
}

/// A controller config value the algorithm cannot run with: refused, never clamped (a
/// silently corrected value would make a run measure something other than what was asked).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} = {value}: must be {expected}")]
pub struct ConfigError {
    /// The config field, as spelled in the struct.
    pub field: &'static str,
    /// The value given.
    pub value: String,
    /// What would have been accepted.
    pub expected: String,
}

impl ConfigError {
    /// `Ok` if `ok`, otherwise the error for `field`.
    pub(crate) fn check(
        ok: bool,
        field: &'static str,
        value: impl std::fmt::Debug,
        expected: impl Into<String>,
    ) -> Result<(), ConfigError> {
        if ok {
            Ok(())
        } else {
            Err(ConfigError {
                field,
                value: format!("{value:?}"),
                expected: expected.into(),
            })
        }
    }

    /// `value` is finite and within `[lo, hi]`.
    pub(crate) fn within(field: &'static str, value: f64, lo: f64, hi: f64) -> Result<(), Self> {
        Self::check(
            value.is_finite() && (lo..=hi).contains(&value),
            field,
            value,
            format!("within [{lo}, {hi}]"),
        )
    }

    /// `value` is finite and above zero.
    pub(crate) fn positive(field: &'static str, value: f64) -> Result<(), Self> {
        Self::check(
            value.is_finite() && value > 0.0,
            field,
            value,
            "finite and above 0",
        )
    }

    /// `min ≤ start ≤ max`, `max` above zero.
    pub(crate) fn bounds(min: Bitrate, start: Bitrate, max: Bitrate) -> Result<(), Self> {
        Self::check(max > Bitrate::ZERO, "max_bitrate", max, "above 0")?;
        Self::check(
            min <= max,
            "min_bitrate",
            min,
            format!("at most max_bitrate {max}"),
        )?;
        Self::check(
            (min..=max).contains(&start),
            "start_bitrate",
            start,
            format!("within [min_bitrate {min}, max_bitrate {max}]"),
        )
    }
}

/// A packet as the receiver saw it, for receiver-side estimators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReceivedPacket {
    /// When it arrived (local clock of the receiver; a kernel timestamp where available).
    pub arrival: Instant,
    /// When it was sent, on the sender's clock: from abs-send-time, or the RTP timestamp
    /// converted with the media clock rate, unwrapped by the transport.
    pub send_time: RemoteTime,
    /// Size counted as for [`SentPacket::size`].
    pub size: DataSize,
    /// Identifies the packet group (frame): packets with the same value belong together;
    /// typically the unwrapped RTP timestamp.
    pub group: u64,
    /// SSRC of the stream.
    pub ssrc: u32,
    /// Media, retransmission or padding (a packet with no payload, sent for a probe): a
    /// receive-side estimator detects probe clusters from the padding's send and arrival
    /// times.
    pub kind: PacketKind,
}

/// A congestion estimator that runs at the receiver and answers with REMB values.
pub trait ReceiveSideEstimator: Send + fmt::Debug {
    /// An RTP packet (media, retransmission or padding) has arrived.
    fn on_packet_received(&mut self, packet: &ReceivedPacket);

    /// A timer has fired (or a spurious wake-up).
    fn handle_timeout(&mut self, now: Instant);

    /// When [`handle_timeout`](Self::handle_timeout) should next be called.
    fn poll_timeout(&self) -> Option<Instant>;

    /// A REMB value to send now, if one is due (periodically, or at once on a large decrease).
    fn poll_remb(&mut self, now: Instant) -> Option<Bitrate>;

    /// The current estimate.
    fn estimate(&self) -> Bitrate;

    /// The estimate a REMB may carry now (also the one bundled with a receiver report):
    /// `None` while the estimator has none to announce yet. Default: always
    /// [`estimate`](Self::estimate).
    fn remb_estimate(&self) -> Option<Bitrate> {
        Some(self.estimate())
    }

    /// The state for logs and plots (same naming as [`ControllerStats::extra`]).
    fn stats(&self) -> Vec<(&'static str, f64)>;
}
