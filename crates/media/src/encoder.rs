//! The sender pipeline and its handle.
//!
//! ```text
//! source ─▶ [convert/scale/rate] ─▶ capsfilter I420 W×H@F ─▶ queue (1 frame, leaky)
//!   ─▶ ●probe: capture time, index, pending bit-rate change ─▶ encoder
//!   ─▶ [h264parse/h265parse config-interval=-1] ─▶ capsfilter ─▶ appsink (sync=false)
//!   ─▶ new-sample callback ─▶ bounded std::sync::mpsc channel ─▶ application
//! ```

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::Bytes;
use cg_types::{Bitrate, DataSize};
use gstreamer as gst;
use gstreamer::prelude::*;
use gstreamer_app as gst_app;
use gstreamer_video as gst_video;

use crate::MediaCodec;
use crate::adapt::{Adapter, Format};
use crate::model::ModelEncoder;
use crate::rate_window::RateWindow;
use crate::source::BuiltSource;
use crate::sync::lock;
use crate::{
    Codec, EncodedFrame, EncoderConfig, EncoderKind, EncoderStats, Error, FrameDropper, HostTime,
    props,
};

/// Raw frames remembered between the encoder's input and output (bounded: an encoder that
/// swallows frames cannot make this grow).
const MAX_PENDING: usize = 256;
/// Latency samples kept for the windowed mean and maximum.
const MAX_LATENCY_SAMPLES: usize = 1024;
/// The frame dropper never drops for longer than this in a row (a freeze is worse than an
/// overshoot; libwebrtc allows 4 s).
const MAX_DROP_GAP: Duration = Duration::from_millis(300);

/// A running sender: a GStreamer pipeline, or the model encoder (`encoder = "model"`, see
/// `model.rs`).
///
/// All methods take `&self` and are cheap and non-blocking: the target bit rate is handed to
/// the streaming thread and applied in front of the next raw frame, a key-frame request is a
/// `force-key-unit` event. The handle is `Send + Sync`; share it in an `Arc` between a
/// congestion-control task and a statistics task.
pub struct Encoder(Backend);

enum Backend {
    Gst(Box<GstEncoder>),
    Model {
        encoder: ModelEncoder,
        format: Format,
    },
}

impl Encoder {
    /// Builds and starts the pipeline (or the model encoder) for `config`. Returns the handle
    /// and the receiving end of the bounded channel of encoded frames (capacity
    /// `config.frame_queue`).
    ///
    /// Errors: [`Error::UnknownEncoder`] (with the available names),
    /// [`Error::EncoderNotAvailable`] (NVENC without GPU, missing plugin),
    /// [`Error::InvalidConfig`], [`Error::File`], [`Error::Start`] (a source
    /// that cannot open: no X display, no camera).
    pub fn start(config: EncoderConfig) -> Result<(Encoder, Receiver<EncodedFrame>), Error> {
        if EncoderKind::from_name(&config.encoder)? == EncoderKind::Model {
            let (encoder, rx) = ModelEncoder::start(&config)?;
            let format = config.top_format();
            return Ok((Encoder(Backend::Model { encoder, format }), rx));
        }
        let (encoder, rx) = GstEncoder::start(config)?;
        Ok((Encoder(Backend::Gst(Box::new(encoder))), rx))
    }

    /// Sets the target bit rate. Non-blocking: applied by the streaming thread in front of
    /// the next raw frame, without restarting anything (see
    /// [`EncoderStats::target_applied_at_pts`]).
    pub fn set_target_bitrate(&self, rate: Bitrate) {
        match &self.0 {
            Backend::Gst(e) => e.set_target_bitrate(rate),
            Backend::Model { encoder, .. } => encoder.set_target_bitrate(rate),
        }
    }

    /// Asks for a key frame (an upstream `force-key-unit` event with all headers): the next
    /// raw frame to enter the encoder is coded as a key frame.
    pub fn request_key_frame(&self) -> Result<(), Error> {
        match &self.0 {
            Backend::Gst(e) => e.request_key_frame(),
            Backend::Model { encoder, .. } => {
                encoder.request_key_frame();
                Ok(())
            }
        }
    }

    /// Rebuilds the pipeline, for an encoder that has stopped making frames (a pipeline
    /// wedged in an element, or stopped by an element's error). Returns at once: the
    /// rebuild runs in a thread of its own and does nothing if one is under way or the
    /// encoder is stopped. The new pipeline starts at the adapted size and the applied
    /// target, its first frame a key frame; the counters, the adaptation and
    /// [`EncodedFrame::seq`] carry on, and [`EncodedFrame::pts`] carries on past the last
    /// frame. A live source is opened again; a file or a test pattern starts again from its
    /// first frame. [`EncoderStats::restarts`] counts the rebuilds; one that fails leaves
    /// its reason in [`EncoderStats::error`] and no pipeline (a later call tries again).
    /// The model encoder does not wedge: nothing to do.
    pub fn restart(&self) {
        if let Backend::Gst(e) = &self.0 {
            e.restart();
        }
    }

