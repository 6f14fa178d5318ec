//! What the sender put on the wire, by transport-wide sequence number, so that feedback
//! (transport-wide CC by transport sequence number, RFC 8888 by SSRC + RTP sequence number)
//! maps back to the controller's sequence numbers, each result reported once.

use std::collections::{HashMap, VecDeque};

use cg_cc::PacketResult;
use cg_types::{Ecn, RemoteTime};

use crate::rtcp::ccfb;

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

    /// A decoded transport-wide CC report (16-bit transport sequence numbers, arrival in µs on
    /// the receiver's clock) → the results that are news, appended to `out`. Sequence numbers
    /// are unwrapped near the highest one sent. Returns how many entries named a packet not
    /// sent or no longer in the log.
    pub fn twcc_results(
        &mut self,
        decoded: &[(u16, Option<i64>)],
        out: &mut Vec<PacketResult>,
    ) -> u64 {
        let Some(highest) = self.highest() else {
            return decoded.len() as u64;
        };
        let mut ignored = 0;
        for &(seq16, arrival) in decoded {
            let tx = crate::seq::nearest(highest, seq16).filter(|&tx| self.contains(tx));
            let Some(tx) = tx else {
                ignored += 1;
                continue;
            };
            if self.mark(tx, arrival.is_some()) {
                out.push(PacketResult {
                    seq: tx,
                    arrival: arrival.map(RemoteTime::from_micros),
                    ecn: Ecn::NotEct,
                });
            }
        }
        ignored
    }

    /// One RFC 8888 report block → the results that are news, appended to `out`; arrival =
    /// the report's time (`report_us`, µs on the receiver's clock) − ATO / 1024 s (RFC 8888
    /// §3.1). A packet reported received with an ATO over range has no usable time and is
    /// skipped. Returns how many metrics named a packet not in the log.
    pub fn ccfb_results(
        &mut self,
        block: &ccfb::Block,
        report_us: i64,
        out: &mut Vec<PacketResult>,
    ) -> u64 {
        let mut ignored = 0;
        for (i, m) in block.metrics.iter().enumerate() {
            let seq = block.begin_seq.wrapping_add(i as u16);
            let Some(tx) = self.lookup_rtp(block.media_ssrc, seq) else {
                ignored += 1;
                continue;
            };
            if m.received && m.ato >= ccfb::ATO_OVER_RANGE {
                continue;
            }
            if self.mark(tx, m.received) {
                out.push(PacketResult {
                    seq: tx,
                    arrival: m.received.then(|| {
                        RemoteTime::from_micros(report_us - i64::from(m.ato) * 1_000_000 / 1024)
                    }),
                    ecn: if m.received { m.ecn } else { Ecn::NotEct },
                });
            }
        }
        ignored
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

    fn log(from: u64, to: u64) -> SentLog {
        let mut l = SentLog::new(100);
        for tx in from..to {
            l.record(tx, 7, (tx + 1000) as u16);
        }
        l
    }

    #[test]
    fn twcc_sequence_numbers_unwrap_near_the_highest_sent() {
        // Sent 65 530 ..= 65 545: the 16-bit numbers wrap in between.
        let mut l = log(65_530, 65_546);
        let mut out = vec![];
        let ignored = l.twcc_results(&[(65_535, Some(100)), (0, None), (9, Some(300))], &mut out);
        assert_eq!(ignored, 0);
        let seqs: Vec<u64> = out.iter().map(|r| r.seq).collect();
        assert_eq!(seqs, [65_535, 65_536, 65_545]);
        assert_eq!(out[0].arrival, Some(RemoteTime::from_micros(100)));
        assert_eq!(out[1].arrival, None);
    }

    #[test]
    fn twcc_entries_for_packets_not_sent_or_forgotten_are_ignored_and_repeats_are_not_news() {
        let mut l = log(500, 510);
        let mut out = vec![];
        // 510: not sent yet; 400: before the log.
        assert_eq!(
            l.twcc_results(&[(510, Some(1)), (400, Some(1))], &mut out),
            2
        );
        assert!(out.is_empty());
        assert_eq!(l.twcc_results(&[(505, None)], &mut out), 0);
        assert_eq!(l.twcc_results(&[(505, None)], &mut out), 0);
        assert_eq!(l.twcc_results(&[(505, Some(9))], &mut out), 0);
        let fates: Vec<_> = out.iter().map(|r| (r.seq, r.arrival.is_some())).collect();
        assert_eq!(fates, [(505, false), (505, true)], "lost, then late");
        let mut empty = SentLog::new(4);
        assert_eq!(empty.twcc_results(&[(1, None), (2, None)], &mut out), 2);
    }

    #[test]
    fn ccfb_arrival_is_the_report_time_less_the_ato_and_over_range_times_are_skipped() {
        let mut l = log(0, 4);
        let metric = |received, ato| ccfb::Metric {
            received,
            ecn: if received { Ecn::Ect1 } else { Ecn::Ce },
            ato,
        };
        let block = ccfb::Block {
            media_ssrc: 7,
            begin_seq: 1000,
            metrics: vec![
                metric(true, 1024),
                metric(false, 0),
                metric(true, ccfb::ATO_OVER_RANGE),
                metric(true, 512),
                metric(true, 0),
            ],
        };
        let mut out = vec![];
        // 1004 was never sent.
        assert_eq!(l.ccfb_results(&block, 5_000_000, &mut out), 1);
        let got: Vec<_> = out.iter().map(|r| (r.seq, r.arrival, r.ecn)).collect();
        assert_eq!(
            got,
            [
                (0, Some(RemoteTime::from_micros(4_000_000)), Ecn::Ect1),
                (1, None, Ecn::NotEct),
                (3, Some(RemoteTime::from_micros(4_500_000)), Ecn::Ect1),
            ]
        );
        // Another SSRC's numbers are not ours.
        let other = ccfb::Block {
            media_ssrc: 8,
            ..block
        };
        assert_eq!(l.ccfb_results(&other, 5_000_000, &mut out), 5);
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
