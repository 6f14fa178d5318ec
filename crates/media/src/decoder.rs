//! The receiver pipeline and its handle.
//!
//! ```text
//! push(EncodedFrame) ─▶ gate (sequence gaps, key frames, queue bound) ─▶ appsrc (live)
//!   ─▶ [h264parse/h265parse] ─▶ decoder (vp8dec | avdec_h264 | avdec_h265 | nv*dec)
//!   ─▶ ●probe: decoded frames, size, glass-to-glass latency, freezes, swallowed frames,
//!              the picture's stamp (and its luma, to the scorer thread, with a reference)
//!   ─▶ fakesink (sync=false) | videoconvert ─▶ autovideosink (sync=false)
//! watch thread: bus errors (restart the pipeline), warnings, decode timeouts,
//!               repeated key-frame requests while waiting
//! ```

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use gstreamer as gst;
use gstreamer::prelude::*;
use gstreamer_app as gst_app;
use gstreamer_video as gst_video;
use gstreamer_video::prelude::*;

use crate::encoder::start_pipeline;
use crate::freeze::FreezeDetector;
use crate::quality::{Picture, QualitySummary, QualityWindow, Scorer};
use crate::stamp::Stamp;
use crate::sync::lock;
use crate::{
    Codec, DecoderConfig, EncodedFrame, Error, Freeze, HostTime, MediaCodec, SinkKind, props,
};

/// Glass-to-glass samples kept for the median and percentiles.
const LATENCY_SAMPLES: usize = 256;
/// Frames in flight inside the decoder that are remembered (older ones count as errors).
const MAX_PENDING: usize = 256;
/// A backwards jump of the sequence number larger than this is a restarted sender, not a
/// stale frame.
const SEQ_RESTART_JUMP: u64 = 64;

/// What [`Decoder::push`] did with a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PushOutcome {
    /// Handed to the decoder.
    Queued,
    /// Dropped: the decoder waits for a key frame after a loss or an error (a key-frame
    /// request is pending, see [`Decoder::take_key_frame_request`]).
    DroppedAwaitingKeyFrame,
    /// Dropped: older than a frame already pushed (duplicate or late reordering).
    DroppedStale,
    /// Dropped: the decoder is more than `max_queued_frames` behind; counted as a loss.
    DroppedQueueFull,
    /// Dropped: the pipeline is being restarted after an error.
    PipelineRestarting,
}

/// Metadata of one decoded frame (the pixels stay in the pipeline).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodedFrame {
    /// The sender's sequence number.
    pub seq: u64,
    /// The sender's raw frame index.
    pub index: u64,
    /// The sender's capture time.
    pub capture_time: HostTime,
    /// When it was pushed into the decoder (host `CLOCK_MONOTONIC`).
    pub pushed_at: HostTime,
    /// When the decoder delivered it (host `CLOCK_MONOTONIC`).
    pub decoded_at: HostTime,
    /// `decoded_at − capture_time`; `None` if the capture time is later than now (not this
    /// host's clock).
    pub glass_to_glass: Option<Duration>,
    /// Decoded width in pixels.
    pub width: u32,
    /// Decoded height in pixels.
    pub height: u32,
    /// The code the sender drew into the picture, if it drew one and it reads back.
    pub stamp: Option<Stamp>,
}

