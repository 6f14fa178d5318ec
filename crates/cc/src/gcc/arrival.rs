//! Packet grouping and the one-way delay variation `dm(ti)` of MMSys16 eq. (4).
//!
//! `dm(ti) = (ti − ti−1) − (Ti − Ti−1)`, where `Ti` is the send time of the first packet of
//! group `i` and `ti` the arrival time of its last packet (MMSys16 §3.3, Figure 2); or, with
//! [`GroupSendTime::Last`], `Ti` is the last packet's send time as in libwebrtc. A group is
//! a video frame ([`GroupKey::Frame`]) or, where no frame marker is available (transport-wide
//! feedback), the packets sent within a short burst ([`GroupKey::Burst`]).
//!
//! Times are signed microseconds on two clocks (send times on the sender's, arrival times on
//! the receiver's); only differences are used, so the offset between the clocks cancels.
//!
//! A packet that arrives in a burst with the group being built joins it whatever its key
//! ([`ArrivalBurst`], libwebrtc's `InterArrivalDelta::BelongsToBurst`): a receiver host that
//! was not scheduled for a while reads the packets queued meanwhile all at once, and their
//! arrival times then say nothing about the path. Split into groups, the late first group
//! reads as queuing and the ones bunched behind it as a drain, a swing of the whole stall
//! that the filter takes for over-use.
//!
//! Bad input: a packet sent before the current group started (reordering, duplicated
//! feedback) is ignored, as libwebrtc's `InterArrival` does; a group whose arrival goes
//! backwards or lies more than `max_gap` away from the previous one, or whose `dm` is larger
//! than `max_delay_jump` either way (a link outage: the first packets after it were held
//! through it, the next ones were sent after it), restarts the measurement instead of
//! producing a meaningless `dm`.

use std::time::Duration;

use crate::gcc::config::{ArrivalBurst, GroupSendTime};

/// How a packet is attached to a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupKey {
    /// The packet belongs to the frame with this identifier (e.g. its RTP timestamp).
    Frame(u64),
    /// No frame marker: group by send time, a group spanning at most `span`.
    Burst {
        /// Longest send-time span of one group.
        span: Duration,
    },
}

/// The differences between two consecutive complete groups.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GroupDelta {
    /// `Ti − Ti−1` in ms (send clock).
    pub send_delta_ms: f64,
    /// `ti − ti−1` in ms (arrival clock).
    pub arrival_delta_ms: f64,
    /// `ΔL(ti)`: size difference of the two groups in bytes (for the two-state model).
    pub size_delta_bytes: f64,
    /// Arrival time `ti` of the completed group (µs, arrival clock).
    pub arrival_us: i64,
}

impl GroupDelta {
    /// `dm(ti)` of eq. (4) in ms.
    pub fn dm_ms(&self) -> f64 {
        self.arrival_delta_ms - self.send_delta_ms
    }
}

#[derive(Debug, Clone, Copy)]
struct Group {
    frame: Option<u64>,
    first_send_us: i64,
    last_send_us: i64,
    first_arrival_us: i64,
    last_arrival_us: i64,
    size_bytes: u64,
}

impl Group {
    fn start(frame: Option<u64>, send_us: i64, arrival_us: i64, size: u64) -> Self {
        Group {
            frame,
            first_send_us: send_us,
            last_send_us: send_us,
            first_arrival_us: arrival_us,
            last_arrival_us: arrival_us,
            size_bytes: size,
        }
    }

    /// Whether a packet sent at `send_us` and arrived at `arrival_us` arrived in a burst with
    /// this group: within `burst.max_gap` of its last arrival, sooner after it than it was
    /// sent (the path did not delay it more than the group's last packet), and the group no
    /// longer than `burst.max_duration` with it.
    fn in_burst(&self, burst: ArrivalBurst, send_us: i64, arrival_us: i64) -> bool {
        let arrival_delta = arrival_us.saturating_sub(self.last_arrival_us);
        let send_delta = send_us.saturating_sub(self.last_send_us);
        send_delta == 0
            || (arrival_delta.saturating_sub(send_delta) < 0
                && arrival_delta <= micros(burst.max_gap)
                && arrival_us.saturating_sub(self.first_arrival_us) < micros(burst.max_duration))
    }
}

fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

/// Gathers packets into groups and yields [`GroupDelta`]s as groups complete.
#[derive(Debug, Clone)]
pub struct InterArrival {
    max_gap_us: i64,
    max_jump_us: i64,
    send_time: GroupSendTime,
    burst: Option<ArrivalBurst>,
    current: Option<Group>,
    previous: Option<Group>,
    resets: u64,
}

