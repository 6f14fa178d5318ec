//! The published GCCs beside cg's: a [`GccVariant`] turns a [`GccConfig`] into the algorithm
//! one paper gives, with every libwebrtc and cg addition switched off.
//!
//! cg's default ([`GccVariant::Cg`]) is MMSys16's design with about a dozen additions, each a
//! documented field of [`GccConfig`]. A researcher comparing with a paper needs the paper's
//! algorithm itself, so each variant sets every field to what the paper says, or, where the
//! paper says nothing, to the mechanism's absence; what it cannot leave out (a constant the
//! paper does not give) keeps cg's value. The table of differences is in `docs/gcc-variants.md`;
//! [`GccVariant::differences`] lists them from the code, and a unit test checks that the
//! table names each.
//!
//! A variant keeps the config's mode (REMB or send-side) and rate bounds: the papers describe
//! REMB, and a send-side run of a variant is the same algorithm at the sender.

use std::time::Duration;

use cg_types::Bitrate;

use super::config::{GccConfig, GroupSendTime, LossModel, ThresholdModel};
use super::rate_control::IncreaseMode;

/// Which published GCC a config follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GccVariant {
    /// cg's: MMSys16's design with libwebrtc's and cg's additions (the default).
    #[default]
    Cg,
    /// Carlucci, De Cicco, Holmer, Mascolo, "Analysis and Design of the Google Congestion
    /// Control for Web Real-time Communication (WebRTC)", MMSys 2016, §3–4: the scalar Kalman
    /// filter, the adaptive threshold, eq. (3) with `η` only and `Ar ≤ 1.5 R`, eq. (5) and
    /// `A = min(Ar, As)`, the pacer at 1.5 `A`; no probing.
    Mmsys16,
    /// De Cicco, Carlucci, Mascolo, "Understanding the Dynamic Behaviour of the Google
    /// Congestion Control for RTCWeb", Packet Video 2013, §III: the two-state Kalman filter
    /// (eq. (4)), the static threshold `γ̄` = 25/60 ms halved near congestion, eq. (1)'s
    /// TFRC-floored loss controller and eq. (2)'s `As ≤ Ar`; otherwise as MMSys16.
    #[serde(rename = "2013")]
    Gcc2013,
}

impl GccVariant {
    /// Every variant, the default first.
    pub const ALL: [GccVariant; 3] = [GccVariant::Cg, GccVariant::Mmsys16, GccVariant::Gcc2013];

