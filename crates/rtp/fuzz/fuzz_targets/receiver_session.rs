//! A receiver session fed arbitrary datagrams (the input split at 0xFF 0x00 markers), with time
//! advancing: RTP parsing, RTX, frame assembly, NACK/feedback generation. Never a panic, and
//! buffers stay bounded.
#![no_main]

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use cg_cc::FeedbackKind;
use cg_rtp::{FeedbackConfig, ReceiverConfig, ReceiverSession};
use cg_types::Ecn;
use libfuzzer_sys::fuzz_target;

static T0: OnceLock<Instant> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    let t0 = *T0.get_or_init(Instant::now);
    let kind = match data.first().map(|b| b % 2) {
        Some(0) => FeedbackKind::TransportWideCc,
        _ => FeedbackKind::Rfc8888,
    };
    let cfg = ReceiverConfig { feedback: FeedbackConfig::for_kind(kind), ..ReceiverConfig::default() };
    let mut rx = ReceiverSession::new(cfg, None, t0).expect("valid config");
    let mut now = t0;
    for (i, dgram) in data.split(|b| *b == 0xFF).enumerate() {
        now += Duration::from_millis((i % 7) as u64 * 5);
        let _ = rx.handle_input(dgram, Ecn::from_bits(i as u8), now);
        if let Some(t) = rx.poll_timeout() {
            if t <= now {
                rx.handle_timeout(now);
            }
        }
        while rx.poll_transmit(now).is_some() {}
        while rx.poll_event().is_some() {}
    }
    rx.handle_timeout(now + Duration::from_secs(2));
    while rx.poll_transmit(now).is_some() {}
});
