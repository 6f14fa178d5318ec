//! The running receiver: UDP driver → RTP session → decoder, feedback and PLIs back.

use std::collections::VecDeque;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::mpsc::Receiver as StdReceiver;
use std::time::{Duration, Instant};

use cg_app::Error;
use cg_cc::ReceiveSideEstimator;
use cg_media::{DecodedFrame, Decoder, HostTime};
use cg_net::{Driver, DriverConfig, DriverHandle, SocketConfig, UdpSocket};
use cg_rtp::{ReceiverEvent, ReceiverSession};
use cg_types::Ecn;
use cg_webrtc::{PeerConfig, PeerState, WebRtcEvent, WebRtcPeer, WebRtcSession};
use tokio::io::unix::AsyncFd;
use tokio::sync::{mpsc, oneshot};

use crate::stats::{FreezeRecord, G2gStages};
use crate::{ReceiverConfig, Stats};

/// A receiver session: bound, decoder started, not yet running. See the crate docs.
pub struct Receiver {
    config: ReceiverConfig,
    socket: UdpSocket,
    decoder: Decoder,
    records: StdReceiver<DecodedFrame>,
    stats_tx: Option<mpsc::Sender<Stats>>,
}

/// How one peer's session ended.
enum Ended {
    Shutdown,
    PeerLost,
}

impl Receiver {
    /// Checks `config`, binds the listening socket (a busy port fails now with
    /// [`Error::Bind`]) and starts the decoder.
    pub fn new(config: ReceiverConfig) -> Result<Receiver, Error> {
        config.validate()?;
        let socket = bind(config.listen)?;
        let (decoder, records) = Decoder::start(config.decoder_config())?;
        Ok(Receiver {
            config,
            socket,
            decoder,
            records,
            stats_tx: None,
        })
    }

    /// The bound local address (the port, when `listen` asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.socket.local_addr()
    }

    /// A stream of [`Stats`], one every `stats_interval` while [`run`](Self::run) runs;
    /// samples are dropped when the consumer is `capacity` behind.
    pub fn stats(&mut self, capacity: usize) -> mpsc::Receiver<Stats> {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        self.stats_tx = Some(tx);
        rx
    }

    /// Receives until `shutdown` completes; returns the last statistics. The first datagram
    /// names the sender; a sender silent for `peer_timeout` is replaced by whoever sends next
    /// (a restarted `cg-send`). Must run inside a tokio runtime with I/O and time enabled.
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> Result<Stats, Error> {
        let Receiver {
            config,
            socket,
            decoder,
            records,
            stats_tx,
        } = self;
        let local = socket.local_addr();
        let mut state = State::new(&config, records);
        if let Some(http) = config.whip_http {
            let r = serve_whip(
                http, socket, &config, &decoder, &mut state, &stats_tx, shutdown,
            )
            .await;
            decoder.stop();
            return r;
        }
        if let Some(url) = config.whep_url.clone() {
            let r = view_whep(
                &url, socket, &config, &decoder, &mut state, &stats_tx, shutdown,
            )
            .await;
            decoder.stop();
            return r;
        }
        let mut socket = Some(socket);
        let mut tick = tokio::time::interval(config.stats_interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tokio::pin!(shutdown);
        let result = loop {
            let sock = match socket.take() {
                Some(s) => s,
                None => bind(local)?,
            };
            // Wait for a sender.
            // SAFETY: the `UdpSocket` owns its descriptor and returns the same one from
            // `as_raw_fd` for its whole life; it is taken back out with `into_inner` below.
            let fd = unsafe { AsyncFd::register(sock) }.map_err(|e| Error::Io {
                what: "register socket".into(),
                source: e.into(),
            })?;
            let mut rb = fd.get_ref().recv_batch_buffer(32);
            let peer = loop {
                tokio::select! {
                    biased;
                    () = &mut shutdown => break None,
                    ready = fd.readable() => {
                        let mut guard = ready.map_err(|e| Error::Io { what: "poll socket".into(), source: e })?;
                        match guard.try_io(|s| s.get_ref().recv_batch(&mut rb)) {
                            Ok(Ok(_)) => {
                                if let Some(d) = rb.datagrams().next() {
                                    break Some(d.source);
                                }
                            }
                            Ok(Err(e)) => tracing::debug!(%e, "receive error while waiting"),
                            Err(_would_block) => {}
                        }
                    }
                    _ = tick.tick() => state.emit_idle(&decoder, &stats_tx),
                }
            };
            let Some(peer) = peer else {
                break Ok(state.last.clone());
            };
            let sock = fd.into_inner();
            tracing::info!(%peer, "receiving");
            // The session starts with the datagrams that named the peer.
            let now = Instant::now();
            let mut session =
                ReceiverSession::new(config.rtp_config(), estimator(&config, now)?, now)?;
            for d in rb.datagrams().filter(|d| d.source == peer) {
                let _ = session.handle_input(d.payload, d.ecn.unwrap_or(Ecn::NotEct), d.arrival);
            }
            state.new_session(peer);
            match run_peer(
                sock,
                session,
                DriverConfig::new(peer),
                peer,
                &config,
                &decoder,
                &mut state,
                &stats_tx,
                &mut tick,
                &mut shutdown,
            )
            .await?
            {
                Ended::Shutdown => break Ok(state.last.clone()),
                Ended::PeerLost => {
                    tracing::warn!(%peer, "sender silent; waiting for a new one");
                    continue;
                }
            }
        };
        decoder.stop();
        result
    }
}

