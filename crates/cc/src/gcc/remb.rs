//! REMB processing (MMSys16 §3.3): send `Ar` every second, or at once when it has fallen by
//! more than 3 %. The fall is measured against the last value *sent* (as libwebrtc does), so
//! that a slow slide over many frames also triggers an early REMB. Beyond the papers, a
//! probe result that raised `Ar` goes out at once too ([`RembScheduler::send_now`]), as
//! libwebrtc's `RemoteBitrateEstimatorAbsSendTime` reports it at once: the sender's probe
//! controller waits for it for 1 s only.

use std::time::{Duration, Instant};

use cg_types::Bitrate;

/// Decides when a REMB is due.
#[derive(Debug, Clone)]
pub struct RembScheduler {
    interval: Duration,
    drop_ratio: f64,
    last: Option<(Instant, Bitrate)>,
    now_due: bool,
}

impl RembScheduler {
    /// Periodic every `interval`, early when `Ar < drop_ratio · last sent`.
    pub fn new(interval: Duration, drop_ratio: f64) -> Self {
        RembScheduler {
            interval,
            drop_ratio,
            last: None,
            now_due: false,
        }
    }

    /// The next [`poll`](Self::poll) sends whatever the value (a probe raised it).
    pub fn send_now(&mut self) {
        self.now_due = true;
    }

    /// The value to send now, if one is due, given the current `Ar`; records it as sent.
    pub fn poll(&mut self, now: Instant, ar: Bitrate) -> Option<Bitrate> {
        if self.is_due(now, ar) {
            self.now_due = false;
            self.last = Some((now, ar));
            Some(ar)
        } else {
            None
        }
    }

    /// Whether a REMB would be due now for `ar`, without recording anything.
    pub fn is_due(&self, now: Instant, ar: Bitrate) -> bool {
        self.now_due
            || match self.last {
                None => true,
                Some((at, value)) => {
                    now.saturating_duration_since(at) >= self.interval
                        || ar.as_bps_f64() < self.drop_ratio * value.as_bps_f64()
                        // Time went backwards: resynchronise rather than stay silent.
                        || now < at
                }
            }
    }

    /// When the next periodic REMB is due (`None` before the first one).
    pub fn next_periodic(&self) -> Option<Instant> {
        self.last.map(|(at, _)| at + self.interval)
    }

    /// The last value sent.
    pub fn last_sent(&self) -> Option<Bitrate> {
        self.last.map(|(_, v)| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remb_every_second_or_at_once_on_a_three_percent_drop() {
        let t0 = Instant::now();
        let mut s = RembScheduler::new(Duration::from_secs(1), 0.97);
        let ms = |n| t0 + Duration::from_millis(n);
        assert_eq!(s.poll(t0, Bitrate::kbps(1000)), Some(Bitrate::kbps(1000)));
        // Increases and small drops wait for the period.
        assert_eq!(s.poll(ms(100), Bitrate::kbps(1100)), None);
        assert_eq!(s.poll(ms(200), Bitrate::kbps(975)), None);
        assert_eq!(s.next_periodic(), Some(ms(1000)));
        assert_eq!(
            s.poll(ms(1000), Bitrate::kbps(980)),
            Some(Bitrate::kbps(980))
        );
        // A drop of more than 3 % below the last sent value goes out at once.
        assert_eq!(
            s.poll(ms(1100), Bitrate::kbps(950)),
            Some(Bitrate::kbps(950))
        );
        // A slow slide accumulates against the last sent value.
        assert_eq!(s.poll(ms(1200), Bitrate::kbps(935)), None);
        assert_eq!(
            s.poll(ms(1300), Bitrate::kbps(920)),
            Some(Bitrate::kbps(920))
        );
        // An increase asked for at once (a probe result) does not wait for the period.
        assert!(!s.is_due(ms(1400), Bitrate::kbps(2000)));
        s.send_now();
        assert!(s.is_due(ms(1400), Bitrate::kbps(2000)));
        assert_eq!(
            s.poll(ms(1400), Bitrate::kbps(2000)),
            Some(Bitrate::kbps(2000))
        );
        assert_eq!(s.poll(ms(1500), Bitrate::kbps(2000)), None);
    }
}
