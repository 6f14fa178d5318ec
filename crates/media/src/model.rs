//! The model encoder (`--codec model`): frames whose sizes follow RFC 8593 §5's statistical
//! video model ([`cg_video_model`], the same model as cg-cc's simulator), so that
//! experiments at rates this machine cannot encode in real time (the TMA24 setup's 30–50
//! Mbit/s, 1080p60 on a GPU) run on a 2-core host without a GPU.
//!
//! What the model gives: a frame every `1/FPS` (with RFC 8593's Laplacian jitter), sizes
//! around `target / 8 / FPS` (Laplacian spread), periodic key frames of 3.24× the mean given
//! back over the next 8 frames, a key frame on request, and the encoder's rate-change delay
//! `tau_v` (0.2 s): a new target is adopted at most every `tau_v`. With `--pattern camera` or
//! `--pattern game` it uses the camera-like profile of issue #14 (10× key frames, a 3–5× frame
//! about once a second; [`EncoderConfig::camera`](cg_video_model::EncoderConfig::camera)).
//! What it does not give: pictures. A receiver decodes nothing and judges the stream by its
//! frames (`cg-recv --codec model`, [`crate::Decoder`] in model mode): frame rate, freezes,
//! losses, latency.
//!
//! # Wire form
//!
//! A model frame is framed as VP8 (RFC 6386 §9.1): a 3-byte frame tag (key-frame bit,
//! `show_frame`, first-partition size) and, on key frames, the start code `9d 01 2a` with the
//! picture size. So the VP8 RTP payload format (RFC 7741) carries it unchanged, and
//! [`MediaCodec::is_key_frame`](crate::MediaCodec::is_key_frame) recognises its key frames.
//! The header is followed by [`MAGIC`] and filler up to the model's frame size. A VP8
//! decoder cannot decode it; the model decoder checks the tag and the magic.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use cg_types::{Bitrate, DataSize};
use cg_video_model::{EncoderConfig as ModelConfig, SyntheticEncoder};

use crate::rate_window::RateWindow;
use crate::sync::lock;
use crate::{
    Codec, EncodedFrame, EncoderConfig, EncoderKind, EncoderStats, Error, HostTime, SourceConfig,
    TestPattern,
};

/// Marks a model frame after its VP8 header.
pub const MAGIC: &[u8; 8] = b"cgmodel1";
/// VP8 key-frame header: frame tag, start code, width, height.
const KEY_HEADER: usize = 10;
/// VP8 inter-frame header: the frame tag.
const DELTA_HEADER: usize = 3;
/// Longest sleep between checks of the stop flag.
const STOP_POLL: Duration = Duration::from_millis(20);

/// One model frame of `size` bytes (at least the header and [`MAGIC`]).
pub fn model_frame(key: bool, width: u32, height: u32, size: usize) -> Bytes {
    let header = if key { KEY_HEADER } else { DELTA_HEADER };
    let size = size.max(header + MAGIC.len());
    let mut b = BytesMut::with_capacity(size);
    // Frame tag (RFC 6386 §9.1): bit 0 inverse key frame, bits 1–3 version 0, bit 4
    // show_frame, bits 5–23 the first partition's size.
    let first_part = u32::try_from(size - header)
        .unwrap_or(u32::MAX)
        .min(0x7_ffff);
    let tag = u32::from(!key) | 0x10 | (first_part << 5);
    b.put_slice(&tag.to_le_bytes()[..3]);
    if key {
        b.put_slice(&[0x9d, 0x01, 0x2a]);
        b.put_u16_le((width & 0x3fff) as u16);
        b.put_u16_le((height & 0x3fff) as u16);
    }
    b.put_slice(MAGIC);
    b.resize(size, 0);
    b.freeze()
}

/// What a model frame's header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelHeader {
    /// A key frame.
    pub key: bool,
    /// The picture size a key frame carries.
    pub size: Option<(u32, u32)>,
}