/// WHEP client: offers to view `url`'s stream, runs the session until shutdown or the peer
/// ends, then deletes the session's resource.
async fn view_whep(
    url: &str,
    socket: UdpSocket,
    config: &ReceiverConfig,
    decoder: &Decoder,
    state: &mut State,
    stats_tx: &Option<mpsc::Sender<Stats>>,
    shutdown: impl Future<Output = ()>,
) -> Result<Stats, Error> {
    let local = socket.local_addr();
    let now = Instant::now();
    let peer_cfg = peer_config(config, local);
    let webrtc = |e: cg_webrtc::Error| Error::Config(format!("WHEP {url}: {e}"));
    let (mut peer, offer) = WebRtcPeer::offer(&peer_cfg, now).map_err(webrtc)?;
    let (resource, answer) = cg_webrtc::http::post_offer(url, offer)
        .await
        .map_err(webrtc)?;
    let now = Instant::now();
    peer.accept_answer(&answer, now).map_err(webrtc)?;
    let session = webrtc_session(config, &peer, now).map_err(webrtc)?;
    tracing::info!(%resource, "viewing");
    state.new_session(local);
    let mut tick = tokio::time::interval(config.stats_interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tokio::pin!(shutdown);
    let ended = run_peer(
        socket,
        WebRtcSession::new(peer, session),
        DriverConfig::learned_peer(),
        local,
        config,
        decoder,
        state,
        stats_tx,
        &mut tick,
        &mut shutdown,
    )
    .await;
    if let Err(e) = cg_webrtc::http::delete(&resource).await {
        tracing::info!(%e, "the WHEP session could not be deleted");
    }
    match ended? {
        Ended::Shutdown => {}
        Ended::PeerLost => tracing::warn!(%resource, "the WebRTC peer failed or closed"),
    }
    Ok(state.last.clone())
}

/// The publisher page served by a WHIP receiver at `/`.
pub const PUBLISHER_PAGE: &str = include_str!("../assets/publisher.html");

/// A publisher's session, handed by the HTTP side to the receiving loop.
struct Publisher {
    id: String,
    session: Box<WebRtcSession<ReceiverSession>>,
    socket: UdpSocket,
    /// Fires on `DELETE` of this session.
    deleted: oneshot::Receiver<()>,
}

/// The publisher admitted now: its id, and what ends it on `DELETE`.
type Current = std::sync::Arc<std::sync::Mutex<Option<(String, Option<oneshot::Sender<()>>)>>>;

/// The HTTP side of a WHIP receiver: one publisher at a time.
#[derive(Clone)]
struct WhipHost {
    publishers: mpsc::Sender<Publisher>,
    current: Current,
    next_id: std::sync::Arc<std::sync::atomic::AtomicU64>,
    config: std::sync::Arc<ReceiverConfig>,
    reports: std::sync::Arc<std::sync::Mutex<Option<std::fs::File>>>,
    start: Instant,
}

impl WhipHost {
    /// The id of the publisher admitted now.
    fn current_id(&self) -> Option<String> {
        let c = self.current.lock().expect("never held across a panic");
        c.as_ref().map(|(id, _)| id.clone())
    }
}

impl cg_webrtc::http::SessionHost for WhipHost {
    async fn create(&self, offer: String) -> Result<(String, String), cg_webrtc::Error> {
        let host = cg_webrtc::Error::Host;
        let id = self
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            .to_string();
        let (delete, deleted) = oneshot::channel();
        {
            // Checked and taken in one step: two offers at once cannot both be admitted.
            let mut c = self.current.lock().expect("never held across a panic");
            if c.is_some() {
                return Err(host(
                    "a publisher is already connected; DELETE its session first".into(),
                ));
            }
            *c = Some((id.clone(), Some(delete)));
        }
        let admitted = self.admit(&id, offer, deleted).await;
        if admitted.is_err() {
            *self.current.lock().expect("never held across a panic") = None;
        }
        admitted.map(|answer| (id, answer))
    }

    async fn delete(&self, id: String) -> bool {
        let mut c = self.current.lock().expect("never held across a panic");
        match c.as_mut() {
            Some((current, end)) if *current == id => {
                if let Some(end) = end.take() {
                    let _ = end.send(());
                }
                true
            }
            _ => false,
        }
    }

    async fn report(&self, id: String, json: axum::body::Bytes) -> bool {
        if self.current_id().as_deref() != Some(id.as_str()) {
            return false;
        }
        if let (Some(f), Ok(report)) = (
            self.reports
                .lock()
                .expect("never held across a panic")
                .as_mut(),
            serde_json::from_slice::<serde_json::Value>(&json),
        ) {
            use std::io::Write;
            let line = serde_json::json!({
                "publisher": id,
                "t": self.start.elapsed().as_secs_f64(),
                "report": report,
            });
            if let Err(e) = writeln!(f, "{line}") {
                tracing::warn!(%e, "cannot write a publisher report");
            }
        }
        true
    }
}

impl WhipHost {
    /// Answers `offer` and hands the session to the receiving loop; the answer.
    async fn admit(
        &self,
        id: &str,
        offer: String,
        deleted: oneshot::Receiver<()>,
    ) -> Result<String, cg_webrtc::Error> {
        let host = cg_webrtc::Error::Host;
        let c = &self.config;
        let socket = bind(c.listen).map_err(|e| host(e.to_string()))?;
        let now = Instant::now();
        let peer_cfg = peer_config(c, socket.local_addr());
        let (peer, answer) = WebRtcPeer::answer_publisher(&peer_cfg, &offer, now)?;
        let rtp = webrtc_session(c, &peer, now)?;
        let session = Box::new(WebRtcSession::new(peer, rtp));
        let p = Publisher {
            id: id.to_owned(),
            session,
            socket,
            deleted,
        };
        self.publishers
            .send(p)
            .await
            .map_err(|_| host("the receiver is shutting down".into()))?;
        Ok(answer)
    }
}

/// WHIP server: receives one publisher at a time until shutdown. The listening socket made
/// by `Receiver::new` is released; each publisher gets a socket on `listen`.
async fn serve_whip(
    http: SocketAddr,
    socket: UdpSocket,
    config: &ReceiverConfig,
    decoder: &Decoder,
    state: &mut State,
    stats_tx: &Option<mpsc::Sender<Stats>>,
    shutdown: impl Future<Output = ()>,
) -> Result<Stats, Error> {
    drop(socket);
    let listener = tokio::net::TcpListener::bind(http)
        .await
        .map_err(|e| Error::Bind {
            addr: http,
            reason: e.to_string(),
        })?;
    let reports = match &config.publisher_reports {
        Some(p) => Some(std::fs::File::create(p).map_err(|e| Error::Io {
            what: format!("create {}", p.display()),
            source: e,
        })?),
        None => None,
    };
    let (publishers, mut arrivals) = mpsc::channel::<Publisher>(1);
    let current: Current = Default::default();
    let host = WhipHost {
        publishers,
        current: current.clone(),
        next_id: std::sync::Arc::new(std::sync::atomic::AtomicU64::new(1)),
        config: std::sync::Arc::new(config.clone()),
        reports: std::sync::Arc::new(std::sync::Mutex::new(reports)),
        start: Instant::now(),
    };
    let app = cg_webrtc::http::router("/whip", PUBLISHER_PAGE, host);
    let (stop_http, http_stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = http_stopped.await;
            })
            .await
    });
    tracing::info!(%http, "serving WHIP");
    tokio::pin!(shutdown);
    // Set when `shutdown` completed inside a publisher's session.
    let down = std::sync::atomic::AtomicBool::new(false);
    let mut tick = tokio::time::interval(config.stats_interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let result = loop {
        if down.load(std::sync::atomic::Ordering::Relaxed) {
            break Ok(state.last.clone());
        }
        let p = tokio::select! {
            () = &mut shutdown => break Ok(state.last.clone()),
            p = arrivals.recv() => p,
            _ = tick.tick() => { state.emit_idle(decoder, stats_tx); continue; }
        };
        let Some(p) = p else {
            break Ok(state.last.clone());
        };
        tracing::info!(id = %p.id, "publisher");
        let local = p.socket.local_addr();
        state.new_session(local);
        // Ends on shutdown, on DELETE of this session, or when the peer fails.
        let (sd, dn, deleted) = (&mut shutdown, &down, p.deleted);
        let mut end = Box::pin(async move {
            tokio::select! {
                () = sd => dn.store(true, std::sync::atomic::Ordering::Relaxed),
                _ = deleted => {}
            }
        });
        let ended = run_peer(
            p.socket,
            *p.session,
            DriverConfig::learned_peer(),
            local,
            config,
            decoder,
            state,
            stats_tx,
            &mut tick,
            &mut end,
        )
        .await;
        *current.lock().expect("never held across a panic") = None;
        if let Err(e) = ended {
            break Err(e);
        }
        tracing::info!(id = %p.id, "publisher gone");
    };
    let _ = stop_http.send(());
    let _ = tokio::time::timeout(Duration::from_secs(2), server).await;
    result
}

