//! Transport-wide congestion control feedback
//! (draft-holmer-rmcat-transport-wide-cc-extensions-01 §3.1): building reports from arrival
//! times and turning parsed reports back into per-packet arrival times.
//!
//! `rtc-rtcp`'s `TransportLayerCc` is the wire type; it has no builder and no decoder to
//! arrival times, which is what this file adds. We write two-bit status-vector chunks (seven
//! packets each, §3.1.4) and run-length chunks for long runs of losses (§3.1.3).

use rtc_rtcp::transport_feedbacks::transport_layer_cc::{
    PacketStatusChunk, RecvDelta, RunLengthChunk, StatusChunkTypeTcc, StatusVectorChunk,
    SymbolSizeTypeTcc, SymbolTypeTcc, TransportLayerCc,
};

/// Receive deltas are multiples of 250 µs (§3.1.5).
pub const DELTA_UNIT_US: i64 = 250;
/// The reference time counts 64 ms (§3.1).
pub const REFERENCE_UNIT_US: i64 = 64_000;

/// Builds one or more reports for consecutive transport sequence numbers starting at
/// `base_seq`; `arrivals[i]` is the arrival time (µs on the receiver's clock) of
/// `base_seq + i`, or `None` if it has not arrived. A new report starts where a receive delta
/// would not fit in 16 bits. `fb_count` is the feedback packet counter, incremented per report.
pub fn build(
    sender_ssrc: u32,
    media_ssrc: u32,
    base_seq: u16,
    arrivals: &[Option<i64>],
    fb_count: &mut u8,
) -> Vec<TransportLayerCc> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < arrivals.len() {
        let Some(first) = arrivals[start..].iter().flatten().next() else {
            break; // nothing received in the rest: no report needed
        };
        let reference = first.div_euclid(REFERENCE_UNIT_US);
        let mut prev_q = reference * (REFERENCE_UNIT_US / DELTA_UNIT_US);
        let mut symbols = Vec::new();
        let mut deltas = Vec::new();
        let mut end = start;
        while end < arrivals.len() && end - start < u16::MAX as usize {
            match arrivals[end] {
                None => symbols.push(SymbolTypeTcc::PacketNotReceived),
                Some(t) => {
                    let q = t.div_euclid(DELTA_UNIT_US);
                    let d = q - prev_q;
                    let sym = if (0..=255).contains(&d) {
                        SymbolTypeTcc::PacketReceivedSmallDelta
                    } else if (i16::MIN as i64..=i16::MAX as i64).contains(&d) {
                        SymbolTypeTcc::PacketReceivedLargeDelta
                    } else {
                        break;
                    };
                    symbols.push(sym);
                    deltas.push(RecvDelta {
                        type_tcc_packet: sym,
                        delta: d * DELTA_UNIT_US,
                    });
                    prev_q = q;
                }
            }
            end += 1;
        }
        out.push(TransportLayerCc {
            sender_ssrc,
            media_ssrc,
            base_sequence_number: base_seq.wrapping_add(start as u16),
            packet_status_count: symbols.len() as u16,
            reference_time: (reference as u32) & 0x00FF_FFFF,
            fb_pkt_count: *fb_count,
            packet_chunks: chunks(&symbols),
            recv_deltas: deltas,
        });
        *fb_count = fb_count.wrapping_add(1);
        start = end;
    }
    out
}

fn chunks(symbols: &[SymbolTypeTcc]) -> Vec<PacketStatusChunk> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < symbols.len() {
        let run = symbols[i..]
            .iter()
            .take_while(|s| **s == symbols[i])
            .count();
        if run >= 14 {
            let run = run.min(0x1FFF);
            out.push(PacketStatusChunk::RunLengthChunk(RunLengthChunk {
                type_tcc: StatusChunkTypeTcc::RunLengthChunk,
                packet_status_symbol: symbols[i],
                run_length: run as u16,
            }));
            i += run;
            continue;
        }
        let mut list: Vec<SymbolTypeTcc> = symbols[i..].iter().take(7).copied().collect();
        i += list.len();
        list.resize(7, SymbolTypeTcc::PacketNotReceived);
        out.push(PacketStatusChunk::StatusVectorChunk(StatusVectorChunk {
            type_tcc: StatusChunkTypeTcc::StatusVectorChunk,
            symbol_size: SymbolSizeTypeTcc::TwoBit,
            symbol_list: list,
        }));
    }
    out
}

