//! The tokio task that runs a [`Session`] on a [`UdpSocket`] in real time.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::unix::AsyncFd;
use tokio::sync::{mpsc, oneshot};

use crate::error::Error;
use crate::session::Session;
use crate::socket::{Transmit, UdpSocket};
use crate::stats::{Stats, StatsSnapshot};
use crate::timer::{Timer, TimerKind};

/// Whom a [`Driver`] talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// One address: datagrams from anyone else are counted
    /// ([`StatsSnapshot::foreign_datagrams`]) and dropped, and the session's datagrams go
    /// there unless they carry their own [`Transmit::destination`]. Plain RTP mode.
    Fixed(SocketAddr),
    /// Learned by the session: datagrams from any address reach it, and it authenticates them
    /// itself (a WebRTC peer: ICE credentials, DTLS, SRTP) and gives each of its datagrams a
    /// destination. One without is dropped and counted as a send error (`EDESTADDRREQ`).
    Learned,
}

/// How a [`Driver`] runs.
#[derive(Debug, Clone)]
pub struct DriverConfig {
    /// Whom the session talks to. No default: it is required.
    pub peer: Peer,
    /// Kernel messages per `recvmmsg`. Default 32.
    pub recv_batch: usize,
    /// `recvmmsg` calls per wake-up before timers and sends get their turn. Default 8.
    pub recv_calls_per_wake: usize,
    /// Datagrams gathered from `poll_transmit` per `sendmmsg`. Default 64.
    pub send_batch: usize,
    /// Least time between two timer wake-ups. Default 100 µs. A pacer at 1 Gb/s asks for a
    /// wake-up every 10 µs; each costs a `timerfd_settime`, an `epoll_wait` and a context
    /// switch (tens of µs of CPU on a VM), so deadlines closer than this to the previous
    /// wake-up are deferred to it and the packets due by then leave together in one GSO
    /// batch. Below ~100 Mb/s of 1200-byte packets (gaps over 96 µs) it never acts; above, it
    /// adds at most this much to the lateness (counted in [`StatsSnapshot::lateness`]).
    /// `Duration::ZERO` wakes for every deadline.
    pub min_wake_interval: Duration,
    /// The timer behind `poll_timeout`. Default [`TimerKind::Precise`] (see `timer.rs`: tokio's
    /// wheel rounds up to 1 ms, too coarse for pacing).
    pub timer: TimerKind,
    /// Session events buffered for the application before further ones are dropped (and
    /// counted in [`StatsSnapshot::events_dropped`]). Default 1024.
    pub event_capacity: usize,
    /// Application commands buffered before [`DriverHandle::call`] waits. Default 64.
    pub command_capacity: usize,
}

impl DriverConfig {
    /// The defaults, talking to `peer` only ([`Peer::Fixed`]).
    pub fn new(peer: SocketAddr) -> Self {
        Self::with_peer(Peer::Fixed(peer))
    }

    /// The defaults, with the peer learned by the session ([`Peer::Learned`]).
    pub fn learned_peer() -> Self {
        Self::with_peer(Peer::Learned)
    }

    fn with_peer(peer: Peer) -> Self {
        DriverConfig {
            peer,
            recv_batch: 32,
            recv_calls_per_wake: 8,
            send_batch: 64,
            min_wake_interval: Duration::from_micros(100),
            timer: TimerKind::Precise,
            event_capacity: 1024,
            command_capacity: 64,
        }
    }
}

/// Something the application asks the driver to do with its session.
type Command<S> = Box<dyn FnOnce(&mut S, Instant) + Send>;

/// Runs a [`Session`]: owns the socket, the session and the timer; see [`Driver::run`].
pub struct Driver<S: Session> {
    socket: UdpSocket,
    session: S,
    config: DriverConfig,
    commands: mpsc::Receiver<Command<S>>,
    events: mpsc::Sender<S::Event>,
    stats: Arc<Stats>,
}

/// The application's side of a running [`Driver`].
pub struct DriverHandle<S: Session> {
    commands: mpsc::Sender<Command<S>>,
    events: mpsc::Receiver<S::Event>,
    stats: Arc<Stats>,
}

/// What [`Driver::run`] hands back after a clean shutdown.
#[derive(Debug)]
pub struct Finished<S> {
    /// The session, for its own statistics.
    pub session: S,
    /// The driver's counters at the end.
    pub stats: StatsSnapshot,
}

impl<S: Session> Driver<S> {
    /// A driver for `session` on `socket`, and the handle to talk to it.
    pub fn new(
        socket: UdpSocket,
        session: S,
        config: DriverConfig,
    ) -> Result<(Self, DriverHandle<S>), Error> {
        let local = socket.local_addr();
        let peer = match config.peer {
            Peer::Fixed(peer) => {
                let peer = canonical(peer);
                if local.is_ipv6() != peer.is_ipv6() {
                    return Err(Error::AddressFamily { local, peer });
                }
                Peer::Fixed(peer)
            }
            Peer::Learned => Peer::Learned,
        };
        let config = DriverConfig { peer, ..config };
        let (command_tx, commands) = mpsc::channel(config.command_capacity.max(1));
        let (events, event_rx) = mpsc::channel(config.event_capacity.max(1));
        let stats = Arc::new(Stats::new());
        let handle = DriverHandle {
            commands: command_tx,
            events: event_rx,
            stats: Arc::clone(&stats),
        };
        Ok((
            Driver {
                socket,
                session,
                config,
                commands,
                events,
                stats,
            },
            handle,
        ))
    }

