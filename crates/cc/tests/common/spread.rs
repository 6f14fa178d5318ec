//! Judging a scenario on the spread of its seeds.
//!
//! A scenario runs every seed of [`seeds`] and records each figure it is judged on with
//! [`Spread::check`], a two-sided range. [`Spread::judge`] then prints, per figure, the
//! spread over the seeds beside its range and the margin left on each side, and fails once
//! with every seed that missed. A NaN (a figure measured from nothing) misses every range.
//!
//! Rule for the ranges: each is set from the spread over many more seeds than the suite runs
//! (the suite's and others: `SEEDS=17-64`), with a margin beyond the worst of them, so a seed
//! the suite does not use lands inside it too. A range touching the spread is a coin toss.

use std::fmt::Display;
use std::ops::RangeInclusive;

/// Seeds the suite runs by default (issue #41: at least sixteen).
pub const SEEDS: RangeInclusive<u64> = 1..=16;

/// The seeds to run: `SEED=n` names one (to look at one run by hand), `SEEDS=a-b` a range (to
/// check the ranges on seeds the suite does not use), otherwise [`SEEDS`].
pub fn seeds() -> Vec<u64> {
    if let Ok(v) = std::env::var("SEED") {
        return vec![v.parse().expect("SEED=n")];
    }
    if let Ok(v) = std::env::var("SEEDS") {
        let (a, b) = v.split_once('-').expect("SEEDS=a-b");
        let (a, b): (u64, u64) = (a.parse().expect("SEEDS=a-b"), b.parse().expect("SEEDS=a-b"));
        return (a..=b).collect();
    }
    SEEDS.collect()
}

/// One judged figure over the seeds.
struct Figure {
    name: String,
    within: RangeInclusive<f64>,
    values: Vec<f64>,
}

/// The judged figures of one scenario, seed by seed.
pub struct Spread {
    scenario: String,
    figures: Vec<Figure>,
    failures: Vec<String>,
}

impl Spread {
    pub fn new(scenario: impl Into<String>) -> Self {
        Spread {
            scenario: scenario.into(),
            figures: Vec::new(),
            failures: Vec::new(),
        }
    }

    /// Records `value` of figure `name` for `seed`: a miss if it lies outside `within` or is
    /// NaN. A figure keeps the range it was first given.
    pub fn check(
        &mut self,
        seed: u64,
        name: impl Into<String>,
        value: f64,
        within: RangeInclusive<f64>,
    ) {
        let name = name.into();
        let i = match self.figures.iter().position(|f| f.name == name) {
            Some(i) => i,
            None => {
                self.figures.push(Figure {
                    name: name.clone(),
                    within,
                    values: Vec::new(),
                });
                self.figures.len() - 1
            }
        };
        let figure = &mut self.figures[i];
        figure.values.push(value);
        if !figure.within.contains(&value) {
            self.failures.push(format!(
                "seed {seed}: {name} {value:.4} outside [{}, {}]",
                figure.within.start(),
                figure.within.end()
            ));
        }
    }

    /// Records `value` of figure `name` taken over the whole set of seeds (a mean, a median
    /// over them): a miss if it lies outside `within` or is NaN.
    pub fn check_set(&mut self, name: impl Into<String>, value: f64, within: RangeInclusive<f64>) {
        let name = name.into();
        if !within.contains(&value) {
            self.failures.push(format!(
                "over the seeds: {name} {value:.4} outside [{}, {}]",
                within.start(),
                within.end()
            ));
        }
        eprintln!(
            "{}: {name} over the seeds: {value:.4}; range [{}, {}]",
            self.scenario,
            within.start(),
            within.end()
        );
    }

    /// A condition that is no figure (a discard happened, a rate was reached): the miss
    /// `what` for `seed` unless `ok`.
    pub fn require(&mut self, seed: u64, ok: bool, what: impl Display) {
        if !ok {
            self.failures.push(format!("seed {seed}: {what}"));
        }
    }

    /// Prints every figure's spread beside its range, then fails with every miss.
    pub fn judge(self) {
        for f in &self.figures {
            eprintln!("{}: {}", self.scenario, summary(f));
        }
        assert!(
            self.failures.is_empty(),
            "{}:\n{}",
            self.scenario,
            self.failures.join("\n")
        );
    }
}

/// `name over n seeds: min … median … max, range [lo, hi], margin below … above …` (the
/// margins are what is left between the spread and the range; NaN values are counted apart).
fn summary(f: &Figure) -> String {
    let mut v: Vec<f64> = f.values.iter().copied().filter(|x| !x.is_nan()).collect();
    let nan = f.values.len() - v.len();
    v.sort_by(f64::total_cmp);
    let (lo, hi) = (*f.within.start(), *f.within.end());
    let nan_note = if nan > 0 {
        format!(", {nan} NaN")
    } else {
        String::new()
    };
    match (v.first(), v.last()) {
        (Some(&min), Some(&max)) => format!(
            "{} over {} seeds: min {min:.4} median {:.4} max {max:.4}{nan_note}; range [{lo}, \
             {hi}], margin below {:.4}, above {:.4}",
            f.name,
            f.values.len(),
            v[v.len() / 2],
            min - lo,
            hi - max,
        ),
        _ => format!(
            "{} over {} seeds: no value{nan_note}; range [{lo}, {hi}]",
            f.name,
            f.values.len()
        ),
    }
}
