//! One of our measurements against one of the papers' numbers: within its tolerance band,
//! or outside it on the better or the worse side.

use super::figure::{Better, PaperFigure, Relation};

impl PaperFigure {
    /// The half-width of the band around `value`, in [`Self::unit`]:
    /// `max(tolerance.abs, tolerance.rel × |value|)`.
    pub fn band(&self) -> f64 {
        self.tolerance
            .abs
            .max(self.tolerance.rel * self.value.abs())
    }

    /// Our measurement `ours` (in [`Self::unit`]: per cent as 84.0, not 0.84) against the
    /// paper's number.
    ///
    /// With `band` = [`Self::band`] (edges inclusive):
    /// - [`Relation::Equal`] and [`Relation::Approx`]: [`Verdict::Within`] when
    ///   `|ours − value| ≤ band`;
    /// - [`Relation::AtMost`] (the paper says "less than value"): within when
    ///   `ours ≤ value + band`, however far below;
    /// - [`Relation::AtLeast`] ("more than value"): within when `ours ≥ value − band`.
    ///
    /// Outside, the side decides: [`Verdict::Better`] when ours lies on the paper's
    /// [`Self::better`] side, [`Verdict::Worse`] otherwise. With [`Better::Neither`] any
    /// departure is [`Verdict::Worse`]: failing to reproduce a number that has no good side.
    ///
    /// A non-finite `ours` (NaN: no measurement) is [`Verdict::Worse`], never a pass; a
    /// caller that must tell "not measured" apart checks `ours.is_finite()` first.
    pub fn verdict(&self, ours: f64) -> Verdict {
        if !ours.is_finite() {
            return Verdict::Worse;
        }
        let band = self.band();
        let (low, high) = match self.relation {
            Relation::Equal | Relation::Approx => (self.value - band, self.value + band),
            Relation::AtMost => (f64::NEG_INFINITY, self.value + band),
            Relation::AtLeast => (self.value - band, f64::INFINITY),
        };
        let side = if ours > high {
            Better::Higher
        } else if ours < low {
            Better::Lower
        } else {
            return Verdict::Within;
        };
        if side == self.better {
            Verdict::Better
        } else {
            Verdict::Worse
        }
    }
}

/// Our number against the paper's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Within the paper's figure's tolerance band.
    Within,
    /// Outside it, on the better side.
    Better,
    /// Outside it, on the worse side (or the number has no better side).
    Worse,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::papers::{Flows, Metric, Page, Source, Statistic, Tolerance, Unit};

    fn figure(value: f64, relation: Relation, better: Better, abs: f64, rel: f64) -> PaperFigure {
        PaperFigure {
            preset: None,
            column: "Value".into(),
            row: "test".into(),
            flows: Some(Flows::Cg),
            metric: Metric::ThroughputMbps,
            statistic: Some(Statistic::Mean),
            threshold_ms: None,
            relation,
            value,
            unit: Unit::MbitPerS,
            better,
            tolerance: Tolerance { abs, rel },
            runs: None,
            source: Source {
                table: Some("Table 1".into()),
                figure: None,
                section: "1".into(),
                page: Page::NotInTextCopy,
            },
            quote: None,
            notes: Vec::new(),
        }
    }

    #[test]
    fn higher_is_better_outside_the_band_is_better_above_and_worse_below() {
        // Band 0.5 either side of 2.0 (exact in binary, so the edges are exact).
        let f = figure(2.0, Relation::Equal, Better::Higher, 0.5, 0.0);
        assert_eq!(f.verdict(2.0), Verdict::Within);
        assert_eq!(f.verdict(2.5), Verdict::Within);
        assert_eq!(f.verdict(1.5), Verdict::Within);
        assert_eq!(f.verdict(2.5 + 1e-9), Verdict::Better);
        assert_eq!(f.verdict(1.5 - 1e-9), Verdict::Worse);
    }

    #[test]
    fn lower_is_better_outside_the_band_is_better_below_and_worse_above() {
        // Relative band: 25 % of 8.0 = 2.0, above the 1.0 floor.
        let f = figure(8.0, Relation::Approx, Better::Lower, 1.0, 0.25);
        assert_eq!(f.band(), 2.0);
        assert_eq!(f.verdict(10.0), Verdict::Within);
        assert_eq!(f.verdict(6.0), Verdict::Within);
        assert_eq!(f.verdict(10.0 + 1e-9), Verdict::Worse);
        assert_eq!(f.verdict(6.0 - 1e-9), Verdict::Better);
        // The absolute floor holds around zero.
        let zero = figure(0.0, Relation::Equal, Better::Lower, 0.25, 0.25);
        assert_eq!(zero.verdict(0.25), Verdict::Within);
        assert_eq!(zero.verdict(0.5), Verdict::Worse);
    }

    #[test]
    fn bounds_accept_anything_on_their_side() {
        let at_most = figure(0.5, Relation::AtMost, Better::Lower, 0.25, 0.0);
        assert_eq!(at_most.verdict(0.0), Verdict::Within);
        assert_eq!(at_most.verdict(0.75), Verdict::Within);
        assert_eq!(at_most.verdict(1.0), Verdict::Worse);
        // "Losses higher than 1 %" (lower is better): fewer is better than the paper.
        let at_least = figure(1.0, Relation::AtLeast, Better::Lower, 0.25, 0.0);
        assert_eq!(at_least.verdict(5.0), Verdict::Within);
        assert_eq!(at_least.verdict(0.75), Verdict::Within);
        assert_eq!(at_least.verdict(0.5), Verdict::Better);
    }

    #[test]
    fn no_better_side_makes_any_departure_worse() {
        let f = figure(1.0, Relation::Approx, Better::Neither, 0.0, 0.5);
        assert_eq!(f.verdict(1.5), Verdict::Within);
        assert_eq!(f.verdict(2.0), Verdict::Worse);
        assert_eq!(f.verdict(0.25), Verdict::Worse);
    }

    #[test]
    fn a_missing_measurement_is_worse() {
        for better in [Better::Higher, Better::Lower, Better::Neither] {
            let f = figure(1.0, Relation::AtMost, better, 0.5, 0.0);
            assert_eq!(f.verdict(f64::NAN), Verdict::Worse);
            assert_eq!(f.verdict(f64::INFINITY), Verdict::Worse);
            assert_eq!(f.verdict(f64::NEG_INFINITY), Verdict::Worse);
        }
    }
}
