//! Random loss on the link: Bernoulli, or the Gilbert-Elliott two-state burst model.
//!
//! Loss is applied where a packet enters the link, before the queue (as netem does), so a
//! lost packet never occupies the buffer.

use cg_types::Rng;
use serde::{Deserialize, Serialize};

use crate::error::{Error, probability};

/// Random loss model.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum LossConfig {
    /// No random loss (default).
    #[default]
    None,
    /// Each packet is lost independently with probability `p`.
    Bernoulli {
        /// Loss probability in `[0, 1]`.
        p: f64,
    },
    /// Gilbert-Elliott (Gilbert 1960, Elliott 1963; netem's `loss gemodel p r 1-h 1-k`):
    /// a Good and a Bad state with their own loss probabilities; after each packet the state
    /// flips Good→Bad with probability `p` and Bad→Good with probability `r`. Mean loss is
    /// `(r·loss_good + p·loss_bad) / (p + r)`; mean burst length in Bad is `1/r` packets.
    GilbertElliott {
        /// P(Good → Bad) per packet.
        p: f64,
        /// P(Bad → Good) per packet.
        r: f64,
        /// Loss probability in Good (netem `1-k`; default 0).
        #[serde(default)]
        loss_good: f64,
        /// Loss probability in Bad (netem `1-h`; default 1).
        #[serde(default = "one")]
        loss_bad: f64,
    },
}

fn one() -> f64 {
    1.0
}

impl LossConfig {
    /// Gilbert-Elliott loss given by what it does: a `mean` loss ratio in bursts of `burst`
    /// packets on average, Good never losing and Bad always losing (netem's simple Gilbert
    /// model). A loss burst is then one stay in Bad, geometric with mean `1/r`, and the mean
    /// loss is the stationary share of Bad, `p/(p + r)`; so
    ///
    /// `r = 1/burst`, `p = r·mean/(1 − mean)`.
    ///
    /// Needs `0 < mean < 1` and `burst ≥ 1`, and `p ≤ 1`: a stay in Good lasts `1/p ≥ 1`
    /// packets, so `mean ≤ burst/(burst + 1)` (e.g. at most 0.5 with single losses).
    pub fn gilbert_elliott_mean_burst(mean: f64, burst: f64) -> Result<LossConfig, Error> {
        if !(mean > 0.0 && mean < 1.0) {
            return Err(Error::InvalidParameter {
                what: "gilbert-elliott mean loss",
                reason: format!("must be above 0 and below 1, got {mean}"),
            });
        }
        if !(burst.is_finite() && burst >= 1.0) {
            return Err(Error::InvalidParameter {
                what: "gilbert-elliott mean burst",
                reason: format!("must be at least 1 packet, got {burst}"),
            });
        }
        let r = 1.0 / burst;
        let p = r * mean / (1.0 - mean);
        if p > 1.0 {
            return Err(Error::InvalidParameter {
                what: "gilbert-elliott mean loss",
                reason: format!(
                    "{mean} in bursts of {burst} packets needs P(Good → Bad) = {p:.3} > 1: \
                     with that burst the mean loss is at most burst/(burst + 1) = {:.3}",
                    burst / (burst + 1.0)
                ),
            });
        }
        Ok(LossConfig::GilbertElliott {
            p,
            r,
            loss_good: 0.0,
            loss_bad: 1.0,
        })
    }

    /// The long-run share of packets lost: `p` for Bernoulli, `(r·loss_good +
    /// p·loss_bad)/(p + r)` for Gilbert-Elliott (its Good state's loss when it never moves).
    pub fn mean_loss(&self) -> f64 {
        match *self {
            LossConfig::None => 0.0,
            LossConfig::Bernoulli { p } => p,
            LossConfig::GilbertElliott {
                p,
                r,
                loss_good,
                loss_bad,
            } => {
                if p + r > 0.0 {
                    (r * loss_good + p * loss_bad) / (p + r)
                } else {
                    loss_good
                }
            }
        }
    }

    /// Checks every probability is in `[0, 1]`.
    pub fn validate(&self) -> Result<(), Error> {
        match *self {
            LossConfig::None => {}
            LossConfig::Bernoulli { p } => {
                probability("bernoulli loss p", p)?;
            }
            LossConfig::GilbertElliott {
                p,
                r,
                loss_good,
                loss_bad,
            } => {
                probability("gilbert-elliott p", p)?;
                probability("gilbert-elliott r", r)?;
                probability("gilbert-elliott loss_good", loss_good)?;
                probability("gilbert-elliott loss_bad", loss_bad)?;
            }
        }
        Ok(())
    }
}

