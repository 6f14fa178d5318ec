//! The receiver's statistics record, emitted every `stats_interval` and written as one line
//! of JSON by `cg-recv --json` / `--stats-file`.

use std::collections::BTreeMap;

use cg_app::{kbps, ms, pct};
use serde::{Deserialize, Serialize};

/// A freeze that ended during the last interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct FreezeRecord {
    /// When the last frame before it was shown, seconds since the receiver started.
    pub start_t: f64,
    /// How long no frame was shown, ms.
    pub duration_ms: f64,
}

/// One statistics sample of a running receiver. Rates and `loss` are over the last
/// interval; counters are totals since the start.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Seconds since the receiver started.
    pub t: f64,
    /// The host's `CLOCK_MONOTONIC` at the sample, ns.
    pub mono_ns: u64,
    /// The sender being received, if any.
    pub peer: Option<String>,
    /// Sessions started (1 + times a new sender was accepted).
    pub sessions: u64,
    /// RTP bit rate received over the last interval (header and payload), bit/s.
    pub recv_rate_bps: u64,
    /// Packets lost over the last interval / packets expected (RFC 3550 A.3), 0..1.
    pub loss: Option<f64>,
    /// Cumulative packets lost (RFC 3550 A.3).
    pub lost_packets: i64,
    /// Interarrival jitter (RFC 3550 A.8), ms.
    pub jitter_ms: f64,
    /// Media packets received (first transmissions).
    pub media_packets: u64,
    /// Retransmissions received.
    pub retransmissions: u64,
    /// Received packets per ECN code point: Not-ECT, ECT(1), ECT(0), CE.
    pub ecn: [u64; 4],
    /// Frames reassembled and handed to the decoder.
    pub frames_received: u64,
    /// Frames given up by the jitter buffer or dropped as undecodable.
    pub frames_lost: u64,
    /// Frames decoded.
    pub frames_decoded: u64,
    /// Size of the last decoded frame (it follows the sender's resolution changes), pixels.
    #[serde(default)]
    pub width: u32,
    /// See `width`.
    #[serde(default)]
    pub height: u32,
    /// Frames decoded over the last second.
    #[serde(default)]
    pub decoded_fps: u32,
    /// Decoder errors.
    pub decode_errors: u64,
    /// Freezes so far (gaps over 3 nominal frame intervals between decoded frames).
    pub freezes: u64,
    /// Their summed duration, ms.
    #[serde(default)]
    pub freeze_total_ms: f64,
    /// Longest freeze so far, ms.
    pub longest_freeze_ms: f64,
    /// Freezes so far by WebRTC's rule (a gap of at least max(3 × mean, mean + 150 ms) over
    /// the last 30 gaps: a browser's `freezeCount`).
    #[serde(default)]
    pub webrtc_freezes: u64,
    /// Their summed duration, ms (`totalFreezesDuration`).
    #[serde(default)]
    pub webrtc_freeze_total_ms: f64,
    /// Times the decoded picture size changed so far.
    #[serde(default)]
    pub resolution_switches: u64,
    /// Time without a new frame right now, when longer than a freeze, ms.
    pub stall_ms: Option<f64>,
    /// Freezes that ended in the last interval.
    pub new_freezes: Vec<FreezeRecord>,
    /// Glass-to-glass latency (capture at the sender to decoded here; exact on one host),
    /// median over the frames decoded in the last interval, ms.
    pub g2g_ms: Option<f64>,
    /// Glass-to-glass latency, the largest over the frames decoded in the last interval, ms.
    #[serde(default)]
    pub g2g_max_ms: Option<f64>,
    /// Glass-to-glass latency, 95th percentile over the decoder's recent window, ms.
    pub g2g_p95_ms: Option<f64>,
    /// The playout-delay limits the sender asks for (minimum, maximum), ms, if it asks. cg-recv
    /// renders every frame as soon as it is decoded, within any limits.
    #[serde(default)]
    pub playout_delay_ms: Option<[f64; 2]>,
    /// Key-frame requests (PLI) sent.
    pub plis_sent: u64,
    /// NACKs sent.
    pub nacks_sent: u64,
    /// The receive-side estimate (GCC-REMB), bit/s.
    pub remb_bps: Option<u64>,
    /// Datagrams from other addresses than the sender, dropped.
    pub foreign_datagrams: u64,
    /// The current sender ended its stream with an RTCP BYE (RFC 3550 §6.6): a clean end, not
    /// a sender that fell silent.
    #[serde(default)]
    pub bye_received: bool,
    /// Estimator quantities by name (GCC-REMB: `m`, `gamma`, `state`, `a_r`, `n_dd`…).
    pub extra: BTreeMap<String, f64>,
}

impl Stats {
    /// A one-line human summary for a terminal status line.
    pub fn status_line(&self) -> String {
        format!(
            "{:7.1}s rate {:>6} loss {:>5} jitter {:>6} g2g {:>6} {}x{}@{} frames {} decoded / {} lost, freezes {} (max {:.0}ms, WebRTC {}){}",
            self.t,
            kbps(self.recv_rate_bps),
            pct(self.loss),
            ms(Some(self.jitter_ms)),
            ms(self.g2g_ms),
            self.width,
            self.height,
            self.decoded_fps,
            self.frames_decoded,
            self.frames_lost,
            self.freezes,
            self.longest_freeze_ms,
            self.webrtc_freezes,
            match &self.peer {
                Some(p) => format!("  from {p}"),
                None => "  waiting for a sender".to_owned(),
            }
        )
    }
}
