//! End-to-end tests with real GStreamer pipelines (VP8 via libvpx, H.264 via x264/libav).
//!
//! Rates and key-frame positions are measured on pipeline timestamps (PTS) and frame
//! indices, not on the wall clock, so a busy shared machine slows the tests down but does not
//! make them fail. The tests take a lock so that only one pipeline pair runs at a time.

use std::sync::Mutex;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use cg_media::{
    Codec, Decoder, DecoderConfig, EncodedFrame, Encoder, EncoderConfig, Error, FileFormat,
    MediaCodec, PushOutcome, QualitySummary, ReferenceSpec, SourceConfig, TestPattern,
};
use cg_types::{Bitrate, DataSize};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

fn config(encoder: &str, width: u32, height: u32, rate: Bitrate) -> EncoderConfig {
    EncoderConfig {
        encoder: encoder.to_owned(),
        width,
        height,
        start_bitrate: rate,
        ..EncoderConfig::default()
    }
}

/// Receives frames until one has a PTS at or past `until` (pipeline running time).
fn collect_until(rx: &Receiver<EncodedFrame>, until: Duration) -> Vec<EncodedFrame> {
    let mut frames = Vec::new();
    loop {
        let f = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("encoder produces frames");
        let done = f.pts >= until;
        frames.push(f);
        if done {
            return frames;
        }
    }
}

/// Bit rate of the frames with PTS in `(from, to]`.
fn rate_between(frames: &[EncodedFrame], from: Duration, to: Duration) -> Bitrate {
    let bytes: u64 = frames
        .iter()
        .filter(|f| f.pts > from && f.pts <= to)
        .map(|f| f.data.len() as u64)
        .sum();
    DataSize::bytes(bytes) / (to - from)
}

