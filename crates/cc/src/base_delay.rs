//! The base one-way delay (LEDBAT, RFC 6817 §3.4.2; SCReAM v2 draft §4.2.1), shared by SCReAM
//! and GCC's standing-queue estimate: the minimum one-way delay kept as one minimum per slot
//! over a ring of slots, so a route change is forgotten after the history's length. OWD =
//! receiver arrival time − our send time; the unknown clock offset cancels in
//! `qdelay = OWD − base`.
//!
//! A sample more than [`MAX_DELAY`] from the base is no queue (none is that long): it is a
//! nonsense timestamp or a step of the receiver's clock. It moves nothing until
//! [`STEP_CONFIRM`] such samples come in a row, which is a clock step: the history then
//! starts again from them. Reason: one nonsense sample below the base would otherwise become
//! the base for the whole history (minutes), and every true sample after it read as a
//! queue of `MAX_DELAY`.

use std::time::{Duration, Instant};

/// No delay estimate exceeds this (nonsense timestamps must not drive the state anywhere).
pub(crate) const MAX_DELAY: Duration = Duration::from_secs(10);

/// Samples more than [`MAX_DELAY`] from the base in a row that make a clock step.
pub(crate) const STEP_CONFIRM: u32 = 8;

/// Minimum one-way delay over a sliding history of slots.
#[derive(Debug, Clone)]
pub(crate) struct BaseDelay {
    slot_len: Duration,
    /// Closed slots' minima (µs on the mixed clock), ring of fixed length.
    slots: Vec<i64>,
    next: usize,
    /// Minimum of `slots`, cached (recomputed when a slot closes).
    slots_min: i64,
    /// Minimum of the open slot.
    current: i64,
    current_start: Option<Instant>,
    /// Samples more than [`MAX_DELAY`] from the base in a row, and their minimum.
    step: Option<(u32, i64)>,
}

impl BaseDelay {
    /// A history of `slots` slots of `slot_len` each.
    pub fn new(slots: usize, slot_len: Duration) -> Self {
        BaseDelay {
            slot_len: slot_len.max(Duration::from_millis(1)),
            slots: vec![i64::MAX; slots.clamp(1, 1024)],
            next: 0,
            slots_min: i64::MAX,
            current: i64::MAX,
            current_start: None,
            step: None,
        }
    }

    /// Adds a one-way-delay sample (µs, arbitrary offset) at `now` and returns the queuing
    /// delay.
    #[cfg(test)]
    pub fn update(&mut self, owd_us: i64, now: Instant) -> Duration {
        self.rotate(now);
        self.sample(owd_us)
    }

    /// Adds a sample to the open slot (call [`rotate`](Self::rotate) first, once per batch);
    /// returns whether it was taken (not one far from the base, see the module docs).
    pub fn observe(&mut self, owd_us: i64) -> bool {
        let base = self.base();
        let far = MAX_DELAY.as_micros() as i64;
        if base == i64::MAX || owd_us.abs_diff(base) <= far as u64 {
            self.step = None;
            self.current = self.current.min(owd_us);
            return true;
        }
        let (n, low) = self
            .step
            .map_or((1, owd_us), |(n, low)| (n + 1, low.min(owd_us)));
        if n < STEP_CONFIRM {
            self.step = Some((n, low));
            return false;
        }
        // A clock step: the history starts again from the new clock's samples.
        self.slots.fill(i64::MAX);
        self.slots_min = i64::MAX;
        self.current = low;
        self.step = None;
        true
    }

    /// Adds a sample and returns its queuing delay (zero for one far from the base).
    pub fn sample(&mut self, owd_us: i64) -> Duration {
        if !self.observe(owd_us) {
            return Duration::ZERO;
        }
        self.queue(owd_us)
    }

    /// The queuing delay of a sample already observed.
    pub fn queue(&self, owd_us: i64) -> Duration {
        let q = owd_us.saturating_sub(self.base());
        Duration::from_micros(u64::try_from(q).unwrap_or(0)).min(MAX_DELAY)
    }

    /// Closes the open slot if `base_delay_slot` has passed.
    pub fn rotate(&mut self, now: Instant) {
        let start = *self.current_start.get_or_insert(now);
        let elapsed = now.saturating_duration_since(start);
        if elapsed >= self.slot_len {
            // Close the open slot, plus one empty slot per further slot length that passed
            // without samples (a silence longer than the history forgets everything).
            let total = elapsed.as_nanos() / self.slot_len.as_nanos();
            let len = self.slots.len() as u128;
            for k in 0..total.min(len) {
                let keep = k == 0 && total <= len;
                self.slots[self.next] = if keep { self.current } else { i64::MAX };
                self.next = (self.next + 1) % self.slots.len();
            }
            self.slots_min = self.slots.iter().copied().min().unwrap_or(i64::MAX);
            self.current = i64::MAX;
            self.current_start = Some(now);
        }
    }

