//! cg-recv's WebRTC modes: the WHEP client that views a sender, and the WHIP server that
//! takes one publisher at a time. Both hand their peer's session to [`run_peer`].

use std::future::Future;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use cg_app::Error;
use cg_media::Decoder;
use cg_net::{DriverConfig, UdpSocket};
use cg_rtp::ReceiverSession;
use cg_webrtc::{PeerConfig, WebRtcPeer, WebRtcSession};
use tokio::sync::{mpsc, oneshot};

use crate::peer::{Ended, bind, estimator, run_peer};
use crate::state::State;
use crate::{ReceiverConfig, Stats};

/// WHEP client: offers to view `url`'s stream, runs the session until shutdown or the peer
/// ends, then deletes the session's resource.
pub(crate) async fn view_whep(
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
pub(crate) const PUBLISHER_PAGE: &str = include_str!("../assets/publisher.html");

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
pub(crate) async fn serve_whip(
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
        model: config.model,
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
