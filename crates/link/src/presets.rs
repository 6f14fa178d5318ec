//! The papers' bottleneck settings as named presets.
//!
//! - **CCR16** — Carlucci, De Cicco, Mascolo, "Controlling Queuing Delays for Real-Time
//!   Communication: The Interplay of E2E and AQM Algorithms", ACM CCR 46(3), 2016, Table 1.
//! - **TMA24** — cloud gaming with SCReAM v2: HTB vs L4S (DualPI2), TMA 2024, §IV.
//!
//! Each preset is a function returning a plain [`QdiscConfig`] (so it can be inspected,
//! tweaked, serialised, or handed to the kernel-`tc` backend), and is also reachable by name
//! from a config file: `qdisc = { kind = "preset", name = "ccr16-codel" }`.

use std::time::Duration;

use cg_types::Bitrate;

use crate::error::Error;
use crate::packet::Protocol;
use crate::qdisc::{
    CodelConfig, DropTailConfig, DualPi2Config, FqCodelConfig, HtbClassConfig, HtbConfig, HtbMatch,
    HtbRule, LinkInfo, PieConfig, QdiscConfig, QueueLimit, SfqConfig,
};

/// Every preset name [`by_name`] knows.
pub const NAMES: &str = "ccr16-dt300, ccr16-codel, ccr16-pie, ccr16-sfq, ccr16-fq_codel, \
                         tma24-droptail, tma24-htb, tma24-dualpi2";

impl QdiscConfig {
    /// This config with a [`QdiscConfig::Preset`] replaced by what it names for `link` (the
    /// kernel-`tc` backend needs concrete parameters). Other configs are returned as they are.
    pub fn resolve(&self, link: LinkInfo) -> Result<QdiscConfig, Error> {
        match self {
            QdiscConfig::Preset { name } => by_name(name, link.rate),
            other => Ok(other.clone()),
        }
    }
}

/// The preset called `name` for a link of `rate`.
pub fn by_name(name: &str, rate: Bitrate) -> Result<QdiscConfig, Error> {
    Ok(match name.to_ascii_lowercase().replace('_', "-").as_str() {
        "ccr16-dt300" | "dt300" => ccr16_dt300(),
        "ccr16-codel" => ccr16_codel(rate),
        "ccr16-pie" => ccr16_pie(),
        "ccr16-sfq" => ccr16_sfq(),
        "ccr16-fq-codel" | "ccr16-fqcodel" => ccr16_fq_codel(),
        "tma24-droptail" | "tma24-dt" => tma24_droptail(),
        "tma24-htb" => tma24_htb(
            rate,
            HtbMatch {
                protocol: Some(Protocol::UDP),
                ..HtbMatch::default()
            },
        )?,
        "tma24-dualpi2" | "tma24-l4s" => tma24_dualpi2(),
        _ => {
            return Err(Error::UnknownPreset {
                name: name.to_owned(),
                known: NAMES,
            });
        }
    })
}

/// CCR16 Table 1 "DropTail (DT/300)": a FIFO holding 300 ms at the link rate (also RFC 8867
/// §5.1's recommended buffer and MMSys16's setting).
pub fn ccr16_dt300() -> QdiscConfig {
    QdiscConfig::DropTail(DropTailConfig::time(Duration::from_millis(300)))
}

/// CCR16 Table 1 "CoDel": interval 100 ms, target 13 ms at 1 Mb/s and 5 ms otherwise
/// (we use 13 ms for links of 1 Mb/s or less), limit 1000 packets.
pub fn ccr16_codel(rate: Bitrate) -> QdiscConfig {
    let target = if rate <= Bitrate::mbps(1) { 13 } else { 5 };
    QdiscConfig::Codel(CodelConfig {
        target: Duration::from_millis(target),
        interval: Duration::from_millis(100),
        limit: 1000,
        ..CodelConfig::default()
    })
}

/// CCR16 Table 1 "PIE": tupdate 30 ms, target 20 ms, limit 1000 packets; α, β and the burst
/// allowance at the Linux defaults the paper says it kept.
pub fn ccr16_pie() -> QdiscConfig {
    QdiscConfig::Pie(PieConfig {
        target: Duration::from_millis(20),
        tupdate: Duration::from_millis(30),
        limit: 1000,
        ..PieConfig::default()
    })
}