    /// Runs until `shutdown` completes (e.g. `async { rx.await.ok(); }` on a oneshot, or a
    /// cancellation token's `cancelled()`), then returns the session and the counters.
    ///
    /// Per-datagram trouble (send errors, foreign peers, truncation) is counted, never fatal;
    /// an `Err` means the socket or timer itself failed. Must run inside a tokio runtime with
    /// I/O and time enabled.
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> Result<Finished<S>, Error> {
        let Driver {
            socket,
            mut session,
            config,
            mut commands,
            events,
            stats,
        } = self;
        let peer = config.peer;
        let mut rb = socket.recv_batch_buffer(config.recv_batch);
        // SAFETY: the `UdpSocket` owns its descriptor and returns the same one from `as_raw_fd`
        // for its whole life; this module never replaces the socket behind `get_mut`.
        let mut fd = unsafe { AsyncFd::register(socket) }.map_err(|e| Error::Io {
            op: "register socket with tokio",
            source: e.into(),
        })?;
        let mut timer = Timer::new(config.timer).map_err(Error::io("timerfd_create"))?;
        let send_batch = config.send_batch.max(1);
        let mut pending: Vec<Transmit> = Vec::with_capacity(send_batch);
        let mut blocked = false;
        let mut commands_open = true;
        let mut last_wake: Option<Instant> = None;
        tokio::pin!(shutdown);
        loop {
            // A due deadline is handled here, before any waiting, so that a busy socket can
            // never starve the session's timers (and a pacer that is always behind schedule
            // never starves the socket: the wait below still turns the reactor).
            let now = Instant::now();
            if let Some(due) = session.poll_timeout().filter(|&d| d <= now) {
                stats.timer(now.saturating_duration_since(due));
                session.handle_timeout(now);
                last_wake = Some(now);
            }
            if !blocked {
                blocked = flush(
                    &mut fd,
                    &mut session,
                    &mut pending,
                    peer,
                    &stats,
                    send_batch,
                );
            }
            while let Some(event) = session.poll_event() {
                if events.try_send(event).is_err() {
                    stats.event_dropped();
                }
            }
            let wake = session.poll_timeout().map(|d| match last_wake {
                Some(w) => d.max(w + config.min_wake_interval),
                None => d,
            });
            timer.set(wake).map_err(Error::io("timerfd_settime"))?;
            let deadline = timer.armed();
            let mut more_to_read = false;
            tokio::select! {
                biased;
                () = &mut shutdown => break,
                ready = fd.readable() => {
                    let mut guard = ready.map_err(Error::io("poll readable"))?;
                    more_to_read = true;
                    for _ in 0..config.recv_calls_per_wake.max(1) {
                        let before = rb.stats();
                        match guard.try_io(|inner| inner.get_ref().recv_batch(&mut rb)) {
                            Err(_would_block) => {
                                more_to_read = false;
                                break;
                            }
                            Ok(Err(e)) if transient_recv_error(&e) => {
                                tracing::debug!(error = %e, "transient receive error");
                                continue;
                            }
                            Ok(Err(e)) => return Err(Error::Io { op: "recvmmsg", source: e }),
                            Ok(Ok(_)) => {}
                        }
                        stats.recv_call(&rb.stats(), &before);
                        let now = rb.received_at();
                        for datagram in rb.datagrams() {
                            if matches!(peer, Peer::Fixed(p) if datagram.source != p) {
                                stats.foreign(datagram.payload.len());
                                continue;
                            }
                            stats.datagram_in(datagram.payload.len(), datagram.ecn);
                            session.handle_datagram(&datagram, now);
                        }
                    }
                }
                ready = fd.writable(), if blocked => {
                    ready.map_err(Error::io("poll writable"))?.clear_ready();
                    blocked = false;
                }
                command = commands.recv(), if commands_open => match command {
                    Some(f) => f(&mut session, Instant::now()),
                    None => commands_open = false,
                },
                // Handled at the top of the loop.
                woke = timer.wait(), if deadline.is_some() => woke.map_err(Error::io("timer"))?,
            }
            if more_to_read {
                // The socket still has data after a full share of reads: let the runtime turn
                // its reactor and timers (shutdown, other tasks) before reading on.
                tokio::task::yield_now().await;
            }
        }
        Ok(Finished {
            session,
            stats: stats.snapshot(),
        })
    }
}

