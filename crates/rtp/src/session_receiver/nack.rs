//! Tracking missing media packets and deciding when to NACK them (RFC 4585 §6.2.1).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy)]
struct Missing {
    due: Instant,
    retries: u32,
    first_nack: Option<Instant>,
}

/// Missing sequence numbers (unwrapped), bounded.
#[derive(Debug)]
pub(crate) struct NackTracker {
    missing: BTreeMap<u64, Missing>,
    highest: Option<u64>,
    retry: Duration,
    max_retries: u32,
    max_missing: usize,
    srtt: Option<Duration>,
}

/// What a packet arrival did to the tracker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gap {
    None,
    /// A gap too large to repair: the caller should ask for a key frame.
    TooLarge,
}

impl NackTracker {
    pub fn new(retry: Duration, max_retries: u32, max_missing: usize) -> Self {
        Self {
            missing: BTreeMap::new(),
            highest: None,
            retry,
            max_retries,
            max_missing: max_missing.max(1),
            srtt: None,
        }
    }

    /// A packet arrived (first transmission or retransmission).
    pub fn on_packet(&mut self, seq: u64, now: Instant) -> Gap {
        if let Some(m) = self.missing.remove(&seq) {
            // Karn's rule: only a packet NACKed once gives an unambiguous RTT sample.
            if let (1, Some(t)) = (m.retries, m.first_nack) {
                let sample = now.saturating_duration_since(t);
                self.srtt = Some(match self.srtt {
                    None => sample,
                    Some(s) => (s * 7 + sample) / 8,
                });
            }
        }
        let Some(h) = self.highest else {
            self.highest = Some(seq);
            return Gap::None;
        };
        if seq <= h {
            return Gap::None;
        }
        self.highest = Some(seq);
        let gap = seq - h - 1;
        if gap as usize > self.max_missing {
            self.missing.clear();
            return Gap::TooLarge;
        }
        for s in h + 1..seq {
            self.missing.insert(
                s,
                Missing {
                    due: now,
                    retries: 0,
                    first_nack: None,
                },
            );
        }
        while self.missing.len() > self.max_missing {
            self.missing.pop_first();
        }
        Gap::None
    }

    /// Forgets packets below `seq` (their frame was released or given up).
    pub fn forget_below(&mut self, seq: u64) {
        while self
            .missing
            .first_key_value()
            .is_some_and(|(s, _)| *s < seq)
        {
            self.missing.pop_first();
        }
    }

    /// Sequence numbers to NACK now.
    pub fn due(&mut self, now: Instant) -> Vec<u64> {
        let mut out = Vec::new();
        let mut exhausted = Vec::new();
        let retry = self.retry_interval();
        for (s, m) in self.missing.iter_mut() {
            if m.due > now {
                continue;
            }
            if m.retries >= self.max_retries {
                exhausted.push(*s);
                continue;
            }
            m.retries += 1;
            m.first_nack.get_or_insert(now);
            // Exponential backoff per packet (RFC 6298 §5.5's RTO doubling): when the RTT
            // jumps (a queue filling after a capacity drop) the retries of a stale interval
            // would all leave before the first retransmission could arrive, each drawing a
            // duplicate. The backoff is not carried to the next packets, so Karn's rule
            // (samples only from packets NACKed once) still does not learn an RTT far above
            // the interval.
            m.due = now + retry * (1u32 << (m.retries - 1).min(4));
            out.push(*s);
        }
        for s in exhausted {
            self.missing.remove(&s);
        }
        out
    }

    /// Time before the second NACK of a packet: 1.25 × RTT + 5 ms once retransmissions have
    /// given an RTT sample, the configured interval before. Each further retry waits twice as
    /// long as the one before (up to 16×).
    pub fn retry_interval(&self) -> Duration {
        match self.srtt {
            Some(r) => r * 5 / 4 + Duration::from_millis(5),
            None => self.retry,
        }
    }

    /// When a NACK is next due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.missing.values().map(|m| m.due).min()
    }

    /// Sequence numbers currently missing.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.missing.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_are_nacked_retried_and_cleared_on_arrival() {
        let t0 = Instant::now();
        let mut n = NackTracker::new(Duration::from_millis(30), 2, 100);
        n.on_packet(10, t0);
        n.on_packet(13, t0);
        assert_eq!(n.due(t0), vec![11, 12]);
        assert!(n.due(t0 + Duration::from_millis(10)).is_empty());
        n.on_packet(11, t0 + Duration::from_millis(20));
        assert_eq!(n.due(t0 + Duration::from_millis(30)), vec![12]);
        // The second retry backs off to twice the interval; then retries are exhausted.
        assert!(n.due(t0 + Duration::from_millis(60)).is_empty());
        assert_eq!(n.len(), 1);
        assert!(n.due(t0 + Duration::from_millis(90)).is_empty());
        assert_eq!(n.len(), 0);
        // 11 was NACKed once and came back after 20 ms: the retry interval follows the RTT.
        assert_eq!(n.retry_interval(), Duration::from_millis(30));
    }

    #[test]
    fn retries_back_off_exponentially_when_the_rtt_jumps() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut n = NackTracker::new(ms(20), 10, 100);
        // Learn a 20 ms RTT: retry interval 30 ms.
        n.on_packet(1, t0);
        n.on_packet(3, t0);
        assert_eq!(n.due(t0), vec![2]);
        n.on_packet(2, t0 + ms(20));
        assert_eq!(n.retry_interval(), ms(30));
        // The RTT jumps to 300 ms: NACKs of 4 go out at 0, 30, 90, 210 ms (not every 30 ms),
        // and the retransmission answering the first arrives at 300 ms.
        let t1 = t0 + ms(100);
        n.on_packet(5, t1);
        let mut sent = vec![];
        for k in 0..=300u64 {
            if n.due(t1 + ms(k)) == vec![4] {
                sent.push(k);
            }
        }
        assert_eq!(sent, vec![0, 30, 90, 210]);
    }

    #[test]
    fn huge_gap_is_not_tracked() {
        let t0 = Instant::now();
        let mut n = NackTracker::new(Duration::from_millis(30), 2, 100);
        n.on_packet(0, t0);
        assert_eq!(n.on_packet(50_000, t0), Gap::TooLarge);
        assert_eq!(n.len(), 0);
    }
}
