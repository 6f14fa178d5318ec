//! Our RFC 8888 parser under both num_reports conventions, and write → parse round trips.
#![no_main]

use cg_rtp::rtcp::ccfb::Report;
use cg_rtp::rtcp::NumReportsConvention;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for conv in [NumReportsConvention::Count, NumReportsConvention::CountMinusOne] {
        if let Ok(r) = Report::parse(data, conv) {
            if let Ok(bytes) = r.write(conv) {
                let again = Report::parse(&bytes, conv).expect("our own CCFB parses");
                assert_eq!(again, r);
            }
        }
    }
});
