//! RTCP: splitting compound packets (RFC 3550 §6.1), our view of the messages we act on, and
//! builders for what we send. Parsing of every message except CCFB is `rtc-rtcp`'s; CCFB is
//! [`ccfb`], transport-wide CC building/decoding is [`twcc`].
//!
//! Every sub-packet is delimited by its own length field before any parser sees it, so a
//! compound packet whose lengths overrun the datagram is rejected as a whole, and parsers are
//! handed exactly one packet.

pub mod ccfb;
pub mod twcc;

use bytes::Bytes;
use cg_types::Bitrate;
use rtc_rtcp::goodbye::Goodbye;
use rtc_rtcp::payload_feedbacks::full_intra_request::FullIntraRequest;
use rtc_rtcp::payload_feedbacks::picture_loss_indication::PictureLossIndication;
use rtc_rtcp::payload_feedbacks::receiver_estimated_maximum_bitrate::ReceiverEstimatedMaximumBitrate;
use rtc_rtcp::receiver_report::ReceiverReport;
use rtc_rtcp::reception_report::ReceptionReport;
use rtc_rtcp::sender_report::SenderReport;
use rtc_rtcp::source_description::{
    SdesType, SourceDescription, SourceDescriptionChunk, SourceDescriptionItem,
};
use rtc_rtcp::transport_feedbacks::transport_layer_cc::TransportLayerCc;
use rtc_rtcp::transport_feedbacks::transport_layer_nack::{
    TransportLayerNack, nack_pairs_from_sequence_numbers,
};
use rtc_shared::marshal::Marshal;

use crate::Error;
pub use ccfb::NumReportsConvention;

/// One RTCP message we act on.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RtcpMessage {
    /// Sender report (RFC 3550 §6.4.1).
    SenderReport(SenderReport),
    /// Receiver report (RFC 3550 §6.4.2).
    ReceiverReport(ReceiverReport),
    /// REMB (draft-alvestrand-rmcat-remb-03).
    Remb {
        /// SSRCs the estimate applies to.
        ssrcs: Vec<u32>,
        /// The estimate.
        bitrate: Bitrate,
    },
    /// Transport-wide CC feedback.
    TransportCc(TransportLayerCc),
    /// RFC 8888 feedback.
    Ccfb(ccfb::Report),
    /// Generic NACK (RFC 4585 §6.2.1), expanded to sequence numbers.
    Nack {
        /// The media SSRC.
        media_ssrc: u32,
        /// Lost sequence numbers.
        seqs: Vec<u16>,
    },
    /// Picture loss indication (RFC 4585 §6.3.1).
    Pli {
        /// The media SSRC.
        media_ssrc: u32,
    },
    /// Full intra request (RFC 5104 §4.3.1), one per entry.
    Fir {
        /// SSRCs asked for a key frame.
        ssrcs: Vec<u32>,
    },
    /// BYE (RFC 3550 §6.6): sources leaving, with an optional reason.
    Bye(Bye),
    /// Anything else that parsed (SDES, XR, …): counted and ignored.
    Other,
}

/// RTCP header: V=2, length in 32-bit words minus one.
fn sub_packets(data: &[u8]) -> Result<Vec<&[u8]>, Error> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let rest = &data[at..];
        if rest.len() < 4 {
            return Err(Error::MalformedRtcp("truncated header".into()));
        }
        if rest[0] >> 6 != 2 {
            return Err(Error::MalformedRtcp("version is not 2".into()));
        }
        let len = 4 * (u16::from_be_bytes([rest[2], rest[3]]) as usize + 1);
        if len > rest.len() {
            return Err(Error::MalformedRtcp("length overruns the datagram".into()));
        }
        out.push(&rest[..len]);
        at += len;
    }
    if out.is_empty() {
        return Err(Error::MalformedRtcp("empty datagram".into()));
    }
    Ok(out)
}

/// Parses a (compound or reduced-size) RTCP datagram. Fails as a whole when any sub-packet is
/// malformed (RFC 3550 §6.1: the compound packet is one unit).
pub fn parse(data: &[u8], conv: NumReportsConvention) -> Result<Vec<RtcpMessage>, Error> {
    let mut out = Vec::new();
    for p in sub_packets(data)? {
        let pt = p[1];
        let fmt = p[0] & 0x1F;
        if pt == ccfb::PT_RTPFB && fmt == ccfb::FMT_CCFB {
            out.push(RtcpMessage::Ccfb(ccfb::Report::parse(p, conv)?));
            continue;
        }
        let mut rd = p;
        let parsed = rtc_rtcp::packet::unmarshal(&mut rd)
            .map_err(|e| Error::MalformedRtcp(e.to_string()))?;
        for pkt in parsed {
            out.push(convert(pkt.as_ref()));
        }
    }
    Ok(out)
}

