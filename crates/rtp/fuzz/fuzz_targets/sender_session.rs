//! A sender session fed arbitrary datagrams (RTCP feedback of every kind, NACKs for whatever)
//! after sending some media: feedback parsing, TWCC/CCFB unwrapping, NACK → RTX. Never a panic.
#![no_main]

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use bytes::Bytes;
use cg_cc::{Controller, ControllerStats, Feedback, FeedbackKind, SentPacket};
use cg_rtp::{Codec, EncodedFrame, SenderConfig, SenderSession};
use cg_types::{Bitrate, Ecn};
use libfuzzer_sys::fuzz_target;

#[derive(Debug)]
struct Fixed;

impl Controller for Fixed {
    fn on_packet_sent(&mut self, _: &SentPacket) {}
    fn on_feedback(&mut self, f: &Feedback<'_>, _: Instant) {
        // Results must be in send order and refer to packets that were sent.
        for w in f.packets.windows(2) {
            assert!(w[0].seq <= w[1].seq);
        }
    }
    fn target_bitrate(&self) -> Bitrate {
        Bitrate::mbps(10)
    }
    fn pacing_rate(&self) -> Bitrate {
        Bitrate::mbps(15)
    }
    fn feedback_kind(&self) -> FeedbackKind {
        FeedbackKind::Rfc8888
    }
    fn stats(&self) -> ControllerStats {
        ControllerStats::default()
    }
}

static T0: OnceLock<Instant> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    let t0 = *T0.get_or_init(Instant::now);
    let mut tx = SenderSession::new(SenderConfig::default(), Box::new(Fixed), t0).expect("valid config");
    let mut now = t0;
    for k in 0..3u8 {
        let f = EncodedFrame {
            data: Bytes::from(vec![if k == 0 { 0x10 } else { 0x11 }; 3000]),
            capture_time: now,
            // Encoded at once: the frames carry their video-timing stages.
            encoded: Some((now, now)),
            key_frame: k == 0,
            codec: Codec::Vp8,
        };
        tx.push_frame(f, now).expect("valid frame");
        now += Duration::from_millis(10);
        while tx.poll_transmit(now).is_some() {}
    }
    for (i, dgram) in data.split(|b| *b == 0xFF).enumerate() {
        now += Duration::from_millis((i % 5) as u64);
        let _ = tx.handle_input(dgram, Ecn::NotEct, now);
        tx.handle_timeout(now);
        while tx.poll_transmit(now).is_some() {}
        while tx.poll_event().is_some() {}
    }
});
