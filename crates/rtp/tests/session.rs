//! Sender and receiver sessions end to end over a fixed-delay wire with a trivial controller:
//! frames bit-exact for every codec, feedback of every kind reaching the controller, NACK
//! repair, PLI, the pacer's queue bound and discards (no sequence gap), the circuit breaker,
//! and hostile input.

mod common;

use std::time::{Duration, Instant};

use cg_cc::{ControllerEvent, FeedbackKind};
use cg_rtp::{
    BreakerState, Codec, FeedbackConfig, KeyFrameReason, ReceiverConfig, ReceiverSession,
    SenderConfig, SenderEvent, SenderSession, TransmitKind,
};
use cg_types::{Bitrate, DataSize, Ecn};
use common::{ConstEstimator, Fixed, Wire, cbr_source, frame};

const DELAY: Duration = Duration::from_millis(20);

fn wire(
    kind: FeedbackKind,
    rate: Bitrate,
    ecn: Ecn,
) -> (Wire, std::sync::Arc<std::sync::Mutex<common::Seen>>) {
    wire_with(
        kind,
        rate,
        SenderConfig {
            ecn,
            ..SenderConfig::default()
        },
    )
}

fn wire_with(
    kind: FeedbackKind,
    rate: Bitrate,
    config: SenderConfig,
) -> (Wire, std::sync::Arc<std::sync::Mutex<common::Seen>>) {
    let t0 = Instant::now();
    let (cc, seen) = Fixed::new(rate, kind);
    let tx = SenderSession::new(config, cc, t0).unwrap();
    let est: Option<Box<dyn cg_cc::ReceiveSideEstimator>> =
        (kind == FeedbackKind::Remb).then(|| {
            Box::new(ConstEstimator {
                rate: Bitrate::kbps(1234),
                next: None,
                packets: 0,
                padding: Default::default(),
            }) as _
        });
    let rx = ReceiverSession::new(
        ReceiverConfig {
            feedback: FeedbackConfig::for_kind(kind),
            ..ReceiverConfig::default()
        },
        est,
        t0,
    )
    .unwrap();
    (Wire::new(tx, rx, t0, DELAY), seen)
}

#[test]
fn frames_arrive_bit_exact_with_capture_times_for_every_codec() {
    for codec in [Codec::Vp8, Codec::H264, Codec::H265] {
        let (mut w, _) = wire(FeedbackKind::TransportWideCc, Bitrate::mbps(5), Ecn::NotEct);
        let t0 = w.now;
        let mut sent = vec![];
        let mut src = cbr_source(codec, 30, 6000, 30);
        let mut record = |now| {
            let (f, n) = src(now);
            sent.push(f.clone().unwrap());
            (f, n)
        };
        w.run(t0 + Duration::from_secs(2), &mut record);
        assert!(w.frames.len() >= 58, "{codec:?}: {} frames", w.frames.len());
        for (got, want) in w.frames.iter().zip(&sent) {
            assert_eq!(got.data, want.data, "{codec:?} frame bit-exact");
            assert_eq!(got.key_frame, want.key_frame, "{codec:?}");
            // NTP 32.32 truncation: within a nanosecond
            let ct = got.capture_time.expect("abs-capture-time present");
            assert!(
                ct.max(want.capture_time) - ct.min(want.capture_time) <= Duration::from_nanos(1),
                "{codec:?} capture time"
            );
            assert!(got.completed >= want.capture_time + DELAY);
        }
        assert_eq!(w.receiver.stats().frames_lost, 0);
    }
}

/// The sender's playout-delay limits reach the receiver; a sender that asks none sends none.
#[test]
fn the_playout_delay_asked_reaches_the_receiver() {
    for asked in [None, Some(cg_rtp::PlayoutDelay::ZERO)] {
        let (mut w, _) = wire_with(
            FeedbackKind::TransportWideCc,
            Bitrate::mbps(5),
            SenderConfig {
                playout_delay: asked,
                ..SenderConfig::default()
            },
        );
        let t0 = w.now;
        let mut src = cbr_source(Codec::Vp8, 30, 6000, 30);
        w.run(t0 + Duration::from_secs(1), &mut src);
        assert!(w.frames.len() >= 28);
        assert_eq!(w.receiver.stats().playout_delay, asked);
    }
}

/// Each frame's sender stages reach the receiver (video-timing, on the last packet): the
/// encoder's start and finish and the packetization as the caller stamped them, and the pacer
/// exit of its last packet, which with the wire's delay makes its last arrival. A lost last
/// packet brings its timing back in its retransmission.
#[test]
fn each_frames_sender_stages_reach_the_receiver() {
    let (mut w, _) = wire(FeedbackKind::TransportWideCc, Bitrate::mbps(5), Ecn::NotEct);
    let t0 = w.now;
    let ms = Duration::from_millis;
    let mut src = cbr_source(Codec::Vp8, 30, 6000, 1000);
    // Captured 12 ms before it is handed over, encoded from 2 to 9 ms after capture.
    let mut stamped = |now: Instant| {
        let (f, next) = src(now);
        let f = f.map(|f| cg_rtp::EncodedFrame {
            capture_time: now - ms(12),
            encoded: Some((now - ms(10), now - ms(3))),
            ..f
        });
        (f, next)
    };
    let mut last_packets = 0;
    w.drop_fwd = Box::new(move |t, _| {
        // The fifth frame's last packet (the marker bit).
        if t.kind == TransmitKind::Media && t.bytes[1] & 0x80 != 0 {
            last_packets += 1;
            return last_packets == 5;
        }
        false
    });
    w.run(t0 + Duration::from_secs(2), &mut stamped);
    assert!(w.frames.len() >= 58, "{} frames", w.frames.len());
    assert_eq!(w.receiver.stats().frames_lost, 0);
    let repaired = w
        .frames
        .iter()
        .filter(|f| f.retransmitted_packets == 1)
        .count();
    assert_eq!(repaired, 1, "the dropped last packet is repaired");
    // The first frame was captured before the receiver's clock starts, so its capture time
    // does not map (it is judged on the sender's stages only).
    for (i, f) in w.frames.iter().enumerate() {
        let t = f.sender_timing.expect("every frame carries its timing");
        assert_eq!(t.flags, cg_rtp::VideoTiming::TIMER);
        assert_eq!(
            (
                t.encode_start_ms,
                t.encode_finish_ms,
                t.packetization_finish_ms
            ),
            (2, 9, 12)
        );
        // A 6 kB frame leaves within a frame interval at 5 Mbit/s.
        assert!((12..=12 + 33).contains(&t.pacer_exit_ms), "{t:?}");
        if i == 0 {
            continue;
        }
        let capture = f.capture_time.expect("abs-capture-time");
        let exit = capture + ms(u64::from(t.pacer_exit_ms));
        let network = f.last_arrival.saturating_duration_since(exit);
        if f.retransmitted_packets == 0 {
            assert!(network >= DELAY && network <= DELAY + ms(2), "{network:?}");
        } else {
            // The original's pacer exit: the network stage holds the repair.
            assert!(network > 2 * DELAY, "{network:?}");
        }
    }
}

