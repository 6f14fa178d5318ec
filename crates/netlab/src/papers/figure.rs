//! The papers' numbers as data: a [`Paper`] and its [`PaperFigure`]s: what each measures,
//! its value, unit, better side, tolerance and source.

use serde::Deserialize;

/// One paper and its figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Paper {
    /// Short id, the file's stem (`mmsys16`).
    pub id: String,
    /// Full citation.
    pub citation: String,
    /// The plain-text copy the figures were transcribed from.
    pub text_copy: String,
    /// Provenance and measurement notes that hold for the whole paper.
    pub note: Option<String>,
    /// Its numbers, in file order.
    pub figures: Vec<PaperFigure>,
}

/// One number published in a paper.
#[derive(Debug, Clone, PartialEq)]
pub struct PaperFigure {
    /// The preset (`crates/netlab/scenarios/<name>.toml`) that runs this experiment; `None` when
    /// netlab has none.
    pub preset: Option<String>,
    /// Column label as printed (or the experiment, for numbers stated in the text).
    pub column: String,
    /// Row label as printed.
    pub row: String,
    /// Which flows of the experiment the number is about; `None` for a parameter.
    pub flows: Option<Flows>,
    /// What is measured.
    pub metric: Metric,
    /// Mean, percentile…: set for [`Metric::ThroughputMbps`], [`Metric::QueuingDelayMs`] and
    /// [`Metric::RttMs`].
    pub statistic: Option<Statistic>,
    /// The delay threshold of a [`Metric::QueuingDelayExceedance`], ms.
    pub threshold_ms: Option<f64>,
    /// Whether the paper gives a value, an approximation or a bound.
    pub relation: Relation,
    /// The paper's number, in [`Self::unit`], as printed.
    pub value: f64,
    /// The unit of `value` (and of the `ours` given to [`Self::verdict`]).
    pub unit: Unit,
    /// Which way is better.
    pub better: Better,
    /// The band within which ours counts as the paper's (see [`PaperFigure::verdict`]).
    pub tolerance: Tolerance,
    /// Runs the paper averaged over, when it says.
    pub runs: Option<u32>,
    /// Where it is printed.
    pub source: Source,
    /// The paper's words, for numbers stated in the text.
    pub quote: Option<String>,
    /// Doubts and readings: the group's note, then the entry's.
    pub notes: Vec<String>,
}

/// What a number measures. Each metric takes one [`Unit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Received rate of the flows, Mbit/s (the papers' "throughput", "bitrate", "goodput").
    ThroughputMbps,
    /// Received rate of the flows over the bottleneck capacity, % ("channel utilization").
    Utilisation,
    /// Bytes (or packets) lost over bytes sent, %.
    LossRatio,
    /// Queuing delay, ms, summarised by a [`Statistic`].
    QueuingDelayMs,
    /// Round-trip time the media sender measured (from RTCP), ms, summarised by a
    /// [`Statistic`]: what MMSys16 Fig. 10 plots, propagation delay included.
    RttMs,
    /// Share of packets whose queuing delay exceeds `threshold_ms`, %.
    QueuingDelayExceedance,
    /// Jain's fairness index, dimensionless.
    Jain,
    /// A gain of GCC's adaptive threshold (MMSys16 eq. 18, ku or kd), dimensionless.
    ThresholdGain,
}

