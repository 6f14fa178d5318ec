//! Reception statistics of one source: sequence extension, loss and interarrival jitter
//! (RFC 3550 §6.4.1, A.1, A.3, A.8), and the report block built from them.

use std::time::Instant;

use cg_types::MediaTime;
use rtc_rtcp::reception_report::ReceptionReport;

use crate::seq::SeqUnwrapper;
use crate::time::duration_to_mid32;

/// Per-source state.
#[derive(Debug, Default)]
pub(crate) struct Reception {
    unwrap: SeqUnwrapper,
    base: Option<u64>,
    received: u64,
    expected_prior: u64,
    received_prior: u64,
    /// Interarrival jitter in timestamp units, ×16 as in A.8's integer form.
    jitter_q4: i64,
    last_transit: Option<i64>,
    /// Middle 32 bits of the last SR's NTP time and when it arrived (for LSR/DLSR).
    last_sr: Option<(u32, Instant)>,
}

impl Reception {
    /// A packet arrived; returns its unwrapped sequence number.
    pub fn on_packet(&mut self, seq: u16) -> u64 {
        let ext = self.unwrap.unwrap(seq);
        if self.base.is_none_or(|b| ext < b) {
            self.base = Some(ext);
        }
        self.received += 1;
        ext
    }

    /// Updates the jitter estimate (A.8) with a first transmission: `arrival_ticks` is the
    /// arrival time in RTP timestamp units, `rtp_ts` the packet's unwrapped timestamp.
    pub fn on_timing(&mut self, arrival: MediaTime, rtp_ts: i64) {
        let transit = arrival.ticks() as i64 - rtp_ts;
        if let Some(last) = self.last_transit {
            let d = (transit - last).abs();
            // J += (|D| − J) / 16, kept ×16 (A.8)
            self.jitter_q4 += d - ((self.jitter_q4 + 8) >> 4);
        }
        self.last_transit = Some(transit);
    }

    /// An SR from this source arrived.
    pub fn on_sender_report(&mut self, ntp: u64, now: Instant) {
        self.last_sr = Some((crate::time::mid32(ntp), now));
    }

    /// The unwrapped sequence number `seq` would get, without counting it.
    pub fn peek(&self, seq: u16) -> u64 {
        self.unwrap.peek(seq)
    }

    pub fn highest(&self) -> Option<u64> {
        self.unwrap.highest()
    }

    /// Cumulative packets lost (A.3), clamped to the 24-bit signed field.
    pub fn cumulative_lost(&self) -> i64 {
        let (Some(base), Some(max)) = (self.base, self.highest()) else {
            return 0;
        };
        let expected = (max - base + 1) as i64;
        (expected - self.received as i64).clamp(-0x80_0000, 0x7F_FFFF)
    }

    /// Interarrival jitter in timestamp units.
    pub fn jitter(&self) -> u32 {
        (self.jitter_q4 >> 4).max(0) as u32
    }

    /// A report block, advancing the "prior" counters (A.3).
    pub fn report(&mut self, ssrc: u32, now: Instant) -> Option<ReceptionReport> {
        let base = self.base?;
        let max = self.highest()?;
        let expected = max - base + 1;
        let expected_interval = expected.saturating_sub(self.expected_prior);
        let received_interval = self.received.saturating_sub(self.received_prior);
        self.expected_prior = expected;
        self.received_prior = self.received;
        let lost_interval = expected_interval as i64 - received_interval as i64;
        let fraction = if expected_interval == 0 || lost_interval <= 0 {
            0
        } else {
            ((lost_interval << 8) / expected_interval as i64).min(255) as u8
        };
        let (lsr, dlsr) = match self.last_sr {
            Some((lsr, at)) => (lsr, duration_to_mid32(now.saturating_duration_since(at))),
            None => (0, 0),
        };
        Some(ReceptionReport {
            ssrc,
            fraction_lost: fraction,
            total_lost: (self.cumulative_lost() as i32 as u32) & 0x00FF_FFFF,
            // Our unwrapper starts one cycle up (seq.rs); the wire's cycle count starts at 0.
            last_sequence_number: (max.saturating_sub(1 << 16) & 0xFFFF_FFFF) as u32,
            jitter: self.jitter(),
            last_sender_report: lsr,
            delay: dlsr,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn loss_fraction_and_cumulative_follow_a3() {
        let t0 = Instant::now();
        let mut r = Reception::default();
        for s in [65530u16, 65531, 65533, 65534, 0, 1] {
            r.on_packet(s);
        }
        // expected 65530..=65537 → 8, received 6
        let rb = r.report(7, t0).unwrap();
        assert_eq!(rb.total_lost, 2);
        assert_eq!(rb.fraction_lost, 64);
        assert_eq!(rb.last_sequence_number as u16, 1);
        assert_eq!(rb.last_sequence_number >> 16, 1, "one wrap counted");
        // no new loss in the next interval
        r.on_packet(2);
        assert_eq!(r.report(7, t0).unwrap().fraction_lost, 0);
    }

    #[test]
    fn duplicates_make_cumulative_loss_negative() {
        let mut r = Reception::default();
        r.on_packet(1);
        r.on_packet(1);
        assert_eq!(r.cumulative_lost(), -1);
        let rb = r.report(7, Instant::now()).unwrap();
        assert_eq!(rb.total_lost, 0x00FF_FFFF);
        assert_eq!(rb.fraction_lost, 0);
    }

    #[test]
    fn jitter_converges_to_the_mean_deviation() {
        let mut r = Reception::default();
        // transit alternates by 90 ticks (1 ms): |D| = 90 every packet → J → 90
        for i in 0..500i64 {
            let arrival = i as u64 * 3000 + if i % 2 == 0 { 0 } else { 90 };
            r.on_timing(MediaTime::from_ticks(arrival), i * 3000);
        }
        assert!((85..=90).contains(&r.jitter()), "{}", r.jitter());
    }

    #[test]
    fn dlsr_is_time_since_the_sender_report() {
        let t0 = Instant::now();
        let mut r = Reception::default();
        r.on_packet(1);
        r.on_sender_report(0x0001_0002_0003_0004, t0);
        let rb = r.report(7, t0 + Duration::from_millis(500)).unwrap();
        assert_eq!(rb.last_sender_report, 0x0002_0003);
        assert_eq!(rb.delay, 0x8000);
    }
}
