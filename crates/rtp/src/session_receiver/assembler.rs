//! Frame assembly: the receiver's jitter buffer. Packets are held by unwrapped sequence
//! number until a frame is complete (first packet through the marker bit, no gap), then the
//! frame is depacketized and released in order, without added playout delay (interactive
//! video wants frames as soon as they are decodable).
//!
//! Decodability: after a frame is given up (a packet still missing after
//! [`crate::ReceiverConfig::frame_timeout`], or the buffer bound), later delta frames cannot
//! be decoded, so they are dropped until a key frame starts a new chain; the session asks for
//! one with a PLI.
//!
//! Frame starts: VP8 marks them (S=1, PID=0, RFC 7741 §4.2). For H.264/H.265 a packet starts
//! a frame when the packet before it ended a frame (marker bit) or carried another timestamp;
//! with that predecessor missing, a packet carrying key-frame data (IDR/IRAP or parameter
//! sets) that is the first of its timestamp is taken as the start of a key frame.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::codec::{self, PayloadInfo};
use crate::{Codec, Error};

/// A buffered packet.
#[derive(Debug, Clone)]
pub(crate) struct Pkt {
    pub codec: Codec,
    pub ts: u64,
    pub marker: bool,
    pub payload: Bytes,
    pub arrival: Instant,
    pub capture_ntp: Option<u64>,
    /// video-timing, on the last packet of a frame.
    pub video_timing: Option<crate::VideoTiming>,
    pub rtx: bool,
    pub info: PayloadInfo,
}

/// A frame ready for the decoder.
#[derive(Debug, Clone)]
pub(crate) struct Assembled {
    pub codec: Codec,
    pub ts: u64,
    pub data: Vec<u8>,
    pub key_frame: bool,
    pub capture_ntp: Option<u64>,
    pub video_timing: Option<crate::VideoTiming>,
    pub first_arrival: Instant,
    /// The latest arrival of its packets.
    pub last_arrival: Instant,
    pub retransmitted: u32,
}

/// What [`Assembler::insert`] did with a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Inserted {
    Buffered,
    Duplicate,
    /// Older than what was already released or given up.
    Late,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AssemblerStats {
    pub frames: u64,
    /// Frames given up (packets missing) or dropped as undecodable.
    pub frames_lost: u64,
    pub frames_undecodable: u64,
    pub malformed_frames: u64,
}

const RECENT: usize = 4096;

/// What the frame at the head of the buffer waits for.
#[derive(Debug, Clone, Copy)]
enum Head {
    Empty,
    /// A complete frame, `start..=end`, to release.
    Ready(u64, u64),
    /// A complete delta frame with no released predecessor: an earlier key frame may still
    /// be in flight, so it is released only at the deadline.
    FirstDelta {
        start: u64,
        end: u64,
        deadline: Instant,
    },
    /// A packet is missing or the start is unknown: given up at the deadline, if any.
    Blocked {
        deadline: Option<Instant>,
    },
}

#[derive(Debug)]
pub(crate) struct Assembler {
    buf: BTreeMap<u64, Pkt>,
    recent: VecDeque<(u64, u64, bool)>,
    next_start: Option<u64>,
    /// Nothing has been released or given up yet.
    fresh: bool,
    need_key: bool,
    max_packets: usize,
    pub stats: AssemblerStats,
}

impl Assembler {
    pub fn new(max_packets: usize) -> Self {
        Self {
            buf: BTreeMap::new(),
            recent: VecDeque::new(),
            next_start: None,
            fresh: true,
            need_key: true,
            max_packets: max_packets.max(16),
            stats: AssemblerStats::default(),
        }
    }

    pub fn insert(&mut self, seq: u64, p: Pkt) -> Inserted {
        if self.next_start.is_some_and(|s| seq < s) {
            return Inserted::Late;
        }
        if self.buf.contains_key(&seq) {
            return Inserted::Duplicate;
        }
        self.buf.insert(seq, p);
        Inserted::Buffered
    }

