//! The running receiver: UDP driver → RTP session → decoder, feedback and PLIs back.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::mpsc::Receiver as StdReceiver;
use std::time::{Duration, Instant};

use cg_app::Error;
use cg_cc::ReceiveSideEstimator;
use cg_media::{DecodedFrame, Decoder, HostTime};
use cg_net::{Driver, DriverConfig, SocketConfig, UdpSocket};
use cg_rtp::{ReceiverEvent, ReceiverSession};
use cg_types::Ecn;
use cg_webrtc::{PeerState, WebRtcEvent, WebRtcSession};
use tokio::io::unix::AsyncFd;
use tokio::sync::{mpsc, oneshot};

use crate::state::State;
use crate::webrtc::{serve_whip, view_whep};
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
pub(crate) enum Ended {
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

/// The controller's receive-side estimator, if it has one (GCC-REMB's).
pub(crate) fn estimator(
    config: &ReceiverConfig,
    now: Instant,
) -> Result<Option<Box<dyn ReceiveSideEstimator>>, cg_rtp::Error> {
    Ok(config.controller_config().build_receive_side(now)?)
}

pub(crate) fn bind(addr: SocketAddr) -> Result<UdpSocket, Error> {
    UdpSocket::bind(&SocketConfig {
        bind: addr,
        ..SocketConfig::default()
    })
    .map_err(|e| Error::bind(addr, e))
}

/// A session whose [`ReceiverSession`] the loop can reach: the plain one, or one behind a
/// WebRTC peer.
pub(crate) trait HasReceiver: cg_net::Session {
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
pub(crate) async fn run_peer<S: HasReceiver>(
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
    // Plain RTP carries no negotiation: the payload type names each frame's codec. The
    // decoder follows it, or (`follow_codec` off) a mismatch is said once instead of feeding
    // the decoder what it cannot decode.
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
                    if f.codec != media_codec && !config.follow_codec {
                        if foreign_codec.replace(f.codec) != Some(f.codec) {
                            tracing::error!(
                                %peer,
                                "the stream is {}, this receiver decodes {media_codec} only: run cg-recv --codec auto or {} (frames in {} are not decoded)",
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
                        codec: f.codec,
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