/// A snapshot of the receiver's counters.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DecoderStats {
    /// Frames given to [`Decoder::push`].
    pub frames_pushed: u64,
    /// Frames the decoder delivered.
    pub frames_decoded: u64,
    /// Frames the decoder took in but never delivered (rejected as corrupt, undecodable, or
    /// timed out after `decode_timeout`), plus pipeline errors.
    pub decode_errors: u64,
    /// Warnings the decoding elements posted (often one per corrupt frame).
    pub decoder_warnings: u64,
    /// Times the pipeline was rebuilt after an error or a stall.
    pub restarts: u64,
    /// The codec decoded now (the stream's, with [`DecoderConfig::follow_stream`]).
    pub codec: Codec,
    /// Times the decoder followed the stream to another codec.
    pub codec_switches: u64,
    /// Frames dropped while waiting for a key frame.
    pub dropped_awaiting_key_frame: u64,
    /// Stale (duplicate or too late) frames dropped.
    pub dropped_stale: u64,
    /// Frames dropped because the decoder fell behind.
    pub dropped_queue_full: u64,
    /// Sequence gaps seen (losses).
    pub losses: u64,
    /// Key-frame requests raised.
    pub key_frame_requests: u64,
    /// Whether the decoder is waiting for a key frame now.
    pub waiting_for_key_frame: bool,
    /// Freezes that ended (gap between decoded frames > `freeze_intervals` intervals).
    pub freezes: u64,
    /// Their total duration.
    pub freeze_total: Duration,
    /// The longest.
    pub longest_freeze: Duration,
    /// Freezes by WebRTC's rule (gap ≥ max(3 × mean, mean + 150 ms), as a browser's
    /// `freezeCount`; [`crate::FreezeDetector`]).
    pub webrtc_freezes: u64,
    /// Their total duration (`totalFreezesDuration`).
    pub webrtc_freeze_total: Duration,
    /// Times the decoded size changed from one frame to the next.
    pub resolution_switches: u64,
    /// The most recent freezes, oldest first (at most `max_freeze_records`).
    pub recent_freezes: Vec<Freeze>,
    /// An ongoing freeze: time since the last decoded frame, when that is already a freeze.
    pub current_stall: Option<Duration>,
    /// Size of the last decoded frame.
    pub last_size: Option<(u32, u32)>,
    /// Glass-to-glass latency of the last decoded frame.
    pub last_glass_to_glass: Option<Duration>,
    /// Median over the last 256 decoded frames.
    pub median_glass_to_glass: Option<Duration>,
    /// 95th percentile over the last 256 decoded frames.
    pub p95_glass_to_glass: Option<Duration>,
    /// 99th percentile of the same window.
    pub p99_glass_to_glass: Option<Duration>,
    /// [`DecodedFrame`] records dropped because their channel was full.
    pub records_dropped: u64,
    /// Picture quality against the configured reference (`None` without one, or before the
    /// first picture is scored).
    pub quality: Option<QualitySummary>,
}

/// A running receiver pipeline. `Send + Sync`; every method is non-blocking.
pub struct Decoder {
    inner: Arc<Inner>,
    watch: Mutex<Option<JoinHandle<()>>>,
}

struct Inner {
    config: DecoderConfig,
    pipe: Mutex<Option<Pipe>>,
    state: Mutex<State>,
    key_request: AtomicBool,
    stopping: AtomicBool,
    records: SyncSender<DecodedFrame>,
    /// Scores pictures, with a reference configured.
    scorer: Option<Scorer>,
    quality: Arc<Mutex<QualityWindow>>,
}

struct Pipe {
    pipeline: gst::Pipeline,
    appsrc: gst_app::AppSrc,
    bus: gst::Bus,
}

struct Pending {
    seq: u64,
    index: u64,
    capture_time: HostTime,
    pushed_at: HostTime,
    /// VP8 frames with `show_frame` clear produce no picture.
    expect_output: bool,
}

struct State {
    /// The codec decoded now: the configured one, or the stream's since its last key frame
    /// in another codec ([`DecoderConfig::follow_stream`]).
    codec: Codec,
    epoch: HostTime,
    last_pts: u64,
    pending: BTreeMap<u64, Pending>,
    last_seq: Option<u64>,
    waiting_for_key: bool,
    /// Our PTS of the last key frame pushed: errors on frames before it need no new one.
    last_key_pts: u64,
    discont: bool,
    last_key_request: Option<HostTime>,
    last_decoded_at: Option<HostTime>,
    timeouts_since_output: u32,
    freeze: FreezeDetector,
    latencies: VecDeque<Duration>,
    last_latency: Option<Duration>,
    last_size: Option<(u32, u32)>,
    resolution_switches: u64,
    frames_pushed: u64,
    frames_decoded: u64,
    decode_errors: u64,
    decoder_warnings: u64,
    restarts: u64,
    codec_switches: u64,
    dropped_awaiting_key_frame: u64,
    dropped_stale: u64,
    dropped_queue_full: u64,
    losses: u64,
    key_frame_requests: u64,
    records_dropped: u64,
}

