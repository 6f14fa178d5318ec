//! A paced test flow: [`PacedSource`] sends frames of pseudo-random bytes at a constant rate
//! and measures its own pacing error; [`FrameSink`] checks that every datagram arrives with the
//! expected ECN and that every frame reassembles bit-exact.
//!
//! Used by the loopback tests and the `pacing` example, and usable from netlab to calibrate a
//! path (ECN marking, loss, timer quality) without the RTP stack.
//!
//! Datagram layout (big-endian): `seq u64 | frame u32 | chunk u16 | chunks u16 | frame_len u32
//! | offset u32`, then up to `payload − 24` bytes of the frame from `offset`. Frame `f`'s bytes are drawn from
//! `Rng::new(seed ^ f)`, so the sink can regenerate and compare them.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::{BufMut, BytesMut};
use cg_types::{Bitrate, DataSize, Ecn, Rng};

use crate::session::Session;
use crate::socket::{Datagram, Transmit};
use crate::stats::LatencyHistogram;

const HEADER: usize = 24;
/// Incomplete frames the sink keeps before it gives the oldest up.
const MAX_OPEN_FRAMES: usize = 64;
/// Largest frame the sink accepts (bounds the memory a hostile header can claim).
const MAX_FRAME: usize = 16 << 20;

/// What [`PacedSource`] sends.
#[derive(Debug, Clone)]
pub struct ProbeConfig {
    /// Sending rate of UDP payload bytes. Default 5 Mb/s.
    pub rate: Bitrate,
    /// UDP payload per datagram (header included). Default 1200 bytes; at least 25.
    pub payload: DataSize,
    /// Frame size in bytes. Default 20 833 (5 Mb/s at 30 frames/s); at most 16 MiB.
    pub frame: DataSize,
    /// ECN code point of every datagram. Default ECT(1).
    pub ecn: Ecn,
    /// Frames to send; `None` sends forever. Default 150 (5 s of 30 frames/s).
    pub frames: Option<u32>,
    /// Seed of the frame contents. Default 1.
    pub seed: u64,
}

impl Default for ProbeConfig {
    fn default() -> Self {
        ProbeConfig {
            rate: Bitrate::mbps(5),
            payload: DataSize::bytes(1200),
            frame: DataSize::bytes(20_833),
            ecn: Ecn::Ect1,
            frames: Some(150),
            seed: 1,
        }
    }
}

/// Sends a [`ProbeConfig`] flow: datagram `k` is due at `start + k × payload / rate`, where
/// `start` is the `now` of the first [`Session::poll_transmit`].
#[derive(Debug)]
pub struct PacedSource {
    config: ProbeConfig,
    gap: Duration,
    chunk_len: usize,
    start: Option<Instant>,
    seq: u64,
    frame: u32,
    chunk: u16,
    frame_bytes: Vec<u8>,
    lateness: LatencyHistogram,
}

impl PacedSource {
    /// A source that starts at the first `poll_transmit`.
    pub fn new(config: ProbeConfig) -> Self {
        let payload =
            (config.payload.as_bytes() as usize).clamp(HEADER + 1, crate::socket::MAX_UDP_PAYLOAD);
        let config = ProbeConfig {
            payload: DataSize::bytes(payload as u64),
            ..config
        };
        let gap = config
            .rate
            .time_to_send(config.payload)
            .unwrap_or(Duration::MAX);
        let mut source = PacedSource {
            chunk_len: payload - HEADER,
            gap,
            start: None,
            seq: 0,
            frame: 0,
            chunk: 0,
            frame_bytes: Vec::new(),
            lateness: LatencyHistogram::new(),
            config,
        };
        source.frame_bytes = frame_bytes(source.config.seed, 0, source.frame_len());
        source
    }

    /// Datagrams sent so far.
    pub fn sent(&self) -> u64 {
        self.seq
    }

    /// Datagrams the whole flow has (`None` if endless).
    pub fn total(&self) -> Option<u64> {
        let per_frame = self.chunks() as u64;
        self.config.frames.map(|f| u64::from(f) * per_frame)
    }

    /// Pacing error: for every datagram, the time it was handed out minus its schedule.
    pub fn lateness(&self) -> &LatencyHistogram {
        &self.lateness
    }

