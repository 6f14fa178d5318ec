//! Per-packet arrival records behind the congestion-control feedback: transport-wide CC
//! (by transport sequence number) and RFC 8888 (by SSRC and RTP sequence number, with ECN).
//! Both are bounded by sequence-number windows, whatever arrives.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use cg_types::Ecn;
use rtc_rtcp::transport_feedbacks::transport_layer_cc::TransportLayerCc;

use crate::rtcp::{ccfb, twcc};
use crate::seq::SeqUnwrapper;

/// Most transport sequence numbers one transport-wide CC round covers.
const TWCC_MAX_SPAN: u64 = 4096;

/// Arrivals by transport-wide sequence number, reported once.
#[derive(Debug, Default)]
pub(crate) struct TwccRecorder {
    unwrap: SeqUnwrapper,
    arrivals: BTreeMap<u64, i64>,
    next_base: Option<u64>,
    fb_count: u8,
}

impl TwccRecorder {
    /// A packet with transport sequence number `seq` arrived at `arrival_us` (receiver clock).
    pub fn on_packet(&mut self, seq: u16, arrival_us: i64) {
        let s = self.unwrap.unwrap(seq);
        if self.next_base.is_some_and(|b| s < b) {
            return; // already reported as lost; too late
        }
        self.arrivals.insert(s, arrival_us);
        // Bound: a flood of new numbers cannot grow the map beyond the span.
        if let Some(h) = self.unwrap.highest() {
            while self
                .arrivals
                .first_key_value()
                .is_some_and(|(k, _)| *k + TWCC_MAX_SPAN < h)
            {
                self.arrivals.pop_first();
            }
        }
    }

    /// Reports for everything since the last round.
    pub fn build(&mut self, sender_ssrc: u32, media_ssrc: u32) -> Vec<TransportLayerCc> {
        let Some(highest) = self.arrivals.keys().next_back().copied() else {
            return Vec::new();
        };
        let first = self.arrivals.keys().next().copied().unwrap_or(highest);
        // Everything from the last round's end is reported (gaps as lost); arrivals below it
        // were refused in on_packet.
        let mut base = self.next_base.unwrap_or(first);
        if highest - base > TWCC_MAX_SPAN {
            base = highest - TWCC_MAX_SPAN;
        }
        let arrivals: Vec<Option<i64>> = (base..=highest)
            .map(|s| self.arrivals.get(&s).copied())
            .collect();
        self.arrivals.clear();
        self.next_base = Some(highest + 1);
        twcc::build(
            sender_ssrc,
            media_ssrc,
            base as u16,
            &arrivals,
            &mut self.fb_count,
        )
    }

    pub fn has_news(&self) -> bool {
        !self.arrivals.is_empty()
    }
}

#[derive(Debug, Default)]
struct Stream {
    unwrap: SeqUnwrapper,
    first_seen: Option<u64>,
    arrivals: BTreeMap<u64, (Instant, Ecn)>,
}

/// Arrivals and ECN per SSRC for RFC 8888, keeping the last `history` sequence numbers so
/// every report repeats them (redundancy against lost reports).
#[derive(Debug)]
pub(crate) struct CcfbRecorder {
    streams: BTreeMap<u32, Stream>,
    history: u64,
    pub new_packets: u32,
}

impl CcfbRecorder {
    pub fn new(history: u16, ssrcs: &[u32]) -> Self {
        Self {
            streams: ssrcs.iter().map(|s| (*s, Stream::default())).collect(),
            history: history.max(1) as u64,
            new_packets: 0,
        }
    }

    /// A packet arrived (only SSRCs given at construction are recorded).
    pub fn on_packet(&mut self, ssrc: u32, seq: u16, ecn: Ecn, now: Instant) {
        let Some(st) = self.streams.get_mut(&ssrc) else {
            return;
        };
        let s = st.unwrap.unwrap(seq);
        st.first_seen = Some(st.first_seen.map_or(s, |f| f.min(s)));
        let h = st.unwrap.highest().unwrap_or(s);
        if s + self.history <= h {
            return; // older than anything a report would carry
        }
        st.arrivals.entry(s).or_insert((now, ecn));
        while st
            .arrivals
            .first_key_value()
            .is_some_and(|(k, _)| *k + self.history <= h)
        {
            st.arrivals.pop_first();
        }
        self.new_packets += 1;
    }

    /// A report covering the last `history` sequence numbers of every stream.
    pub fn build(
        &mut self,
        sender_ssrc: u32,
        report_timestamp: u32,
        now: Instant,
    ) -> Option<ccfb::Report> {
        let mut blocks = Vec::new();
        for (ssrc, st) in &self.streams {
            let Some(h) = st.unwrap.highest() else {
                continue;
            };
            let Some(first) = st.first_seen else { continue };
            let begin = first.max((h + 1).saturating_sub(self.history));
            let metrics = (begin..=h)
                .map(|s| match st.arrivals.get(&s) {
                    Some((at, ecn)) => ccfb::Metric {
                        received: true,
                        ecn: *ecn,
                        ato: ato(now.saturating_duration_since(*at)),
                    },
                    None => ccfb::Metric::default(),
                })
                .collect();
            blocks.push(ccfb::Block {
                media_ssrc: *ssrc,
                begin_seq: begin as u16,
                metrics,
            });
        }
        self.new_packets = 0;
        (!blocks.is_empty()).then_some(ccfb::Report {
            sender_ssrc,
            blocks,
            report_timestamp,
        })
    }
}

/// Arrival time offset in 1/1024 s, 0x1FFE when over range (RFC 8888 §3.1).
fn ato(d: Duration) -> u16 {
    let v = d.as_micros() * 1024 / 1_000_000;
    u16::try_from(v)
        .unwrap_or(u16::MAX)
        .min(ccfb::ATO_OVER_RANGE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twcc_reports_each_number_once_with_losses() {
        let mut r = TwccRecorder::default();
        r.on_packet(65534, 1_000);
        r.on_packet(0, 3_000);
        let rep = r.build(1, 2);
        assert_eq!(rep.len(), 1);
        assert_eq!(rep[0].base_sequence_number, 65534);
        assert_eq!(rep[0].packet_status_count, 3);
        assert!(!r.has_news());
        r.on_packet(65535, 4_000); // late: already reported lost
        assert!(!r.has_news());
        r.on_packet(1, 5_000);
        let rep = r.build(1, 2);
        assert_eq!(rep[0].base_sequence_number, 1);
    }

    #[test]
    fn ccfb_repeats_the_last_history_numbers_with_ecn() {
        let t0 = Instant::now();
        let mut r = CcfbRecorder::new(4, &[7]);
        for s in [1u16, 2, 4, 5, 6] {
            r.on_packet(7, s, Ecn::Ect1, t0);
        }
        r.on_packet(99, 1, Ecn::Ce, t0); // unknown SSRC ignored
        let rep = r.build(1, 0, t0 + Duration::from_millis(500)).unwrap();
        assert_eq!(rep.blocks.len(), 1);
        let b = &rep.blocks[0];
        assert_eq!(b.begin_seq, 3);
        assert_eq!(b.metrics.len(), 4);
        assert!(!b.metrics[0].received);
        assert_eq!(b.metrics[1].ecn, Ecn::Ect1);
        assert_eq!(b.metrics[1].ato, 512);
        let again = r.build(1, 0, t0 + Duration::from_millis(500)).unwrap();
        assert_eq!(again.blocks[0].metrics.len(), 4, "redundant repetition");
    }
}
