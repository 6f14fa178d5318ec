//! What the shared loop needs of a session: the [`ReceiverSession`] inside it, plain or
//! behind a WebRTC peer.

use cg_rtp::{ReceiverEvent, ReceiverSession};
use cg_webrtc::{PeerState, WebRtcEvent, WebRtcSession};

/// A session whose [`ReceiverSession`] the loop can reach: the plain one, or one behind a
/// WebRTC peer.
pub(crate) trait HasReceiver: cg_net::Session {
    fn receiver(&mut self) -> &mut ReceiverSession;
    /// The receiver's event inside the session's; `Err(true)` when the session has ended for
    /// good (a WebRTC peer failed or closed), `Err(false)` for other events.
    fn receiver_event(e: Self::Event) -> Result<ReceiverEvent, bool>;
}

impl HasReceiver for ReceiverSession {
    fn receiver(&mut self) -> &mut ReceiverSession {
        self
    }
    fn receiver_event(e: ReceiverEvent) -> Result<ReceiverEvent, bool> {
        Ok(e)
    }
}

impl HasReceiver for WebRtcSession<ReceiverSession> {
    fn receiver(&mut self) -> &mut ReceiverSession {
        self.inner_mut()
    }
    fn receiver_event(e: WebRtcEvent<ReceiverEvent>) -> Result<ReceiverEvent, bool> {
        match e {
            WebRtcEvent::Media(e) => Ok(e),
            WebRtcEvent::State(s) => {
                tracing::info!(?s, "WebRTC peer");
                Err(matches!(s, PeerState::Failed | PeerState::Closed))
            }
        }
    }
}