/// CCR16 Table 1 "SFQ": queue size 300 ms at the link rate.
pub fn ccr16_sfq() -> QdiscConfig {
    QdiscConfig::Sfq(SfqConfig {
        limit: QueueLimit::Time(Duration::from_millis(300)),
        ..SfqConfig::default()
    })
}

/// CCR16 Table 1 "FQ-CoDel": target 13 ms, interval 100 ms, limit 10240 packets.
pub fn ccr16_fq_codel() -> QdiscConfig {
    QdiscConfig::FqCodel(FqCodelConfig {
        target: Duration::from_millis(13),
        interval: Duration::from_millis(100),
        limit: 10240,
        ..FqCodelConfig::default()
    })
}

/// TMA24 §IV-B: a drop-tail queue of 250 packets.
pub fn tma24_droptail() -> QdiscConfig {
    QdiscConfig::DropTail(DropTailConfig::packets(250))
}

/// TMA24 §IV-C: HTB with two classes on a link of `rate` (50 Mb/s in the paper): `cg`, high
/// priority, 10 Mb/s guaranteed, may borrow up to the link, SFQ of 63 packets; `be`, the rest
/// of the link guaranteed, pfifo of 250 packets. Packets matching `cg` go to `cg`, all others
/// to `be`. The named preset matches UDP as cloud-gaming traffic (the paper's competing
/// traffic is TCP).
pub fn tma24_htb(rate: Bitrate, cg: HtbMatch) -> Result<QdiscConfig, Error> {
    let guaranteed = Bitrate::mbps(10);
    if rate <= guaranteed {
        return Err(Error::InvalidParameter {
            what: "tma24-htb link rate",
            reason: format!("must exceed the 10 Mb/s guaranteed to the CG class, got {rate}"),
        });
    }
    Ok(QdiscConfig::Htb(HtbConfig {
        rate: Some(rate),
        classes: vec![
            HtbClassConfig::new("cg", guaranteed, rate, 0).with_qdisc(QdiscConfig::Sfq(
                SfqConfig {
                    limit: QueueLimit::Packets(63),
                    ..SfqConfig::default()
                },
            )),
            HtbClassConfig::new("be", rate.saturating_sub(guaranteed), rate, 1)
                .with_qdisc(QdiscConfig::DropTail(DropTailConfig::packets(250))),
        ],
        rules: vec![HtbRule {
            class: "cg".into(),
            matches: cg,
        }],
        default_class: Some("be".into()),
        ..HtbConfig::default()
    }))
}

/// TMA24 §IV-D: DualPI2 with the queue limit at 1000 packets ("approximately 12 MB" of
/// 1500-byte packets), everything else at its default. Linux's DualPI2 has one limit for
/// both queues; the paper's "L4S queue limit" is taken to be that.
pub fn tma24_dualpi2() -> QdiscConfig {
    QdiscConfig::Dualpi2(DualPi2Config {
        limit: 1000,
        ..DualPi2Config::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_preset_builds() {
        for name in NAMES.split(", ") {
            let q = by_name(name, Bitrate::mbps(50)).unwrap();
            q.validate(LinkInfo::new(Bitrate::mbps(50))).unwrap();
        }
        assert!(matches!(
            by_name("nope", Bitrate::mbps(1)),
            Err(Error::UnknownPreset { .. })
        ));
    }

    #[test]
    fn ccr16_codel_target_depends_on_the_rate() {
        let t = |r| match ccr16_codel(r) {
            QdiscConfig::Codel(c) => c.target,
            _ => unreachable!("ccr16_codel builds CoDel"),
        };
        assert_eq!(t(Bitrate::mbps(1)), Duration::from_millis(13));
        assert_eq!(t(Bitrate::mbps(2)), Duration::from_millis(5));
    }

    #[test]
    fn tma24_htb_needs_a_link_above_the_guarantee() {
        assert!(tma24_htb(Bitrate::mbps(10), HtbMatch::default()).is_err());
    }
}