/// A parsed BYE (`rtc-rtcp`'s `Goodbye`, which checks the source count and the reason length
/// against the packet).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Bye {
    /// The SSRC/CSRC identifiers leaving.
    pub sources: Vec<u32>,
    /// The reason for leaving, if given and non-empty (UTF-8 per RFC 3550 §6.6; invalid
    /// sequences are replaced, not rejected: it is for people to read).
    pub reason: Option<String>,
}

fn convert(p: &dyn rtc_rtcp::packet::Packet) -> RtcpMessage {
    let any = p.as_any();
    if let Some(sr) = any.downcast_ref::<SenderReport>() {
        RtcpMessage::SenderReport(sr.clone())
    } else if let Some(rr) = any.downcast_ref::<ReceiverReport>() {
        RtcpMessage::ReceiverReport(rr.clone())
    } else if let Some(r) = any.downcast_ref::<ReceiverEstimatedMaximumBitrate>() {
        RtcpMessage::Remb {
            ssrcs: r.ssrcs.clone(),
            bitrate: Bitrate::from_bps_f64(r.bitrate as f64),
        }
    } else if let Some(t) = any.downcast_ref::<TransportLayerCc>() {
        RtcpMessage::TransportCc(t.clone())
    } else if let Some(n) = any.downcast_ref::<TransportLayerNack>() {
        let mut seqs = Vec::new();
        for pair in &n.nacks {
            // bounded: 17 sequence numbers per pair, pairs bounded by the datagram size
            seqs.extend(pair.packet_list());
        }
        RtcpMessage::Nack {
            media_ssrc: n.media_ssrc,
            seqs,
        }
    } else if let Some(p) = any.downcast_ref::<PictureLossIndication>() {
        RtcpMessage::Pli {
            media_ssrc: p.media_ssrc,
        }
    } else if let Some(g) = any.downcast_ref::<Goodbye>() {
        RtcpMessage::Bye(Bye {
            sources: g.sources.clone(),
            reason: (!g.reason.is_empty()).then(|| String::from_utf8_lossy(&g.reason).into_owned()),
        })
    } else if let Some(f) = any.downcast_ref::<FullIntraRequest>() {
        RtcpMessage::Fir {
            ssrcs: f.fir.iter().map(|e| e.ssrc).collect(),
        }
    } else {
        RtcpMessage::Other
    }
}

fn marshal(packets: &[Box<dyn rtc_rtcp::packet::Packet>]) -> Result<Bytes, Error> {
    rtc_rtcp::packet::marshal(packets)
        .map(|b| b.freeze())
        .map_err(|e| Error::Build(e.to_string()))
}

/// SDES with one CNAME chunk (RFC 3550 §6.5.1), required in every compound packet.
fn sdes(ssrc: u32, cname: &str) -> SourceDescription {
    SourceDescription {
        chunks: vec![SourceDescriptionChunk {
            source: ssrc,
            items: vec![SourceDescriptionItem {
                sdes_type: SdesType::SdesCname,
                text: Bytes::copy_from_slice(cname.as_bytes()),
            }],
        }],
    }
}

/// A compound SR + SDES (RFC 3550 §6.1).
pub fn build_sr(sr: SenderReport, cname: &str) -> Result<Bytes, Error> {
    let ssrc = sr.ssrc;
    marshal(&[Box::new(sr), Box::new(sdes(ssrc, cname))])
}

/// A compound RR + SDES, with a REMB appended when given (RFC 3550 §6.1 allows feedback after
/// the SDES).
pub fn build_rr(
    ssrc: u32,
    reports: Vec<ReceptionReport>,
    cname: &str,
    remb: Option<(Bitrate, Vec<u32>)>,
) -> Result<Bytes, Error> {
    let mut v: Vec<Box<dyn rtc_rtcp::packet::Packet>> = vec![
        Box::new(ReceiverReport {
            ssrc,
            reports,
            ..Default::default()
        }),
        Box::new(sdes(ssrc, cname)),
    ];
    if let Some((bitrate, ssrcs)) = remb {
        v.push(Box::new(remb_packet(ssrc, bitrate, ssrcs)));
    }
    marshal(&v)
}

fn remb_packet(
    sender_ssrc: u32,
    bitrate: Bitrate,
    ssrcs: Vec<u32>,
) -> ReceiverEstimatedMaximumBitrate {
    ReceiverEstimatedMaximumBitrate {
        sender_ssrc,
        bitrate: bitrate.as_bps() as f32,
        ssrcs,
    }
}

