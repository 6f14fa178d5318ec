//! Media, TCP and constant-bit-rate endpoints in one [`cg_link::sim::Sim`], which takes one
//! sender type and one receiver type: an enum of each, delegating.

use std::time::Instant;

use cg_link::sim::{Delivered, Endpoint, Transmit};

use crate::sim::cbr::{CbrSender, CbrSink};
use crate::sim::packet::SimPacket;
use crate::sim::receiver::SimReceiver;
use crate::sim::sender::SimSender;
use crate::sim::tcp::{TcpReceiver, TcpSender};

/// A media, TCP or constant-bit-rate sender.
#[derive(Debug)]
pub enum AnySender {
    /// A real-time controller's sender.
    Media(SimSender),
    /// A TCP bulk sender.
    Tcp(TcpSender),
    /// A constant-bit-rate datagram sender.
    Cbr(CbrSender),
}

/// A media, TCP or constant-bit-rate receiver.
// One per pair, kept in the simulation's `Vec`: boxing the larger variant would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum AnyReceiver {
    /// A media receiver (feedback generator).
    Media(SimReceiver),
    /// A TCP receiver (ACKs).
    Tcp(TcpReceiver),
    /// A constant-bit-rate sink (silent).
    Cbr(CbrSink),
}

impl AnySender {
    /// The media sender, if this is one.
    pub fn media(&self) -> Option<&SimSender> {
        match self {
            AnySender::Media(s) => Some(s),
            _ => None,
        }
    }

    /// The TCP sender, if this is one.
    pub fn tcp(&self) -> Option<&TcpSender> {
        match self {
            AnySender::Tcp(s) => Some(s),
            _ => None,
        }
    }

    /// The constant-bit-rate sender, if this is one.
    pub fn cbr(&self) -> Option<&CbrSender> {
        match self {
            AnySender::Cbr(s) => Some(s),
            _ => None,
        }
    }
}

impl AnyReceiver {
    /// The media receiver, if this is one.
    pub fn media(&self) -> Option<&SimReceiver> {
        match self {
            AnyReceiver::Media(r) => Some(r),
            _ => None,
        }
    }

    /// The TCP receiver, if this is one.
    pub fn tcp(&self) -> Option<&TcpReceiver> {
        match self {
            AnyReceiver::Tcp(r) => Some(r),
            _ => None,
        }
    }

    /// The constant-bit-rate sink, if this is one.
    pub fn cbr(&self) -> Option<&CbrSink> {
        match self {
            AnyReceiver::Cbr(r) => Some(r),
            _ => None,
        }
    }
}

impl From<SimSender> for AnySender {
    fn from(s: SimSender) -> Self {
        AnySender::Media(s)
    }
}

impl From<TcpSender> for AnySender {
    fn from(s: TcpSender) -> Self {
        AnySender::Tcp(s)
    }
}

impl From<CbrSender> for AnySender {
    fn from(s: CbrSender) -> Self {
        AnySender::Cbr(s)
    }
}

impl From<CbrSink> for AnyReceiver {
    fn from(r: CbrSink) -> Self {
        AnyReceiver::Cbr(r)
    }
}

impl From<SimReceiver> for AnyReceiver {
    fn from(r: SimReceiver) -> Self {
        AnyReceiver::Media(r)
    }
}

impl From<TcpReceiver> for AnyReceiver {
    fn from(r: TcpReceiver) -> Self {
        AnyReceiver::Tcp(r)
    }
}

/// Delegates every [`Endpoint`] method to the variant's endpoint.
macro_rules! delegate_endpoint {
    ($ty:ident) => {
        impl Endpoint for $ty {
            type Payload = SimPacket;

            fn handle_packet(&mut self, packet: Delivered<SimPacket>, now: Instant) {
                match self {
                    $ty::Media(e) => e.handle_packet(packet, now),
                    $ty::Tcp(e) => e.handle_packet(packet, now),
                    $ty::Cbr(e) => e.handle_packet(packet, now),
                }
            }

            fn poll_transmit(&mut self, now: Instant) -> Option<Transmit<SimPacket>> {
                match self {
                    $ty::Media(e) => e.poll_transmit(now),
                    $ty::Tcp(e) => e.poll_transmit(now),
                    $ty::Cbr(e) => e.poll_transmit(now),
                }
            }

            fn poll_timeout(&self) -> Option<Instant> {
                match self {
                    $ty::Media(e) => e.poll_timeout(),
                    $ty::Tcp(e) => e.poll_timeout(),
                    $ty::Cbr(e) => e.poll_timeout(),
                }
            }

            fn handle_timeout(&mut self, now: Instant) {
                match self {
                    $ty::Media(e) => e.handle_timeout(now),
                    $ty::Tcp(e) => e.handle_timeout(now),
                    $ty::Cbr(e) => e.handle_timeout(now),
                }
            }
        }
    };
}

