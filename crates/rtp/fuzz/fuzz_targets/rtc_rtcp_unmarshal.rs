//! rtc-rtcp's own datagram parser on raw bytes (including its CcFeedbackReport, which our
//! session routes around), and each message type's unmarshal directly.
//!
//! Finding (1577 executions in): `TransportLayerCc::unmarshal` computes `4 * (length + 1)` in
//! u16 and overflows for a length field of 0xFFFF — a panic in builds with overflow checks
//! (debug, fuzz), a wrap to 0 in release. It is unreachable through `packet::unmarshal` and
//! through cg-rtp's `rtcp::parse`, which both check the length against the datagram first
//! (0xFFFF words would need a 256 KiB datagram). The direct call is skipped for that length
//! so the rest can be fuzzed; `CG_FUZZ_TWCC_LEN=1` reproduces it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtc_rtcp::payload_feedbacks::{
    full_intra_request::FullIntraRequest, picture_loss_indication::PictureLossIndication,
    receiver_estimated_maximum_bitrate::ReceiverEstimatedMaximumBitrate,
};
use rtc_rtcp::transport_feedbacks::{
    cc_feedback_report::CcFeedbackReport, transport_layer_cc::TransportLayerCc,
    transport_layer_nack::TransportLayerNack,
};
use rtc_rtcp::{
    goodbye::Goodbye, receiver_report::ReceiverReport, sender_report::SenderReport,
    source_description::SourceDescription,
};
use rtc_shared::marshal::Unmarshal;

fuzz_target!(|data: &[u8]| {
    let _ = rtc_rtcp::packet::unmarshal(&mut &data[..]);
    let _ = SenderReport::unmarshal(&mut &data[..]);
    let _ = ReceiverReport::unmarshal(&mut &data[..]);
    let _ = SourceDescription::unmarshal(&mut &data[..]);
    let _ = Goodbye::unmarshal(&mut &data[..]);
    let _ = TransportLayerNack::unmarshal(&mut &data[..]);
    let max_len = data.len() >= 4 && data[2] == 0xFF && data[3] == 0xFF;
    if !max_len || std::env::var_os("CG_FUZZ_TWCC_LEN").is_some() {
        let _ = TransportLayerCc::unmarshal(&mut &data[..]);
    }
    let _ = CcFeedbackReport::unmarshal(&mut &data[..]);
    let _ = PictureLossIndication::unmarshal(&mut &data[..]);
    let _ = FullIntraRequest::unmarshal(&mut &data[..]);
    let _ = ReceiverEstimatedMaximumBitrate::unmarshal(&mut &data[..]);
});
