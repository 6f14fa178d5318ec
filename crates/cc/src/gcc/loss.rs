//! The sender's loss-based controller (MMSys16 §3.4, eq. (5); 2013 §III-A, eq. (1)–(2)).
//!
//! On each loss report with fraction lost `fl`:
//! - `fl > 0.1`: `As ← As·(1 − 0.5·fl)` (2013: but not below the TFRC rate `X`);
//! - `fl < 0.02`: `As ← 1.05·As` (2013: `1.05·(As + 1 kbit/s)`);
//! - otherwise `As` is kept.
//!
//! Then `As ← min(As, Ar)` (2013 eq. (2)), and `As ∈ [min, max]`.
//!
//! The papers receive one report per second (RTCP RR). Where reports come faster (send-side
//! mode acts on every transport-wide report), the increase is applied to the smallest `As`
//! of the last `interval` (libwebrtc's `min_bitrate_history`), so that `As` still grows by
//! at most 5 % per `interval`; with one report per interval this is eq. (5) exactly.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use cg_types::{Bitrate, DataSize};

use crate::gcc::config::LossModel;

/// Which band of eq. (5) the last report fell in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LossBand {
    /// `fl < 0.02`: increase.
    Increase,
    /// `0.02 ≤ fl ≤ 0.1`: hold.
    Hold,
    /// `fl > 0.1`: decrease.
    Decrease,
}

/// Parameters of eq. (5).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LossParams {
    /// MMSys16 eq. (5) or 2013 eq. (1).
    pub model: LossModel,
    /// Decrease above this fraction lost.
    pub high: f64,
    /// Increase below this fraction lost.
    pub low: f64,
    /// Increase factor.
    pub increase: f64,
    /// Lower bound.
    pub min: Bitrate,
    /// Upper bound.
    pub max: Bitrate,
    /// The increase applies to the smallest `As` of this window (one RR interval).
    pub interval: Duration,
    /// The increase over one `interval` is at least this much (see
    /// [`GccConfig::loss_additive_floor`](crate::gcc::GccConfig::loss_additive_floor)).
    pub additive_floor: Bitrate,
}

/// `As`.
#[derive(Debug, Clone)]
pub struct LossController {
    p: LossParams,
    a_s: Bitrate,
    /// `(since, As)` values of the last `interval`, bounded.
    history: VecDeque<(Instant, Bitrate)>,
}

impl LossController {
    /// Starts at `start`, clamped to `[min, max]`.
    pub fn new(p: LossParams, start: Bitrate) -> Self {
        LossController {
            p,
            a_s: start.min(p.max).max(p.min),
            history: VecDeque::new(),
        }
    }

    /// A report with fraction lost `fl` (clamped to `[0, 1]`; NaN counts as 0). `rtt` and
    /// the mean packet size feed the TFRC floor of the 2013 model. Returns the band applied.
    pub fn on_report(
        &mut self,
        fl: f64,
        rtt: Option<Duration>,
        packet_size: DataSize,
        now: Instant,
    ) -> LossBand {
        let fl = if fl.is_nan() { 0.0 } else { fl.clamp(0.0, 1.0) };
        let band = if fl > self.p.high {
            LossBand::Decrease
        } else if fl < self.p.low {
            LossBand::Increase
        } else {
            LossBand::Hold
        };
        self.record(now);
        let base = self.recent_min(now);
        self.a_s = match (band, self.p.model) {
            (LossBand::Decrease, LossModel::Mmsys16) => self.a_s.mul_f64(1.0 - 0.5 * fl),
            (LossBand::Decrease, LossModel::TfrcFloor) => {
                let dec = self.a_s.mul_f64(1.0 - 0.5 * fl);
                match rtt.and_then(|r| tfrc_rate(packet_size, r, fl)) {
                    Some(x) => dec.max(x),
                    None => dec,
                }
            }
            (LossBand::Increase, LossModel::Mmsys16) => self.a_s.max(
                base.mul_f64(self.p.increase)
                    .max(base + self.p.additive_floor),
            ),
            (LossBand::Increase, LossModel::TfrcFloor) => self.a_s.max(
                (base + Bitrate::kbps(1))
                    .mul_f64(self.p.increase)
                    .max(base + self.p.additive_floor),
            ),
            (LossBand::Hold, _) => self.a_s,
        };
        self.a_s = self.a_s.min(self.p.max).max(self.p.min);
        band
    }

