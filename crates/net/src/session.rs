//! The sans-IO session interface the driver runs.

use std::time::Instant;

use crate::socket::{Datagram, Transmit};

/// A sans-IO protocol state machine (no socket, no clock, no thread of its own: datagrams
/// and the time go in, datagrams and a next deadline come out) that a [`crate::Driver`]
/// runs on a real socket and clock.
///
/// The driver's loop: hand it every datagram from the peer ([`Session::handle_datagram`]),
/// call [`Session::handle_timeout`] when [`Session::poll_timeout`] is due, and after every
/// input drain [`Session::poll_transmit`] (to the socket) and [`Session::poll_event`] (to the
/// application) until they answer `None`. cg-rtp's `SenderSession` and `ReceiverSession`
/// implement it (in this crate, `rtp.rs`).
pub trait Session: Send + 'static {
    /// What the session tells the application (decoded frames, key-frame requests, …).
    type Event: Send + 'static;

    /// One datagram from the configured peer. `now` is when the driver read it; the
    /// datagram's [`Datagram::arrival`] is when the kernel received it (earlier, and possibly
    /// earlier than the `now` of the previous call).
    fn handle_datagram(&mut self, datagram: &Datagram<'_>, now: Instant);

    /// The deadline from [`Session::poll_timeout`] has passed. A spurious call is harmless.
    fn handle_timeout(&mut self, now: Instant);

    /// The next datagram to send now, if any.
    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit>;

    /// The next event for the application, if any.
    fn poll_event(&mut self) -> Option<Self::Event> {
        None
    }

    /// When [`Session::handle_timeout`] must next be called; `None` if only an input can
    /// create work.
    fn poll_timeout(&mut self) -> Option<Instant>;
}
