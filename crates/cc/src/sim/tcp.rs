//! A simulated TCP bulk flow — Reno (RFC 5681), CUBIC (RFC 9438) or BBR v1 (Linux's
//! `tcp_bbr.c`) — to run against the real-time controllers on a shared bottleneck, in
//! simulated time.
//!
//! [`TcpSender`] always has data (a greedy bulk transfer) and sends full-sized segments
//! whenever fewer than `⌊cwnd⌋` are in flight. Reno and CUBIC do not pace: like Linux
//! without the `fq` qdisc they send on the ACK clock, bursts included. BBR paces every
//! segment at its pacing rate (the kernel's internal pacing) and takes its window from its
//! model ([`bbr`]); the sender keeps the kernel's delivery-rate samples for it
//! (`tcp_rate.c`: per segment the delivered count and times when it was sent, the interval
//! the longer of the send and the ACK spans, samples shorter than the minimum RTT dropped,
//! application-limited periods marked). [`TcpReceiver`] acknowledges every segment with one
//! [`TcpAck`](crate::sim::TcpAck) echoing CE and the segment's send time.
//!
//! What is modelled, and what is not:
//!
//! - **Window dynamics.** Slow start from [`TcpConfig::initial_window`] with an infinite
//!   initial `ssthresh` (RFC 5681 §3.1; no HyStart), then Reno's `+1/cwnd` per ACK or
//!   CUBIC's cubic and Reno-friendly growth (RFC 9438 §4.2–4.3). One window reduction per
//!   congestion event, as NewReno's `recover` (RFC 6582 §3.2): a loss or ECE of a segment
//!   sent before the last reduction does not reduce again, and the window does not grow
//!   until a segment sent after the reduction is acknowledged. Reno halves (`cwnd = ssthresh
//!   = max(cwnd/2, 2)`); CUBIC keeps `β = 0.7` with fast convergence (RFC 9438 §4.6–4.7).
//! - **Loss detection**, for a path without reordering: a segment is lost once three segments
//!   sent after it have been acknowledged (DupThresh 3, RFC 5681 §3.2, RFC 6675's `IsLost`
//!   with per-segment ACKs acting as SACKs). Lost segments are **not retransmitted**: the flow
//!   is bulk, new data takes their place, and what matters to the competing flows is the
//!   window, which evolves as a SACK sender's would (a lost segment leaves the pipe, its
//!   retransmission would be one more segment in the window).
//! - **Retransmission timeout** (RFC 6298, Linux's 200 ms minimum, 60 s maximum, doubling
//!   backoff): everything in flight is counted lost, `cwnd = 1`, and `ssthresh =
//!   max(FlightSize/2, 2)` for Reno (RFC 5681 eq. 4) or `max(FlightSize·β, 2)` for CUBIC
//!   (RFC 9438 §4.8, whose next epoch starts with `K = 0`); a backed-off timeout holds
//!   `ssthresh` (RFC 5681 §3.1). The flow then restarts in slow start. ACKs that arrive later
//!   for segments counted lost at a timeout (they were only delayed, e.g. queued through an
//!   outage) still clock the window open, as the cumulative ACKs of the originals do for
//!   Linux in its Loss state.
//! - **ECN** (RFC 3168 §6.1.2) with [`TcpConfig::ecn`] `= Ect0`: a CE echo is a congestion
//!   event exactly as a loss is, at most once per window (BBR v1 ignores it, as the kernel's).
//! - **BBR's losses.** A loss event starts recovery as for the others, but the window is not
//!   cut: BBR deducts the lost segments and conserves packets for one round, then returns to
//!   its model's window; a timeout sets the window to 1 and restores the saved one when a
//!   segment sent after it is acknowledged (`bbr_set_cwnd_to_recover_or_restore`).
//! - Not modelled: the receive window, delayed ACKs (Linux ACKs every second segment;
//!   per-segment ACKs make the ACK clock slightly smoother), PRR, HyStart++, tail-loss
//!   probes, F-RTO, handshakes.
//!
//! [`tcp_pair`] builds a flow; its docs run a send-side GCC flow against a CUBIC one.

pub mod bbr;
mod cubic;
mod receiver;
mod rtt;
mod sender;

use std::time::{Duration, Instant};

use cg_types::{Bitrate, DataSize, Ecn};

use crate::ConfigError;

pub use bbr::BbrMode;
pub use receiver::TcpReceiver;
pub use sender::{CongestionCause, CwndReduction, TcpSample, TcpSender};