    /// The counters now.
    pub fn stats(&self) -> EncoderStats {
        match &self.0 {
            Backend::Gst(e) => e.stats(),
            Backend::Model { encoder, format } => encoder.stats(*format),
        }
    }

    /// The running pipeline's encoder element (none for the model encoder, or while a
    /// restart builds the next pipeline).
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn element(&self) -> Option<gst::Element> {
        match &self.0 {
            Backend::Gst(e) => lock(&e.inner.run).as_ref().map(|r| r.encoder.clone()),
            Backend::Model { .. } => None,
        }
    }

    /// The encoder in use.
    pub fn kind(&self) -> EncoderKind {
        match &self.0 {
            Backend::Gst(e) => e.inner.shared.kind,
            Backend::Model { encoder, .. } => encoder.kind(),
        }
    }

    /// Stops the pipeline (idempotent; also done on drop). No frame is sent after it
    /// returns; the channel reports disconnection once the handle is dropped.
    pub fn stop(&self) {
        match &self.0 {
            Backend::Gst(e) => e.stop(),
            Backend::Model { encoder, .. } => encoder.stop(),
        }
    }
}

impl std::fmt::Debug for Encoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encoder")
            .field("kind", &self.kind())
            .finish_non_exhaustive()
    }
}

/// The GStreamer pipeline behind an [`Encoder`]: its counters and adaptation (`shared`),
/// which outlive a restart, and the running pipeline (`run`), which a restart replaces.
struct GstEncoder {
    inner: Arc<Inner>,
}

/// What a restart needs, shared with its worker thread.
struct Inner {
    config: EncoderConfig,
    shared: Arc<Shared>,
    /// The sending end every pipeline's output gets a clone of; taken by [`GstEncoder::stop`].
    tx: Mutex<Option<SyncSender<EncodedFrame>>>,
    /// The pipeline running now; `None` while a restart builds the next one, and after stop.
    run: Mutex<Option<Run>>,
    stopping: AtomicBool,
    restarting: AtomicBool,
}

/// One built and started pipeline.
struct Run {
    pipeline: gst::Pipeline,
    encoder: gst::Element,
    source: BuiltSource,
    bus_thread: Option<JoinHandle<()>>,
    bus_stop: Arc<AtomicBool>,
    /// Whether this pipeline's probes and output may touch the shared state and send. A
    /// retired pipeline's streaming threads, should they wake, drop what they carry.
    live: Arc<AtomicBool>,
}

struct Shared {
    kind: EncoderKind,
    /// Raw frames that reached the queue in front of the encoder.
    captured: Arc<AtomicU64>,
    /// Requested target in bit/s, picked up by the input probe.
    wanted_bps: AtomicU64,
    state: Mutex<State>,
}

struct State {
    pending: VecDeque<(gst::ClockTime, HostTime, u64)>,
    frames_in: u64,
    last_input_pts: Option<Duration>,
    applied: Bitrate,
    target_applied_at_pts: Option<Duration>,
    seq: u64,
    frames_out: u64,
    key_frames: u64,
    bytes_out: u64,
    dropped_backpressure: u64,
    key_frame_requests: u64,
    key_frame_requested_after_index: Option<u64>,
    key_frame_requested_after_pts: Option<Duration>,
    rate: RateWindow,
    latencies: VecDeque<(Duration, Duration)>,
    window: Duration,
    last_latency: Duration,
    error: Option<String>,
    adapter: Adapter,
    dropper: Option<FrameDropper>,
    /// The source's frame interval.
    input_interval: Duration,
    /// The frame-rate gate: the next PTS a frame is due at the adapted rate.
    next_due: Option<Duration>,
    dropped_rate: u64,
    skipped_frame_rate: u64,
    /// A key frame was asked for while a down-switch was due: the switch, in front of the
    /// next frame, makes it (see [`Adapter::poll_key_frame`]).
    key_frame_by_switch: bool,
    /// Pipelines rebuilt by [`Encoder::restart`].
    restarts: u64,
}

impl GstEncoder {
    /// See [`Encoder::start`].
    fn start(config: EncoderConfig) -> Result<(GstEncoder, Receiver<EncodedFrame>), Error> {
        crate::init()?;
        config.validate()?;
        let kind = EncoderKind::from_name(&config.encoder)?;
        let adapter = Adapter::new(
            config.top_format(),
            config.adaptation.clone(),
            config.start_bitrate,
        );
        let start = adapter.format();
        if start != config.top_format() {
            tracing::info!(target: "cg_media", format = %start, start_bitrate = %config.start_bitrate, "start format chosen from the start bit rate");
        }
        let frame_interval = config.frame_interval();
        let shared = Arc::new(Shared {
            kind,
            captured: Arc::new(AtomicU64::new(0)),
            wanted_bps: AtomicU64::new(config.start_bitrate.as_bps()),
            state: Mutex::new(State {
                pending: VecDeque::new(),
                frames_in: 0,
                last_input_pts: None,
                applied: config.start_bitrate,
                target_applied_at_pts: None,
                seq: 0,
                frames_out: 0,
                key_frames: 0,
                bytes_out: 0,
                dropped_backpressure: 0,
                key_frame_requests: 0,
                key_frame_requested_after_index: None,
                key_frame_requested_after_pts: None,
                rate: RateWindow::new(config.stats_window, frame_interval),
                latencies: VecDeque::new(),
                window: config.stats_window,
                last_latency: Duration::ZERO,
                error: None,
                adapter,
                input_interval: frame_interval,
                dropper: config
                    .frame_dropper
                    .map(|d| FrameDropper::new(d, MAX_DROP_GAP, config.frame_rate)),
                next_due: None,
                dropped_rate: 0,
                skipped_frame_rate: 0,
                key_frame_by_switch: false,
                restarts: 0,
            }),
        });
        let (tx, rx) = sync_channel(config.frame_queue);
        let run = Run::start(
            &config,
            &shared,
            tx.clone(),
            (start.width, start.height),
            Duration::ZERO,
            true,
        )?;
        let inner = Arc::new(Inner {
            config,
            shared,
            tx: Mutex::new(Some(tx)),
            run: Mutex::new(Some(run)),
            stopping: AtomicBool::new(false),
            restarting: AtomicBool::new(false),
        });
        Ok((GstEncoder { inner }, rx))
    }

