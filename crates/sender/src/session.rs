//! The running sender: encoder frames → RTP session → UDP driver, rate and key frames back.

use std::future::Future;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use cg_app::watch::LoopWatch;
use cg_media::{Encoder, EncoderKind, HostTime};
use cg_net::{Driver, DriverConfig, DriverHandle, SocketConfig, UdpSocket};
use cg_rtp::{SenderEvent, SenderSession};
use cg_types::Bitrate;
use tokio::sync::{mpsc, oneshot};

use crate::{Error, SenderConfig, Stats};

/// Encoded frames buffered between the encoder's thread and the session task.
const FRAME_BRIDGE: usize = 8;

/// A sender session: bound and checked, not yet running. See the crate docs for an example.
pub struct Sender {
    config: SenderConfig,
    socket: UdpSocket,
    stats_tx: Option<mpsc::Sender<Stats>>,
}

impl Sender {
    /// Checks `config`, binds the socket and checks that the encoder can run here (unknown
    /// codec, NVENC without a GPU and a busy port fail now, with a clear [`Error`]).
    pub fn new(config: SenderConfig) -> Result<Sender, Error> {
        config.validate()?;
        EncoderKind::from_name(&config.codec)?.check_available()?;
        let bind = config.bind_addr();
        let socket = UdpSocket::bind(&SocketConfig {
            bind,
            ecn: config.ecn,
            ..SocketConfig::default()
        })
        .map_err(|e| Error::bind(bind, e))?;
        Ok(Sender {
            config,
            socket,
            stats_tx: None,
        })
    }

    /// The bound local address.
    pub fn local_addr(&self) -> SocketAddr {
        self.socket.local_addr()
    }

    /// The configuration.
    pub fn config(&self) -> &SenderConfig {
        &self.config
    }

    /// A stream of [`Stats`], one every `stats_interval` while [`run`](Self::run) runs.
    /// Samples are dropped, never queued without bound, when the consumer is `capacity`
    /// behind. Call before `run`; a second call replaces the first stream.
    pub fn stats(&mut self, capacity: usize) -> mpsc::Receiver<Stats> {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        self.stats_tx = Some(tx);
        rx
    }

