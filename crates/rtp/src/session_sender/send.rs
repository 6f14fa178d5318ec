//! Packets leaving: numbering, the sent-packet log, the controller's view of each packet,
//! and sender reports.

use std::time::Instant;

use bytes::Bytes;
use cg_cc::{PacketKind, SentPacket};
use cg_types::{DataSize, MediaTime};
use rtc_rtcp::sender_report::SenderReport;

use super::{SenderSession, Unsent};
use crate::history::Stored;
use crate::rtcp;
use crate::rtp_packet::{OutgoingRtp, write_rtp};
use crate::{Error, Transmit, TransmitKind, VideoTiming};

impl SenderSession {
    pub(super) fn rtp_timestamp(&self, capture: Instant) -> u32 {
        let d = capture.saturating_duration_since(self.start);
        self.ts_offset
            .wrapping_add(MediaTime::from_duration(d).wire())
    }

    pub(super) fn next_transport_seq(&mut self) -> u64 {
        let tx = self.next_tx;
        self.next_tx += 1;
        tx
    }

    pub(super) fn finish_send(
        &mut self,
        bytes: Bytes,
        tx: u64,
        ssrc: u32,
        rtp_seq: u16,
        kind: PacketKind,
        now: Instant,
    ) -> Transmit {
        let size = DataSize::bytes((self.config.transport_overhead + bytes.len()) as u64);
        self.sent_log.record(tx, ssrc, rtp_seq);
        self.controller.on_packet_sent(&SentPacket {
            seq: tx,
            size,
            send_time: now,
            ecn: self.config.ecn,
            kind,
        });
        self.breaker.on_media_sent(now);
        self.stats.rtp_bytes += bytes.len() as u64;
        Transmit {
            bytes,
            ecn: self.config.ecn,
            kind: match kind {
                PacketKind::Media => TransmitKind::Media,
                PacketKind::Retransmission => TransmitKind::Retransmission,
                PacketKind::Padding => TransmitKind::Padding,
            },
        }
    }

    /// A first transmission: the packet gets its RTP and transport-wide sequence numbers
    /// now, as it leaves the pacer.
    pub(super) fn send_media(&mut self, m: Unsent, now: Instant) -> Result<Transmit, Error> {
        // Numbered before serializing: a packet that fails to serialize (a bug) leaves a gap,
        // which tells the receiver its frame is incomplete.
        let seq = self.seq;
        self.seq += 1;
        let tx = self.next_transport_seq();
        let video_timing = m.timing.map(|(capture, t)| VideoTiming {
            pacer_exit_ms: VideoTiming::delta_ms(capture, now),
            ..t
        });
        let bytes = write_rtp(
            &OutgoingRtp {
                ssrc: self.config.ssrc,
                payload_type: m.payload_type,
                seq: seq as u16,
                timestamp: m.timestamp,
                marker: m.marker,
                payload: &m.payload,
                abs_send_time: Some(self.ntp.abs_send_time(now)),
                transport_seq: Some(tx as u16),
                capture_ntp: m.capture_ntp,
                playout_delay: m.capture_ntp.and(self.config.playout_delay),
                video_timing,
                padding: 0,
            },
            &self.config.extensions,
        )?;
        self.stats.media_packets += 1;
        self.sr_packets = self.sr_packets.wrapping_add(1);
        self.sr_octets = self.sr_octets.wrapping_add(m.payload.len() as u32);
        self.last_rtp_ts = Some((m.timestamp, now));
        let end_of_frame = m.marker;
        if end_of_frame
            && let Some((ts, sent @ None)) = &mut self.key_in_flight
            && *ts == m.timestamp
        {
            *sent = Some(now);
            tracing::debug!(ts = m.timestamp, seq, "key frame sent");
        }
        self.history.insert(Stored {
            seq,
            timestamp: m.timestamp,
            marker: m.marker,
            capture_ntp: m.capture_ntp,
            video_timing,
            payload: m.payload,
            sent: now,
            last_retransmit: None,
        });
        let rtp_seq = seq as u16;
        let t = self.finish_send(bytes, tx, self.config.ssrc, rtp_seq, PacketKind::Media, now);
        if end_of_frame {
            // Lets send-side GCC group packets by frame (MMSys16 eq. 4).
            self.controller.on_frame_sent(tx);
        }
        self.controller
            .on_media_queue(self.pacer.media_queue(now), now);
        Ok(t)
    }

    /// SR + SDES (RFC 3550 §6.4.1). The RTP timestamp is extrapolated from the last sent
    /// packet to `now` at 90 kHz so lip-sync and RTT work.
    pub(super) fn queue_sr(&mut self, now: Instant) {
        let rtp_time = match self.last_rtp_ts {
            Some((ts, at)) => {
                let d = now.saturating_duration_since(at);
                ts.wrapping_add(MediaTime::from_duration(d).wire())
            }
            None => self.rtp_timestamp(now),
        };
        let sr = SenderReport {
            ssrc: self.config.ssrc,
            ntp_time: self.ntp.ntp(now),
            rtp_time,
            packet_count: self.sr_packets,
            octet_count: self.sr_octets,
            ..Default::default()
        };
        match rtcp::build_sr(sr, &self.config.cname) {
            Ok(b) => self.rtcp_out.push_back(b),
            Err(e) => tracing::error!("cannot build SR: {e}"),
        }
    }
}