/// Per-packet results of a parsed report: `(transport seq, arrival µs on the receiver's clock
/// relative to an unwrapped reference)`. `reference_us` is the report's reference time
/// already unwrapped by the caller (µs). Malformed combinations (more received symbols than
/// deltas) end the list early rather than failing.
pub fn decode(report: &TransportLayerCc, reference_us: i64) -> Vec<(u16, Option<i64>)> {
    let count = report.packet_status_count as usize;
    let mut out = Vec::with_capacity(count.min(1 << 14));
    let mut deltas = report.recv_deltas.iter();
    let mut t = reference_us;
    let mut seq = report.base_sequence_number;
    'chunks: for chunk in &report.packet_chunks {
        let (sym, n): (Vec<SymbolTypeTcc>, usize) = match chunk {
            PacketStatusChunk::RunLengthChunk(c) => {
                (vec![c.packet_status_symbol], c.run_length as usize)
            }
            PacketStatusChunk::StatusVectorChunk(c) => (c.symbol_list.clone(), c.symbol_list.len()),
        };
        for k in 0..n {
            if out.len() >= count {
                break 'chunks;
            }
            let s = if sym.len() == 1 { sym[0] } else { sym[k] };
            let arrival = match s {
                SymbolTypeTcc::PacketReceivedSmallDelta
                | SymbolTypeTcc::PacketReceivedLargeDelta => {
                    let Some(d) = deltas.next() else {
                        break 'chunks;
                    };
                    t = t.saturating_add(d.delta);
                    Some(t)
                }
                // "received without delta" carries no time; treat as unknown arrival
                SymbolTypeTcc::PacketReceivedWithoutDelta | SymbolTypeTcc::PacketNotReceived => {
                    None
                }
            };
            out.push((seq, arrival));
            seq = seq.wrapping_add(1);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtc_shared::marshal::{Marshal, Unmarshal};

    #[test]
    fn report_round_trips_through_the_wire_with_losses_and_large_deltas() {
        let mut arrivals = vec![];
        let mut t = 1_000_000i64;
        for i in 0..40 {
            if i % 5 == 3 {
                arrivals.push(None);
            } else {
                t += if i == 20 { 300_000 } else { 1_250 };
                arrivals.push(Some(t));
            }
        }
        arrivals.extend(std::iter::repeat_n(None, 20));
        arrivals.push(Some(t + 500));
        let mut fb = 7;
        let reports = build(1, 2, 65530, &arrivals, &mut fb);
        assert_eq!(reports.len(), 1);
        assert_eq!(fb, 8);
        let bytes = reports[0].marshal().unwrap();
        let parsed = TransportLayerCc::unmarshal(&mut &bytes[..]).unwrap();
        let reference = parsed.reference_time as i64 * REFERENCE_UNIT_US;
        let got = decode(&parsed, reference);
        assert_eq!(got.len(), arrivals.len());
        for (i, (seq, a)) in got.iter().enumerate() {
            assert_eq!(*seq, 65530u16.wrapping_add(i as u16));
            match (a, arrivals[i]) {
                (None, None) => {}
                (Some(a), Some(b)) => assert!((a - b).abs() < DELTA_UNIT_US, "{i}: {a} vs {b}"),
                other => panic!("{i}: {other:?}"),
            }
        }
    }

    #[test]
    fn delta_beyond_sixteen_bits_starts_a_new_report() {
        let arrivals = vec![Some(0), Some(10_000_000), Some(10_001_000)];
        let mut fb = 0;
        let r = build(1, 2, 0, &arrivals, &mut fb);
        assert_eq!(r.len(), 2);
        assert_eq!(r[1].base_sequence_number, 1);
        assert_eq!(r[1].packet_status_count, 2);
    }

    #[test]
    fn all_lost_needs_no_report() {
        let mut fb = 0;
        assert!(build(1, 2, 0, &[None, None], &mut fb).is_empty());
    }
}