    /// Sets the target bit rate. Non-blocking: applied by the streaming thread in front of
    /// the next raw frame, without restarting anything (see
    /// [`EncoderStats::target_applied_at_pts`]).
    pub fn set_target_bitrate(&self, rate: Bitrate) {
        self.inner
            .shared
            .wanted_bps
            .store(rate.as_bps(), Ordering::Release);
    }

    /// Asks for a key frame (an upstream `force-key-unit` event with all headers): the next
    /// raw frame to enter the encoder is coded as a key frame. While a restart builds the
    /// next pipeline there is no encoder to ask: its first frame is a key frame anyway.
    pub fn request_key_frame(&self) -> Result<(), Error> {
        let encoder = lock(&self.inner.run).as_ref().map(|r| r.encoder.clone());
        request_key_frame(encoder.as_ref(), &self.inner.shared)
    }

    /// See [`Encoder::restart`].
    fn restart(&self) {
        if self.inner.stopping.load(Ordering::Acquire)
            || self.inner.restarting.swap(true, Ordering::AcqRel)
        {
            return;
        }
        let inner = self.inner.clone();
        let spawned = std::thread::Builder::new()
            .name("cg-media-restart".to_owned())
            .spawn(move || {
                if let Err(e) = inner.restart() {
                    tracing::warn!(target: "cg_media", %e, "the encoder pipeline could not be rebuilt");
                    lock(&inner.shared.state).error.get_or_insert(e.to_string());
                }
                inner.restarting.store(false, Ordering::Release);
            });
        if let Err(e) = spawned {
            tracing::warn!(target: "cg_media", %e, "cannot spawn the encoder's restart");
            self.inner.restarting.store(false, Ordering::Release);
        }
    }

    /// The counters now.
    pub fn stats(&self) -> EncoderStats {
        let shared = &self.inner.shared;
        let s = lock(&shared.state);
        let lat: Vec<Duration> = s.latencies.iter().map(|&(_, l)| l).collect();
        let mean = if lat.is_empty() {
            Duration::ZERO
        } else {
            lat.iter().sum::<Duration>() / u32::try_from(lat.len()).unwrap_or(u32::MAX)
        };
        EncoderStats {
            codec: shared.kind.codec(),
            target_bitrate: s.applied,
            produced_bitrate: s.rate.rate(),
            frames_captured: shared.captured.load(Ordering::Relaxed),
            frames_in: s.frames_in,
            frames_out: s.frames_out,
            key_frames: s.key_frames,
            bytes_out: DataSize::bytes(s.bytes_out),
            dropped_backpressure: s.dropped_backpressure,
            key_frame_requests: s.key_frame_requests,
            last_encode_latency: s.last_latency,
            mean_encode_latency: mean,
            max_encode_latency: lat.iter().copied().max().unwrap_or_default(),
            last_input_pts: s.last_input_pts,
            target_applied_at_pts: s.target_applied_at_pts,
            key_frame_requested_after_index: s.key_frame_requested_after_index,
            key_frame_requested_after_pts: s.key_frame_requested_after_pts,
            format: s.adapter.format(),
            format_changes: s.adapter.changes(),
            encode_usage: s.adapter.cpu_usage(),
            mean_qp: s.adapter.mean_qp(),
            dropped_rate: s.dropped_rate,
            skipped_frame_rate: s.skipped_frame_rate,
            restarts: s.restarts,
            error: s.error.clone(),
        }
    }

    /// Stops the pipeline (idempotent; also done on drop). No frame is sent after it
    /// returns; the channel reports disconnection once every pipeline is gone (a retired
    /// one whose teardown hangs keeps it open).
    pub fn stop(&self) {
        let run = {
            let mut run = lock(&self.inner.run);
            if self.inner.stopping.swap(true, Ordering::AcqRel) {
                return;
            }
            run.take()
        };
        if let Some(run) = run {
            run.stop();
        }
        lock(&self.inner.tx).take();
    }
}

