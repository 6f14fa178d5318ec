//! Bottleneck-rate estimate for the L4S pacing cap (our addition, see
//! [`ScreamConfig::l4s_pacing_cap`](super::ScreamConfig::l4s_pacing_cap)).
//!
//! The receive rate of a packet train equals the bottleneck's rate only when the train was
//! sent faster than the bottleneck: then the bottleneck, not the sender, spaced the packets.
//! A train sent slower arrives at its own sending rate, and taking that as the bottleneck's
//! rate would let a cap below 1 ratchet the pacing rate down train by train. So a train counts
//! only if it took measurably longer to arrive than to send.
//!
//! Two more details keep the estimate honest with RFC 8888 feedback, whose arrival times have
//! a resolution of 1/1024 s:
//! - trains are followed across feedback reports (a packet joins the train when it arrives
//!   within two ticks of the previous one) and must span at least [`MIN_SPAN`], so one tick of
//!   quantisation is at most 10 % of the span;
//! - samples are averaged (EWMA ½), not maximised: the quantisation error is symmetric, a
//!   maximum would keep only the overestimates.
//!
//! A train that did not outrun the bottleneck still says something: the link carried it at
//! (about) the rate it was sent, so the bottleneck is at least that fast. With the capacity
//! probe ([`BottleneckRate::raising`]) such a train raises the estimate to the rate it proves
//! — its bytes over the longer of its two spans plus one tick, so neither quantisation nor
//! arrival stamps read in a bunch can prove a rate the link did not carry — and never lowers
//! it (no ratchet). While the cap holds the pacer at the estimate no train proves more than
//! the estimate; the probe (`probe.rs`) lets the pacer run faster for a few milliseconds now
//! and then, the packets sent in that time form a train of their own, and a faster link
//! shows as such a train arriving unstretched. If the capacity falls, trains paced at the
//! old rate outrun the new bottleneck and their samples pull the estimate down within a few
//! frames.

use std::time::Duration;

/// One tick of RFC 8888 arrival time (1/1024 s), µs.
const TICK_US: i64 = 977;
/// A packet arriving more than this after the previous one starts a new train, µs.
const GAP_US: i64 = 2 * TICK_US;
/// Shortest train (first to last arrival) that yields a sample.
pub const MIN_SPAN: Duration = Duration::from_millis(10);
/// Fewest packets in a train that yields a sample.
const MIN_PACKETS: u32 = 4;

#[derive(Debug, Clone, Copy)]
struct Train {
    first_at: i64,
    last_at: i64,
    first_sent: i64,
    last_sent: i64,
    /// Bytes after the first packet (the first one's bytes arrived before `first_at`).
    bytes: u64,
    packets: u32,
    /// Its packets were sent during a capacity probe.
    probe: bool,
}

/// The estimator.
#[derive(Debug, Clone, Default)]
pub struct BottleneckRate {
    train: Option<Train>,
    estimate_bps: f64,
    sampled: bool,
    /// Whether a train the link carried unstretched may raise the estimate: with the
    /// capacity probe only ([`BottleneckRate::raising`]).
    raise: bool,
    raises: u64,
    /// The send times (µs) of the latest capacity probe: a train does not mix packets sent
    /// in it with others, so what a probe proves is not diluted by what was paced at the
    /// estimate around it.
    probe_sent: Option<(i64, i64)>,
}

impl BottleneckRate {
    /// An estimator that a train the link carried unstretched raises (the capacity probe's);
    /// the default one learns only from trains that outran the bottleneck.
    pub fn raising() -> Self {
        BottleneckRate {
            raise: true,
            ..Self::default()
        }
    }

    /// A newly acknowledged packet: its arrival time at the receiver and send time (µs, each
    /// on its own clock), and its size.
    pub fn on_acked(&mut self, arrival_us: i64, sent_us: i64, size: u64) {
        let probe = self
            .probe_sent
            .is_some_and(|(from, to)| (from..to).contains(&sent_us));
        if let Some(t) = self.train.as_mut()
            && t.probe == probe
            && arrival_us >= t.last_at
            && arrival_us.saturating_sub(t.last_at) <= GAP_US
            && sent_us >= t.last_sent
        {
            t.last_at = arrival_us;
            t.last_sent = sent_us;
            t.bytes = t.bytes.saturating_add(size);
            t.packets = t.packets.saturating_add(1);
            return;
        }
        self.close();
        self.train = Some(Train {
            first_at: arrival_us,
            last_at: arrival_us,
            first_sent: sent_us,
            last_sent: sent_us,
            bytes: 0,
            packets: 1,
            probe,
        });
    }

