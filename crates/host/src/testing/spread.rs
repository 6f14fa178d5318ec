//! Judging a scenario on the spread of many runs of it: the seeds of a simulated scenario,
//! the repeated runs of an end-to-end one.
//!
//! A scenario runs every seed (or run) and records each figure it is judged on with
//! [`Spread::check`], a two-sided range. [`Spread::judge`] then prints, per figure, the
//! spread beside its range and the margin left on each side, and fails once with every seed
//! or run that missed. A NaN (a figure measured from nothing) misses every range.
//!
//! Rule for the ranges: each is set from the spread over many more seeds or runs than the
//! suite makes, with a margin beyond the worst of them, so one the suite does not make lands
//! inside it too. A range touching the spread is a coin toss.

use std::fmt::Display;
use std::ops::RangeInclusive;

/// The seeds or runs to make: the environment variable `one` names one (`SEED=7`, to look at
/// one by hand), `many` a range or a count (`SEEDS=17-64`, `RUNS=5` for 1–5: to check the
/// ranges beyond what the suite makes), otherwise `default`.
///
/// # Panics
/// If a variable is set but does not read as a number, a range `a-b` with a ≤ b or a count:
/// the caller asked for something the suite cannot run.
pub fn repetitions(one: &str, many: &str, default: RangeInclusive<u64>) -> Vec<u64> {
    let number = |var: &str, v: &str| -> u64 {
        v.trim()
            .parse()
            .unwrap_or_else(|_| panic!("{var}={v}: not a number"))
    };
    if let Ok(v) = std::env::var(one) {
        return vec![number(one, &v)];
    }
    if let Ok(v) = std::env::var(many) {
        let (a, b) = match v.split_once('-') {
            Some((a, b)) => (number(many, a), number(many, b)),
            None => (1, number(many, &v)),
        };
        assert!(a <= b && b > 0, "{many}={v}: an empty range");
        return (a..=b).collect();
    }
    default.collect()
}

/// One judged figure over the seeds or runs.
struct Figure {
    name: String,
    within: RangeInclusive<f64>,
    values: Vec<f64>,
}

/// A point in a [`Spread`]'s record ([`Spread::mark`]).
#[derive(Debug, Clone)]
pub struct Mark {
    values: Vec<usize>,
    failures: usize,
}

impl Mark {
    /// The misses recorded at the mark.
    pub fn misses(&self) -> usize {
        self.failures
    }
}

/// The judged figures of one scenario, seed by seed or run by run.
pub struct Spread {
    scenario: String,
    /// What one of the repetitions is: `seed` or `run`.
    unit: &'static str,
    figures: Vec<Figure>,
    failures: Vec<String>,
}

impl Spread {
    /// The figures of a simulated scenario over its seeds.
    pub fn new(scenario: impl Into<String>) -> Self {
        Spread::of("seed", scenario)
    }

    /// The figures of an end-to-end scenario over its runs.
    pub fn over_runs(scenario: impl Into<String>) -> Self {
        Spread::of("run", scenario)
    }

    fn of(unit: &'static str, scenario: impl Into<String>) -> Self {
        Spread {
            scenario: scenario.into(),
            unit,
            figures: Vec::new(),
            failures: Vec::new(),
        }
    }