    /// The name `--gcc-variant` takes.
    pub fn name(self) -> &'static str {
        match self {
            GccVariant::Cg => "cg",
            GccVariant::Mmsys16 => "mmsys16",
            GccVariant::Gcc2013 => "2013",
        }
    }

    /// `base` as this variant: its mode and rate bounds kept, every other constant this
    /// variant's ([`GccVariant::Cg`]: cg's defaults).
    pub fn config(self, base: &GccConfig) -> GccConfig {
        let kept = GccConfig {
            mode: base.mode,
            start_bitrate: base.start_bitrate,
            min_bitrate: base.min_bitrate,
            max_bitrate: base.max_bitrate,
            ..GccConfig::default()
        };
        let mmsys16 = || GccConfig {
            // §3.3, eq. (4): "Ti is the time at which the first packet of the i-th video
            // frame has been sent".
            group_send_time: GroupSendTime::First,
            // No limit on a `dm` (a cg guard against link outages).
            max_delay_jump: Duration::MAX,
            // Eq. (16) as written: every residual, unclamped, in every state, and no floor
            // on σ²n (validation wants it above zero).
            kalman_residual_clamp: None,
            kalman_noise_only_when_normal: false,
            kalman_noise_var_min: f64::MIN_POSITIVE,
            // Eq. (17)–(18) as written: no clamp on γ, no skipped update.
            threshold: match ThresholdModel::adaptive() {
                ThresholdModel::Adaptive {
                    k_up,
                    k_down,
                    initial_ms,
                    ..
                } => ThresholdModel::Adaptive {
                    k_up,
                    k_down,
                    initial_ms,
                    min_ms: 0.0,
                    max_ms: f64::INFINITY,
                    max_adapt_offset_ms: None,
                },
                other => other,
            },
            // Eq. (3): `η·Ar` in Increase, with `Ar ≤ 1.5 R` applied on every update.
            increase: IncreaseMode::Multiplicative,
            max_rate_ratio_cuts: true,
            // The first REMB carries `Ar(0)`; the papers say nothing of starting it from R.
            remb_start_from_receive_rate: false,
            remb_capacity_reset_by_receive_rate: false,
            // §3.5: `A = min(Ar, As)`, eq. (5) as written.
            cap_as_by_ar: false,
            loss_additive_floor: Bitrate::ZERO,
            // §3.5: the pacer drains at `f·A`, f = 1.5, packet by packet.
            pacing_factor: 1.5,
            pacing_factor_unbounded: 1.5,
            pacing_burst: Duration::ZERO,
            pacing_link_capacity_factor: None,
            standing_queue_pacing: None,
            standing_queue_decrease: None,
            standing_queue_competing: None,
            // No probing of any kind.
            probing: false,
            capacity_probing: false,
            stall_probe_after: None,
            ..kept.clone()
        };
        match self {
            GccVariant::Cg => kept,
            GccVariant::Mmsys16 => mmsys16(),
            GccVariant::Gcc2013 => GccConfig {
                // Eq. (4): the model `d = ΔL/C + m + n`, state `[1/C, m]`.
                filter: super::config::ArrivalFilterModel::TwoState,
                // §III-B.3: γ̄ = 25/60 ms, halved near congestion.
                threshold: ThresholdModel::static_2013(),
                // Eq. (1) and (2).
                loss: LossModel::TfrcFloor,
                cap_as_by_ar: true,
                ..mmsys16()
            },
        }
    }

    /// The fields in which this variant differs from cg's default, by name, each with its
    /// value here and in cg's default (`Debug` forms), in [`GccConfig`]'s order.
    pub fn differences(self) -> Vec<(&'static str, String, String)> {
        let (v, cg) = (self.config(&GccConfig::default()), GccConfig::default());
        let mut out = Vec::new();
        // Every field of GccConfig, once: the pattern fails to build when a field is added
        // and not listed here.
        macro_rules! compare_all {
            ($($f:ident),* $(,)?) => {
                let GccConfig { $($f: _),* } = &v;
                $(if v.$f != cg.$f {
                    out.push((stringify!($f), format!("{:?}", v.$f), format!("{:?}", cg.$f)));
                })*
            };
        }
        compare_all!(
            mode,
            start_bitrate,
            min_bitrate,
            max_bitrate,
            grouping,
            group_send_time,
            arrival_burst,
            max_group_gap,
            max_delay_jump,
            filter,
            kalman_q,
            kalman_beta,
            kalman_p0,
            kalman_m0,
            kalman2_q_inv_capacity,
            kalman2_p0_inv_capacity,
            kalman2_inv_capacity0,
            kalman_noise_var0,
            kalman_residual_clamp,
            kalman_noise_only_when_normal,
            kalman_noise_var_min,
            threshold,
            overuse_time,
            eta,
            increase_period,
            increase,
            far_eta,
            default_rtt,
            additive_measured_rtt,
            additive_packet,
            alpha,
            receive_rate_window,
            max_rate_ratio,
            max_rate_ratio_cuts,
            remb_interval,
            remb_drop_ratio,
            remb_start_from_receive_rate,
            remb_capacity_reset_by_receive_rate,
            loss,
            loss_high,
            loss_low,
            loss_increase,
            cap_as_by_ar,
            loss_additive_floor,
            loss_interval,
            pacing_factor,
            pacing_factor_unbounded,
            pacing_burst,
            push_back_memory,
            standing_queue_pacing,
            standing_queue_decrease,
            pacing_link_capacity_factor,
            standing_queue_window,
            standing_queue_competing,
            standing_queue_retry,
            probing,
            capacity_probing,
            further_probe_duration,
            stall_probe_after,
        );
        out
    }
}

