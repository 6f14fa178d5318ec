//! The receiver's bookkeeping across statistics samples and sender sessions.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::mpsc::Receiver as StdReceiver;
use std::time::{Duration, Instant};

use cg_media::{DecodedFrame, Decoder, HostTime};
use cg_net::DriverHandle;
use tokio::sync::mpsc;

use crate::has_receiver::HasReceiver;
use crate::stats::{FreezeRecord, G2gStages};
use crate::{ReceiverConfig, Stats};

/// Bookkeeping across samples and sessions.
pub(crate) struct State {
    start: Instant,
    records: StdReceiver<DecodedFrame>,
    peer: Option<String>,
    sessions: u64,
    pub(crate) frames_received: u64,
    /// Totals of the sessions that ended (a new session's counters start at zero).
    base: Totals,
    current: Totals,
    last_bytes: u64,
    last_expected: (u64, i64),
    last_sample: Instant,
    freezes_seen: u64,
    /// When the frames of the last second were decoded.
    decoded_at: VecDeque<HostTime>,
    /// Frames handed to the decoder with the sender's stages, oldest first: (index, capture,
    /// the sender's timing, last arrival).
    in_decoder: VecDeque<(u64, Instant, cg_rtp::VideoTiming, Instant)>,
    pub(crate) last: Stats,
}

/// Frames of [`State::in_decoder`] kept: more than a decoder holds.
const IN_DECODER: usize = 256;

#[derive(Debug, Clone, Copy, Default)]
struct Totals {
    media_packets: u64,
    retransmissions: u64,
    lost: i64,
    ecn: [u64; 4],
    frames_lost: u64,
    plis: u64,
    nacks: u64,
}

impl Totals {
    fn plus(self, o: Totals) -> Totals {
        let mut ecn = self.ecn;
        for (a, b) in ecn.iter_mut().zip(o.ecn) {
            *a += b;
        }
        Totals {
            media_packets: self.media_packets + o.media_packets,
            retransmissions: self.retransmissions + o.retransmissions,
            lost: self.lost + o.lost,
            ecn,
            frames_lost: self.frames_lost + o.frames_lost,
            plis: self.plis + o.plis,
            nacks: self.nacks + o.nacks,
        }
    }
}

impl State {
    pub(crate) fn new(_config: &ReceiverConfig, records: StdReceiver<DecodedFrame>) -> State {
        let start = Instant::now();
        State {
            start,
            records,
            peer: None,
            sessions: 0,
            frames_received: 0,
            base: Totals::default(),
            current: Totals::default(),
            last_bytes: 0,
            last_expected: (0, 0),
            last_sample: start,
            freezes_seen: 0,
            decoded_at: VecDeque::new(),
            in_decoder: VecDeque::new(),
            last: Stats::default(),
        }
    }

    /// Keeps a frame's sender stages until it is decoded (as frame `frames_received`).
    pub(crate) fn arrived(&mut self, f: &cg_rtp::ReceivedFrame) {
        if let (Some(capture), Some(timing)) = (f.capture_time, f.sender_timing) {
            if self.in_decoder.len() == IN_DECODER {
                self.in_decoder.pop_front();
            }
            self.in_decoder
                .push_back((self.frames_received, capture, timing, f.last_arrival));
        }
    }

    /// The stages of decoded frame `r`, if it carried the sender's.
    fn stages_of(&mut self, r: &DecodedFrame) -> Option<G2gStages> {
        while self.in_decoder.front().is_some_and(|e| e.0 < r.index) {
            self.in_decoder.pop_front();
        }
        let &(index, capture, timing, last_arrival) = self.in_decoder.front()?;
        (index == r.index).then_some(())?;
        self.in_decoder.pop_front();
        G2gStages::of_frame(
            capture,
            timing,
            last_arrival,
            r.pushed_at.to_instant(),
            r.decoded_at.to_instant(),
        )
    }

    pub(crate) fn new_session(&mut self, peer: SocketAddr) {
        self.base = self.base.plus(self.current);
        self.current = Totals::default();
        self.last_bytes = 0;
        self.last_expected = (0, 0);
        self.peer = Some(peer.to_string());
        self.sessions += 1;
    }

    pub(crate) fn emit_idle(&mut self, decoder: &Decoder, tx: &Option<mpsc::Sender<Stats>>) {
        self.peer = None;
        let stats = self.compose(decoder, None, 0);
        self.publish(stats, tx);
    }

    pub(crate) async fn sample<S: HasReceiver>(
        &mut self,
        handle: &DriverHandle<S>,
        decoder: &Decoder,
        tx: &Option<mpsc::Sender<Stats>>,
        foreign: u64,
    ) {
        let Ok(snapshot) = handle
            .query(|s: &mut S, _| {
                let s = s.receiver();
                let est = s.estimator().map(|e| (e.estimate(), e.stats()));
                (s.stats().clone(), est)
            })
            .await
        else {
            return;
        };
        let stats = self.compose(decoder, Some(snapshot), foreign);
        self.publish(stats, tx);
    }

    fn publish(&mut self, stats: Stats, tx: &Option<mpsc::Sender<Stats>>) {
        if let Some(tx) = tx {
            let _ = tx.try_send(stats.clone());
        }
        self.last = stats;
    }