/// A WebRTC peer of this receiver on `local` (its host candidate).
fn peer_config(config: &ReceiverConfig, local: SocketAddr) -> PeerConfig {
    PeerConfig {
        codec: config.codec,
        ..PeerConfig::new(local)
    }
}

/// The receiver session for a negotiated peer: the controller's feedback must have been
/// agreed; payload types, extensions and SSRCs come from the negotiation.
fn webrtc_session(
    config: &ReceiverConfig,
    peer: &WebRtcPeer,
    now: Instant,
) -> Result<ReceiverSession, cg_webrtc::Error> {
    let n = peer
        .negotiated()
        .ok_or_else(|| cg_webrtc::Error::BadSdp("no answer yet".into()))?;
    n.feedback
        .require(config.controller_config().feedback_kind())?;
    let mut rtp = config.rtp_config();
    n.apply_to_receiver(&mut rtp);
    estimator(config, now)
        .and_then(|e| ReceiverSession::new(rtp, e, now))
        .map_err(|e| cg_webrtc::Error::Host(e.to_string()))
}

/// The controller's receive-side estimator, if it has one (GCC-REMB's).
fn estimator(
    config: &ReceiverConfig,
    now: Instant,
) -> Result<Option<Box<dyn ReceiveSideEstimator>>, cg_rtp::Error> {
    Ok(config.controller_config().build_receive_side(now)?)
}

