//! cg-rtp's [`SenderSession`] and [`ReceiverSession`] as driver [`Session`]s.
//!
//! Both take every datagram through `handle_input(bytes, ecn, now)`. The driver passes the
//! kernel's arrival time ([`Datagram::arrival`]) as `now`, so the receiver's feedback (RFC 8888
//! arrival times, transport-wide CC, REMB's estimator) sees when the datagram reached the host,
//! not when the task got round to it; a datagram without an ECN report (never seen with the
//! control-space sizing of this crate, and counted by the driver) is passed as Not-ECT. Bad
//! datagrams are counted by the session and dropped; the typed error is logged at debug level.
//! RTP/RTCP `Transmit`s are moved into the socket's [`Transmit`] without copying (both carry
//! `bytes::Bytes`), with their per-packet ECN code point.

use std::time::Instant;

use cg_rtp::{ReceiverEvent, ReceiverSession, SenderEvent, SenderSession};
use cg_types::Ecn;

use crate::session::Session;
use crate::socket::{Datagram, Transmit};

fn transmit(t: cg_rtp::Transmit) -> Transmit {
    Transmit {
        payload: t.bytes,
        ecn: Some(t.ecn),
        destination: None,
    }
}

impl Session for SenderSession {
    type Event = SenderEvent;

    fn handle_datagram(&mut self, datagram: &Datagram<'_>, _now: Instant) {
        let ecn = datagram.ecn.unwrap_or(Ecn::NotEct);
        if let Err(error) = self.handle_input(datagram.payload, ecn, datagram.arrival) {
            tracing::debug!(%error, "sender dropped a datagram");
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        SenderSession::handle_timeout(self, now);
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        SenderSession::poll_transmit(self, now).map(transmit)
    }

    fn poll_event(&mut self) -> Option<SenderEvent> {
        SenderSession::poll_event(self)
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        SenderSession::poll_timeout(self)
    }
}

impl Session for ReceiverSession {
    type Event = ReceiverEvent;

    fn handle_datagram(&mut self, datagram: &Datagram<'_>, _now: Instant) {
        let ecn = datagram.ecn.unwrap_or(Ecn::NotEct);
        if let Err(error) = self.handle_input(datagram.payload, ecn, datagram.arrival) {
            tracing::debug!(%error, "receiver dropped a datagram");
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        ReceiverSession::handle_timeout(self, now);
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        ReceiverSession::poll_transmit(self, now).map(transmit)
    }

    fn poll_event(&mut self) -> Option<ReceiverEvent> {
        ReceiverSession::poll_event(self)
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        ReceiverSession::poll_timeout(self)
    }
}