/// Reads a model frame's header; an error says what is wrong (bytes from the network: never
/// panics).
pub fn parse_model_frame(data: &[u8]) -> Result<ModelHeader, &'static str> {
    let tag = data
        .get(..DELTA_HEADER)
        .ok_or("shorter than a VP8 frame tag")?;
    let key = tag[0] & 1 == 0;
    let (header, size) = if key {
        let h = data
            .get(..KEY_HEADER)
            .ok_or("key frame shorter than its VP8 header")?;
        if h[3..6] != [0x9d, 0x01, 0x2a] {
            return Err("key frame without the VP8 start code");
        }
        let w = u32::from(u16::from_le_bytes([h[6], h[7]]) & 0x3fff);
        let hh = u32::from(u16::from_le_bytes([h[8], h[9]]) & 0x3fff);
        (KEY_HEADER, Some((w, hh)))
    } else {
        (DELTA_HEADER, None)
    };
    match data.get(header..header + MAGIC.len()) {
        Some(m) if m == MAGIC => Ok(ModelHeader { key, size }),
        _ => Err("not a model frame (no cg model marker after the VP8 header)"),
    }
}

/// The model's parameters for an encoder configuration: RFC 8593's reference set, or the
/// camera-like profile for the camera and game pictures; the rate limits wide open (the
/// controller's own limits apply), frames at the configured rate, key frames every
/// `key_frame_interval` frames or on request only.
fn model_config(config: &EncoderConfig) -> ModelConfig {
    let camera_like = matches!(
        config.source,
        SourceConfig::TestPattern {
            pattern: TestPattern::Camera | TestPattern::Game
        }
    );
    let base = if camera_like {
        ModelConfig::camera()
    } else {
        ModelConfig::default()
    };
    let fps = f64::from(config.frame_rate.max(1));
    ModelConfig {
        fps,
        min_rate: Bitrate::kbps(10),
        max_rate: Bitrate::mbps(10_000),
        key_frame_interval: config
            .key_frame_interval
            .map(|n| Duration::from_secs_f64(f64::from(n.max(1)) / fps)),
        seed: config.model_seed,
        ..base
    }
}

/// A running model encoder: one thread that produces the frames on time.
pub(crate) struct ModelEncoder {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

struct Shared {
    wanted_bps: AtomicU64,
    key_request: AtomicBool,
    stopping: AtomicBool,
    state: Mutex<State>,
}

struct State {
    applied: Bitrate,
    target_applied_at_pts: Option<Duration>,
    frames_out: u64,
    key_frames: u64,
    bytes_out: u64,
    dropped_backpressure: u64,
    key_frame_requests: u64,
    key_frame_requested_after_index: Option<u64>,
    key_frame_requested_after_pts: Option<Duration>,
    last_input_pts: Option<Duration>,
    rate: RateWindow,
}

impl ModelEncoder {
    pub(crate) fn start(config: &EncoderConfig) -> Result<(Self, Receiver<EncodedFrame>), Error> {
        config.validate()?;
        if !matches!(config.source, SourceConfig::TestPattern { .. }) {
            return Err(Error::InvalidConfig(
                "the model encoder makes its frames itself: it takes no file, screen or camera \
                 source"
                    .to_owned(),
            ));
        }
        let (tx, rx) = sync_channel(config.frame_queue);
        let shared = Arc::new(Shared {
            wanted_bps: AtomicU64::new(config.start_bitrate.as_bps()),
            key_request: AtomicBool::new(false),
            stopping: AtomicBool::new(false),
            state: Mutex::new(State {
                applied: config.start_bitrate,
                target_applied_at_pts: None,
                frames_out: 0,
                key_frames: 0,
                bytes_out: 0,
                dropped_backpressure: 0,
                key_frame_requests: 0,
                key_frame_requested_after_index: None,
                key_frame_requested_after_pts: None,
                last_input_pts: None,
                rate: RateWindow::new(config.stats_window, config.frame_interval()),
            }),
        });
        let run = Run {
            model: model_config(config),
            start_bitrate: config.start_bitrate,
            size: (config.width, config.height),
            shared: shared.clone(),
            tx,
        };
        let thread = std::thread::Builder::new()
            .name("cg-media-model".to_owned())
            .spawn(move || run.run())
            .map_err(|e| Error::Pipeline(format!("cannot spawn the model encoder: {e}")))?;
        Ok((
            ModelEncoder {
                shared,
                thread: Mutex::new(Some(thread)),
            },
            rx,
        ))
    }

    pub(crate) fn set_target_bitrate(&self, rate: Bitrate) {
        self.shared
            .wanted_bps
            .store(rate.as_bps(), Ordering::Release);
    }