/// A frame of one packet carries every extension only where they fit: at the largest
/// single-packet sizes it goes without its timing, and no packet exceeds the packet size.
#[test]
fn a_one_packet_frame_carries_its_timing_only_where_it_fits() {
    let (mut w, _) = wire(FeedbackKind::TransportWideCc, Bitrate::mbps(5), Ecn::NotEct);
    w.capture = true;
    let t0 = w.now;
    let limit = w.sender.config().max_packet_size;
    let largest = w.sender.config().max_payload() - 1; // the VP8 descriptor takes one byte
    let mut n = 0;
    let mut src = |now: Instant| {
        // Sizes from well under the largest one-packet frame to it, then again.
        let size = largest - 40 + (n % 41);
        n += 1;
        let f = common::frame(Codec::Vp8, size, n == 1, now, n as u8);
        (Some(f), now + Duration::from_millis(33))
    };
    w.run(t0 + Duration::from_secs(3), &mut src);
    assert!(w.frames.len() >= 85, "{} frames", w.frames.len());
    let biggest = w
        .captured
        .iter()
        .filter(|c| c.1)
        .map(|c| c.2.len())
        .max()
        .unwrap();
    assert!(biggest <= limit, "a {biggest}-byte packet (limit {limit})");
    let with = w
        .frames
        .iter()
        .filter(|f| f.sender_timing.is_some())
        .count();
    assert!(
        with > 0 && with < w.frames.len(),
        "{with} of {} frames with their timing",
        w.frames.len()
    );
}

#[test]
fn transport_wide_cc_reaches_the_controller_with_arrival_spacing() {
    let (mut w, seen) = wire(FeedbackKind::TransportWideCc, Bitrate::mbps(2), Ecn::NotEct);
    let t0 = w.now;
    w.run(
        t0 + Duration::from_secs(2),
        &mut cbr_source(Codec::Vp8, 30, 3000, 60),
    );
    let s = seen.lock().unwrap();
    assert!(w.receiver.stats().twcc_sent >= 30);
    assert!(
        s.results.len() as f64 >= 0.9 * s.sent.len() as f64,
        "{} of {}",
        s.results.len(),
        s.sent.len()
    );
    // Arrival spacing equals send spacing on a constant-delay wire (250 µs resolution).
    for pair in s.results.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let sa = s.sent.iter().find(|p| p.seq == a.seq).unwrap().send_time;
        let sb = s.sent.iter().find(|p| p.seq == b.seq).unwrap().send_time;
        let d_send = sb.duration_since(sa).as_micros() as i64;
        let d_arr = b.arrival.unwrap().micros_since(a.arrival.unwrap());
        assert!((d_send - d_arr).abs() <= 250, "{d_send} vs {d_arr}");
    }
    let mut seqs: Vec<u64> = s.results.iter().map(|r| r.seq).collect();
    seqs.dedup();
    assert_eq!(seqs.len(), s.results.len(), "each packet reported once");
}

#[test]
fn rfc8888_feedback_carries_ect1_and_reports_each_packet_once() {
    let (mut w, seen) = wire(FeedbackKind::Rfc8888, Bitrate::mbps(2), Ecn::Ect1);
    let t0 = w.now;
    w.run(
        t0 + Duration::from_secs(2),
        &mut cbr_source(Codec::H264, 30, 3000, 60),
    );
    let s = seen.lock().unwrap();
    assert!(w.receiver.stats().ccfb_sent >= 20);
    assert!(s.results.len() as f64 >= 0.95 * s.sent.len() as f64);
    assert!(
        s.results
            .iter()
            .all(|r| r.arrival.is_some() && r.ecn == Ecn::Ect1)
    );
    let ecn = w.receiver.stats().ecn;
    assert!(ecn[Ecn::Ect1.bits() as usize] >= s.results.len() as u64);
    assert_eq!(
        ecn.iter().sum::<u64>(),
        ecn[Ecn::Ect1.bits() as usize],
        "every packet recorded as ECT(1)"
    );
    let mut seqs: Vec<u64> = s.results.iter().map(|r| r.seq).collect();
    seqs.sort();
    seqs.dedup();
    assert_eq!(
        seqs.len(),
        s.results.len(),
        "redundant reports deduplicated"
    );
}

#[test]
fn remb_and_receiver_reports_give_rate_loss_and_rtt() {
    let (mut w, seen) = wire(FeedbackKind::Remb, Bitrate::mbps(2), Ecn::NotEct);
    let t0 = w.now;
    w.run(
        t0 + Duration::from_secs(5),
        &mut cbr_source(Codec::Vp8, 30, 3000, 60),
    );
    let s = seen.lock().unwrap();
    assert!(s.remb.iter().all(|r| *r == Bitrate::kbps(1234)) && s.remb.len() >= 5);
    assert!(!s.loss.is_empty() && s.loss.iter().all(|l| *l == 0.0));
    // RTT from LSR/DLSR = 2 × 20 ms, to the 1/65536 s resolution
    assert!(!s.rtt.is_empty());
    for r in &s.rtt {
        assert!(r.abs_diff(2 * DELAY) < Duration::from_micros(100), "{r:?}");
    }
    assert_eq!(w.sender.stats().rtt.map(|r| r.as_millis()), Some(40));
}

#[test]
fn nack_repairs_a_dropped_packet() {
    let (mut w, _) = wire(FeedbackKind::TransportWideCc, Bitrate::mbps(5), Ecn::NotEct);
    let t0 = w.now;
    let mut media = 0;
    w.drop_fwd = Box::new(move |t, _| {
        if t.kind == TransmitKind::Media {
            media += 1;
            return media == 25;
        }
        false
    });
    w.run(
        t0 + Duration::from_secs(2),
        &mut cbr_source(Codec::Vp8, 30, 5000, 1000),
    );
    assert!(w.receiver.stats().nacks_sent >= 1);
    assert_eq!(w.sender.stats().retransmissions, 1);
    assert_eq!(w.receiver.stats().frames_lost, 0);
    assert_eq!(
        w.frames
            .iter()
            .filter(|f| f.retransmitted_packets == 1)
            .count(),
        1
    );
    assert!(w.frames.len() >= 58);
    assert!(
        !w.sender_events
            .iter()
            .any(|(_, e)| matches!(e, SenderEvent::KeyFrameRequested(_)))
    );
}

