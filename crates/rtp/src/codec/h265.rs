//! H.265 payload format, RFC 7798 (no DONL: sprop-max-don-diff = 0).
//!
//! NAL units that fit go alone (§4.4.1); consecutive small ones are aggregated in an AP
//! (§4.4.2); larger ones are fragmented in FUs (§4.4.3). PACI packets (§4.4.4) are refused.
//! The depacketizer writes an Annex-B stream with 4-byte start codes.

use bytes::Bytes;

use super::PayloadInfo;
use super::annexb::{START_CODE, nal_units};
use crate::Error;

const CODEC: &str = "H265";
const AP: u8 = 48;
const FU: u8 = 49;
const PACI: u8 = 50;

fn bad(reason: &'static str) -> Error {
    Error::MalformedPayload {
        codec: CODEC,
        reason,
    }
}

fn nal_type(b0: u8) -> u8 {
    (b0 >> 1) & 0x3F
}

/// IRAP pictures (BLA, IDR, CRA: types 16–21) start a decoding chain; the VPS/SPS (32, 33)
/// encoders put in front of them mark one too.
fn is_irap(typ: u8) -> bool {
    (16..=21).contains(&typ) || typ == 32 || typ == 33
}

/// Splits an Annex-B access unit into payloads of at most `max_payload` bytes.
pub fn packetize(frame: &Bytes, max_payload: usize) -> Result<Vec<Bytes>, Error> {
    if max_payload < 4 {
        return Err(Error::BadFrame("payload budget too small for an FU"));
    }
    let nals: Vec<(usize, usize)> = nal_units(frame)
        .into_iter()
        .filter(|(a, b)| b - a >= 2)
        .collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < nals.len() {
        let (a, b) = nals[i];
        if b - a > max_payload {
            fragment(&frame[a..b], max_payload, &mut out);
            i += 1;
            continue;
        }
        let mut j = i + 1;
        let mut size = 2 + 2 + (b - a);
        while j < nals.len() {
            let len = nals[j].1 - nals[j].0;
            if len > 0xFFFF || size + 2 + len > max_payload {
                break;
            }
            size += 2 + len;
            j += 1;
        }
        if j == i + 1 || b - a > 0xFFFF {
            out.push(frame.slice(a..b));
            i += 1;
            continue;
        }
        // §4.4.2: F = OR of F bits, LayerId and TID = the lowest of the aggregated units.
        let units = &nals[i..j];
        let f = units
            .iter()
            .fold(0u8, |acc, &(s, _)| acc | (frame[s] & 0x80));
        let layer = units
            .iter()
            .map(|&(s, _)| (((frame[s] & 1) as u16) << 5) | (frame[s + 1] >> 3) as u16)
            .min()
            .unwrap_or(0);
        let tid = units
            .iter()
            .map(|&(s, _)| frame[s + 1] & 0x07)
            .min()
            .unwrap_or(1);
        let mut p = Vec::with_capacity(size);
        p.push(f | (AP << 1) | (layer >> 5) as u8);
        p.push(((layer as u8 & 0x1F) << 3) | tid);
        for &(s, e) in units {
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

fn fragment(nal: &[u8], max_payload: usize, out: &mut Vec<Bytes>) {
    let typ = nal_type(nal[0]);
    let h0 = (nal[0] & 0x81) | (FU << 1);
    let h1 = nal[1];
    let body = &nal[2..];
    let chunk = max_payload - 3;
    let n = body.len().div_ceil(chunk);
    for (k, part) in body.chunks(chunk).enumerate() {
        let mut fu = typ;
        if k == 0 {
            fu |= 0x80;
        }
        if k + 1 == n {
            fu |= 0x40;
        }
        let mut p = Vec::with_capacity(3 + part.len());
        p.extend_from_slice(&[h0, h1, fu]);
        p.extend_from_slice(part);
        out.push(Bytes::from(p));
    }
}

/// Whether the payload carries (part of) an IRAP picture.
pub fn inspect(payload: &[u8]) -> Result<PayloadInfo, Error> {
    if payload.len() < 3 {
        return Err(bad("shorter than a payload header and one byte"));
    }
    if payload[0] & 0x80 != 0 {
        return Err(bad("forbidden zero bit set"));
    }
    let key_frame = match nal_type(payload[0]) {
        AP => {
            let mut key = false;
            let mut at = 2;
            while at < payload.len() {
                let len_bytes = payload.get(at..at + 2).ok_or(bad("truncated AP size"))?;
                let len = u16::from_be_bytes([len_bytes[0], len_bytes[1]]) as usize;
                at += 2;
                if len < 2 {
                    return Err(bad("AP unit shorter than a NAL header"));
                }
                let nal = payload.get(at..at + len).ok_or(bad("AP unit overruns"))?;
                key |= is_irap(nal_type(nal[0]));
                at += len;
            }
            key
        }
        FU => is_irap(payload[2] & 0x3F),
        PACI => return Err(bad("PACI packets are not supported")),
        t => is_irap(t),
    };
    Ok(PayloadInfo {
        frame_start: None,
        key_frame,
    })
}

/// Appends the Annex-B data of one payload.
pub fn depacketize(payload: &[u8], out: &mut Vec<u8>) -> Result<PayloadInfo, Error> {
    let info = inspect(payload)?;
    match nal_type(payload[0]) {
        AP => {
            let mut at = 2;
            while at + 2 <= payload.len() {
                let len = u16::from_be_bytes([payload[at], payload[at + 1]]) as usize;
                at += 2;
                out.extend_from_slice(&START_CODE);
                out.extend_from_slice(&payload[at..at + len]);
                at += len;
            }
        }
        FU => {
            let fu = payload[2];
            if fu & 0x80 != 0 {
                out.extend_from_slice(&START_CODE);
                out.push((payload[0] & 0x81) | ((fu & 0x3F) << 1));
                out.push(payload[1]);
            }
            out.extend_from_slice(&payload[3..]);
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
        // VPS (32), SPS (33), PPS (34), IDR_W_RADL (19) slice
        let mut v = vec![0, 0, 0, 1, 0x40, 0x01, 0x0C, 0x01];
        v.extend_from_slice(&[0, 0, 0, 1, 0x42, 0x01, 0x01, 0x60]);
        v.extend_from_slice(&[0, 0, 0, 1, 0x44, 0x01, 0xC1, 0x72]);
        v.extend_from_slice(&[0, 0, 0, 1, 0x26, 0x01]);
        v.extend((0..3000u32).map(|i| (i % 253) as u8 | 1));
        Bytes::from(v)
    }

    #[test]
    fn access_unit_round_trips_bit_exact_with_ap_and_fu() {
        let f = au();
        let p = packetize(&f, 1000).unwrap();
        assert_eq!(nal_type(p[0][0]), AP);
        assert_eq!(nal_type(p[1][0]), FU);
        assert!(p.iter().all(|x| x.len() <= 1000));
        let mut out = Vec::new();
        let mut key = false;
        for x in &p {
            key |= depacketize(x, &mut out).unwrap().key_frame;
        }
        assert!(key);
        assert_eq!(out, f);
    }

    #[test]
    fn hostile_payloads_are_errors() {
        for p in [
            &[0x60u8, 1, 0, 9][..],
            &[0x60, 1, 0],
            &[0x80, 1, 2],
            &[0x64, 1, 2],
            &[0x60, 1, 0, 1, 0],
        ] {
            assert!(depacketize(p, &mut Vec::new()).is_err(), "{p:?}");
        }
    }
}