    /// The smallest `As` held during the last `interval` (values are recorded before each
    /// report's update and after each cap; a value exactly one interval old has expired, so
    /// that reports exactly one interval apart give eq. (5) exactly).
    fn recent_min(&mut self, now: Instant) -> Bitrate {
        while self
            .history
            .front()
            .is_some_and(|(t, _)| now.saturating_duration_since(*t) >= self.p.interval)
        {
            self.history.pop_front();
        }
        self.history
            .iter()
            .map(|(_, v)| *v)
            .fold(self.a_s, Bitrate::min)
    }

    fn record(&mut self, now: Instant) {
        if self.history.len() >= 256 {
            self.history.pop_front();
        }
        self.history.push_back((now, self.a_s));
    }

    /// `As ← min(As, Ar)` (2013 eq. (2)); returns whether `Ar` reduced `As` (a delay-based
    /// decrease event, counted in `n_dd`).
    pub fn cap(&mut self, ar: Bitrate, now: Instant) -> bool {
        let ar = ar.min(self.p.max).max(self.p.min);
        if ar < self.a_s {
            self.a_s = ar;
            self.record(now);
            true
        } else {
            false
        }
    }

    /// A validated probe result raises `As` to it (libwebrtc's `SetSendBitrate` after a
    /// probe; a lower result is left to the controllers).
    pub fn raise_to(&mut self, rate: Bitrate, now: Instant) {
        let rate = rate.min(self.p.max).max(self.p.min);
        if rate > self.a_s {
            self.a_s = rate;
            self.history.clear();
            self.record(now);
        }
    }

    /// `As`.
    pub fn estimate(&self) -> Bitrate {
        self.a_s
    }
}

