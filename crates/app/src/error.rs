//! The one error type of cg-sender and cg-receiver.

use std::net::SocketAddr;

/// Everything that can stop a sender or receiver session from starting or running.
///
/// Per-packet trouble (a malformed datagram, a send error, a frame the pacer drops) is never
/// an `Error`: the layers below count it and the statistics show it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A configuration value is out of range or inconsistent.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// The local address could not be bound (in use, not local, no permission).
    #[error("cannot bind {addr}: {reason}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why, in words (e.g. "address already in use").
        reason: String,
    },
    /// The encoder, decoder or source could not be built or failed (unknown codec, NVENC
    /// without a GPU, missing plugin, unreadable file…).
    #[error(transparent)]
    Media(#[from] cg_media::Error),
    /// The RTP session refused its configuration.
    #[error("RTP session: {0}")]
    Rtp(#[from] cg_rtp::Error),
    /// The UDP driver failed (socket or timer).
    #[error("network: {0}")]
    Net(#[from] cg_net::Error),
    /// Writing statistics failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

impl From<cg_cc::UnknownController> for Error {
    fn from(e: cg_cc::UnknownController) -> Self {
        Error::Config(e.to_string())
    }
}

impl Error {
    /// `Error::Bind` from a cg-net bind failure, with the OS reason spelled out.
    pub fn bind(addr: SocketAddr, e: cg_net::Error) -> Error {
        let reason = match &e {
            cg_net::Error::Io { source, .. } => match source.kind() {
                std::io::ErrorKind::AddrInUse => "address already in use".to_owned(),
                std::io::ErrorKind::AddrNotAvailable => {
                    "address not available on this host".to_owned()
                }
                std::io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
                _ => e.to_string(),
            },
            _ => e.to_string(),
        };
        Error::Bind { addr, reason }
    }
}