delegate_endpoint!(AnySender);
delegate_endpoint!(AnyReceiver);

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use cg_link::qdisc::DropTailConfig;
    use cg_link::sim::Sim;
    use cg_link::{Link, LinkConfig, QdiscConfig};
    use cg_types::Bitrate;

    use super::*;
    use crate::FixedRate;
    use crate::sim::tcp::{TcpConfig, tcp_pair};
    use crate::sim::{ReceiverConfig, SenderConfig, metrics, pair};

    #[test]
    fn a_media_flow_and_a_tcp_flow_share_one_simulation() {
        let t0 = Instant::now();
        let fwd = LinkConfig::constant(Bitrate::mbps(10))
            .with_delay(Duration::from_millis(20))
            .with_qdisc(QdiscConfig::DropTail(DropTailConfig::time(
                Duration::from_millis(100),
            )));
        let rev = LinkConfig::constant(Bitrate::mbps(100)).with_delay(Duration::from_millis(20));
        let mut s: Sim<AnySender, AnyReceiver> = Sim::new(
            Link::new(fwd).expect("valid forward link"),
            Link::new(rev).expect("valid reverse link"),
            t0,
        );
        let (tx, rx) = pair(
            SenderConfig::default(),
            ReceiverConfig::default(),
            Box::new(FixedRate::new(Bitrate::mbps(2))),
            None,
            t0,
        );
        s.add_pair(tx.into(), rx.into());
        let (tx, rx) = tcp_pair(TcpConfig::default(), t0);
        s.add_pair(tx.into(), rx.into());
        let end = t0 + Duration::from_secs(5);
        s.run_until(end);
        assert!(s.sender(0).media().is_some() && s.sender(0).tcp().is_none());
        assert!(s.receiver(1).tcp().is_some() && s.receiver(1).media().is_none());
        let media_rx = s.receiver(0).media().expect("pair 0 is media").received();
        let tcp_rx = s.receiver(1).tcp().expect("pair 1 is TCP");
        assert!(media_rx > 500, "{media_rx} media packets");
        assert!(tcp_rx.segments_received() > 1000);
        let ev = s.forward().events();
        let from = t0 + Duration::from_secs(2);
        let u = metrics::utilisation(ev.iter(), Bitrate::mbps(10), from, end);
        assert!(
            u > 0.9,
            "the TCP flow fills what the media leaves: U {u:.3}"
        );
    }

    #[test]
    fn media_endpoints_ignore_tcp_packets() {
        let t0 = Instant::now();
        let (mut tx, mut rx) = pair(
            SenderConfig::default(),
            ReceiverConfig::default(),
            Box::new(FixedRate::new(Bitrate::mbps(1))),
            None,
            t0,
        );
        let delivered = |payload| Delivered {
            size: cg_types::DataSize::bytes(1500),
            ecn: cg_types::Ecn::Ce,
            payload,
            flow: cg_link::FlowId::from_index(0),
        };
        let seg = crate::sim::TcpSegment { seq: 7, sent: t0 };
        let ack = crate::sim::TcpAck {
            seq: 7,
            ce: true,
            sent: t0,
        };
        rx.handle_packet(delivered(SimPacket::TcpSegment(seg)), t0);
        rx.handle_packet(delivered(SimPacket::TcpAck(ack)), t0);
        tx.handle_packet(delivered(SimPacket::TcpAck(ack)), t0);
        tx.handle_packet(delivered(SimPacket::TcpSegment(seg)), t0);
        assert_eq!(rx.received(), 0);
        let later = t0 + Duration::from_secs(1);
        rx.handle_timeout(later);
        assert!(
            std::iter::from_fn(|| rx.poll_transmit(later)).all(|t| match t.payload {
                SimPacket::Feedback(f) => f.packets.is_empty(),
                _ => false,
            }),
            "nothing to report"
        );
    }
}