    /// Runs until `shutdown` completes, then sends an RTCP BYE (RFC 3550 §6.6), stops the
    /// encoder and returns the last statistics. Must run inside a tokio runtime with I/O and
    /// time enabled. An `Err` means the encoder or the socket failed for good.
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> Result<Stats, Error> {
        let Sender {
            config,
            socket,
            stats_tx,
        } = self;
        let start = Instant::now();
        let rtp_config = rtp_config(&config);
        let session = SenderSession::with_controller_config(
            rtp_config,
            config.controller_config().as_ref(),
            start,
        )?;
        let (encoder, frames) = Encoder::start(config.encoder_config())?;
        let codec = encoder.kind().codec();
        let (driver, mut handle) = Driver::new(socket, session, DriverConfig::new(config.peer))?;
        let (stop_driver, driver_stopped) = oneshot::channel::<()>();
        let mut driver_task = tokio::spawn(driver.run(async move {
            let _ = driver_stopped.await;
        }));

        let (bridge, mut frame_rx) = frame_bridge(frames)?;

        let mut steering = Steering::new(&config);
        let mut sampler = Sampler::new(&config, start);
        let mut feed = FrameFeed::new();
        encoder.set_target_bitrate(config.start_bitrate);
        let mut tick = tokio::time::interval(config.stats_interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tokio::pin!(shutdown);
        let mut failure: Option<Error> = None;
        let watch = LoopWatch::start("cg-send", watch_threshold(&config));
        let beat = |step| watch.as_ref().inspect(|w| w.beat(step));
        loop {
            beat("wait");
            tokio::select! {
                biased;
                () = &mut shutdown => break,
                done = &mut driver_task => {
                    failure = Some(match done {
                        Ok(Err(e)) => e.into(),
                        _ => Error::Config("the UDP driver stopped unexpectedly".into()),
                    });
                    break;
                }
                frame = frame_rx.recv() => {
                    let Some(frame) = frame else {
                        let why = encoder.stats().error.unwrap_or_else(|| "frame channel closed".into());
                        failure = Some(Error::Media(cg_media::Error::Pipeline(format!("encoder stopped: {why}"))));
                        break;
                    };
                    beat("frame: push to the driver");
                    // `Stopped`: the next turn reports why.
                    let now = Instant::now();
                    feed.push(&handle, &frame, codec, now);
                    if feed.wants_key_frame(now) {
                        steering.key_frame_now(&encoder);
                    }
                }
                event = handle.next_event() => match event {
                    Some(e) => {
                        beat("event: steer the encoder");
                        steering.on_event(&encoder, e);
                    }
                    None => continue,
                },
                _ = tick.tick() => {
                    beat("tick: key frame");
                    steering.serve_key_frame(&encoder);
                    steering.watch(&encoder, Instant::now());
                    beat("tick: sample");
                    let sampled = sampler.sample(&handle, &feed, &encoder, &steering).await;
                    if let Some(mut stats) = sampled {
                        stats.note_stalls(watch.as_ref());
                        if let Some(tx) = &stats_tx {
                            let _ = tx.try_send(stats.clone());
                        }
                        sampler.last = stats;
                    }
                }
            }
        }

        // Clean shutdown: BYE out of the socket before the driver stops. Each query returns
        // after one turn of the driver loop, which flushes poll_transmit at its top.
        if failure.is_none() {
            let _ = handle.call(|s: &mut SenderSession, _| s.close()).await;
            let _ = handle.query(|_: &mut SenderSession, _| ()).await;
            let _ = handle.query(|_: &mut SenderSession, _| ()).await;
            if let Some(stats) = sampler.sample(&handle, &feed, &encoder, &steering).await {
                // The final totals are the stream's last record too (scripts read the last
                // line of --stats-file).
                // Bounded wait: a stalled consumer must not stop the sender from ending.
                if let Some(tx) = &stats_tx {
                    let _ =
                        tokio::time::timeout(Duration::from_secs(1), tx.send(stats.clone())).await;
                }
                sampler.last = stats;
            }
        }
        let _ = stop_driver.send(());
        encoder.stop();
        drop(frame_rx);
        if !driver_task.is_finished() {
            let _ = tokio::time::timeout(Duration::from_secs(2), &mut driver_task).await;
        }
        let _ = bridge.join();
        match failure {
            Some(e) => Err(e),
            None => Ok(sampler.last),
        }
    }
}

/// The stall threshold of a session loop's watch: two statistics intervals (the loop turns at
/// least once an interval), at least [`cg_app::watch::MIN_THRESHOLD`].
pub(crate) fn watch_threshold(config: &SenderConfig) -> Duration {
    config.stats_interval * 2
}

/// The encoder hands frames to a std channel; a thread moves them into tokio. The thread
/// ends when the returned receiver is dropped (or the encoder's channel closes).
pub(crate) fn frame_bridge(
    frames: std::sync::mpsc::Receiver<cg_media::EncodedFrame>,
) -> Result<
    (
        std::thread::JoinHandle<()>,
        mpsc::Receiver<cg_media::EncodedFrame>,
    ),
    Error,
> {
    let (frame_tx, frame_rx) = mpsc::channel(FRAME_BRIDGE);
    let bridge = std::thread::Builder::new()
        .name("cg-send-frames".into())
        .spawn(move || {
            // The encoder's channel stays open as long as its pipeline exists: poll so that
            // the thread ends as soon as the session stops listening.
            use std::sync::mpsc::RecvTimeoutError;
            while !frame_tx.is_closed() {
                match frames.recv_timeout(Duration::from_millis(50)) {
                    Ok(f) => {
                        if frame_tx.blocking_send(f).is_err() {
                            break;
                        }
                    }
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => break,
                }
            }
        })
        .map_err(|e| Error::Io {
            what: "spawn frame thread".into(),
            source: e,
        })?;
    Ok((bridge, frame_rx))
}

/// The encoder's steering: the rate last given to it and the key-frame requests it serves.
/// One per encoder (a WHEP sender shares it between its viewers). When a target reaches the
/// encoder is the session's policy ([`SenderEvent::TargetBitrate`]), not this driver's.
pub(crate) struct Steering {
    pub(crate) applied: Bitrate,
    pub(crate) key_frame_requests: u64,
    key_frame_pending: bool,
    last_forced_key_frame: Option<Instant>,
    key_frame_min_interval: Duration,
    /// Times the encoder made no frame for [`ENCODER_STALL`] while raw frames reached it.
    pub(crate) encoder_stalls: u64,
    /// The encoder's output and capture counts when its output last moved, and when.
    last_output: (u64, u64, Instant),
    stalled: bool,
    /// When the stalled encoder was last restarted.
    last_restart: Option<Instant>,
    /// Test only: when to wedge the encoder (`SenderConfig::wedge_encoder_at`), and the
    /// wedge, held for good as a wedged pipeline stays wedged: only a rebuilt encoder makes
    /// frames again.
    #[cfg(feature = "testing")]
    wedge: (Option<Instant>, Option<cg_media::testing::Wedge>),
}

/// An encoder that has made no frame for this long while its source captured frames is
/// stalled: a pipeline wedged in renegotiation, or a CPU too starved to encode. Thirty frame
/// intervals at 30 fps; the frame dropper and a lower frame rate never skip that many in a row.
pub(crate) const ENCODER_STALL: Duration = Duration::from_secs(1);

/// A stalled encoder is restarted when the stall is noticed and again this often while it
/// stays stalled (a rebuild that did not take, a host still starved): each rebuild costs a
/// pipeline's start and a key frame, and a second of nothing is already a freeze.
pub(crate) const ENCODER_RESTART_RETRY: Duration = Duration::from_secs(5);

impl Steering {
    pub(crate) fn new(config: &SenderConfig) -> Steering {
        Steering {
            applied: config.start_bitrate,
            key_frame_requests: 0,
            key_frame_pending: false,
            last_forced_key_frame: None,
            key_frame_min_interval: config.key_frame_min_interval,
            encoder_stalls: 0,
            last_output: (0, 0, Instant::now()),
            stalled: false,
            last_restart: None,
            #[cfg(feature = "testing")]
            wedge: (config.wedge_encoder_at.map(|d| Instant::now() + d), None),
        }
    }