impl Inner {
    /// Replaces the running pipeline with a new one built from the configuration at the
    /// adapted size and the applied rate. The counters, the adaptation and the frame
    /// numbering carry on; PTS carries on one frame interval after the last raw frame, so
    /// that every window keyed on it stays ordered.
    ///
    /// The old pipeline is retired first (its threads, should they wake, drop what they
    /// carry) and torn down in a thread of its own: a pipeline wedged in an element may
    /// never reach NULL. A camera is free only once its pipeline is down, so with a camera
    /// the new one is built when the old is down or after [`RESTART_TEARDOWN_WAIT`],
    /// whichever is first; every other source is built again at once, since each second
    /// waited is a second more that the viewer's picture is frozen.
    fn restart(&self) -> Result<(), Error> {
        let old = lock(&self.run).take();
        let (size, offset, rate) = {
            let mut s = lock(&self.shared.state);
            if let Some(old) = &old {
                old.live.store(false, Ordering::Release);
            }
            s.pending.clear();
            s.next_due = None;
            if let Some(d) = s.dropper.as_mut() {
                d.reset();
            }
            let f = s.adapter.format();
            let offset = s
                .last_input_pts
                .map_or(Duration::ZERO, |p| p + s.input_interval);
            ((f.width, f.height), offset, s.applied)
        };
        if let Some(old) = old {
            let (down_tx, down) = std::sync::mpsc::channel();
            std::thread::Builder::new()
                .name("cg-media-retire".to_owned())
                .spawn(move || {
                    old.stop();
                    let _ = down_tx.send(());
                })
                .map_err(|e| Error::Pipeline(format!("cannot spawn the teardown: {e}")))?;
            let device = matches!(self.config.source, crate::SourceConfig::Camera { .. });
            if device && down.recv_timeout(RESTART_TEARDOWN_WAIT).is_err() {
                tracing::warn!(target: "cg_media", "the wedged pipeline has not stopped in {RESTART_TEARDOWN_WAIT:?}: building the new one beside it");
            }
        }
        let Some(tx) = lock(&self.tx).clone() else {
            return Ok(());
        };
        let config = EncoderConfig {
            start_bitrate: rate,
            ..self.config.clone()
        };
        let new = Run::start(&config, &self.shared, tx, size, offset, false)?;
        let mut run = lock(&self.run);
        if self.stopping.load(Ordering::Acquire) {
            drop(run);
            new.stop();
            return Ok(());
        }
        new.live.store(true, Ordering::Release);
        *run = Some(new);
        drop(run);
        let mut s = lock(&self.shared.state);
        s.restarts += 1;
        tracing::warn!(target: "cg_media", restarts = s.restarts, width = size.0, height = size.1, %rate, "encoder pipeline rebuilt");
        Ok(())
    }
}

/// How long a restart waits for the retired pipeline to reach NULL, and free its camera,
/// before it builds the new one anyway.
const RESTART_TEARDOWN_WAIT: Duration = Duration::from_secs(1);

impl Run {
    /// Builds and starts a pipeline for `config` with the scaler at `size`, its output on
    /// `tx`, its PTS `offset` later than its running time. Its probes and output do nothing
    /// while its `live` flag (set to `live`) is down.
    fn start(
        config: &EncoderConfig,
        shared: &Arc<Shared>,
        tx: SyncSender<EncodedFrame>,
        (width, height): (u32, u32),
        offset: Duration,
        live: bool,
    ) -> Result<Run, Error> {
        let kind = shared.kind;
        let encoder = kind.make(config)?;
        props::set(&encoder, "name", "encoder")?;
        let pipeline = gst::Pipeline::with_name("cg-encoder");
        let mut source = BuiltSource::build(&pipeline, config, (width, height))?;

        // One frame of slack between source and encoder, in its own thread: a slow encoder
        // drops the oldest raw frame instead of blocking (and delaying) capture.
        let queue = props::make("queue", "core")?;
        props::set(&queue, "max-size-buffers", 1u32)?;
        props::set(&queue, "max-size-bytes", 0u32)?;
        props::set(&queue, "max-size-time", 0u64)?;
        props::set_str(&queue, "leaky", "downstream")?;
        let live = Arc::new(AtomicBool::new(live));
        if let Some(pad) = queue.static_pad("sink") {
            let captured = shared.captured.clone();
            let live = live.clone();
            pad.add_probe(gst::PadProbeType::BUFFER, move |_, _| {
                if live.load(Ordering::Acquire) {
                    captured.fetch_add(1, Ordering::Relaxed);
                }
                gst::PadProbeReturn::Ok
            });
        }
        let mut chain = vec![queue, encoder.clone()];
        if let Some(parser) = kind.parser() {
            let p = props::make(parser, "gstreamer1.0-plugins-bad (videoparsers)")?;
            props::set(&p, "config-interval", -1i32)?;
            chain.push(p);
        }
        let out_caps = props::make("capsfilter", "core")?;
        props::set(&out_caps, "caps", kind.output_caps())?;
        chain.push(out_caps);
        let appsink = gst_app::AppSink::builder()
            .sync(false)
            .max_buffers(4)
            .build();
        chain.push(appsink.clone().upcast());
        pipeline.add_many(&chain)?;
        source.tail.link(&chain[0])?;
        gst::Element::link_many(&chain)?;

        let clock = Clock {
            live: live.clone(),
            offset,
        };
        install_input_probe(&encoder, &source.tail, shared, clock.clone())?;
        install_output(&appsink, &encoder, shared, tx, kind.codec(), clock);

        let bus = pipeline
            .bus()
            .ok_or_else(|| Error::Pipeline("no bus".to_owned()))?;
        start_pipeline(&pipeline, &bus)?;
        if let Err(e) = source.start() {
            let _ = pipeline.set_state(gst::State::Null);
            return Err(e);
        }
        let bus_stop = Arc::new(AtomicBool::new(false));
        let bus_thread = spawn_bus_watch(bus, shared.clone(), bus_stop.clone())?;
        Ok(Run {
            pipeline,
            encoder,
            source,
            bus_thread: Some(bus_thread),
            bus_stop,
            live,
        })
    }

