//! rtc-rtcp's own datagram parser on raw bytes (including its CcFeedbackReport, which our
//! session routes around), and each message type's unmarshal directly.
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
    let _ = TransportLayerCc::unmarshal(&mut &data[..]);
    let _ = CcFeedbackReport::unmarshal(&mut &data[..]);
    let _ = PictureLossIndication::unmarshal(&mut &data[..]);
    let _ = FullIntraRequest::unmarshal(&mut &data[..]);
    let _ = ReceiverEstimatedMaximumBitrate::unmarshal(&mut &data[..]);
});
