//! Our RTCP entry point: compound splitting, every rtc-rtcp message parser we use (SR, RR,
//! SDES, XR, generic NACK, RRR, transport-wide CC, PLI, SLI, REMB, FIR, raw) and our RFC 8888
//! and BYE parsers, under both num_reports conventions; parsed transport-wide CC is decoded to
//! arrivals.
#![no_main]

use cg_rtp::rtcp::{self, NumReportsConvention, RtcpMessage, twcc};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for conv in [NumReportsConvention::Count, NumReportsConvention::CountMinusOne] {
        if let Ok(msgs) = rtcp::parse(data, conv) {
            for m in msgs {
                if let RtcpMessage::TransportCc(t) = m {
                    let _ = twcc::decode(&t, t.reference_time as i64 * twcc::REFERENCE_UNIT_US);
                }
            }
        }
    }
});