    /// Watches the encoder (once a statistics interval) and restarts it when
    /// [`Self::watch_encoder`] says so.
    pub(crate) fn watch(&mut self, encoder: &Encoder, now: Instant) {
        #[cfg(feature = "testing")]
        if self.wedge.0.is_some_and(|at| now >= at) {
            self.wedge = (None, cg_media::testing::wedge(encoder));
            tracing::warn!(wedged = self.wedge.1.is_some(), "--wedge-encoder-at");
        }
        let e = encoder.stats();
        if self.watch_encoder((e.frames_out, e.frames_captured), now) {
            encoder.restart();
        }
    }

    /// Checks the encoder's progress on its counters of frames made and captured, read
    /// `now`: a stall is counted and logged, with what every thread of the process is
    /// doing, once when it is noticed. A source that captured nothing (a paused camera, a
    /// file at its end) stalls nothing. Returns whether to restart the encoder: when the
    /// stall is noticed, and every [`ENCODER_RESTART_RETRY`] while it lasts.
    pub(crate) fn watch_encoder(
        &mut self,
        (frames_out, frames_captured): (u64, u64),
        now: Instant,
    ) -> bool {
        let (out, captured, at) = self.last_output;
        if frames_out != out || frames_captured == captured {
            // Frames made, or none to make: the clock starts again.
            if self.stalled {
                tracing::warn!(
                    stalled_ms = now.saturating_duration_since(at).as_secs_f64() * 1e3,
                    "the encoder makes frames again"
                );
            }
            self.last_output = (frames_out, frames_captured, now);
            self.stalled = false;
            false
        } else if !self.stalled && now.saturating_duration_since(at) >= ENCODER_STALL {
            self.stalled = true;
            self.encoder_stalls += 1;
            tracing::warn!(
                frames_out,
                captured_since = frames_captured.saturating_sub(captured),
                threads = %cg_app::watch::thread_picture(None),
                "the encoder has made no frame for {ENCODER_STALL:?} while its source captured frames: restarting it"
            );
            self.last_restart = Some(now);
            true
        } else if self.stalled
            && self
                .last_restart
                .is_some_and(|t| now.saturating_duration_since(t) >= ENCODER_RESTART_RETRY)
        {
            tracing::warn!("the encoder is still stalled: restarting it again");
            self.last_restart = Some(now);
            true
        } else {
            false
        }
    }