#[test]
fn unrepairable_loss_sends_pli_and_the_sender_asks_for_a_key_frame() {
    let (mut w, _) = wire(FeedbackKind::TransportWideCc, Bitrate::mbps(5), Ecn::NotEct);
    let t0 = w.now;
    // Black-hole media between 0.5 s and 0.6 s, and every retransmission.
    w.drop_fwd = Box::new(move |t, now| {
        t.kind == TransmitKind::Retransmission
            || (t.kind == TransmitKind::Media
                && now >= t0 + Duration::from_millis(500)
                && now < t0 + Duration::from_millis(600))
    });
    let mut key_requested = false;
    let mut n = 0u64;
    w.run(t0 + Duration::from_secs(2), &mut |now| {
        let key = n == 0;
        n += 1;
        (
            Some(frame(Codec::Vp8, 4000, key, now, n as u8)),
            now + Duration::from_millis(33),
        )
    });
    for (_, e) in &w.sender_events {
        if *e == SenderEvent::KeyFrameRequested(KeyFrameReason::Pli) {
            key_requested = true;
        }
    }
    assert!(w.receiver.stats().plis_sent >= 1);
    assert!(
        key_requested,
        "PLI produced a key-frame request: {:?}",
        w.sender_events
    );
    // Without a key frame nothing after the hole is decodable.
    assert!(w.receiver.stats().frames_undecodable > 0);
    let frames_after_hole = w
        .frames
        .iter()
        .filter(|f| f.completed > t0 + Duration::from_millis(700))
        .count();
    assert_eq!(frames_after_hole, 0);
}

#[test]
fn pacer_queue_bound_drops_whole_frames_and_requests_a_key_frame() {
    // Pacing at 1.5 × 200 kbit/s while the encoder produces 720 kbit/s.
    let (mut w, seen) = wire(
        FeedbackKind::TransportWideCc,
        Bitrate::kbps(200),
        Ecn::NotEct,
    );
    let t0 = w.now;
    w.run(
        t0 + Duration::from_secs(3),
        &mut cbr_source(Codec::Vp8, 30, 3_000, 30),
    );
    let limit = SenderConfig::default().pacer.max_queue_delay;
    // A frame starts leaving within the bound and is then finished: its last packet waits at
    // most one frame's transmission time longer (3 packets of at most 1240 bytes).
    let frame_time = Bitrate::kbps(300)
        .time_to_send(DataSize::bytes(3 * 1240))
        .unwrap();
    let s = seen.lock().unwrap();
    let worst = s.queues.iter().map(|q| q.delay).max().unwrap();
    assert!(
        worst <= limit + frame_time + Duration::from_millis(1),
        "queue delay {worst:?} over {limit:?} + {frame_time:?}"
    );
    assert!(w.sender_events.iter().any(|(_, e)| matches!(
        e,
        SenderEvent::FramesDropped {
            reason: KeyFrameReason::QueueOverflow,
            ..
        }
    )));
    assert!(
        w.sender_events
            .iter()
            .any(|(_, e)| *e == SenderEvent::KeyFrameRequested(KeyFrameReason::QueueOverflow))
    );
    assert!(w.sender.stats().frames_dropped > 0);
    // The drops are invisible on the wire: no loss, and no delta frame whose reference was
    // dropped reaches the receiver.
    let r = w.receiver.stats();
    assert_eq!(r.cumulative_lost, 0);
    assert_eq!(r.nacks_sent, 0);
    assert_eq!(r.frames_lost + r.frames_undecodable, 0, "{r:?}");
    assert!(r.frames >= 3, "{r:?}");
}

/// Runs the wire for `length`, pushing VP8 frames by `script` — (ms from the start, bytes,
/// key frame) — and returns the frames pushed.
fn run_script(
    w: &mut Wire,
    script: &[(u64, usize, bool)],
    length: Duration,
) -> Vec<cg_rtp::EncodedFrame> {
    let t0 = w.now;
    let at = |i: usize| {
        script.get(i).map_or(t0 + Duration::from_secs(10), |s| {
            t0 + Duration::from_millis(s.0)
        })
    };
    let mut sent = vec![];
    w.run(t0 + length, &mut |now| {
        let Some(&(_, len, key)) = script.get(sent.len()) else {
            return (None, t0 + Duration::from_secs(10));
        };
        let f = frame(Codec::Vp8, len, key, now, sent.len() as u8 + 1);
        sent.push(f.clone());
        (Some(f), at(sent.len()))
    });
    sent
}

/// The RTP header of every media packet the sender put on the wire: (sequence number, marker).
fn media_on_wire(w: &Wire) -> Vec<(u16, bool)> {
    let ssrc = w.sender.config().ssrc.to_be_bytes();
    w.captured
        .iter()
        .filter(|(_, fwd, b, _)| {
            *fwd && b.len() >= 12 && !(192..=223).contains(&b[1]) && b[8..12] == ssrc
        })
        .map(|(_, _, b, _)| (u16::from_be_bytes([b[2], b[3]]), b[1] & 0x80 != 0))
        .collect()
}

fn assert_contiguous(seqs: &[(u16, bool)]) {
    for w in seqs.windows(2) {
        assert_eq!(
            w[1].0,
            w[0].0.wrapping_add(1),
            "sequence gap on the wire: {seqs:?}"
        );
    }
}

