//! The tap: the only interceptor in cg's `rtc` registry. It takes every SRTP-decrypted RTP and
//! RTCP packet off the read path, before `rtc`'s endpoint would unwrap RTX or route RTCP to a
//! track (and drop what matches none), and hands it to cg's sessions as bytes. Outbound packets
//! pass through untouched: cg's sessions have already written every header, extension and
//! feedback message.
//!
//! `rtc` owns its interceptors (boxed in the registry), so the tap and the peer share a queue
//! behind a mutex. The read pipeline is synchronous — `handle_read` returns only after the
//! packet has passed the tap — so the lock is never contended and the arrival ECN code point,
//! which `rtc`'s ICE handler drops from the read-side transport context, can be carried around
//! it in the same shared state: the peer stores it before `handle_read`, the tap reads it.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use cg_types::Ecn;
use rtc::interceptor::{Interceptor, Packet, StreamInfo, TaggedPacket};
use rtc::shared::marshal::Marshal;

/// A decrypted RTP or RTCP packet, as it came off the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inbound {
    /// The packet's bytes: RTP (with padding and extensions as sent) or a compound RTCP packet.
    pub bytes: Bytes,
    /// ECN code point of the datagram that carried it.
    pub ecn: Ecn,
    /// When the datagram was handed to [`crate::WebRtcPeer::handle_datagram`].
    pub at: Instant,
}

/// What the tap and the peer share.
#[derive(Debug, Default)]
pub(crate) struct TapState {
    /// ECN of the datagram now in `handle_read`.
    pub(crate) ecn: Ecn,
    /// Packets taken off the read path, oldest first.
    pub(crate) inbound: VecDeque<Inbound>,
    /// Packets the tap could not re-marshal (counted, never a panic).
    pub(crate) unmarshalable: u64,
}

/// The shared half kept by the peer.
pub(crate) type TapHandle = Arc<Mutex<TapState>>;

/// The interceptor half, boxed into `rtc`'s registry.
pub(crate) struct Tap {
    state: TapHandle,
    write_queue: VecDeque<TaggedPacket>,
}

impl Tap {
    pub(crate) fn new(state: TapHandle) -> Self {
        Self {
            state,
            write_queue: VecDeque::new(),
        }
    }
}

impl rtc::sansio::Protocol<TaggedPacket, TaggedPacket, ()> for Tap {
    type Rout = TaggedPacket;
    type Wout = TaggedPacket;
    type Eout = ();
    type Error = rtc::shared::error::Error;
    type Time = Instant;

    /// Takes the packet for cg and queues nothing: `rtc`'s endpoint never sees it.
    fn handle_read(&mut self, msg: TaggedPacket) -> Result<(), Self::Error> {
        let bytes = match &msg.message.packet {
            Packet::Rtp(p) => p.marshal().map(|b| b.freeze()),
            Packet::Rtcp(ps) if ps.is_empty() => return Ok(()), // an attribute carrier
            Packet::Rtcp(ps) => rtc::rtcp::packet::marshal(ps).map(|b| b.freeze()),
            _ => return Ok(()),
        };
        let mut s = self
            .state
            .lock()
            .expect("tap mutex: never held across a panic");
        match bytes {
            Ok(bytes) => {
                let ecn = s.ecn;
                s.inbound.push_back(Inbound {
                    bytes,
                    ecn,
                    at: msg.now,
                });
            }
            Err(_) => s.unmarshalable += 1,
        }
        Ok(())
    }

    fn poll_read(&mut self) -> Option<Self::Rout> {
        None
    }

    fn handle_write(&mut self, msg: TaggedPacket) -> Result<(), Self::Error> {
        self.write_queue.push_back(msg);
        Ok(())
    }

    fn poll_write(&mut self) -> Option<Self::Wout> {
        self.write_queue.pop_front()
    }
}

impl Interceptor for Tap {
    fn bind_local_stream(&mut self, _info: &StreamInfo) {}
    fn unbind_local_stream(&mut self, _info: &StreamInfo) {}
    fn bind_remote_stream(&mut self, _info: &StreamInfo) {}
    fn unbind_remote_stream(&mut self, _info: &StreamInfo) {}
}