fn bind(addr: SocketAddr) -> Result<UdpSocket, Error> {
    UdpSocket::bind(&SocketConfig {
        bind: addr,
        ..SocketConfig::default()
    })
    .map_err(|e| Error::bind(addr, e))
}

/// A session whose [`ReceiverSession`] the loop can reach: the plain one, or one behind a
/// WebRTC peer.
trait HasReceiver: cg_net::Session {
    fn receiver(&mut self) -> &mut ReceiverSession;
    /// The receiver's event inside the session's; `Err(true)` when the session has ended for
    /// good (a WebRTC peer failed or closed), `Err(false)` for other events.
    fn receiver_event(e: Self::Event) -> Result<ReceiverEvent, bool>;
}

impl HasReceiver for ReceiverSession {
    fn receiver(&mut self) -> &mut ReceiverSession {
        self
    }
    fn receiver_event(e: ReceiverEvent) -> Result<ReceiverEvent, bool> {
        Ok(e)
    }
}

impl HasReceiver for WebRtcSession<ReceiverSession> {
    fn receiver(&mut self) -> &mut ReceiverSession {
        self.inner_mut()
    }
    fn receiver_event(e: WebRtcEvent<ReceiverEvent>) -> Result<ReceiverEvent, bool> {
        match e {
            WebRtcEvent::Media(e) => Ok(e),
            WebRtcEvent::State(s) => {
                tracing::info!(?s, "WebRTC peer");
                Err(matches!(s, PeerState::Failed | PeerState::Closed))
            }
        }
    }
}

