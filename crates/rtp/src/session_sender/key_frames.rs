//! Dropped media and key frames: what the session drops, when it asks the encoder for a key
//! frame, and which receiver requests a key frame already on its way answers (see the module
//! docs of the session).

use std::time::{Duration, Instant};

use super::{KeyFrameReason, SenderEvent, SenderSession};
use crate::pacer::Dropped;

impl SenderSession {
    pub(super) fn enforce_queue_bound(&mut self, now: Instant) {
        let d = self.pacer.enforce_limit(now);
        if d.frames > 0 {
            self.queued_media_dropped(d, KeyFrameReason::QueueOverflow);
        }
    }

    /// Queued media was dropped: counts it, refuses delta frames until a key frame if whole
    /// frames went (the frames after a dropped one do not decode without it), and asks for
    /// the key frame.
    pub(super) fn queued_media_dropped(&mut self, d: Dropped, reason: KeyFrameReason) {
        self.frames_dropped(d.frames, d.packets, reason);
        if d.frames > 0 {
            self.awaiting_key = Some(reason);
        }
        self.request_key_frame(reason);
    }

    /// Counts dropped frames and tells the driver.
    pub(super) fn frames_dropped(&mut self, frames: u64, packets: u64, reason: KeyFrameReason) {
        if frames == 0 {
            return;
        }
        if packets > 0 && self.key_in_flight.is_some_and(|(_, sent)| sent.is_none()) {
            // Queued frames were dropped, perhaps the key frame: it answers nothing now.
            self.key_in_flight = None;
        }
        self.stats.frames_dropped += frames;
        tracing::debug!(frames, packets, ?reason, "queued frames dropped");
        self.events.push_back(SenderEvent::FramesDropped {
            frames,
            packets,
            reason,
        });
    }

    /// A PLI or FIR: passed on unless a key frame already on its way answers it.
    pub(super) fn receiver_wants_key_frame(&mut self, reason: KeyFrameReason, now: Instant) {
        if self.key_frame_in_flight(now) {
            self.stats.key_frame_requests_in_flight += 1;
            tracing::debug!(?reason, "key frame request answered by the one in flight");
        } else {
            tracing::debug!(?reason, "key frame request passed to the encoder");
            self.request_key_frame(reason);
        }
    }

    /// Whether a key frame already on its way answers a receiver's request made at `now`.
    pub(super) fn key_frame_in_flight(&self, now: Instant) -> bool {
        match self.key_in_flight {
            None => false,
            Some((_, None)) => true,
            Some((_, Some(sent))) => {
                // The receiver sees it an RTT after it left; if a packet of it was lost, a NACK
                // round trip later it is repaired.
                let rtt = self.stats.rtt.unwrap_or(Duration::from_millis(100));
                now < sent + 2 * rtt + Duration::from_millis(100)
            }
        }
    }

    pub(super) fn request_key_frame(&mut self, reason: KeyFrameReason) {
        self.stats.key_frame_requests += 1;
        self.events
            .push_back(SenderEvent::KeyFrameRequested(reason));
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use bytes::Bytes;
    use cg_cc::FixedRate;
    use cg_types::Bitrate;

    use super::super::{KeyFrameReason, SenderConfig, SenderEvent, SenderSession};
    use crate::{Codec, EncodedFrame};

    fn session(now: Instant) -> SenderSession {
        SenderSession::new(
            SenderConfig::default(),
            Box::new(FixedRate::new(Bitrate::mbps(1))),
            now,
        )
        .unwrap()
    }

    fn frame(key: bool, capture_time: Instant) -> EncodedFrame {
        EncodedFrame {
            encoded: None,
            data: Bytes::from(vec![if key { 0x10 } else { 0x11 }; 3000]),
            capture_time,
            key_frame: key,
            codec: Codec::Vp8,
        }
    }

    fn key_requests(s: &mut SenderSession) -> Vec<KeyFrameReason> {
        std::iter::from_fn(|| s.poll_event())
            .filter_map(|e| match e {
                SenderEvent::KeyFrameRequested(r) => Some(r),
                _ => None,
            })
            .collect()
    }

    /// Sends everything queued (the pacer's budget allowing) up to `until`.
    fn drain(s: &mut SenderSession, mut now: Instant, until: Instant) {
        while now < until {
            while s.poll_transmit(now).is_some() {}
            now += Duration::from_millis(1);
        }
    }

    #[test]
    fn a_request_while_the_key_frame_is_queued_is_answered_by_it() {
        let t0 = Instant::now();
        let mut s = session(t0);
        s.push_frame(frame(true, t0), t0).unwrap();
        s.receiver_wants_key_frame(KeyFrameReason::Pli, t0);
        assert_eq!(key_requests(&mut s), []);
        assert_eq!(s.stats.key_frame_requests_in_flight, 1);
    }

    #[test]
    fn a_sent_key_frame_answers_requests_for_two_rtts_and_100_ms() {
        let t0 = Instant::now();
        let mut s = session(t0);
        s.push_frame(frame(true, t0), t0).unwrap();
        drain(&mut s, t0, t0 + Duration::from_millis(100));
        let Some((_, Some(sent))) = s.key_in_flight else {
            panic!("the key frame left: {:?}", s.key_in_flight);
        };
        // No RTT measured: 100 ms is assumed, so 300 ms after the last packet left.
        let edge = sent + Duration::from_millis(300);
        s.receiver_wants_key_frame(KeyFrameReason::Pli, edge - Duration::from_millis(1));
        assert_eq!(key_requests(&mut s), []);
        s.receiver_wants_key_frame(KeyFrameReason::Fir, edge);
        assert_eq!(key_requests(&mut s), [KeyFrameReason::Fir]);
    }

    #[test]
    fn after_queued_frames_are_dropped_deltas_are_refused_until_a_key_frame() {
        let t0 = Instant::now();
        let mut s = session(t0);
        s.push_frame(frame(false, t0), t0).unwrap();
        s.push_frame(frame(false, t0), t0).unwrap();
        let d = s.pacer.discard_media();
        assert_eq!(d.frames, 2);
        s.queued_media_dropped(d, KeyFrameReason::Controller);
        assert_eq!(key_requests(&mut s), [KeyFrameReason::Controller]);
        s.push_frame(frame(false, t0), t0).unwrap();
        assert_eq!(
            s.stats.frames_dropped, 3,
            "two discarded, one delta refused"
        );
        s.push_frame(frame(true, t0), t0).unwrap();
        s.push_frame(frame(false, t0), t0).unwrap();
        assert_eq!(s.stats.frames_dropped, 3);
        assert_eq!(s.stats.frames_pushed, 4, "{:?}", s.stats);
    }

    #[test]
    fn a_dropped_queued_key_frame_answers_nothing() {
        let t0 = Instant::now();
        let mut s = session(t0);
        s.push_frame(frame(true, t0), t0).unwrap();
        let d = s.pacer.discard_media();
        s.queued_media_dropped(d, KeyFrameReason::QueueOverflow);
        assert_eq!(s.key_in_flight, None);
        let _ = key_requests(&mut s);
        s.receiver_wants_key_frame(KeyFrameReason::Pli, t0);
        assert_eq!(key_requests(&mut s), [KeyFrameReason::Pli]);
    }
}