/// A reduced-size REMB (RFC 5506).
pub fn build_remb(sender_ssrc: u32, bitrate: Bitrate, ssrcs: Vec<u32>) -> Result<Bytes, Error> {
    marshal(&[Box::new(remb_packet(sender_ssrc, bitrate, ssrcs))])
}

/// A reduced-size generic NACK.
pub fn build_nack(sender_ssrc: u32, media_ssrc: u32, seqs: &[u16]) -> Result<Bytes, Error> {
    marshal(&[Box::new(TransportLayerNack {
        sender_ssrc,
        media_ssrc,
        nacks: nack_pairs_from_sequence_numbers(seqs),
    })])
}

/// A reduced-size PLI.
pub fn build_pli(sender_ssrc: u32, media_ssrc: u32) -> Result<Bytes, Error> {
    marshal(&[Box::new(PictureLossIndication {
        sender_ssrc,
        media_ssrc,
    })])
}

/// A reduced-size FIR (RFC 5104 §4.3.1).
pub fn build_fir(sender_ssrc: u32, media_ssrc: u32, seq: u8) -> Result<Bytes, Error> {
    use rtc_rtcp::payload_feedbacks::full_intra_request::FirEntry;
    marshal(&[Box::new(FullIntraRequest {
        sender_ssrc,
        media_ssrc: 0,
        fir: vec![FirEntry {
            ssrc: media_ssrc,
            sequence_number: seq,
        }],
    })])
}

/// A BYE (RFC 3550 §6.6).
pub fn build_bye(ssrc: u32) -> Result<Bytes, Error> {
    marshal(&[Box::new(Goodbye {
        sources: vec![ssrc],
        reason: Bytes::new(),
    })])
}

/// Reduced-size transport-wide CC packets.
pub fn build_twcc(reports: Vec<TransportLayerCc>) -> Result<Vec<Bytes>, Error> {
    reports
        .into_iter()
        .map(|r| {
            r.marshal()
                .map(|b| b.freeze())
                .map_err(|e| Error::Build(e.to_string()))
        })
        .collect()
}