/// One sender's session, until shutdown or the sender falls silent.
#[allow(clippy::too_many_arguments)]
async fn run_peer<S: HasReceiver>(
    socket: UdpSocket,
    session: S,
    driver_config: DriverConfig,
    peer: SocketAddr,
    config: &ReceiverConfig,
    decoder: &Decoder,
    state: &mut State,
    stats_tx: &Option<mpsc::Sender<Stats>>,
    tick: &mut tokio::time::Interval,
    shutdown: &mut (impl Future<Output = ()> + Unpin),
) -> Result<Ended, Error> {
    let (driver, mut handle) = Driver::new(socket, session, driver_config)?;
    let (stop, stopped) = oneshot::channel::<()>();
    let mut task = tokio::spawn(driver.run(async move {
        let _ = stopped.await;
    }));
    let media_codec = config.codec;
    // Plain RTP carries no negotiation: a sender of another codec is told apart by its
    // payload type, and said once, instead of feeding the decoder what it cannot decode.
    let mut foreign_codec = None;
    let mut last_heard = (Instant::now(), 0u64);
    let ended = loop {
        tokio::select! {
            biased;
            () = &mut *shutdown => break Ended::Shutdown,
            done = &mut task => {
                return Err(match done {
                    Ok(Err(e)) => e.into(),
                    _ => Error::Config("the UDP driver stopped unexpectedly".into()),
                });
            }
            event = handle.next_event() => {
                let event = match event.map(S::receiver_event) {
                    Some(Ok(e)) => Some(e),
                    Some(Err(true)) => break Ended::PeerLost,
                    Some(Err(false)) | None => None,
                };
                if let Some(ReceiverEvent::Frame(f)) = event {
                    if f.codec != media_codec {
                        if foreign_codec.replace(f.codec) != Some(f.codec) {
                            tracing::error!(
                                %peer,
                                "the stream is {}, this receiver decodes {media_codec}: run cg-recv --codec {} (frames in {} are not decoded)",
                                f.codec,
                                f.codec.name(),
                                f.codec,
                            );
                        }
                        continue;
                    }
                    state.frames_received += 1;
                    state.arrived(&f);
                    let capture = f.capture_time.unwrap_or(f.first_arrival);
                    let frame = cg_media::EncodedFrame {
                        data: f.data,
                        codec: media_codec,
                        capture_time: HostTime::from_instant(capture),
                        key_frame: f.key_frame,
                        pts: f.rtp_timestamp.as_duration(),
                        index: state.frames_received,
                        seq: state.frames_received,
                        encode_latency: Duration::ZERO,
                    };
                    if let Err(e) = decoder.push(frame) {
                        tracing::warn!(%e, "decoder refused a frame");
                    }
                    if decoder.take_key_frame_request() {
                        let _ = handle.call(|s: &mut S, now| s.receiver().request_key_frame(now)).await;
                    }
                } else if let Some(ReceiverEvent::Bye { reason }) = event {
                    tracing::info!(%peer, ?reason, "the sender said BYE");
                }
            }
            _ = tick.tick() => {
                if decoder.take_key_frame_request() {
                    let _ = handle.call(|s: &mut S, now| s.receiver().request_key_frame(now)).await;
                }
                let net = handle.stats();
                let now = Instant::now();
                if net.datagrams_in != last_heard.1 {
                    last_heard = (now, net.datagrams_in);
                } else if now.saturating_duration_since(last_heard.0) >= config.peer_timeout
                    && net.foreign_datagrams > 0
                {
                    break Ended::PeerLost;
                }
                state.sample(&handle, decoder, stats_tx, net.foreign_datagrams).await;
            }
        }
    };
    let _ = stop.send(());
    let _ = tokio::time::timeout(Duration::from_secs(2), &mut task).await;
    Ok(ended)
}