#[test]
fn frames_the_queue_bound_drops_leave_no_sequence_gap() {
    for kind in [FeedbackKind::TransportWideCc, FeedbackKind::Rfc8888] {
        // Pacing at 150 kbit/s: a full packet (1166-byte payload) every 64 ms; queue bound
        // 100 ms.
        let mut config = SenderConfig::default();
        config.pacer.max_queue_delay = Duration::from_millis(100);
        let (mut w, seen) = wire_with(kind, Bitrate::kbps(100), config);
        w.capture = true;
        // A 3-packet key frame, two deltas right behind it: the deltas wait past the bound
        // while the key frame leaves, so they are dropped; the key frame is finished.
        // Then a delta (refused: its reference was dropped), the key frame asked for, a delta.
        let script = [
            (0, 3_400, true),
            (1, 3_000, false),
            (2, 3_000, false),
            (400, 2_000, false),
            (433, 2_400, true),
            (700, 1_000, false),
        ];
        let sent = run_script(&mut w, &script, Duration::from_secs(3));
        let wire_media = media_on_wire(&w);
        assert_contiguous(&wire_media);
        // One marker per frame sent: key frame, key frame, delta.
        assert_eq!(
            wire_media.iter().filter(|(_, m)| *m).count(),
            3,
            "{wire_media:?} {:?}",
            w.sender_events
        );
        let delivered: Vec<_> = [&sent[0], &sent[4], &sent[5]]
            .map(|f| f.data.clone())
            .to_vec();
        let got: Vec<_> = w.frames.iter().map(|f| f.data.clone()).collect();
        assert!(
            got == delivered,
            "{kind:?}: frames of {:?} bytes delivered",
            got.iter().map(|d| d.len()).collect::<Vec<_>>()
        );
        assert!(w.frames.iter().all(|f| f.capture_time.is_some()));

        let r = w.receiver.stats();
        assert_eq!(r.cumulative_lost, 0, "{kind:?}: {r:?}");
        assert_eq!(r.nacks_sent, 0, "{kind:?}");
        assert_eq!(r.plis_sent, 0, "{kind:?}");
        assert_eq!(r.frames_lost + r.frames_undecodable, 0, "{kind:?}: {r:?}");

        let tx = w.sender.stats();
        assert_eq!(tx.frames_pushed, 5, "{kind:?}: all but the refused delta");
        assert_eq!(tx.frames_dropped, 3, "{kind:?}: two dropped, one refused");
        assert_eq!(tx.media_packets, wire_media.len() as u64);
        assert_eq!(tx.retransmissions, 0);
        assert_eq!(
            tx.feedback_ignored, 0,
            "{kind:?}: feedback names only sent packets"
        );
        let events: Vec<_> = w.sender_events.iter().map(|(_, e)| e.clone()).collect();
        assert!(
            events.contains(&SenderEvent::FramesDropped {
                frames: 2,
                packets: 6,
                reason: KeyFrameReason::QueueOverflow
            }),
            "{events:?}"
        );
        assert!(events.contains(&SenderEvent::KeyFrameRequested(
            KeyFrameReason::QueueOverflow
        )));
        assert!(events.contains(&SenderEvent::FramesDropped {
            frames: 1,
            packets: 0,
            reason: KeyFrameReason::QueueOverflow
        }));

        // The controller saw every packet sent, in order, and feedback reports none lost.
        let s = seen.lock().unwrap();
        let tx_seqs: Vec<u64> = s.sent.iter().map(|p| p.seq).collect();
        assert_eq!(tx_seqs, (0..tx_seqs.len() as u64).collect::<Vec<_>>());
        assert_eq!(s.results.len(), s.sent.len(), "{kind:?}");
        assert!(s.results.iter().all(|r| r.arrival.is_some()), "{kind:?}");
        assert!(
            !s.loss.is_empty() && s.loss.iter().all(|l| *l == 0.0),
            "{kind:?}"
        );
    }
}

#[test]
fn a_controller_discard_leaves_no_sequence_gap_and_nack_repair_uses_wire_numbers() {
    let (mut w, seen) = wire(FeedbackKind::TransportWideCc, Bitrate::mbps(1), Ecn::NotEct);
    w.capture = true;
    let t0 = w.now;
    // Three frames pushed at once; SCReAM's DiscardQueue arrives with the third, while the
    // first is leaving. Then a key frame whose second packet the wire drops, and deltas.
    let mut n = 0u64;
    let raise = seen.clone();
    w.drop_fwd = Box::new(move |t, _| {
        if t.kind == TransmitKind::Media {
            n += 1;
            // 6 packets of the first frame, then the second key frame's first packet.
            return n == 7;
        }
        false
    });
    let mut i = 0u64;
    let mut sent = vec![];
    w.run(t0 + Duration::from_secs(2), &mut |now| {
        i += 1;
        let (len, key, next) = match i {
            1 => (6_000, true, now + Duration::from_micros(10)),
            2 => (3_000, false, now + Duration::from_micros(10)),
            3 => {
                raise
                    .lock()
                    .unwrap()
                    .raise
                    .push_back(ControllerEvent::DiscardQueue);
                (3_000, false, now + Duration::from_millis(50))
            }
            4 => (2_000, false, now + Duration::from_millis(33)),
            5 => (4_000, true, now + Duration::from_millis(33)),
            6..=30 => (1_000, false, now + Duration::from_millis(33)),
            _ => return (None, t0 + Duration::from_secs(10)),
        };
        let f = frame(Codec::Vp8, len, key, now, i as u8);
        sent.push(f.clone());
        (Some(f), next)
    });
    assert_contiguous(&media_on_wire(&w));
    let tx = w.sender.stats();
    assert_eq!(tx.frames_dropped, 3, "two discarded, one delta refused");
    assert_eq!(
        tx.retransmissions, 1,
        "the dropped packet, found by its wire number"
    );
    assert!(
        w.sender_events
            .iter()
            .any(|(_, e)| *e == SenderEvent::KeyFrameRequested(KeyFrameReason::Controller))
    );
    assert!(w.sender_events.iter().any(|(_, e)| *e
        == SenderEvent::FramesDropped {
            frames: 2,
            packets: 6,
            reason: KeyFrameReason::Controller
        }));
    let r = w.receiver.stats();
    assert_eq!(r.cumulative_lost, 0, "{r:?}");
    assert_eq!(r.frames_lost + r.frames_undecodable, 0, "{r:?}");
    let want: Vec<_> = sent
        .iter()
        .enumerate()
        .filter(|(j, _)| !(1..=3).contains(j))
        .map(|(_, f)| f.data.clone())
        .collect();
    let got: Vec<_> = w.frames.iter().map(|f| f.data.clone()).collect();
    assert!(
        got == want,
        "frames of {:?} bytes delivered",
        got.iter().map(|d| d.len()).collect::<Vec<_>>()
    );
    assert_eq!(
        w.frames
            .iter()
            .filter(|f| f.retransmitted_packets == 1)
            .count(),
        1
    );
}

#[test]
fn the_receiver_learns_of_the_senders_bye() {
    let (mut w, _) = wire(FeedbackKind::TransportWideCc, Bitrate::mbps(1), Ecn::NotEct);
    let t0 = w.now;
    w.run(
        t0 + Duration::from_millis(500),
        &mut cbr_source(Codec::Vp8, 30, 2000, 30),
    );
    assert!(!w.receiver.stats().bye_received);
    assert!(w.frames.len() >= 10);
    w.sender.close();
    w.run(t0 + Duration::from_secs(1), &mut |_| {
        (None, t0 + Duration::from_secs(10))
    });
    assert!(w.receiver.stats().bye_received);
    assert_eq!(w.receiver.stats().malformed, 0);
}

