//! Feedback from the receiver: RTCP on our streams to the controller, the breaker and the
//! statistics. Per-packet reports become controller results in the sent-packet log.

use std::time::Instant;

use cg_cc::{Feedback, FeedbackKind, LossReport, PacketResult};
use cg_types::RemoteTime;
use rtc_rtcp::reception_report::ReceptionReport;

use super::{KeyFrameReason, SenderEvent, SenderSession};
use crate::rtcp::{RtcpMessage, ccfb, twcc};
use crate::time::mid32_to_duration;

impl SenderSession {
    pub(super) fn ours(&self, ssrc: u32) -> bool {
        ssrc == self.config.ssrc || ssrc == self.config.rtx_ssrc
    }

    /// RTCP on our streams arrived; `kind`: the congestion feedback it is, if any (receiver
    /// reports count as REMB mode's: its loss-based controller reads them). Per-packet
    /// reports feed every send-side controller whichever format carries them (a Chromium
    /// viewer of SCReAM sends transport-wide CC), REMB and RRs feed GCC-REMB.
    pub(super) fn feedback_seen(&mut self, now: Instant, kind: Option<FeedbackKind>) {
        let per_packet = |k: FeedbackKind| k != FeedbackKind::Remb;
        let feeds =
            kind.is_some_and(|k| per_packet(k) == per_packet(self.controller.feedback_kind()));
        if let Some(state) = self.breaker.on_feedback(now, feeds) {
            self.events.push_back(SenderEvent::CircuitBreaker(state));
            self.request_key_frame(KeyFrameReason::CircuitBreakerRecovered);
        }
    }

    pub(super) fn handle_rtcp(&mut self, m: RtcpMessage, now: Instant) {
        match m {
            RtcpMessage::ReceiverReport(rr) => self.handle_reports(&rr.reports, now),
            RtcpMessage::SenderReport(sr) => self.handle_reports(&sr.reports, now),
            RtcpMessage::Remb { ssrcs, bitrate } => {
                if !ssrcs.iter().any(|s| self.ours(*s)) {
                    self.stats.feedback_ignored += 1;
                    return;
                }
                self.feedback_seen(now, Some(FeedbackKind::Remb));
                self.stats.remb = Some(bitrate);
                self.controller.on_feedback(
                    &Feedback {
                        remb: Some(bitrate),
                        ..Default::default()
                    },
                    now,
                );
            }
            RtcpMessage::TransportCc(t) => self.handle_twcc(&t, now),
            RtcpMessage::Ccfb(r) => self.handle_ccfb(&r, now),
            RtcpMessage::Nack { media_ssrc, seqs } => {
                if media_ssrc != self.config.ssrc {
                    self.stats.feedback_ignored += 1;
                    return;
                }
                self.feedback_seen(now, None);
                self.handle_nack(&seqs, now);
            }
            RtcpMessage::Pli { media_ssrc } => {
                if media_ssrc != self.config.ssrc {
                    self.stats.feedback_ignored += 1;
                    return;
                }
                self.feedback_seen(now, None);
                self.receiver_wants_key_frame(KeyFrameReason::Pli, now);
            }
            RtcpMessage::Fir { ssrcs } => {
                if !ssrcs.contains(&self.config.ssrc) {
                    self.stats.feedback_ignored += 1;
                    return;
                }
                self.feedback_seen(now, None);
                self.receiver_wants_key_frame(KeyFrameReason::Fir, now);
            }
            RtcpMessage::Bye(_) | RtcpMessage::Other => {}
        }
    }

    /// RR/SR report blocks: loss figures and RTT = now − LSR − DLSR (RFC 3550 §6.4.1).
    pub(super) fn handle_reports(&mut self, reports: &[ReceptionReport], now: Instant) {
        for rb in reports {
            if rb.ssrc != self.config.ssrc {
                if rb.ssrc != self.config.rtx_ssrc {
                    self.stats.feedback_ignored += 1;
                } else {
                    self.feedback_seen(now, Some(FeedbackKind::Remb));
                }
                continue;
            }
            self.feedback_seen(now, Some(FeedbackKind::Remb));
            let rtt = (rb.last_sender_report != 0)
                .then(|| {
                    let a = self.ntp.ntp_mid32(now);
                    let v = a.wrapping_sub(rb.last_sender_report).wrapping_sub(rb.delay);
                    // A negative result wraps to a huge value: a bogus block, no sample.
                    (v < 0x0010_0000).then(|| mid32_to_duration(v))
                })
                .flatten();
            // total_lost is a 24-bit two's-complement field (RFC 3550 §6.4.1).
            let cumulative = ((rb.total_lost << 8) as i32 >> 8) as i64;
            let loss = LossReport {
                fraction_lost: rb.fraction_lost as f64 / 256.0,
                cumulative_lost: cumulative,
                extended_highest_seq: rb.last_sequence_number,
            };
            self.stats.fraction_lost = Some(loss.fraction_lost);
            if rtt.is_some() {
                self.stats.rtt = rtt;
            }
            self.controller.on_feedback(
                &Feedback {
                    loss: Some(loss),
                    rtt,
                    ..Default::default()
                },
                now,
            );
        }
    }

    pub(super) fn handle_twcc(
        &mut self,
        t: &rtc_rtcp::transport_feedbacks::transport_layer_cc::TransportLayerCc,
        now: Instant,
    ) {
        if self.sent_log.highest().is_none() {
            self.stats.feedback_ignored += 1;
            return;
        }
        self.feedback_seen(now, Some(FeedbackKind::TransportWideCc));
        let reference_us =
            self.twcc_ref.unwrap(t.reference_time as u64, 24) * twcc::REFERENCE_UNIT_US;
        let mut results = std::mem::take(&mut self.results);
        results.clear();
        self.stats.feedback_ignored += self
            .sent_log
            .twcc_results(&twcc::decode(t, reference_us), &mut results);
        self.deliver(&results, None, now);
        self.results = results;
    }

    pub(super) fn handle_ccfb(&mut self, r: &ccfb::Report, now: Instant) {
        // Report timestamp: 16.16 s (RFC 8888 §3.1).
        let ts_units = self.ccfb_ts.unwrap(r.report_timestamp as u64, 32);
        let report_us = ts_units * 1_000_000 / 65_536;
        let mut results = std::mem::take(&mut self.results);
        results.clear();
        let mut any = false;
        for b in &r.blocks {
            if !self.ours(b.media_ssrc) {
                self.stats.feedback_ignored += 1;
                continue;
            }
            any = true;
            self.stats.feedback_ignored += self.sent_log.ccfb_results(b, report_us, &mut results);
        }
        if any {
            self.feedback_seen(now, Some(FeedbackKind::Rfc8888));
        }
        // Controllers expect send order; blocks of two SSRCs interleave.
        results.sort_by_key(|p| p.seq);
        self.deliver(&results, Some(RemoteTime::from_micros(report_us)), now);
        self.results = results;
    }

    /// Per-packet results to the controller, if there are any.
    fn deliver(&mut self, results: &[PacketResult], report_time: Option<RemoteTime>, now: Instant) {
        if results.is_empty() {
            return;
        }
        self.controller.on_feedback(
            &Feedback {
                packets: results,
                report_time,
                ..Default::default()
            },
            now,
        );
    }
}
