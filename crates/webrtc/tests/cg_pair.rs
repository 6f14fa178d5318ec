//! cg ↔ cg in WebRTC mode, in memory and simulated time: cg-recv's peer offers, cg-send's
//! answers, and real cg-rtp sessions configured from the negotiation run over SRTP — frames
//! arrive bit-exact, each controller gets its feedback (transport-wide CC, REMB, RFC 8888 with
//! the ECT(1) marks), and the SRTP tag is counted in what the controller sees.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use cg_cc::gcc::GccConfig;
use cg_cc::scream::ScreamConfig;
use cg_cc::{ControllerConfig, FeedbackKind};
use cg_rtp::{
    Codec, EncodedFrame, FeedbackConfig, ReceiverConfig, ReceiverEvent, ReceiverSession,
    SenderConfig, SenderSession,
};
use cg_types::{Bitrate, Ecn};
use cg_webrtc::{PeerConfig, PeerState, WebRtcEvent, WebRtcPeer, WebRtcSession};

const RECV: &str = "10.9.0.1:5000";
const SEND: &str = "10.9.0.2:6000";
const ONE_WAY: Duration = Duration::from_millis(10);

struct Pair {
    now: Instant,
    tx: WebRtcSession<SenderSession>,
    rx: WebRtcSession<ReceiverSession>,
    /// (due, to the receiver?, bytes, ecn)
    wire: VecDeque<(Instant, bool, Bytes, Ecn)>,
    frames: Vec<Bytes>,
    tx_connected: bool,
    rx_connected: bool,
    /// Largest UDP payload seen from the sender.
    largest: usize,
    /// When both ends were first connected.
    connected_at: Option<Instant>,
}

impl Pair {
    /// With `model`, both peers carry the model encoder's frames (`CG-MODEL`).
    fn new(kind: FeedbackKind, cc: &dyn ControllerConfig, ecn: Ecn, model: bool) -> Self {
        let now = Instant::now();
        let rx_cfg = PeerConfig {
            model,
            ..PeerConfig::new(RECV.parse().unwrap())
        };
        let (mut rx_peer, offer) = WebRtcPeer::offer(&rx_cfg, now).unwrap();
        let tx_cfg = PeerConfig {
            media_ecn: ecn,
            model,
            ..PeerConfig::new(SEND.parse().unwrap())
        };
        let (tx_peer, answer) = WebRtcPeer::answer(&tx_cfg, &offer, now).unwrap();
        rx_peer.accept_answer(&answer, now).unwrap();
        let mut s = SenderConfig {
            ssrc: tx_cfg.ssrc,
            rtx_ssrc: tx_cfg.rtx_ssrc,
            ecn,
            ..SenderConfig::default()
        };
        tx_peer.negotiated().unwrap().apply_to(&mut s, kind);
        let mut r = ReceiverConfig {
            feedback: FeedbackConfig::for_kind(kind),
            ..ReceiverConfig::default()
        };
        let n = rx_peer.negotiated().unwrap().clone();
        assert_eq!((n.codec, n.model), (Codec::Vp8, model));
        assert_eq!(tx_peer.negotiated().unwrap().model, model);
        n.apply_to_receiver(&mut r);
        assert_eq!((r.media_ssrc, r.rtx_ssrc), (tx_cfg.ssrc, tx_cfg.rtx_ssrc));
        let est: Option<Box<dyn cg_cc::ReceiveSideEstimator>> = (kind == FeedbackKind::Remb)
            .then(|| Box::new(GccConfig::default().build_receiver(now).unwrap()) as _);
        Self {
            now,
            tx: WebRtcSession::new(
                tx_peer,
                SenderSession::with_controller_config(s, cc, now).unwrap(),
            ),
            rx: WebRtcSession::new(rx_peer, ReceiverSession::new(r, est, now).unwrap()),
            wire: VecDeque::new(),
            frames: vec![],
            tx_connected: false,
            rx_connected: false,
            largest: 0,
            connected_at: None,
        }
    }

    /// Runs until `until`, pushing a frame from `source` whenever it is due once connected.
    fn run(
        &mut self,
        until: Instant,
        source: &mut impl FnMut(Instant, Bitrate) -> Option<EncodedFrame>,
    ) {
        let (rx_addr, tx_addr): (SocketAddr, SocketAddr) =
            (RECV.parse().unwrap(), SEND.parse().unwrap());
        while self.now < until {
            if self.tx_connected && self.rx_connected {
                self.connected_at.get_or_insert(self.now);
                let target = self.tx.inner().target_bitrate();
                if let Some(f) = source(self.now, target) {
                    self.tx.inner_mut().push_frame(f, self.now).unwrap();
                }
            }
            self.tx.handle_timeout(self.now);
            self.rx.handle_timeout(self.now);
            while let Some(t) = self.tx.poll_transmit(self.now) {
                assert_eq!(t.destination, rx_addr);
                self.largest = self.largest.max(t.bytes.len());
                self.wire
                    .push_back((self.now + ONE_WAY, true, t.bytes, t.ecn));
            }
            while let Some(t) = self.rx.poll_transmit(self.now) {
                assert_eq!(t.destination, tx_addr);
                self.wire
                    .push_back((self.now + ONE_WAY, false, t.bytes, t.ecn));
            }
            while self.wire.front().is_some_and(|w| w.0 <= self.now) {
                let (at, fwd, b, ecn) = self.wire.pop_front().unwrap();
                if fwd {
                    self.rx.handle_datagram(self.now, tx_addr, &b, ecn, at);
                } else {
                    self.tx.handle_datagram(self.now, rx_addr, &b, ecn, at);
                }
            }
            while let Some(e) = self.tx.poll_event() {
                if let WebRtcEvent::State(s) = e {
                    self.tx_connected = s == PeerState::Connected;
                }
            }
            while let Some(e) = self.rx.poll_event() {
                match e {
                    WebRtcEvent::State(s) => self.rx_connected = s == PeerState::Connected,
                    WebRtcEvent::Media(ReceiverEvent::Frame(f)) => self.frames.push(f.data),
                    WebRtcEvent::Media(_) => {}
                }
            }
            let next = [
                self.tx.poll_timeout(),
                self.rx.poll_timeout(),
                self.wire.front().map(|w| w.0),
            ]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(self.now + Duration::from_millis(1));
            self.now = next.clamp(
                self.now + Duration::from_micros(100),
                self.now + Duration::from_millis(5),
            );
        }
    }
}