#[test]
fn circuit_breaker_trips_when_feedback_is_black_holed_and_recovers() {
    let (mut w, _) = wire(FeedbackKind::TransportWideCc, Bitrate::mbps(1), Ecn::NotEct);
    let t0 = w.now;
    let hole = (t0 + Duration::from_secs(2), t0 + Duration::from_secs(22));
    w.drop_rev = Box::new(move |_, now| now >= hole.0 && now < hole.1);
    w.run(
        t0 + Duration::from_secs(26),
        &mut cbr_source(Codec::Vp8, 30, 2000, 30),
    );
    let trips: Vec<_> = w
        .sender_events
        .iter()
        .filter_map(|(t, e)| match e {
            SenderEvent::CircuitBreaker(BreakerState::Tripped { .. }) => Some(*t),
            _ => None,
        })
        .collect();
    assert_eq!(trips.len(), 1);
    // last feedback just before the hole + 15 s (RFC 8083 §4.1)
    let trip = trips[0];
    assert!(
        trip >= hole.0 + Duration::from_secs(14) && trip <= hole.0 + Duration::from_secs(16),
        "{:?}",
        trip - t0
    );
    let recovered: Vec<_> = w
        .sender_events
        .iter()
        .filter(|(_, e)| *e == SenderEvent::CircuitBreaker(BreakerState::Recovered))
        .map(|(t, _)| *t)
        .collect();
    assert_eq!(recovered.len(), 1);
    assert!(recovered[0] >= hole.1);
    // No media while tripped; media again after recovery.
    let media_in = |a: std::time::Instant, b: std::time::Instant| {
        w.forward_sent
            .iter()
            .filter(|(t, k, _)| *k == TransmitKind::Media && *t > a && *t < b)
            .count()
    };
    assert_eq!(media_in(trip + Duration::from_millis(1), hole.1), 0);
    assert!(media_in(recovered[0], t0 + Duration::from_secs(26)) > 50);
    assert!(!w.sender.circuit_breaker_tripped());
    // The encoder idles at the minimum (zero here) from the trip to the recovery, and gets
    // the controller's rate back once feedback flows again.
    let targets = encoder_targets(&w);
    let at = |t: Instant| targets.iter().rev().find(|(u, _)| *u <= t).map(|(_, r)| *r);
    assert_eq!(at(trip), Some(Bitrate::ZERO), "{targets:?}");
    assert_eq!(
        at(recovered[0] - Duration::from_millis(1)),
        Some(Bitrate::ZERO)
    );
    assert_eq!(targets.last().map(|(_, r)| *r), Some(Bitrate::mbps(1)));
}

/// The `TargetBitrate` events the sender raised, with their times.
fn encoder_targets(w: &Wire) -> Vec<(Instant, Bitrate)> {
    w.sender_events
        .iter()
        .filter_map(|(t, e)| match e {
            SenderEvent::TargetBitrate(r) => Some((*t, *r)),
            _ => None,
        })
        .collect()
}

/// RFC 8888 §5: feedback lost for several report intervals halves the rate each 0.5 s (with
/// transport-wide CC) down to 1/16, long before the breaker's 15 s; the first feedback gives
/// the controller's rate back at once.
#[test]
fn lost_feedback_halves_the_rate_until_it_returns() {
    let (mut w, _) = wire(FeedbackKind::TransportWideCc, Bitrate::mbps(1), Ecn::NotEct);
    let t0 = w.now;
    let s = Duration::from_secs;
    let hole = (t0 + s(2), t0 + s(5));
    w.drop_rev = Box::new(move |_, now| now >= hole.0 && now < hole.1);
    // 30 fps of 4 kB frames (960 kbit/s): the pacer (1.5 Mbit/s here) sends them as they come.
    w.run(t0 + s(8), &mut cbr_source(Codec::Vp8, 30, 4000, 30));
    let bits_in = |a: Instant, b: Instant| w.media_rate(a, b);
    let before = bits_in(t0 + s(1), hole.0);
    // From 2 s into the hole the pacer runs at 1/16 of 1.5 Mbit/s: under 100 kbit/s.
    let late_in_hole = bits_in(hole.0 + s(2), hole.1);
    let after = bits_in(hole.1 + s(1), t0 + s(8));
    assert!(before > 900e3, "{before}");
    assert!(late_in_hole < 100e3, "{late_in_hole} b/s without feedback");
    assert!(after > 900e3, "{after} b/s once feedback returned");
    assert_eq!(w.sender.stats().feedback_timeouts, 1);
    assert_eq!(w.sender.stats().breaker_trips, 0);
    assert_eq!(w.sender.target_bitrate(), Bitrate::mbps(1));
    // The encoder heard each halving and the return, nothing else.
    let targets: Vec<u64> = encoder_targets(&w)
        .iter()
        .map(|(_, r)| r.as_bps())
        .collect();
    assert_eq!(
        targets,
        [500_000, 250_000, 125_000, 62_500, 1_000_000],
        "encoder targets"
    );
}

/// Receiver reports keep arriving but the transport-wide feedback the controller is fed by
/// does not (a peer that never negotiated it, or lost it): the rate is reduced as if all
/// feedback were lost, and the breaker, which counts any RTCP, stays closed.
#[test]
fn receiver_reports_without_the_controllers_feedback_still_reduce_the_rate() {
    let (mut w, _) = wire(FeedbackKind::TransportWideCc, Bitrate::mbps(1), Ecn::NotEct);
    let t0 = w.now;
    let s = Duration::from_secs;
    let hole = (t0 + s(2), t0 + s(20));
    // Drops datagrams holding a transport-wide CC packet (PT 205, FMT 15) in the hole.
    let twcc = |b: &[u8]| {
        let mut i = 0;
        while i + 4 <= b.len() {
            if b[i + 1] == 205 && b[i] & 0x1f == 15 {
                return true;
            }
            i += 4 * (usize::from(u16::from_be_bytes([b[i + 2], b[i + 3]])) + 1);
        }
        false
    };
    w.drop_rev = Box::new(move |t, now| now >= hole.0 && now < hole.1 && twcc(&t.bytes));
    w.run(t0 + s(23), &mut cbr_source(Codec::Vp8, 30, 4000, 30));
    let bits_in = |a: Instant, b: Instant| w.media_rate(a, b);
    let late_in_hole = bits_in(hole.0 + s(2), hole.1);
    let after = bits_in(hole.1 + s(1), t0 + s(23));
    assert!(late_in_hole < 100e3, "{late_in_hole} b/s with RRs only");
    assert!(after > 900e3, "{after} b/s once the feedback returned");
    assert_eq!(w.sender.stats().feedback_timeouts, 1);
    assert_eq!(
        w.sender.stats().breaker_trips,
        0,
        "RRs kept the breaker closed"
    );
}