impl std::str::FromStr for GccVariant {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim().to_ascii_lowercase();
        GccVariant::ALL
            .into_iter()
            .find(|v| v.name() == s)
            .ok_or_else(|| format!("`{s}`: expected cg, mmsys16 or 2013"))
    }
}

impl std::fmt::Display for GccVariant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gcc::GccMode;

    #[test]
    fn a_variant_keeps_the_mode_and_the_rates_and_validates() {
        let base = GccConfig {
            start_bitrate: Bitrate::kbps(500),
            max_bitrate: Bitrate::mbps(30),
            ..GccConfig::send_side()
        };
        for v in GccVariant::ALL {
            let c = v.config(&base);
            assert_eq!(
                (c.mode, c.start_bitrate, c.min_bitrate, c.max_bitrate),
                (
                    GccMode::SendSideTwcc,
                    Bitrate::kbps(500),
                    base.min_bitrate,
                    Bitrate::mbps(30)
                ),
                "{v}"
            );
            c.validate().unwrap_or_else(|e| panic!("{v}: {e}"));
            assert_eq!(v.name().parse(), Ok(v));
        }
        assert_eq!(GccVariant::Cg.config(&base), base);
        assert!("rfc8298".parse::<GccVariant>().is_err());
    }

    /// Every libwebrtc and cg addition is off in the papers' variants, and the 2013 variant
    /// differs from MMSys16's in exactly the paper's four points.
    #[test]
    fn the_papers_variants_switch_every_addition_off() {
        for v in [GccVariant::Mmsys16, GccVariant::Gcc2013] {
            let c = v.config(&GccConfig::default());
            assert!(!c.probing && !c.capacity_probing && c.stall_probe_after.is_none());
            assert!(c.standing_queue_decrease.is_none() && c.standing_queue_pacing.is_none());
            assert!(c.pacing_link_capacity_factor.is_none() && c.pacing_burst.is_zero());
            assert!(c.pacing_factor_unbounded <= c.pacing_factor && c.pacing_factor == 1.5);
            assert!(c.kalman_residual_clamp.is_none() && !c.kalman_noise_only_when_normal);
            assert_eq!(c.increase, IncreaseMode::Multiplicative);
            assert!(c.max_rate_ratio_cuts && !c.remb_start_from_receive_rate);
            assert_eq!(c.arrival_burst, None);
            assert_eq!(c.loss_additive_floor, Bitrate::ZERO);
            assert_eq!(c.group_send_time, GroupSendTime::First);
            assert_eq!((c.eta, c.alpha, c.max_rate_ratio), (1.05, 0.85, 1.5));
        }
        let names = |v: GccVariant| -> Vec<&str> {
            v.differences().into_iter().map(|(f, _, _)| f).collect()
        };
        let (m, y) = (names(GccVariant::Mmsys16), names(GccVariant::Gcc2013));
        assert!(names(GccVariant::Cg).is_empty());
        // cap_as_by_ar is the paper's (2013 eq. (2)) in cg's default, so 2013 lacks it.
        let only_2013: Vec<&str> = y.iter().copied().filter(|f| !m.contains(f)).collect();
        let only_mmsys16: Vec<&str> = m.iter().copied().filter(|f| !y.contains(f)).collect();
        assert_eq!(only_2013, ["filter", "loss"]);
        assert_eq!(only_mmsys16, ["cap_as_by_ar"]);
        assert!(y.contains(&"threshold"));
    }

    /// The table in `docs/gcc-variants.md` names every field a variant changes.
    #[test]
    fn the_docs_table_names_every_difference() {
        let doc = include_str!("../../../../docs/gcc-variants.md");
        for v in GccVariant::ALL {
            for (field, _, _) in v.differences() {
                assert!(
                    doc.contains(&format!("| `{field}` |")),
                    "docs/gcc-variants.md has no row for {field} ({v})"
                );
            }
        }
    }
}
