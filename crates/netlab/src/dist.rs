//! The distribution summary every delay figure is reported in: mean, spread, percentiles
//! and the shares above the papers' delay thresholds.

use serde::{Deserialize, Serialize};

/// Distribution summary of a set of samples (ms). Of no samples every figure is NaN (`null`
/// in the summary's JSON), so that nothing reads as a perfect run of a flow that measured
/// nothing.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Dist {
    /// Samples.
    pub n: u64,
    /// Mean.
    pub mean: f64,
    /// Standard deviation.
    pub stddev: f64,
    /// 5th percentile.
    pub p5: f64,
    /// 25th.
    pub p25: f64,
    /// Median.
    pub p50: f64,
    /// 75th.
    pub p75: f64,
    /// 95th.
    pub p95: f64,
    /// Maximum.
    pub max: f64,
    /// Share of samples above 10, 20, 50, 100 ms.
    pub share_above_10_20_50_100: [f64; 4],
}

impl Default for Dist {
    /// No samples.
    fn default() -> Self {
        Dist {
            n: 0,
            mean: f64::NAN,
            stddev: f64::NAN,
            p5: f64::NAN,
            p25: f64::NAN,
            p50: f64::NAN,
            p75: f64::NAN,
            p95: f64::NAN,
            max: f64::NAN,
            share_above_10_20_50_100: [f64::NAN; 4],
        }
    }
}

impl Dist {
    /// Summarises `v` (sorted in place).
    pub fn of(v: &mut [f64]) -> Dist {
        if v.is_empty() {
            return Dist::default();
        }
        v.sort_by(f64::total_cmp);
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
        let q = |p: f64| v[((p * (n - 1.0)).round() as usize).min(v.len() - 1)];
        let above = |t: f64| v.iter().filter(|x| **x > t).count() as f64 / n;
        Dist {
            n: v.len() as u64,
            mean,
            stddev: var.sqrt(),
            p5: q(0.05),
            p25: q(0.25),
            p50: q(0.5),
            p75: q(0.75),
            p95: q(0.95),
            max: v[v.len() - 1],
            share_above_10_20_50_100: [above(10.0), above(20.0), above(50.0), above(100.0)],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distribution_percentiles_and_shares() {
        let mut v: Vec<f64> = (0..=100).map(f64::from).collect();
        let d = Dist::of(&mut v);
        assert_eq!(d.p50, 50.0);
        assert_eq!(d.p5, 5.0);
        assert_eq!(d.p95, 95.0);
        assert_eq!(d.max, 100.0);
        assert!((d.mean - 50.0).abs() < 1e-9);
        assert!((d.share_above_10_20_50_100[0] - 90.0 / 101.0).abs() < 1e-9);
        assert_eq!(d.share_above_10_20_50_100[3], 0.0);
        let none = Dist::of(&mut []);
        assert_eq!(none.n, 0);
        assert!(none.p50.is_nan() && none.p95.is_nan() && none.max.is_nan());
        let json = serde_json::to_value(&none).unwrap();
        assert!(json["p95"].is_null(), "{json}");
    }
}
