//! VP8 payload format, RFC 7741.
//!
//! We write the payload descriptor with the extension byte and a 15-bit PictureID (§4.2,
//! X=1, I=1, M=1): 4 bytes, S=1 and PID=0 on the first packet of a frame, one partition
//! (PID=0) throughout, since the encoder hands us whole frames. The depacketizer accepts every
//! optional field (I, L, T, K).

use bytes::Bytes;

use super::PayloadInfo;
use crate::Error;

const DESCRIPTOR_LEN: usize = 4;
const CODEC: &str = "VP8";

/// Splits a VP8 frame into payloads of at most `max_payload` bytes.
pub fn packetize(frame: &Bytes, max_payload: usize, picture_id: u16) -> Result<Vec<Bytes>, Error> {
    if max_payload <= DESCRIPTOR_LEN {
        return Err(Error::BadFrame(
            "payload budget smaller than the VP8 descriptor",
        ));
    }
    let chunk = max_payload - DESCRIPTOR_LEN;
    let pid = picture_id & 0x7FFF;
    let mut out = Vec::with_capacity(frame.len().div_ceil(chunk));
    for (i, part) in frame.chunks(chunk).enumerate() {
        let mut p = Vec::with_capacity(DESCRIPTOR_LEN + part.len());
        // X=1, N=0, S=first, PID=0
        p.push(0x80 | if i == 0 { 0x10 } else { 0 });
        // I=1 (PictureID present)
        p.push(0x80);
        // M=1, 15-bit PictureID
        p.push(0x80 | (pid >> 8) as u8);
        p.push(pid as u8);
        p.extend_from_slice(part);
        out.push(Bytes::from(p));
    }
    Ok(out)
}

/// Parses the payload descriptor; returns (descriptor length, S bit, PID).
fn descriptor(payload: &[u8]) -> Result<(usize, bool, u8), Error> {
    let bad = |reason| Error::MalformedPayload {
        codec: CODEC,
        reason,
    };
    let b0 = *payload.first().ok_or(bad("empty payload"))?;
    let s = b0 & 0x10 != 0;
    let pid = b0 & 0x07;
    let mut n = 1;
    if b0 & 0x80 != 0 {
        let x = *payload.get(n).ok_or(bad("truncated extension byte"))?;
        n += 1;
        if x & 0x80 != 0 {
            let pic = *payload.get(n).ok_or(bad("truncated PictureID"))?;
            n += if pic & 0x80 != 0 { 2 } else { 1 };
        }
        if x & 0x40 != 0 {
            n += 1; // TL0PICIDX
        }
        if x & 0x30 != 0 {
            n += 1; // TID/Y/KEYIDX
        }
    }
    if n > payload.len() {
        return Err(bad("descriptor longer than payload"));
    }
    Ok((n, s, pid))
}

/// What a payload says: frame start (S=1, PID=0) and key frame (VP8 payload header P bit
/// clear in the first partition's first byte, RFC 7741 §4.3).
pub fn inspect(payload: &[u8]) -> Result<PayloadInfo, Error> {
    let (n, s, pid) = descriptor(payload)?;
    let start = s && pid == 0;
    let key_frame = start && payload.get(n).is_some_and(|b| b & 0x01 == 0);
    Ok(PayloadInfo {
        frame_start: Some(start),
        key_frame,
    })
}

/// Appends the VP8 data of one payload.
pub fn depacketize(payload: &[u8], out: &mut Vec<u8>) -> Result<PayloadInfo, Error> {
    let info = inspect(payload)?;
    let (n, _, _) = descriptor(payload)?;
    out.extend_from_slice(&payload[n..]);
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_round_trips_through_payloads_within_budget() {
        let frame: Vec<u8> = (0..5000u32).map(|i| (i * 7) as u8 & 0xFE).collect();
        let frame = Bytes::from(frame);
        let p = packetize(&frame, 1000, 300).unwrap();
        assert_eq!(p.len(), 6);
        assert!(p.iter().all(|x| x.len() <= 1000));
        let mut out = Vec::new();
        for (i, x) in p.iter().enumerate() {
            let info = depacketize(x, &mut out).unwrap();
            assert_eq!(info.frame_start, Some(i == 0));
            assert_eq!(info.key_frame, i == 0);
        }
        assert_eq!(out, frame);
    }

    #[test]
    fn accepts_all_optional_descriptor_fields() {
        // X, I (7-bit), L, T/K
        let p = [0x90, 0xF0, 0x05, 0x01, 0x20, 0xAA, 0xBB];
        let mut out = Vec::new();
        depacketize(&p, &mut out).unwrap();
        assert_eq!(out, vec![0xAA, 0xBB]);
    }

    #[test]
    fn truncated_descriptors_are_errors() {
        for p in [
            &[][..],
            &[0x80],
            &[0x80, 0x80],
            &[0x80, 0x80, 0x80],
            &[0x80, 0x40],
        ] {
            assert!(depacketize(p, &mut Vec::new()).is_err(), "{p:?}");
        }
    }
}
