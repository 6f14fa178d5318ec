//! The sender's statistics record, emitted every `stats_interval` and written as one line of
//! JSON by `cg-send --json` / `--stats-file`.

use std::collections::BTreeMap;

use cg_app::watch::LoopWatch;
use cg_app::{kbps, ms, pct};
use serde::{Deserialize, Serialize};

/// One statistics sample of a running sender. Rates are over the last interval; counters
/// are totals since the start. Field names are the JSON keys.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Seconds since the session started.
    pub t: f64,
    /// The host's `CLOCK_MONOTONIC` at the sample, in ns (one clock for every netlab
    /// namespace: align with other processes' samples on it).
    pub mono_ns: u64,
    /// Controller name (`gcc-remb`, `gcc`, `scream`).
    pub controller: String,
    /// Encoder name (`vp8`, `x264`, `nvh264`, `nvh265`, or `model`: RFC 8593 frame sizes,
    /// no pictures).
    #[serde(default)]
    pub encoder: String,
    /// The WHEP viewer this record is about (its resource id); absent in plain RTP mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub viewer: Option<String>,
    /// RTP bit rate put on the wire over the last interval (media, retransmissions, padding;
    /// RTP header and payload, no IP/UDP), bit/s.
    pub send_rate_bps: u64,
    /// The controller's target for the encoder (0 while the circuit breaker is open), bit/s.
    pub target_bps: u64,
    /// The pacer's rate, bit/s.
    pub pacing_bps: u64,
    /// The rate last given to the encoder, bit/s.
    pub encoder_target_bps: u64,
    /// The rate the encoder produced over its measurement window (1 s), bit/s.
    pub encoder_bps: u64,
    /// Round-trip time: the controller's smoothed RTT, else the last RR-based sample, ms.
    pub rtt_ms: Option<f64>,
    /// Fraction lost in the last receiver report (RFC 3550 §6.4.1), 0..1.
    pub loss: Option<f64>,
    /// Queuing delay, the controller's estimate (SCReAM's; GCC's one-way delay from
    /// transport-wide feedback, or RR round trip, over its minimum), ms.
    pub qdelay_ms: Option<f64>,
    /// Congestion window (window-based controllers), bytes.
    pub cwnd_bytes: Option<u64>,
    /// Bytes in flight (window-based controllers).
    pub in_flight_bytes: Option<u64>,
    /// Last REMB value received, bit/s.
    pub remb_bps: Option<u64>,
    /// Frames the encoder produced.
    pub frames_encoded: u64,
    /// Frames handed to the RTP session and packetized.
    pub frames_sent: u64,
    /// Frames dropped before the wire (pacer queue bound, controller discard, breaker,
    /// encoder back-pressure).
    pub frames_dropped: u64,
    /// Raw frames skipped in front of the encoder: by the frame dropper (its output ran
    /// ahead of the target) and to lower the frame rate (the adaptation's choice).
    #[serde(default)]
    pub frames_skipped: u64,
    /// The coded picture now: width, height (pixels) and frame rate (the adaptation's
    /// choice; see `--degradation`).
    #[serde(default)]
    pub width: u32,
    /// See `width`.
    #[serde(default)]
    pub height: u32,
    /// See `width`.
    #[serde(default)]
    pub fps: u32,
    /// Format changes so far.
    #[serde(default)]
    pub format_changes: u64,
    /// The share of time the encoder spent encoding (its CPU usage, what the picture
    /// adaptation steps down on), once measured.
    #[serde(default)]
    pub encode_usage: Option<f64>,
    /// Mean quantizer over the adaptation's window (VP8: 0–127 q index), where known.
    #[serde(default)]
    pub qp: Option<f64>,
    /// Key frames the encoder produced.
    pub key_frames: u64,
    /// Key-frame requests passed to the encoder (PLI/FIR, queue discards, breaker recovery).
    pub key_frame_requests: u64,
    /// Media packets sent (first transmissions).
    pub media_packets: u64,
    /// Retransmissions sent.
    pub retransmissions: u64,
    /// Padding packets sent.
    pub padding_packets: u64,
    /// RTCP datagrams received from the receiver.
    pub rtcp_received: u64,
    /// Datagrams from other addresses than the receiver, dropped unread.
    #[serde(default)]
    pub foreign_datagrams: u64,
    /// Datagrams from the receiver that did not parse as RTCP for this stream, dropped.
    #[serde(default)]
    pub malformed: u64,
    /// Datagrams lost to send errors (ENOBUFS, ECONNREFUSED while the receiver is gone…).
    pub send_errors: u64,
    /// Whether the RTP circuit breaker (RFC 8083) is open: media stopped.
    pub breaker_open: bool,
    /// Times the breaker tripped.
    pub breaker_trips: u64,
    /// Silences of the feedback that halved the rate (RFC 8888 §5): the target and the pacer
    /// run at half the controller's rate after each period in which sent media drew no
    /// feedback (0.5 s with transport-wide CC or RFC 8888, 3 s with REMB) until it returns.
    #[serde(default)]
    pub feedback_timeouts: u64,
    /// The sender process's resident memory at the sample, KiB (a soak watches it stay flat).
    #[serde(default)]
    pub rss_kib: Option<u64>,
    /// The nice value the thread that writes this record runs at, and with it the threads
    /// the process started (`--nice` raised them there, or they run as started: a process
    /// that may not raise its priority says so once in its log).
    #[serde(default)]
    pub nice: Option<i32>,
    /// Times the encoder made no frame for a second while its source captured frames (each is
    /// logged with what every thread was doing).
    #[serde(default)]
    pub encoder_stalls: u64,
    /// Times the encoder's pipeline was rebuilt: once when a stall is noticed, and every 5 s
    /// while it lasts.
    #[serde(default)]
    pub encoder_restarts: u64,
    /// Times the session loop stopped turning for at least its watch's threshold (the larger
    /// of 250 ms and two statistics intervals; each is logged with what held it, see
    /// `cg_app::watch`), and the longest, ms.
    #[serde(default)]
    pub loop_stalls: u64,
    #[serde(default)]
    pub longest_loop_stall_ms: f64,
    /// Encoded frames not handed to the session's driver because a frame handed before had
    /// waited 200 ms for it (a driver stalled), and those held back after such a skip until
    /// a key frame (asked for once the driver has caught up). Also in `frames_dropped`.
    #[serde(default)]
    pub driver_skips: u64,
    /// Controller-specific quantities by name (GCC: `m`, `gamma`, `state`, `a_r`, `a_s`,
    /// `n_dd`…; SCReAM: `alpha`…).
    pub extra: BTreeMap<String, f64>,
}

impl Stats {
    /// Takes the loop's stalls from its watch, if it has one.
    pub(crate) fn note_stalls(&mut self, watch: Option<&LoopWatch>) {
        if let Some(w) = watch {
            let s = w.stalls();
            self.loop_stalls = s.count;
            self.longest_loop_stall_ms = s.longest.as_secs_f64() * 1e3;
        }
    }

    /// A one-line human summary for a terminal status line.
    pub fn status_line(&self) -> String {
        format!(
            "{:7.1}s {:>8} rate {:>6} target {:>6} {}x{}@{} rtt {:>6} loss {:>5} qdelay {:>6} frames {} sent / {} dropped{}",
            self.t,
            self.controller,
            kbps(self.send_rate_bps),
            kbps(self.target_bps),
            self.width,
            self.height,
            self.fps,
            ms(self.rtt_ms),
            pct(self.loss),
            ms(self.qdelay_ms),
            self.frames_sent,
            self.frames_dropped,
            if self.breaker_open {
                "  [circuit breaker open]"
            } else {
                ""
            }
        )
    }
}