    pub(crate) fn request_key_frame(&self) {
        let mut s = lock(&self.shared.state);
        s.key_frame_requests += 1;
        s.key_frame_requested_after_index = s.frames_out.checked_sub(1);
        s.key_frame_requested_after_pts = s.last_input_pts;
        self.shared.key_request.store(true, Ordering::Release);
    }

    pub(crate) fn stats(&self, config_format: crate::Format) -> EncoderStats {
        let s = lock(&self.shared.state);
        EncoderStats {
            codec: Codec::Vp8,
            target_bitrate: s.applied,
            produced_bitrate: s.rate.rate(),
            frames_captured: s.frames_out,
            frames_in: s.frames_out,
            frames_out: s.frames_out,
            key_frames: s.key_frames,
            bytes_out: DataSize::bytes(s.bytes_out),
            dropped_backpressure: s.dropped_backpressure,
            key_frame_requests: s.key_frame_requests,
            last_encode_latency: Duration::ZERO,
            mean_encode_latency: Duration::ZERO,
            max_encode_latency: Duration::ZERO,
            last_input_pts: s.last_input_pts,
            target_applied_at_pts: s.target_applied_at_pts,
            key_frame_requested_after_index: s.key_frame_requested_after_index,
            key_frame_requested_after_pts: s.key_frame_requested_after_pts,
            format: config_format,
            format_changes: 0,
            encode_usage: None,
            mean_qp: None,
            dropped_rate: 0,
            skipped_frame_rate: 0,
            restarts: 0,
            error: None,
        }
    }

    pub(crate) fn kind(&self) -> EncoderKind {
        EncoderKind::Model
    }