/// 30 fps frames at the controller's target (as an encoder would follow it), a key frame
/// first; records what it sends.
fn source(sent: &mut Vec<Bytes>) -> impl FnMut(Instant, Bitrate) -> Option<EncodedFrame> + '_ {
    let mut next: Option<Instant> = None;
    move |now, target| {
        if next.is_some_and(|t| now < t) {
            return None;
        }
        next = Some(now + Duration::from_millis(33));
        let n = sent.len();
        let key = n == 0;
        let data: Bytes = std::iter::once(if key { 0x10 } else { 0x11 })
            .chain(
                (1..(target.as_bps() / 8 / 30) as usize)
                    .map(|i| (i as u8).wrapping_mul(31).wrapping_add(n as u8) | 1),
            )
            .collect::<Vec<u8>>()
            .into();
        sent.push(data.clone());
        Some(EncodedFrame {
            encoded: None,
            data,
            capture_time: now,
            key_frame: key,
            codec: Codec::Vp8,
        })
    }
}

fn check(kind: FeedbackKind, cc: &dyn ControllerConfig, ecn: Ecn) -> Pair {
    check_as(kind, cc, ecn, false)
}

fn check_as(kind: FeedbackKind, cc: &dyn ControllerConfig, ecn: Ecn, model: bool) -> Pair {
    let mut p = Pair::new(kind, cc, ecn, model);
    let t0 = p.now;
    let mut sent = vec![];
    p.run(t0 + Duration::from_secs(3), &mut source(&mut sent));
    assert!(p.tx_connected && p.rx_connected, "{kind:?}: connected");
    let setup = p.connected_at.unwrap() - t0;
    eprintln!("{kind:?}: connected after {setup:?}");
    assert!(sent.len() >= 60, "{kind:?}: {} frames sent", sent.len());
    assert!(
        p.frames.len() + 3 >= sent.len(),
        "{kind:?}: {} of {} frames",
        p.frames.len(),
        sent.len()
    );
    for (got, want) in p.frames.iter().zip(&sent) {
        assert_eq!(got, want, "{kind:?}: frames bit-exact");
    }
    assert_eq!(p.rx.inner().stats().malformed, 0);
    assert_eq!((p.tx.refused(), p.rx.refused()), (0, 0));
    assert!(
        p.largest <= 1200,
        "{kind:?}: {} bytes with the SRTP tag",
        p.largest
    );
    // RR every second at least, and the controller's own feedback.
    assert!(
        p.tx.inner().stats().rtcp_received >= 3,
        "{kind:?}: feedback reaches the sender"
    );
    p
}

#[test]
fn send_side_gcc_runs_on_transport_wide_feedback() {
    let p = check(
        FeedbackKind::TransportWideCc,
        &GccConfig::send_side(),
        Ecn::NotEct,
    );
    assert!(p.rx.inner().stats().twcc_sent > 20);
    assert!(p.tx.inner().controller().stats().rtt.is_some());
}

#[test]
fn gcc_remb_runs_on_the_receivers_estimate() {
    let p = check(FeedbackKind::Remb, &GccConfig::default(), Ecn::NotEct);
    assert!(p.rx.inner().stats().remb_sent > 0);
    assert!(p.tx.inner().stats().remb.is_some());
}

#[test]
fn scream_runs_on_rfc8888_with_the_ect1_marks() {
    let cc = ScreamConfig {
        ecn: Ecn::Ect1,
        ..ScreamConfig::default()
    };
    let p = check(FeedbackKind::Rfc8888, &cc, Ecn::Ect1);
    let s = p.rx.inner().stats();
    assert!(s.ccfb_sent > 20);
    // Every media packet arrived ECT(1), and the receiver saw it through the tap.
    assert!(s.ecn[Ecn::Ect1 as usize] >= s.media_packets, "{:?}", s.ecn);
    assert!(p.tx.inner().controller().stats().queue_delay.is_some());
}

/// The model encoder's frames (framed as VP8) cross under `CG-MODEL` when both ends ask for
/// it, with the controller's feedback as for a picture.
#[test]
fn the_model_encoders_frames_cross_as_cg_model() {
    let cc = ScreamConfig {
        ecn: Ecn::Ect1,
        ..ScreamConfig::default()
    };
    let p = check_as(FeedbackKind::Rfc8888, &cc, Ecn::Ect1, true);
    assert!(p.rx.inner().stats().ccfb_sent > 20);
}
