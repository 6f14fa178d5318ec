//! rtc-rtp's codec depacketizers (VP8, VP9, H.264, H.265, AV1). We do not use them on the
//! receive path (see cg-rtp's crate docs: H.264 STAP-A indexes past a truncated aggregate);
//! this target documents how they behave on hostile payloads.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use rtc_rtp::codec::{h264::H264Packet, h265::H265Packet, vp8::Vp8Packet, vp9::Vp9Packet};
use rtc_rtp::packetizer::Depacketizer;

fuzz_target!(|data: &[u8]| {
    let b = Bytes::copy_from_slice(data);
    let _ = Vp8Packet::default().depacketize(&b);
    let _ = Vp9Packet::default().depacketize(&b);
    let _ = H264Packet::default().depacketize(&b);
    let _ = H265Packet::default().depacketize(&b);
});