/// Drains `poll_transmit` into batches and sends them; returns whether the socket buffer is
/// full (the rest waits in `pending` until the socket is writable).
fn flush<S: Session>(
    fd: &mut AsyncFd<UdpSocket>,
    session: &mut S,
    pending: &mut Vec<Transmit>,
    peer: Peer,
    stats: &Stats,
    max: usize,
) -> bool {
    let now = Instant::now();
    loop {
        while pending.len() < max {
            match session.poll_transmit(now) {
                Some(t) if peer == Peer::Learned && t.destination.is_none() => {
                    stats.send_error(Some(libc::EDESTADDRREQ), 1);
                }
                Some(t) => pending.push(t),
                None => break,
            }
        }
        let Some(first) = pending.first() else {
            return false;
        };
        let dest = match peer {
            Peer::Fixed(p) => p,
            Peer::Learned => first.destination.expect("checked when queued"),
        };
        stats.send_call();
        match fd.get_mut().send_batch(dest, pending) {
            Ok(n) => {
                for t in pending.drain(..n) {
                    stats.datagram_out(t.payload.len(), t.ecn);
                }
            }
            Err(failure) if failure.error.kind() == io::ErrorKind::WouldBlock => {
                stats.would_block();
                return true;
            }
            Err(failure) => {
                let lost = failure.datagrams.clamp(1, pending.len());
                tracing::debug!(error = %failure.error, lost, "send failed; datagrams dropped");
                stats.send_error(failure.error.raw_os_error(), lost);
                pending.drain(..lost);
            }
        }
    }
}

/// Receive errors that concern one datagram or an ICMP report, not the socket.
fn transient_recv_error(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::Interrupted
        || matches!(
            e.raw_os_error(),
            Some(
                libc::ECONNREFUSED
                    | libc::EHOSTUNREACH
                    | libc::ENETUNREACH
                    | libc::ENOMEM
                    | libc::ENOBUFS
            )
        )
}

/// IPv4-mapped IPv6 addresses as IPv4, the way received sources are reported.
fn canonical(addr: SocketAddr) -> SocketAddr {
    match addr {
        SocketAddr::V6(a) => match a.ip().to_ipv4_mapped() {
            Some(v4) => SocketAddr::from((v4, a.port())),
            None => addr,
        },
        v4 => v4,
    }
}

impl<S: Session> DriverHandle<S> {
    /// Runs `f` on the session inside the driver (e.g. to push an encoded frame), with the
    /// driver's `now`. Waits if the command queue is full; fails once the driver has stopped.
    pub async fn call(
        &self,
        f: impl FnOnce(&mut S, Instant) + Send + 'static,
    ) -> Result<(), Error> {
        self.commands
            .send(Box::new(f))
            .await
            .map_err(|_| Error::DriverStopped)
    }

    /// Hands `f` to the driver without waiting: `Ok(false)` if its command queue is full (the
    /// driver has not kept up; `f` is dropped unrun), an error once it has stopped. For a
    /// caller that must not wait on one driver, such as a loop that feeds several.
    pub fn try_call(
        &self,
        f: impl FnOnce(&mut S, Instant) + Send + 'static,
    ) -> Result<bool, Error> {
        match self.commands.try_send(Box::new(f)) {
            Ok(()) => Ok(true),
            Err(mpsc::error::TrySendError::Full(_)) => Ok(false),
            Err(mpsc::error::TrySendError::Closed(_)) => Err(Error::DriverStopped),
        }
    }

    /// Whether the driver has stopped (its commands go nowhere).
    pub fn is_stopped(&self) -> bool {
        self.commands.is_closed()
    }

    /// Runs `f` on the session inside the driver and returns its answer (e.g. the session's
    /// statistics).
    pub async fn query<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut S, Instant) -> R + Send + 'static,
    ) -> Result<R, Error> {
        let (tx, rx) = oneshot::channel();
        self.call(move |s, now| {
            // The caller may have given up waiting; then nobody needs the answer.
            let _ = tx.send(f(s, now));
        })
        .await?;
        rx.await.map_err(|_| Error::DriverStopped)
    }

    /// The next session event; `None` once the driver has stopped and all were taken.
    pub async fn next_event(&mut self) -> Option<S::Event> {
        self.events.recv().await
    }

    /// A session event if one is waiting.
    pub fn try_next_event(&mut self) -> Option<S::Event> {
        self.events.try_recv().ok()
    }

    /// The driver's counters now.
    pub fn stats(&self) -> StatsSnapshot {
        self.stats.snapshot()
    }

    /// The live counters, to read from elsewhere.
    pub fn stats_handle(&self) -> Arc<Stats> {
        Arc::clone(&self.stats)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapped_peer_is_compared_as_ipv4() {
        assert_eq!(
            canonical("[::ffff:10.0.0.1]:5".parse().unwrap()),
            "10.0.0.1:5".parse::<SocketAddr>().unwrap()
        );
        let v6: SocketAddr = "[2001:db8::1]:5".parse().unwrap();
        assert_eq!(canonical(v6), v6);
    }
}
