//! Conversion of local instants to the signed microsecond scale the GCC blocks compute on,
//! and one continuous remote (arrival) clock across a receiver's clock steps.

use std::time::Instant;

/// The largest change of one-way delay between two consecutive acknowledged packets that a
/// path can give (µs). Beyond it the receiver's clock has stepped: a receiver restarted with a
/// new clock, or a clock set anew. 10 s, as the base-delay rule's (`crate::base_delay`).
pub const CLOCK_STEP_US: i64 = 10_000_000;

/// Folds steps of the remote clock into an offset, so that everything that runs on arrival
/// times (grouping, `R`, the rate controller's and threshold's clocks, the base delay) sees one
/// continuous clock.
///
/// Rule: a packet whose one-way delay (arrival − send, the clocks' offset included) differs
/// from the previous acknowledged packet's by more than [`CLOCK_STEP_US`] marks a step; the
/// offset then changes so that this packet's one-way delay equals the previous one's. Reason:
/// arrival times only enter as differences, and without the fold a clock that jumped back
/// left every arrival "before" the state built on the old clock: the rate controller saw no
/// time pass and held its rate until the new clock caught up with the old one. A single
/// nonsense arrival costs two steps (there and back) and nothing else.
#[derive(Debug, Clone, Default)]
pub struct RemoteClock {
    offset_us: i64,
    last_delay_us: Option<i64>,
    steps: u64,
}

impl RemoteClock {
    /// The arrival time of a packet sent at `send_us` (local) that arrived at `arrival_us`
    /// (remote), on the continuous clock.
    pub fn map(&mut self, send_us: i64, arrival_us: i64) -> i64 {
        let raw = arrival_us.saturating_sub(send_us);
        let mut delay = raw.saturating_add(self.offset_us);
        if let Some(last) = self.last_delay_us
            && delay.saturating_sub(last).saturating_abs() > CLOCK_STEP_US
        {
            self.offset_us = last.saturating_sub(raw);
            self.steps += 1;
            delay = last;
        }
        self.last_delay_us = Some(delay);
        send_us.saturating_add(delay)
    }

    /// How many steps were folded.
    pub fn steps(&self) -> u64 {
        self.steps
    }
}

/// `t − base` in signed microseconds (negative if `t` is earlier), saturating.
pub fn micros_since(t: Instant, base: Instant) -> i64 {
    match t.checked_duration_since(base) {
        Some(d) => i64::try_from(d.as_micros()).unwrap_or(i64::MAX),
        None => {
            let d = base.saturating_duration_since(t);
            -i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_clock_that_steps_back_runs_on_from_where_it_was() {
        let mut c = RemoteClock::default();
        // 30 ms one-way on a remote clock 5000 s ahead.
        let ahead = 5_000_000_000;
        assert_eq!(c.map(0, ahead + 30_000), ahead + 30_000);
        assert_eq!(c.map(10_000, ahead + 41_000), ahead + 41_000);
        // The receiver restarts: its clock now reads 1 s.
        assert_eq!(c.map(20_000, 1_000_000), ahead + 51_000);
        assert_eq!(c.map(30_000, 1_012_000), ahead + 63_000);
        assert_eq!(c.steps(), 1);
        // Queuing of a few seconds is no step.
        assert_eq!(c.map(40_000, 4_022_000), ahead + 3_073_000);
        assert_eq!(c.steps(), 1);
    }

    #[test]
    fn one_nonsense_arrival_moves_nothing_after_it() {
        let mut c = RemoteClock::default();
        assert_eq!(c.map(0, 30_000), 30_000);
        c.map(10_000, i64::MIN);
        assert_eq!(c.map(20_000, 50_000), 50_000);
        assert_eq!(c.steps(), 2);
        c.map(30_000, i64::MAX);
        assert_eq!(c.map(40_000, 70_000), 70_000);
        assert_eq!(c.map(50_000, 80_000), 80_000);
    }

    #[test]
    fn earlier_instants_are_negative() {
        let base = Instant::now() + Duration::from_secs(10);
        assert_eq!(micros_since(base + Duration::from_millis(3), base), 3_000);
        assert_eq!(micros_since(base - Duration::from_millis(3), base), -3_000);
    }
}