/// The TCP throughput equation of TFRC (RFC 5348 §3.1) with `b = 1` and `t_RTO = 4·R`:
/// `X = s / (R·√(2p/3) + t_RTO·(3·√(3p/8))·p·(1 + 32p²))`. `None` for `p = 0` or zero RTT.
pub fn tfrc_rate(s: DataSize, rtt: Duration, p: f64) -> Option<Bitrate> {
    let r = rtt.as_secs_f64();
    if !(p > 0.0 && r > 0.0) {
        return None;
    }
    let t_rto = 4.0 * r;
    let denom = r * (2.0 * p / 3.0).sqrt()
        + t_rto * (3.0 * (3.0 * p / 8.0).sqrt()) * p * (1.0 + 32.0 * p * p);
    Some(Bitrate::from_bps_f64(s.as_bytes_f64() * 8.0 / denom))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(model: LossModel) -> LossParams {
        LossParams {
            model,
            high: 0.1,
            low: 0.02,
            increase: 1.05,
            min: Bitrate::kbps(50),
            max: Bitrate::mbps(2),
            interval: Duration::from_secs(1),
            additive_floor: Bitrate::ZERO,
        }
    }

    /// One report per second, as RTCP RRs come in the papers.
    fn t(k: u64) -> Instant {
        thread_local!(static T0: Instant = Instant::now());
        T0.with(|t0| *t0 + Duration::from_secs(k))
    }

    #[test]
    fn three_bands_of_eq5() {
        let mut c = LossController::new(params(LossModel::Mmsys16), Bitrate::kbps(1000));
        let s = DataSize::bytes(1200);
        assert_eq!(c.on_report(0.01, None, s, t(1)), LossBand::Increase);
        assert_eq!(c.estimate(), Bitrate::kbps(1050));
        assert_eq!(c.on_report(0.02, None, s, t(2)), LossBand::Hold);
        assert_eq!(c.on_report(0.1, None, s, t(3)), LossBand::Hold);
        assert_eq!(c.estimate(), Bitrate::kbps(1050));
        assert_eq!(c.on_report(0.2, None, s, t(4)), LossBand::Decrease);
        assert_eq!(c.estimate(), Bitrate::kbps(945));
    }

    #[test]
    fn frequent_reports_still_grow_as_by_five_percent_per_interval() {
        let mut c = LossController::new(params(LossModel::Mmsys16), Bitrate::kbps(1000));
        let t0 = t(0);
        for i in 0..20u32 {
            c.on_report(
                0.0,
                None,
                DataSize::bytes(1200),
                t0 + Duration::from_millis(50) * i,
            );
        }
        assert_eq!(
            c.estimate(),
            Bitrate::kbps(1050),
            "20 reports within one second"
        );
        c.on_report(
            0.0,
            None,
            DataSize::bytes(1200),
            t0 + Duration::from_millis(1100),
        );
        assert_eq!(c.estimate(), Bitrate::kbps(1050).mul_f64(1.05));
    }

    #[test]
    fn slow_flows_grow_at_least_by_the_additive_floor() {
        let p = LossParams {
            additive_floor: Bitrate::kbps(32),
            ..params(LossModel::Mmsys16)
        };
        let mut c = LossController::new(p, Bitrate::kbps(200));
        c.on_report(0.0, None, DataSize::bytes(1200), t(1));
        assert_eq!(c.estimate(), Bitrate::kbps(232), "5 % of 200k is only 10k");
        let mut c = LossController::new(p, Bitrate::kbps(1000));
        c.on_report(0.0, None, DataSize::bytes(1200), t(1));
        assert_eq!(c.estimate(), Bitrate::kbps(1050));
    }

    #[test]
    fn ar_caps_as_and_counts_as_delay_based_decrease() {
        let mut c = LossController::new(params(LossModel::Mmsys16), Bitrate::kbps(1000));
        assert!(!c.cap(Bitrate::kbps(1200), t(0)));
        assert!(c.cap(Bitrate::kbps(800), t(0)));
        assert_eq!(c.estimate(), Bitrate::kbps(800));
    }

    #[test]
    fn tfrc_floor_limits_the_decrease() {
        let s = DataSize::bytes(1200);
        let rtt = Some(Duration::from_millis(50));
        let mut plain = LossController::new(params(LossModel::Mmsys16), Bitrate::kbps(2000));
        let mut tfrc = LossController::new(params(LossModel::TfrcFloor), Bitrate::kbps(2000));
        for k in 0..60 {
            plain.on_report(0.15, rtt, s, t(k));
            tfrc.on_report(0.15, rtt, s, t(k));
        }
        let x = tfrc_rate(s, Duration::from_millis(50), 0.15).unwrap();
        assert_eq!(plain.estimate(), Bitrate::kbps(50));
        assert_eq!(tfrc.estimate(), x.max(Bitrate::kbps(50)));
        assert!(tfrc.estimate() > plain.estimate());
        // The 2013 increase adds 1 kbit/s before multiplying.
        let mut c = LossController::new(params(LossModel::TfrcFloor), Bitrate::kbps(1000));
        c.on_report(0.0, None, s, t(0));
        assert_eq!(c.estimate(), Bitrate::kbps(1051) + Bitrate::bps(50));
    }

    #[test]
    fn bounds_hold_for_garbage_fractions() {
        let mut c = LossController::new(params(LossModel::Mmsys16), Bitrate::kbps(1000));
        for (k, fl) in [f64::NAN, -3.0, 7.0, f64::INFINITY].into_iter().enumerate() {
            c.on_report(fl, None, DataSize::ZERO, t(k as u64));
            assert!(c.estimate() >= Bitrate::kbps(50) && c.estimate() <= Bitrate::mbps(2));
        }
    }
}
