//! WHEP mode: cg-send serves its stream to WebRTC viewers — browsers, or `cg-recv --webrtc
//! whep-client` — over HTTP signalling (draft-ietf-wish-whep).
//!
//! One encoder feeds every viewer. Each viewer that posts an offer gets its own UDP socket
//! (on [`WhepConfig::media_ip`], port chosen by the kernel, the answer's one host candidate), its
//! own WebRTC peer (ICE, DTLS-SRTP), its own cg-rtp session with its own congestion
//! controller, and its own cg-net driver. The encoder follows the **lowest** target of the
//! live viewers, so no viewer's path is overrun (the others get less than they could; a
//! per-viewer encoder or simulcast would lift that). A viewer is live while ICE holds its
//! path (`connected`, not `disconnected`) and its feedback arrives (its rate is not halved
//! for missing feedback, and its RTP circuit breaker is closed): a viewer gone silent keeps
//! its session until ICE gives up, but its halved or zero target does not hold the encoder
//! down for the others. A viewer that connects gets a key frame, and no frame before it (the
//! delta frames already in the encoder reference pictures it never had: an SFU's rule too);
//! a viewer that leaves (`DELETE`, ICE or DTLS failure, silence until ICE gives up, or no
//! connection within [`WhepConfig::connect_timeout`] of its offer) is dropped with its socket and does not
//! disturb the others. The loop hands each viewer's driver its frames without waiting for
//! it: a viewer whose driver stalls (its runtime worker descheduled or blocked in the kernel)
//! misses frames until a key frame, and neither holds the others nor gets a backlog.
//!
//! The viewer page at `/` plays the stream and posts `getStats()` back to
//! `/whep/{id}/stats`; with [`WhepConfig::report_file`] each report is written as one JSON
//! line `{"viewer": id, "t": seconds, "mono_ns": CLOCK_MONOTONIC ns, "report": …}`. With a
//! source cg-send can make again (`--stamp` and the camera or game pattern) the page of a live
//! viewer may post pictures it showed to `/whep/{id}/picture`; cg-send scores each against the
//! source picture
//! its stamp names (cg-media's `Scorer`, the one cg-recv uses) and answers
//! `{"frame": n, "psnr_db": x}`.

use std::collections::BTreeMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use cg_app::watch::LoopWatch;
use cg_media::Encoder;
use cg_net::{Driver, DriverConfig, DriverHandle, SocketConfig, UdpSocket};
use cg_rtp::{SenderEvent, SenderSession};
use cg_types::Bitrate;
use cg_webrtc::http::{PictureRefused, SessionHost};
use cg_webrtc::{IceTimeouts, PeerConfig, PeerState, WebRtcEvent, WebRtcPeer, WebRtcSession};
use tokio::sync::{mpsc, oneshot};

use crate::session::{Fed, FrameFeed, Sampler, Steering};
use crate::{Error, SenderConfig, Stats};

/// The default [`WhepConfig::connect_timeout`].
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The viewer page served at `/`.
pub const VIEWER_PAGE: &str = include_str!("../assets/viewer.html");

/// Where the WHEP server listens and where its media goes.
#[derive(Debug, Clone, PartialEq)]
pub struct WhepConfig {
    /// HTTP address of the WHEP endpoint (`POST /whep`) and the viewer page (`GET /`).
    pub http: SocketAddr,
    /// The address media sockets bind to, one per viewer: the ICE host candidate viewers
    /// reach. Must be a concrete address of this host.
    pub media_ip: IpAddr,
    /// Where viewer pages' statistics reports go, one JSON line each; `None` drops them.
    pub report_file: Option<PathBuf>,
    /// A viewer whose peer has not connected this long after its offer is dropped with its
    /// socket: a browser that went away before ICE, a blocked path, a DTLS handshake that
    /// never completes (ICE's own failure comes later). Default [`CONNECT_TIMEOUT`], 10 s.
    pub connect_timeout: Duration,
    /// A connected viewer whose ICE is silent this long (no check of its, no answer to ours;
    /// see [`IceTimeouts`]) is `disconnected` and no longer steers the encoder; `failed` later,
    /// it is dropped with its socket. Default 5 s + 25 s.
    pub ice_timeouts: IceTimeouts,
}

