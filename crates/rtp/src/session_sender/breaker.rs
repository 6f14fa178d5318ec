//! The sender's response to missing feedback: first a rate reduction (RFC 8888 §5), then RTP
//! circuit breaker #1, RTCP timeout (RFC 8083 §4.1).
//!
//! RFC 8888 §5: "if multiple consecutive congestion control feedback packets are lost, then
//! the media sender SHOULD rapidly reduce its sending rate as this likely indicates a path
//! failure". None of cg's controllers does so by itself: GCC keeps its target without
//! feedback, and SCReAM forgets its flight after 0.5 s without feedback (the reference's
//! guard against a deadlocked window), which reopens its window. So the session does it for
//! every controller: when media sent `reduce_after` ago has drawn no feedback, the rate the
//! controller asks for (the encoder's target and the pacer's rate) is halved, and halved again
//! after each further `reduce_after`, down to 1/16 of it; the first feedback gives the
//! controller's own rate back at once (its state was never touched, and the silence told it
//! nothing). The clock starts at the first packet sent after the last feedback, not at the
//! feedback: a receiver sends per-packet feedback only for packets it gets, so a sender that
//! sent nothing (its encoder or its loop held up) hears nothing and has lost nothing; halving
//! it then would only make it resume at a fraction of its rate. libwebrtc's congestion window
//! counts the same way, bytes in flight without feedback. Only feedback the
//! controller runs on counts here (per-packet reports — transport-wide CC or RFC 8888 — for
//! send-side GCC and SCReAM, REMB and receiver reports for GCC-REMB): a peer that still sends
//! receiver reports or NACKs but no congestion feedback leaves the controller as blind as
//! silence does. libwebrtc gets the
//! same effect from its congestion window, which stops the pacer when the bytes sent without
//! feedback exceed about RTT + 350 ms of the target.
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

/// Halvings of the rate at most while feedback is missing: 1/16 of the controller's rate.
const MAX_HALVINGS: u32 = 4;

#[derive(Debug)]
pub(crate) struct Breaker {
    timeout: Duration,
    /// Silence after which the rate is halved (and again after each further one); `None`: no
    /// reduction, only the breaker.
    reduce_after: Option<Duration>,
    /// Last feedback of any kind, or the first media packet while none has arrived yet.
    last_heard: Option<Instant>,
    /// The first packet sent since the last feedback the controller is fed by (since the start
    /// while none has arrived): the clock of the rate reduction; `None` while nothing sent
    /// waits for feedback.
    unfed_since: Option<Instant>,
    tripped: bool,
    /// Halvings in force for the current silence.
    halvings: u32,
    /// Silences that reduced the rate.
    reductions: u64,
}

impl Breaker {
    pub fn new(timeout: Duration, reduce_after: Option<Duration>) -> Self {
        Self {
            timeout,
            reduce_after: reduce_after.filter(|d| !d.is_zero()),
            last_heard: None,
            unfed_since: None,
            tripped: false,
            halvings: 0,
            reductions: 0,
        }
    }

    /// The share of the controller's rate the sender may use now: 1, or 1/2ⁿ after n
    /// `reduce_after` periods without feedback.
    pub fn rate_factor(&self) -> f64 {
        0.5f64.powi(self.halvings as i32)
    }

    /// Silences that reduced the rate so far.
    pub fn reductions(&self) -> u64 {
        self.reductions
    }

    /// Media was sent: start the clock if it is not running.
    pub fn on_media_sent(&mut self, now: Instant) {
        self.last_heard.get_or_insert(now);
        self.unfed_since.get_or_insert(now);
    }

    /// Feedback on our SSRC arrived; `feeds_controller`: of the kind the controller is fed
    /// by. Returns `Recovered` if the breaker closes.
    pub fn on_feedback(&mut self, now: Instant, feeds_controller: bool) -> Option<BreakerState> {
        self.last_heard = Some(now);
        if feeds_controller {
            self.unfed_since = None;
            if self.halvings > 0 {
                tracing::info!("feedback returned: the controller's rate is back");
                self.halvings = 0;
            }
        }
        if self.tripped {
            self.tripped = false;
            tracing::info!("RTP circuit breaker recovered: feedback returned");
            return Some(BreakerState::Recovered);
        }
        None
    }