/// Bookkeeping across samples and sessions.
struct State {
    start: Instant,
    records: StdReceiver<DecodedFrame>,
    peer: Option<String>,
    sessions: u64,
    frames_received: u64,
    /// Totals of the sessions that ended (a new session's counters start at zero).
    base: Totals,
    current: Totals,
    last_bytes: u64,
    last_expected: (u64, i64),
    last_sample: Instant,
    freezes_seen: u64,
    /// When the frames of the last second were decoded.
    decoded_at: VecDeque<HostTime>,
    /// Frames handed to the decoder with the sender's stages, oldest first: (index, capture,
    /// the sender's timing, last arrival).
    in_decoder: VecDeque<(u64, Instant, cg_rtp::VideoTiming, Instant)>,
    last: Stats,
}

/// Frames of [`State::in_decoder`] kept: more than a decoder holds.
const IN_DECODER: usize = 256;

#[derive(Debug, Clone, Copy, Default)]
struct Totals {
    media_packets: u64,
    retransmissions: u64,
    lost: i64,
    ecn: [u64; 4],
    frames_lost: u64,
    plis: u64,
    nacks: u64,
}

impl Totals {
    fn plus(self, o: Totals) -> Totals {
        let mut ecn = self.ecn;
        for (a, b) in ecn.iter_mut().zip(o.ecn) {
            *a += b;
        }
        Totals {
            media_packets: self.media_packets + o.media_packets,
            retransmissions: self.retransmissions + o.retransmissions,
            lost: self.lost + o.lost,
            ecn,
            frames_lost: self.frames_lost + o.frames_lost,
            plis: self.plis + o.plis,
            nacks: self.nacks + o.nacks,
        }
    }
}

impl State {
    fn new(_config: &ReceiverConfig, records: StdReceiver<DecodedFrame>) -> State {
        let start = Instant::now();
        State {
            start,
            records,
            peer: None,
            sessions: 0,
            frames_received: 0,
            base: Totals::default(),
            current: Totals::default(),
            last_bytes: 0,
            last_expected: (0, 0),
            last_sample: start,
            freezes_seen: 0,
            decoded_at: VecDeque::new(),
            in_decoder: VecDeque::new(),
            last: Stats::default(),
        }
    }