impl WhepConfig {
    /// Serves at `http`, media on `media_ip`, with the defaults.
    pub fn new(http: SocketAddr, media_ip: IpAddr) -> Self {
        WhepConfig {
            http,
            media_ip,
            report_file: None,
            connect_timeout: CONNECT_TIMEOUT,
            ice_timeouts: IceTimeouts::default(),
        }
    }
}

type ViewerSession = WebRtcSession<SenderSession>;

/// A WHEP sender: the HTTP listener is bound, nothing runs yet.
pub struct WhepSender {
    config: SenderConfig,
    whep: WhepConfig,
    listener: std::net::TcpListener,
    stats_tx: Option<mpsc::Sender<Stats>>,
}

impl WhepSender {
    /// Checks the configuration and the encoder, and binds the HTTP listener.
    pub fn new(config: SenderConfig, whep: WhepConfig) -> Result<WhepSender, Error> {
        config.validate()?;
        cg_media::EncoderKind::from_name(&config.codec)?.check_available()?;
        if whep.media_ip.is_unspecified() {
            return Err(Error::Config(format!(
                "media address {} is not an address viewers can reach: give this host's address (--bind)",
                whep.media_ip
            )));
        }
        let listener = std::net::TcpListener::bind(whep.http).map_err(|e| Error::Bind {
            addr: whep.http,
            reason: e.to_string(),
        })?;
        listener.set_nonblocking(true).map_err(|e| Error::Io {
            what: "HTTP listener".into(),
            source: e,
        })?;
        Ok(WhepSender {
            config,
            whep,
            listener,
            stats_tx: None,
        })
    }

    /// The bound HTTP address.
    pub fn http_addr(&self) -> SocketAddr {
        self.listener.local_addr().unwrap_or(self.whep.http)
    }

    /// Statistics, one record per viewer per interval (with [`Stats::viewer`] set).
    pub fn stats(&mut self, capacity: usize) -> mpsc::Receiver<Stats> {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        self.stats_tx = Some(tx);
        rx
    }

