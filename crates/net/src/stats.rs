//! The driver's counters, readable from any thread while it runs.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use cg_types::{DataSize, Ecn};

/// Width of one lateness-histogram bin.
const BIN: Duration = Duration::from_micros(10);
/// Bins: 0–10 µs, …, 19.99–20 ms, then one bin for everything later.
const BINS: usize = 2001;

/// Live counters of a [`crate::Driver`]; [`Stats::snapshot`] copies them out.
#[derive(Debug)]
pub struct Stats {
    datagrams_in: AtomicU64,
    bytes_in: AtomicU64,
    ecn_in: [AtomicU64; 4],
    ecn_in_missing: AtomicU64,
    foreign_datagrams: AtomicU64,
    foreign_bytes: AtomicU64,
    datagrams_out: AtomicU64,
    bytes_out: AtomicU64,
    ecn_out: [AtomicU64; 4],
    ecn_out_socket_default: AtomicU64,
    send_errors: AtomicU64,
    send_no_buffers: AtomicU64,
    send_refused: AtomicU64,
    send_would_block: AtomicU64,
    send_calls: AtomicU64,
    recv_calls: AtomicU64,
    gro_coalesced: AtomicU64,
    control_truncated: AtomicU64,
    data_truncated: AtomicU64,
    kernel_drops: AtomicU64,
    events_dropped: AtomicU64,
    timer_wakeups: AtomicU64,
    lateness: [AtomicU64; BINS],
    lateness_max_ns: AtomicU64,
}

/// A copy of the counters at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct StatsSnapshot {
    /// Datagrams from the peer handed to the session.
    pub datagrams_in: u64,
    /// Their payload bytes.
    pub bytes_in: DataSize,
    /// Datagrams from the peer by ECN code point, indexed by [`Ecn::bits`].
    pub ecn_in: [u64; 4],
    /// Datagrams from the peer whose ECN the kernel did not report.
    pub ecn_in_missing: u64,
    /// Datagrams from anyone but the peer: counted and dropped.
    pub foreign_datagrams: u64,
    /// Their payload bytes.
    pub foreign_bytes: DataSize,
    /// Datagrams the kernel accepted for sending.
    pub datagrams_out: u64,
    /// Their payload bytes.
    pub bytes_out: DataSize,
    /// Sent datagrams by per-datagram ECN code point, indexed by [`Ecn::bits`].
    pub ecn_out: [u64; 4],
    /// Sent datagrams that used the socket's code point.
    pub ecn_out_socket_default: u64,
    /// Datagrams lost to a send error (any errno but `EAGAIN`), including the two below.
    pub send_errors: u64,
    /// … of which `ENOBUFS` (a full qdisc or device queue).
    pub send_no_buffers: u64,
    /// … of which `ECONNREFUSED` (an ICMP port unreachable reported back).
    pub send_refused: u64,
    /// Times the socket buffer was full (`EAGAIN`); nothing is lost, the driver waits.
    pub send_would_block: u64,
    /// `sendmmsg` calls.
    pub send_calls: u64,
    /// `recvmmsg` calls that returned data.
    pub recv_calls: u64,
    /// Received kernel buffers that held several GRO-coalesced datagrams.
    pub gro_coalesced: u64,
    /// Received messages with truncated control data (`MSG_CTRUNC`).
    pub control_truncated: u64,
    /// Received messages too long for a receive slot, dropped.
    pub data_truncated: u64,
    /// Datagrams the kernel dropped for lack of socket buffer (`SO_RXQ_OVFL`).
    pub kernel_drops: u64,
    /// Session events dropped because the event channel was full or closed.
    pub events_dropped: u64,
    /// Timer expirations handled (`handle_timeout` calls).
    pub timer_wakeups: u64,
    /// Timer lateness: wake-up time − the `poll_timeout` deadline it was armed for.
    pub lateness: LatencyHistogram,
}

/// A histogram of durations in 10 µs bins up to 20 ms (one overflow bin beyond), with the
/// exact maximum: bounded memory whatever the run length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LatencyHistogram {
    bins: Vec<u64>,
    max: Duration,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        LatencyHistogram {
            bins: vec![0; BINS],
            max: Duration::ZERO,
        }
    }
}

impl LatencyHistogram {
    /// Empty.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one value.
    pub fn record(&mut self, d: Duration) {
        self.bins[bin(d)] += 1;
        self.max = self.max.max(d);
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.bins.iter().sum()
    }

    /// The largest value recorded.
    pub fn max(&self) -> Duration {
        self.max
    }