/// The congestion-avoidance algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TcpCc {
    /// Reno's AIMD: `+1/cwnd` per ACK, halve on a congestion event (RFC 5681).
    Reno,
    /// CUBIC (RFC 9438), Linux's default.
    #[default]
    Cubic,
    /// BBR v1 as Linux's `tcp_bbr.c` (the kernel's `bbr` module): paced at its bandwidth
    /// estimate, the window from its model, losses answered only by packet conservation for a
    /// round (see [`bbr`]).
    Bbr,
}

/// A TCP bulk flow's parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct TcpConfig {
    /// The congestion-avoidance algorithm. Default [`TcpCc::Cubic`] (Linux's default since
    /// 2.6.19).
    pub cc: TcpCc,
    /// Bytes on the wire per segment. Default 1500 (an Ethernet MTU's IP datagram).
    pub mss: DataSize,
    /// Bytes on the wire per ACK. Default 64 (IP and TCP headers with timestamps and a SACK
    /// block).
    pub ack_size: DataSize,
    /// Initial window in segments. Default 10 (RFC 6928).
    pub initial_window: u32,
    /// ECN codepoint of the segments: [`Ecn::NotEct`] (default; loss is the only congestion
    /// signal) or [`Ecn::Ect0`] (classic ECN, RFC 3168: a CE echo is a congestion event).
    pub ecn: Ecn,
    /// Largest window in segments (the receive window's role). Default 20 000 (30 MB:
    /// 2.4 Gbit/s at 100 ms, never the limit in these simulations). Also bounds the
    /// sender's per-segment state.
    pub max_window: u32,
    /// Delay from the sender's creation until it starts sending. Default zero.
    pub start: Duration,
    /// Time from the sender's creation after which it sends no new segment (`None`: never
    /// stops). Default `None`.
    pub stop: Option<Duration>,
    /// Period of [`TcpSender::samples`]. Default 100 ms (as [`crate::sim::SenderConfig`]).
    pub sample_interval: Duration,
    /// The application's sending-rate limit (iperf's `-b`): steps `(time since the sender's
    /// creation, rate)`, the last one at or before now applies; before the first, and with
    /// none (the default), the flow is limited by its window alone. A token bucket one MSS or
    /// 10 ms of the rate deep, whichever is larger, meters the segments.
    pub rate_limit: Vec<(Duration, Bitrate)>,
    /// Seed of BBR's random first phase of its gain cycle (the kernel draws it at random;
    /// Reno and CUBIC use no randomness). Default 1.
    pub seed: u64,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            cc: TcpCc::Cubic,
            mss: DataSize::bytes(1500),
            ack_size: DataSize::bytes(64),
            initial_window: 10,
            ecn: Ecn::NotEct,
            max_window: 20_000,
            start: Duration::ZERO,
            stop: None,
            sample_interval: Duration::from_millis(100),
            rate_limit: Vec::new(),
            seed: 1,
        }
    }
}

/// Largest accepted [`TcpConfig::max_window`], in segments: bounds the sender's memory.
const MAX_WINDOW_LIMIT: u32 = 1 << 20;

impl TcpConfig {
    /// Reno with the other defaults.
    pub fn reno() -> Self {
        TcpConfig {
            cc: TcpCc::Reno,
            ..TcpConfig::default()
        }
    }

    /// CUBIC with the other defaults.
    pub fn cubic() -> Self {
        TcpConfig::default()
    }

    /// Refuses values the flow cannot run with: a segment outside `[64, 65535]` bytes (an IP
    /// datagram with its 40 bytes of headers and some payload, at most the IPv4 maximum), an
    /// ACK outside `[40, 65535]` bytes, a `max_window` outside `[2, 2^20]`, an
    /// `initial_window` outside `[1, max_window]`, ECT(1) or CE as the codepoint (L4S needs
    /// Accurate ECN and a scalable controller, not modelled), a zero `sample_interval`, a
    /// `stop` not after `start`.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bytes = |d: DataSize| d.as_bytes();
        ConfigError::check(
            (64..=65_535).contains(&bytes(self.mss)),
            "mss",
            self.mss,
            "within [64, 65535] bytes",
        )?;
        ConfigError::check(
            (40..=65_535).contains(&bytes(self.ack_size)),
            "ack_size",
            self.ack_size,
            "within [40, 65535] bytes",
        )?;
        ConfigError::check(
            (2..=MAX_WINDOW_LIMIT).contains(&self.max_window),
            "max_window",
            self.max_window,
            format!("within [2, {MAX_WINDOW_LIMIT}] segments"),
        )?;
        ConfigError::check(
            (1..=self.max_window).contains(&self.initial_window),
            "initial_window",
            self.initial_window,
            format!("within [1, max_window {}] segments", self.max_window),
        )?;
        ConfigError::check(
            matches!(self.ecn, Ecn::NotEct | Ecn::Ect0),
            "ecn",
            self.ecn,
            "NotEct or Ect0",
        )?;
        ConfigError::check(
            !self.sample_interval.is_zero(),
            "sample_interval",
            self.sample_interval,
            "above zero",
        )?;
        ConfigError::check(
            self.stop.is_none_or(|s| s > self.start),
            "stop",
            self.stop,
            format!("None or after start {:?}", self.start),
        )
    }
}