    /// Serves viewers until `shutdown` completes; then closes every peer and stops the
    /// encoder. Returns the last record of the last viewer (or an empty one).
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> Result<Stats, Error> {
        let WhepSender {
            config,
            whep,
            listener,
            stats_tx,
        } = self;
        let start = Instant::now();
        let (encoder, frames) = Encoder::start(config.encoder_config())?;
        let codec = encoder.kind().codec();
        let model = encoder.kind() == cg_media::EncoderKind::Model;
        let (cmd_tx, mut cmds) = mpsc::channel::<Command>(16);
        let host = Host {
            cmds: cmd_tx,
            next_id: Arc::new(AtomicU64::new(1)),
            config: Arc::new(config.clone()),
            media_ip: whep.media_ip,
            ice_timeouts: whep.ice_timeouts,
            codec,
            model,
            scorer: config
                .encoder_config()
                .reference()
                .map(cg_media::Scorer::spawn)
                .transpose()?
                .map(Arc::new),
        };
        let listener = tokio::net::TcpListener::from_std(listener).map_err(|e| Error::Io {
            what: "HTTP listener".into(),
            source: e,
        })?;
        let app = cg_webrtc::http::router("/whep", VIEWER_PAGE, host);
        let (stop_http, http_stopped) = oneshot::channel::<()>();
        let http = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = http_stopped.await;
                })
                .await
        });
        let reports = whep
            .report_file
            .as_deref()
            .map(|p| Reports::create(p, start))
            .transpose()?;

        let (bridge, mut frame_rx) = crate::session::frame_bridge(frames)?;

        let mut steering = Steering::new(&config);
        encoder.set_target_bitrate(config.start_bitrate);
        let mut viewers: BTreeMap<String, Viewer> = BTreeMap::new();
        let mut last = Stats::default();
        let mut tick = tokio::time::interval(config.stats_interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tokio::pin!(shutdown);
        let watch = LoopWatch::start("cg-send", crate::session::watch_threshold(&config));
        let beat = |step| watch.as_ref().inspect(|w| w.beat(step));
        let failure = loop {
            beat("wait");
            tokio::select! {
                biased;
                () = &mut shutdown => break None,
                cmd = cmds.recv() => match cmd {
                    Some(Command::Add { id, driver, handle }) => {
                        beat("command: add a viewer");
                        let (stop, stopped) = oneshot::channel::<()>();
                        let task = tokio::spawn(driver.run(async move { let _ = stopped.await; }));
                        tracing::info!(%id, "viewer joined");
                        viewers.insert(id.clone(), Viewer {
                            handle,
                            stop: Some(stop),
                            task,
                            state: PeerState::Connecting,
                            created: Instant::now(),
                            sampler: Sampler::new(&config, start),
                            target: config.start_bitrate.max(config.min_bitrate),
                            feed: FrameFeed::new(),
                            keyed: false,
                        });
                    }
                    Some(Command::Delete { id, reply }) => {
                        beat("command: delete a viewer");
                        let found = match viewers.remove(&id) {
                            Some(v) => { v.close().await; true }
                            None => false,
                        };
                        let _ = reply.send(found);
                    }
                    Some(Command::Report { id, json, reply }) => {
                        beat("command: a viewer report");
                        let found = viewers.contains_key(&id);
                        if found && let (Some(r), Some(json)) = (reports.as_ref(), json) {
                            r.write(id, json);
                        }
                        let _ = reply.send(found);
                    }
                    None => {}
                },
                frame = frame_rx.recv() => {
                    let Some(frame) = frame else {
                        let why = encoder.stats().error.unwrap_or_else(|| "frame channel closed".into());
                        break Some(Error::Media(cg_media::Error::Pipeline(format!("encoder stopped: {why}"))));
                    };
                    beat("frame: push to the drivers");
                    let (mut any, mut key_frame, now) = (false, false, Instant::now());
                    for v in viewers.values_mut().filter_map(|v| v.takes(&frame).then_some(v)) {
                        any |= v.feed.push(&v.handle, &frame, codec, now) == Fed::Handed;
                        key_frame |= v.feed.wants_key_frame(now);
                    }
                    if key_frame {
                        steering.key_frame_now(&encoder);
                    }
                    beat("frame: viewers' events");
                    drain_events(&mut viewers, &mut steering, &encoder, whep.connect_timeout).await;
                    beat("frame: steer the encoder");
                    // The shared encoder follows the slowest live viewer. A viewer whose
                    // feedback stopped (its rate halved for it, or its breaker open) is not
                    // live: it does not hold the others down. Nobody live: the encoder idles
                    // at its minimum, as in plain mode.
                    let lowest = viewers
                        .values()
                        .filter(|v| v.state == PeerState::Connected && v.feed.hears_feedback())
                        .map(|v| v.target)
                        .min();
                    match lowest {
                        Some(t) => steering.apply(&encoder, t),
                        None if any => steering.apply(&encoder, config.min_bitrate),
                        None => {}
                    }
                }
                _ = tick.tick() => {
                    beat("tick: viewers' events");
                    drain_events(&mut viewers, &mut steering, &encoder, whep.connect_timeout).await;
                    beat("tick: key frame");
                    steering.serve_key_frame(&encoder);
                    steering.watch(&encoder, Instant::now());
                    beat("tick: sample");
                    for (id, v) in viewers.iter_mut() {
                        let sampled = v.sampler.sample(&v.handle, &v.feed, &encoder, &steering).await;
                        if let Some(mut s) = sampled {
                            s.viewer = Some(id.clone());
                            s.note_stalls(watch.as_ref());
                            if let Some(tx) = &stats_tx {
                                let _ = tx.try_send(s.clone());
                            }
                            v.sampler.last = s.clone();
                            last = s;
                        }
                    }
                }
            }
        };
        for (_, v) in std::mem::take(&mut viewers) {
            v.close().await;
        }
        let _ = stop_http.send(());
        let _ = tokio::time::timeout(Duration::from_secs(2), http).await;
        encoder.stop();
        drop(frame_rx);
        let _ = bridge.join();
        if let Some(r) = reports {
            r.finish();
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(last),
        }
    }
}