    /// Takes the pipeline to NULL and ends its threads.
    fn stop(mut self) {
        self.live.store(false, Ordering::Release);
        self.bus_stop.store(true, Ordering::Release);
        let _ = self.pipeline.set_state(gst::State::Null);
        self.source.stop();
        if let Some(t) = self.bus_thread.take() {
            let _ = t.join();
        }
    }
}

/// A pipeline's view of the shared state's time: whether it is the live pipeline, and how
/// much later than its running time its frames' PTS is.
#[derive(Clone)]
struct Clock {
    live: Arc<AtomicBool>,
    offset: Duration,
}

impl Clock {
    fn is_live(&self) -> bool {
        self.live.load(Ordering::Acquire)
    }

    fn pts(&self, running: gst::ClockTime) -> Duration {
        Duration::from_nanos(running.nseconds()) + self.offset
    }
}

impl Drop for GstEncoder {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Running time of a buffer timestamp: the one time base that survives the encoder (x264enc,
/// for one, shifts its output PTS and segment by 1000 hours to keep DTS positive).
fn running_time(
    segment: Option<&gst::Segment>,
    pts: Option<gst::ClockTime>,
) -> Option<gst::ClockTime> {
    let pts = pts?;
    match segment.and_then(|s| s.downcast_ref::<gst::ClockTime>()) {
        Some(seg) => seg.to_running_time(pts),
        None => Some(pts),
    }
}

/// Counts a key-frame request and forces a key unit on `encoder` (none while a restart
/// builds the next pipeline, whose first frame is a key frame).
fn request_key_frame(encoder: Option<&gst::Element>, shared: &Shared) -> Result<(), Error> {
    {
        let mut s = lock(&shared.state);
        s.key_frame_requests += 1;
        s.key_frame_requested_after_index = s.frames_in.checked_sub(1);
        s.key_frame_requested_after_pts = s.last_input_pts;
        // The target the next frame gets (a new one may not have reached a frame yet).
        s.adapter
            .on_target(Bitrate::bps(shared.wanted_bps.load(Ordering::Acquire)));
        if s.adapter.down_due() {
            // The size change in front of the next frame codes the key frame.
            s.key_frame_by_switch = true;
            return Ok(());
        }
    }
    encoder.map_or(Ok(()), force_key_unit)
}

/// Sends the encoder an upstream `force-key-unit` event with all headers.
fn force_key_unit(encoder: &gst::Element) -> Result<(), Error> {
    let event = gst_video::UpstreamForceKeyUnitEvent::builder()
        .all_headers(true)
        .build();
    let pad = encoder
        .static_pad("src")
        .ok_or_else(|| Error::Pipeline("encoder has no src pad".to_owned()))?;
    if pad.send_event(event) {
        Ok(())
    } else {
        Err(Error::Pipeline(
            "encoder refused the force-key-unit event".to_owned(),
        ))
    }
}

/// Records capture time and index of each raw frame entering the encoder, applies a pending
/// target bit rate in front of it, and runs the adaptation: a new coded size goes to the
/// scaler's capsfilter (`scaler`), a lower frame rate and the frame dropper drop the frame
/// here, before the encoder sees it.
fn install_input_probe(
    encoder: &gst::Element,
    scaler: &gst::Element,
    shared: &Arc<Shared>,
    clock: Clock,
) -> Result<(), Error> {
    let pad = encoder
        .static_pad("sink")
        .ok_or_else(|| Error::Pipeline("encoder has no sink pad".to_owned()))?;
    let shared = shared.clone();
    let enc = encoder.downgrade();
    let scaler = scaler.downgrade();
    pad.add_probe(gst::PadProbeType::BUFFER, move |pad, info| {
        let Some(buffer) = info.buffer() else {
            return gst::PadProbeReturn::Ok;
        };
        if !clock.is_live() {
            drop(info.take_buffer());
            return gst::PadProbeReturn::Handled;
        }
        let now = HostTime::now();
        let segment = pad.sticky_event::<gst::event::Segment>(0);
        let pts = running_time(segment.as_ref().map(|e| e.segment()), buffer.pts());
        let wanted = Bitrate::bps(shared.wanted_bps.load(Ordering::Acquire));
        let pts_d = pts.map(|p| clock.pts(p));
        // GStreamer is called with the state unlocked: an element's call that waits (on its
        // object lock, a renegotiation) must not hold `stats()`, which the session loop reads.
        let applied = lock(&shared.state).applied;
        if wanted != applied
            && let Some(enc) = enc.upgrade()
        {
            let result = shared.kind.set_bitrate(&enc, wanted);
            let mut s = lock(&shared.state);
            match result {
                Ok(applied) => {
                    // The element may have rounded or clamped the value: remember what it got
                    // and settle the request on it, unless a newer one arrived meanwhile.
                    s.applied = applied;
                    let _ = shared.wanted_bps.compare_exchange(
                        wanted.as_bps(),
                        applied.as_bps(),
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    );
                    s.target_applied_at_pts = pts_d;
                }
                Err(e) => s.error = Some(e.to_string()),
            }
        }
        let admission = pts_d
            .map(|pts| lock(&shared.state).admit(pts))
            .unwrap_or_default();
        if let Some((width, height)) = admission.resize
            && let Some(scaler) = scaler.upgrade()
        {
            BuiltSource::set_size(&scaler, width, height);
        }
        if admission.force_key_unit
            && let Some(enc) = enc.upgrade()
            && let Err(e) = force_key_unit(&enc)
        {
            lock(&shared.state).error = Some(e.to_string());
        }
        let mut s = lock(&shared.state);
        if admission.drop || !clock.is_live() {
            // Consumed here and `Handled`: returning `Drop` made GStreamer 1.22 print a
            // `gst_mini_object_unref: assertion 'mini_object != NULL'` CRITICAL for every
            // dropped frame.
            drop(s);
            drop(info.take_buffer());
            return gst::PadProbeReturn::Handled;
        }
        let index = s.frames_in;
        s.frames_in += 1;
        s.last_input_pts = pts_d;
        if let Some(pts) = pts {
            if s.pending.len() >= MAX_PENDING {
                s.pending.pop_front();
            }
            s.pending.push_back((pts, now, index));
        }
        gst::PadProbeReturn::Ok
    });
    Ok(())
}

/// What the input probe does with a raw frame.
#[derive(Debug, Default)]
struct Admission {
    /// Drop it (a lower frame rate, or the frame dropper).
    drop: bool,
    /// Ask the encoder for a key frame: one was wanted during a rate collapse and the
    /// adaptation's switch did not change the size (nothing re-initialises).
    force_key_unit: bool,
    /// The coded size to give the scaler: the adaptation changed it.
    resize: Option<(u32, u32)>,
}

impl State {
    /// Runs the adaptation in front of the raw frame at `pts`.
    fn admit(&mut self, pts: Duration) -> Admission {
        let target = self.applied;
        self.adapter.on_target(target);
        let before = self.adapter.format();
        let mut force_key_unit = false;
        let mut resize = None;
        let for_key_frame = if std::mem::take(&mut self.key_frame_by_switch) {
            // Only a new size re-initialises the encoder (a lower frame rate does not): else
            // the key frame is still to be asked for.
            let change = self.adapter.poll_key_frame(pts);
            force_key_unit = !change.is_some_and(|c| {
                (c.format.width, c.format.height) != (before.width, before.height)
            });
            change
        } else {
            None
        };
        if let Some(change) = for_key_frame.or_else(|| self.adapter.poll(pts)) {
            let f = change.format;
            tracing::info!(target: "cg_media", from = %before, to = %f, reason = ?change.reason, %target, "adapting the picture");
            if (f.width, f.height) != (before.width, before.height) {
                resize = Some((f.width, f.height));
                // The encoder re-initialises on the new size: its rate control starts afresh.
                if let Some(d) = self.dropper.as_mut() {
                    d.reset();
                }
            }
        }
        // The adapted frame rate: keep a frame when it is due (half an input interval early
        // is on time), skip the rest.
        let fps = self.adapter.format().frame_rate.max(1);
        let interval = Duration::from_secs(1) / fps;
        let due = self.next_due.get_or_insert(pts);
        if pts + self.input_interval / 2 < *due {
            self.skipped_frame_rate += 1;
            return Admission {
                drop: true,
                force_key_unit,
                resize,
            };
        }
        *due = (*due + interval).max(pts);
        let dropped = self
            .dropper
            .as_mut()
            .is_some_and(|d| d.on_input(pts, target));
        self.adapter.on_input(pts, dropped);
        if dropped {
            self.dropped_rate += 1;
        }
        Admission {
            drop: dropped,
            force_key_unit,
            resize,
        }
    }
}

/// Turns appsink samples into [`EncodedFrame`]s on the bounded channel; never blocks.
fn install_output(
    appsink: &gst_app::AppSink,
    encoder: &gst::Element,
    shared: &Arc<Shared>,
    tx: SyncSender<EncodedFrame>,
    codec: Codec,
    clock: Clock,
) {
    let shared = shared.clone();
    let enc = encoder.downgrade();
    appsink.set_callbacks(
        gst_app::AppSinkCallbacks::builder()
            .new_sample(move |sink| {
                let sample = sink.pull_sample().map_err(|_| gst::FlowError::Flushing)?;
                let Some(buffer) = sample.buffer() else {
                    return Ok(gst::FlowSuccess::Ok);
                };
                let Ok(map) = buffer.map_readable() else {
                    return Ok(gst::FlowSuccess::Ok);
                };
                let data = Bytes::copy_from_slice(&map);
                drop(map);
                let now = HostTime::now();
                let key_frame = !buffer.flags().contains(gst::BufferFlags::DELTA_UNIT);
                let pts = running_time(sample.segment(), buffer.pts());
                let mut s = lock(&shared.state);
                // Checked under the lock a restart retires the pipeline under.
                if !clock.is_live() {
                    return Ok(gst::FlowSuccess::Ok);
                }
                // Frames the encoder dropped leave their entries in front of ours.
                let mut found = None;
                while let Some(&(p, t, i)) = s.pending.front() {
                    if Some(p) > pts {
                        break;
                    }
                    s.pending.pop_front();
                    if Some(p) == pts {
                        found = Some((t, i));
                        break;
                    }
                }
                let (capture_time, index) = found.unwrap_or((now, s.frames_in.saturating_sub(1)));
                let pts_d = pts.map_or(clock.offset, |p| clock.pts(p));
                let latency = now.checked_duration_since(capture_time).unwrap_or_default();
                let size = data.len() as u64;
                s.frames_out += 1;
                s.key_frames += u64::from(key_frame);
                s.bytes_out += size;
                // Key frames are coded at their own budget (libvpx boosts them); their QP
                // says nothing about whether the deltas meet the target at this size.
                let qp = if key_frame {
                    None
                } else {
                    codec.quantizer(&data)
                };
                s.adapter.on_encoded(pts_d, qp);
                // The host's shortage of CPU is judged on the time spent encoding
                // (`adapt`'s CPU usage), not on frames the leaky queue dropped in a stall.
                s.adapter.on_encode_time(pts_d, latency);
                if let Some(d) = s.dropper.as_mut() {
                    d.on_encoded(DataSize::bytes(size), key_frame);
                }
                s.rate.push(pts_d, DataSize::bytes(size));
                s.last_latency = latency;
                if s.latencies.len() >= MAX_LATENCY_SAMPLES {
                    s.latencies.pop_front();
                }
                s.latencies.push_back((pts_d, latency));
                let window = s.window;
                while s
                    .latencies
                    .front()
                    .is_some_and(|&(p, _)| p + window <= pts_d)
                {
                    s.latencies.pop_front();
                }
                let seq = s.seq;
                s.seq += 1;
                drop(s);
                let frame = EncodedFrame {
                    data,
                    codec,
                    capture_time,
                    key_frame,
                    pts: pts_d,
                    index,
                    seq,
                    encode_latency: latency,
                };
                match tx.try_send(frame) {
                    Ok(()) => {}
                    Err(TrySendError::Full(_)) => {
                        lock(&shared.state).dropped_backpressure += 1;
                        // The receiver will see a sequence gap and need a key frame anyway:
                        // ask for it now rather than after a round trip.
                        let _ = request_key_frame(enc.upgrade().as_ref(), &shared);
                    }
                    Err(TrySendError::Disconnected(_)) => {
                        lock(&shared.state).dropped_backpressure += 1;
                    }
                }
                Ok(gst::FlowSuccess::Ok)
            })
            .build(),
    );
}

/// Sets the pipeline PLAYING; an element that fails to start (no display, no camera, no
/// GPU) is reported with its own message.
pub(crate) fn start_pipeline(pipeline: &gst::Pipeline, bus: &gst::Bus) -> Result<(), Error> {
    let fail = |pipeline: &gst::Pipeline, fallback: String| {
        let msg = bus
            .timed_pop_filtered(
                gst::ClockTime::from_mseconds(100),
                &[gst::MessageType::Error],
            )
            .and_then(|m| match m.view() {
                gst::MessageView::Error(e) => Some(format!(
                    "{}: {}{}",
                    e.src()
                        .map(|s| s.path_string().to_string())
                        .unwrap_or_default(),
                    e.error(),
                    e.debug().map(|d| format!(" ({d})")).unwrap_or_default()
                )),
                _ => None,
            })
            .unwrap_or(fallback);
        let _ = pipeline.set_state(gst::State::Null);
        Error::Start(msg)
    };
    if let Err(e) = pipeline.set_state(gst::State::Playing) {
        return Err(fail(pipeline, e.to_string()));
    }
    // Live pipelines go to PLAYING without prerolling; an element that failed while
    // starting has posted its error by now. Later errors are the bus thread's business.
    if let Some(msg) = bus.pop_filtered(&[gst::MessageType::Error]) {
        let text = match msg.view() {
            gst::MessageView::Error(e) => e.error().to_string(),
            _ => String::new(),
        };
        let _ = pipeline.set_state(gst::State::Null);
        return Err(Error::Start(text));
    }
    Ok(())
}

fn spawn_bus_watch(
    bus: gst::Bus,
    shared: Arc<Shared>,
    stopping: Arc<AtomicBool>,
) -> Result<JoinHandle<()>, Error> {
    std::thread::Builder::new()
        .name("cg-media-enc-bus".to_owned())
        .spawn(move || {
            while !stopping.load(Ordering::Acquire) {
                let Some(msg) = bus.timed_pop_filtered(
                    gst::ClockTime::from_mseconds(100),
                    &[gst::MessageType::Error, gst::MessageType::Eos],
                ) else {
                    continue;
                };
                let text = match msg.view() {
                    gst::MessageView::Error(e) => format!("{}", e.error()),
                    gst::MessageView::Eos(_) => "end of stream".to_owned(),
                    _ => continue,
                };
                tracing::warn!(target: "cg_media", "encoder pipeline: {text}");
                lock(&shared.state).error.get_or_insert(text);
            }
        })
        .map_err(|e| Error::Pipeline(format!("cannot spawn bus thread: {e}")))
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc::RecvTimeoutError;
    use std::time::Instant;

    use super::*;

    /// A pipeline of `encoder` at `width`×`height` on `pattern`.
    fn wedgeable(
        encoder: &str,
        (width, height): (u32, u32),
        pattern: crate::TestPattern,
    ) -> (Encoder, Receiver<EncodedFrame>) {
        Encoder::start(EncoderConfig {
            encoder: encoder.to_owned(),
            source: crate::SourceConfig::TestPattern { pattern },
            width,
            height,
            start_bitrate: Bitrate::kbps(2_000),
            ..EncoderConfig::default()
        })
        .expect("a pipeline starts")
    }

    /// Frames until none has come for `quiet`.
    fn until_quiet(rx: &Receiver<EncodedFrame>, quiet: Duration) -> Vec<EncodedFrame> {
        let mut frames = Vec::new();
        while let Ok(f) = rx.recv_timeout(quiet) {
            frames.push(f);
        }
        frames
    }

    #[test]
    fn a_wedged_vp8_pipeline_is_rebuilt_and_the_stream_carries_on() {
        wedged_and_rebuilt("vp8", (320, 240), crate::TestPattern::MovingZonePlate);
    }

    /// The hard case: H.264 (a parser in the chain, SPS/PPS in front of the new key frame)
    /// on the camera picture at 720p.
    #[test]
    fn a_wedged_x264_pipeline_on_the_720p_camera_is_rebuilt_and_the_stream_carries_on() {
        wedged_and_rebuilt("x264", (1280, 720), crate::TestPattern::Camera);
    }

    fn wedged_and_rebuilt(name: &str, size: (u32, u32), pattern: crate::TestPattern) {
        let (encoder, rx) = wedgeable(name, size, pattern);
        let before: Vec<EncodedFrame> = (0..15)
            .map(|_| rx.recv_timeout(Duration::from_secs(10)).expect("frames"))
            .collect();
        let release = crate::testing::wedge(&encoder).expect("a running pipeline");
        let mut before = before;
        before.extend(until_quiet(&rx, Duration::from_millis(500)));
        let last = before.last().unwrap().clone();
        let wedged = encoder.stats();
        std::thread::sleep(Duration::from_millis(300));
        let still = encoder.stats();
        assert_eq!(still.frames_out, wedged.frames_out, "wedged: nothing made");
        assert!(
            still.frames_captured > wedged.frames_captured,
            "the source goes on capturing"
        );

        encoder.restart();
        let first = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the rebuilt pipeline makes frames");
        assert!(
            first.key_frame,
            "the rebuilt encoder starts with a key frame"
        );
        if encoder.kind().codec() == Codec::H264 {
            // Annex B: an SPS (NAL type 7) in front of the IDR, or a decoder cannot start.
            let sps = first
                .data
                .windows(4)
                .any(|w| w[..3] == [0, 0, 1] && w[3] & 0x1f == 7);
            assert!(sps, "the rebuilt H.264 stream starts with its SPS");
        }
        assert_eq!(first.seq, last.seq + 1, "frame numbering carries on");
        assert!(
            first.pts > last.pts,
            "PTS carries on: {first:?} after {last:?}"
        );
        let after: Vec<EncodedFrame> = (0..30)
            .map(|_| rx.recv_timeout(Duration::from_secs(10)).expect("frames"))
            .collect();
        for pair in std::iter::once(&first)
            .chain(&after)
            .collect::<Vec<_>>()
            .windows(2)
        {
            assert_eq!(pair[1].seq, pair[0].seq + 1);
            assert!(pair[1].pts > pair[0].pts);
        }
        let stats = encoder.stats();
        assert_eq!(stats.restarts, 1);
        assert_eq!(stats.frames_out, last.seq + 1 + 31);

        // Stopping does not wait for the wedged pipeline, and once that one is let go
        // nothing of it reaches the channel, which then closes.
        let t = Instant::now();
        encoder.stop();
        let stopped_in = t.elapsed();
        drop(release);
        match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(f) => panic!("a frame after stop: {f:?}"),
            Err(RecvTimeoutError::Disconnected) => {}
            Err(RecvTimeoutError::Timeout) => panic!("the channel never closed"),
        }
        assert!(
            stopped_in < RESTART_TEARDOWN_WAIT,
            "stop waited {stopped_in:?} for the wedged pipeline"
        );
    }
}
