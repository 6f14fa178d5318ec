//! RTP circuit breaker #1, RTCP timeout (RFC 8083 §4.1).
//!
//! A sender that has received no RTCP reporting on its SSRC for three deterministic RTCP
//! intervals (Td with Tmin = 5 s, so 15 s) must cease transmission. We count every RTCP
//! packet that reports on our streams (SR/RR blocks, REMB, transport-wide CC, CCFB, NACK,
//! PLI/FIR) as proof the return path works (§4.1, last paragraph). When feedback returns the
//! breaker closes again and media resumes with a key frame (§4.5 leaves restart policy to the
//! application; an interactive session wants to resume).

use std::time::{Duration, Instant};

/// The breaker's state changes, as reported in [`crate::SenderEvent::CircuitBreaker`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BreakerState {
    /// Media stopped.
    Tripped {
        /// Why, for logs.
        reason: &'static str,
        /// How long no feedback had arrived.
        silent_for: Duration,
    },
    /// Feedback is back; media resumes.
    Recovered,
}

#[derive(Debug)]
pub(crate) struct Breaker {
    timeout: Duration,
    /// Last feedback, or the first media packet while none has arrived yet.
    last_heard: Option<Instant>,
    tripped: bool,
}

impl Breaker {
    pub fn new(timeout: Duration) -> Self {
        Self {
            timeout,
            last_heard: None,
            tripped: false,
        }
    }

    /// Media was sent: start the clock if it is not running.
    pub fn on_media_sent(&mut self, now: Instant) {
        if self.last_heard.is_none() {
            self.last_heard = Some(now);
        }
    }

    /// Feedback on our SSRC arrived. Returns `Recovered` if the breaker closes.
    pub fn on_feedback(&mut self, now: Instant) -> Option<BreakerState> {
        self.last_heard = Some(now);
        if self.tripped {
            self.tripped = false;
            tracing::info!("RTP circuit breaker recovered: feedback returned");
            return Some(BreakerState::Recovered);
        }
        None
    }

    /// Checks the timeout. Returns `Tripped` when the breaker opens.
    pub fn check(&mut self, now: Instant) -> Option<BreakerState> {
        let heard = self.last_heard?;
        let silent = now.saturating_duration_since(heard);
        if !self.tripped && silent >= self.timeout {
            self.tripped = true;
            let reason = "RTCP timeout (RFC 8083 §4.1): no feedback for 3 RTCP intervals";
            tracing::warn!(
                ?silent,
                "RTP circuit breaker tripped: {reason}; media stopped"
            );
            return Some(BreakerState::Tripped {
                reason,
                silent_for: silent,
            });
        }
        None
    }

    pub fn tripped(&self) -> bool {
        self.tripped
    }

    /// When [`check`](Self::check) may next trip.
    pub fn deadline(&self) -> Option<Instant> {
        if self.tripped {
            return None;
        }
        self.last_heard.map(|t| t + self.timeout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trips_after_the_timeout_and_recovers_on_feedback() {
        let t0 = Instant::now();
        let mut b = Breaker::new(Duration::from_secs(15));
        assert_eq!(
            b.check(t0 + Duration::from_secs(100)),
            None,
            "no media, no clock"
        );
        b.on_media_sent(t0);
        assert_eq!(b.check(t0 + Duration::from_secs(14)), None);
        assert!(matches!(
            b.check(t0 + Duration::from_secs(15)),
            Some(BreakerState::Tripped { .. })
        ));
        assert!(b.tripped());
        assert_eq!(b.check(t0 + Duration::from_secs(16)), None, "reported once");
        assert_eq!(
            b.on_feedback(t0 + Duration::from_secs(17)),
            Some(BreakerState::Recovered)
        );
        assert!(!b.tripped());
        assert_eq!(b.deadline(), Some(t0 + Duration::from_secs(32)));
    }
}
