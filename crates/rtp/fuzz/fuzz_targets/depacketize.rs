//! Our codec depacketizers on hostile payloads, and packetize → depacketize round trips.
#![no_main]

use bytes::Bytes;
use cg_rtp::Codec;
use cg_rtp::codec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut out = Vec::new();
    for c in [Codec::Vp8, Codec::H264, Codec::H265] {
        out.clear();
        let _ = codec::depacketize(c, data, &mut out);
        let _ = codec::inspect(c, data);
    }
    // Round trip: a frame split at a budget taken from the input must come back whole.
    if data.len() > 2 {
        let budget = 8 + (data[0] as usize) * 4;
        let frame = Bytes::copy_from_slice(&data[1..]);
        if let Ok(p) = codec::packetize(Codec::Vp8, &frame, budget, 7) {
            let mut back = Vec::new();
            for x in &p {
                assert!(x.len() <= budget);
                codec::depacketize(Codec::Vp8, x, &mut back).expect("our own VP8 payloads parse");
            }
            assert_eq!(back, &data[1..]);
        }
        for c in [Codec::H264, Codec::H265] {
            if let Ok(p) = codec::packetize(c, &frame, budget, 0) {
                let mut back = Vec::new();
                for x in &p {
                    assert!(x.len() <= budget);
                    let _ = codec::depacketize(c, x, &mut back);
                }
            }
        }
    }
});