/// One viewer's session, run by its own driver task.
struct Viewer {
    handle: DriverHandle<ViewerSession>,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Result<cg_net::Finished<ViewerSession>, cg_net::Error>>,
    /// Where its peer stands; frames go to it once it has connected.
    state: PeerState,
    created: Instant,
    sampler: Sampler,
    /// The encoder target its session last raised ([`SenderEvent::TargetBitrate`]).
    target: Bitrate,
    /// Its frames, handed to its driver without waiting for it.
    feed: FrameFeed,
    /// Whether it has been sent a key frame: its stream starts with one.
    keyed: bool,
}

impl Viewer {
    /// Whether `frame` goes to this viewer: once it has connected, from the first key frame on.
    fn takes(&mut self, frame: &cg_media::EncodedFrame) -> bool {
        takes(self.state, &mut self.keyed, frame.key_frame)
    }

    /// Closes the peer (a DTLS close_notify and an RTCP BYE go out) and stops the driver;
    /// a stalled driver is waited for a second at most.
    async fn close(mut self) {
        let goodbye = async {
            let _ = self
                .handle
                .call(|s: &mut ViewerSession, _| {
                    s.inner_mut().close();
                    let _ = s.peer_mut().close();
                })
                .await;
            let _ = self.handle.query(|_: &mut ViewerSession, _| ()).await;
        };
        let _ = tokio::time::timeout(Duration::from_secs(1), goodbye).await;
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = tokio::time::timeout(Duration::from_secs(2), &mut self.task).await;
    }
}

/// Whether a frame goes to a viewer in `state` that has (`keyed`) or has not yet been sent a
/// key frame; a key frame sent marks it keyed.
fn takes(state: PeerState, keyed: &mut bool, key_frame: bool) -> bool {
    *keyed |= state != PeerState::Connecting && key_frame;
    *keyed && state != PeerState::Connecting
}

/// Takes every viewer's events: a viewer that connects gets a key frame, one that failed or
/// closed is dropped, key-frame requests reach the encoder.
async fn drain_events(
    viewers: &mut BTreeMap<String, Viewer>,
    steering: &mut Steering,
    encoder: &Encoder,
    connect_timeout: Duration,
) {
    let mut gone = vec![];
    let mut joined = false;
    for (id, v) in viewers.iter_mut() {
        while let Some(e) = v.handle.try_next_event() {
            match e {
                WebRtcEvent::State(PeerState::Connected) => {
                    tracing::info!(%id, "viewer connected");
                    joined |= v.state == PeerState::Connecting;
                    v.state = PeerState::Connected;
                }
                WebRtcEvent::State(s @ (PeerState::Failed | PeerState::Closed)) => {
                    tracing::info!(%id, ?s, "viewer gone");
                    gone.push(id.clone());
                }
                WebRtcEvent::State(s) => {
                    tracing::info!(%id, ?s, "viewer's connection");
                    v.state = s;
                }
                WebRtcEvent::Media(SenderEvent::TargetBitrate(rate)) => v.target = rate,
                WebRtcEvent::Media(e) => steering.on_event(encoder, e),
            }
        }
        if v.task.is_finished() {
            gone.push(id.clone());
        } else if v.state == PeerState::Connecting && v.created.elapsed() > connect_timeout {
            tracing::info!(%id, "viewer never connected; dropped");
            gone.push(id.clone());
        }
    }
    if joined {
        steering.key_frame_now(encoder);
    }
    for id in gone {
        if let Some(v) = viewers.remove(&id) {
            v.close().await;
        }
    }
}