    /// The `q`-quantile (0..=1), as the upper edge of its 10 µs bin (values ≥ 20 ms report
    /// [`Self::max`]); `None` if empty.
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        let total = self.count();
        if total == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &n) in self.bins.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Some(if i == BINS - 1 {
                    self.max
                } else {
                    (BIN * (i as u32 + 1)).min(self.max)
                });
            }
        }
        Some(self.max)
    }

    /// The fraction of values above `limit`, to bin resolution.
    pub fn fraction_above(&self, limit: Duration) -> f64 {
        let total = self.count();
        if total == 0 {
            return 0.0;
        }
        let above: u64 = self.bins[(bin(limit) + 1).min(BINS)..].iter().sum();
        above as f64 / total as f64
    }
}

fn bin(d: Duration) -> usize {
    (d.as_nanos() / BIN.as_nanos()).min(BINS as u128 - 1) as usize
}

impl Stats {
    /// All counters zero.
    pub fn new() -> Self {
        Stats {
            datagrams_in: AtomicU64::new(0),
            bytes_in: AtomicU64::new(0),
            ecn_in: Default::default(),
            ecn_in_missing: AtomicU64::new(0),
            foreign_datagrams: AtomicU64::new(0),
            foreign_bytes: AtomicU64::new(0),
            datagrams_out: AtomicU64::new(0),
            bytes_out: AtomicU64::new(0),
            ecn_out: Default::default(),
            ecn_out_socket_default: AtomicU64::new(0),
            send_errors: AtomicU64::new(0),
            send_no_buffers: AtomicU64::new(0),
            send_refused: AtomicU64::new(0),
            send_would_block: AtomicU64::new(0),
            send_calls: AtomicU64::new(0),
            recv_calls: AtomicU64::new(0),
            gro_coalesced: AtomicU64::new(0),
            control_truncated: AtomicU64::new(0),
            data_truncated: AtomicU64::new(0),
            kernel_drops: AtomicU64::new(0),
            events_dropped: AtomicU64::new(0),
            timer_wakeups: AtomicU64::new(0),
            lateness: std::array::from_fn(|_| AtomicU64::new(0)),
            lateness_max_ns: AtomicU64::new(0),
        }
    }

    /// Copies the counters out.
    pub fn snapshot(&self) -> StatsSnapshot {
        let arr = |a: &[AtomicU64; 4]| std::array::from_fn(|i| a[i].load(Relaxed));
        StatsSnapshot {
            datagrams_in: self.datagrams_in.load(Relaxed),
            bytes_in: DataSize::bytes(self.bytes_in.load(Relaxed)),
            ecn_in: arr(&self.ecn_in),
            ecn_in_missing: self.ecn_in_missing.load(Relaxed),
            foreign_datagrams: self.foreign_datagrams.load(Relaxed),
            foreign_bytes: DataSize::bytes(self.foreign_bytes.load(Relaxed)),
            datagrams_out: self.datagrams_out.load(Relaxed),
            bytes_out: DataSize::bytes(self.bytes_out.load(Relaxed)),
            ecn_out: arr(&self.ecn_out),
            ecn_out_socket_default: self.ecn_out_socket_default.load(Relaxed),
            send_errors: self.send_errors.load(Relaxed),
            send_no_buffers: self.send_no_buffers.load(Relaxed),
            send_refused: self.send_refused.load(Relaxed),
            send_would_block: self.send_would_block.load(Relaxed),
            send_calls: self.send_calls.load(Relaxed),
            recv_calls: self.recv_calls.load(Relaxed),
            gro_coalesced: self.gro_coalesced.load(Relaxed),
            control_truncated: self.control_truncated.load(Relaxed),
            data_truncated: self.data_truncated.load(Relaxed),
            kernel_drops: self.kernel_drops.load(Relaxed),
            events_dropped: self.events_dropped.load(Relaxed),
            timer_wakeups: self.timer_wakeups.load(Relaxed),
            lateness: LatencyHistogram {
                bins: self.lateness.iter().map(|b| b.load(Relaxed)).collect(),
                max: Duration::from_nanos(self.lateness_max_ns.load(Relaxed)),
            },
        }
    }

    pub(crate) fn datagram_in(&self, len: usize, ecn: Option<Ecn>) {
        self.datagrams_in.fetch_add(1, Relaxed);
        self.bytes_in.fetch_add(len as u64, Relaxed);
        match ecn {
            Some(e) => self.ecn_in[usize::from(e.bits())].fetch_add(1, Relaxed),
            None => self.ecn_in_missing.fetch_add(1, Relaxed),
        };
    }

