//! The running receiver: UDP driver → RTP session → decoder, feedback and PLIs back.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::mpsc::Receiver as StdReceiver;
use std::time::Instant;

use cg_app::Error;
use cg_media::{DecodedFrame, Decoder};
use cg_net::{DriverConfig, UdpSocket};
use cg_rtp::ReceiverSession;
use cg_types::Ecn;
use tokio::io::unix::AsyncFd;
use tokio::sync::mpsc;

use crate::peer::{Ended, bind, estimator, run_peer};
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