/// The viewer reports' file, written by a thread of its own: the session loop stamps each
/// report as it arrives and hands it over, so a slow disk never holds the loop (which feeds
/// every viewer's frames). Each line is flushed as written, so a reader sees whole lines even
/// if the process is killed; [`Reports::finish`] waits until every report handed over is
/// written.
struct Reports {
    start: Instant,
    tx: std::sync::mpsc::Sender<(String, f64, u64, Bytes)>,
    writer: std::thread::JoinHandle<()>,
}

impl Reports {
    fn create(path: &std::path::Path, start: Instant) -> Result<Reports, Error> {
        // The statistics output's JSON-lines file: a line written and flushed per report.
        let mut out = cg_app::output::StatsOutput::new(false, Some(path), true)?;
        let (tx, rx) = std::sync::mpsc::channel::<(String, f64, u64, Bytes)>();
        let writer = std::thread::Builder::new()
            .name("cg-send-reports".into())
            .spawn(move || {
                for (id, t, mono_ns, json) in rx {
                    let Ok(report) = serde_json::from_slice::<serde_json::Value>(&json) else {
                        tracing::debug!(%id, "viewer report is not JSON");
                        continue;
                    };
                    let line = serde_json::json!({
                        "viewer": id, "t": t, "mono_ns": mono_ns, "report": report,
                    });
                    if let Err(e) = out.write(&line, "") {
                        tracing::warn!(%e, "cannot write viewer report");
                    }
                }
            })
            .map_err(|source| Error::Io {
                what: "spawn the viewer reports' writer".into(),
                source,
            })?;
        Ok(Reports { start, tx, writer })
    }

    /// Viewer `id`'s report, stamped now.
    fn write(&self, id: String, json: Bytes) {
        let t = self.start.elapsed().as_secs_f64();
        let _ = self
            .tx
            .send((id, t, cg_media::HostTime::now().as_nanos(), json));
    }

    /// Waits until every report is written.
    fn finish(self) {
        drop(self.tx);
        let _ = self.writer.join();
    }
}

/// What the HTTP side asks of the loop.
enum Command {
    Add {
        id: String,
        driver: Box<Driver<ViewerSession>>,
        handle: DriverHandle<ViewerSession>,
    },
    Delete {
        id: String,
        reply: oneshot::Sender<bool>,
    },
    /// Whether viewer `id` is live, writing its page's statistics report if there is one.
    Report {
        id: String,
        json: Option<Bytes>,
        reply: oneshot::Sender<bool>,
    },
}

/// The HTTP side: answers offers, builds each viewer's session and hands it to the loop.
#[derive(Clone)]
struct Host {
    cmds: mpsc::Sender<Command>,
    next_id: Arc<AtomicU64>,
    config: Arc<SenderConfig>,
    media_ip: IpAddr,
    ice_timeouts: IceTimeouts,
    codec: cg_rtp::Codec,
    /// The model encoder's frames: answered only to a viewer that offers them (cg-recv
    /// `--codec model`; see `cg_webrtc::media::MODEL_ENCODING`).
    model: bool,
    /// Scores the pictures viewer pages post back, when the source can be made again.
    scorer: Option<Arc<cg_media::Scorer>>,
}

impl Host {
    /// Whether viewer `id` is live; its page's statistics `report` is written if it is.
    async fn live(&self, id: String, report: Option<Bytes>) -> bool {
        let (reply, answer) = oneshot::channel();
        let asked = Command::Report {
            id,
            json: report,
            reply,
        };
        self.cmds.send(asked).await.is_ok() && answer.await.unwrap_or(false)
    }
}