    /// Keeps a frame's sender stages until it is decoded (as frame `frames_received`).
    fn arrived(&mut self, f: &cg_rtp::ReceivedFrame) {
        if let (Some(capture), Some(timing)) = (f.capture_time, f.sender_timing) {
            if self.in_decoder.len() == IN_DECODER {
                self.in_decoder.pop_front();
            }
            self.in_decoder
                .push_back((self.frames_received, capture, timing, f.last_arrival));
        }
    }

    /// The stages of decoded frame `r`, if it carried the sender's.
    fn stages_of(&mut self, r: &DecodedFrame) -> Option<G2gStages> {
        while self.in_decoder.front().is_some_and(|e| e.0 < r.index) {
            self.in_decoder.pop_front();
        }
        let &(index, capture, timing, last_arrival) = self.in_decoder.front()?;
        (index == r.index).then_some(())?;
        self.in_decoder.pop_front();
        G2gStages::of_frame(
            capture,
            timing,
            last_arrival,
            r.pushed_at.to_instant(),
            r.decoded_at.to_instant(),
        )
    }

    fn new_session(&mut self, peer: SocketAddr) {
        self.base = self.base.plus(self.current);
        self.current = Totals::default();
        self.last_bytes = 0;
        self.last_expected = (0, 0);
        self.peer = Some(peer.to_string());
        self.sessions += 1;
    }

    fn emit_idle(&mut self, decoder: &Decoder, tx: &Option<mpsc::Sender<Stats>>) {
        self.peer = None;
        let stats = self.compose(decoder, None, 0);
        self.publish(stats, tx);
    }

    async fn sample<S: HasReceiver>(
        &mut self,
        handle: &DriverHandle<S>,
        decoder: &Decoder,
        tx: &Option<mpsc::Sender<Stats>>,
        foreign: u64,
    ) {
        let Ok(snapshot) = handle
            .query(|s: &mut S, _| {
                let s = s.receiver();
                let est = s.estimator().map(|e| (e.estimate(), e.stats()));
                (s.stats().clone(), est)
            })
            .await
        else {
            return;
        };
        let stats = self.compose(decoder, Some(snapshot), foreign);
        self.publish(stats, tx);
    }

    fn publish(&mut self, stats: Stats, tx: &Option<mpsc::Sender<Stats>>) {
        if let Some(tx) = tx {
            let _ = tx.try_send(stats.clone());
        }
        self.last = stats;
    }

