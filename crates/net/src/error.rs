//! The one error type of cg-net.

use std::io;
use std::net::SocketAddr;

/// Everything that can go wrong in cg-net.
///
/// Errors of single datagrams in a running driver (ENOBUFS, ECONNREFUSED, a datagram from a
/// foreign peer…) are *not* returned: they are counted in [`crate::Stats`] and the driver goes
/// on. Only set-up failures and a dead socket end a run with an `Error`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A system call failed; `op` names it (e.g. `"bind"`, `"setsockopt(IP_RECVTOS)"`).
    #[error("{op}: {source}")]
    Io {
        /// The operation that failed.
        op: &'static str,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The peer's address family differs from the socket's (an IPv4 socket cannot reach an IPv6
    /// peer; cg-net opens IPv6 sockets `IPV6_V6ONLY`).
    #[error("peer {peer} has another address family than the local socket {local}")]
    AddressFamily {
        /// The socket's local address.
        local: SocketAddr,
        /// The configured peer.
        peer: SocketAddr,
    },
    /// The driver has stopped; the session can no longer be reached.
    #[error("the driver has stopped")]
    DriverStopped,
    /// A datagram larger than the largest UDP payload was handed to the socket.
    #[error("datagram of {len} bytes exceeds the UDP maximum of {max} bytes")]
    TooLarge {
        /// Its length in bytes.
        len: usize,
        /// The limit in bytes.
        max: usize,
    },
}

impl Error {
    pub(crate) fn io(op: &'static str) -> impl FnOnce(io::Error) -> Error {
        move |source| Error::Io { op, source }
    }
}
