//! One sender's session, the loop every mode shares (plain RTP, a WHEP client, a WHIP
//! server): the UDP driver and the RTP session, frames to the decoder, PLIs back, the
//! statistics sampled, until shutdown or the sender falls silent.

use std::future::Future;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use cg_app::Error;
use cg_cc::ReceiveSideEstimator;
use cg_media::{Decoder, HostTime};
use cg_net::{Driver, DriverConfig, SocketConfig, UdpSocket};
use cg_rtp::ReceiverEvent;
use tokio::sync::{mpsc, oneshot};

use crate::has_receiver::HasReceiver;
use crate::state::State;
use crate::{ReceiverConfig, Stats};

/// How one peer's session ended.
pub(crate) enum Ended {
    Shutdown,
    PeerLost,
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