    /// Gives the encoder `rate` unless it has it already.
    pub(crate) fn apply(&mut self, encoder: &Encoder, rate: Bitrate) {
        if rate != self.applied {
            encoder.set_target_bitrate(rate);
            self.applied = rate;
        }
    }

    /// A session's event: targets and key-frame requests reach the encoder, breaker changes
    /// the log.
    pub(crate) fn on_event(&mut self, encoder: &Encoder, event: SenderEvent) {
        match event {
            SenderEvent::KeyFrameRequested(reason) => {
                tracing::debug!(?reason, "key frame requested");
                self.want_key_frame(encoder);
            }
            SenderEvent::TargetBitrate(rate) => self.apply(encoder, rate),
            SenderEvent::CircuitBreaker(b) => tracing::warn!(?b, "circuit breaker"),
            _ => {}
        }
    }

    /// A key frame is wanted (a receiver's request, a queue discard, a new viewer).
    pub(crate) fn want_key_frame(&mut self, encoder: &Encoder) {
        self.key_frame_requests += 1;
        self.key_frame_pending = true;
        self.serve_key_frame(encoder);
    }

    /// A key frame forced now, not held back by `key_frame_min_interval` (which keeps one
    /// lossy viewer's PLIs from forcing key frame after key frame): for viewers that
    /// connected, each of which needs a key frame sent after it connected (one forced before
    /// never reaches it, and the viewer would wait up to that interval, 15 frames at 30 fps,
    /// for a picture; viewers that connect in one pass share one), and for a session whose
    /// driver was skipped ([`FrameFeed::wants_key_frame`]).
    pub(crate) fn key_frame_now(&mut self, encoder: &Encoder) {
        self.key_frame_requests += 1;
        self.key_frame_pending = true;
        self.last_forced_key_frame = None;
        self.serve_key_frame(encoder);
    }

    /// Forces a key frame if one is wanted and the last forced one is old enough (else the
    /// statistics tick serves it later).
    pub(crate) fn serve_key_frame(&mut self, encoder: &Encoder) {
        let now = Instant::now();
        let due = self
            .last_forced_key_frame
            .is_none_or(|t| now.saturating_duration_since(t) >= self.key_frame_min_interval);
        if self.key_frame_pending && due {
            self.key_frame_pending = false;
            self.last_forced_key_frame = Some(now);
            if let Err(e) = encoder.request_key_frame() {
                tracing::warn!(%e, "key-frame request failed");
            }
        }
    }
}

/// A session whose [`SenderSession`] the sampler can read: the plain session, or one behind
/// a WebRTC peer.
pub(crate) trait HasSender: cg_net::Session {
    fn sender(&mut self) -> &mut SenderSession;
}

impl HasSender for SenderSession {
    fn sender(&mut self) -> &mut SenderSession {
        self
    }
}

impl HasSender for cg_webrtc::WebRtcSession<SenderSession> {
    fn sender(&mut self) -> &mut SenderSession {
        self.inner_mut()
    }
}

/// A frame that has waited this long for its driver is not followed by more: the driver is
/// stalled (its runtime worker descheduled or blocked in the kernel), its viewer is frozen by
/// WebRTC's rule already (a gap over max(3 frame intervals, mean + 150 ms)), and frames queued
/// behind it would reach the viewer as a backlog, late. Shorter waits (a busy host's
/// scheduling delay) are ridden out: those frames arrive late but whole, where a skip would
/// cost a key frame.
const MAX_DRIVER_WAIT: Duration = Duration::from_millis(200);

/// Hand times remembered: the driver's command queue holds no more.
const HANDED_KEPT: usize = 64;

/// A key frame asked for after a skip is asked for again if none has come this long after.
const KEY_FRAME_RETRY: Duration = Duration::from_secs(1);

/// Hands encoded frames to one session's driver without waiting for it: a loop that feeds
/// several viewers is never held by one whose driver is stalled, and a stalled driver gets no
/// backlog. A skipped frame breaks the picture's chain of references, so after a skip the
/// feed hands no frame until a key frame, and asks for that key frame
/// ([`FrameFeed::wants_key_frame`]) once the driver has taken what it was handed: a key frame
/// asked for while it is still stalled would be skipped too.
pub(crate) struct FrameFeed {
    /// Frames handed to the driver that it has not taken yet (or dropped unrun).
    waiting: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    /// Whether the session heard its feedback when it last took a frame (a WHEP viewer whose
    /// feedback stopped does not steer the shared encoder).
    hears: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// When the last frames were handed, oldest first (at most [`HANDED_KEPT`]): the driver
    /// takes them in order, so the untaken ones are the last `waiting`.
    handed: std::collections::VecDeque<Instant>,
    /// A frame was skipped: none is handed until a key frame.
    needs_key: bool,
    /// When that key frame was asked for.
    key_asked: Option<Instant>,
    /// Frames not handed: skipped while the driver was stalled, or held back after a skip
    /// until a key frame.
    pub(crate) skipped: u64,
}

/// What became of a frame given to a [`FrameFeed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fed {
    /// The driver has it.
    Handed,
    /// Not handed: the driver is stalled, or a frame was skipped and no key frame came since.
    Skipped,
    /// The driver has stopped.
    Stopped,
}

