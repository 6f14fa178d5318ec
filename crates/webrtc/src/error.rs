//! The crate's error type.

/// What can go wrong in a WebRTC peer. Bad input from the network or the signalling channel
/// is always one of these, never a panic.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The offer or answer is not SDP `rtc` can read.
    #[error("malformed SDP: {0}")]
    BadSdp(String),
    /// The offer has no video section we could answer.
    #[error("the offer has no video section")]
    NoVideo,
    /// The offer's video section has no codec cg can send (for H.264: profile 42e01f with
    /// packetization-mode 1).
    #[error("the offer has no {0} cg can send")]
    NoCommonCodec(&'static str),
    /// A codec WebRTC peers do not negotiate with cg (H.265 in browsers).
    #[error("{0} is not offered in WebRTC mode (VP8 and H.264 are)")]
    UnsupportedCodec(&'static str),
    /// The offer lacks the feedback the sender's congestion controller runs on.
    #[error("the offer has no {0} feedback, which the sender's controller needs")]
    MissingFeedback(&'static str),
    /// The application could not host the session (no socket, shutting down).
    #[error("cannot host the session: {0}")]
    Host(String),
    /// The peer's address cannot be an ICE host candidate (0.0.0.0, port 0).
    #[error("{0} cannot be a host candidate: give the socket's own address and port")]
    BadAddress(std::net::SocketAddr),
    /// A packet handed to [`crate::WebRtcPeer::send_rtp`] / `send_rtcp` does not parse.
    #[error("not a valid {kind} packet: {reason}")]
    BadPacket {
        /// "RTP" or "RTCP".
        kind: &'static str,
        /// The parser's complaint.
        reason: String,
    },
    /// A WHEP/WHIP request failed (feature `http`).
    #[error("WHEP/WHIP: {0}")]
    Http(String),
    /// An error from the `rtc` core (ICE, DTLS, SRTP, SDP negotiation).
    #[error("webrtc: {0}")]
    Rtc(#[from] rtc::shared::error::Error),
}
