//! The retransmission timeout of RFC 6298: SRTT, RTTVAR, RTO, exponential backoff.

use std::time::Duration;

/// Lower bound of the RTO: Linux's `TCP_RTO_MIN`, 200 ms (RFC 6298 §2.4 says 1 s, and
/// allows less; every deployed stack uses less).
pub(crate) const MIN_RTO: Duration = Duration::from_millis(200);
/// Upper bound of the RTO, backoff included (RFC 6298 §2.5: at least 60 s).
pub(crate) const MAX_RTO: Duration = Duration::from_secs(60);
/// RTO before the first RTT sample (RFC 6298 §2.1).
const INITIAL_RTO: Duration = Duration::from_secs(1);
/// Clock granularity `G` (RFC 6298 §2.2–2.3): Linux's 1 ms.
const GRANULARITY: Duration = Duration::from_millis(1);

/// RFC 6298 §2 state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RttEstimator {
    srtt: Option<Duration>,
    rttvar: Duration,
    /// Consecutive timeouts since the last RTT sample (RFC 6298 §5.5, §5.7).
    backoff: u32,
}

impl RttEstimator {
    /// No sample yet: RTO 1 s.
    pub(crate) fn new() -> Self {
        RttEstimator {
            srtt: None,
            rttvar: Duration::ZERO,
            backoff: 0,
        }
    }

    /// A measurement `r` (RFC 6298 §2.2–2.3, α = 1/8, β = 1/4). A new sample also ends any
    /// backoff (§5.7: the RTO is recomputed from the estimates).
    pub(crate) fn sample(&mut self, r: Duration) {
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(srtt) => {
                let err = srtt.abs_diff(r);
                self.rttvar = self.rttvar * 3 / 4 + err / 4;
                self.srtt = Some(srtt * 7 / 8 + r / 8);
            }
        }
        self.backoff = 0;
    }

    /// The timer expired: double the RTO (RFC 6298 §5.5), up to [`MAX_RTO`].
    pub(crate) fn back_off(&mut self) {
        self.backoff = self.backoff.saturating_add(1);
    }

    /// Timeouts since the last sample.
    pub(crate) fn backoff(&self) -> u32 {
        self.backoff
    }

    /// The smoothed RTT, once measured.
    pub(crate) fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    /// `RTO = SRTT + max(G, 4·RTTVAR)` within `[MIN_RTO, MAX_RTO]` (RFC 6298 §2.3, §2.4),
    /// doubled for each timeout since the last sample (§5.5).
    pub(crate) fn rto(&self) -> Duration {
        let base = match self.srtt {
            None => INITIAL_RTO,
            Some(srtt) => srtt.saturating_add(GRANULARITY.max(self.rttvar.saturating_mul(4))),
        };
        let factor = 1u32.checked_shl(self.backoff.min(16)).unwrap_or(u32::MAX);
        base.clamp(MIN_RTO, MAX_RTO)
            .saturating_mul(factor)
            .min(MAX_RTO)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn the_first_sample_sets_srtt_and_half_of_it_as_rttvar() {
        let mut e = RttEstimator::new();
        assert_eq!(e.rto(), Duration::from_secs(1));
        e.sample(ms(100));
        assert_eq!(e.srtt(), Some(ms(100)));
        // 100 + 4 · 50 ms.
        assert_eq!(e.rto(), ms(300));
    }

    #[test]
    fn later_samples_are_smoothed_with_one_eighth_and_one_quarter() {
        let mut e = RttEstimator::new();
        e.sample(ms(100));
        e.sample(ms(180));
        // RTTVAR = 3/4 · 50 + 1/4 · 80 = 57.5; SRTT = 7/8 · 100 + 1/8 · 180 = 110.
        assert_eq!(e.srtt(), Some(ms(110)));
        assert_eq!(e.rto(), ms(110 + 230));
    }

    #[test]
    fn a_steady_rtt_is_floored_at_200_ms() {
        let mut e = RttEstimator::new();
        for _ in 0..200 {
            e.sample(ms(20));
        }
        assert_eq!(e.rto(), MIN_RTO);
    }

    #[test]
    fn timeouts_double_the_rto_up_to_60_s_until_a_new_sample() {
        let mut e = RttEstimator::new();
        for _ in 0..200 {
            e.sample(ms(20));
        }
        e.back_off();
        assert_eq!(e.rto(), ms(400));
        e.back_off();
        assert_eq!(e.rto(), ms(800));
        for _ in 0..100 {
            e.back_off();
        }
        assert_eq!(e.rto(), MAX_RTO);
        e.sample(ms(20));
        assert_eq!(e.backoff(), 0);
        assert!(e.rto() < ms(300));
    }
}