    /// Whether a key frame is needed (a PLI is due).
    pub fn needs_key_frame(&self) -> bool {
        self.need_key && !self.fresh
    }

    /// The lowest sequence number still expected (packets below it are of no use).
    pub fn next_start(&self) -> Option<u64> {
        self.next_start
    }

    /// When the frame at the head will be given up (or, with no predecessor known, released
    /// without waiting any longer for an earlier key frame), if an incomplete frame waits
    /// `wait` for a missing packet (the caller's current value: deadlines are computed at
    /// every call, so a frame already waiting gets a changed one).
    pub fn poll_timeout(&self, wait: Duration) -> Option<Instant> {
        match self.head(wait) {
            Head::Blocked { deadline } => deadline,
            Head::FirstDelta { deadline, .. } => Some(deadline),
            Head::Empty | Head::Ready(..) => None,
        }
    }

    /// Releases every frame that is complete, giving up on frames that waited longer than
    /// `wait` for a missing packet.
    pub fn poll(&mut self, now: Instant, wait: Duration, out: &mut Vec<Assembled>) {
        // Each pass either releases/drops something or stops; bounded by the buffer size.
        for _ in 0..=self.buf.len() + 1 {
            match self.head(wait) {
                Head::Empty => return,
                Head::Ready(start, end) => self.release(start, end, out),
                Head::FirstDelta {
                    start,
                    end,
                    deadline,
                } => {
                    if self.skip_to_key_frame() {
                        continue;
                    }
                    if now < deadline && self.buf.len() <= self.max_packets {
                        return;
                    }
                    self.release(start, end, out);
                }
                Head::Blocked { deadline } => {
                    // Without a deadline nothing follows the incomplete head frame but more of
                    // it: there is no later key frame to skip to (and no scan per packet while
                    // a frame streams in).
                    if deadline.is_some() && self.skip_to_key_frame() {
                        continue;
                    }
                    if self.buf.len() <= self.max_packets && deadline.is_none_or(|d| now < d) {
                        return;
                    }
                    self.give_up();
                }
            }
        }
    }

    /// The state of the frame at the head of the buffer.
    fn head(&self, wait: Duration) -> Head {
        let Some((&first, head)) = self.buf.first_key_value() else {
            return Head::Empty;
        };
        let since_head = head.arrival + wait;
        let start = match self.next_start {
            Some(s) => s,
            None => match self.find_start(first) {
                Some(s) => s,
                // Fragments of a frame whose first packet is missing, no predecessor known.
                None => {
                    return Head::Blocked {
                        deadline: Some(since_head),
                    };
                }
            },
        };
        if !self.buf.contains_key(&start) {
            return Head::Blocked {
                deadline: self.gap_deadline(start, wait),
            };
        }
        match self.walk(start) {
            Ok(end) if self.next_start.is_none() && !self.carries_key(start, end) => {
                // With no released predecessor, a delta frame may be overtaken by an earlier
                // key frame still in flight: wait for one until the timeout.
                Head::FirstDelta {
                    start,
                    end,
                    deadline: since_head,
                }
            }
            Ok(end) => Head::Ready(start, end),
            Err(missing) => Head::Blocked {
                deadline: self.gap_deadline(missing, wait),
            },
        }
    }

    /// The deadline of the missing packet `missing`: `wait` after the packet following it
    /// arrived, which is when the gap showed (a retransmission filling part of a longer gap
    /// can push it later, by at most a round trip). `None` while nothing follows the gap: the
    /// frame is still arriving, however long it takes (a large key frame at a low rate can
    /// take over a second), and nothing is known lost.
    fn gap_deadline(&self, missing: u64, wait: Duration) -> Option<Instant> {
        self.buf
            .range(missing..)
            .next()
            .map(|(_, p)| p.arrival + wait)
    }

