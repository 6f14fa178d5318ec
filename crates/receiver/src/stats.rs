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

/// Where glass-to-glass latency went, stage by stage, ms: each stage's median over the frames
/// decoded in the last interval that carried the sender's stages (the video-timing header
/// extension). A frame's stages add up to its glass-to-glass latency; the medians need not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct G2gStages {
    /// Capture (the frame entering the sender's encoding pipeline) to the encoder's output.
    pub encode_ms: f64,
    /// The encoder's output to the frame's packets queued for the pacer (the sender's frame
    /// queue between the two).
    pub queue_ms: f64,
    /// Queued to its last packet leaving the pacer.
    pub pacing_ms: f64,
    /// Its last packet leaving to the last of its packets arriving (a repair included).
    pub network_ms: f64,
    /// The last arrival to the decoder's input: reassembly, waiting for an earlier frame.
    pub jitter_buffer_ms: f64,
    /// The decoder's input to its output (cg-recv shows a frame as it is decoded).
    pub decode_ms: f64,
}

impl G2gStages {
    /// The stages of one frame, from the sender's `timing` (ms after `capture`) and the
    /// receiver's instants; `None` when they are out of order (the sender's clock is not
    /// this host's).
    pub fn of_frame(
        capture: std::time::Instant,
        timing: cg_rtp::VideoTiming,
        last_arrival: std::time::Instant,
        pushed: std::time::Instant,
        decoded: std::time::Instant,
    ) -> Option<G2gStages> {
        let at = |d: u16| capture + std::time::Duration::from_millis(u64::from(d));
        let (encoded, queued, left) = (
            at(timing.encode_finish_ms),
            at(timing.packetization_finish_ms),
            at(timing.pacer_exit_ms),
        );
        let span = |a: std::time::Instant, b: std::time::Instant| {
            b.checked_duration_since(a).map(|d| d.as_secs_f64() * 1e3)
        };
        Some(G2gStages {
            encode_ms: span(capture, encoded)?,
            queue_ms: span(encoded, queued)?,
            pacing_ms: span(queued, left)?,
            // Whole milliseconds from the sender: a packet may seem to arrive before it left.
            network_ms: span(left, last_arrival).unwrap_or(0.0),
            jitter_buffer_ms: span(last_arrival, pushed)?,
            decode_ms: span(pushed, decoded)?,
        })
    }

    /// Each stage's median over `frames` (`None` for none).
    pub fn median(frames: &[G2gStages]) -> Option<G2gStages> {
        if frames.is_empty() {
            return None;
        }
        let med = |f: fn(&G2gStages) -> f64| {
            let mut v: Vec<f64> = frames.iter().map(f).collect();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        Some(G2gStages {
            encode_ms: med(|s| s.encode_ms),
            queue_ms: med(|s| s.queue_ms),
            pacing_ms: med(|s| s.pacing_ms),
            network_ms: med(|s| s.network_ms),
            jitter_buffer_ms: med(|s| s.jitter_buffer_ms),
            decode_ms: med(|s| s.decode_ms),
        })
    }
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
    /// The codec being decoded (`vp8`, `h264`, `h265`), once a frame came.
    #[serde(default)]
    pub codec: Option<String>,
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
    /// Glass-to-glass latency, 99th percentile over the same window, ms.
    #[serde(default)]
    pub g2g_p99_ms: Option<f64>,
    /// Glass-to-glass latency stage by stage, when the sender sends its stages.
    #[serde(default)]
    pub g2g_stages: Option<G2gStages>,
    /// Picture quality with `--reference`: luma PSNR of the shown pictures against the
    /// source, mean over the last 256 pictures scored, dB.
    #[serde(default)]
    pub psnr_db: Option<f64>,
    /// Its 5th percentile (the worst pictures), dB.
    #[serde(default)]
    pub psnr_p5_db: Option<f64>,
    /// Pictures scored since the start.
    #[serde(default)]
    pub pictures_scored: u64,
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
    /// The receiver process's resident memory at the sample, KiB (a soak watches it stay flat).
    #[serde(default)]
    pub rss_kib: Option<u64>,
    /// The nice value the thread that writes this record runs at, and with it the threads
    /// the process started (`--nice` raised them there, or they run as started: a process
    /// that may not raise its priority says so once in its log).
    #[serde(default)]
    pub nice: Option<i32>,
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// A frame's stages run from one instant to the next and add up to its latency; a
    /// sender's clock that puts a stage after the receiver's instants gives none.
    #[test]
    fn a_frames_stages_add_up_to_its_glass_to_glass_latency() {
        let c = Instant::now();
        let ms = Duration::from_millis;
        let timing = cg_rtp::VideoTiming {
            encode_finish_ms: 8,
            packetization_finish_ms: 10,
            pacer_exit_ms: 25,
            ..Default::default()
        };
        let s = G2gStages::of_frame(c, timing, c + ms(31), c + ms(34), c + ms(40)).unwrap();
        assert_eq!(
            [
                s.encode_ms,
                s.queue_ms,
                s.pacing_ms,
                s.network_ms,
                s.jitter_buffer_ms,
                s.decode_ms
            ],
            [8.0, 2.0, 15.0, 6.0, 3.0, 6.0]
        );
        // Whole milliseconds from the sender: an arrival "before" the pacer exit is 0 ms.
        let s = G2gStages::of_frame(c, timing, c + ms(24), c + ms(30), c + ms(32)).unwrap();
        assert_eq!(s.network_ms, 0.0);
        assert_eq!(
            G2gStages::of_frame(c, timing, c + ms(31), c + ms(20), c + ms(40)),
            None
        );
        let m = G2gStages::median(&[
            G2gStages {
                network_ms: 1.0,
                ..Default::default()
            },
            G2gStages {
                network_ms: 9.0,
                ..Default::default()
            },
            G2gStages {
                network_ms: 4.0,
                ..Default::default()
            },
        ])
        .unwrap();
        assert_eq!(m.network_ms, 4.0);
        assert_eq!(G2gStages::median(&[]), None);
    }
}