    /// A capacity probe sends from `from_us` until `to_us` (send times, µs).
    pub fn on_probe(&mut self, from_us: i64, to_us: i64) {
        self.probe_sent = Some((from_us, to_us));
    }

    fn close(&mut self) {
        let Some(t) = self.train.take() else { return };
        // Times come from the network (arrival) and may be anything: saturate.
        let span_r = t.last_at.saturating_sub(t.first_at);
        let span_s = t.last_sent.saturating_sub(t.first_sent);
        if t.packets < MIN_PACKETS || span_r < MIN_SPAN.as_micros() as i64 {
            return;
        }
        // Outran the bottleneck: arrival took longer than sending, by more than one tick.
        if span_r <= span_s.saturating_add(TICK_US) {
            // Did not: the link carried at least this much.
            let proven = t.bytes as f64 * 8e6 / span_r.max(span_s).saturating_add(TICK_US) as f64;
            if self.raise
                && let Some(old) = self.estimate()
                && proven > old
            {
                self.estimate_bps = proven;
                self.raises += 1;
            }
            return;
        }
        let r = t.bytes as f64 * 8e6 / span_r as f64;
        self.estimate_bps = match self.estimate() {
            Some(old) => 0.5 * old + 0.5 * r,
            None => r,
        };
        self.sampled = true;
    }

    /// The bottleneck rate, bit/s, once a train has measured it.
    pub fn estimate(&self) -> Option<f64> {
        self.sampled.then_some(self.estimate_bps)
    }