    fn frame_len(&self) -> usize {
        (self.config.frame.as_bytes() as usize)
            .clamp(1, MAX_FRAME.min(self.chunk_len * usize::from(u16::MAX)))
    }

    fn chunks(&self) -> u16 {
        // `frame_len` is clamped to at most `u16::MAX` chunks.
        self.frame_len().div_ceil(self.chunk_len) as u16
    }

    fn finished(&self) -> bool {
        self.config.frames.is_some_and(|f| self.frame >= f)
    }

    /// When the next datagram is due; `None` before the first `poll_transmit` (which starts
    /// the schedule) and after the last datagram.
    fn next_due(&self) -> Option<Instant> {
        if self.finished() {
            return None;
        }
        let offset = self.gap.checked_mul(u32::try_from(self.seq).ok()?)?;
        self.start?.checked_add(offset)
    }
}

impl Session for PacedSource {
    type Event = ();

    fn handle_datagram(&mut self, _: &Datagram<'_>, _: Instant) {}

    fn handle_timeout(&mut self, _: Instant) {}

    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        self.start.get_or_insert(now);
        let due = self.next_due()?;
        if due > now {
            return None;
        }
        self.lateness.record(now - due);
        let chunks = self.chunks();
        let from = usize::from(self.chunk) * self.chunk_len;
        let to = (from + self.chunk_len).min(self.frame_bytes.len());
        let mut buf = BytesMut::with_capacity(HEADER + to - from);
        buf.put_u64(self.seq);
        buf.put_u32(self.frame);
        buf.put_u16(self.chunk);
        buf.put_u16(chunks);
        buf.put_u32(self.frame_bytes.len() as u32);
        buf.put_u32(from as u32);
        buf.put_slice(&self.frame_bytes[from..to]);
        self.seq += 1;
        self.chunk += 1;
        if self.chunk == chunks {
            self.chunk = 0;
            self.frame += 1;
            if !self.finished() {
                self.frame_bytes = frame_bytes(self.config.seed, self.frame, self.frame_len());
            }
        }
        Some(Transmit {
            payload: buf.freeze(),
            ecn: Some(self.config.ecn),
            destination: None,
        })
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        self.next_due()
    }
}

/// What a [`FrameSink`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeEvent {
    /// Frame `frame` was reassembled and compared with what the source sent.
    Frame {
        /// Its number.
        frame: u32,
        /// Every byte matched.
        intact: bool,
    },
}

/// Receives a [`PacedSource`] flow: counts datagrams by ECN, reassembles and checks frames.
#[derive(Debug)]
pub struct FrameSink {
    seed: u64,
    open: BTreeMap<u32, OpenFrame>,
    events: std::collections::VecDeque<ProbeEvent>,
    counts: SinkCounts,
}

/// What a [`FrameSink`] has seen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SinkCounts {
    /// Probe datagrams received.
    pub datagrams: u64,
    /// … by ECN code point, indexed by [`Ecn::bits`]; datagrams without ECN are not counted here.
    pub ecn: [u64; 4],
    /// Datagrams too short or inconsistent to be probe datagrams.
    pub malformed: u64,
    /// Datagrams whose `seq` was not above the highest seen (reordered or duplicated).
    pub out_of_order: u64,
    /// Frames reassembled bit-exact.
    pub frames_intact: u64,
    /// Frames reassembled with wrong bytes.
    pub frames_corrupt: u64,
    /// Frames given up incomplete (more than 64 open at once).
    pub frames_abandoned: u64,
    /// Sum over datagrams of (driver read time − kernel arrival time).
    pub queueing: Duration,
    highest_seq: Option<u64>,
}

#[derive(Debug)]
struct OpenFrame {
    bytes: Vec<u8>,
    have: Vec<bool>,
    missing: usize,
}

impl FrameSink {
    /// A sink for a source with `seed`.
    pub fn new(seed: u64) -> Self {
        FrameSink {
            seed,
            open: BTreeMap::new(),
            events: Default::default(),
            counts: SinkCounts::default(),
        }
    }

    /// Counts so far.
    pub fn counts(&self) -> SinkCounts {
        self.counts
    }