    /// Checks the timeouts: halves the rate once more if another `reduce_after` passed without
    /// feedback; returns `Tripped` when the breaker opens.
    pub fn check(&mut self, now: Instant) -> Option<BreakerState> {
        let heard = self.last_heard?;
        let silent = now.saturating_duration_since(heard);
        if let (Some(after), Some(since)) = (self.reduce_after, self.unfed_since) {
            let unfed = now.saturating_duration_since(since);
            let due = (unfed.as_nanos() / after.as_nanos()).min(u128::from(MAX_HALVINGS)) as u32;
            if due > self.halvings {
                if self.halvings == 0 {
                    self.reductions += 1;
                    tracing::warn!(
                        ?unfed,
                        "no feedback: halving the rate (RFC 8888 §5) until it returns"
                    );
                }
                self.halvings = due;
            }
        }
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

    /// When [`check`](Self::check) may next halve the rate or trip.
    pub fn deadline(&self) -> Option<Instant> {
        if self.tripped {
            return None;
        }
        let heard = self.last_heard?;
        let halve = self
            .reduce_after
            .zip(self.unfed_since)
            .filter(|_| self.halvings < MAX_HALVINGS)
            .map(|(after, since)| since + after * (self.halvings + 1));
        Some(halve.map_or(heard + self.timeout, |h| h.min(heard + self.timeout)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trips_after_the_timeout_and_recovers_on_feedback() {
        let t0 = Instant::now();
        let mut b = Breaker::new(Duration::from_secs(15), None);
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
            b.on_feedback(t0 + Duration::from_secs(17), true),
            Some(BreakerState::Recovered)
        );
        assert!(!b.tripped());
        assert_eq!(b.deadline(), Some(t0 + Duration::from_secs(32)));
    }

    #[test]
    fn missing_feedback_halves_the_rate_each_period_and_feedback_restores_it() {
        let t0 = Instant::now();
        let s = Duration::from_millis;
        let mut b = Breaker::new(Duration::from_secs(15), Some(s(500)));
        b.on_media_sent(t0);
        assert_eq!(b.deadline(), Some(t0 + s(500)));
        assert_eq!(b.check(t0 + s(499)), None);
        assert_eq!(b.rate_factor(), 1.0);
        assert_eq!(b.check(t0 + s(500)), None);
        assert_eq!(b.rate_factor(), 0.5);
        assert_eq!(b.deadline(), Some(t0 + s(1000)));
        b.check(t0 + s(1700));
        assert_eq!(b.rate_factor(), 0.125, "three periods: 1/8");
        b.check(t0 + s(9000));
        assert_eq!(b.rate_factor(), 1.0 / 16.0, "never below 1/16");
        assert_eq!(
            b.deadline(),
            Some(t0 + s(15_000)),
            "only the breaker is left"
        );
        assert_eq!(b.reductions(), 1, "one silence");
        assert_eq!(
            b.on_feedback(t0 + s(9100), true),
            None,
            "the breaker had not tripped"
        );
        assert_eq!(b.rate_factor(), 1.0, "feedback gives the rate back at once");
        b.on_media_sent(t0 + s(9100));
        b.check(t0 + s(9600));
        assert_eq!(b.rate_factor(), 0.5);
        assert_eq!(b.reductions(), 2);
        // Without a reduction period only the breaker acts.
        let mut off = Breaker::new(Duration::from_secs(15), None);
        off.on_media_sent(t0);
        off.check(t0 + s(14_000));
        assert_eq!(off.rate_factor(), 1.0);
    }

    /// A sender that sent nothing since the last feedback has no feedback to miss: its rate
    /// stays; the clock starts with the next packet it sends.
    #[test]
    fn a_sender_that_sent_nothing_is_not_halved() {
        let t0 = Instant::now();
        let s = Duration::from_millis;
        let mut b = Breaker::new(Duration::from_secs(15), Some(s(500)));
        b.on_media_sent(t0);
        b.on_feedback(t0 + s(20), true);
        // The encoder stalls for 1.2 s: nothing is sent, nothing comes back.
        assert_eq!(b.check(t0 + s(1220)), None);
        assert_eq!(b.rate_factor(), 1.0, "nothing was sent: nothing was missed");
        assert_eq!(b.reductions(), 0);
        assert_eq!(
            b.deadline(),
            Some(t0 + s(20) + Duration::from_secs(15)),
            "only the breaker's clock runs"
        );
        // Sending resumes and its feedback does not come: halved `reduce_after` later.
        b.on_media_sent(t0 + s(1220));
        b.check(t0 + s(1719));
        assert_eq!(b.rate_factor(), 1.0);
        b.check(t0 + s(1720));
        assert_eq!(b.rate_factor(), 0.5);
    }

    /// Receiver reports or NACKs without the controller's own feedback keep the breaker
    /// closed but do not stop the reduction: the controller is blind all the same.
    #[test]
    fn feedback_the_controller_is_not_fed_by_does_not_restore_the_rate() {
        let t0 = Instant::now();
        let s = Duration::from_millis;
        let mut b = Breaker::new(Duration::from_secs(15), Some(s(500)));
        b.on_media_sent(t0);
        for i in 1..40 {
            b.on_feedback(t0 + s(i * 400), false);
            b.check(t0 + s(i * 400));
        }
        assert_eq!(b.rate_factor(), 1.0 / 16.0, "reduced though RRs arrive");
        assert!(!b.tripped(), "the return path works: no breaker trip");
        b.on_feedback(t0 + s(16_000), true);
        assert_eq!(b.rate_factor(), 1.0);
    }
}