/// The running loss model.
#[derive(Debug, Clone)]
pub(crate) struct Loss {
    config: LossConfig,
    bad: bool,
    rng: Rng,
}

impl Loss {
    pub(crate) fn new(config: LossConfig, rng: Rng) -> Result<Self, Error> {
        config.validate()?;
        Ok(Loss {
            config,
            bad: false,
            rng,
        })
    }

    /// Whether the next packet is lost.
    pub(crate) fn lose(&mut self) -> bool {
        match self.config {
            LossConfig::None => false,
            LossConfig::Bernoulli { p } => self.rng.bernoulli(p),
            LossConfig::GilbertElliott {
                p,
                r,
                loss_good,
                loss_bad,
            } => {
                // netem's order: the loss decision uses the state the packet found.
                let lost = self
                    .rng
                    .bernoulli(if self.bad { loss_bad } else { loss_good });
                self.bad = if self.bad {
                    !self.rng.bernoulli(r)
                } else {
                    self.rng.bernoulli(p)
                };
                lost
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bernoulli_loses_its_fraction() {
        let mut l = Loss::new(LossConfig::Bernoulli { p: 0.1 }, Rng::new(1)).unwrap();
        let n = 100_000;
        let lost = (0..n).filter(|_| l.lose()).count() as f64 / n as f64;
        assert!((lost - 0.1).abs() < 0.005, "{lost}");
    }

    #[test]
    fn gilbert_elliott_has_the_stationary_loss_and_bursts() {
        let (p, r) = (0.01, 0.25);
        let mut l = Loss::new(
            LossConfig::GilbertElliott {
                p,
                r,
                loss_good: 0.0,
                loss_bad: 1.0,
            },
            Rng::new(2),
        )
        .unwrap();
        let n = 400_000;
        let seq: Vec<bool> = (0..n).map(|_| l.lose()).collect();
        let lost = seq.iter().filter(|x| **x).count() as f64 / n as f64;
        let expected = p / (p + r);
        assert!((lost - expected).abs() < 0.005, "{lost} vs {expected}");
        // Mean burst length 1/r = 4 packets.
        let bursts = seq.windows(2).filter(|w| !w[0] && w[1]).count() as f64;
        let mean_burst = lost * n as f64 / bursts;
        assert!((mean_burst - 4.0).abs() < 0.3, "{mean_burst}");
    }

    #[test]
    fn mean_and_burst_give_that_mean_loss_in_bursts_of_that_length() {
        let cfg = LossConfig::gilbert_elliott_mean_burst(0.02, 4.0).unwrap();
        assert!((cfg.mean_loss() - 0.02).abs() < 1e-12);
        let mut l = Loss::new(cfg, Rng::new(5)).unwrap();
        let n = 1_000_000;
        let seq: Vec<bool> = (0..n).map(|_| l.lose()).collect();
        let lost = seq.iter().filter(|x| **x).count() as f64;
        let bursts = seq.windows(2).filter(|w| !w[0] && w[1]).count() as f64;
        assert!(
            (lost / n as f64 - 0.02).abs() < 0.002,
            "{}",
            lost / n as f64
        );
        assert!(
            (lost / bursts - 4.0).abs() < 0.2,
            "mean burst {}",
            lost / bursts
        );
    }

    #[test]
    fn impossible_mean_and_burst_are_errors() {
        // Single losses (burst 1) cannot exceed a mean of 1/2: Good lasts at least a packet.
        assert!(LossConfig::gilbert_elliott_mean_burst(0.5, 1.0).is_ok());
        assert!(LossConfig::gilbert_elliott_mean_burst(0.6, 1.0).is_err());
        assert!(LossConfig::gilbert_elliott_mean_burst(0.0, 4.0).is_err());
        assert!(LossConfig::gilbert_elliott_mean_burst(0.02, 0.5).is_err());
        assert!(LossConfig::gilbert_elliott_mean_burst(f64::NAN, 4.0).is_err());
        assert!(LossConfig::gilbert_elliott_mean_burst(0.02, f64::INFINITY).is_err());
    }

    #[test]
    fn invalid_probabilities_are_errors() {
        assert!(Loss::new(LossConfig::Bernoulli { p: 1.5 }, Rng::new(0)).is_err());
        assert!(Loss::new(LossConfig::Bernoulli { p: f64::NAN }, Rng::new(0)).is_err());
        let ge = LossConfig::GilbertElliott {
            p: 0.1,
            r: -0.1,
            loss_good: 0.0,
            loss_bad: 1.0,
        };
        assert!(ge.validate().is_err());
    }
}