/// A TCP sender and its receiver, both created at `now` (the sender starts sending
/// `cfg.start` later). Check `cfg` with [`TcpConfig::validate`] first: values it refuses
/// are clamped here so that nothing panics, but the run then measures something else.
///
/// # Example: a send-side GCC flow against a CUBIC flow
///
/// ```
/// use std::time::{Duration, Instant};
/// use cg_cc::ControllerConfig;
/// use cg_cc::gcc::GccConfig;
/// use cg_cc::sim::{self, AnyReceiver, AnySender, ReceiverConfig, SenderConfig, TcpConfig};
/// use cg_link::sim::Sim;
/// use cg_link::{Link, LinkConfig};
/// use cg_types::Bitrate;
///
/// let start = Instant::now();
/// let one_way = Duration::from_millis(20);
/// let fwd = Link::new(LinkConfig::constant(Bitrate::mbps(10)).with_delay(one_way)).unwrap();
/// let rev = Link::new(LinkConfig::constant(Bitrate::mbps(100)).with_delay(one_way)).unwrap();
/// let mut s: Sim<AnySender, AnyReceiver> = Sim::new(fwd, rev, start);
/// let gcc = GccConfig::send_side().build(start).unwrap();
/// let (tx, rx) = sim::pair(SenderConfig::default(), ReceiverConfig::default(), gcc, None, start);
/// s.add_pair(tx.into(), rx.into());
/// let (tx, rx) = sim::tcp_pair(TcpConfig::default(), start);
/// s.add_pair(tx.into(), rx.into());
/// s.run_until(start + Duration::from_secs(3));
/// let tcp = s.sender(1).tcp().expect("pair 1 is the TCP flow");
/// assert!(tcp.segments_acked() > 100 && tcp.cwnd() >= 2.0);
/// assert!(s.sender(0).media().expect("pair 0 is GCC").sent_bytes().as_bytes() > 0);
/// ```
pub fn tcp_pair(cfg: TcpConfig, now: Instant) -> (TcpSender, TcpReceiver) {
    let rx = TcpReceiver::new(&cfg);
    (TcpSender::new(cfg, now), rx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_valid_cubic_with_ten_segments() {
        let c = TcpConfig::default();
        assert_eq!(c.validate(), Ok(()));
        assert_eq!((c.cc, c.initial_window), (TcpCc::Cubic, 10));
        assert_eq!(TcpConfig::reno().validate(), Ok(()));
    }

    #[test]
    fn nonsense_values_are_refused_by_name() {
        let field = |c: TcpConfig| c.validate().map_err(|e| e.field);
        let d = TcpConfig::default;
        assert_eq!(
            field(TcpConfig {
                mss: DataSize::ZERO,
                ..d()
            }),
            Err("mss")
        );
        assert_eq!(
            field(TcpConfig {
                ack_size: DataSize::bytes(1 << 20),
                ..d()
            }),
            Err("ack_size")
        );
        assert_eq!(
            field(TcpConfig {
                max_window: 1,
                initial_window: 1,
                ..d()
            }),
            Err("max_window")
        );
        assert_eq!(
            field(TcpConfig {
                initial_window: 0,
                ..d()
            }),
            Err("initial_window")
        );
        assert_eq!(
            field(TcpConfig {
                max_window: 4,
                ..d()
            }),
            Err("initial_window")
        );
        assert_eq!(
            field(TcpConfig {
                ecn: Ecn::Ect1,
                ..d()
            }),
            Err("ecn")
        );
        assert_eq!(
            field(TcpConfig {
                sample_interval: Duration::ZERO,
                ..d()
            }),
            Err("sample_interval")
        );
        assert_eq!(
            field(TcpConfig {
                start: Duration::from_secs(5),
                stop: Some(Duration::from_secs(5)),
                ..d()
            }),
            Err("stop")
        );
    }
}
