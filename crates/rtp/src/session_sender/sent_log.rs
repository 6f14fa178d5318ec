//! What the sender put on the wire, by transport-wide sequence number, so that feedback
//! (transport-wide CC by transport sequence number, RFC 8888 by SSRC + RTP sequence number)
//! maps back to the controller's sequence numbers, each result reported once.

use std::collections::{HashMap, VecDeque};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Unreported,
    Lost,
    Received,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    ssrc: u32,
    rtp_seq: u16,
    fate: Fate,
}

/// Bounded log of sent packets (oldest forgotten first).
#[derive(Debug)]
pub(crate) struct SentLog {
    entries: VecDeque<Entry>,
    /// Transport sequence number of `entries[0]`.
    base: u64,
    by_rtp: HashMap<(u32, u16), u64>,
    capacity: usize,
}

impl SentLog {
    pub fn new(capacity: usize) -> Self {
        Self {
            entries: VecDeque::new(),
            base: 0,
            by_rtp: HashMap::new(),
            capacity: capacity.max(1),
        }
    }

    /// Records packet `tx` (must be the next transport sequence number).
    pub fn record(&mut self, tx: u64, ssrc: u32, rtp_seq: u16) {
        if self.entries.is_empty() {
            self.base = tx;
        }
        debug_assert_eq!(tx, self.base + self.entries.len() as u64);
        while self.entries.len() >= self.capacity {
            if let Some(e) = self.entries.pop_front()
                && self.by_rtp.get(&(e.ssrc, e.rtp_seq)) == Some(&self.base)
            {
                self.by_rtp.remove(&(e.ssrc, e.rtp_seq));
            }
            self.base += 1;
        }
        self.entries.push_back(Entry {
            ssrc,
            rtp_seq,
            fate: Fate::Unreported,
        });
        self.by_rtp.insert((ssrc, rtp_seq), tx);
    }

    /// The transport sequence number of an RTP packet still in the log.
    pub fn lookup_rtp(&self, ssrc: u32, rtp_seq: u16) -> Option<u64> {
        self.by_rtp.get(&(ssrc, rtp_seq)).copied()
    }

    /// Whether `tx` is in the log.
    pub fn contains(&self, tx: u64) -> bool {
        tx >= self.base && tx < self.base + self.entries.len() as u64
    }

    /// The highest transport sequence number recorded.
    pub fn highest(&self) -> Option<u64> {
        (!self.entries.is_empty()).then(|| self.base + self.entries.len() as u64 - 1)
    }

    /// Marks a feedback result; returns whether it is news for the controller (first report,
    /// or received after having been reported lost). Unknown sequence numbers are not news.
    pub fn mark(&mut self, tx: u64, received: bool) -> bool {
        if !self.contains(tx) {
            return false;
        }
        let e = &mut self.entries[(tx - self.base) as usize];
        let news = matches!(
            (e.fate, received),
            (Fate::Unreported, _) | (Fate::Lost, true)
        );
        if news {
            e.fate = if received { Fate::Received } else { Fate::Lost };
        }
        news
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_result_is_news_once_and_late_arrivals_are_news() {
        let mut l = SentLog::new(10);
        for tx in 100..105 {
            l.record(tx, 7, tx as u16);
        }
        assert_eq!(l.lookup_rtp(7, 102), Some(102));
        assert!(l.mark(101, false));
        assert!(!l.mark(101, false));
        assert!(l.mark(101, true));
        assert!(!l.mark(101, true));
        assert!(!l.mark(999, true));
    }

    #[test]
    fn capacity_forgets_the_oldest() {
        let mut l = SentLog::new(3);
        for tx in 0..5 {
            l.record(tx, 7, tx as u16);
        }
        assert!(!l.contains(1));
        assert!(l.contains(2));
        assert_eq!(l.lookup_rtp(7, 1), None);
        assert_eq!(l.highest(), Some(4));
    }
}