impl InterArrival {
    /// A grouper that restarts after gaps longer than `max_gap`; `send_time` says which
    /// packet's send time stands for the group.
    pub fn new(max_gap: Duration, send_time: GroupSendTime) -> Self {
        InterArrival {
            max_gap_us: micros(max_gap),
            max_jump_us: i64::MAX,
            send_time,
            burst: None,
            current: None,
            previous: None,
            resets: 0,
        }
    }

    /// Also restarts where `|dm|` exceeds `jump`.
    pub fn with_max_delay_jump(mut self, jump: Duration) -> Self {
        self.max_jump_us = micros(jump);
        self
    }

    /// Also merges arrival bursts into the group being built ([`ArrivalBurst`]).
    pub fn with_arrival_burst(mut self, burst: Option<ArrivalBurst>) -> Self {
        self.burst = burst;
        self
    }

    /// Adds a packet sent at `send_us` (sender clock) that arrived at `arrival_us` (receiver
    /// clock). Returns the delta between the two previous groups when this packet starts a
    /// new group.
    pub fn on_packet(
        &mut self,
        send_us: i64,
        arrival_us: i64,
        size_bytes: u64,
        key: GroupKey,
    ) -> Option<GroupDelta> {
        let frame = match key {
            GroupKey::Frame(f) => Some(f),
            GroupKey::Burst { .. } => None,
        };
        let Some(cur) = self.current.as_mut() else {
            self.current = Some(Group::start(frame, send_us, arrival_us, size_bytes));
            return None;
        };
        if send_us < cur.first_send_us {
            // Sent before the group being built: reordered or duplicated, too late to use.
            return None;
        }
        let same_group = match key {
            GroupKey::Frame(f) => cur.frame == Some(f),
            GroupKey::Burst { span } => send_us.saturating_sub(cur.first_send_us) <= micros(span),
        } || self
            .burst
            .is_some_and(|b| cur.in_burst(b, send_us, arrival_us));
        if same_group {
            cur.last_send_us = cur.last_send_us.max(send_us);
            cur.last_arrival_us = cur.last_arrival_us.max(arrival_us);
            cur.size_bytes = cur.size_bytes.saturating_add(size_bytes);
            return None;
        }
        let complete = *cur;
        self.current = Some(Group::start(frame, send_us, arrival_us, size_bytes));
        let delta = self.previous.and_then(|prev| self.delta(&prev, &complete));
        self.previous = Some(complete);
        delta
    }

    /// How many times a gap or a backwards step restarted the measurement.
    pub fn resets(&self) -> u64 {
        self.resets
    }