    /// Records `value` of figure `name` for `seed` (or run): a miss if it lies outside
    /// `within` or is NaN.
    ///
    /// # Panics
    /// If `name` was recorded before with another range: one figure has one range.
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
                    within: within.clone(),
                    values: Vec::new(),
                });
                self.figures.len() - 1
            }
        };
        let figure = &mut self.figures[i];
        assert!(
            figure.within == within,
            "{}: {name} judged against two ranges",
            self.scenario
        );
        figure.values.push(value);
        if !figure.within.contains(&value) {
            self.failures.push(format!(
                "{} {seed}: {name} {value:.4} outside [{}, {}]",
                self.unit,
                figure.within.start(),
                figure.within.end()
            ));
        }
    }

    /// Records `value` of figure `name` taken over the whole set of seeds or runs (a mean, a
    /// median over them): a miss if it lies outside `within` or is NaN.
    pub fn check_set(&mut self, name: impl Into<String>, value: f64, within: RangeInclusive<f64>) {
        let name = name.into();
        if !within.contains(&value) {
            self.failures.push(format!(
                "over the {}s: {name} {value:.4} outside [{}, {}]",
                self.unit,
                within.start(),
                within.end()
            ));
        }
        eprintln!(
            "{}: {name} over the {}s: {value:.4}; range [{}, {}]",
            self.scenario,
            self.unit,
            within.start(),
            within.end()
        );
    }

    /// A condition that is no figure (a discard happened, a rate was reached): the miss
    /// `what` for `seed` (or run) unless `ok`.
    pub fn require(&mut self, seed: u64, ok: bool, what: impl Display) {
        if !ok {
            self.failures.push(format!("{} {seed}: {what}", self.unit));
        }
    }

    /// How many misses are recorded so far.
    pub fn misses(&self) -> usize {
        self.failures.len()
    }

    /// What is recorded so far, to [`roll back`](Self::roll_back) to.
    pub fn mark(&self) -> Mark {
        Mark {
            values: self.figures.iter().map(|f| f.values.len()).collect(),
            failures: self.failures.len(),
        }
    }

    /// Forgets everything recorded since `mark` (a run that is not judged); returns the
    /// misses forgotten.
    pub fn roll_back(&mut self, mark: Mark) -> Vec<String> {
        // Figures first recorded after the mark go with it.
        self.figures.truncate(mark.values.len());
        for (f, &n) in self.figures.iter_mut().zip(&mark.values) {
            f.values.truncate(n);
        }
        self.failures
            .split_off(mark.failures.min(self.failures.len()))
    }

    /// Prints every figure's spread beside its range, then fails with every miss.
    pub fn judge(self) {
        for f in &self.figures {
            eprintln!("{}: {}", self.scenario, summary(f, self.unit));
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
fn summary(f: &Figure, unit: &str) -> String {
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
            "{} over {} {unit}s: min {min:.4} median {:.4} max {max:.4}{nan_note}; range [{lo}, \
             {hi}], margin below {:.4}, above {:.4}",
            f.name,
            f.values.len(),
            v[v.len() / 2],
            min - lo,
            hi - max,
        ),
        _ => format!(
            "{} over {} {unit}s: no value{nan_note}; range [{lo}, {hi}]",
            f.name,
            f.values.len()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_outside_its_range_or_nan_misses_and_one_inside_does_not() {
        let mut s = Spread::over_runs("case");
        s.check(1, "u", 0.9, 0.8..=1.0);
        s.check(2, "u", 0.8, 0.8..=1.0);
        assert_eq!(s.misses(), 0, "both ends belong to the range");
        s.check(3, "u", 1.01, 0.8..=1.0);
        s.check(4, "u", f64::NAN, 0.8..=1.0);
        s.check_set("mean u", f64::NAN, 0.0..=1.0);
        s.require(5, false, "no statistics");
        s.require(6, true, "not a miss");
        assert_eq!(s.misses(), 4);
        assert!(s.failures[0].starts_with("run 3: u 1.0100 outside [0.8, 1]"));
        assert!(s.failures[3].starts_with("run 5: no statistics"));
    }

    #[test]
    #[should_panic(expected = "judged against two ranges")]
    fn one_figure_has_one_range() {
        let mut s = Spread::new("case");
        s.check(1, "u", 0.9, 0.8..=1.0);
        s.check(2, "u", 0.9, 0.7..=1.0);
    }

    #[test]
    fn a_run_rolled_back_leaves_no_figure_and_no_miss() {
        let mut s = Spread::over_runs("case");
        s.check(1, "u", 0.9, 0.8..=1.0);
        let mark = s.mark();
        s.check(2, "u", 0.5, 0.8..=1.0);
        s.check(2, "q", 9.0, 0.0..=5.0);
        s.require(2, false, "no statistics");
        assert_eq!(s.misses(), 3);
        let forgotten = s.roll_back(mark);
        assert_eq!(forgotten.len(), 3, "{forgotten:?}");
        assert_eq!(s.misses(), 0);
        assert_eq!(s.figures.len(), 1);
        assert_eq!(s.figures[0].values, [0.9]);
        // Its second attempt is recorded as the run.
        s.check(2, "q", 1.0, 0.0..=5.0);
        s.judge();
    }

    #[test]
    #[should_panic(expected = "seed 2: u 0.5000 outside")]
    fn the_judge_fails_with_every_miss() {
        let mut s = Spread::new("case");
        s.check(1, "u", 0.9, 0.8..=1.0);
        s.check(2, "u", 0.5, 0.8..=1.0);
        s.judge();
    }

    #[test]
    fn the_summary_gives_the_spread_and_the_margins() {
        let f = Figure {
            name: "u".into(),
            within: 0.8..=1.0,
            values: vec![0.9, f64::NAN, 0.85, 0.95],
        };
        assert_eq!(
            summary(&f, "run"),
            "u over 4 runs: min 0.8500 median 0.9000 max 0.9500, 1 NaN; range [0.8, 1], \
             margin below 0.0500, above 0.0500"
        );
    }

    #[test]
    fn repetitions_read_one_a_range_or_a_count() {
        // Variables no other test sets.
        let (one, many) = ("CG_TEST_REP_ONE", "CG_TEST_REP_MANY");
        assert_eq!(repetitions(one, many, 1..=2), vec![1, 2]);
        // SAFETY: only this test reads or writes these two variables.
        unsafe { std::env::set_var(many, "3") };
        assert_eq!(repetitions(one, many, 1..=2), vec![1, 2, 3]);
        unsafe { std::env::set_var(many, "5-7") };
        assert_eq!(repetitions(one, many, 1..=2), vec![5, 6, 7]);
        unsafe { std::env::set_var(one, "9") };
        assert_eq!(repetitions(one, many, 1..=2), vec![9], "one wins");
        unsafe {
            std::env::remove_var(one);
            std::env::remove_var(many);
        }
    }
}