/// Per-packet reports feed a send-side controller whichever format carries them: a SCReAM
/// session (RFC 8888 its native feedback) whose viewer sends transport-wide CC (Chromium does)
/// is not reduced as if it heard nothing.
#[test]
fn transport_wide_feedback_feeds_a_controller_that_prefers_rfc8888() {
    let (mut w, _) = wire(FeedbackKind::TransportWideCc, Bitrate::mbps(1), Ecn::NotEct);
    let t0 = w.now;
    let (cc, _seen) = Fixed::new(Bitrate::mbps(1), FeedbackKind::Rfc8888);
    w.sender = SenderSession::new(SenderConfig::default(), cc, t0).unwrap();
    let s = Duration::from_secs;
    w.run(t0 + s(6), &mut cbr_source(Codec::Vp8, 30, 4000, 30));
    let rate = w.media_rate(t0 + s(2), t0 + s(6));
    assert_eq!(w.sender.stats().feedback_timeouts, 0);
    assert!(rate > 900e3, "{rate} b/s");
}

#[test]
fn probe_sends_padding_on_the_rtx_stream() {
    let (mut w, seen) = wire(
        FeedbackKind::TransportWideCc,
        Bitrate::kbps(500),
        Ecn::NotEct,
    );
    let t0 = w.now;
    // Reach into the controller through a new session with a queued probe event.
    let (mut cc, seen2) = Fixed::new(Bitrate::kbps(500), FeedbackKind::TransportWideCc);
    cc.events.push_back(ControllerEvent::Probe {
        rate: Bitrate::mbps(1),
        duration: Duration::from_millis(500),
    });
    w.sender = SenderSession::new(SenderConfig::default(), cc, t0).unwrap();
    drop(seen);
    w.run(
        t0 + Duration::from_secs(2),
        &mut cbr_source(Codec::Vp8, 30, 1000, 60),
    );
    let pads = w.sender.stats().padding_packets;
    // 1 Mbit/s × 0.5 s of ~290-byte packets ≈ 215, minus media slots
    assert!(pads > 100, "{pads}");
    assert_eq!(w.receiver.stats().padding_packets, pads);
    let s = seen2.lock().unwrap();
    assert!(s.sent.iter().any(|p| p.kind == cg_cc::PacketKind::Padding));
}

#[test]
fn hostile_input_is_counted_and_dropped() {
    let (mut w, _) = wire(FeedbackKind::Rfc8888, Bitrate::mbps(1), Ecn::NotEct);
    let now = w.now;
    let junk: Vec<Vec<u8>> = vec![
        vec![],
        vec![0x80],
        vec![0x00; 20],
        vec![0x80, 96, 0, 1],
        vec![0xBF, 200, 0xFF, 0xFF, 1, 2, 3, 4], // SR claiming 256 KiB
        vec![0x81, 201, 0x00, 0x07, 0, 0, 0, 1, 0, 0, 0, 2], // RR block overruns
        vec![
            0x8B, 205, 0x00, 0x03, 0, 0, 0, 1, 0x63, 0x67, 0, 1, 0, 0, 0xFF, 0xFF,
        ], // CCFB absurd count
        vec![
            0x8F, 205, 0x00, 0x04, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0xFF, 0xFF, 0, 0, 0, 0,
        ], // TWCC count overrun
        vec![
            0x90, 96, 0, 1, 0, 0, 0, 1, 0x63, 0x67, 0, 1, 0xBE, 0xDE, 0x00, 0x09,
        ], // ext overrun
        vec![0xA0, 96, 0, 1, 0, 0, 0, 1, 0x63, 0x67, 0, 1, 0xFF], // padding overrun
    ];
    for j in &junk {
        let _ = w.sender.handle_input(j, Ecn::Ce, now);
        let _ = w.receiver.handle_input(j, Ecn::Ce, now);
    }
    assert_eq!(w.sender.stats().malformed, junk.len() as u64);
    assert!(
        w.receiver.stats().malformed >= 8,
        "{}",
        w.receiver.stats().malformed
    );
    // Feedback about unknown SSRCs and sequence numbers is ignored.
    let pli = cg_rtp::rtcp::build_pli(1, 0xDEAD).unwrap();
    let nack = cg_rtp::rtcp::build_nack(1, 0x6367_0001, &[1, 2, 3]).unwrap();
    w.sender.handle_input(&pli, Ecn::NotEct, now).unwrap();
    w.sender.handle_input(&nack, Ecn::NotEct, now).unwrap();
    assert_eq!(w.sender.poll_event(), None);
    assert_eq!(w.sender.stats().retransmissions, 0);
    assert!(w.sender.stats().feedback_ignored >= 4);
    // The sessions still work afterwards.
    let t0 = w.now;
    w.run(
        t0 + Duration::from_secs(1),
        &mut cbr_source(Codec::Vp8, 30, 2000, 60),
    );
    assert!(w.frames.len() >= 28);
}

#[test]
fn a_key_frame_on_its_way_answers_the_receivers_repeated_requests() {
    let t0 = Instant::now();
    let (cc, _) = Fixed::new(Bitrate::kbps(200), FeedbackKind::TransportWideCc);
    let config = SenderConfig::default();
    let pli = cg_rtp::rtcp::build_pli(7, config.ssrc).unwrap();
    let mut tx = SenderSession::new(config, cc, t0).unwrap();
    let requests = |tx: &mut SenderSession| {
        std::iter::from_fn(|| tx.poll_event())
            .filter(|e| matches!(e, SenderEvent::KeyFrameRequested(KeyFrameReason::Pli)))
            .count()
    };
    // A 30 kB key frame at 200 kbit/s (pacing 1.5×): about 0.8 s in the pacer.
    tx.push_frame(frame(Codec::Vp8, 30_000, true, t0, 1), t0)
        .unwrap();
    let mut now = t0;
    let mut last_sent = t0;
    let mut pli_while_queued = false;
    while tx.poll_transmit(now).is_some() {}
    while let Some(at) = tx.poll_timeout() {
        if at > t0 + Duration::from_secs(5) {
            break;
        }
        now = now.max(at);
        if !pli_while_queued && now >= t0 + Duration::from_millis(300) {
            // The receiver lost the previous frames and asks: the key frame is still queued.
            tx.handle_input(&pli, Ecn::NotEct, now).unwrap();
            pli_while_queued = true;
        }
        tx.handle_timeout(now);
        while let Some(t) = tx.poll_transmit(now) {
            if t.kind == TransmitKind::Media {
                last_sent = now;
            }
        }
    }
    assert!(pli_while_queued && last_sent > t0 + Duration::from_millis(500));
    assert_eq!(requests(&mut tx), 0, "the queued key frame answers the PLI");
    // Just after its last packet left, the receiver cannot have seen it yet.
    tx.handle_input(&pli, Ecn::NotEct, last_sent + Duration::from_millis(50))
        .unwrap();
    assert_eq!(requests(&mut tx), 0);
    assert_eq!(tx.stats().key_frame_requests_in_flight, 2);
    tx.handle_input(&pli, Ecn::NotEct, last_sent + Duration::from_millis(250))
        .unwrap();
    assert_eq!(requests(&mut tx), 0);
    assert_eq!(tx.stats().key_frame_requests_in_flight, 3);
    // Two RTTs (100 ms before any RR) + 100 ms later, a PLI means the key frame did not help.
    tx.handle_input(&pli, Ecn::NotEct, last_sent + Duration::from_millis(350))
        .unwrap();
    assert_eq!(requests(&mut tx), 1);
}

