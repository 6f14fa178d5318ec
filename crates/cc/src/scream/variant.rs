//! The published SCReAM v2s beside cg's: a [`ScreamVariant`] turns a [`ScreamConfig`] into
//! the constant set of the draft or of Ericsson's reference code with every cg addition
//! switched off.
//!
//! cg's default ([`ScreamVariant::Cg`]) is the draft's constants with cg's additions (the L4S
//! pacing cap and mark drain, the large-frame and discard-recovery rules, the idle restore
//! that keeps the rate, the RTT without the receiver's hold, one loss event per RTT, the
//! reference's L4S back-off scaling, the competing-flow drain test, onset scaling and
//! CUBIC-friendly growth). [`ScreamConfig::draft`] and [`ScreamConfig::reference`] are the two
//! constant sets with those additions on. A variant switches them off as well. What a
//! source does not settle keeps cg's choice:
//! - the adaptive reorder window, which RFC 8298 §4.1.2.4 describes;
//! - for the reference, the loss-event rule and the draft's frame-size term, which its code
//!   was not checked for.
//!
//! `docs/scream-variants.md` has the table. A variant keeps the config's rate bounds, ECN and
//! frame period: they are the stream's, not the algorithm's.

use super::CompetingFlows;
use super::config::ScreamConfig;

/// Which SCReAM v2 a config follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ScreamVariant {
    /// cg's: the draft's constants with cg's additions (the default).
    #[default]
    Cg,
    /// draft-johansson-ccwg-rfc8298bis-screamv2 §4 as written.
    Draft,
    /// Ericsson's reference code (`EricssonResearch/scream`, `ScreamV2Tx.cpp`), the
    /// constants TMA24 ran, without cg's additions.
    Reference,
}

impl ScreamVariant {
    /// Every variant, the default first.
    pub const ALL: [ScreamVariant; 3] = [
        ScreamVariant::Cg,
        ScreamVariant::Draft,
        ScreamVariant::Reference,
    ];

    /// The name `--scream-variant` takes.
    pub fn name(self) -> &'static str {
        match self {
            ScreamVariant::Cg => "cg",
            ScreamVariant::Draft => "draft",
            ScreamVariant::Reference => "reference",
        }
    }

    /// `base` as this variant: its rate bounds, ECN and frame period kept, every other
    /// constant this variant's ([`ScreamVariant::Cg`]: cg's defaults).
    pub fn config(self, base: &ScreamConfig) -> ScreamConfig {
        let set = match self {
            ScreamVariant::Cg => ScreamConfig::default(),
            ScreamVariant::Draft => ScreamConfig {
                // The draft reacts to every loss event (§4.2.1's pseudocode), backs off
                // on L4S marks without the reference's rate-limited scaling, and adds the
                // frame-size deviation term (§4.4, FRAME_SIZE_DEV_ALPHA 1/64).
                loss_event_per_rtt: false,
                backoff_rate_limited_scale: 1.0,
                frame_size_dev_alpha: Some(1.0 / 64.0),
                // §4.2.1.4.1 as written: the target adapts whenever the rule says so.
                competing_flows: Some(CompetingFlows {
                    onset_scale: 1.0,
                    cubic_friendly: false,
                    drain_test: None,
                    ..CompetingFlows::default()
                }),
                ..without_cg_additions(ScreamConfig::draft())
            },
            ScreamVariant::Reference => without_cg_additions(ScreamConfig::reference()),
        };
        ScreamConfig {
            min_bitrate: base.min_bitrate,
            max_bitrate: base.max_bitrate,
            start_bitrate: base.start_bitrate,
            ecn: base.ecn,
            frame_period: base.frame_period,
            ..set
        }
    }
}

/// `c` with cg's additions that both constant sets carry switched off.
fn without_cg_additions(c: ScreamConfig) -> ScreamConfig {
    ScreamConfig {
        rtt_without_feedback_hold: false,
        idle_restore_keeps_rate: false,
        l4s_pacing_cap: None,
        l4s_pacing_hold: None,
        l4s_capacity_probe: None,
        l4s_mark_drain: None,
        large_frame_factor: None,
        discard_recovery_max_delay: None,
        ..c
    }
}

impl std::str::FromStr for ScreamVariant {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim().to_ascii_lowercase();
        if s == "rfc8298" {
            return Err(
                "`rfc8298`: SCReAM v1 is not implemented (cg runs SCReAM v2); expected cg, \
                 draft or reference"
                    .into(),
            );
        }
        ScreamVariant::ALL
            .into_iter()
            .find(|v| v.name() == s)
            .ok_or_else(|| format!("`{s}`: expected cg, draft or reference"))
    }
}

impl std::fmt::Display for ScreamVariant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use cg_types::{Bitrate, Ecn};

    use super::*;

    #[test]
    fn a_variant_keeps_the_stream_and_switches_cg_s_additions_off() {
        let base = ScreamConfig {
            max_bitrate: Bitrate::mbps(30),
            ecn: Ecn::Ect1,
            frame_period: Duration::from_millis(33),
            ..ScreamConfig::default()
        };
        assert_eq!(ScreamVariant::Cg.config(&base), base);
        for v in [ScreamVariant::Draft, ScreamVariant::Reference] {
            let c = v.config(&base);
            assert_eq!(
                (c.max_bitrate, c.ecn, c.frame_period),
                (base.max_bitrate, base.ecn, base.frame_period),
                "{v}"
            );
            assert!(
                c.l4s_pacing_cap.is_none()
                    && c.l4s_mark_drain.is_none()
                    && c.l4s_capacity_probe.is_none(),
                "{v}"
            );
            assert!(c.large_frame_factor.is_none() && c.discard_recovery_max_delay.is_none());
            assert!(!c.idle_restore_keeps_rate && !c.rtt_without_feedback_hold);
            c.validate().unwrap_or_else(|e| panic!("{v}: {e}"));
            assert_eq!(v.name().parse(), Ok(v));
        }
        let d = ScreamVariant::Draft.config(&base);
        assert!(!d.loss_event_per_rtt && d.backoff_rate_limited_scale == 1.0);
        assert_eq!(d.frame_size_dev_alpha, Some(1.0 / 64.0));
        let cf = d.competing_flows.expect("the draft's competing-flow rule");
        assert!(cf.onset_scale == 1.0 && !cf.cubic_friendly && cf.drain_test.is_none());
        let r = ScreamVariant::Reference.config(&base);
        assert_eq!(
            (r.multiplicative_increase, r.rate_margin, r.competing_flows),
            (0.05, 1.1, None)
        );
        let e = "rfc8298".parse::<ScreamVariant>().unwrap_err();
        assert!(e.contains("not implemented"), "{e}");
    }
}