impl SessionHost for Host {
    async fn create(&self, offer: String) -> Result<(String, String), cg_webrtc::Error> {
        let c = &self.config;
        let host = |e: String| cg_webrtc::Error::Host(e);
        let socket = UdpSocket::bind(&SocketConfig {
            bind: SocketAddr::new(self.media_ip, 0),
            ecn: c.ecn,
            ..SocketConfig::default()
        })
        .map_err(|e| host(format!("media socket on {}: {e}", self.media_ip)))?;
        let now = Instant::now();
        let peer_cfg = PeerConfig {
            codec: self.codec,
            model: self.model,
            ssrc: c.ssrc,
            rtx_ssrc: c.ssrc.wrapping_add(1),
            media_ecn: c.ecn,
            ice_timeouts: self.ice_timeouts,
            ..PeerConfig::new(socket.local_addr())
        };
        let (peer, answer) = WebRtcPeer::answer(&peer_cfg, &offer, now)?;
        let negotiated = peer
            .negotiated()
            .expect("an answering peer is negotiated")
            .clone();
        let kind = c.controller.feedback_kind();
        negotiated.feedback.require(kind)?;
        let mut rtp = crate::session::rtp_config(c);
        negotiated.apply_to(&mut rtp, kind);
        let session =
            SenderSession::with_controller_config(rtp, c.controller_config().as_ref(), now)
                .map_err(|e| host(e.to_string()))?;
        let (driver, handle) = Driver::new(
            socket,
            WebRtcSession::new(peer, session),
            DriverConfig::learned_peer(),
        )
        .map_err(|e| host(e.to_string()))?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed).to_string();
        self.cmds
            .send(Command::Add {
                id: id.clone(),
                driver: Box::new(driver),
                handle,
            })
            .await
            .map_err(|_| host("the sender is shutting down".into()))?;
        Ok((id, answer))
    }

    async fn delete(&self, id: String) -> bool {
        let (reply, answer) = oneshot::channel();
        self.cmds.send(Command::Delete { id, reply }).await.is_ok() && answer.await.unwrap_or(false)
    }

    async fn report(&self, id: String, json: Bytes) -> bool {
        self.live(id, Some(json)).await
    }

    async fn picture(
        &self,
        id: String,
        width: usize,
        height: usize,
        luma: Bytes,
    ) -> Result<String, PictureRefused> {
        let Some(scorer) = &self.scorer else {
            return Err(PictureRefused::NotScored(
                "cg-send scores pictures only from a source it can make again: --stamp with --pattern camera or game".into(),
            ));
        };
        if !self.live(id, None).await {
            return Err(PictureRefused::NoSession);
        }
        let picture = cg_media::Picture {
            luma: luma.into(),
            stride: width,
            width,
            height,
        };
        let (reply, score) = oneshot::channel();
        scorer
            .try_score(picture, move |s| {
                let _ = reply.send(s);
            })
            .map_err(|_| PictureRefused::Busy)?;
        match score.await {
            Ok(Some(s)) => Ok(serde_json::to_string(&s).unwrap_or_default()),
            Ok(None) => Err(PictureRefused::Unscorable(
                "no readable stamp in the picture".into(),
            )),
            Err(_) => Err(PictureRefused::Busy),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_viewer_gets_frames_once_connected_and_from_a_key_frame_on() {
        let mut keyed = false;
        // Connecting: nothing, not even a key frame (there are no SRTP keys yet).
        assert!(!takes(PeerState::Connecting, &mut keyed, true));
        // Connected: the delta frames still in the encoder are not sent, the key frame is,
        // and every frame after it.
        assert!(!takes(PeerState::Connected, &mut keyed, false));
        assert!(takes(PeerState::Connected, &mut keyed, true));
        assert!(takes(PeerState::Connected, &mut keyed, false));
        // ICE disconnected for a while: still keyed, frames go on (ICE may recover).
        assert!(takes(PeerState::Disconnected, &mut keyed, false));
    }
}
