//! H.264 payload format, RFC 6184, packetization-mode 1 (non-interleaved).
//!
//! NAL units that fit go alone (single NAL unit packet, §5.6); consecutive small ones (SPS,
//! PPS, SEI) are aggregated in STAP-A (§5.7.1); larger ones are fragmented in FU-A (§5.8).
//! The depacketizer writes an Annex-B stream with 4-byte start codes.

use bytes::Bytes;

use super::PayloadInfo;
use super::annexb::{START_CODE, nal_units};
use crate::Error;

const CODEC: &str = "H264";
const STAP_A: u8 = 24;
const FU_A: u8 = 28;
const IDR: u8 = 5;
const SPS: u8 = 7;

/// IDR slices, and the SPS encoders put in front of them, mark a key frame.
fn is_key(nal_type: u8) -> bool {
    nal_type == IDR || nal_type == SPS
}

fn bad(reason: &'static str) -> Error {
    Error::MalformedPayload {
        codec: CODEC,
        reason,
    }
}

/// Splits an Annex-B access unit into payloads of at most `max_payload` bytes.
pub fn packetize(frame: &Bytes, max_payload: usize) -> Result<Vec<Bytes>, Error> {
    if max_payload < 3 {
        return Err(Error::BadFrame("payload budget too small for FU-A"));
    }
    let nals = nal_units(frame);
    let mut out = Vec::new();
    let mut i = 0;
    while i < nals.len() {
        let (a, b) = nals[i];
        let nal = &frame[a..b];
        if nal.len() > max_payload {
            fragment(frame.slice(a..b), max_payload, &mut out);
            i += 1;
            continue;
        }
        // STAP-A: gather following NALs while the aggregate fits.
        let mut j = i + 1;
        let mut size = 1 + 2 + nal.len();
        while j < nals.len() {
            let len = nals[j].1 - nals[j].0;
            if len > 0xFFFF || size + 2 + len > max_payload {
                break;
            }
            size += 2 + len;
            j += 1;
        }
        if j == i + 1 || nal.len() > 0xFFFF {
            out.push(frame.slice(a..b));
            i += 1;
            continue;
        }
        let mut p = Vec::with_capacity(size);
        // §5.7.1: F is the OR of the aggregated F bits, NRI their maximum.
        let f = nals[i..j]
            .iter()
            .fold(0u8, |acc, &(s, _)| acc | (frame[s] & 0x80));
        let nri = nals[i..j]
            .iter()
            .map(|&(s, _)| frame[s] & 0x60)
            .max()
            .unwrap_or(0);
        p.push(f | nri | STAP_A);
        for &(s, e) in &nals[i..j] {
            p.extend_from_slice(&((e - s) as u16).to_be_bytes());
            p.extend_from_slice(&frame[s..e]);
        }
        out.push(Bytes::from(p));
        i = j;
    }
    if out.is_empty() {
        return Err(Error::BadFrame("no NAL units in frame"));
    }
    Ok(out)
}

fn fragment(nal: Bytes, max_payload: usize, out: &mut Vec<Bytes>) {
    let header = nal[0];
    let indicator = (header & 0xE0) | FU_A;
    let typ = header & 0x1F;
    let body = &nal[1..];
    let chunk = max_payload - 2;
    let n = body.len().div_ceil(chunk);
    for (k, part) in body.chunks(chunk).enumerate() {
        let mut fu = typ;
        if k == 0 {
            fu |= 0x80;
        }
        if k + 1 == n {
            fu |= 0x40;
        }
        let mut p = Vec::with_capacity(2 + part.len());
        p.push(indicator);
        p.push(fu);
        p.extend_from_slice(part);
        out.push(Bytes::from(p));
    }
}