/// Counts a handed frame as taken when the driver has run it, or dropped it unrun.
struct Taken(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl Drop for Taken {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

impl FrameFeed {
    /// A feed to a session that hears its feedback until it says otherwise.
    pub(crate) fn new() -> FrameFeed {
        FrameFeed {
            waiting: Default::default(),
            hears: std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true)),
            handed: std::collections::VecDeque::with_capacity(HANDED_KEPT),
            needs_key: false,
            key_asked: None,
            skipped: 0,
        }
    }

    /// Whether a frame handed before has waited [`MAX_DRIVER_WAIT`] for the driver at `now`.
    pub(crate) fn stalled(&self, now: Instant) -> bool {
        let waiting = self.waiting.load(std::sync::atomic::Ordering::Acquire);
        waiting > 0
            && self
                .handed
                .len()
                .checked_sub(waiting)
                .and_then(|i| self.handed.get(i))
                .is_none_or(|&t| now.saturating_duration_since(t) >= MAX_DRIVER_WAIT)
    }

    /// Hands `frame` to the session behind `handle` at `now`, unless the driver is
    /// [`stalled`](Self::stalled) or a key frame is awaited; a frame the session refuses is
    /// logged and lost.
    pub(crate) fn push<S: HasSender>(
        &mut self,
        handle: &DriverHandle<S>,
        frame: &cg_media::EncodedFrame,
        codec: cg_rtp::Codec,
        now: Instant,
    ) -> Fed {
        use std::sync::atomic::Ordering;
        if handle.is_stopped() {
            return Fed::Stopped;
        }
        if self.stalled(now) {
            self.skip();
            return Fed::Skipped;
        }
        if self.needs_key && !frame.key_frame {
            self.skipped += 1;
            return Fed::Skipped;
        }
        let capture_time = frame.capture_time.to_instant();
        let f = cg_rtp::EncodedFrame {
            data: frame.data.clone(),
            capture_time,
            // cg-media stamps a frame as it enters the encoding pipeline and again as it leaves.
            encoded: Some((capture_time, capture_time + frame.encode_latency)),
            key_frame: frame.key_frame,
            codec,
        };
        self.waiting.fetch_add(1, Ordering::AcqRel);
        let (taken, hears) = (Taken(self.waiting.clone()), self.hears.clone());
        let handed = handle.try_call(move |s: &mut S, now| {
            let _taken = taken;
            let s = s.sender();
            if let Err(e) = s.push_frame(f, now) {
                tracing::warn!(%e, "frame not packetized");
            }
            hears.store(s.hears_feedback(), Ordering::Release);
        });
        match handed {
            Ok(true) => {
                if self.handed.len() >= HANDED_KEPT {
                    self.handed.pop_front();
                }
                self.handed.push_back(now);
                if frame.key_frame {
                    self.needs_key = false;
                    self.key_asked = None;
                }
                Fed::Handed
            }
            Ok(false) => {
                self.skip();
                Fed::Skipped
            }
            Err(_) => Fed::Stopped,
        }
    }

    fn skip(&mut self) {
        self.skipped += 1;
        self.needs_key = true;
        self.key_asked = None;
    }

    /// Whether to ask the encoder for a key frame now, without its usual least interval: a
    /// frame was skipped, the driver has taken everything it was handed, and no key frame
    /// has been asked for since (or none came within [`KEY_FRAME_RETRY`]).
    pub(crate) fn wants_key_frame(&mut self, now: Instant) -> bool {
        let drained = self.waiting.load(std::sync::atomic::Ordering::Acquire) == 0;
        let due = self
            .key_asked
            .is_none_or(|t| now.saturating_duration_since(t) >= KEY_FRAME_RETRY);
        if self.needs_key && drained && due {
            self.key_asked = Some(now);
            return true;
        }
        false
    }

    /// Whether the session heard its feedback when it last took a frame.
    pub(crate) fn hears_feedback(&self) -> bool {
        self.hears.load(std::sync::atomic::Ordering::Acquire)
    }
}

