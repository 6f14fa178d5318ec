//! The sender's configuration.

use std::time::Duration;

use cg_types::Ecn;

use crate::pacer::PacerConfig;
use crate::{Codec, Error, ExtensionIds, NumReportsConvention};

/// RTP payload types (dynamic range 96–127, RFC 3551 §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PayloadTypes {
    /// VP8. Default 96.
    pub vp8: u8,
    /// H.264. Default 102.
    pub h264: u8,
    /// H.265. Default 104.
    pub h265: u8,
    /// RTX (RFC 4588) for every media payload type: the receiver learns the original payload
    /// type from the stored packet's RTP stream, not from `apt`. Default 97.
    pub rtx: u8,
}

impl Default for PayloadTypes {
    fn default() -> Self {
        Self {
            vp8: 96,
            h264: 102,
            h265: 104,
            rtx: 97,
        }
    }
}

impl PayloadTypes {
    /// The payload type of a codec.
    pub fn of(&self, codec: Codec) -> u8 {
        match codec {
            Codec::Vp8 => self.vp8,
            Codec::H264 => self.h264,
            Codec::H265 => self.h265,
        }
    }

    /// The codec of a payload type.
    pub fn codec(&self, pt: u8) -> Option<Codec> {
        [Codec::Vp8, Codec::H264, Codec::H265]
            .into_iter()
            .find(|c| self.of(*c) == pt)
    }

    /// All distinct and within 96..=127.
    pub fn validate(&self) -> Result<(), Error> {
        let v = [self.vp8, self.h264, self.h265, self.rtx];
        if v.iter().any(|pt| !(96..=127).contains(pt)) {
            return Err(Error::Config("payload types must be dynamic (96..=127)"));
        }
        for (i, a) in v.iter().enumerate() {
            if v[i + 1..].contains(a) {
                return Err(Error::Config("payload types must be distinct"));
            }
        }
        Ok(())
    }
}

/// How long media the sender sent may go without feedback before it halves its rate (the
/// clock starts at the first packet sent after the last feedback), and again after
/// each further such period down to 1/16 of the controller's rate, until feedback returns
/// (RFC 8888 §5: "if multiple consecutive congestion control feedback packets are lost, then
/// the media sender SHOULD rapidly reduce its sending rate"). The circuit breaker
/// ([`SenderConfig::rtcp_timeout`]) still stops media after its own timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FeedbackLossResponse {
    /// From the controller's feedback: 0.5 s with transport-wide CC or RFC 8888 (reports
    /// every 40–100 ms, so about five in a row lost or late), 3 s with REMB (REMB and
    /// receiver reports come about once a second, RRs randomised over 0.4–1.2 s).
    #[default]
    Auto,
    /// After this long (zero: never).
    After(Duration),
    /// Never: only the circuit breaker acts.
    Off,
}

impl FeedbackLossResponse {
    /// The silence after which the rate is halved, for a controller fed by `kind`.
    pub fn period(self, kind: cg_cc::FeedbackKind) -> Option<Duration> {
        match self {
            FeedbackLossResponse::Auto => Some(match kind {
                cg_cc::FeedbackKind::Remb => Duration::from_secs(3),
                cg_cc::FeedbackKind::TransportWideCc | cg_cc::FeedbackKind::Rfc8888 => {
                    Duration::from_millis(500)
                }
            }),
            FeedbackLossResponse::After(d) => Some(d).filter(|d| !d.is_zero()),
            FeedbackLossResponse::Off => None,
        }
    }
}