    fn accept(&mut self, p: &[u8]) -> Option<()> {
        let seq = u64::from_be_bytes(p.get(0..8)?.try_into().ok()?);
        let frame = u32::from_be_bytes(p.get(8..12)?.try_into().ok()?);
        let chunk = usize::from(u16::from_be_bytes(p.get(12..14)?.try_into().ok()?));
        let chunks = usize::from(u16::from_be_bytes(p.get(14..16)?.try_into().ok()?));
        let frame_len = u32::from_be_bytes(p.get(16..20)?.try_into().ok()?) as usize;
        let from = u32::from_be_bytes(p.get(20..24)?.try_into().ok()?) as usize;
        let data = &p[HEADER..];
        if chunk >= chunks
            || data.is_empty()
            || frame_len > MAX_FRAME
            || from.checked_add(data.len())? > frame_len
        {
            return None;
        }
        match self.counts.highest_seq {
            Some(h) if seq <= h => self.counts.out_of_order += 1,
            _ => self.counts.highest_seq = Some(seq),
        }
        if !self.open.contains_key(&frame) && self.open.len() >= MAX_OPEN_FRAMES {
            self.open.pop_first();
            self.counts.frames_abandoned += 1;
        }
        let open = self.open.entry(frame).or_insert_with(|| OpenFrame {
            bytes: vec![0; frame_len],
            have: vec![false; chunks],
            missing: chunks,
        });
        if open.bytes.len() != frame_len || open.have.len() != chunks {
            return None;
        }
        if !open.have[chunk] {
            open.have[chunk] = true;
            open.missing -= 1;
            open.bytes[from..from + data.len()].copy_from_slice(data);
        }
        if open.missing == 0 {
            let done = self.open.remove(&frame)?;
            let intact = done.bytes == frame_bytes(self.seed, frame, frame_len);
            if intact {
                self.counts.frames_intact += 1;
            } else {
                self.counts.frames_corrupt += 1;
            }
            self.events.push_back(ProbeEvent::Frame { frame, intact });
        }
        Some(())
    }
}

impl Session for FrameSink {
    type Event = ProbeEvent;

    fn handle_datagram(&mut self, d: &Datagram<'_>, now: Instant) {
        self.counts.queueing += now.saturating_duration_since(d.arrival);
        if self.accept(d.payload).is_none() {
            self.counts.malformed += 1;
            return;
        }
        self.counts.datagrams += 1;
        if let Some(ecn) = d.ecn {
            self.counts.ecn[usize::from(ecn.bits())] += 1;
        }
    }

    fn handle_timeout(&mut self, _: Instant) {}

    fn poll_transmit(&mut self, _: Instant) -> Option<Transmit> {
        None
    }

    fn poll_event(&mut self) -> Option<ProbeEvent> {
        self.events.pop_front()
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        None
    }
}