impl Decoder {
    /// Builds and starts the receiver pipeline. Returns the handle and the receiving end of
    /// the bounded channel of [`DecodedFrame`] records (capacity `config.frame_queue`; when
    /// full, records are dropped and counted, decoding goes on).
    pub fn start(config: DecoderConfig) -> Result<(Decoder, Receiver<DecodedFrame>), Error> {
        crate::init()?;
        config.validate()?;
        let (tx, rx) = sync_channel(config.frame_queue);
        let scorer = config.reference.map(Scorer::spawn).transpose()?;
        let inner = Arc::new(Inner {
            pipe: Mutex::new(None),
            state: Mutex::new(State {
                codec: config.codec,
                epoch: HostTime::now(),
                last_pts: 0,
                pending: BTreeMap::new(),
                last_seq: None,
                waiting_for_key: true,
                last_key_pts: 0,
                discont: true,
                last_key_request: None,
                last_decoded_at: None,
                timeouts_since_output: 0,
                freeze: FreezeDetector::new(
                    config.frame_interval(),
                    config.freeze_intervals,
                    config.max_freeze_records,
                ),
                latencies: VecDeque::new(),
                last_latency: None,
                last_size: None,
                resolution_switches: 0,
                frames_pushed: 0,
                frames_decoded: 0,
                decode_errors: 0,
                decoder_warnings: 0,
                restarts: 0,
                codec_switches: 0,
                dropped_awaiting_key_frame: 0,
                dropped_stale: 0,
                dropped_queue_full: 0,
                losses: 0,
                key_frame_requests: 0,
                records_dropped: 0,
            }),
            key_request: AtomicBool::new(false),
            stopping: AtomicBool::new(false),
            records: tx,
            scorer,
            quality: Arc::default(),
            config,
        });
        if !inner.config.model {
            let pipe = build_pipe(&inner, inner.config.codec)?;
            *lock(&inner.pipe) = Some(pipe);
        }
        let weak = Arc::downgrade(&inner);
        let watch = std::thread::Builder::new()
            .name("cg-media-dec-watch".to_owned())
            .spawn(move || watch_loop(weak))
            .map_err(|e| Error::Pipeline(format!("cannot spawn watch thread: {e}")))?;
        Ok((
            Decoder {
                inner,
                watch: Mutex::new(Some(watch)),
            },
            rx,
        ))
    }

    /// Feeds one encoded frame. Never blocks and never fails on bad bytes: corrupt frames go
    /// to the decoder and are counted when they do not decode; frames after a loss (a gap in
    /// [`EncodedFrame::seq`]) or an error are dropped until the next key frame, and a
    /// key-frame request is raised (again every `key_frame_request_interval` while waiting).
    pub fn push(&self, frame: EncodedFrame) -> Result<PushOutcome, Error> {
        let inner = &self.inner;
        if inner.stopping.load(Ordering::Acquire) {
            return Err(Error::Stopped);
        }
        let now = HostTime::now();
        let codec = frame.codec;
        let is_key = codec.is_key_frame(&frame.data);
        // Lock order everywhere: pipe, then state (the watch thread's restart takes both).
        let mut pipe_guard = lock(&inner.pipe);
        let mut s = lock(&inner.state);
        if codec != s.codec {
            if !inner.config.follow_stream {
                return Err(Error::WrongCodec {
                    expected: s.codec,
                    got: codec,
                });
            }
            if !is_key {
                // A picture in the new codec can only start at its key frame.
                s.frames_pushed += 1;
                s.dropped_awaiting_key_frame += 1;
                s.waiting_for_key = true;
                inner.maybe_request_key_frame(&mut s, now);
                return Ok(PushOutcome::DroppedAwaitingKeyFrame);
            }
            drop(s);
            inner.switch_codec(&mut pipe_guard, codec)?;
            s = lock(&inner.state);
        }
        s.frames_pushed += 1;
        match s.last_seq {
            Some(last) if frame.seq <= last && last - frame.seq <= SEQ_RESTART_JUMP => {
                s.dropped_stale += 1;
                return Ok(PushOutcome::DroppedStale);
            }
            Some(last) if frame.seq != last.wrapping_add(1) => {
                s.losses += 1;
                s.waiting_for_key = true;
            }
            _ => {}
        }
        s.last_seq = Some(frame.seq);
        if s.waiting_for_key {
            if !is_key {
                s.dropped_awaiting_key_frame += 1;
                inner.maybe_request_key_frame(&mut s, now);
                return Ok(PushOutcome::DroppedAwaitingKeyFrame);
            }
            s.waiting_for_key = false;
            s.discont = true;
        }
        if inner.config.model {
            drop(pipe_guard);
            return Ok(inner.decode_model(s, &frame, is_key, now));
        }
        let Some(pipe) = pipe_guard.as_ref() else {
            s.waiting_for_key = true;
            return Ok(PushOutcome::PipelineRestarting);
        };
        if pipe.appsrc.current_level_buffers() >= u64::from(inner.config.max_queued_frames) {
            s.dropped_queue_full += 1;
            s.losses += 1;
            s.waiting_for_key = true;
            inner.maybe_request_key_frame(&mut s, now);
            return Ok(PushOutcome::DroppedQueueFull);
        }
        let expect_output = codec != Codec::Vp8 || frame.data.first().is_none_or(|b| b & 0x10 != 0);
        let pts = s.admit(&frame, is_key, now, expect_output);
        let mut buffer = gst::Buffer::from_slice(frame.data);
        {
            let b = buffer
                .get_mut()
                .expect("a new buffer has exactly one reference");
            b.set_pts(gst::ClockTime::from_nseconds(pts));
            let mut flags = gst::BufferFlags::empty();
            if !is_key {
                flags |= gst::BufferFlags::DELTA_UNIT;
            }
            if std::mem::take(&mut s.discont) {
                flags |= gst::BufferFlags::DISCONT;
            }
            b.set_flags(flags);
        }
        drop(s);
        match pipe.appsrc.push_buffer(buffer) {
            Ok(_) => Ok(PushOutcome::Queued),
            Err(_) => {
                // Flushing or a stopped task: the watch thread restarts the pipeline.
                let mut s = lock(&inner.state);
                s.pending.remove(&pts);
                s.waiting_for_key = true;
                Ok(PushOutcome::PipelineRestarting)
            }
        }
    }