/// One session's statistics between samples.
pub(crate) struct Sampler {
    start: Instant,
    controller: String,
    last_rtp_bytes: u64,
    last_sample: Instant,
    interval: Duration,
    pub(crate) last: Stats,
}

impl Sampler {
    pub(crate) fn new(config: &SenderConfig, start: Instant) -> Sampler {
        Sampler {
            start,
            controller: config.controller.name().to_owned(),
            last_rtp_bytes: 0,
            last_sample: start,
            interval: config.stats_interval,
            last: Stats::default(),
        }
    }

    /// The session's statistics now, or `None` if its driver has stopped, is stalled (see
    /// [`FrameFeed::stalled`]) or has not answered within a statistics interval: a stalled
    /// driver does not hold the loop.
    pub(crate) async fn sample<S: HasSender>(
        &mut self,
        handle: &DriverHandle<S>,
        feed: &FrameFeed,
        encoder: &Encoder,
        steering: &Steering,
    ) -> Option<Stats> {
        if feed.stalled(Instant::now()) {
            return None;
        }
        let query = handle.query(|s: &mut S, _| {
            let s = s.sender();
            (
                s.stats().clone(),
                s.controller().stats(),
                s.target_bitrate(),
                s.circuit_breaker_tripped(),
            )
        });
        let (s, c, target, tripped) = tokio::time::timeout(self.interval, query)
            .await
            .ok()?
            .ok()?;
        let net = handle.stats();
        let enc = encoder.stats();
        let now = Instant::now();
        let dt = now
            .saturating_duration_since(self.last_sample)
            .as_secs_f64();
        let rate = if dt > 0.0 {
            (s.rtp_bytes.saturating_sub(self.last_rtp_bytes) as f64 * 8.0 / dt) as u64
        } else {
            0
        };
        self.last_rtp_bytes = s.rtp_bytes;
        self.last_sample = now;
        let rtt = c.rtt.or(s.rtt);
        Some(Stats {
            t: now.saturating_duration_since(self.start).as_secs_f64(),
            mono_ns: HostTime::now().as_nanos(),
            controller: self.controller.clone(),
            encoder: encoder.kind().short_name().to_owned(),
            viewer: None,
            send_rate_bps: rate,
            target_bps: target.as_bps(),
            pacing_bps: c.pacing.as_bps(),
            encoder_target_bps: steering.applied.as_bps(),
            encoder_bps: enc.produced_bitrate.as_bps(),
            rtt_ms: rtt.map(ms),
            loss: s.fraction_lost,
            qdelay_ms: c.queue_delay.map(ms),
            cwnd_bytes: c.cwnd.map(|w| w.as_bytes()),
            in_flight_bytes: c.bytes_in_flight.map(|w| w.as_bytes()),
            remb_bps: s.remb.map(|r| r.as_bps()),
            frames_encoded: enc.frames_out,
            frames_sent: s.frames_pushed,
            frames_dropped: s.frames_dropped + enc.dropped_backpressure + feed.skipped,
            frames_skipped: enc.dropped_rate + enc.skipped_frame_rate,
            width: enc.format.width,
            height: enc.format.height,
            fps: enc.format.frame_rate,
            format_changes: enc.format_changes,
            encode_usage: enc.encode_usage,
            qp: enc.mean_qp,
            key_frames: enc.key_frames,
            key_frame_requests: steering.key_frame_requests,
            media_packets: s.media_packets,
            retransmissions: s.retransmissions,
            padding_packets: s.padding_packets,
            rtcp_received: s.rtcp_received,
            send_errors: net.send_errors,
            foreign_datagrams: net.foreign_datagrams,
            malformed: s.malformed,
            breaker_open: tripped,
            breaker_trips: s.breaker_trips,
            feedback_timeouts: s.feedback_timeouts,
            rss_kib: cg_host::rss_kib(None),
            nice: cg_host::thread_nice(),
            encoder_stalls: steering.encoder_stalls,
            encoder_restarts: enc.restarts,
            loop_stalls: self.last.loop_stalls,
            longest_loop_stall_ms: self.last.longest_loop_stall_ms,
            driver_skips: feed.skipped,
            extra: c.extra.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect(),
        })
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The cg-rtp session configuration of `config`, starting at `start`.
/// `ntp_at_start` is read now: build the session right after.
pub(crate) fn rtp_config(config: &SenderConfig) -> cg_rtp::SenderConfig {
    cg_rtp::SenderConfig {
        ecn: config.ecn,
        rtcp_timeout: config.rtcp_timeout,
        feedback_loss: match config.feedback_timeout {
            None => cg_rtp::FeedbackLossResponse::Auto,
            Some(d) if d.is_zero() => cg_rtp::FeedbackLossResponse::Off,
            Some(d) => cg_rtp::FeedbackLossResponse::After(d),
        },
        ntp_at_start: crate::ntp_now(),
        ssrc: config.ssrc,
        rtx_ssrc: config.ssrc.wrapping_add(1),
        pacer: cg_rtp::pacer::PacerConfig {
            max_queue_delay: config.pacer_queue_bound(),
            ..cg_rtp::pacer::PacerConfig::default()
        },
        encoder_target: cg_cc::EncoderTargetConfig {
            min: config.min_bitrate,
            threshold: config.rate_change_threshold,
        },
        playout_delay: config.playout_delay,
        ..cg_rtp::SenderConfig::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(seq: u64) -> cg_media::EncodedFrame {
        cg_media::EncodedFrame {
            data: axum::body::Bytes::from_static(&[0x10, 0x02, 0x00, 0x9d, 0x01, 0x2a]),
            codec: cg_media::Codec::Vp8,
            capture_time: HostTime::now(),
            key_frame: seq == 0,
            pts: Duration::from_millis(33 * seq),
            index: seq,
            seq,
            encode_latency: Duration::ZERO,
        }
    }

    #[test]
    fn an_encoder_that_makes_no_frame_for_a_second_while_frames_are_captured_stalls_once_and_is_restarted()
     {
        let mut steering = Steering::new(&SenderConfig::default());
        let t0 = steering.last_output.2;
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let counts = |out: u64, captured: u64| (out, captured);
        // Frames made: no stall, however long the run.
        for i in 1..=20 {
            steering.watch_encoder(counts(i * 3, i * 3), at(i * 100));
        }
        assert_eq!(steering.encoder_stalls, 0);
        // Nothing made from 2 s on while frames are captured: one stall once a second has
        // passed, not one per check; a restart then, and again every 5 s while it lasts.
        for i in 21..=100 {
            let restart = steering.watch_encoder(counts(60, i * 3), at(i * 100));
            let want = u64::from(i >= 30);
            assert_eq!(steering.encoder_stalls, want, "at {} ms", i * 100);
            assert_eq!(restart, [30, 80].contains(&i), "restart at {} ms", i * 100);
        }
        // Frames again, then a second stall is a second count, restarted when noticed.
        assert!(!steering.watch_encoder(counts(61, 303), at(10_100)));
        let restarts: Vec<u64> = (102..=120)
            .filter(|&i| steering.watch_encoder(counts(61, i * 3), at(i * 100)))
            .collect();
        assert_eq!(steering.encoder_stalls, 2);
        assert_eq!(restarts, [111]);
        // A source that captured nothing for seconds: nothing to encode, no stall.
        let mut idle = Steering::new(&SenderConfig::default());
        let t0 = idle.last_output.2;
        for i in 1..=50 {
            idle.watch_encoder(counts(0, 0), t0 + Duration::from_millis(i * 100));
        }
        // Captured again: the encoder has its second from then.
        idle.watch_encoder(counts(0, 3), t0 + Duration::from_millis(5_100));
        assert_eq!(idle.encoder_stalls, 0);
        idle.watch_encoder(counts(0, 33), t0 + Duration::from_millis(6_100));
        assert_eq!(idle.encoder_stalls, 1);
    }

    #[test]
    fn the_watch_restarts_a_wedged_encoder_and_the_frames_come_back() {
        let (encoder, rx) = Encoder::start(cg_media::EncoderConfig {
            width: 320,
            height: 240,
            start_bitrate: Bitrate::kbps(500),
            ..cg_media::EncoderConfig::default()
        })
        .expect("a VP8 pipeline starts");
        let wait = Duration::from_secs(10);
        for _ in 0..10 {
            rx.recv_timeout(wait).expect("frames");
        }
        let wedge = cg_media::testing::wedge(&encoder).expect("a running pipeline");
        while rx.recv_timeout(Duration::from_millis(500)).is_ok() {}
        let mut steering = Steering::new(&SenderConfig::default());
        let t0 = Instant::now();
        steering.watch(&encoder, t0);
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            rx.try_recv().is_err(),
            "wedged: no frame ({:?})",
            encoder.stats()
        );
        // Read a second and a half later: the stall is noticed and the encoder restarted.
        steering.watch(&encoder, t0 + Duration::from_millis(1_500));
        assert_eq!(steering.encoder_stalls, 1);
        let first = rx.recv_timeout(wait).expect("frames after the restart");
        assert!(first.key_frame);
        assert_eq!(encoder.stats().restarts, 1);
        encoder.stop();
        drop(wedge);
    }

    #[tokio::test]
    async fn a_driver_stalled_for_200ms_gets_no_more_frames_until_a_key_frame_asked_once_it_is_back()
     {
        let config = SenderConfig::default();
        let socket = UdpSocket::bind(&SocketConfig {
            bind: "127.0.0.1:0".parse().unwrap(),
            ..SocketConfig::default()
        })
        .unwrap();
        let peer = socket.local_addr();
        let t0 = Instant::now();
        let session = SenderSession::with_controller_config(
            rtp_config(&config),
            config.controller_config().as_ref(),
            t0,
        )
        .unwrap();
        let (driver, handle) = Driver::new(socket, session, DriverConfig::new(peer)).unwrap();
        let codec = cg_rtp::Codec::Vp8;
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let key = |mut f: cg_media::EncodedFrame| {
            f.key_frame = true;
            f
        };
        let mut feed = FrameFeed::new();
        // The driver is not running: it takes nothing. Frames wait for it (a scheduling delay
        // is ridden out) until the first has waited 200 ms; from then on each is skipped at
        // once (the caller is not held), a key frame too, and none is asked for yet: it would
        // be skipped as well.
        for i in 0..7 {
            assert_eq!(
                feed.push(&handle, &frame(i), codec, at(i * 33)),
                Fed::Handed,
                "frame {i}"
            );
            assert!(!feed.wants_key_frame(at(i * 33)));
        }
        assert!(!feed.stalled(at(199)));
        assert!(feed.stalled(at(200)));
        assert_eq!(feed.push(&handle, &frame(7), codec, at(200)), Fed::Skipped);
        assert_eq!(
            feed.push(&handle, &key(frame(8)), codec, at(233)),
            Fed::Skipped
        );
        assert!(!feed.wants_key_frame(at(233)));
        // Once it runs it takes the frames handed; the feed asks for a key frame, once, and
        // hands nothing before it.
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(driver.run(async move {
            let _ = stopped.await;
        }));
        let pushed = handle
            .query(|s: &mut SenderSession, _| s.stats().frames_pushed)
            .await
            .unwrap();
        assert_eq!(pushed, 7);
        assert!(!feed.stalled(at(266)));
        assert!(feed.wants_key_frame(at(266)));
        assert!(!feed.wants_key_frame(at(270)));
        assert_eq!(feed.push(&handle, &frame(9), codec, at(300)), Fed::Skipped);
        assert_eq!(feed.skipped, 3);
        // No key frame within a second: asked for again.
        assert!(feed.wants_key_frame(at(1_266)));
        assert_eq!(
            feed.push(&handle, &key(frame(10)), codec, at(1_300)),
            Fed::Handed
        );
        assert_eq!(
            feed.push(&handle, &frame(11), codec, at(1_333)),
            Fed::Handed
        );
        assert!(!feed.wants_key_frame(at(2_500)));
        let _ = handle.query(|_: &mut SenderSession, _| ()).await;
        let _ = stop.send(());
        let _ = task.await;
        assert_eq!(
            feed.push(&handle, &frame(12), codec, at(2_600)),
            Fed::Stopped
        );
    }
}