    /// The base delay (µs on the mixed clock); `i64::MAX` before any sample.
    pub fn base(&self) -> i64 {
        self.current.min(self.slots_min)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queuing_delay_is_owd_minus_the_minimum() {
        let t0 = Instant::now();
        let mut b = BaseDelay::new(50, Duration::from_secs(10));
        assert_eq!(b.update(1_000_000 + 30_000, t0), Duration::ZERO);
        let q = b.update(1_000_000 + 45_000, t0 + Duration::from_millis(10));
        assert_eq!(q, Duration::from_millis(15));
        // A lower sample becomes the new base.
        assert_eq!(
            b.update(1_000_000 + 20_000, t0 + Duration::from_millis(20)),
            Duration::ZERO
        );
        assert_eq!(b.base(), 1_020_000);
    }

    #[test]
    fn base_delay_forgets_after_all_slots_rotate() {
        let t0 = Instant::now();
        let slot = Duration::from_secs(10);
        let mut b = BaseDelay::new(50, slot);
        b.update(10_000, t0);
        // The path gets 20 ms longer (route change) for good.
        for i in 1..=49u32 {
            let q = b.update(30_000, t0 + slot * i);
            assert_eq!(
                q,
                Duration::from_millis(20),
                "slot {i} still remembers the old base"
            );
        }
        // Slot 50 closes the 50th slot; the first (with the old minimum) is still kept.
        assert_eq!(b.update(30_000, t0 + slot * 50), Duration::from_millis(20));
        // After 50 closed slots of 10 s the old minimum has left the history.
        assert_eq!(b.update(30_000, t0 + slot * 51), Duration::ZERO);
    }

    #[test]
    fn a_long_silence_empties_the_history() {
        let t0 = Instant::now();
        let mut b = BaseDelay::new(50, Duration::from_secs(10));
        b.update(10_000, t0);
        assert_eq!(
            b.update(30_000, t0 + Duration::from_secs(600)),
            Duration::ZERO
        );
    }

    #[test]
    fn nonsense_owd_is_clamped_and_a_nonsense_first_sample_is_soon_forgotten() {
        let t0 = Instant::now();
        let mut b = BaseDelay::new(50, Duration::from_secs(10));
        // The first sample is the base, whatever it is.
        b.update(i64::MIN, t0);
        assert_eq!(
            b.update(i64::MIN + 9_999_000, t0),
            Duration::from_micros(9_999_000)
        );
        // True samples far above it are a clock step once STEP_CONFIRM of them came.
        for _ in 0..STEP_CONFIRM {
            b.update(30_000, t0);
        }
        assert_eq!(b.base(), 30_000);
    }

    #[test]
    fn a_nonsense_sample_far_from_the_base_moves_nothing_and_a_clock_step_restarts_it() {
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let mut b = BaseDelay::new(50, Duration::from_secs(10));
        b.update(1_000_000, ms(0));
        // One sample hours below the base (a broken report timestamp), then true ones: the
        // base is still the path's, the queue still read right.
        assert_eq!(b.update(i64::MIN, ms(10)), Duration::ZERO);
        assert_eq!(b.update(1_000_000 - 3_600_000_000, ms(20)), Duration::ZERO);
        assert_eq!(b.update(1_015_000, ms(30)), Duration::from_millis(15));
        assert_eq!(b.base(), 1_000_000);
        // Far above: no queue of a minute either, and not adopted on its own.
        for i in 0..STEP_CONFIRM - 1 {
            assert_eq!(b.update(61_000_000, ms(40 + u64::from(i))), Duration::ZERO);
        }
        assert_eq!(b.update(1_010_000, ms(60)), Duration::from_millis(10));
        // The receiver's clock steps a minute ahead for good: after STEP_CONFIRM samples
        // the history starts again on the new clock.
        for i in 0..STEP_CONFIRM {
            b.update(61_000_000 + 5_000 * i64::from(i), ms(70 + u64::from(i)));
        }
        assert_eq!(b.base(), 61_000_000);
        assert_eq!(b.update(61_020_000, ms(100)), Duration::from_millis(20));
    }
}