    /// The transport lost or discarded a frame it could not complete: drop everything
    /// until the next key frame and ask for one.
    pub fn signal_loss(&self) {
        let mut s = lock(&self.inner.state);
        s.losses += 1;
        s.waiting_for_key = true;
        self.inner.maybe_request_key_frame(&mut s, HostTime::now());
    }

    /// Whether a key frame should be requested from the sender (PLI/FIR); clears the flag.
    /// Raised after a loss, a decode error or a restart, and again every
    /// `key_frame_request_interval` while the decoder waits.
    pub fn take_key_frame_request(&self) -> bool {
        self.inner.key_request.swap(false, Ordering::AcqRel)
    }

    /// The counters now.
    pub fn stats(&self) -> DecoderStats {
        let s = lock(&self.inner.state);
        let mut sorted: Vec<Duration> = s.latencies.iter().copied().collect();
        sorted.sort_unstable();
        let pct = |p: f64| {
            (!sorted.is_empty()).then(|| {
                let i = ((sorted.len() - 1) as f64 * p).round() as usize;
                sorted[i.min(sorted.len() - 1)]
            })
        };
        DecoderStats {
            frames_pushed: s.frames_pushed,
            frames_decoded: s.frames_decoded,
            decode_errors: s.decode_errors,
            decoder_warnings: s.decoder_warnings,
            restarts: s.restarts,
            codec: s.codec,
            codec_switches: s.codec_switches,
            dropped_awaiting_key_frame: s.dropped_awaiting_key_frame,
            dropped_stale: s.dropped_stale,
            dropped_queue_full: s.dropped_queue_full,
            losses: s.losses,
            key_frame_requests: s.key_frame_requests,
            waiting_for_key_frame: s.waiting_for_key,
            freezes: s.freeze.count(),
            freeze_total: s.freeze.total(),
            longest_freeze: s.freeze.longest(),
            webrtc_freezes: s.freeze.webrtc().0,
            webrtc_freeze_total: s.freeze.webrtc().1,
            resolution_switches: s.resolution_switches,
            recent_freezes: s.freeze.recent().copied().collect(),
            current_stall: s.freeze.current_stall(HostTime::now()),
            last_size: s.last_size,
            last_glass_to_glass: s.last_latency,
            median_glass_to_glass: pct(0.5),
            p95_glass_to_glass: pct(0.95),
            p99_glass_to_glass: pct(0.99),
            records_dropped: s.records_dropped,
            quality: lock(&self.inner.quality).summary(),
        }
    }