    /// How many times a train that did not outrun the bottleneck raised the estimate.
    pub fn raises(&self) -> u64 {
        self.raises
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds a train of `n` packets of `size` bytes sent at `send_bps` through a bottleneck of
    /// `cap_bps`, with arrival times quantised to RFC 8888 ticks; returns the next send time.
    fn train(
        b: &mut BottleneckRate,
        start_us: i64,
        n: u32,
        size: u64,
        send_bps: f64,
        cap_bps: f64,
    ) -> i64 {
        let send_gap = size as f64 * 8e6 / send_bps;
        let service = size as f64 * 8e6 / cap_bps;
        let mut free = start_us as f64;
        let mut sent = start_us as f64;
        for _ in 0..n {
            let done = free.max(sent) + service;
            free = done;
            let arrival = ((done + 50_000.0) / 1e6 * 1024.0).floor() / 1024.0 * 1e6;
            b.on_acked(arrival as i64, sent as i64, size);
            sent += send_gap;
        }
        sent as i64
    }

    /// `b` after three trains at 30 Mbit/s through 20 Mbit/s (an estimate of about 20 Mbit/s,
    /// the last train still open); returns the next send time.
    fn measured_20mbps(b: &mut BottleneckRate) -> i64 {
        let mut t = 0;
        for _ in 0..3 {
            t = train(b, t, 40, 1200, 30e6, 20e6) + 20_000;
        }
        t
    }

    #[test]
    fn a_train_faster_than_the_bottleneck_measures_it() {
        let mut b = BottleneckRate::default();
        let mut t = 0;
        for _ in 0..5 {
            t = train(&mut b, t, 40, 1200, 30e6, 20e6) + 20_000;
        }
        let e = b.estimate().expect("sampled");
        assert!((e - 20e6).abs() < 0.5e6, "estimate {e}");
    }

    #[test]
    fn a_train_slower_than_the_bottleneck_is_not_a_sample() {
        let mut b = BottleneckRate::default();
        let mut t = 0;
        for _ in 0..5 {
            t = train(&mut b, t, 40, 1200, 18e6, 20e6) + 20_000;
        }
        assert_eq!(b.estimate(), None);
        // With an estimate in hand, trains sent below it do not pull it down (no ratchet).
        for _ in 0..3 {
            t = train(&mut b, t, 40, 1200, 30e6, 20e6) + 20_000;
        }
        // (The first slow train's first packet closes the last fast train.)
        t = train(&mut b, t, 40, 1200, 18e6, 20e6) + 20_000;
        let before = b.estimate().expect("sampled");
        assert!((before - 20e6).abs() < 0.5e6, "estimate {before}");
        for _ in 0..20 {
            t = train(&mut b, t, 40, 1200, 0.95 * before, 20e6) + 20_000;
        }
        assert_eq!(b.estimate(), Some(before));
    }

    #[test]
    fn a_train_the_link_carried_unstretched_raises_the_estimate_to_what_it_proves() {
        let mut b = BottleneckRate::raising();
        let mut t = measured_20mbps(&mut b);
        // The link doubles: a train sent at 25 Mbit/s arrives as sent.
        t = train(&mut b, t, 40, 1200, 25e6, 40e6) + 20_000;
        assert_eq!(
            b.raises(),
            0,
            "the first slow packet closed the last 20 Mbit/s train"
        );
        t = train(&mut b, t, 40, 1200, 25e6, 40e6) + 20_000;
        let e = b.estimate().expect("sampled");
        assert_eq!(b.raises(), 1);
        // At most the send rate, at most one tick under it.
        assert!((22e6..=25e6).contains(&e), "estimate {e}");
        // Without the probe the estimator does not raise.
        let mut plain = BottleneckRate::default();
        let mut u = measured_20mbps(&mut plain);
        for _ in 0..3 {
            u = train(&mut plain, u, 40, 1200, 25e6, 40e6) + 20_000;
        }
        assert_eq!(plain.raises(), 0);
        // A train sent faster than the new link measures it again.
        for _ in 0..6 {
            t = train(&mut b, t, 60, 1200, 60e6, 40e6) + 20_000;
        }
        let e = b.estimate().expect("sampled");
        assert!((e - 40e6).abs() < 2e6, "estimate {e}");
    }

    #[test]
    fn arrivals_stamped_in_a_bunch_prove_no_more_than_the_send_rate() {
        let mut b = BottleneckRate::raising();
        let t = measured_20mbps(&mut b);
        // A train sent at 18 Mbit/s whose arrivals were all stamped within 11 ms (a receiver
        // reading late): its arrival span alone would prove 35 Mbit/s.
        let gap = 1200.0 * 8e6 / 18e6;
        for k in 0..41 {
            let sent = t + (f64::from(k) * gap) as i64;
            let arrival = 1_000_000 + i64::from(k) * 270;
            b.on_acked(arrival, sent, 1200);
        }
        b.on_acked(2_000_000, t + 1_000_000, 1200);
        let e = b.estimate().expect("sampled");
        assert!(e <= 20.5e6, "estimate {e}");
    }

    #[test]
    fn extreme_times_and_sizes_do_not_overflow() {
        let mut b = BottleneckRate::default();
        for &(a, s, n) in &[
            (i64::MIN, i64::MIN, u64::MAX),
            (i64::MAX, i64::MIN, u64::MAX),
            (i64::MAX, i64::MAX, u64::MAX),
            (i64::MIN, i64::MAX, 0),
            (0, 0, 1200),
            (i64::MAX, 0, 1200),
        ] {
            for k in 0..5 {
                b.on_acked(a.saturating_add(k), s.saturating_add(k), n);
            }
        }
        assert!(b.estimate().is_none_or(|e| e.is_finite() && e >= 0.0));
    }

    #[test]
    fn short_trains_do_not_count() {
        let mut b = BottleneckRate::default();
        // 5 packets at 20 Mbit/s span 2 ms: too short for 1/1024 s timestamps.
        let mut t = 0;
        for _ in 0..10 {
            t = train(&mut b, t, 5, 1200, 40e6, 20e6) + 20_000;
        }
        assert_eq!(b.estimate(), None);
        for _ in 0..3 {
            t = train(&mut b, t, 40, 1200, 30e6, 20e6) + 20_000;
        }
        assert!(b.estimate().is_some());
    }
}