    pub(crate) fn stop(&self) {
        self.shared.stopping.store(true, Ordering::Release);
        if let Some(t) = lock(&self.thread).take() {
            let _ = t.join();
        }
    }
}

impl Drop for ModelEncoder {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The encoder thread's own state.
struct Run {
    model: ModelConfig,
    start_bitrate: Bitrate,
    size: (u32, u32),
    shared: Arc<Shared>,
    tx: SyncSender<EncodedFrame>,
}

impl Run {
    fn run(self) {
        let start = Instant::now();
        let mut model = SyntheticEncoder::new(self.model.clone(), self.start_bitrate, start);
        let mut seq = 0u64;
        loop {
            let due = model.next_frame_time();
            loop {
                if self.shared.stopping.load(Ordering::Acquire) {
                    return;
                }
                let now = Instant::now();
                if now >= due {
                    break;
                }
                std::thread::sleep((due - now).min(STOP_POLL));
            }
            let now = Instant::now();
            let before = model.rate();
            model.set_target(
                Bitrate::bps(self.shared.wanted_bps.load(Ordering::Acquire)),
                now,
            );
            if self.shared.key_request.swap(false, Ordering::AcqRel) {
                model.request_key_frame();
            }
            let Some(f) = model.poll_frame(now) else {
                continue;
            };
            let pts = f.capture.saturating_duration_since(start);
            let size = usize::try_from(f.size.as_bytes()).unwrap_or(usize::MAX);
            let data = model_frame(f.key, self.size.0, self.size.1, size);
            let bytes = data.len() as u64;
            let frame = EncodedFrame {
                data,
                codec: Codec::Vp8,
                capture_time: HostTime::from_instant(f.capture),
                key_frame: f.key,
                pts,
                index: f.id,
                seq,
                encode_latency: now.saturating_duration_since(f.capture),
            };
            seq += 1;
            {
                let mut s = lock(&self.shared.state);
                if model.rate() != before || s.target_applied_at_pts.is_none() {
                    s.applied = model.rate();
                    s.target_applied_at_pts = Some(pts);
                }
                s.frames_out += 1;
                s.key_frames += u64::from(f.key);
                s.bytes_out += bytes;
                s.rate.push(pts, DataSize::bytes(bytes));
                s.last_input_pts = Some(pts);
            }
            match self.tx.try_send(frame) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) => {
                    // As the GStreamer path: the receiver sees a sequence gap and needs a
                    // key frame anyway.
                    let mut s = lock(&self.shared.state);
                    s.dropped_backpressure += 1;
                    s.key_frame_requests += 1;
                    self.shared.key_request.store(true, Ordering::Release);
                }
                Err(TrySendError::Disconnected(_)) => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MediaCodec;

    #[test]
    fn frames_are_vp8_framed_and_read_back() {
        let key = model_frame(true, 1920, 1080, 5000);
        assert_eq!(key.len(), 5000);
        assert!(Codec::Vp8.is_key_frame(&key));
        assert_eq!(
            parse_model_frame(&key),
            Ok(ModelHeader {
                key: true,
                size: Some((1920, 1080))
            })
        );
        let delta = model_frame(false, 1920, 1080, 1);
        assert_eq!(
            delta.len(),
            DELTA_HEADER + MAGIC.len(),
            "never below a header"
        );
        assert!(!Codec::Vp8.is_key_frame(&delta));
        assert_eq!(
            parse_model_frame(&delta),
            Ok(ModelHeader {
                key: false,
                size: None
            })
        );
        // show_frame set: a VP8-aware receiver expects a picture from it.
        assert_ne!(delta[0] & 0x10, 0);
    }

    #[test]
    fn garbage_is_refused_without_panicking() {
        assert!(parse_model_frame(&[]).is_err());
        assert!(parse_model_frame(&[0x00]).is_err());
        assert!(parse_model_frame(&[0x10, 0, 0, 0x9d, 0x01]).is_err());
        assert!(parse_model_frame(&[0x11, 0, 0, b'x', b'y']).is_err());
        let mut real_vp8 = vec![0x50, 0x2c, 0x01, 0x9d, 0x01, 0x2a, 0x80, 0x02, 0xe0, 0x01];
        real_vp8.extend_from_slice(&[0x55; 40]);
        assert!(parse_model_frame(&real_vp8).is_err());
    }

    fn config(rate: Bitrate) -> EncoderConfig {
        EncoderConfig {
            encoder: "model".to_owned(),
            width: 1920,
            height: 1080,
            frame_rate: 60,
            start_bitrate: rate,
            ..EncoderConfig::default()
        }
    }

    #[test]
    fn produces_the_target_rate_on_time_and_follows_a_new_target() {
        // Judged on the frames' own timestamps (the model's schedule), not on the wall clock:
        // a loaded host delays the thread, and the frames it then sends late keep their times.
        let (enc, rx) = ModelEncoder::start(&config(Bitrate::mbps(30))).unwrap();
        let next = || rx.recv_timeout(Duration::from_secs(10)).expect("a frame");
        let mut first = Vec::new();
        loop {
            let f = next();
            assert_eq!(f.seq, first.len() as u64, "no sequence gap");
            let done = f.pts >= Duration::from_secs(2);
            first.push(f);
            if done {
                break;
            }
        }
        let in_2s: Vec<&EncodedFrame> = first
            .iter()
            .filter(|f| f.pts < Duration::from_secs(2))
            .collect();
        let bytes: usize = in_2s.iter().map(|f| f.data.len()).sum();
        let rate = bytes as f64 * 8.0 / 2.0 / 1e6;
        assert!((20.0..40.0).contains(&rate), "{rate} Mbit/s for 30");
        assert!(
            (110..=130).contains(&in_2s.len()),
            "{} frames in 2 s at 60 fps",
            in_2s.len()
        );
        let changed_at = first.last().expect("frames").pts;
        enc.set_target_bitrate(Bitrate::mbps(5));
        enc.request_key_frame();
        let (mut key, mut late) = (false, 0usize);
        loop {
            let f = next();
            key |= f.key_frame;
            let since = f.pts.saturating_sub(changed_at);
            if since > Duration::from_secs(2) {
                break;
            }
            if since > Duration::from_secs(1) {
                late += f.data.len();
            }
        }
        assert!(key, "the requested key frame came");
        let rate = late as f64 * 8.0 / 1e6;
        assert!(rate < 8.0, "{rate} Mbit/s a second after a 5 Mbit/s target");
        let st = enc.stats(config(Bitrate::mbps(5)).top_format());
        assert_eq!(st.target_bitrate, Bitrate::mbps(5));
        assert!(st.key_frames >= 2 && st.key_frame_requests == 1);
        enc.stop();
    }

    #[test]
    fn only_the_test_pattern_source_is_accepted() {
        let cfg = EncoderConfig {
            source: SourceConfig::Screen { display: None },
            ..config(Bitrate::mbps(1))
        };
        assert!(matches!(
            ModelEncoder::start(&cfg),
            Err(Error::InvalidConfig(_))
        ));
    }
}