    /// Stops the pipeline (idempotent; also done on drop).
    pub fn stop(&self) {
        if self.inner.stopping.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Some(t) = lock(&self.watch).take() {
            let _ = t.join();
        }
        if let Some(pipe) = lock(&self.inner.pipe).take() {
            let _ = pipe.pipeline.set_state(gst::State::Null);
        }
    }
}

impl Drop for Decoder {
    fn drop(&mut self) {
        self.stop();
    }
}

impl std::fmt::Debug for Decoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decoder")
            .field("codec", &lock(&self.inner.state).codec)
            .finish_non_exhaustive()
    }
}

impl State {
    /// Records a frame about to be decoded under our own strictly increasing timestamp (the
    /// sender's PTS may jump or restart); returns it.
    fn admit(
        &mut self,
        frame: &EncodedFrame,
        is_key: bool,
        now: HostTime,
        expect_output: bool,
    ) -> u64 {
        let since_epoch = now.checked_duration_since(self.epoch).unwrap_or_default();
        let pts = u64::try_from(since_epoch.as_nanos())
            .unwrap_or(u64::MAX)
            .max(self.last_pts + 1);
        self.last_pts = pts;
        if is_key {
            self.last_key_pts = pts;
        }
        if self.pending.len() >= MAX_PENDING {
            self.pending.pop_first();
            self.decode_errors += 1;
        }
        self.pending.insert(
            pts,
            Pending {
                seq: frame.seq,
                index: frame.index,
                capture_time: frame.capture_time,
                pushed_at: now,
                expect_output,
            },
        );
        pts
    }
}

impl Inner {
    /// The model decoder (`DecoderConfig::model`): a frame with the model's header "decodes"
    /// at once; anything else is a decode error and the decoder waits for a key frame.
    fn decode_model(
        &self,
        mut s: std::sync::MutexGuard<'_, State>,
        frame: &EncodedFrame,
        is_key: bool,
        now: HostTime,
    ) -> PushOutcome {
        let header = match crate::model::parse_model_frame(&frame.data) {
            Ok(h) => h,
            Err(why) => {
                tracing::debug!(target: "cg_media", "model decoder: {why}");
                s.decode_errors += 1;
                s.waiting_for_key = true;
                self.maybe_request_key_frame(&mut s, now);
                return PushOutcome::Queued;
            }
        };
        let pts = s.admit(frame, is_key, now, true);
        drop(s);
        self.on_decoded(Some(gst::ClockTime::from_nseconds(pts)), header.size, None);
        PushOutcome::Queued
    }

    /// Rebuilds the pipeline for `codec`, whose key frame is about to be pushed: frames still
    /// in the old pipeline are lost to it and counted as decode errors.
    fn switch_codec(self: &Arc<Self>, pipe: &mut Option<Pipe>, codec: Codec) -> Result<(), Error> {
        if let Some(old) = pipe.take() {
            let _ = old.pipeline.set_state(gst::State::Null);
        }
        {
            let mut s = lock(&self.state);
            tracing::info!(target: "cg_media", from = %s.codec, to = %codec, "the stream changed codec");
            s.decode_errors += s.pending.values().filter(|p| p.expect_output).count() as u64;
            s.pending.clear();
            s.timeouts_since_output = 0;
            s.codec = codec;
            s.codec_switches += 1;
            s.waiting_for_key = true;
            s.discont = true;
        }
        if !self.config.model {
            *pipe = Some(build_pipe(self, codec)?);
        }
        Ok(())
    }

    fn maybe_request_key_frame(&self, s: &mut State, now: HostTime) {
        let due = s.last_key_request.is_none_or(|last| {
            now.checked_duration_since(last)
                .is_none_or(|d| d >= self.config.key_frame_request_interval)
        });
        if due {
            s.last_key_request = Some(now);
            s.key_frame_requests += 1;
            self.key_request.store(true, Ordering::Release);
        }
    }

