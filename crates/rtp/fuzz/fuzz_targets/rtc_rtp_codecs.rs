//! rtc-rtp's codec depacketizers (VP8, VP9, H.264, H.265). We do not use them on the receive
//! path: this target found rtc-rtp 0.21.1's H.264 STAP-A depacketizer panicking
//! (h264/mod.rs:264, a size field read past the end; 3176 executions in). STAP-A payloads
//! (NAL type 24) are kept away from it so the rest can be fuzzed; set
//! `CG_FUZZ_STAP_A=1` to reproduce the crash.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use rtc_rtp::codec::{h264::H264Packet, h265::H265Packet, vp8::Vp8Packet, vp9::Vp9Packet};
use rtc_rtp::packetizer::Depacketizer;

fuzz_target!(|data: &[u8]| {
    let b = Bytes::copy_from_slice(data);
    let _ = Vp8Packet::default().depacketize(&b);
    let _ = Vp9Packet::default().depacketize(&b);
    let stap_a = data.first().is_some_and(|b0| b0 & 0x1F == 24);
    if !stap_a || std::env::var_os("CG_FUZZ_STAP_A").is_some() {
        let _ = H264Packet::default().depacketize(&b);
    }
    let _ = H265Packet::default().depacketize(&b);
});