    pub(crate) fn foreign(&self, len: usize) {
        self.foreign_datagrams.fetch_add(1, Relaxed);
        self.foreign_bytes.fetch_add(len as u64, Relaxed);
    }

    pub(crate) fn datagram_out(&self, len: usize, ecn: Option<Ecn>) {
        self.datagrams_out.fetch_add(1, Relaxed);
        self.bytes_out.fetch_add(len as u64, Relaxed);
        match ecn {
            Some(e) => self.ecn_out[usize::from(e.bits())].fetch_add(1, Relaxed),
            None => self.ecn_out_socket_default.fetch_add(1, Relaxed),
        };
    }

    pub(crate) fn send_error(&self, errno: Option<i32>, datagrams: usize) {
        let n = datagrams as u64;
        self.send_errors.fetch_add(n, Relaxed);
        match errno {
            Some(libc::ENOBUFS) => self.send_no_buffers.fetch_add(n, Relaxed),
            Some(libc::ECONNREFUSED) => self.send_refused.fetch_add(n, Relaxed),
            _ => 0,
        };
    }

    pub(crate) fn would_block(&self) {
        self.send_would_block.fetch_add(1, Relaxed);
    }

    pub(crate) fn send_call(&self) {
        self.send_calls.fetch_add(1, Relaxed);
    }

    pub(crate) fn recv_call(&self, recv: &crate::RecvStats, before: &crate::RecvStats) {
        self.recv_calls.fetch_add(1, Relaxed);
        self.gro_coalesced
            .fetch_add(recv.gro_coalesced - before.gro_coalesced, Relaxed);
        self.control_truncated
            .fetch_add(recv.control_truncated - before.control_truncated, Relaxed);
        self.data_truncated
            .fetch_add(recv.data_truncated - before.data_truncated, Relaxed);
        self.kernel_drops
            .store(u64::from(recv.kernel_drops), Relaxed);
    }

    pub(crate) fn event_dropped(&self) {
        self.events_dropped.fetch_add(1, Relaxed);
    }

    pub(crate) fn timer(&self, lateness: Duration) {
        self.timer_wakeups.fetch_add(1, Relaxed);
        self.lateness[bin(lateness)].fetch_add(1, Relaxed);
        self.lateness_max_ns.fetch_max(
            u64::try_from(lateness.as_nanos()).unwrap_or(u64::MAX),
            Relaxed,
        );
    }
}

impl Default for Stats {
    fn default() -> Self {
        Stats::new()
    }
}

impl StatsSnapshot {
    /// Datagrams from the peer with code point `ecn`.
    pub fn ecn_in(&self, ecn: Ecn) -> u64 {
        self.ecn_in[usize::from(ecn.bits())]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lateness_quantiles_come_from_the_histogram() {
        let s = Stats::new();
        for _ in 0..98 {
            s.timer(Duration::from_micros(15));
        }
        s.timer(Duration::from_micros(400));
        s.timer(Duration::from_millis(9));
        let snap = s.snapshot();
        assert_eq!(snap.timer_wakeups, 100);
        let h = &snap.lateness;
        assert_eq!(h.quantile(0.5), Some(Duration::from_micros(20)));
        assert_eq!(h.quantile(0.99), Some(Duration::from_micros(410)));
        assert_eq!(h.quantile(1.0), Some(Duration::from_millis(9)));
        assert_eq!(h.max(), Duration::from_millis(9));
        assert!((h.fraction_above(Duration::from_micros(500)) - 0.01).abs() < 1e-9);
    }

    #[test]
    fn no_quantile_before_the_first_timer() {
        assert_eq!(Stats::new().snapshot().lateness.quantile(0.99), None);
    }

    #[test]
    fn quantile_never_exceeds_the_maximum() {
        let mut h = LatencyHistogram::new();
        h.record(Duration::from_micros(3));
        assert_eq!(h.quantile(0.99), Some(Duration::from_micros(3)));
    }

    #[test]
    fn send_errors_are_classified_by_errno() {
        let s = Stats::new();
        s.send_error(Some(libc::ENOBUFS), 3);
        s.send_error(Some(libc::ECONNREFUSED), 1);
        s.send_error(Some(libc::EPERM), 1);
        let snap = s.snapshot();
        assert_eq!(
            (snap.send_errors, snap.send_no_buffers, snap.send_refused),
            (5, 3, 1)
        );
    }
}