impl Metric {
    /// As written in the files.
    pub fn as_str(self) -> &'static str {
        match self {
            Metric::ThroughputMbps => "throughput_mbps",
            Metric::Utilisation => "utilisation",
            Metric::LossRatio => "loss_ratio",
            Metric::QueuingDelayMs => "queuing_delay_ms",
            Metric::RttMs => "rtt_ms",
            Metric::QueuingDelayExceedance => "queuing_delay_exceedance",
            Metric::Jain => "jain",
            Metric::ThresholdGain => "threshold_gain",
        }
    }

    /// The unit values of this metric are written in.
    pub fn unit(self) -> Unit {
        match self {
            Metric::ThroughputMbps => Unit::MbitPerS,
            Metric::QueuingDelayMs | Metric::RttMs => Unit::Ms,
            Metric::Utilisation | Metric::LossRatio | Metric::QueuingDelayExceedance => {
                Unit::Percent
            }
            Metric::Jain | Metric::ThresholdGain => Unit::Dimensionless,
        }
    }

    /// Whether a [`Statistic`] is needed (and allowed).
    pub fn has_statistic(self) -> bool {
        matches!(
            self,
            Metric::ThroughputMbps | Metric::QueuingDelayMs | Metric::RttMs
        )
    }

    /// The default tolerance; an entry's `tolerance` overrides the parts it gives.
    ///
    /// | metric | abs | rel | why |
    /// |---|---|---|---|
    /// | `throughput_mbps` | 0 | 10 % | narrower than one congestion back-off (GCC's α = 0.85, MMSys16 eq. 3, moves the rate 15 %), wider than an encoder's wander about its target |
    /// | `utilisation` | 5 points | – | MMSys16 prints whole per cent of ten-run means; GCC takes ~25 s to reach a new capacity (§6.1), several points of a 50 s step by itself |
    /// | `loss_ratio` | 0.1 point | 25 % | losses are few and bursty and printed to one or two figures (0.7 %, 1.2 %); 0.1 % of a 200 s run at 1 Mbit/s is ~20 packets, one drop-tail overflow |
    /// | `queuing_delay_ms`, mean or percentile | 2 ms | 20 % | percentiles of RTCP-sampled RTTs rest on few samples in the tail; 2 ms is ten 1200-byte packets at 50 Mbit/s. At 1–3 Mbit/s one packet is 3–10 ms: those entries raise the floor to 10 ms in the data |
    /// | `queuing_delay_ms`, stddev | 2 ms | 30 % | a single run's second moment is noisier than its mean |
    /// | `rtt_ms` | as `queuing_delay_ms` | | the same samples with the propagation delay added |
    /// | `queuing_delay_exceedance` | 1 point | 10 % | shares of a single run (TMA24); 1 point keeps "0 %" from failing on a few late packets |
    /// | `jain` | 0.05 | – | printed to two decimals; two flows splitting 61/39 instead of 50/50 lose 0.046 |
    /// | `threshold_gain` | – | 5 % | one cell of MMSys16 Fig. 8's grid (200 log steps over four decades) is 10^(4/200) = 4.7 % |
    pub fn default_tolerance(self, statistic: Option<Statistic>) -> Tolerance {
        let (abs, rel) = match self {
            Metric::ThroughputMbps => (0.0, 0.10),
            Metric::Utilisation => (5.0, 0.0),
            Metric::LossRatio => (0.1, 0.25),
            Metric::QueuingDelayMs | Metric::RttMs if statistic == Some(Statistic::Stddev) => {
                (2.0, 0.30)
            }
            Metric::QueuingDelayMs | Metric::RttMs => (2.0, 0.20),
            Metric::QueuingDelayExceedance => (1.0, 0.10),
            Metric::Jain => (0.05, 0.0),
            Metric::ThresholdGain => (0.0, 0.05),
        };
        Tolerance { abs, rel }
    }
}

/// How a set of samples is summarised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Statistic {
    /// Mean.
    Mean,
    /// Standard deviation.
    Stddev,
    /// 5th percentile.
    P5,
    /// 25th percentile (first quartile).
    P25,
    /// Median.
    P50,
    /// 75th percentile (third quartile).
    P75,
    /// 95th percentile.
    P95,
}

/// The unit a value is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Unit {
    /// `"Mbit/s"`.
    #[serde(rename = "Mbit/s")]
    MbitPerS,
    /// `"ms"`.
    #[serde(rename = "ms")]
    Ms,
    /// `"%"`: 84 % is written 84.0.
    #[serde(rename = "%")]
    Percent,
    /// `"1"`: a pure number.
    #[serde(rename = "1")]
    Dimensionless,
}

impl Unit {
    /// As written in the files.
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::MbitPerS => "Mbit/s",
            Unit::Ms => "ms",
            Unit::Percent => "%",
            Unit::Dimensionless => "1",
        }
    }
}

/// Which way is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    /// More is better (utilisation, a media flow's rate, Jain's index).
    Higher,
    /// Less is better (delay, loss).
    Lower,
    /// Neither (a fair share, a competitor's rate, a parameter): written `"none"`.
    #[serde(rename = "none")]
    Neither,
}

/// Which flows of the experiment a number is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Flows {
    /// The media flows under test (`kind = "cg"`: GCC or SCReAM), together.
    Cg,
    /// The competing TCP flows, together.
    Tcp,
    /// Every flow on the bottleneck.
    All,
}

/// What the paper's number is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Relation {
    /// A value (every table cell).
    #[default]
    Equal,
    /// An approximate value: "around", "roughly".
    Approx,
    /// An upper bound: "less than", "below".
    AtMost,
    /// A lower bound: "higher than", "above".
    AtLeast,
}

/// A tolerance band: `max(abs, rel × |value|)` either side (see [`PaperFigure::verdict`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    /// Absolute floor, in the entry's unit.
    pub abs: f64,
    /// Relative part, a fraction of the paper's value.
    pub rel: f64,
}

/// Where a number is printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// `Table 1`, `Table II`.
    pub table: Option<String>,
    /// `Fig. 8`, `Figs. 6-7`.
    pub figure: Option<String>,
    /// Section number (`6.1`, `IV`).
    pub section: String,
    /// The page.
    pub page: Page,
}

/// What a `page` says when the plain-text copy has no page markers.
pub const PAGE_NOT_IN_TEXT_COPY: &str = "page not in the text copy";

/// A page reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Page {
    /// A page number of the published paper.
    Number(u32),
    /// The plain-text copy has no page markers (written [`PAGE_NOT_IN_TEXT_COPY`]).
    NotInTextCopy,
}