#[test]
fn a_key_frame_supersedes_the_queued_frames_ahead_of_it() {
    let t0 = Instant::now();
    let (cc, _) = Fixed::new(Bitrate::kbps(200), FeedbackKind::TransportWideCc);
    let mut tx = SenderSession::new(SenderConfig::default(), cc, t0).unwrap();
    tx.push_frame(frame(Codec::Vp8, 3_000, false, t0, 1), t0)
        .unwrap();
    // The first frame starts leaving; two more queue behind it.
    let first = tx
        .poll_transmit(t0)
        .expect("the first packet leaves at once");
    assert_eq!(first.kind, TransmitKind::Media);
    for i in 2..4u8 {
        tx.push_frame(frame(Codec::Vp8, 3_000, false, t0, i), t0)
            .unwrap();
    }
    tx.push_frame(frame(Codec::Vp8, 3_000, true, t0, 9), t0)
        .unwrap();
    assert_eq!(tx.stats().frames_superseded, 3, "the started frame too");
    assert_eq!(tx.stats().frames_dropped, 3);
    // What leaves: the first packet of the started frame, then the key frame (3 packets).
    let mut now = t0;
    let mut packets = 1;
    while let Some(at) = tx.poll_timeout() {
        if at > t0 + Duration::from_secs(2) {
            break;
        }
        now = now.max(at);
        tx.handle_timeout(now);
        while let Some(t) = tx.poll_transmit(now) {
            if t.kind == TransmitKind::Media {
                packets += 1;
            }
        }
    }
    assert_eq!(tx.stats().media_packets, packets);
    assert_eq!(
        packets, 4,
        "the cut frame's first packet and the key frame only"
    );
    // A NACK for a packet before the key frame is not answered: the key frame replaced it.
    let seq = u16::from_be_bytes([first.bytes[2], first.bytes[3]]);
    let nack = cg_rtp::rtcp::build_nack(7, SenderConfig::default().ssrc, &[seq]).unwrap();
    tx.handle_input(&nack, Ecn::NotEct, now).unwrap();
    assert!(tx.poll_transmit(now + Duration::from_secs(1)).is_none());
    assert_eq!(tx.stats().retransmissions, 0);
    assert_eq!(tx.stats().retransmissions_superseded, 1);
}

#[test]
fn a_key_frame_cuts_the_frame_leaving_short_and_the_receiver_skips_to_it() {
    // Pacing at 1.5 × 100 kbit/s: a 24 kB delta frame takes 1.3 s to leave. A key frame
    // pushed 300 ms into it does not wait for the rest.
    let (mut w, _seen) = wire(
        FeedbackKind::TransportWideCc,
        Bitrate::kbps(100),
        Ecn::NotEct,
    );
    w.capture = true;
    let t0 = w.now;
    let ms = Duration::from_millis;
    let script = [
        (0, 1_000, true),
        (33, 24_000, false),
        (300, 2_000, true),
        (333, 500, false),
    ];
    let sent = run_script(&mut w, &script, Duration::from_secs(2));
    let wire_media = media_on_wire(&w);
    // Exactly one skipped number: where the delta frame was cut.
    let gaps: Vec<_> = wire_media
        .windows(2)
        .filter(|p| p[1].0 != p[0].0.wrapping_add(1))
        .map(|p| (p[0], p[1]))
        .collect();
    assert_eq!(gaps.len(), 1, "{wire_media:?}");
    assert_eq!(gaps[0].1.0, gaps[0].0.0.wrapping_add(2));
    assert!(
        !gaps[0].0.1,
        "the cut frame has no marker packet on the wire"
    );
    let got: Vec<_> = w.frames.iter().map(|f| f.data.clone()).collect();
    let want: Vec<_> = [&sent[0], &sent[2], &sent[3]]
        .map(|f| f.data.clone())
        .to_vec();
    assert!(
        got == want,
        "frames of {:?} bytes delivered",
        got.iter().map(|d| d.len()).collect::<Vec<_>>()
    );
    // The key frame is released as soon as it is complete, not after the cut frame times out.
    let key = &w.frames[1];
    assert!(
        key.completed < t0 + ms(600),
        "key frame completed {:?} after the start",
        key.completed - t0
    );
    let tx = w.sender.stats();
    assert_eq!(tx.frames_superseded, 1);
    let r = w.receiver.stats();
    assert_eq!(r.frames_lost, 1, "{r:?}");
    assert_eq!(r.frames_undecodable, 0, "{r:?}");
}

/// Records what reaches the receive-side estimator.
#[derive(Debug, Default)]
struct Recording {
    seen: std::sync::Arc<std::sync::Mutex<Vec<cg_cc::ReceivedPacket>>>,
}

impl cg_cc::ReceiveSideEstimator for Recording {
    fn on_packet_received(&mut self, p: &cg_cc::ReceivedPacket) {
        self.seen.lock().unwrap().push(*p);
    }
    fn handle_timeout(&mut self, _now: Instant) {}
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn poll_remb(&mut self, _now: Instant) -> Option<Bitrate> {
        None
    }
    fn estimate(&self) -> Bitrate {
        Bitrate::kbps(500)
    }
    fn stats(&self) -> Vec<(&'static str, f64)> {
        vec![]
    }
}

