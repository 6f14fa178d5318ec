//! Running a cg [`Controller`] as webrtc-rs 0.21's `BandwidthEstimator` (feature `webrtc`).
//!
//! webrtc-rs 0.21 (`rtc-interceptor`) plugs congestion control in through the trait
//! `rtc_interceptor::BandwidthEstimator`, driven by its `CongestionControlInterceptor` at
//! `Slot::CongestionControl`: the interceptor records departures, resolves transport-wide CC
//! and RFC 8888 feedback into `PacketReport`s (departure instant, arrival on the receiver's
//! clock, size, arrived, ECN), hands them to `on_reports`, and reads `target_bitrate` after
//! each call and each `handle_timeout`.
//!
//! [`WebrtcEstimator`] maps that onto [`Controller`]:
//!
//! | webrtc-rs | cg |
//! |---|---|
//! | `PacketReport::id` (monotonic, send order) | [`SentPacket::seq`] / [`PacketResult::seq`] |
//! | `departure` | [`SentPacket::send_time`] (reported on first sight, before the feedback) |
//! | `arrival: Option<Duration>` | [`PacketResult::arrival`] as a [`RemoteTime`] |
//! | `arrived == false` | `arrival: None` |
//! | `ecn` (receiver's view) | [`PacketResult::ecn`] |
//! | `on_reports(now, …)` | [`Controller::on_feedback`] |
//! | `target_bitrate()` (bit/s as `f64`) | [`Controller::target_bitrate`] |
//! | `handle_timeout` / `poll_timeout` | same names (a deadline not after the last `now` is withheld, as the trait requires) |
//! | `stats()` | `a_r` → delay-based, `a_s` → loss-based, RTT |
//!
//! Fit and limits:
//! - GCC in send-side mode ([`crate::gcc::GccConfig::send_side`]) fits completely: it needs
//!   only each packet's send time and size, which the reports carry.
//! - The estimator learns of a packet only when its feedback arrives, so a window-based
//!   controller (SCReAM's bytes in flight) cannot be driven through this trait alone: it
//!   needs a small interceptor at `Slot::Pacer` calling `on_packet_sent` at departure (the
//!   trait has no such hook). Likewise GCC's REMB mode needs a tap interceptor that feeds
//!   received RTP to a [`crate::ReceiveSideEstimator`] and sends REMB, and RR loss figures
//!   need a tap on incoming RTCP (shared/notes/webrtc-rs.md).
//! - The shipped pacer paces at exactly 1.0 × target; GCC's 1.5 pacing factor
//!   ([`Controller::pacing_rate`]) needs a custom pacer at `Slot::Pacer`.
//! - Frame boundaries are not in `PacketReport`, so send-side GCC groups packets by 15 ms
//!   send bursts here (MMSys16 eq. (4) groups by frame; see [`crate::gcc::Grouping`]).

use std::time::Instant;

use cg_types::{DataSize, Ecn, RemoteTime};
use rtc_interceptor::{BandwidthEstimator, EstimatorStats, PacketReport};

use crate::controller::{Controller, Feedback, PacketKind, PacketResult, SentPacket};

/// A cg controller behind webrtc-rs's `BandwidthEstimator`.
#[derive(Debug)]
pub struct WebrtcEstimator<C: Controller + Sync> {
    controller: C,
    /// Highest report id already passed to `on_packet_sent`.
    announced: Option<u64>,
    results: Vec<PacketResult>,
    last_now: Option<Instant>,
}

impl<C: Controller + Sync> WebrtcEstimator<C> {
    /// Wraps `controller`.
    pub fn new(controller: C) -> Self {
        WebrtcEstimator {
            controller,
            announced: None,
            results: Vec::new(),
            last_now: None,
        }
    }

    /// The wrapped controller.
    pub fn controller(&self) -> &C {
        &self.controller
    }

    fn stat(&self, name: &str) -> Option<f64> {
        self.controller.stats().extra_value(name)
    }
}

