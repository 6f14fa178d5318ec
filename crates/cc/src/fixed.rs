//! A controller that holds one rate: for measuring a transport, a pacer or an encoder
//! without congestion control in the way (benchmarks, loopback tests, examples).

use std::time::Instant;

use cg_types::Bitrate;

use crate::{Controller, ControllerStats, Feedback, FeedbackKind, SentPacket};

/// Targets `rate`, paces at `pacing` (default the same) and asks for `feedback` (default
/// RFC 8888); ignores every input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedRate {
    /// The target.
    pub rate: Bitrate,
    /// The pacing rate.
    pub pacing: Bitrate,
    /// The feedback the receiver is asked for.
    pub feedback: FeedbackKind,
}

impl FixedRate {
    /// Targets and paces at `rate`, with RFC 8888 feedback.
    pub fn new(rate: Bitrate) -> Self {
        FixedRate {
            rate,
            pacing: rate,
            feedback: FeedbackKind::Rfc8888,
        }
    }

    /// Asks for `feedback`.
    pub fn feedback(mut self, feedback: FeedbackKind) -> Self {
        self.feedback = feedback;
        self
    }
}

impl Controller for FixedRate {
    fn on_packet_sent(&mut self, _: &SentPacket) {}
    fn on_feedback(&mut self, _: &Feedback<'_>, _: Instant) {}
    fn target_bitrate(&self) -> Bitrate {
        self.rate
    }
    fn pacing_rate(&self) -> Bitrate {
        self.pacing
    }
    fn feedback_kind(&self) -> FeedbackKind {
        self.feedback
    }
    fn stats(&self) -> ControllerStats {
        ControllerStats {
            target: self.rate,
            pacing: self.pacing,
            ..ControllerStats::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feedback_does_not_move_it() {
        let now = Instant::now();
        let mut c = FixedRate::new(Bitrate::mbps(2)).feedback(FeedbackKind::Remb);
        c.on_feedback(
            &Feedback {
                packets: &[],
                remb: Some(Bitrate::kbps(100)),
                loss: None,
                rtt: None,
                report_time: None,
            },
            now,
        );
        assert_eq!(c.target_bitrate(), Bitrate::mbps(2));
        assert_eq!(c.pacing_rate(), Bitrate::mbps(2));
        assert_eq!(c.feedback_kind(), FeedbackKind::Remb);
    }
}
