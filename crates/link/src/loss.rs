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