/// The bytes of frame `frame`.
fn frame_bytes(seed: u64, frame: u32, len: usize) -> Vec<u8> {
    let mut rng = Rng::new(seed ^ (u64::from(frame) << 20));
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        out.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    out.truncate(len);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;

    fn datagram(payload: &[u8], now: Instant) -> Datagram<'_> {
        Datagram {
            source: SocketAddr::from(([127, 0, 0, 1], 1)),
            ecn: Some(Ecn::Ect1),
            kernel_time: None,
            arrival: now,
            payload,
        }
    }

    fn small() -> ProbeConfig {
        ProbeConfig {
            frame: DataSize::bytes(5000),
            frames: Some(3),
            ..ProbeConfig::default()
        }
    }

    #[test]
    fn source_paces_at_the_configured_rate() {
        let mut src = PacedSource::new(small());
        assert_eq!(src.poll_timeout(), None, "not started");
        let first = Instant::now();
        assert!(src.poll_transmit(first).is_some());
        assert!(
            src.poll_transmit(first).is_none(),
            "the next one is not due yet"
        );
        let gap = src.poll_timeout().unwrap() - first;
        assert_eq!(gap, Duration::from_micros(1920), "1200 B at 5 Mb/s");
    }

    #[test]
    fn frames_reassemble_bit_exact_even_reordered() {
        let mut src = PacedSource::new(small());
        let total = src.total().unwrap();
        let mut now = Instant::now();
        let mut sent = Vec::new();
        while let Some(t) = src.poll_transmit(now) {
            sent.push(t.payload);
            now += Duration::from_millis(2);
        }
        assert_eq!(sent.len() as u64, total);
        sent.swap(0, 3);
        let mut sink = FrameSink::new(1);
        for p in &sent {
            sink.handle_datagram(&datagram(p, now), now);
        }
        let c = sink.counts();
        assert_eq!(
            (c.frames_intact, c.frames_corrupt, c.datagrams, c.ecn[1]),
            (3, 0, total, total)
        );
        assert_eq!(c.out_of_order, 3);
    }

    #[test]
    fn a_flipped_byte_is_caught() {
        let mut src = PacedSource::new(small());
        let t0 = Instant::now();
        let now = t0 + Duration::from_secs(1);
        let first = src
            .poll_transmit(t0)
            .expect("the first datagram is due at once");
        let mut sink = FrameSink::new(1);
        sink.handle_datagram(&datagram(&first.payload, t0), t0);
        for (i, t) in std::iter::from_fn(|| src.poll_transmit(now)).enumerate() {
            let mut p = t.payload.to_vec();
            if i == 0 {
                p[HEADER + 7] ^= 0x40;
            }
            sink.handle_datagram(&datagram(&p, now), now);
        }
        assert_eq!(
            (sink.counts().frames_intact, sink.counts().frames_corrupt),
            (2, 1)
        );
        assert_eq!(
            sink.poll_event(),
            Some(ProbeEvent::Frame {
                frame: 0,
                intact: false
            })
        );
    }

    #[test]
    fn hostile_headers_are_counted_not_trusted() {
        let mut sink = FrameSink::new(1);
        let now = Instant::now();
        let mut p = vec![0u8; 40];
        sink.handle_datagram(&datagram(&p[..10], now), now); // short
        p[14..16].copy_from_slice(&2u16.to_be_bytes());
        p[16..20].copy_from_slice(&u32::MAX.to_be_bytes()); // absurd frame length
        sink.handle_datagram(&datagram(&p, now), now);
        p[16..20].copy_from_slice(&10u32.to_be_bytes()); // data overruns the frame
        sink.handle_datagram(&datagram(&p, now), now);
        assert_eq!(sink.counts().malformed, 3);
        assert_eq!(sink.counts().datagrams, 0);
    }

    #[test]
    fn random_bytes_never_panic_the_sink() {
        let mut rng = Rng::new(7);
        let mut sink = FrameSink::new(1);
        let now = Instant::now();
        for _ in 0..100_000 {
            let len = rng.below(64) as usize;
            let mut p: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            if len >= HEADER && rng.bernoulli(0.5) {
                // Plausible headers: small counts and lengths, so some get past the checks.
                p[12..14].copy_from_slice(&(rng.below(4) as u16).to_be_bytes());
                p[14..16].copy_from_slice(&(rng.below(4) as u16).to_be_bytes());
                p[16..20].copy_from_slice(&(rng.below(200) as u32).to_be_bytes());
                p[20..24].copy_from_slice(&(rng.below(200) as u32).to_be_bytes());
            }
            sink.handle_datagram(&datagram(&p, now), now);
        }
        let c = sink.counts();
        assert_eq!(c.datagrams + c.malformed, 100_000);
        assert!(sink.open.len() <= MAX_OPEN_FRAMES);
    }

    #[test]
    fn open_frames_are_bounded() {
        let mut sink = FrameSink::new(1);
        let now = Instant::now();
        for frame in 0..200u32 {
            let mut p = vec![0u8; HEADER + 4];
            p[8..12].copy_from_slice(&frame.to_be_bytes());
            p[14..16].copy_from_slice(&2u16.to_be_bytes());
            p[16..20].copy_from_slice(&8u32.to_be_bytes());
            sink.handle_datagram(&datagram(&p, now), now);
        }
        assert!(sink.open.len() <= MAX_OPEN_FRAMES);
        assert_eq!(sink.counts().frames_abandoned, 200 - MAX_OPEN_FRAMES as u64);
    }
}
