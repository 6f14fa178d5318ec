//! RFC 8888 RTCP congestion-control feedback (CCFB: PT 205, FMT 11), our own codec.
//!
//! Why not `rtc-rtcp`'s `CcFeedbackReport`: it always writes and reads `num_reports` as the
//! number of metric blocks, while the SCReAM reference implementation writes and reads
//! `count − 1` (the reading of RFC 8888 §3.1 that erratum 8166 corrects). Interop with both
//! needs the convention as an option ([`NumReportsConvention`]).
//!
//! ```text
//!  |V=2|P| FMT=11  |   PT = 205    |          length               |
//!  |                 SSRC of RTCP packet sender                    |
//!  |                   SSRC of 1st RTP Stream                      |
//!  |          begin_seq            |          num_reports          |
//!  |R|ECN|  Arrival time offset    | ...                           .
//!  |                 Report Timestamp (32 bits)                    |
//! ```

use cg_types::Ecn;

use crate::Error;

/// RTCP packet type of transport-layer feedback (RFC 4585 §6.1).
pub const PT_RTPFB: u8 = 205;
/// FMT of CCFB (RFC 8888 §3.1).
pub const FMT_CCFB: u8 = 11;
/// RFC 8888 §3.1: a report block may describe at most 16384 packets.
pub const MAX_METRICS_PER_BLOCK: usize = 16384;
/// Arrival time offset meaning "more than 8189/1024 s" (RFC 8888 §3.1).
pub const ATO_OVER_RANGE: u16 = 0x1FFE;
/// Arrival time offset meaning "unavailable".
pub const ATO_UNAVAILABLE: u16 = 0x1FFF;

/// How `num_reports` relates to the number of metric blocks that follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NumReportsConvention {
    /// `num_reports` = number of metric blocks (RFC 8888 with erratum 8166; libwebrtc, pion,
    /// rtc-rtcp). The default, because it is what the erratum and most peers use.
    #[default]
    Count,
    /// `num_reports` = number of metric blocks − 1 (SCReAM's reference implementation).
    CountMinusOne,
}

/// One packet's fate (two bytes on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Metric {
    /// R: the packet arrived.
    pub received: bool,
    /// The ECN bits it arrived with (zero when not received).
    pub ecn: Ecn,
    /// Arrival time before the report timestamp, in 1/1024 s (13 bits).
    pub ato: u16,
}

/// The packets of one SSRC from `begin_seq` on.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Block {
    /// The media SSRC.
    pub media_ssrc: u32,
    /// Sequence number of `metrics[0]`.
    pub begin_seq: u16,
    /// One per sequence number.
    pub metrics: Vec<Metric>,
}

/// A CCFB packet.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Report {
    /// SSRC of the sender of the report.
    pub sender_ssrc: u32,
    /// Report blocks, one per media SSRC.
    pub blocks: Vec<Block>,
    /// Middle 32 bits of the NTP time the report was built (16.16 s).
    pub report_timestamp: u32,
}

impl Report {
    /// Size on the wire.
    pub fn wire_len(&self) -> usize {
        8 + self
            .blocks
            .iter()
            .map(|b| 8 + 2 * b.metrics.len().next_multiple_of(2))
            .sum::<usize>()
            + 4
    }

    /// Serializes. Blocks must have 1..=16384 metrics.
    pub fn write(&self, conv: NumReportsConvention) -> Result<Vec<u8>, Error> {
        let len = self.wire_len();
        let words = len / 4 - 1;
        if words > u16::MAX as usize {
            return Err(Error::Build("CCFB longer than an RTCP length field".into()));
        }
        let mut out = Vec::with_capacity(len);
        out.push(0x80 | FMT_CCFB);
        out.push(PT_RTPFB);
        out.extend_from_slice(&(words as u16).to_be_bytes());
        out.extend_from_slice(&self.sender_ssrc.to_be_bytes());
        for b in &self.blocks {
            let n = b.metrics.len();
            if n == 0 || n > MAX_METRICS_PER_BLOCK {
                return Err(Error::Build(
                    "CCFB block must describe 1..=16384 packets".into(),
                ));
            }
            let num = match conv {
                NumReportsConvention::Count => n,
                NumReportsConvention::CountMinusOne => n - 1,
            };
            out.extend_from_slice(&b.media_ssrc.to_be_bytes());
            out.extend_from_slice(&b.begin_seq.to_be_bytes());
            out.extend_from_slice(&(num as u16).to_be_bytes());
            for m in &b.metrics {
                let w: u16 = if m.received {
                    0x8000 | ((m.ecn.bits() as u16) << 13) | (m.ato & 0x1FFF)
                } else {
                    0
                };
                out.extend_from_slice(&w.to_be_bytes());
            }
            if n % 2 == 1 {
                out.extend_from_slice(&[0, 0]);
            }
        }
        out.extend_from_slice(&self.report_timestamp.to_be_bytes());
        debug_assert_eq!(out.len(), len);
        Ok(out)
    }