/// A reduced-size CCFB.
pub fn build_ccfb(report: &ccfb::Report, conv: NumReportsConvention) -> Result<Bytes, Error> {
    report.write(conv).map(Bytes::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONV: NumReportsConvention = NumReportsConvention::Count;

    fn one(b: &Bytes) -> Vec<RtcpMessage> {
        parse(b, CONV).unwrap()
    }

    #[test]
    fn sender_report_round_trips_with_sdes() {
        let sr = SenderReport {
            ssrc: 5,
            ntp_time: 0x1_0000_0000,
            rtp_time: 9000,
            packet_count: 10,
            octet_count: 12000,
            ..Default::default()
        };
        let m = one(&build_sr(sr.clone(), "cg").unwrap());
        assert_eq!(m.len(), 2);
        assert_eq!(m[0], RtcpMessage::SenderReport(sr));
        assert_eq!(m[1], RtcpMessage::Other);
    }

    #[test]
    fn receiver_report_and_remb_round_trip_in_one_compound() {
        let rb = ReceptionReport {
            ssrc: 7,
            fraction_lost: 64,
            total_lost: 3,
            last_sequence_number: 70_000,
            jitter: 90,
            last_sender_report: 0x1234_5678,
            delay: 0x0001_0000,
        };
        let b = build_rr(
            1,
            vec![rb.clone()],
            "cg",
            Some((Bitrate::kbps(1500), vec![7])),
        )
        .unwrap();
        let m = one(&b);
        match &m[0] {
            RtcpMessage::ReceiverReport(rr) => assert_eq!(rr.reports, vec![rb]),
            other => panic!("{other:?}"),
        }
        match &m[2] {
            RtcpMessage::Remb { ssrcs, bitrate } => {
                assert_eq!(ssrcs, &vec![7]);
                // REMB's mantissa/exponent form is exact for this value
                assert_eq!(*bitrate, Bitrate::kbps(1500));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn nack_pli_fir_bye_round_trip() {
        let seqs = [65530u16, 65531, 65535, 2, 100];
        match &one(&build_nack(1, 7, &seqs).unwrap())[0] {
            RtcpMessage::Nack {
                media_ssrc,
                seqs: got,
            } => {
                assert_eq!(*media_ssrc, 7);
                assert_eq!(got, &seqs.to_vec());
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            one(&build_pli(1, 7).unwrap()),
            vec![RtcpMessage::Pli { media_ssrc: 7 }]
        );
        assert_eq!(
            one(&build_fir(1, 7, 3).unwrap()),
            vec![RtcpMessage::Fir { ssrcs: vec![7] }]
        );
        assert_eq!(
            one(&build_bye(1).unwrap()),
            vec![RtcpMessage::Bye(Bye {
                sources: vec![1],
                reason: None
            })]
        );
    }

    #[test]
    fn malformed_byes_are_errors_and_reasons_are_lossy_utf8() {
        // SC = 31 or 2 with one SSRC present.
        assert!(parse(&[0x9F, 203, 0, 1, 0, 0, 0, 1], CONV).is_err());
        assert!(parse(&[0x82, 203, 0, 1, 0, 0, 0, 1], CONV).is_err());
        // Reason lengths 255 and 4 with 3 octets after them; 3 fits exactly.
        assert!(parse(&[0x81, 203, 0, 2, 0, 0, 0, 1, 255, b'a', b'b', b'c'], CONV).is_err());
        assert!(parse(&[0x81, 203, 0, 2, 0, 0, 0, 1, 4, b'a', b'b', b'c'], CONV).is_err());
        let ok = parse(&[0x81, 203, 0, 2, 0, 0, 0, 1, 3, b'a', b'b', b'c'], CONV).unwrap();
        assert_eq!(
            ok,
            vec![RtcpMessage::Bye(Bye {
                sources: vec![1],
                reason: Some("abc".into())
            })]
        );
        let lossy = parse(&[0x80, 203, 0, 1, 2, 0xFF, b'a', 0], CONV).unwrap();
        assert_eq!(
            lossy,
            vec![RtcpMessage::Bye(Bye {
                sources: vec![],
                reason: Some("\u{FFFD}a".into())
            })]
        );
        // Nothing short or odd panics.
        for b0 in 0..=255u8 {
            for len in 0..16 {
                let mut p = vec![b0, 203];
                p.extend((0..len).map(|i| (i as u8).wrapping_mul(37) ^ b0));
                let _ = parse(&p, CONV);
            }
            let _ = parse(&[0x81, 203, 0, 2, 0, 0, 0, 1, b0, 1, 2, 3], CONV);
            let _ = parse(&[0xA1, 203, 0, 2, 0, 0, 0, 1, 1, 1, 2, b0], CONV);
        }
    }

    #[test]
    fn bye_in_a_compound_after_a_receiver_report() {
        let mut b = build_rr(1, vec![], "cg", None).unwrap().to_vec();
        b.extend_from_slice(&[
            0x81, 203, 0, 3, 0, 0, 0, 7, 4, b'd', b'o', b'n', b'e', 0, 0, 0,
        ]);
        let m = one(&Bytes::from(b.clone()));
        assert_eq!(m.len(), 3);
        assert_eq!(
            m[2],
            RtcpMessage::Bye(Bye {
                sources: vec![7],
                reason: Some("done".into())
            })
        );
        // A reason running past its sub-packet rejects the compound.
        let n = b.len();
        b[n - 8] = 8;
        assert!(parse(&b, CONV).is_err());
    }

    #[test]
    fn twcc_and_ccfb_round_trip() {
        let mut fb = 0;
        let r = twcc::build(1, 7, 10, &[Some(64_000), None, Some(65_000)], &mut fb);
        let b = build_twcc(r.clone()).unwrap();
        assert_eq!(one(&b[0]), vec![RtcpMessage::TransportCc(r[0].clone())]);
        let c = ccfb::Report {
            sender_ssrc: 1,
            blocks: vec![ccfb::Block {
                media_ssrc: 7,
                begin_seq: 3,
                metrics: vec![ccfb::Metric::default(); 5],
            }],
            report_timestamp: 77,
        };
        assert_eq!(
            one(&build_ccfb(&c, CONV).unwrap()),
            vec![RtcpMessage::Ccfb(c)]
        );
    }

    /// rtc-rtcp's `TransportLayerCc::unmarshal` overflows on a length field of 0xFFFF (found
    /// by fuzz target `rtc_rtcp_unmarshal`); our splitter rejects it before it gets there.
    #[test]
    fn twcc_with_maximal_length_field_is_rejected_before_rtc_rtcp_sees_it() {
        let mut b = vec![0x8F, 205, 0xFF, 0xFF, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 1];
        b.extend_from_slice(&[0; 16]);
        assert!(parse(&b, CONV).is_err());
        assert!(rtc_rtcp::packet::unmarshal(&mut &b[..]).is_err());
    }

    #[test]
    fn overrunning_compound_is_rejected_whole() {
        let mut b = build_pli(1, 7).unwrap().to_vec();
        b.extend_from_slice(&[0x81, 201, 0x00, 0x10, 0, 0, 0, 1]);
        assert!(parse(&b, CONV).is_err());
        assert!(parse(&[], CONV).is_err());
        assert!(parse(&[0x40, 200, 0, 0], CONV).is_err());
    }
}
