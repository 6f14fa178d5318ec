//! Bounded history of sent media packets, for retransmission on NACK (RFC 4585 §6.2.1,
//! RFC 4588).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use bytes::Bytes;

/// What is needed to rebuild a media packet as an RTX packet.
#[derive(Debug, Clone)]
pub(crate) struct Stored {
    /// Unwrapped RTP sequence number.
    pub seq: u64,
    pub timestamp: u32,
    pub marker: bool,
    pub capture_ntp: Option<u64>,
    /// video-timing as first sent, on a frame's last packet.
    pub video_timing: Option<crate::VideoTiming>,
    pub payload: Bytes,
    pub sent: Instant,
    pub last_retransmit: Option<Instant>,
}

/// Packets by sequence number, bounded in count and age.
#[derive(Debug)]
pub(crate) struct History {
    packets: VecDeque<Stored>,
    max_packets: usize,
    max_age: Duration,
}

impl History {
    pub fn new(max_packets: usize, max_age: Duration) -> Self {
        Self {
            packets: VecDeque::new(),
            max_packets: max_packets.max(1),
            max_age,
        }
    }

    /// Stores a sent packet (sequence numbers must increase).
    pub fn insert(&mut self, p: Stored) {
        if self.packets.back().is_some_and(|b| b.seq >= p.seq) {
            return;
        }
        while self.packets.len() >= self.max_packets {
            self.packets.pop_front();
        }
        self.packets.push_back(p);
    }

    /// Forgets packets older than the age bound.
    pub fn expire(&mut self, now: Instant) {
        while self
            .packets
            .front()
            .is_some_and(|p| now.saturating_duration_since(p.sent) > self.max_age)
        {
            self.packets.pop_front();
        }
    }

    /// The packet with this unwrapped sequence number, if still held and not retransmitted
    /// within `min_interval` (a NACK storm must not multiply the traffic).
    pub fn take_for_retransmit(
        &mut self,
        seq: u64,
        now: Instant,
        min_interval: Duration,
    ) -> Option<Stored> {
        let first = self.packets.front()?.seq;
        let idx = usize::try_from(seq.checked_sub(first)?).ok()?;
        let p = self.packets.get_mut(idx)?;
        if p.seq != seq {
            return None;
        }
        if p.last_retransmit
            .is_some_and(|t| now.saturating_duration_since(t) < min_interval)
        {
            return None;
        }
        p.last_retransmit = Some(now);
        Some(p.clone())
    }

    /// The newest packet held, for payload padding (not counted as a retransmission: a NACK
    /// for it is still served at once).
    pub fn newest(&self) -> Option<Stored> {
        self.packets.back().cloned()
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.packets.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(seq: u64, sent: Instant) -> Stored {
        Stored {
            seq,
            timestamp: 0,
            marker: false,
            capture_ntp: None,
            video_timing: None,
            payload: Bytes::new(),
            sent,
            last_retransmit: None,
        }
    }

    #[test]
    fn bounded_by_count_and_age() {
        let t0 = Instant::now();
        let mut h = History::new(3, Duration::from_secs(1));
        for i in 0..5 {
            h.insert(s(i, t0));
        }
        assert_eq!(h.len(), 3);
        assert!(h.take_for_retransmit(1, t0, Duration::ZERO).is_none());
        assert!(h.take_for_retransmit(3, t0, Duration::ZERO).is_some());
        h.expire(t0 + Duration::from_secs(2));
        assert_eq!(h.len(), 0);
    }

    #[test]
    fn repeated_nacks_are_rate_limited() {
        let t0 = Instant::now();
        let mut h = History::new(10, Duration::from_secs(1));
        h.insert(s(7, t0));
        let gap = Duration::from_millis(20);
        assert!(h.take_for_retransmit(7, t0, gap).is_some());
        assert!(
            h.take_for_retransmit(7, t0 + Duration::from_millis(5), gap)
                .is_none()
        );
        assert!(
            h.take_for_retransmit(7, t0 + Duration::from_millis(25), gap)
                .is_some()
        );
        assert!(h.take_for_retransmit(99, t0, gap).is_none());
    }
}
