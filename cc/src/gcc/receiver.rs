//! GCC's receiver side in REMB mode (MMSys16 Figure 1): the delay-based controller fed by
//! received packets, and REMB processing.

use std::time::Instant;

use cg_types::Bitrate;

use crate::controller::{ReceiveSideEstimator, ReceivedPacket};
use crate::gcc::arrival::GroupKey;
use crate::gcc::config::{GccConfig, Grouping};
use crate::gcc::delay_based::{DelayBasedController, DelayBasedStats};
use crate::gcc::remb::RembScheduler;
use crate::gcc::time::micros_since;

/// The receiver-side estimator: feed it every media packet, send what
/// [`poll_remb`](ReceiveSideEstimator::poll_remb) answers as REMB.
#[derive(Debug, Clone)]
pub struct GccReceiver {
    delay: DelayBasedController,
    remb: RembScheduler,
    grouping: Grouping,
    base: Instant,
    has_estimate: bool,
    last_arrival: Instant,
}

impl GccReceiver {
    /// A receiver estimator starting at `now`.
    pub fn new(c: &GccConfig, now: Instant) -> Self {
        GccReceiver {
            delay: DelayBasedController::new(c),
            remb: RembScheduler::new(c.remb_interval, c.remb_drop_ratio),
            grouping: c.grouping,
            base: now,
            has_estimate: false,
            last_arrival: now,
        }
    }

    /// The delay-based quantities (`m`, `γ`, signal, state, `Ar`, `R`).
    pub fn delay_stats(&self) -> DelayBasedStats {
        self.delay.stats()
    }
}

impl ReceiveSideEstimator for GccReceiver {
    fn on_packet_received(&mut self, p: &ReceivedPacket) {
        let key = match self.grouping {
            Grouping::Frame => GroupKey::Frame(p.group),
            Grouping::SendBurst { span } => GroupKey::Burst { span },
        };
        let arrival_us = micros_since(p.arrival, self.base);
        if self
            .delay
            .on_packet(p.send_time.as_micros(), arrival_us, p.size, key)
        {
            self.has_estimate = true;
        }
        self.last_arrival = self.last_arrival.max(p.arrival);
    }

    fn handle_timeout(&mut self, _now: Instant) {}

    fn poll_timeout(&self) -> Option<Instant> {
        if !self.has_estimate {
            return None;
        }
        if self.remb.is_due(self.last_arrival, self.delay.estimate()) {
            return Some(self.last_arrival);
        }
        self.remb.next_periodic()
    }

    fn poll_remb(&mut self, now: Instant) -> Option<Bitrate> {
        if !self.has_estimate {
            return None;
        }
        self.remb.poll(now, self.delay.estimate())
    }

    fn estimate(&self) -> Bitrate {
        self.delay.estimate()
    }

    fn stats(&self) -> Vec<(&'static str, f64)> {
        let s = self.delay.stats();
        vec![
            ("m", s.m),
            ("gamma", s.gamma),
            ("dm", s.dm),
            ("gain", s.gain),
            ("noise_var", s.noise_var),
            ("signal", s.signal.as_f64()),
            ("state", s.state.as_f64()),
            ("a_r", s.a_r.as_bps_f64()),
            ("r", s.receive_rate.map_or(f64::NAN, |r| r.as_bps_f64())),
        ]
    }
}