    #[allow(clippy::type_complexity)]
    fn compose(
        &mut self,
        decoder: &Decoder,
        session: Option<(
            cg_rtp::ReceiverStats,
            Option<(cg_types::Bitrate, Vec<(&'static str, f64)>)>,
        )>,
        foreign: u64,
    ) -> Stats {
        let now = Instant::now();
        let dt = now
            .saturating_duration_since(self.last_sample)
            .as_secs_f64();
        self.last_sample = now;
        let mut g2g: Vec<f64> = Vec::new();
        let mut stages = Vec::new();
        while let Ok(r) = self.records.try_recv() {
            if let Some(l) = r.glass_to_glass {
                g2g.push(l.as_secs_f64() * 1e3);
            }
            stages.extend(self.stages_of(&r));
            self.decoded_at.push_back(r.decoded_at);
        }
        g2g.sort_by(f64::total_cmp);
        let dec = decoder.stats();
        let new = dec.freezes.saturating_sub(self.freezes_seen);
        self.freezes_seen = dec.freezes;
        let host_now = HostTime::now();
        // The decoded frame rate: frames shown over the last second.
        while self.decoded_at.front().is_some_and(|&t| {
            host_now.checked_duration_since(t).unwrap_or_default() > Duration::from_secs(1)
        }) {
            self.decoded_at.pop_front();
        }
        let new_freezes = dec
            .recent_freezes
            .iter()
            .rev()
            .take(usize::try_from(new).unwrap_or(usize::MAX))
            .rev()
            .map(|f| FreezeRecord {
                start_t: self.t_of(f.started_at, host_now, now),
                duration_ms: f.duration.as_secs_f64() * 1e3,
            })
            .collect();
        let mut s = Stats {
            t: now.saturating_duration_since(self.start).as_secs_f64(),
            mono_ns: host_now.as_nanos(),
            peer: self.peer.clone(),
            sessions: self.sessions,
            frames_received: self.frames_received,
            frames_decoded: dec.frames_decoded,
            decode_errors: dec.decode_errors,
            freezes: dec.freezes,
            freeze_total_ms: dec.freeze_total.as_secs_f64() * 1e3,
            longest_freeze_ms: dec.longest_freeze.as_secs_f64() * 1e3,
            webrtc_freezes: dec.webrtc_freezes,
            webrtc_freeze_total_ms: dec.webrtc_freeze_total.as_secs_f64() * 1e3,
            resolution_switches: dec.resolution_switches,
            stall_ms: dec.current_stall.map(|d| d.as_secs_f64() * 1e3),
            new_freezes,
            g2g_ms: (!g2g.is_empty()).then(|| g2g[g2g.len() / 2]),
            g2g_max_ms: g2g.last().copied(),
            g2g_p95_ms: dec.p95_glass_to_glass.map(|d| d.as_secs_f64() * 1e3),
            g2g_p99_ms: dec.p99_glass_to_glass.map(|d| d.as_secs_f64() * 1e3),
            g2g_stages: G2gStages::median(&stages),
            psnr_db: dec.quality.map(|q| q.psnr_mean_db),
            psnr_p5_db: dec.quality.map(|q| q.psnr_p5_db),
            pictures_scored: dec.quality.map_or(0, |q| q.scored),
            width: dec.last_size.map_or(0, |(w, _)| w),
            height: dec.last_size.map_or(0, |(_, h)| h),
            decoded_fps: self.decoded_at.len() as u32,
            foreign_datagrams: foreign,
            rss_kib: cg_types::rss_kib(None),
            ..Stats::default()
        };
        if let Some((r, est)) = session {
            s.playout_delay_ms = r
                .playout_delay
                .map(|d| [d.min.as_secs_f64() * 1e3, d.max.as_secs_f64() * 1e3]);
            self.current = Totals {
                media_packets: r.media_packets,
                retransmissions: r.retransmissions,
                lost: r.cumulative_lost,
                ecn: r.ecn,
                frames_lost: r.frames_lost + r.frames_undecodable,
                plis: r.plis_sent,
                nacks: r.nacks_sent,
            };
            s.recv_rate_bps = if dt > 0.0 {
                (r.rtp_bytes.saturating_sub(self.last_bytes) as f64 * 8.0 / dt) as u64
            } else {
                0
            };
            self.last_bytes = r.rtp_bytes;
            let got = r.media_packets.saturating_sub(self.last_expected.0);
            let lost = (r.cumulative_lost - self.last_expected.1).max(0) as u64;
            self.last_expected = (r.media_packets, r.cumulative_lost);
            s.loss = (got + lost > 0).then(|| lost as f64 / (got + lost) as f64);
            s.jitter_ms = r.jitter.as_secs_f64() * 1e3;
            s.bye_received = r.bye_received;
            if let Some((estimate, extra)) = est {
                s.remb_bps = Some(estimate.as_bps());
                s.extra = extra.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
            }
        }
        let t = self.base.plus(self.current);
        s.media_packets = t.media_packets;
        s.retransmissions = t.retransmissions;
        s.lost_packets = t.lost;
        s.ecn = t.ecn;
        s.frames_lost = t.frames_lost;
        s.plis_sent = t.plis;
        s.nacks_sent = t.nacks;
        s
    }

    /// Seconds since start of a host-clock reading.
    fn t_of(&self, at: HostTime, host_now: HostTime, now: Instant) -> f64 {
        let since_start = now.saturating_duration_since(self.start).as_secs_f64();
        match host_now.checked_duration_since(at) {
            Some(ago) => since_start - ago.as_secs_f64(),
            None => since_start,
        }
    }
}
