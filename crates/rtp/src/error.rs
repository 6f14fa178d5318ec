//! The crate's error type.

/// Everything that can go wrong in cg-rtp. Errors about bytes from the network are returned by
/// `handle_input` for logging and counted in the session stats; the session stays usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The datagram is neither RTP nor RTCP (wrong version, too short).
    #[error("not an RTP/RTCP datagram: {0}")]
    NotRtp(&'static str),
    /// The RTP packet could not be parsed.
    #[error("malformed RTP packet: {0}")]
    MalformedRtp(String),
    /// The RTCP packet could not be parsed.
    #[error("malformed RTCP packet: {0}")]
    MalformedRtcp(String),
    /// A codec payload could not be depacketized.
    #[error("malformed {codec} payload: {reason}")]
    MalformedPayload {
        /// The codec.
        codec: &'static str,
        /// What was wrong.
        reason: &'static str,
    },
    /// An RTP packet from an SSRC this session does not receive.
    #[error("RTP packet from unknown SSRC {0:#010x}")]
    UnknownSsrc(u32),
    /// An RTP packet with a payload type this session does not know.
    #[error("unknown payload type {0}")]
    UnknownPayloadType(u8),
    /// A frame handed to the sender is empty or cannot be packetized.
    #[error("cannot packetize frame: {0}")]
    BadFrame(&'static str),
    /// A configuration value is out of range.
    #[error("invalid configuration: {0}")]
    Config(&'static str),
    /// The congestion controller's config is out of range.
    #[error("invalid controller configuration: {0}")]
    Controller(#[from] cg_cc::ConfigError),
    /// Building an outgoing packet failed (a bug, reported rather than panicking).
    #[error("cannot build packet: {0}")]
    Build(String),
}
