//! [`WebRtcSession`]: a cg-rtp session (sender or receiver) behind a [`WebRtcPeer`], run by
//! cg-net's driver like a plain RTP session.
//!
//! Inbound, each datagram goes to the peer; every RTP/RTCP packet the tap takes from it goes
//! to the cg-rtp session with the datagram's ECN and kernel arrival time. Outbound, the peer's
//! own datagrams (STUN, DTLS) go first; once the peer is connected, the session's packets
//! are handed to the peer to be encrypted and leave as SRTP/SRTCP. Before that the session
//! is not polled: its pacer holds what it has, and the application waits for
//! [`WebRtcEvent::State`]`(`[`PeerState::Connected`]`)` before pushing frames.

use std::net::SocketAddr;
use std::time::Instant;

use cg_rtp::{ReceiverEvent, ReceiverSession, SenderEvent, SenderSession, TransmitKind};
use cg_types::Ecn;

use crate::{PeerState, WebRtcPeer};

/// What [`WebRtcSession`] needs of a cg-rtp session; implemented for [`SenderSession`] and
/// [`ReceiverSession`].
pub trait RtpSession: Send + 'static {
    /// The session's events.
    type Event: Send + 'static;
    /// A decrypted RTP or RTCP packet.
    fn handle_input(&mut self, data: &[u8], ecn: Ecn, now: Instant) -> Result<(), cg_rtp::Error>;
    /// Timers.
    fn handle_timeout(&mut self, now: Instant);
    /// The next packet to send.
    fn poll_transmit(&mut self, now: Instant) -> Option<cg_rtp::Transmit>;
    /// The next deadline.
    fn poll_timeout(&self) -> Option<Instant>;
    /// The next event.
    fn poll_event(&mut self) -> Option<Self::Event>;
}

macro_rules! rtp_session {
    ($t:ty, $e:ty) => {
        impl RtpSession for $t {
            type Event = $e;
            fn handle_input(
                &mut self,
                data: &[u8],
                ecn: Ecn,
                now: Instant,
            ) -> Result<(), cg_rtp::Error> {
                <$t>::handle_input(self, data, ecn, now)
            }
            fn handle_timeout(&mut self, now: Instant) {
                <$t>::handle_timeout(self, now)
            }
            fn poll_transmit(&mut self, now: Instant) -> Option<cg_rtp::Transmit> {
                <$t>::poll_transmit(self, now)
            }
            fn poll_timeout(&self) -> Option<Instant> {
                <$t>::poll_timeout(self)
            }
            fn poll_event(&mut self) -> Option<$e> {
                <$t>::poll_event(self)
            }
        }
    };
}
rtp_session!(SenderSession, SenderEvent);
rtp_session!(ReceiverSession, ReceiverEvent);

/// What a [`WebRtcSession`] tells the application.
#[derive(Debug)]
pub enum WebRtcEvent<E> {
    /// The peer connection changed state: start media on `Connected`, drop the session on
    /// `Failed` or `Closed`.
    State(PeerState),
    /// An event of the cg-rtp session.
    Media(E),
}

/// A cg-rtp session over a WebRTC peer connection. See the module docs.
pub struct WebRtcSession<S> {
    peer: WebRtcPeer,
    inner: S,
    /// Packets the peer refused to encrypt (counted, never a panic).
    refused: u64,
}

impl<S: RtpSession> WebRtcSession<S> {
    /// `inner` must be configured from the peer's [`crate::Negotiated`] (`apply_to` /
    /// `apply_to_receiver`).
    pub fn new(peer: WebRtcPeer, inner: S) -> Self {
        Self {
            peer,
            inner,
            refused: 0,
        }
    }

    /// One datagram from `from`, read at `now`, that reached the host at `arrival` with `ecn`.
    pub fn handle_datagram(
        &mut self,
        now: Instant,
        from: SocketAddr,
        data: &[u8],
        ecn: Ecn,
        arrival: Instant,
    ) {
        if let Err(error) = self.peer.handle_datagram(now, from, data, ecn) {
            tracing::debug!(%error, "webrtc peer dropped a datagram");
        }
        // The read pipeline is synchronous: everything the tap holds came in this datagram.
        while let Some(p) = self.peer.poll_inbound() {
            if let Err(error) = self.inner.handle_input(&p.bytes, p.ecn, arrival) {
                tracing::debug!(%error, "rtp session dropped a packet");
            }
        }
    }

    /// Runs the peer's timers, and the session's once connected.
    pub fn handle_timeout(&mut self, now: Instant) {
        if let Err(error) = self.peer.handle_timeout(now) {
            tracing::debug!(%error, "webrtc peer timeout");
        }
        if self.connected() {
            self.inner.handle_timeout(now);
        }
    }

    /// The next datagram to send.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<crate::Transmit> {
        loop {
            if let Some(t) = self.peer.poll_transmit() {
                return Some(t);
            }
            if !self.connected() {
                return None;
            }
            let t = self.inner.poll_transmit(now)?;
            let r = if t.kind == TransmitKind::Rtcp {
                self.peer.send_rtcp(now, t.bytes)
            } else {
                self.peer.send_rtp(now, t.bytes)
            };
            if let Err(error) = r {
                self.refused += 1;
                tracing::debug!(%error, "packet not sent over SRTP");
            }
        }
    }

    /// The earlier of the peer's and (once connected) the session's deadlines.
    pub fn poll_timeout(&mut self) -> Option<Instant> {
        let inner = self
            .connected()
            .then(|| self.inner.poll_timeout())
            .flatten();
        [self.peer.poll_timeout(), inner]
            .into_iter()
            .flatten()
            .min()
    }

    /// Peer state changes first, then the session's events.
    pub fn poll_event(&mut self) -> Option<WebRtcEvent<S::Event>> {
        if let Some(s) = self.peer.poll_state() {
            return Some(WebRtcEvent::State(s));
        }
        self.inner.poll_event().map(WebRtcEvent::Media)
    }

    /// The peer connection.
    pub fn peer(&self) -> &WebRtcPeer {
        &self.peer
    }

    /// The peer connection, to close it.
    pub fn peer_mut(&mut self) -> &mut WebRtcPeer {
        &mut self.peer
    }

    /// The cg-rtp session.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// The cg-rtp session, to push frames or read statistics.
    pub fn inner_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// Packets of the session the peer could not encrypt (0 in a healthy session).
    pub fn refused(&self) -> u64 {
        self.refused
    }

    fn connected(&self) -> bool {
        self.peer.state() == PeerState::Connected
    }
}

impl<S: RtpSession> cg_net::Session for WebRtcSession<S> {
    type Event = WebRtcEvent<S::Event>;

    fn handle_datagram(&mut self, d: &cg_net::Datagram<'_>, now: Instant) {
        let ecn = d.ecn.unwrap_or(Ecn::NotEct);
        WebRtcSession::handle_datagram(self, now, d.source, d.payload, ecn, d.arrival);
    }

    fn handle_timeout(&mut self, now: Instant) {
        WebRtcSession::handle_timeout(self, now);
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<cg_net::Transmit> {
        WebRtcSession::poll_transmit(self, now).map(|t| cg_net::Transmit {
            payload: t.bytes,
            ecn: Some(t.ecn),
            destination: Some(t.destination),
        })
    }

    fn poll_event(&mut self) -> Option<Self::Event> {
        WebRtcSession::poll_event(self)
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        WebRtcSession::poll_timeout(self)
    }
}