/// Whether the payload carries (part of) an IDR slice or an SPS.
pub fn inspect(payload: &[u8]) -> Result<PayloadInfo, Error> {
    let b0 = *payload.first().ok_or(bad("empty payload"))?;
    let typ = b0 & 0x1F;
    let key_frame = match typ {
        1..=23 => is_key(typ),
        STAP_A => {
            let mut key = false;
            let mut at = 1;
            while at < payload.len() {
                let len_bytes = payload
                    .get(at..at + 2)
                    .ok_or(bad("truncated STAP-A size"))?;
                let len = u16::from_be_bytes([len_bytes[0], len_bytes[1]]) as usize;
                at += 2;
                let nal = payload
                    .get(at..at + len)
                    .ok_or(bad("STAP-A unit overruns"))?;
                key |= nal.first().is_some_and(|h| is_key(h & 0x1F));
                at += len;
            }
            key
        }
        FU_A => is_key(payload.get(1).ok_or(bad("truncated FU-A"))? & 0x1F),
        _ => {
            return Err(bad(
                "unsupported NAL unit type (STAP-B/MTAP/FU-B or reserved)",
            ));
        }
    };
    Ok(PayloadInfo {
        frame_start: None,
        key_frame,
    })
}

/// Appends the Annex-B data of one payload.
pub fn depacketize(payload: &[u8], out: &mut Vec<u8>) -> Result<PayloadInfo, Error> {
    let info = inspect(payload)?;
    let b0 = payload[0];
    match b0 & 0x1F {
        STAP_A => {
            let mut at = 1;
            while at + 2 <= payload.len() {
                let len = u16::from_be_bytes([payload[at], payload[at + 1]]) as usize;
                at += 2;
                out.extend_from_slice(&START_CODE);
                out.extend_from_slice(&payload[at..at + len]);
                at += len;
            }
        }
        FU_A => {
            let fu = payload[1];
            if fu & 0x80 != 0 {
                out.extend_from_slice(&START_CODE);
                out.push((b0 & 0xE0) | (fu & 0x1F));
            }
            out.extend_from_slice(&payload[2..]);
        }
        _ => {
            out.extend_from_slice(&START_CODE);
            out.extend_from_slice(payload);
        }
    }
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn au() -> Bytes {
        let mut v = vec![
            0, 0, 0, 1, 0x67, 0x42, 0x00, 0x1F, 0, 0, 0, 1, 0x68, 0xCE, 0x3C, 0x80,
        ];
        v.extend_from_slice(&[0, 0, 0, 1, 0x65]);
        v.extend((0..4000u32).map(|i| (i % 251) as u8 | 1));
        v.extend_from_slice(&[0, 0, 0, 1, 0x06, 0x05, 0x01]);
        Bytes::from(v)
    }

    #[test]
    fn access_unit_round_trips_bit_exact_with_stap_a_and_fu_a() {
        let f = au();
        let p = packetize(&f, 1200).unwrap();
        assert_eq!(p[0][0] & 0x1F, STAP_A, "SPS+PPS aggregated");
        assert_eq!(p[1][0] & 0x1F, FU_A);
        assert!(p.iter().all(|x| x.len() <= 1200));
        let mut out = Vec::new();
        let mut key = false;
        for x in &p {
            key |= depacketize(x, &mut out).unwrap().key_frame;
        }
        assert!(key);
        assert_eq!(out, f);
    }

    /// Why we own the depacketizer: rtc-rtp 0.21.1's reads a STAP-A size field past the end
    /// of a payload with one trailing byte, and panics.
    #[test]
    fn rtc_rtp_stap_a_depacketizer_panics_where_ours_returns_an_error() {
        use rtc_rtp::codec::h264::H264Packet;
        use rtc_rtp::packetizer::Depacketizer;
        let hostile = [0x78u8, 0x00, 0x01, 0x67, 0x00];
        let theirs = std::panic::catch_unwind(|| {
            let _ = H264Packet::default().depacketize(&Bytes::copy_from_slice(&hostile));
        });
        assert!(theirs.is_err(), "rtc-rtp fixed the STAP-A bounds check");
        assert!(depacketize(&hostile, &mut Vec::new()).is_err());
    }

    #[test]
    fn truncated_stap_a_is_an_error_not_a_panic() {
        for p in [
            &[0x78u8, 0x00][..],
            &[0x78, 0x00, 0x05, 0x67],
            &[0x7C],
            &[0x79, 1, 2],
        ] {
            assert!(depacketize(p, &mut Vec::new()).is_err(), "{p:?}");
        }
    }
}