    /// Parses one CCFB packet (exactly the bytes its length field covers).
    pub fn parse(data: &[u8], conv: NumReportsConvention) -> Result<Self, Error> {
        let bad = |m: &str| Error::MalformedRtcp(format!("CCFB: {m}"));
        if data.len() < 12 {
            return Err(bad("shorter than header, sender SSRC and timestamp"));
        }
        if data[0] >> 6 != 2 || data[0] & 0x1F != FMT_CCFB || data[1] != PT_RTPFB {
            return Err(bad("not a CCFB header"));
        }
        let len = 4 * (u16::from_be_bytes([data[2], data[3]]) as usize + 1);
        if len != data.len() {
            return Err(bad("length field does not match the packet"));
        }
        let mut end = len;
        if data[0] & 0x20 != 0 {
            let pad = data[len - 1] as usize;
            if pad == 0 || pad > len - 12 {
                return Err(bad("bad padding"));
            }
            end -= pad;
        }
        let sender_ssrc = u32::from_be_bytes([data[4], data[5], data[6], data[7]]);
        if end < 12 {
            return Err(bad("no room for the report timestamp"));
        }
        let ts_at = end - 4;
        let report_timestamp = u32::from_be_bytes([
            data[ts_at],
            data[ts_at + 1],
            data[ts_at + 2],
            data[ts_at + 3],
        ]);
        let mut at = 8;
        let mut blocks = Vec::new();
        while at < ts_at {
            if ts_at - at < 8 {
                return Err(bad("truncated report block header"));
            }
            let media_ssrc =
                u32::from_be_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]]);
            let begin_seq = u16::from_be_bytes([data[at + 4], data[at + 5]]);
            let num = u16::from_be_bytes([data[at + 6], data[at + 7]]) as usize;
            let n = match conv {
                NumReportsConvention::Count => num,
                NumReportsConvention::CountMinusOne => num + 1,
            };
            if n > MAX_METRICS_PER_BLOCK {
                return Err(bad("num_reports above 16384"));
            }
            at += 8;
            let bytes = 2 * n.next_multiple_of(2);
            if ts_at - at < bytes {
                return Err(bad("metric blocks overrun the packet"));
            }
            let metrics = (0..n)
                .map(|i| {
                    let w = u16::from_be_bytes([data[at + 2 * i], data[at + 2 * i + 1]]);
                    if w & 0x8000 == 0 {
                        Metric::default()
                    } else {
                        Metric {
                            received: true,
                            ecn: Ecn::from_bits((w >> 13) as u8),
                            ato: w & 0x1FFF,
                        }
                    }
                })
                .collect();
            at += bytes;
            blocks.push(Block {
                media_ssrc,
                begin_seq,
                metrics,
            });
        }
        Ok(Report {
            sender_ssrc,
            blocks,
            report_timestamp,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Built by hand from the RFC 8888 §3.1 figure: one SSRC, begin_seq 0x1234, three packets
    /// (received ECT(1) 2/1024 s before, lost, received CE 0), then the 16-bit pad and the
    /// report timestamp.
    fn rfc_vector(num_reports: u16) -> Vec<u8> {
        let mut v = vec![
            0x8B, 205, 0x00, 0x06, // V=2 P=0 FMT=11, PT=205, length = 7 words - 1
            0x11, 0x22, 0x33, 0x44, // sender SSRC
            0xAA, 0xBB, 0xCC, 0xDD, // media SSRC
            0x12, 0x34, // begin_seq
        ];
        v.extend_from_slice(&num_reports.to_be_bytes());
        v.extend_from_slice(&[
            0xA0, 0x02, // R=1 ECN=01 ATO=2
            0x00, 0x00, // R=0
            0xE0, 0x00, // R=1 ECN=11 ATO=0
            0x00, 0x00, // padding to 32 bits
            0x00, 0x05, 0x80, 0x00, // report timestamp 5.5 s
        ]);
        v
    }

    fn expected() -> Report {
        Report {
            sender_ssrc: 0x1122_3344,
            blocks: vec![Block {
                media_ssrc: 0xAABB_CCDD,
                begin_seq: 0x1234,
                metrics: vec![
                    Metric {
                        received: true,
                        ecn: Ecn::Ect1,
                        ato: 2,
                    },
                    Metric::default(),
                    Metric {
                        received: true,
                        ecn: Ecn::Ce,
                        ato: 0,
                    },
                ],
            }],
            report_timestamp: 0x0005_8000,
        }
    }

    #[test]
    fn parses_and_writes_the_rfc_layout_with_count() {
        let v = rfc_vector(3);
        assert_eq!(
            Report::parse(&v, NumReportsConvention::Count).unwrap(),
            expected()
        );
        assert_eq!(expected().write(NumReportsConvention::Count).unwrap(), v);
    }

    #[test]
    fn parses_and_writes_the_rfc_layout_with_count_minus_one() {
        let v = rfc_vector(2);
        assert_eq!(
            Report::parse(&v, NumReportsConvention::CountMinusOne).unwrap(),
            expected()
        );
        assert_eq!(
            expected()
                .write(NumReportsConvention::CountMinusOne)
                .unwrap(),
            v
        );
    }

    #[test]
    fn rtc_rtcp_reads_our_count_convention_identically() {
        use rtc_rtcp::transport_feedbacks::cc_feedback_report::CcFeedbackReport;
        use rtc_shared::marshal::Unmarshal;
        let v = rfc_vector(3);
        let theirs = CcFeedbackReport::unmarshal(&mut &v[..]).unwrap();
        assert_eq!(theirs.report_blocks[0].metric_blocks.len(), 3);
        assert_eq!(
            theirs.report_blocks[0].metric_blocks[0].arrival_time_offset,
            2
        );
        assert_eq!(theirs.report_timestamp, 0x0005_8000);
    }

    #[test]
    fn hostile_counts_and_lengths_are_errors() {
        let mut v = rfc_vector(3);
        v[14] = 0xFF; // num_reports 0xFF03: overruns
        assert!(Report::parse(&v, NumReportsConvention::Count).is_err());
        let v = rfc_vector(3);
        assert!(Report::parse(&v[..v.len() - 4], NumReportsConvention::Count).is_err());
        let mut v = rfc_vector(3);
        v[3] = 0x05; // length says shorter than the datagram
        assert!(Report::parse(&v, NumReportsConvention::Count).is_err());
        let v = rfc_vector(0xFFFF);
        assert!(Report::parse(&v, NumReportsConvention::CountMinusOne).is_err());
    }
}