impl<C: Controller + Sync> BandwidthEstimator for WebrtcEstimator<C> {
    fn on_reports(&mut self, now: Instant, reports: &[PacketReport]) {
        self.last_now = Some(self.last_now.map_or(now, |l| l.max(now)));
        if reports.is_empty() {
            return;
        }
        self.results.clear();
        for r in reports {
            if self.announced.is_none_or(|a| r.id > a) {
                self.controller.on_packet_sent(&SentPacket {
                    seq: r.id,
                    size: DataSize::bytes(u64::try_from(r.size).unwrap_or(u64::MAX)),
                    send_time: r.departure,
                    // What it was sent with is not in the report; the receiver's view is
                    // in the result below.
                    ecn: Ecn::NotEct,
                    kind: PacketKind::Media,
                });
                self.announced = Some(r.id);
            }
            self.results.push(PacketResult {
                seq: r.id,
                arrival: if r.arrived {
                    r.arrival.map(RemoteTime::from_duration)
                } else {
                    None
                },
                ecn: Ecn::from_bits(r.ecn as u8),
            });
        }
        let fb = Feedback {
            packets: &self.results,
            ..Feedback::default()
        };
        self.controller.on_feedback(&fb, now);
    }

    fn target_bitrate(&self) -> f64 {
        self.controller.target_bitrate().as_bps_f64()
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.last_now = Some(self.last_now.map_or(now, |l| l.max(now)));
        self.controller.handle_timeout(now);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        // The trait forbids a deadline at or before the last `now` (a busy loop).
        self.controller
            .poll_timeout()
            .filter(|t| self.last_now.is_none_or(|l| *t > l))
    }

    fn stats(&self) -> EstimatorStats {
        let mut s = EstimatorStats::default();
        s.delay_based_bitrate = self.stat("a_r");
        s.loss_based_bitrate = self.stat("a_s");
        s.round_trip_time = self.controller.stats().rtt;
        s
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::gcc::GccConfig;

    /// A 1 Mbit/s bottleneck (fluid model) with 25 ms of propagation delay; 1000-byte
    /// packets released at the estimator's target, feedback every 50 ms.
    fn run(est: &mut WebrtcEstimator<crate::gcc::GccController>, t0: Instant, secs: u64) -> f64 {
        let cap_bps = 1e6;
        let mut link_free = 0.0f64; // µs since t0
        let mut pending: Vec<PacketReport> = Vec::new();
        let mut t = 0.0f64; // µs since t0
        let mut id = 0u64;
        let mut next_fb = 50_000.0;
        let end = secs as f64 * 1e6;
        let mut min_target = f64::MAX;
        while t < end {
            let rate = est.target_bitrate().max(10_000.0);
            let tx = 1000.0 * 8.0 / cap_bps * 1e6;
            link_free = link_free.max(t) + tx;
            let arrival = link_free + 25_000.0;
            pending.push(PacketReport {
                ssrc: 1,
                id,
                rtp_sequence_number: id as u16,
                is_twcc: true,
                twcc_sequence_number: id as u16,
                size: 1000,
                arrived: true,
                departure: t0 + Duration::from_micros(t as u64),
                arrival: Some(Duration::from_micros(arrival as u64 + 7_000_000)),
                ecn: Default::default(),
            });
            id += 1;
            t += 1000.0 * 8.0 / rate * 1e6;
            if t >= next_fb {
                // Report what has arrived by now (+ 25 ms for the feedback to come back).
                let (done, rest): (Vec<_>, Vec<_>) = pending.into_iter().partition(|r| {
                    r.arrival
                        .is_some_and(|a| (a.as_micros() as f64 - 7e6) + 25_000.0 <= t)
                });
                pending = rest;
                est.on_reports(t0 + Duration::from_micros(t as u64), &done);
                next_fb += 50_000.0;
                min_target = min_target.min(est.target_bitrate());
            }
        }
        min_target
    }

    #[test]
    fn gcc_send_side_runs_as_a_webrtc_bandwidth_estimator() {
        let t0 = Instant::now();
        let cfg = GccConfig::send_side();
        let mut est = WebrtcEstimator::new(cfg.build_controller(t0).unwrap());
        est.on_reports(t0, &[]);
        assert_eq!(est.target_bitrate(), 300_000.0);
        let min = run(&mut est, t0, 60);
        let target = est.target_bitrate();
        // It grew from 300 kbit/s towards the 1 Mbit/s bottleneck and backed off when the
        // queue grew, never leaving [min, max].
        assert!(
            target > 600_000.0 && target < 1_200_000.0,
            "target {target}"
        );
        assert!(min >= 50_000.0);
        let s = est.stats();
        assert!(s.delay_based_bitrate.is_some() && s.loss_based_bitrate.is_some());
        assert!(
            est.controller().gcc_stats().n_dd > 0,
            "delay-based decreases happened"
        );
        assert_eq!(est.poll_timeout(), None);
    }
}