    #[allow(clippy::type_complexity)]
    fn compose(
        &mut self,
        decoder: &Decoder,
        session: Option<(
            cg_rtp::ReceiverStats,
            Option<(cg_types::Bitrate, Vec<(&'static str, f64)>)>,
        )>,
        foreign: u64,
    ) -> Stats {
        let now = Instant::now();
        let dt = now
            .saturating_duration_since(self.last_sample)
            .as_secs_f64();
        self.last_sample = now;
        let mut g2g: Vec<f64> = Vec::new();
        let mut stages = Vec::new();
        while let Ok(r) = self.records.try_recv() {
            if let Some(l) = r.glass_to_glass {
                g2g.push(l.as_secs_f64() * 1e3);
            }
            stages.extend(self.stages_of(&r));
            self.decoded_at.push_back(r.decoded_at);
        }
        g2g.sort_by(f64::total_cmp);
        let dec = decoder.stats();
        let new = dec.freezes.saturating_sub(self.freezes_seen);
        self.freezes_seen = dec.freezes;
        let host_now = HostTime::now();
        // The decoded frame rate: frames shown over the last second.
        while self.decoded_at.front().is_some_and(|&t| {
            host_now.checked_duration_since(t).unwrap_or_default() > Duration::from_secs(1)
        }) {
            self.decoded_at.pop_front();
        }
        let new_freezes = dec
            .recent_freezes
            .iter()
            .rev()
            .take(usize::try_from(new).unwrap_or(usize::MAX))
            .rev()
            .map(|f| FreezeRecord {
                start_t: self.t_of(f.started_at, host_now, now),
                duration_ms: f.duration.as_secs_f64() * 1e3,
            })
            .collect();
        let mut s = Stats {
            t: now.saturating_duration_since(self.start).as_secs_f64(),
            mono_ns: host_now.as_nanos(),
            peer: self.peer.clone(),
            sessions: self.sessions,
            frames_received: self.frames_received,
            frames_decoded: dec.frames_decoded,
            decode_errors: dec.decode_errors,
            codec: (dec.frames_pushed > 0).then(|| dec.codec.name().to_owned()),
            freezes: dec.freezes,
            freeze_total_ms: dec.freeze_total.as_secs_f64() * 1e3,
            longest_freeze_ms: dec.longest_freeze.as_secs_f64() * 1e3,
            webrtc_freezes: dec.webrtc_freezes,
            webrtc_freeze_total_ms: dec.webrtc_freeze_total.as_secs_f64() * 1e3,
            resolution_switches: dec.resolution_switches,
            stall_ms: dec.current_stall.map(|d| d.as_secs_f64() * 1e3),
            new_freezes,
            g2g_ms: (!g2g.is_empty()).then(|| g2g[g2g.len() / 2]),
            g2g_max_ms: g2g.last().copied(),
            g2g_p95_ms: dec.p95_glass_to_glass.map(|d| d.as_secs_f64() * 1e3),
            g2g_p99_ms: dec.p99_glass_to_glass.map(|d| d.as_secs_f64() * 1e3),
            g2g_stages: G2gStages::median(&stages),
            psnr_db: dec.quality.map(|q| q.psnr_mean_db),
            psnr_p5_db: dec.quality.map(|q| q.psnr_p5_db),
            pictures_scored: dec.quality.map_or(0, |q| q.scored),
            width: dec.last_size.map_or(0, |(w, _)| w),
            height: dec.last_size.map_or(0, |(_, h)| h),
            decoded_fps: self.decoded_at.len() as u32,
            foreign_datagrams: foreign,
            rss_kib: cg_host::rss_kib(None),
            nice: cg_host::thread_nice(),
            ..Stats::default()
        };
        if let Some((r, est)) = session {
            s.playout_delay_ms = r
                .playout_delay
                .map(|d| [d.min.as_secs_f64() * 1e3, d.max.as_secs_f64() * 1e3]);
            self.current = Totals {
                media_packets: r.media_packets,
                retransmissions: r.retransmissions,
                lost: r.cumulative_lost,
                ecn: r.ecn,
                frames_lost: r.frames_lost + r.frames_undecodable,
                plis: r.plis_sent,
                nacks: r.nacks_sent,
            };
            s.recv_rate_bps = if dt > 0.0 {
                (r.rtp_bytes.saturating_sub(self.last_bytes) as f64 * 8.0 / dt) as u64
            } else {
                0
            };
            self.last_bytes = r.rtp_bytes;
            let got = r.media_packets.saturating_sub(self.last_expected.0);
            let lost = (r.cumulative_lost - self.last_expected.1).max(0) as u64;
            self.last_expected = (r.media_packets, r.cumulative_lost);
            s.loss = (got + lost > 0).then(|| lost as f64 / (got + lost) as f64);
            s.jitter_ms = r.jitter.as_secs_f64() * 1e3;
            s.bye_received = r.bye_received;
            if let Some((estimate, extra)) = est {
                s.remb_bps = Some(estimate.as_bps());
                s.extra = extra.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
            }
        }
        let t = self.base.plus(self.current);
        s.media_packets = t.media_packets;
        s.retransmissions = t.retransmissions;
        s.lost_packets = t.lost;
        s.ecn = t.ecn;
        s.frames_lost = t.frames_lost;
        s.plis_sent = t.plis;
        s.nacks_sent = t.nacks;
        s
    }

    /// Seconds since start of a host-clock reading.
    fn t_of(&self, at: HostTime, host_now: HostTime, now: Instant) -> f64 {
        let since_start = now.saturating_duration_since(self.start).as_secs_f64();
        match host_now.checked_duration_since(at) {
            Some(ago) => since_start - ago.as_secs_f64(),
            None => since_start,
        }
    }
}