fn wait_for(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn round_trip(encoder: &str, codec: Codec, width: u32, height: u32) {
    let _g = serial();
    let (enc, rx) = Encoder::start(config(encoder, width, height, Bitrate::mbps(1))).unwrap();
    let (dec, records) = Decoder::start(DecoderConfig {
        codec,
        ..DecoderConfig::default()
    })
    .unwrap();
    let mut pushed = 0;
    while pushed < 30 {
        let f = rx.recv_timeout(Duration::from_secs(10)).expect("frames");
        assert_eq!(f.codec, codec);
        if pushed == 0 {
            assert!(f.key_frame, "the first frame is a key frame");
            assert!(codec.is_key_frame(&f.data), "flag and bitstream agree");
        }
        assert_eq!(dec.push(f).unwrap(), PushOutcome::Queued);
        pushed += 1;
    }
    wait_for("30 decoded frames", Duration::from_secs(10), || {
        dec.stats().frames_decoded >= 30
    });
    let stats = dec.stats();
    assert_eq!(stats.last_size, Some((width, height)));
    assert_eq!(stats.decode_errors, 0);
    let rec = records.recv_timeout(Duration::from_secs(1)).unwrap();
    assert_eq!((rec.width, rec.height), (width, height));
    let g2g = rec
        .glass_to_glass
        .expect("capture time is on this host's clock");
    assert!(
        g2g > Duration::ZERO && g2g < Duration::from_secs(5),
        "{g2g:?}"
    );
    assert!(stats.median_glass_to_glass.is_some());
    let es = enc.stats();
    assert!(
        es.frames_out >= 30 && es.key_frames >= 1 && es.error.is_none(),
        "{es:?}"
    );
    assert!(
        es.frames_captured >= es.frames_in && es.frames_in >= es.frames_out,
        "{es:?}"
    );
    assert!(es.mean_encode_latency > Duration::ZERO);
    enc.stop();
    dec.stop();
}

/// Encodes stamped camera pictures at `rate`, decodes them scored against `reference`, and
/// returns the quality after 90 frames with the stamped frame numbers read back.
fn scored(rate: Bitrate, reference: &str) -> (QualitySummary, Vec<u32>) {
    let _g = serial();
    let (enc, rx) = Encoder::start(EncoderConfig {
        source: SourceConfig::TestPattern {
            pattern: TestPattern::Camera,
        },
        stamp: true,
        ..config("vp8", 640, 360, rate)
    })
    .unwrap();
    let (dec, records) = Decoder::start(DecoderConfig {
        reference: Some(reference.parse::<ReferenceSpec>().unwrap()),
        ..DecoderConfig::default()
    })
    .unwrap();
    for _ in 0..90 {
        let f = rx.recv_timeout(Duration::from_secs(10)).expect("frames");
        dec.push(f).unwrap();
    }
    wait_for("scored pictures", Duration::from_secs(20), || {
        dec.stats().quality.is_some_and(|q| q.scored >= 60)
    });
    let quality = dec.stats().quality.unwrap();
    let numbers = records
        .try_iter()
        .filter_map(|r| r.stamp.map(|s| s.frame))
        .collect();
    enc.stop();
    dec.stop();
    (quality, numbers)
}

#[test]
fn stamped_pictures_are_matched_to_their_source_and_scored_by_the_rate() {
    let (high, numbers) = scored(Bitrate::mbps(3), "camera:640x360@30");
    let (low, _) = scored(Bitrate::kbps(300), "camera:640x360@30");
    let (wrong, _) = scored(Bitrate::mbps(3), "game:640x360@30");
    eprintln!("PSNR mean / p5: 3 Mbit/s {high:?}; 300 kbit/s {low:?}; wrong source {wrong:?}");
    // Every picture's number is read back, in order (the records channel holds 64).
    assert!(numbers.len() >= 60, "{} stamps read", numbers.len());
    assert!(numbers.windows(2).all(|w| w[1] > w[0]), "{numbers:?}");
    assert_eq!(high.unread, 0, "{high:?}");
    // The right source scores well and better with more bits; the wrong one scores as noise.
    assert!(
        high.psnr_mean_db > 27.0 && high.psnr_mean_db < 60.0,
        "{high:?}"
    );
    assert!(
        low.psnr_mean_db < high.psnr_mean_db - 2.0,
        "{low:?} {high:?}"
    );
    assert!(low.psnr_mean_db > 20.0, "{low:?}");
    assert!(wrong.psnr_mean_db < 15.0, "{wrong:?}");
    assert!(high.psnr_p5_db <= high.psnr_mean_db);
}

#[test]
fn vp8_output_decodes_to_frames_of_the_configured_size() {
    round_trip("vp8", Codec::Vp8, 640, 360);
}

#[test]
fn x264_output_decodes_to_frames_of_the_configured_size() {
    round_trip("x264enc", Codec::H264, 320, 240);
}

/// Sets `rate` and returns the frames from then until 2 s (PTS) after the frame the new target
/// was applied to, with that frame's PTS.
fn step_to(
    enc: &Encoder,
    rx: &Receiver<EncodedFrame>,
    rate: Bitrate,
) -> (Vec<EncodedFrame>, Duration) {
    enc.set_target_bitrate(rate);
    let mut frames = Vec::new();
    let step_pts = loop {
        frames.push(rx.recv_timeout(Duration::from_secs(10)).unwrap());
        let s = enc.stats();
        if s.target_bitrate == rate {
            break s.target_applied_at_pts.expect("a frame carried the change");
        }
    };
    frames.extend(collect_until(rx, step_pts + Duration::from_secs(2)));
    (frames, step_pts)
}

/// Raw frames the host dropped in front of the encoder so far (it could not keep up).
fn overload_drops(enc: &Encoder) -> u64 {
    let s = enc.stats();
    s.frames_captured.saturating_sub(s.frames_in)
}

/// Issue #8: a 2 → 0.5 Mbit/s step is followed within 2 s (±20 %): the rate produced in the
/// second second after the step is within 400–600 kbit/s. Also checks that the source
/// really fills 2 Mbit/s before the step (second second after start, 1.6–2.4 Mbit/s).
///
/// Rate control is only judged when the encoder saw every raw frame: if the shared host
/// was so loaded that frames were dropped in front of the encoder during an attempt (which
/// changes what any encoder produces), the attempt is repeated, at most three times. A
/// miss without such drops fails at once.
fn follows_target_step(encoder: &str) {
    let _g = serial();
    let second = |frames: &[EncodedFrame], step: Duration| {
        rate_between(
            frames,
            step + Duration::from_secs(1),
            step + Duration::from_secs(2),
        )
    };
    for attempt in 1..=3 {
        // The default moving zone plate: it fills 2 Mbit/s at 640x360 (3.6 Mbit/s at a
        // 4 Mbit/s target) and vp8enc follows it down to 300 kbit/s (measured 495 kbit/s
        // at a 500 kbit/s target), while scrolling SMPTE bars cannot go below ~0.7 Mbit/s.
        let cfg = EncoderConfig {
            stats_window: Duration::from_secs(1),
            ..config(encoder, 640, 360, Bitrate::mbps(2))
        };
        let (enc, rx) = Encoder::start(cfg).unwrap();
        let first = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        let high = collect_until(&rx, first.pts + Duration::from_secs(2));
        let settled = second(&high, first.pts);
        let (low, low_step) = step_to(&enc, &rx, Bitrate::kbps(500));
        let followed = second(&low, low_step);
        let stats = enc.stats();
        let ok = (1.6..=2.4).contains(&settled.as_mbps_f64())
            && (0.4..=0.6).contains(&followed.as_mbps_f64())
            && (0.4..=0.6).contains(&stats.produced_bitrate.as_mbps_f64());
        let drops = overload_drops(&enc);
        let report = format!(
            "{encoder} attempt {attempt}: 2 Mbit/s → {settled}, then 500 kbit/s → {followed} \
             (stats window {}), {drops} raw frames dropped by overload",
            stats.produced_bitrate
        );
        eprintln!("{report}");
        assert!(stats.error.is_none(), "{report}: {:?}", stats.error);
        assert_eq!(stats.target_bitrate, Bitrate::kbps(500));
        // No restart: the stream goes on without a key frame or a sequence gap.
        assert!(
            low.iter().all(|f| !f.key_frame),
            "{report}: a key frame after the step"
        );
        let seqs: Vec<u64> = high.iter().chain(&low).map(|f| f.seq).collect();
        assert!(
            seqs.windows(2).all(|w| w[1] == w[0] + 1),
            "{report}: sequence gap"
        );
        if ok {
            return;
        }
        assert!(
            drops > 0,
            "rate control missed on an unloaded run: {report}"
        );
    }
    panic!("{encoder}: the host dropped frames in all three attempts");
}

#[test]
fn vp8_follows_a_target_step_from_2_to_0_5_mbps_within_2_s() {
    follows_target_step("vp8");
}

#[test]
fn x264_follows_a_target_step_from_2_to_0_5_mbps_within_2_s() {
    follows_target_step("x264");
}

/// Issue #9: at 1280×720 VP8 follows a 0.5 Mbit/s target, key frame included, on
/// [`TestPattern::FaintZonePlate`], with vp8enc `cpu-used` = `cpu_used`. The encoder starts
/// at 2.5 Mbit/s and steps to 0.5 Mbit/s after 1 s; 2 s after the step a key frame is
/// requested (as a receiver does after a loss) and the rate produced over the next 5 s, key
/// frame included, must be within ±10 % of 500 kbit/s.
///
/// Why ±10 %: libvpx's CBR pays for a key frame and the refinement after it (the 0.5 s
/// holding them carries about 1 Mbit/s here) over the following seconds, so a 5 s window
/// with one key frame ends a few per cent above the target: measured 529 kbit/s at speed 6
/// and 510 kbit/s at speed 16 (videotestsrc and libvpx are deterministic: repeated runs
/// give the same numbers). The full-contrast [`TestPattern::MovingZonePlate`] gives 531
/// kbit/s at speed 6 (its key frame is 56 KB, against 5 KB) but 1148 kbit/s at speed 16,
/// which is where libvpx's automatic speed (the former default `cpu-used` 12) goes on a
/// loaded host.
///
/// Judged only on attempts where the encoder saw every raw frame (see
/// [`follows_target_step`]).
fn faint_zone_plate_at_720p_follows_0_5_mbps(cpu_used: i32) {
    let _g = serial();
    for attempt in 1..=3 {
        let cfg = EncoderConfig {
            source: SourceConfig::TestPattern {
                pattern: TestPattern::FaintZonePlate,
            },
            key_frame_interval: None,
            vp8_cpu_used: cpu_used,
            ..config("vp8", 1280, 720, Bitrate::kbps(2_500))
        };
        let (enc, rx) = Encoder::start(cfg).unwrap();
        let first = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        collect_until(&rx, first.pts + Duration::from_secs(1));
        let (mut low, step) = step_to(&enc, &rx, Bitrate::kbps(500));
        let from = step + Duration::from_secs(2);
        enc.request_key_frame().unwrap();
        let to = from + Duration::from_secs(5);
        low.extend(collect_until(&rx, to));
        let produced = rate_between(&low, from, to);
        let keys: Vec<usize> = low
            .iter()
            .filter(|f| f.key_frame && f.pts > from)
            .map(|f| f.data.len())
            .collect();
        let stats = enc.stats();
        let drops = overload_drops(&enc);
        let report = format!(
            "cpu-used {cpu_used}, attempt {attempt}: 2.5 Mbit/s → 500 kbit/s: {produced} from \
             2 s to 7 s after the step, key frames of {keys:?} bytes, {drops} raw frames \
             dropped by overload"
        );
        eprintln!("{report}");
        assert!(stats.error.is_none(), "{report}: {:?}", stats.error);
        assert_eq!(keys.len(), 1, "{report}: the requested key frame");
        if (450.0..=550.0).contains(&produced.as_kbps_f64()) {
            return;
        }
        assert!(
            drops > 0,
            "rate control missed on an unloaded run: {report}"
        );
    }
    panic!("cpu-used {cpu_used}: the host dropped frames in all three attempts");
}

#[test]
fn vp8_at_720p_follows_0_5_mbps_on_the_faint_zone_plate() {
    faint_zone_plate_at_720p_follows_0_5_mbps(EncoderConfig::default().vp8_cpu_used);
}

/// Speed 16 is libvpx's fastest: where its automatic speed selection ends up on a loaded
/// host.
#[test]
fn vp8_at_720p_follows_0_5_mbps_on_the_faint_zone_plate_even_at_the_fastest_speed() {
    faint_zone_plate_at_720p_follows_0_5_mbps(-16);
}

/// Issue #8: a key-frame request yields a key frame within 2 frame intervals.
fn key_frame_on_request(encoder: &str) {
    let _g = serial();
    let cfg = EncoderConfig {
        key_frame_interval: None,
        ..config(encoder, 320, 240, Bitrate::kbps(500))
    };
    let (enc, rx) = Encoder::start(cfg).unwrap();
    let interval = Duration::from_secs(1) / 30;
    let t0 = rx.recv_timeout(Duration::from_secs(10)).unwrap().pts;
    for round in 0..3 {
        let frames = collect_until(&rx, t0 + Duration::from_millis(500 + 500 * round));
        assert!(
            frames.iter().all(|f| !f.key_frame),
            "no key frame without a request"
        );
        enc.request_key_frame().unwrap();
        let stats = enc.stats();
        let after = stats
            .key_frame_requested_after_index
            .expect("frames entered");
        let after_pts = stats.key_frame_requested_after_pts.expect("frames entered");
        let key = loop {
            let f = rx.recv_timeout(Duration::from_secs(10)).unwrap();
            if f.key_frame {
                break f;
            }
            assert!(
                f.index <= after + 2,
                "frame {} is not a key frame (request after {after})",
                f.index
            );
        };
        assert!(
            key.index > after && key.index <= after + 2,
            "key frame {} after {after}",
            key.index
        );
        // Within two frame intervals of the last frame before the request.
        let late = key.pts.saturating_sub(after_pts);
        assert!(
            late <= 2 * interval + Duration::from_millis(2),
            "key frame {late:?} after the request"
        );
        assert!(enc.kind().codec().is_key_frame(&key.data));
    }
    assert_eq!(enc.stats().key_frame_requests, 3);
}

#[test]
fn vp8_key_frame_request_yields_a_key_frame_within_two_frame_intervals() {
    key_frame_on_request("vp8");
}

#[test]
fn x264_key_frame_request_yields_a_key_frame_within_two_frame_intervals() {
    key_frame_on_request("x264");
}

#[test]
fn unknown_encoder_is_a_typed_error_listing_the_available_ones() {
    let err = Encoder::start(config("av1-magic", 320, 240, Bitrate::mbps(1))).unwrap_err();
    match err {
        Error::UnknownEncoder { name, available } => {
            assert_eq!(name, "av1-magic");
            assert!(available.iter().any(|a| a == "vp8") && available.iter().any(|a| a == "x264"));
        }
        other => panic!("wrong error: {other}"),
    }
}

#[test]
fn nvenc_without_an_nvidia_gpu_is_a_clear_not_available_error() {
    for name in ["nvh264", "nvh265enc"] {
        match Encoder::start(config(name, 320, 240, Bitrate::mbps(1))) {
            Err(Error::EncoderNotAvailable { encoder, reason }) => {
                assert!(encoder.starts_with("nvh26"));
                assert!(
                    reason.contains("NVIDIA") || reason.contains("cannot encode"),
                    "{reason}"
                );
            }
            Err(other) => panic!("{name}: wrong error {other}"),
            Ok(_) => {
                // A machine with an NVENC GPU: the encoder must then really work.
                assert!(gstreamer::ElementFactory::find("nvh264enc").is_some());
            }
        }
    }
}

/// Encodes `n` frames at 320x240 for the decoder tests.
fn encode_frames(encoder: &str, n: usize) -> Vec<EncodedFrame> {
    let cfg = EncoderConfig {
        key_frame_interval: None,
        ..config(encoder, 320, 240, Bitrate::kbps(800))
    };
    let (enc, rx) = Encoder::start(cfg).unwrap();
    let frames: Vec<EncodedFrame> = (0..n)
        .map(|_| rx.recv_timeout(Duration::from_secs(10)).unwrap())
        .collect();
    enc.stop();
    assert!(frames[0].key_frame && frames[1..].iter().all(|f| !f.key_frame));
    frames
}

fn with_seq(f: &EncodedFrame, seq: u64, data: Vec<u8>) -> EncodedFrame {
    EncodedFrame {
        seq,
        data: data.into(),
        ..f.clone()
    }
}

/// Issue #8: corrupt or truncated frames → counted errors, the pipeline keeps running, and
/// the next key frame decodes again.
fn corrupt_frames_are_counted(encoder: &str, codec: Codec) {
    let _g = serial();
    let frames = encode_frames(encoder, 20);
    let (dec, _records) = Decoder::start(DecoderConfig {
        codec,
        ..DecoderConfig::default()
    })
    .unwrap();
    let mut seq = 0u64;
    let mut push = |f: &EncodedFrame, data: Vec<u8>| {
        let out = dec.push(with_seq(f, seq, data)).unwrap();
        seq += 1;
        out
    };
    for f in &frames[..10] {
        push(f, f.data.to_vec());
    }
    wait_for("10 good frames", Duration::from_secs(10), || {
        dec.stats().frames_decoded >= 10
    });

    // Truncated inter frames, random bytes, a truncated key frame, an empty frame.
    let mut rng = cg_types::Rng::new(8);
    let mut bad = Vec::new();
    for f in &frames[10..13] {
        bad.push(f.data[..f.data.len() / 3].to_vec());
    }
    for f in &frames[13..16] {
        let mut d = f.data.to_vec();
        let keep = d.len().min(12);
        for b in &mut d[keep..] {
            *b = rng.next_u64() as u8;
        }
        bad.push(d);
    }
    bad.push(frames[0].data[..frames[0].data.len() / 4].to_vec());
    bad.push(Vec::new());
    for d in bad {
        push(&frames[10], d);
    }
    wait_for("errors counted", Duration::from_secs(10), || {
        let s = dec.stats();
        s.decode_errors + s.decoder_warnings > 0 && s.waiting_for_key_frame
    });
    assert!(
        dec.take_key_frame_request(),
        "a decode error asks for a key frame"
    );

    // A good key frame and its successors decode again.
    let decoded_before = dec.stats().frames_decoded;
    for f in &frames[..10] {
        push(f, f.data.to_vec());
    }
    wait_for("recovery", Duration::from_secs(10), || {
        dec.stats().frames_decoded >= decoded_before + 8
    });
    let s = dec.stats();
    assert_eq!(s.last_size, Some((320, 240)));
    assert!(!s.waiting_for_key_frame, "{s:?}");
    eprintln!("{encoder}: {s:?}");
}

#[test]
fn corrupt_vp8_frames_are_counted_and_decoding_recovers() {
    corrupt_frames_are_counted("vp8", Codec::Vp8);
}

#[test]
fn corrupt_h264_frames_are_counted_and_decoding_recovers() {
    corrupt_frames_are_counted("x264", Codec::H264);
}

#[test]
fn a_lost_frame_makes_the_decoder_wait_for_a_key_frame_and_ask_for_one() {
    let _g = serial();
    let frames = encode_frames("vp8", 12);
    let (dec, _r) = Decoder::start(DecoderConfig::default()).unwrap();
    for f in &frames[..5] {
        assert_eq!(dec.push(f.clone()).unwrap(), PushOutcome::Queued);
    }
    assert!(!dec.take_key_frame_request());
    // Frame 5 is lost: 6.. reference it.
    assert_eq!(
        dec.push(frames[6].clone()).unwrap(),
        PushOutcome::DroppedAwaitingKeyFrame
    );
    assert!(dec.take_key_frame_request());
    assert_eq!(
        dec.push(frames[7].clone()).unwrap(),
        PushOutcome::DroppedAwaitingKeyFrame
    );
    // While waiting, the request is raised again (every 200 ms) even without new frames.
    wait_for(
        "a repeated key-frame request",
        Duration::from_secs(5),
        || dec.take_key_frame_request(),
    );
    // A duplicate is stale, not a loss.
    assert_eq!(
        dec.push(frames[7].clone()).unwrap(),
        PushOutcome::DroppedStale
    );
    // The key frame (re-sent with a later sequence number) resumes decoding.
    let key = EncodedFrame {
        seq: 8,
        ..frames[0].clone()
    };
    assert_eq!(dec.push(key).unwrap(), PushOutcome::Queued);
    for (i, f) in frames[1..4].iter().enumerate() {
        let f = EncodedFrame {
            seq: 9 + i as u64,
            ..f.clone()
        };
        assert_eq!(dec.push(f).unwrap(), PushOutcome::Queued);
    }
    wait_for("decoding resumes", Duration::from_secs(10), || {
        dec.stats().frames_decoded >= 9
    });
    let s = dec.stats();
    assert_eq!(
        (s.losses, s.dropped_awaiting_key_frame, s.dropped_stale),
        (1, 2, 1)
    );
    // Wrong codec is a typed error, not a crash.
    let h264 = EncodedFrame {
        codec: Codec::H264,
        ..frames[0].clone()
    };
    assert!(matches!(dec.push(h264), Err(Error::WrongCodec { .. })));
}

/// A plain-RTP stream names its codec per packet: a decoder told to follow it switches at
/// the new codec's key frame, and decodes both codecs' pictures.
#[test]
fn a_decoder_following_the_stream_switches_codec_at_its_key_frame() {
    let _g = serial();
    let vp8 = encode_frames("vp8", 4);
    let h264 = encode_frames("x264", 4);
    let (dec, _r) = Decoder::start(DecoderConfig {
        follow_stream: true,
        ..DecoderConfig::default()
    })
    .unwrap();
    let mut seq = 0;
    let mut push = |f: &EncodedFrame| {
        seq += 1;
        dec.push(with_seq(f, seq, f.data.to_vec())).unwrap()
    };
    for f in &vp8 {
        assert_eq!(push(f), PushOutcome::Queued);
    }
    wait_for("the VP8 pictures", Duration::from_secs(10), || {
        dec.stats().frames_decoded >= 4
    });
    // Joined after the key frame: nothing of the new codec before its key frame.
    assert_eq!(push(&h264[1]), PushOutcome::DroppedAwaitingKeyFrame);
    assert!(dec.take_key_frame_request());
    assert_eq!(dec.stats().codec, Codec::Vp8);
    for f in &h264 {
        assert_eq!(push(f), PushOutcome::Queued);
    }
    wait_for("the H.264 pictures", Duration::from_secs(10), || {
        dec.stats().frames_decoded >= 8
    });
    // And back, at VP8's key frame.
    for f in &vp8 {
        assert_eq!(push(f), PushOutcome::Queued);
    }
    wait_for("VP8 again", Duration::from_secs(10), || {
        dec.stats().frames_decoded >= 12
    });
    let s = dec.stats();
    assert_eq!((s.codec, s.codec_switches), (Codec::Vp8, 2), "{s:?}");
    assert_eq!(s.last_size, Some((320, 240)));
    assert_eq!(s.decode_errors, 0, "{s:?}");
}

#[test]
fn a_pause_in_the_stream_is_counted_as_a_freeze_with_its_duration() {
    let _g = serial();
    let frames = encode_frames("vp8", 10);
    let (dec, _r) = Decoder::start(DecoderConfig::default()).unwrap();
    for f in &frames[..5] {
        dec.push(f.clone()).unwrap();
        std::thread::sleep(Duration::from_millis(33));
    }
    wait_for("5 frames", Duration::from_secs(10), || {
        dec.stats().frames_decoded >= 5
    });
    std::thread::sleep(Duration::from_millis(400));
    assert!(
        dec.stats()
            .current_stall
            .is_some_and(|d| d >= Duration::from_millis(400))
    );
    for f in &frames[5..] {
        dec.push(f.clone()).unwrap();
    }
    wait_for("10 frames", Duration::from_secs(10), || {
        dec.stats().frames_decoded >= 10
    });
    let s = dec.stats();
    assert!(s.freezes >= 1, "{s:?}");
    assert!(s.longest_freeze >= Duration::from_millis(400), "{s:?}");
    assert!(
        s.recent_freezes
            .iter()
            .any(|f| f.duration >= Duration::from_millis(400))
    );
}

#[test]
fn back_pressure_drops_frames_without_stalling_and_requests_a_key_frame() {
    let _g = serial();
    let cfg = EncoderConfig {
        frame_queue: 2,
        ..config("vp8", 320, 240, Bitrate::kbps(300))
    };
    let (enc, rx) = Encoder::start(cfg).unwrap();
    wait_for("drops", Duration::from_secs(10), || {
        enc.stats().dropped_backpressure >= 5
    });
    let s = enc.stats();
    assert!(s.key_frame_requests >= 1 && s.error.is_none(), "{s:?}");
    // The pipeline is still running: fresh frames arrive, with a sequence gap.
    let a = rx.recv_timeout(Duration::from_secs(5)).unwrap();
    let b = rx.recv_timeout(Duration::from_secs(5)).unwrap();
    let c = rx.recv_timeout(Duration::from_secs(5)).unwrap();
    assert!(c.seq > b.seq && b.seq > a.seq);
    assert!(c.seq - a.seq > 2 || enc.stats().frames_out > c.seq);
}

#[test]
fn y4m_file_source_loops_and_encodes() {
    let _g = serial();
    use std::io::Write;
    let mut file = tempfile::NamedTempFile::new().unwrap();
    writeln!(file, "YUV4MPEG2 W160 H120 F30:1 C420jpeg").unwrap();
    for i in 0..5u8 {
        file.write_all(b"FRAME\n").unwrap();
        let luma: Vec<u8> = (0..160 * 120)
            .map(|p| (p as u8).wrapping_mul(i + 1))
            .collect();
        file.write_all(&luma).unwrap();
        file.write_all(&[128; 2 * 80 * 60]).unwrap();
    }
    file.flush().unwrap();
    let cfg = EncoderConfig {
        source: SourceConfig::File {
            path: file.path().to_owned(),
            format: FileFormat::Y4m,
            looping: true,
        },
        ..config("vp8", 160, 120, Bitrate::kbps(300))
    };
    let (enc, rx) = Encoder::start(cfg).unwrap();
    let first = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(cg_media::vp8_key_frame_size(&first.data), Some((160, 120)));
    let frames = collect_until(&rx, first.pts + Duration::from_millis(500));
    // 15 frames are due in 500 ms; a loaded host may deliver fewer, but more than the 5 in
    // the file proves the loop.
    assert!(
        frames.len() >= 8,
        "5-frame file looped: {} frames",
        frames.len()
    );
    assert!(enc.stats().error.is_none());
}

#[test]
fn missing_file_and_missing_display_are_typed_errors() {
    let cfg = EncoderConfig {
        source: SourceConfig::File {
            path: "/nonexistent.y4m".into(),
            format: FileFormat::Y4m,
            looping: true,
        },
        ..config("vp8", 160, 120, Bitrate::kbps(300))
    };
    assert!(matches!(Encoder::start(cfg), Err(Error::File { .. })));
    let _g = serial();
    let cfg = EncoderConfig {
        source: SourceConfig::Screen {
            display: Some(":97".to_owned()),
        },
        ..config("vp8", 160, 120, Bitrate::kbps(300))
    };
    match Encoder::start(cfg) {
        Err(Error::Start(msg)) => assert!(!msg.is_empty()),
        other => panic!("expected a start error, got {other:?}"),
    }
    let cfg = EncoderConfig {
        source: SourceConfig::Camera {
            device: "/dev/cg-no-such-camera".into(),
        },
        ..config("vp8", 160, 120, Bitrate::kbps(300))
    };
    match Encoder::start(cfg) {
        Err(Error::Start(msg)) => assert!(!msg.is_empty()),
        other => panic!("expected a start error, got {other:?}"),
    }
}

/// Issue #14: every degradation preference keeps the stream going as the target falls
/// 2.5 → 0.6 → 0.3 → 0.15 Mbit/s from 1280×720, including `balanced`, whose ladder then
/// changes the size between two reduced frame rates. The scaler's caps used to ask for the
/// reduced rate, which a scaler cannot produce: the pipeline stopped negotiating and no
/// frame came out at 150 kbit/s (`rate_sweep --degradation balanced`: nothing after 300).
#[test]
fn every_degradation_preference_keeps_frames_coming_down_to_150_kbps() {
    use cg_media::DegradationPreference;
    let _g = serial();
    for preference in [
        DegradationPreference::MaintainFramerate,
        DegradationPreference::MaintainResolution,
        DegradationPreference::Balanced,
    ] {
        let mut cfg = EncoderConfig {
            source: SourceConfig::TestPattern {
                pattern: TestPattern::Camera,
            },
            ..config("vp8", 1280, 720, Bitrate::kbps(2500))
        };
        cfg.adaptation.preference = preference;
        let (enc, rx) = Encoder::start(cfg).unwrap();
        let mut at = rx.recv_timeout(Duration::from_secs(10)).unwrap().pts;
        let mut tail = 0;
        for kbps in [600, 300, 150] {
            enc.set_target_bitrate(Bitrate::kbps(kbps));
            // `collect_until` fails if no frame comes for 10 s.
            let frames = collect_until(&rx, at + Duration::from_secs(5));
            tail = frames
                .iter()
                .filter(|f| f.pts > at + Duration::from_secs(3))
                .count();
            at += Duration::from_secs(5);
        }
        let s = enc.stats();
        eprintln!(
            "{preference:?}: coded {} after {} format changes, {tail} frames in the last 2 s",
            s.format, s.format_changes
        );
        assert!(s.error.is_none(), "{preference:?}: {:?}", s.error);
        assert!(
            s.format.width < 1280 || s.format.frame_rate < 30,
            "{preference:?}: still {}",
            s.format
        );
        // Liveness, not rate: at 7 fps the frame dropper may skip most of them.
        assert!(tail >= 2, "{preference:?}: {tail} frames in the last 2 s");
    }
}

/// Issue #14: a key frame asked for while the target is far below the picture's need (the
/// receiver lost packets at a capacity drop) comes at the smaller size the adaptation
/// switches to, once: not a 1280×720 key frame followed by the switch's own a few hundred
/// milliseconds later, which at the new rate took seconds to get through. Where the switch
/// keeps the size (`maintain-resolution` lowers the frame rate) the key frame still comes.
#[test]
fn a_key_frame_wanted_during_a_rate_collapse_comes_once_at_the_smaller_size() {
    use cg_media::DegradationPreference;
    let _g = serial();
    for (preference, size) in [
        (DegradationPreference::MaintainFramerate, (640, 360)),
        (DegradationPreference::MaintainResolution, (1280, 720)),
    ] {
        let mut cfg = EncoderConfig {
            source: SourceConfig::TestPattern {
                pattern: TestPattern::Camera,
            },
            key_frame_interval: None,
            ..config("vp8", 1280, 720, Bitrate::kbps(2500))
        };
        cfg.adaptation.preference = preference;
        let (enc, rx) = Encoder::start(cfg).unwrap();
        let t0 = rx.recv_timeout(Duration::from_secs(10)).unwrap().pts;
        // Past the adaptation's settling time after the start.
        collect_until(&rx, t0 + Duration::from_millis(1500));
        assert_eq!(enc.stats().format.width, 1280);
        enc.set_target_bitrate(Bitrate::kbps(300));
        enc.request_key_frame().unwrap();
        let at = enc
            .stats()
            .key_frame_requested_after_pts
            .expect("frames entered");
        let frames = collect_until(&rx, at + Duration::from_secs(1));
        let keys: Vec<Option<(u16, u16)>> = frames
            .iter()
            .filter(|f| f.key_frame)
            .map(|f| cg_media::vp8_key_frame_size(&f.data))
            .collect();
        assert_eq!(keys, [Some(size)], "{preference:?}: key frames within 1 s");
        let first = frames
            .iter()
            .position(|f| f.key_frame)
            .unwrap_or(usize::MAX);
        assert!(
            first <= 3,
            "{preference:?}: the key frame is frame {first} after the request"
        );
    }
}

/// The model encoder (`--codec model`) and the model decoder: frames of the model's sizes at
/// 30 Mbit/s and 1080p60 (what this machine cannot encode) go through, are counted as decoded
/// at the key frame's size, and a real VP8 frame in the stream is a decode error after which
/// the decoder waits for a key frame and asks for one.
#[test]
fn model_frames_round_trip_and_a_foreign_frame_is_a_decode_error() {
    let (enc, rx) = Encoder::start(EncoderConfig {
        frame_rate: 60,
        ..config("model", 1920, 1080, Bitrate::mbps(30))
    })
    .unwrap();
    assert_eq!(enc.kind().short_name(), "model");
    let (dec, records) = Decoder::start(DecoderConfig {
        frame_rate: 60,
        model: true,
        ..DecoderConfig::default()
    })
    .unwrap();
    let frames: Vec<EncodedFrame> = (0..120)
        .map(|_| rx.recv_timeout(Duration::from_secs(5)).expect("frames"))
        .collect();
    assert!(frames[0].key_frame && Codec::Vp8.is_key_frame(&frames[0].data));
    let span = frames[119].pts - frames[0].pts;
    let rate = DataSize::bytes(frames.iter().map(|f| f.data.len() as u64).sum()) / span;
    assert!(
        rate > Bitrate::mbps(20) && rate < Bitrate::mbps(45),
        "{rate} for 30 Mbit/s"
    );
    for f in frames {
        assert_eq!(dec.push(f).unwrap(), PushOutcome::Queued);
    }
    let st = dec.stats();
    assert_eq!(st.frames_decoded, 120);
    assert_eq!((st.decode_errors, st.losses), (0, 0));
    assert_eq!(st.last_size, Some((1920, 1080)));
    let rec = records.recv_timeout(Duration::from_secs(1)).unwrap();
    assert!(
        rec.glass_to_glass
            .is_some_and(|g| g < Duration::from_secs(5))
    );

    // A real VP8 delta frame (no model marker) in sequence: a decode error.
    let next = rx.recv_timeout(Duration::from_secs(5)).unwrap();
    let foreign = EncodedFrame {
        data: vec![0x11, 0x22, 0x00, 0x55, 0x66, 0x77, 0x88].into(),
        ..next
    };
    assert_eq!(dec.push(foreign).unwrap(), PushOutcome::Queued);
    let st = dec.stats();
    assert_eq!(st.decode_errors, 1);
    assert!(st.waiting_for_key_frame && dec.take_key_frame_request());
    enc.request_key_frame().unwrap();
    let key = (0..30)
        .map(|_| rx.recv_timeout(Duration::from_secs(5)).unwrap())
        .find(|f| f.key_frame)
        .expect("the requested key frame within 30 frames");
    // Frames skipped above are a sequence gap; the key frame resumes decoding.
    assert_eq!(dec.push(key).unwrap(), PushOutcome::Queued);
    assert!(!dec.stats().waiting_for_key_frame);
    enc.stop();
    dec.stop();
}