#[test]
fn padding_reaches_the_receive_side_estimator_with_its_send_times() {
    let t0 = Instant::now();
    let (mut cc, _seen) = Fixed::new(Bitrate::kbps(500), FeedbackKind::Remb);
    cc.events.push_back(ControllerEvent::Probe {
        rate: Bitrate::mbps(1),
        duration: Duration::from_millis(500),
    });
    let tx = SenderSession::new(SenderConfig::default(), cc, t0).unwrap();
    let rec = Recording::default();
    let got = rec.seen.clone();
    let rx = ReceiverSession::new(
        ReceiverConfig {
            feedback: FeedbackConfig::for_kind(FeedbackKind::Remb),
            ..ReceiverConfig::default()
        },
        Some(Box::new(rec)),
        t0,
    )
    .unwrap();
    let mut w = Wire::new(tx, rx, t0, DELAY);
    w.run(
        t0 + Duration::from_secs(2),
        &mut cbr_source(Codec::Vp8, 30, 1000, 60),
    );
    let got = got.lock().unwrap();
    let padding: Vec<_> = got
        .iter()
        .filter(|p| p.kind == cg_cc::PacketKind::Padding)
        .collect();
    let pads = w.receiver.stats().padding_packets;
    assert!(pads > 100, "{pads}");
    assert_eq!(padding.len() as u64, pads, "every padding packet");
    assert_eq!(
        got.iter()
            .filter(|p| p.kind == cg_cc::PacketKind::Media)
            .count() as u64,
        w.receiver.stats().media_packets
    );
    // With their abs-send-time: the padding went out over the probe's 500 ms at up to
    // 1 Mbit/s (send times in 1/2^18 s units, unwrapped to µs).
    let span = padding.last().unwrap().send_time.as_micros() - padding[0].send_time.as_micros();
    assert!((400_000..=500_000).contains(&span), "{span} µs");
    let bytes: u64 = padding.iter().map(|p| p.size.as_bytes()).sum();
    let rate = bytes as f64 * 8.0 / (span as f64 / 1e6);
    assert!(rate > 500e3 && rate <= 1.05e6, "{rate} bit/s");
    assert!(padding.iter().all(|p| p.size > DataSize::bytes(255)));
}

#[test]
fn transport_overhead_is_kept_out_of_packets_and_counted_in_sizes() {
    let overhead = 16;
    let (mut w, seen) = wire_with(
        FeedbackKind::TransportWideCc,
        Bitrate::mbps(5),
        SenderConfig {
            transport_overhead: overhead,
            ..SenderConfig::default()
        },
    );
    w.capture = true;
    let t0 = w.now;
    w.run(
        t0 + Duration::from_secs(1),
        &mut cbr_source(Codec::Vp8, 30, 8000, 30),
    );
    assert!(w.frames.len() >= 28, "{} frames", w.frames.len());
    let forward: Vec<usize> = w
        .captured
        .iter()
        .filter(|(_, fwd, b, _)| *fwd && !(192..=223).contains(&b[1]))
        .map(|(_, _, b, _)| b.len())
        .collect();
    // Full-size packets leave room for the tag: at most 1200 bytes on the wire with it, and
    // within the tag's size of that (1198 bytes without the overhead setting).
    let max = *forward.iter().max().unwrap();
    assert!(max <= 1200 - overhead && max > 1200 - 2 * overhead, "{max}");
    let s = seen.lock().unwrap();
    assert_eq!(s.sent.len(), forward.len());
    for (p, len) in s.sent.iter().zip(&forward) {
        assert_eq!(p.size, DataSize::bytes((len + overhead) as u64));
    }
}

#[test]
fn payload_padding_probes_with_copies_of_sent_packets_at_the_probe_rate() {
    let t0 = Instant::now();
    let (mut cc, seen) = Fixed::new(Bitrate::kbps(500), FeedbackKind::TransportWideCc);
    cc.events.push_back(ControllerEvent::Probe {
        rate: Bitrate::mbps(2),
        duration: Duration::from_millis(500),
    });
    // A receive-side estimator that counts what it is given as padding.
    let seen_padding = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let est = ConstEstimator {
        rate: Bitrate::kbps(500),
        next: None,
        packets: 0,
        padding: seen_padding.clone(),
    };
    let rx = ReceiverSession::new(
        ReceiverConfig {
            feedback: FeedbackConfig::for_kind(FeedbackKind::Remb),
            ..ReceiverConfig::default()
        },
        Some(Box::new(est)),
        t0,
    )
    .unwrap();
    let tx = SenderSession::new(
        SenderConfig {
            payload_padding: true,
            ..SenderConfig::default()
        },
        cc,
        t0,
    )
    .unwrap();
    let mut w = Wire::new(tx, rx, t0, DELAY);
    w.capture = true;
    w.run(
        t0 + Duration::from_secs(2),
        &mut cbr_source(Codec::Vp8, 30, 1000, 60),
    );
    let rtx_ssrc = w.sender.config().rtx_ssrc.to_be_bytes();
    let padding: Vec<&bytes::Bytes> = w
        .captured
        .iter()
        .filter(|(_, fwd, b, _)| *fwd && b.len() > 12 && b[8..12] == rtx_ssrc)
        .map(|(_, _, b, _)| b)
        .collect();
    assert!(padding.len() > 20, "{}", padding.len());
    // Each is a retransmission (P bit clear, a payload), never a padding-only packet.
    assert!(padding.iter().all(|b| b[0] & 0x20 == 0 && b.len() > 100));
    let s = seen.lock().unwrap();
    let probe: Vec<_> = s
        .sent
        .iter()
        .filter(|p| p.kind == cg_cc::PacketKind::Padding)
        .collect();
    assert_eq!(probe.len(), padding.len());
    // The probe keeps its rate (2 Mbit/s) though each packet is ~1000 bytes, not ~290:
    // padding over the probe's span, media excluded.
    let bytes: u64 = probe.iter().map(|p| p.size.as_bytes()).sum();
    let span = probe.last().unwrap().send_time - probe[0].send_time;
    let rate = bytes as f64 * 8.0 / span.as_secs_f64().max(1e-3);
    assert!(
        (1.4e6..2.6e6).contains(&rate),
        "probe padding at {rate:.0} bit/s"
    );
    // The receiver takes them as padding (copies of packets it has) and drops them: no
    // retransmission counted, nothing counted twice in the reception statistics (the loss
    // does not go negative), every frame intact.
    let r = w.receiver.stats();
    assert_eq!(r.frames_lost, 0);
    assert_eq!(r.retransmissions, 0);
    assert_eq!(r.padding_packets, padding.len() as u64);
    assert_eq!(r.cumulative_lost, 0);
    // A receive-side estimator sees them as padding (it finds probe clusters by padding),
    // not as retransmissions.
    let as_padding = seen_padding.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(as_padding, padding.len() as u64);
}
