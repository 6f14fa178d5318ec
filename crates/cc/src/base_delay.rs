//! The base one-way delay (LEDBAT, RFC 6817 §3.4.2; SCReAM v2 draft §4.2.1), shared by SCReAM
//! and GCC's standing-queue estimate: the minimum one-way delay kept as one minimum per slot
//! over a ring of slots, so a route change is forgotten after the history's length. OWD =
//! receiver arrival time − our send time; the unknown clock offset cancels in
//! `qdelay = OWD − base`.

use std::time::{Duration, Instant};

/// No delay estimate exceeds this (nonsense timestamps must not drive the state anywhere).
pub(crate) const MAX_DELAY: Duration = Duration::from_secs(10);

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
        }
    }

    /// Adds a one-way-delay sample (µs, arbitrary offset) at `now` and returns the queuing
    /// delay.
    #[cfg(test)]
    pub fn update(&mut self, owd_us: i64, now: Instant) -> Duration {
        self.rotate(now);
        self.sample(owd_us)
    }

    /// Adds a sample to the open slot (call [`rotate`](Self::rotate) first, once per batch).
    pub fn observe(&mut self, owd_us: i64) {
        self.current = self.current.min(owd_us);
    }

    /// Adds a sample and returns its queuing delay.
    pub fn sample(&mut self, owd_us: i64) -> Duration {
        self.observe(owd_us);
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
    fn nonsense_owd_is_clamped() {
        let t0 = Instant::now();
        let mut b = BaseDelay::new(50, Duration::from_secs(10));
        b.update(i64::MIN, t0);
        assert_eq!(b.update(i64::MAX, t0), MAX_DELAY);
    }
}
