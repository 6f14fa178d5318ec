//! Our RTP parse (`rtc-rtp`'s header parser and ours of every extension cg reads: abs-send-time,
//! transport-wide sequence number, abs-capture-time, playout-delay, video-timing) on raw
//! bytes; what parses is written back and must parse to the same fields.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    cg_rtp::fuzzing::parse_and_rewrite_rtp(data);
});