    fn delta(&mut self, prev: &Group, cur: &Group) -> Option<GroupDelta> {
        let send = match self.send_time {
            GroupSendTime::First => cur.first_send_us.saturating_sub(prev.first_send_us),
            GroupSendTime::Last => cur.last_send_us.saturating_sub(prev.last_send_us),
        };
        let arrival = cur.last_arrival_us.saturating_sub(prev.last_arrival_us);
        if arrival < 0
            || arrival > self.max_gap_us
            || send > self.max_gap_us
            || arrival.saturating_sub(send).saturating_abs() > self.max_jump_us
        {
            self.resets += 1;
            return None;
        }
        Some(GroupDelta {
            send_delta_ms: send as f64 / 1e3,
            arrival_delta_ms: arrival as f64 / 1e3,
            size_delta_bytes: cur.size_bytes as f64 - prev.size_bytes as f64,
            arrival_us: cur.last_arrival_us,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GAP: Duration = Duration::from_secs(3);

    #[test]
    fn dm_is_arrival_spacing_minus_send_spacing_of_frames() {
        let mut ia = InterArrival::new(GAP, GroupSendTime::First);
        // Frame 0: two packets sent at 0 and 1 ms, arriving at 10 and 12 ms.
        assert_eq!(ia.on_packet(0, 10_000, 1000, GroupKey::Frame(0)), None);
        assert_eq!(ia.on_packet(1_000, 12_000, 1000, GroupKey::Frame(0)), None);
        // Frame 1: sent from 33 ms, last packet arrives at 48 ms (3 ms extra queuing).
        assert_eq!(ia.on_packet(33_000, 46_000, 1200, GroupKey::Frame(1)), None);
        assert_eq!(ia.on_packet(34_000, 48_000, 1200, GroupKey::Frame(1)), None);
        // Frame 2 completes frame 1: the first delta (frames 0 → 1): 3 ms of extra queuing.
        let d = ia
            .on_packet(66_000, 80_000, 900, GroupKey::Frame(2))
            .expect("frame 1 complete");
        assert_eq!(d.dm_ms(), 3.0);
        assert_eq!(d.size_delta_bytes, 400.0);
        let d = ia
            .on_packet(99_000, 110_000, 900, GroupKey::Frame(3))
            .expect("frame 2 completes");
        // Between frame 1 and frame 2: send 33 ms apart, last arrivals 48 → 80 ms.
        assert_eq!(d.send_delta_ms, 33.0);
        assert_eq!(d.arrival_delta_ms, 32.0);
        assert_eq!(d.dm_ms(), -1.0);
        assert_eq!(d.size_delta_bytes, 900.0 - 2400.0);
    }

    #[test]
    fn last_send_time_removes_the_frame_transmission_term() {
        // Frames paced over 10 ms (small) and 20 ms (large), no queuing: the last packet
        // always arrives 25 ms after it left.
        let mut first = InterArrival::new(GAP, GroupSendTime::First);
        let mut last = InterArrival::new(GAP, GroupSendTime::Last);
        let mut dms = (Vec::new(), Vec::new());
        for f in 0..6u64 {
            let t0 = f as i64 * 33_000;
            let span = if f % 2 == 0 { 10_000 } else { 20_000 };
            for (s, a) in [(t0, t0 + 25_000), (t0 + span, t0 + span + 25_000)] {
                if let Some(d) = first.on_packet(s, a, 1000, GroupKey::Frame(f)) {
                    dms.0.push(d.dm_ms());
                }
                if let Some(d) = last.on_packet(s, a, 1000, GroupKey::Frame(f)) {
                    dms.1.push(d.dm_ms());
                }
            }
        }
        assert!(dms.0.iter().all(|d| d.abs() == 10.0), "{:?}", dms.0);
        assert!(dms.1.iter().all(|d| *d == 0.0), "{:?}", dms.1);
    }

    #[test]
    fn bursts_split_on_send_span() {
        let mut ia = InterArrival::new(GAP, GroupSendTime::First);
        let k = GroupKey::Burst {
            span: Duration::from_millis(5),
        };
        assert!(ia.on_packet(0, 0, 100, k).is_none());
        assert!(ia.on_packet(4_000, 4_000, 100, k).is_none());
        assert!(ia.on_packet(10_000, 12_000, 100, k).is_none());
        let d = ia
            .on_packet(20_000, 22_000, 100, k)
            .expect("second group complete");
        assert_eq!(d.send_delta_ms, 10.0);
        assert_eq!(d.arrival_delta_ms, 8.0);
    }

    /// `dm`s (ms, rounded) of frames given as (send ms, arrival ms), one packet each.
    fn frame_dms(mut ia: InterArrival, frames: &[(i64, i64)]) -> Vec<i64> {
        let mut dms = Vec::new();
        for (f, &(s, a)) in frames.iter().enumerate() {
            if let Some(d) = ia.on_packet(s * 1000, a * 1000, 1000, GroupKey::Frame(f as u64)) {
                dms.push(d.dm_ms().round() as i64);
            }
        }
        dms
    }

    /// The receiving host was not scheduled from 70 to 135 ms: the frames sent at 66 and 99 ms
    /// were read with the one sent at 132 ms, all at 135 ms. Merged, the stall is no `dm`; split,
    /// it swings +36 then −33 ms.
    #[test]
    fn a_receiver_stall_s_burst_joins_one_group() {
        let frames = [
            (0, 3),
            (33, 36),
            (66, 135),
            (99, 135),
            (132, 135),
            (165, 168),
            (198, 201),
            (231, 234),
        ];
        let ia = || InterArrival::new(GAP, GroupSendTime::Last);
        let merged = frame_dms(
            ia().with_arrival_burst(Some(ArrivalBurst::LIBWEBRTC)),
            &frames,
        );
        let split = frame_dms(ia(), &frames);
        assert_eq!(split, vec![0, 66, -33, -33, 0, 0]);
        // Groups: 0 | 33 | 66+99+132 | 165 | 198 | (231 incomplete).
        assert_eq!(merged, vec![0, 0, 0, 0]);
    }

    /// A burst is only what arrives sooner than it was sent, within 5 ms, for 100 ms at most.
    #[test]
    fn only_early_close_and_short_arrivals_are_a_burst() {
        let ia = || {
            InterArrival::new(GAP, GroupSendTime::Last)
                .with_arrival_burst(Some(ArrivalBurst::LIBWEBRTC))
        };
        // 6 ms after the previous frame's arrival: two groups, the drain is a dm.
        assert_eq!(
            frame_dms(ia(), &[(0, 0), (33, 50), (66, 56), (99, 89), (132, 122)]),
            vec![17, -27, 0]
        );
        // Queuing grows (each frame later than it was sent after the previous): no merge.
        assert_eq!(
            frame_dms(ia(), &[(0, 0), (2, 4), (4, 8), (6, 12)]),
            vec![2, 2]
        );
        // Back-to-back arrivals 2 ms apart of frames sent 33 ms apart merge for < 100 ms of
        // arrival time only: 0..98 ms is one group of 50 frames, 100 ms starts the next.
        let frames: Vec<(i64, i64)> = (0..110).map(|i| (i * 33, i * 2)).collect();
        let mut ia = ia();
        let mut first = None;
        for (f, &(s, a)) in frames.iter().enumerate() {
            if let Some(d) = ia.on_packet(s * 1000, a * 1000, 1000, GroupKey::Frame(f as u64)) {
                first.get_or_insert(d);
            }
        }
        let d = first.expect("two groups of 50 frames complete");
        assert_eq!((d.send_delta_ms, d.arrival_delta_ms), (50.0 * 33.0, 100.0));
    }

    #[test]
    fn reordered_packets_are_ignored() {
        let mut ia = InterArrival::new(GAP, GroupSendTime::First);
        ia.on_packet(10_000, 10_000, 100, GroupKey::Frame(1));
        assert_eq!(ia.on_packet(0, 11_000, 100, GroupKey::Frame(0)), None);
        ia.on_packet(43_000, 43_000, 100, GroupKey::Frame(2));
        let d = ia
            .on_packet(76_000, 76_000, 100, GroupKey::Frame(3))
            .unwrap();
        assert_eq!(d.send_delta_ms, 33.0);
    }

    #[test]
    fn gaps_and_backward_arrivals_restart_without_a_delta() {
        let mut ia = InterArrival::new(GAP, GroupSendTime::First);
        ia.on_packet(0, 0, 100, GroupKey::Frame(0));
        ia.on_packet(33_000, 33_000, 100, GroupKey::Frame(1));
        // Frame 2 arrives 10 s late; it completes frame 1 (a normal delta).
        let d = ia.on_packet(66_000, 10_000_000, 100, GroupKey::Frame(2));
        assert_eq!(d.map(|d| d.dm_ms()), Some(0.0));
        // Frame 3 completes frame 2: a 10 s gap, no delta.
        assert!(
            ia.on_packet(99_000, 5_000, 100, GroupKey::Frame(3))
                .is_none()
        );
        assert_eq!(ia.resets(), 1);
        // Frame 4 completes frame 3, whose arrival went back in time: no delta.
        assert!(
            ia.on_packet(132_000, 38_000, 100, GroupKey::Frame(4))
                .is_none()
        );
        assert_eq!(ia.resets(), 2);
        // Frames 3 → 4 are consistent again.
        let d = ia.on_packet(165_000, 71_000, 100, GroupKey::Frame(5));
        assert_eq!(d.map(|d| d.dm_ms()), Some(0.0));
    }

    /// A 2 s outage behind a 300 ms queue: the queued frames arrive 2 s late, then frames sent
    /// after it. Neither jump is a `dm`; the frames within each part are.
    #[test]
    fn an_outage_restarts_the_measurement_instead_of_making_a_dm() {
        let mut ia = InterArrival::new(Duration::from_secs(3), GroupSendTime::Last)
            .with_max_delay_jump(Duration::from_millis(500));
        let mut dms = Vec::new();
        // (send ms, arrival ms) per frame: before, held through the outage, after it.
        let frames = [
            (0, 25),
            (33, 58),
            (66, 91),
            (99, 2_100),
            (132, 2_110),
            (165, 2_120),
        ]
        .into_iter()
        .chain([
            (1_900, 2_150),
            (1_933, 2_170),
            (1_966, 2_200),
            (1_999, 2_230),
        ]);
        for (f, (s, a)) in frames.enumerate() {
            if let Some(d) = ia.on_packet(s * 1000, a * 1000, 1000, GroupKey::Frame(f as u64)) {
                dms.push(d.dm_ms().round() as i64);
            }
        }
        // The last frame completes no group; the jumps in (2 s late, then −1.7 s) restart.
        assert_eq!(dms, vec![0, 0, -23, -23, -13, -3]);
        assert_eq!(ia.resets(), 2);
    }
}