    /// With the frame at the head incomplete: jumps to a complete key frame further on, if
    /// one has arrived (libwebrtc's frame buffer does the same). The frames before it are
    /// given up at once instead of at the timeout: the key frame does not depend on them,
    /// and showing them late would only delay it.
    fn skip_to_key_frame(&mut self) -> bool {
        let head = self.buf.keys().next().copied();
        let Some(key) = self
            .buf
            .iter()
            .filter(|(s, p)| p.info.key_frame && Some(**s) != head)
            .map(|(s, _)| *s)
            .find(|&s| self.is_start(s) && self.walk(s).is_ok_and(|e| self.carries_key(s, e)))
        else {
            return false;
        };
        let dropped = self.remove_below(key);
        self.stats.frames_lost += dropped.max(1);
        self.next_start = Some(key);
        self.fresh = false;
        tracing::debug!(first = ?head, frames = dropped, key, "incomplete frames skipped for a key frame");
        true
    }

    fn carries_key(&self, start: u64, end: u64) -> bool {
        self.buf.range(start..=end).any(|(_, p)| p.info.key_frame)
    }

    /// The frame from `start`: `Ok(its last sequence number)`, or `Err(the first sequence
    /// number missing)` while it is incomplete.
    fn walk(&self, start: u64) -> Result<u64, u64> {
        let ts = self.buf.get(&start).ok_or(start)?.ts;
        let mut s = start;
        loop {
            match self.buf.get(&s) {
                None => return Err(s),
                // A new timestamp ends the frame even without a marker bit.
                Some(p) if p.ts != ts => return Ok(s - 1),
                Some(p) if p.marker => return Ok(s),
                Some(_) => s += 1,
            }
        }
    }

    fn header_of(&self, seq: u64) -> Option<(u64, bool)> {
        if let Some(p) = self.buf.get(&seq) {
            return Some((p.ts, p.marker));
        }
        self.recent
            .iter()
            .rev()
            .find(|(s, _, _)| *s == seq)
            .map(|&(_, ts, m)| (ts, m))
    }

    fn is_start(&self, seq: u64) -> bool {
        let Some(p) = self.buf.get(&seq) else {
            return false;
        };
        if let Some(s) = p.info.frame_start {
            return s;
        }
        match seq.checked_sub(1).and_then(|prev| self.header_of(prev)) {
            Some((ts, marker)) => ts != p.ts || marker,
            None => {
                // Predecessor unknown: a key frame's first packet of its timestamp.
                p.info.key_frame
                    && self
                        .buf
                        .range(..seq)
                        .next_back()
                        .is_none_or(|(_, q)| q.ts != p.ts)
            }
        }
    }

    fn find_start(&self, from: u64) -> Option<u64> {
        self.buf
            .range(from..)
            .map(|(s, _)| *s)
            .find(|s| self.is_start(*s))
    }

    fn remove_below(&mut self, below: u64) -> u64 {
        let mut frames = 0;
        let mut last_ts = None;
        while let Some((&s, _)) = self.buf.first_key_value() {
            if s >= below {
                break;
            }
            let (_, p) = self
                .buf
                .pop_first()
                .expect("non-empty: just peeked, invariant");
            if last_ts != Some(p.ts) {
                frames += 1;
                last_ts = Some(p.ts);
            }
            self.remember(s, p.ts, p.marker);
        }
        frames
    }

    fn remember(&mut self, seq: u64, ts: u64, marker: bool) {
        if self.recent.len() >= RECENT {
            self.recent.pop_front();
        }
        self.recent.push_back((seq, ts, marker));
    }

    /// Drops the incomplete frame at the head and whatever cannot be decoded without it.
    fn give_up(&mut self) {
        let Some((&first, head)) = self.buf.first_key_value() else {
            return;
        };
        let head_ts = head.ts;
        // The next frame start after the head frame's packets.
        let next = self
            .buf
            .range(first + 1..)
            .filter(|(_, p)| p.ts != head_ts)
            .map(|(s, _)| *s)
            .find(|s| self.is_start(*s));
        let dropped = match next {
            Some(n) => {
                let d = self.remove_below(n);
                self.next_start = Some(n);
                d
            }
            None => {
                // Drop the head timestamp's packets; the rest waits for a start to show.
                let end = self
                    .buf
                    .range(first..)
                    .take_while(|(_, p)| p.ts == head_ts)
                    .map(|(s, _)| *s)
                    .last()
                    .unwrap_or(first);
                let d = self.remove_below(end + 1);
                self.next_start = None;
                d
            }
        };
        self.stats.frames_lost += dropped.max(1);
        tracing::debug!(first, frames = dropped, next = ?self.next_start, "incomplete frames given up");
        self.need_key = true;
        self.fresh = false;
    }