    /// Reads a decoded picture's stamp and, with a reference configured, hands its luma to the
    /// scorer (counted as skipped when the scorer is still busy).
    fn read_picture(&self, buffer: &gst::BufferRef, video: &gst_video::VideoInfo) -> Option<Stamp> {
        let frame = gst_video::VideoFrameRef::from_buffer_ref_readable(buffer, video).ok()?;
        let stride = usize::try_from(*frame.plane_stride().first()?).ok()?;
        let luma = frame.plane_data(0).ok()?;
        let (width, height) = (video.width() as usize, video.height() as usize);
        let stamp = Stamp::read(luma, stride, width, height);
        if let Some(scorer) = &self.scorer {
            match stamp {
                None => lock(&self.quality).unread += 1,
                Some(_) => {
                    let picture = Picture {
                        luma: luma[..luma.len().min(height * stride)].to_vec(),
                        stride,
                        width,
                        height,
                    };
                    let quality = Arc::clone(&self.quality);
                    let scored = scorer.try_score(picture, move |score| {
                        if let Some(s) = score {
                            lock(&quality).push(s.psnr_db);
                        }
                    });
                    if scored.is_err() {
                        lock(&self.quality).skipped += 1;
                    }
                }
            }
        }
        stamp
    }

    /// Called from the decoder's streaming thread for every decoded picture.
    fn on_decoded(
        &self,
        pts: Option<gst::ClockTime>,
        size: Option<(u32, u32)>,
        stamp: Option<Stamp>,
    ) {
        let now = HostTime::now();
        let Some(pts) = pts.map(|p| p.nseconds()) else {
            return;
        };
        let mut s = lock(&self.state);
        // Frames older than this one that never came out were swallowed by the decoder.
        let (mut swallowed, mut needs_key) = (0, false);
        while let Some(entry) = s.pending.first_entry() {
            let key = *entry.key();
            if key >= pts {
                break;
            }
            if entry.remove().expect_output {
                swallowed += 1;
                needs_key |= key >= s.last_key_pts;
            }
        }
        s.decode_errors += swallowed;
        if needs_key {
            // The reference chain since the last key frame is broken.
            s.waiting_for_key = true;
            self.maybe_request_key_frame(&mut s, now);
        }
        let Some(p) = s.pending.remove(&pts) else {
            return;
        };
        s.frames_decoded += 1;
        s.timeouts_since_output = 0;
        s.last_decoded_at = Some(now);
        s.freeze.on_frame(now);
        let g2g = now.checked_duration_since(p.capture_time);
        s.last_latency = g2g;
        if let Some(l) = g2g {
            if s.latencies.len() >= LATENCY_SAMPLES {
                s.latencies.pop_front();
            }
            s.latencies.push_back(l);
        }
        if size.is_some() {
            if s.last_size.is_some_and(|last| Some(last) != size) {
                s.resolution_switches += 1;
            }
            s.last_size = size;
        }
        let (width, height) = s.last_size.unwrap_or((0, 0));
        let record = DecodedFrame {
            seq: p.seq,
            index: p.index,
            capture_time: p.capture_time,
            pushed_at: p.pushed_at,
            decoded_at: now,
            glass_to_glass: g2g,
            width,
            height,
            stamp,
        };
        if let Err(TrySendError::Full(_)) = self.records.try_send(record) {
            s.records_dropped += 1;
        }
    }
}

