//! NACKs (RFC 4585 §6.2.1) answered from the history as RTX packets (RFC 4588 §4), which
//! also carry probe padding.

use std::time::{Duration, Instant};

use cg_cc::PacketKind;
use cg_types::DataSize;

use super::{Pending, SenderSession};
use crate::history::Stored;
use crate::pacer::{PacketClass, Queued};
use crate::rtp_packet::{OutgoingRtp, write_rtp};
use crate::{Error, Transmit};

impl SenderSession {
    /// An RTX packet (RFC 4588 §4): a retransmission of `s`, or padding only when `None`;
    /// `kind` says whether it answers a NACK or pads a probe (payload padding carries `s`).
    pub(super) fn send_rtx(
        &mut self,
        s: Option<Stored>,
        kind: PacketKind,
        now: Instant,
    ) -> Result<Transmit, Error> {
        let tx = self.next_transport_seq();
        let seq = self.rtx_seq;
        self.rtx_seq = self.rtx_seq.wrapping_add(1);
        let mut payload = Vec::new();
        let (timestamp, marker, capture_ntp, video_timing, padding) = match &s {
            Some(s) => {
                payload.reserve(2 + s.payload.len());
                payload.extend_from_slice(&(s.seq as u16).to_be_bytes());
                payload.extend_from_slice(&s.payload);
                (s.timestamp, s.marker, s.capture_ntp, s.video_timing, 0)
            }
            None => (
                self.last_rtp_ts.map(|(t, _)| t).unwrap_or(self.ts_offset),
                false,
                None,
                None,
                self.config.padding_bytes,
            ),
        };
        let bytes = write_rtp(
            &OutgoingRtp {
                ssrc: self.config.rtx_ssrc,
                payload_type: self.config.payload_types.rtx,
                seq,
                timestamp,
                marker,
                payload: &payload,
                abs_send_time: Some(self.ntp.abs_send_time(now)),
                transport_seq: Some(tx as u16),
                capture_ntp,
                playout_delay: capture_ntp.and(self.config.playout_delay),
                video_timing,
                padding,
            },
            &self.config.extensions,
        )?;
        match kind {
            PacketKind::Retransmission => self.stats.retransmissions += 1,
            _ => self.stats.padding_packets += 1,
        }
        Ok(self.finish_send(bytes, tx, self.config.rtx_ssrc, seq, kind, now))
    }

    pub(super) fn handle_nack(&mut self, seqs: &[u16], now: Instant) {
        self.stats.nacked += seqs.len() as u64;
        // The highest sequence number sent (numbers are assigned as packets leave).
        let highest = self.seq.saturating_sub(1);
        let min_interval = self
            .stats
            .rtt
            .map(|r| r.mul_f64(0.8))
            .unwrap_or(Duration::from_millis(20))
            .max(Duration::from_millis(5));
        for &s in seqs {
            let Some(seq) = crate::seq::nearest(highest, s).filter(|&seq| seq <= highest) else {
                // Not sent yet (or before the first number).
                self.stats.feedback_ignored += 1;
                continue;
            };
            if seq < self.useful_from {
                self.stats.retransmissions_superseded += 1;
                continue;
            }
            match self.history.take_for_retransmit(seq, now, min_interval) {
                Some(stored) => {
                    tracing::debug!(seq, "retransmission queued");
                    let size = DataSize::bytes(
                        (self.config.transport_overhead + 14 + stored.payload.len()) as u64,
                    );
                    self.pacer.enqueue(
                        PacketClass::Retransmission,
                        Queued {
                            item: Pending::Rtx(stored),
                            size,
                            frame: 0,
                            enqueued: now,
                        },
                    );
                }
                None => self.stats.feedback_ignored += 1,
            }
        }
    }
}