    fn release(&mut self, start: u64, end: u64, out: &mut Vec<Assembled>) {
        // Packets below the frame (fragments of frames passed over while no predecessor was
        // known) can no longer be released: left at the head, they would time out later and
        // be taken for a loss after this frame.
        let stale = self.remove_below(start);
        if stale > 0 {
            self.stats.frames_lost += stale;
            tracing::debug!(
                frames = stale,
                start,
                "fragments before a released frame dropped"
            );
        }
        let mut data = Vec::new();
        let mut key = false;
        let mut rtx = 0;
        let mut ok = true;
        let mut first: Option<(Codec, u64, Option<u64>, Instant)> = None;
        let mut video_timing = None;
        let mut last_arrival: Option<Instant> = None;
        for s in start..=end {
            let Some(p) = self.buf.remove(&s) else {
                ok = false;
                continue;
            };
            self.remember(s, p.ts, p.marker);
            if first.is_none() {
                first = Some((p.codec, p.ts, p.capture_ntp, p.arrival));
            }
            rtx += u32::from(p.rtx);
            video_timing = p.video_timing.or(video_timing);
            last_arrival = Some(last_arrival.map_or(p.arrival, |a| a.max(p.arrival)));
            match codec::depacketize(p.codec, &p.payload, &mut data) {
                Ok(info) => key |= info.key_frame,
                Err(e) => {
                    let _: Error = e;
                    ok = false;
                }
            }
        }
        self.next_start = Some(end + 1);
        self.fresh = false;
        let Some((codec, ts, capture_ntp, first_arrival)) = first else {
            return;
        };
        if !ok {
            self.stats.malformed_frames += 1;
            self.stats.frames_lost += 1;
            self.need_key = true;
            return;
        }
        if self.need_key && !key {
            self.stats.frames_undecodable += 1;
            tracing::debug!(start, ts, "delta frame without its references dropped");
            return;
        }
        if key {
            tracing::debug!(start, end, ts, retransmitted = rtx, "key frame complete");
            self.need_key = false;
        }
        self.stats.frames += 1;
        out.push(Assembled {
            codec,
            ts,
            data,
            key_frame: key,
            capture_ntp,
            video_timing,
            first_arrival,
            last_arrival: last_arrival.unwrap_or(first_arrival),
            retransmitted: rtx,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How long an incomplete frame waits for a missing packet.
    const WAIT: Duration = Duration::from_millis(300);

    fn vp8_frame(key: bool, len: usize, pid: u16) -> Vec<Bytes> {
        let mut f = vec![if key { 0x10 } else { 0x11 }];
        f.extend((1..len).map(|i| i as u8));
        codec::vp8::packetize(&Bytes::from(f), 300, pid).unwrap()
    }

    /// A VP8 packet of timestamp `ts` arriving at `at`.
    fn pkt(payload: &Bytes, ts: u64, marker: bool, at: Instant, rtx: bool) -> Pkt {
        Pkt {
            codec: Codec::Vp8,
            ts,
            marker,
            payload: payload.clone(),
            arrival: at,
            capture_ntp: None,
            video_timing: None,
            rtx,
            info: codec::inspect(Codec::Vp8, payload).unwrap(),
        }
    }

    fn feed(a: &mut Assembler, seq: u64, ts: u64, payloads: &[Bytes], at: Instant, skip: &[u64]) {
        for (i, p) in payloads.iter().enumerate() {
            let s = seq + i as u64;
            if !skip.contains(&s) {
                a.insert(s, pkt(p, ts, i + 1 == payloads.len(), at, false));
            }
        }
    }

    #[test]
    fn frames_are_released_in_order_once_complete() {
        let t0 = Instant::now();
        let mut a = Assembler::new(1000);
        let k = vp8_frame(true, 1000, 0);
        let d = vp8_frame(false, 700, 1);
        let mut out = vec![];
        // delta frame packets first (reordered), then the key frame
        feed(&mut a, 100 + k.len() as u64, 3000, &d, t0, &[]);
        a.poll(t0, WAIT, &mut out);
        assert!(out.is_empty());
        feed(&mut a, 100, 0, &k, t0, &[]);
        a.poll(t0, WAIT, &mut out);
        assert_eq!(out.len(), 2);
        assert!(out[0].key_frame && !out[1].key_frame);
        assert_eq!(out[1].data.len(), 700);
    }

    /// At `t0`: a key frame (timestamp 0), a delta frame d1 (3000) missing its second
    /// packet, a complete delta frame d2 (6000) that depends on it. Returns the assembler,
    /// d1's first sequence number, d1's payloads and the first sequence number after d2.
    fn key_then_broken_delta(t0: Instant) -> (Assembler, u64, Vec<Bytes>, u64) {
        let mut a = Assembler::new(1000);
        let k = vp8_frame(true, 1000, 0);
        feed(&mut a, 0, 0, &k, t0, &[]);
        let n = k.len() as u64;
        let d1 = vp8_frame(false, 900, 1);
        feed(&mut a, n, 3000, &d1, t0, &[n + 1]);
        let d2 = vp8_frame(false, 900, 2);
        let n2 = n + d1.len() as u64;
        feed(&mut a, n2, 6000, &d2, t0, &[]);
        (a, n, d1, n2 + d2.len() as u64)
    }

    #[test]
    fn missing_packet_holds_the_frame_then_gives_up_and_waits_for_a_key_frame() {
        let t0 = Instant::now();
        let (mut a, _, _, s) = key_then_broken_delta(t0);
        let mut out = vec![];
        a.poll(t0, WAIT, &mut out);
        assert_eq!(out.len(), 1, "key frame only; d1 incomplete blocks d2");
        assert!(!a.needs_key_frame());
        a.poll(t0 + Duration::from_millis(301), WAIT, &mut out);
        assert_eq!(out.len(), 1, "d2 undecodable without d1");
        assert!(a.needs_key_frame());
        assert_eq!(a.stats.frames_lost, 1);
        assert_eq!(a.stats.frames_undecodable, 1);
        let k2 = vp8_frame(true, 500, 3);
        feed(&mut a, s, 9000, &k2, t0 + Duration::from_millis(310), &[]);
        a.poll(t0 + Duration::from_millis(310), WAIT, &mut out);
        assert_eq!(out.len(), 2);
        assert!(!a.needs_key_frame());
    }

    #[test]
    fn a_complete_key_frame_is_not_held_behind_an_incomplete_frame() {
        let t0 = Instant::now();
        // d1 loses a packet; d2 is complete but depends on d1; then a key frame arrives.
        let (mut a, n, d1, n3) = key_then_broken_delta(t0);
        let mut out = vec![];
        let k2 = vp8_frame(true, 1500, 3);
        let t1 = t0 + Duration::from_millis(50);
        feed(&mut a, n3, 9000, &k2, t1, &[]);
        a.poll(t1, WAIT, &mut out);
        assert_eq!(
            out.len(),
            2,
            "the second key frame at once, not after the timeout"
        );
        assert!(out[1].key_frame && out[1].ts == 9000);
        assert_eq!(a.stats.frames_lost, 2, "d1 and d2 passed over");
        assert!(!a.needs_key_frame());
        assert_eq!(a.poll_timeout(WAIT), None, "nothing left to time out");
        // The repair of d1 arriving now is late, and the chain goes on.
        let late = pkt(&d1[1], 3000, false, t1, true);
        assert_eq!(a.insert(n + 1, late), Inserted::Late);
        let d3 = vp8_frame(false, 600, 4);
        feed(&mut a, n3 + k2.len() as u64, 12000, &d3, t1, &[]);
        a.poll(t1, WAIT, &mut out);
        assert_eq!(out.len(), 3);
    }

    #[test]
    fn fragments_passed_over_do_not_time_out_after_the_key_frame() {
        // A fresh receiver (no predecessor known) gets the tail of a frame whose first
        // packet was lost, then a key frame: the key frame is released, and the tail must
        // not be given up later as if a frame after the key frame were lost.
        let t0 = Instant::now();
        let mut a = Assembler::new(1000);
        let mut out = vec![];
        let d = vp8_frame(false, 900, 7);
        feed(&mut a, 10, 0, &d, t0, &[10]);
        let k = vp8_frame(true, 1000, 8);
        let s = 10 + d.len() as u64;
        feed(&mut a, s, 3000, &k, t0, &[]);
        a.poll(t0, WAIT, &mut out);
        assert_eq!(out.len(), 1);
        assert!(out[0].key_frame);
        let d2 = vp8_frame(false, 700, 9);
        let s2 = s + k.len() as u64;
        let t1 = t0 + Duration::from_millis(400);
        feed(&mut a, s2, 6000, &d2, t1, &[s2 + 1]);
        a.poll(t1, WAIT, &mut out);
        assert_eq!(out.len(), 1, "d2 waits for its missing packet");
        assert!(
            !a.needs_key_frame(),
            "no loss declared for the stale fragment"
        );
        assert_eq!(a.stats.frames_lost, 1, "the fragment's frame counted once");
    }

    #[test]
    fn a_frame_still_arriving_is_not_timed_out_but_a_gap_is() {
        // A 100-packet frame trickling in over 1.5 s (a large frame at a low pacing rate)
        // is waited for; once a packet of it is missing and a later one has arrived, the
        // timeout runs from that arrival.
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let mut a = Assembler::new(1000);
        let mut out = vec![];
        let k = vp8_frame(true, 500, 0);
        feed(&mut a, 0, 0, &k, t0, &[]);
        a.poll(t0, WAIT, &mut out);
        let s = k.len() as u64;
        let big = vp8_frame(false, 296 * 100, 1);
        assert_eq!(big.len(), 100);
        for (i, p) in big.iter().enumerate().take(99) {
            let at = ms(15 * i as u64);
            let p = pkt(p, 3000, false, at, false);
            assert_eq!(a.insert(s + i as u64, p), Inserted::Buffered);
            a.poll(at, WAIT, &mut out);
            assert_eq!(a.poll_timeout(WAIT), None, "no gap, no deadline");
        }
        a.poll(ms(2000), WAIT, &mut out);
        assert_eq!(out.len(), 1);
        assert!(!a.needs_key_frame(), "not given up while arriving");
        // The marker packet is lost: the next frame shows the gap at 2.1 s.
        let next = vp8_frame(false, 300, 2);
        feed(&mut a, s + 100, 6000, &next, ms(2100), &[]);
        a.poll(ms(2100), WAIT, &mut out);
        assert_eq!(a.poll_timeout(WAIT), Some(ms(2400)));
        a.poll(ms(2399), WAIT, &mut out);
        assert!(!a.needs_key_frame());
        a.poll(ms(2400), WAIT, &mut out);
        assert!(a.needs_key_frame(), "given up 300 ms after the gap showed");
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn duplicates_and_late_packets_are_refused() {
        let t0 = Instant::now();
        let mut a = Assembler::new(1000);
        let k = vp8_frame(true, 100, 0);
        feed(&mut a, 10, 0, &k, t0, &[]);
        let p = pkt(&k[0], 0, true, t0, false);
        assert_eq!(a.insert(10, p.clone()), Inserted::Duplicate);
        a.poll(t0, WAIT, &mut vec![]);
        assert_eq!(a.insert(10, p), Inserted::Late);
    }
}