/// Picks the first installed factory.
fn first_available(names: &[&'static str]) -> Option<&'static str> {
    names
        .iter()
        .copied()
        .find(|n| gst::ElementFactory::find(n).is_some())
}

fn build_pipe(inner: &Arc<Inner>, codec: Codec) -> Result<Pipe, Error> {
    let config = &inner.config;
    let pipeline = gst::Pipeline::with_name("cg-decoder");
    let appsrc = gst_app::AppSrc::builder()
        .caps(&codec.caps())
        .is_live(true)
        .format(gst::Format::Time)
        .do_timestamp(false)
        .block(false)
        .max_bytes(64 << 20)
        .build();
    let mut chain: Vec<gst::Element> = vec![appsrc.clone().upcast()];
    let (parser, hw, sw): (Option<&'static str>, &'static str, &'static str) = match codec {
        Codec::Vp8 => (None, "nvvp8dec", "vp8dec"),
        Codec::H264 => (Some("h264parse"), "nvh264dec", "avdec_h264"),
        Codec::H265 => (Some("h265parse"), "nvh265dec", "avdec_h265"),
    };
    if let Some(parser) = parser {
        chain.push(props::make(
            parser,
            "gstreamer1.0-plugins-bad (videoparsers)",
        )?);
    }
    let candidates: &[&'static str] = if config.hardware { &[hw, sw] } else { &[sw] };
    let name = first_available(candidates).ok_or(Error::MissingElement {
        element: sw,
        plugin: if codec == Codec::Vp8 {
            "gstreamer1.0-plugins-good (vpx)"
        } else {
            "gstreamer1.0-libav"
        },
    })?;
    let decoder = props::make(name, "decoder")?;
    // Never turn decode errors into a flow error that stops the stream (GstVideoDecoder's
    // max-errors, -1 = unlimited); errors are counted from the output instead.
    let _ = props::set(&decoder, "max-errors", -1i32);
    // libav frame threading delays every frame by (threads − 1) frames: slice threads only.
    let _ = props::set_str(&decoder, "thread-type", "slice");
    if name == "vp8dec" {
        // One thread: libvpx's multi-threaded VP8 decoder spin-waits, and on an
        // oversubscribed host it fell to a few frames per second (see EncoderConfig::threads).
        let _ = props::set(&decoder, "threads", 1u32);
    }
    chain.push(decoder.clone());
    match config.sink {
        SinkKind::Fake => {
            let sink = props::make("fakesink", "core")?;
            props::set(&sink, "sync", false)?;
            props::set(&sink, "async", false)?;
            chain.push(sink);
        }
        SinkKind::Window => {
            chain.push(props::make("videoconvert", "gstreamer1.0-plugins-base")?);
            let sink = props::make("autovideosink", "gstreamer1.0-plugins-good")?;
            props::set(&sink, "sync", false)?;
            chain.push(sink);
        }
    }
    pipeline.add_many(&chain)?;
    gst::Element::link_many(&chain)?;

    let pad = decoder
        .static_pad("src")
        .ok_or_else(|| Error::Pipeline("decoder has no src pad".to_owned()))?;
    let weak = Arc::downgrade(inner);
    pad.add_probe(gst::PadProbeType::BUFFER, move |pad, info| {
        if let (Some(inner), Some(buffer)) = (weak.upgrade(), info.buffer()) {
            let video = pad
                .current_caps()
                .and_then(|c| gst_video::VideoInfo::from_caps(&c).ok());
            let size = video.as_ref().map(|v| (v.width(), v.height()));
            let stamp = video.and_then(|v| inner.read_picture(buffer, &v));
            inner.on_decoded(buffer.pts(), size, stamp);
        }
        gst::PadProbeReturn::Ok
    });
    let bus = pipeline
        .bus()
        .ok_or_else(|| Error::Pipeline("no bus".to_owned()))?;
    start_pipeline(&pipeline, &bus)?;
    Ok(Pipe {
        pipeline,
        appsrc,
        bus,
    })
}

/// Watches the bus, times out swallowed frames, repeats key-frame requests, restarts a
/// failed pipeline. Holds only a weak reference, so dropping the handle ends it.
fn watch_loop(weak: Weak<Inner>) {
    loop {
        let Some(inner) = weak.upgrade() else { return };
        if inner.stopping.load(Ordering::Acquire) {
            return;
        }
        let bus = lock(&inner.pipe).as_ref().map(|p| p.bus.clone());
        let mut restart = false;
        if let Some(bus) = bus {
            let mut timeout = gst::ClockTime::from_mseconds(50);
            while let Some(msg) = bus.timed_pop_filtered(
                timeout,
                &[
                    gst::MessageType::Error,
                    gst::MessageType::Warning,
                    gst::MessageType::Eos,
                ],
            ) {
                timeout = gst::ClockTime::ZERO;
                let mut s = lock(&inner.state);
                match msg.view() {
                    gst::MessageView::Warning(w) => {
                        tracing::debug!(target: "cg_media", "decoder warning: {}", w.error());
                        s.decoder_warnings += 1;
                        s.waiting_for_key = true;
                        inner.maybe_request_key_frame(&mut s, HostTime::now());
                    }
                    gst::MessageView::Error(e) => {
                        tracing::warn!(target: "cg_media", "decoder error: {}", e.error());
                        s.decode_errors += 1;
                        restart = true;
                    }
                    _ => restart = true,
                }
            }
        } else {
            // No pipeline: being restarted, or none to run (the model decoder).
            restart = !inner.config.model;
            std::thread::sleep(Duration::from_millis(50));
        }

        let now = HostTime::now();
        {
            let mut s = lock(&inner.state);
            // Frames the decoder sat on for too long.
            let timeout = inner.config.decode_timeout;
            let (mut timed_out, mut needs_key) = (0u32, false);
            while let Some(entry) = s.pending.first_entry() {
                let key = *entry.key();
                let age = now
                    .checked_duration_since(entry.get().pushed_at)
                    .unwrap_or_default();
                if age < timeout {
                    break;
                }
                if entry.remove().expect_output {
                    timed_out += 1;
                    needs_key |= key >= s.last_key_pts;
                }
            }
            if timed_out > 0 {
                s.decode_errors += u64::from(timed_out);
                s.timeouts_since_output = s.timeouts_since_output.saturating_add(timed_out);
                if needs_key {
                    s.waiting_for_key = true;
                    inner.maybe_request_key_frame(&mut s, now);
                }
                // A decoder that lets a whole second of frames time out without output is
                // wedged: rebuild it.
                if s.timeouts_since_output >= inner.config.frame_rate {
                    restart = true;
                }
            }
            if s.waiting_for_key {
                inner.maybe_request_key_frame(&mut s, now);
            }
        }
        if restart && !inner.config.model && !inner.stopping.load(Ordering::Acquire) {
            restart_pipe(&inner);
        }
    }
}

fn restart_pipe(inner: &Arc<Inner>) {
    let mut guard = lock(&inner.pipe);
    if let Some(old) = guard.take() {
        let _ = old.pipeline.set_state(gst::State::Null);
    }
    let now = HostTime::now();
    {
        let mut s = lock(&inner.state);
        s.restarts += 1;
        s.decode_errors += s.pending.values().filter(|p| p.expect_output).count() as u64;
        s.pending.clear();
        s.timeouts_since_output = 0;
        s.waiting_for_key = true;
        s.discont = true;
        inner.maybe_request_key_frame(&mut s, now);
    }
    let codec = lock(&inner.state).codec;
    match build_pipe(inner, codec) {
        Ok(pipe) => *guard = Some(pipe),
        Err(e) => {
            // Leave it empty; the watch loop tries again on its next turn.
            tracing::warn!(target: "cg_media", "decoder restart failed: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Encoder, EncoderConfig};

    fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
        let start = std::time::Instant::now();
        while !cond() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "timed out waiting for {what}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn a_pipeline_error_rebuilds_the_pipeline_and_the_next_key_frame_decodes() {
        let cfg = EncoderConfig {
            width: 160,
            height: 120,
            key_frame_interval: None,
            ..EncoderConfig::default()
        };
        let (enc, rx) = Encoder::start(cfg).unwrap();
        let frames: Vec<EncodedFrame> = (0..6)
            .map(|_| rx.recv_timeout(Duration::from_secs(10)).unwrap())
            .collect();
        enc.stop();
        let (dec, _records) = Decoder::start(DecoderConfig::default()).unwrap();
        for f in &frames[..3] {
            assert_eq!(dec.push(f.clone()).unwrap(), PushOutcome::Queued);
        }
        wait_for("3 frames", || dec.stats().frames_decoded >= 3);

        // An element of the running pipeline fails.
        let appsrc = lock(&dec.inner.pipe).as_ref().unwrap().appsrc.clone();
        gst::element_error!(appsrc, gst::StreamError::Failed, ["injected failure"]);
        wait_for("a restart", || dec.stats().restarts >= 1);
        assert!(
            dec.take_key_frame_request(),
            "a restart asks for a key frame"
        );

        // Inter frames are refused until a key frame comes; then decoding resumes.
        assert_eq!(
            dec.push(frames[3].clone()).unwrap(),
            PushOutcome::DroppedAwaitingKeyFrame
        );
        let key = EncodedFrame {
            seq: 4,
            ..frames[0].clone()
        };
        assert_eq!(dec.push(key).unwrap(), PushOutcome::Queued);
        let next = EncodedFrame {
            seq: 5,
            ..frames[1].clone()
        };
        assert_eq!(dec.push(next).unwrap(), PushOutcome::Queued);
        wait_for("decoding after the restart", || {
            dec.stats().frames_decoded >= 5
        });
        let s = dec.stats();
        assert_eq!(s.last_size, Some((160, 120)));
        assert!(s.decode_errors >= 1, "{s:?}");
    }
}