/// Sender settings. Every default is chosen for an interactive video session.
#[derive(Debug, Clone, PartialEq)]
pub struct SenderConfig {
    /// Media SSRC. Default 0x6367_0001. RFC 3550 §8 wants it random: a driver with several
    /// sessions should draw it from its own seeded `Rng`.
    pub ssrc: u32,
    /// RTX (retransmission and padding) SSRC, RFC 4588. Default 0x6367_0002.
    pub rtx_ssrc: u32,
    /// Payload types.
    pub payload_types: PayloadTypes,
    /// Header extension ids.
    pub extensions: ExtensionIds,
    /// Largest UDP payload: the RTP packet (header, extensions, payload) plus
    /// `transport_overhead`. Default 1200 bytes, the common WebRTC choice that fits IPv6 +
    /// tunnels under a 1280-byte path MTU.
    pub max_packet_size: usize,
    /// Bytes the transport adds to every RTP packet inside the UDP payload: the SRTP
    /// authentication tag in WebRTC mode (10 bytes with AES_CM_128_HMAC_SHA1_80, 16 with
    /// AEAD_AES_128_GCM). Kept out of the payload budget and counted in every packet size the
    /// controller and the pacer see, so the rate they steer is the rate on the wire. Default
    /// 0 (plain RTP).
    pub transport_overhead: usize,
    /// ECN code point for RTP packets (RTCP is always Not-ECT). Default Not-ECT; ECT(1) for
    /// L4S (RFC 9331), ECT(0) for classic ECN (RFC 6679).
    pub ecn: Ecn,
    /// Pacer settings.
    pub pacer: PacerConfig,
    /// Retransmission history: packets kept. Default 8192 (≈ 1 s at 100 Mbit/s).
    pub history_packets: usize,
    /// Retransmission history: oldest packet kept. Default 1 s (a retransmission later than
    /// that misses any interactive playout deadline).
    pub history_age: Duration,
    /// Sender-report interval. Default 1 s (RFC 4585 §3.4 reduced-interval regime; keeps
    /// RTT samples frequent for RR-based controllers).
    pub sr_interval: Duration,
    /// Circuit-breaker RTCP timeout, RFC 8083 §4.1: 3 × Td with Tmin = 5 s = 15 s (default).
    pub rtcp_timeout: Duration,
    /// When missing feedback the controller runs on halves the rate before the breaker stops
    /// it (RFC 8888 §5).
    /// Default [`FeedbackLossResponse::Auto`].
    pub feedback_loss: FeedbackLossResponse,
    /// CNAME for SDES (RFC 3550 §6.5.1). Default "cg-sender".
    pub cname: String,
    /// NTP time (RFC 5905 64-bit) at the session's start `Instant`; the driver reads it from
    /// the system clock. Default 0: session-relative NTP.
    pub ntp_at_start: u64,
    /// How to read RFC 8888 `num_reports`. Default [`NumReportsConvention::Count`].
    pub ccfb_convention: NumReportsConvention,
    /// Seed for the initial RTP sequence number and timestamp offset (RFC 3550 §5.1 wants
    /// them random). Default 1.
    pub seed: u64,
    /// Bytes of RTP padding in a padding packet (at most 255, the P-bit count field). Default 255.
    pub padding_bytes: u8,
    /// Probe padding as RTX retransmissions of the newest sent packet (libwebrtc's "payload
    /// padding"; receivers drop them as duplicates) instead of padding-only packets. Default
    /// false; WebRTC mode sets it, because `rtc`'s RTP packet type cannot carry more than 4
    /// bytes of padding (it strips padding when parsing and re-pads to a multiple of 4), so a
    /// 255-byte padding-only probe packet would leave as a 4-byte one.
    pub payload_padding: bool,
    /// When the controller's target reaches the encoder ([`SenderEvent::TargetBitrate`]):
    /// the floor (also the idle rate while the circuit breaker pauses media) and the relative
    /// change that is passed on. Default no floor, every change.
    ///
    /// [`SenderEvent::TargetBitrate`]: crate::SenderEvent::TargetBitrate
    pub encoder_target: cg_cc::EncoderTargetConfig,
    /// Playout-delay limits asked of the receiver on the first packet of every frame (the
    /// playout-delay header extension, when its id is set). Default `None`: nothing asked,
    /// the receiver chooses.
    pub playout_delay: Option<crate::PlayoutDelay>,
}

impl Default for SenderConfig {
    fn default() -> Self {
        Self {
            ssrc: 0x6367_0001,
            rtx_ssrc: 0x6367_0002,
            payload_types: PayloadTypes::default(),
            extensions: ExtensionIds::default(),
            max_packet_size: 1200,
            transport_overhead: 0,
            ecn: Ecn::NotEct,
            pacer: PacerConfig::default(),
            history_packets: 8192,
            history_age: Duration::from_secs(1),
            sr_interval: Duration::from_secs(1),
            rtcp_timeout: Duration::from_secs(15),
            feedback_loss: FeedbackLossResponse::Auto,
            cname: "cg-sender".into(),
            ntp_at_start: 0,
            ccfb_convention: NumReportsConvention::Count,
            seed: 1,
            padding_bytes: 255,
            payload_padding: false,
            encoder_target: cg_cc::EncoderTargetConfig::default(),
            playout_delay: None,
        }
    }
}

impl SenderConfig {
    /// Checks the values that would make the session misbehave.
    pub fn validate(&self) -> Result<(), Error> {
        self.payload_types.validate()?;
        self.extensions.validate()?;
        if let Some(d) = self.playout_delay {
            d.validate()?;
        }
        if self.ssrc == self.rtx_ssrc {
            return Err(Error::Config("media and RTX SSRC must differ"));
        }
        if self.max_packet_size
            < self.transport_overhead + 12 + self.extensions.max_overhead() + 2 + 64
        {
            return Err(Error::Config(
                "max_packet_size leaves under 64 payload bytes",
            ));
        }
        if self.padding_bytes == 0 {
            return Err(Error::Config("padding_bytes must be at least 1"));
        }
        self.encoder_target.validate()?;
        Ok(())
    }

    /// Payload bytes per packet: room for the transport's overhead, the header, every
    /// extension and RTX's 2-byte original sequence number, so a retransmission is never
    /// larger than the MTU.
    pub fn max_payload(&self) -> usize {
        self.max_packet_size - self.transport_overhead - 12 - self.extensions.max_overhead() - 2
    }
}
