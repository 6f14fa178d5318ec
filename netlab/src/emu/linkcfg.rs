//! Scenario link specs → cg-link configurations (the same model the simulated tests use).

use std::time::Duration;

use cg_link::qdisc::{
    DropTailConfig, HtbClassConfig, HtbConfig, HtbMatch, HtbRule, QdiscConfig, QueueLimit,
};
use cg_link::{CapacityConfig, DelayConfig, LinkConfig, LossConfig, MahimahiTrace, RateStep};
use cg_link::{Dscp, Protocol};

use cg_types::Bitrate;

use crate::scenario::units::{Dur, Limit};
use crate::scenario::{Capacity, FlowKind, FlowSpec, LinkSpec, Qdisc, RawHtbClass};
use crate::{Error, Result};

/// Builds (and validates, by constructing a link) the cg-link config for one direction. The
/// scenario's delay and loss already are cg-link's [`DelayConfig`] and [`LossConfig`]; a
/// schedule's `(from, rate)` steps become [`RateStep`] durations, an outage a zero-rate step.
pub fn link_config(
    spec: &LinkSpec,
    flows: &[FlowSpec],
    seed: u64,
    what: &str,
) -> Result<LinkConfig> {
    let capacity = match &spec.capacity {
        Capacity::Constant(r) => CapacityConfig::Constant { rate: *r },
        Capacity::Schedule(steps) => CapacityConfig::Schedule {
            steps: steps
                .iter()
                .enumerate()
                .map(|(i, (at, rate))| RateStep {
                    duration: steps
                        .get(i + 1)
                        .map_or(Duration::from_secs(1), |(next, _)| *next - *at),
                    rate: *rate,
                })
                .collect(),
            repeat: false,
        },
        Capacity::Trace(ms) => CapacityConfig::Trace {
            trace: MahimahiTrace::new(ms.clone())
                .map_err(|e| Error::NotAvailable(format!("{what} trace: {e}")))?,
        },
    };
    let config = LinkConfig {
        capacity,
        delay: spec.delay,
        loss: spec.loss,
        qdisc: qdisc_config(
            &spec.qdisc,
            spec.capacity.rate_at(Duration::ZERO),
            flows,
            what,
        )?,
        seed,
        // The forwarder streams events out with poll_event; keep the in-memory log small.
        event_limit: Some(1 << 16),
        ..LinkConfig::default()
    };
    config
        .validate()
        .map_err(|e| Error::NotAvailable(format!("{what} link: {e}")))?;
    Ok(config)
}

/// The link the forwarder runs before the run's t0, for the RTT check: `config` at its initial
/// capacity (a schedule's first rate, constant: an outage or step during set-up must not
/// delay the probes) and base delay, without jitter, reordering, duplication or random loss,
/// so that the check measures the path rather than the dice.
pub fn probe_config(config: &LinkConfig) -> LinkConfig {
    let capacity = match &config.capacity {
        CapacityConfig::Schedule { steps, .. } => {
            steps.first().map_or(config.capacity.clone(), |s| {
                CapacityConfig::constant(s.rate)
            })
        }
        other => other.clone(),
    };
    LinkConfig {
        capacity,
        delay: DelayConfig::fixed(config.delay.base),
        loss: LossConfig::None,
        ..config.clone()
    }
}

/// The cg-link queue discipline for a scenario qdisc at mean link rate `rate`.
///
/// Non-DropTail qdiscs go through cg-link's own serde form (`{ kind = "codel", target = … }`),
/// passing only the parameters the scenario sets, so every omitted one takes cg-link's (Linux's)
/// default. Limits given in bytes or time become packets of 1500 bytes at the mean rate for
/// qdiscs whose limit is a packet count.
pub fn qdisc_config(
    q: &Qdisc,
    rate: Bitrate,
    flows: &[FlowSpec],
    what: &str,
) -> Result<QdiscConfig> {
    use toml::Value as V;
    let dur = |d: &Option<Dur>| d.map(|d| V::String(humantime::format_duration(d.0).to_string()));
    let pkts = |l: &Option<Limit>| {
        l.map(|l| match l {
            Limit::Packets(p) => V::Integer(i64::from(p)),
            other => V::Integer((other.bytes_at(rate).as_bytes().div_ceil(1500)).max(1) as i64),
        })
    };
    let (kinds, fields): (&[&str], Vec<(&str, Option<V>)>) = match q {
        Qdisc::Droptail { limit } => {
            return Ok(QdiscConfig::DropTail(DropTailConfig {
                limit: queue_limit(*limit),
            }));
        }
        Qdisc::Codel {
            target,
            interval,
            limit,
            ecn,
        } => (
            &["codel"],
            vec![
                ("target", dur(target)),
                ("interval", dur(interval)),
                ("limit", pkts(limit)),
                ("ecn", ecn.map(V::Boolean)),
            ],
        ),
        Qdisc::Pie {
            target,
            tupdate,
            limit,
            ecn,
        } => (
            &["pie"],
            vec![
                ("target", dur(target)),
                ("tupdate", dur(tupdate)),
                ("limit", pkts(limit)),
                ("ecn", ecn.map(V::Boolean)),
            ],
        ),
        Qdisc::Sfq { limit } => (
            &["sfq"],
            vec![(
                "limit",
                limit.and_then(|l| V::try_from(queue_limit(l)).ok()),
            )],
        ),
        Qdisc::FqCodel {
            target,
            interval,
            limit,
            ecn,
        } => (
            &["fq_codel"],
            vec![
                ("target", dur(target)),
                ("interval", dur(interval)),
                ("limit", pkts(limit)),
                ("ecn", ecn.map(V::Boolean)),
            ],
        ),
        Qdisc::Dualpi2 {
            target,
            limit,
            step,
            coupling,
        } => (
            &["dualpi2", "dual_pi2"],
            vec![
                ("target", dur(target)),
                ("limit", pkts(limit)),
                ("step_threshold", dur(step)),
                ("coupling_factor", coupling.map(V::Float)),
            ],
        ),
        Qdisc::Htb { classes, default } => return htb_config(classes, default, rate, flows, what),
    };
    let mut last = String::new();
    for kind in kinds {
        let mut t = toml::Table::new();
        t.insert("kind".into(), V::String((*kind).into()));
        for (k, v) in &fields {
            if let Some(v) = v {
                t.insert((*k).into(), v.clone());
            }
        }
        match V::Table(t).try_into::<QdiscConfig>() {
            Ok(c) => return Ok(c),
            Err(e) => last = e.message().to_owned(),
        }
    }
    if last.contains("unknown variant") {
        Err(Error::NotAvailable(format!(
            "{what} qdisc `{}` is not available in cg-link yet",
            q.kind()
        )))
    } else {
        Err(Error::NotAvailable(format!(
            "{what} qdisc `{}`: {last}",
            q.kind()
        )))
    }
}

/// HTB (TMA24 §IV-C): scenario classes with their child qdiscs; a class's `flows` become
/// rules on the flows' protocol and destination port (each flow has its own port), `dscp`
/// a DSCP rule.
fn htb_config(
    classes: &[RawHtbClass],
    default: &str,
    rate: Bitrate,
    flows: &[FlowSpec],
    what: &str,
) -> Result<QdiscConfig> {
    let mut cfg = HtbConfig {
        default_class: Some(default.to_owned()),
        ..HtbConfig::default()
    };
    for c in classes {
        let mut class =
            HtbClassConfig::new(&c.name, c.rate.0, c.ceil.map_or(rate, |r| r.0), c.prio);
        if let Some(q) = &c.qdisc {
            class.qdisc = Some(Box::new(qdisc_config(q, c.rate.0, flows, what)?));
        }
        cfg.classes.push(class);
        for name in &c.flows {
            for f in flows.iter().filter(|f| {
                &f.name == name
                    || f.name
                        .strip_prefix(name.as_str())
                        .is_some_and(|r| r.starts_with('-'))
            }) {
                cfg.rules.push(HtbRule {
                    class: c.name.clone(),
                    matches: HtbMatch {
                        dst_port: Some(f.port),
                        protocol: Some(Protocol(if f.kind == FlowKind::Tcp { 6 } else { 17 })),
                        ..HtbMatch::default()
                    },
                });
            }
        }
        if let Some(d) = c.dscp {
            cfg.rules.push(HtbRule {
                class: c.name.clone(),
                matches: HtbMatch {
                    dscp: Some(Dscp::new(d).ok_or_else(|| {
                        Error::NotAvailable(format!(
                            "{what} htb class `{}`: DSCP {d} is above 63",
                            c.name
                        ))
                    })?),
                    ..HtbMatch::default()
                },
            });
        }
    }
    Ok(QdiscConfig::Htb(cfg))
}

fn queue_limit(l: Limit) -> QueueLimit {
    match l {
        Limit::Packets(p) => QueueLimit::Packets(p),
        Limit::Bytes(b) => QueueLimit::Bytes(b),
        Limit::Time(t) => QueueLimit::Time(t),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_steps_become_durations() {
        let spec = LinkSpec {
            capacity: Capacity::Schedule(vec![
                (Duration::ZERO, Bitrate::mbps(1)),
                (Duration::from_secs(20), Bitrate::kbps(2500)),
            ]),
            delay: DelayConfig::fixed(Duration::from_millis(25)),
            loss: LossConfig::None,
            qdisc: Qdisc::Droptail {
                limit: Limit::Time(Duration::from_millis(300)),
            },
        };
        let c = link_config(&spec, &[], 1, "forward").unwrap();
        match c.capacity {
            CapacityConfig::Schedule { steps, .. } => {
                assert_eq!(steps[0].duration, Duration::from_secs(20));
                assert_eq!(steps[1].rate, Bitrate::kbps(2500));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(c.delay.base, Duration::from_millis(25));
    }

    fn scenario(forward: &str) -> crate::scenario::Scenario {
        let text = format!("duration = \"10s\"\n[forward]\n{forward}\n");
        crate::scenario::Scenario::parse(&text, "t.toml", "t", std::path::Path::new(".")).unwrap()
    }

    #[test]
    fn every_impairment_reaches_cg_link_and_an_outage_is_a_zero_rate_step() {
        let sc = scenario(
            r#"schedule = [ { at = "0s", rate = "2Mbit" }, { at = "3s", down = "2s" } ]
delay = "20ms"
jitter = "1ms"
reorder = 0.01
reorder_delay = "15ms"
duplicate = 0.02
loss = { mean = 0.02, burst = 4 }"#,
        );
        let c = link_config(&sc.forward, &sc.flows, 1, "forward").unwrap();
        let CapacityConfig::Schedule { steps, repeat } = &c.capacity else {
            panic!("{:?}", c.capacity)
        };
        assert!(!repeat);
        let s = Duration::from_secs;
        assert_eq!(
            steps,
            &vec![
                RateStep {
                    duration: s(3),
                    rate: Bitrate::mbps(2)
                },
                RateStep::down(s(2)),
                RateStep {
                    duration: s(1),
                    rate: Bitrate::mbps(2)
                },
            ]
        );
        assert_eq!(
            c.delay,
            DelayConfig {
                base: Duration::from_millis(20),
                jitter: Duration::from_millis(1),
                reorder: 0.01,
                reorder_delay: Duration::from_millis(15),
                duplicate: 0.02,
            }
        );
        let LossConfig::GilbertElliott { p, r, .. } = c.loss else {
            panic!("{:?}", c.loss)
        };
        // r = 1/burst, p = r·mean/(1 − mean).
        assert!((r - 0.25).abs() < 1e-12 && (p - 0.25 * 0.02 / 0.98).abs() < 1e-12);
        // The probe link of the RTT check: the initial rate, the base delay, nothing random.
        let p = probe_config(&c);
        assert_eq!(p.capacity, CapacityConfig::constant(Bitrate::mbps(2)));
        assert_eq!(p.delay, DelayConfig::fixed(Duration::from_millis(20)));
        assert_eq!(p.loss, LossConfig::None);
    }

    #[test]
    fn codel_parameters_reach_cg_link() {
        let q = Qdisc::Codel {
            target: Some(Dur(Duration::from_millis(13))),
            interval: None,
            limit: Some(Limit::Packets(1000)),
            ecn: Some(true),
        };
        let c = qdisc_config(&q, Bitrate::mbps(1), &[], "forward").unwrap();
        let text = format!("{c:?}");
        assert!(
            text.contains("13ms") && text.contains("1000") && text.contains("ecn: true"),
            "{text}"
        );
    }

    #[test]
    fn every_preset_builds_a_cg_link_config() {
        for name in crate::scenario::presets::names() {
            let sc = crate::scenario::presets::load(name).unwrap().unwrap();
            link_config(&sc.forward, &sc.flows, 1, "forward")
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            link_config(&sc.reverse, &sc.flows, 1, "reverse")
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    #[test]
    fn htb_classes_match_their_flows_by_port() {
        let sc = crate::scenario::presets::load("tma24-4-htb-cubic")
            .unwrap()
            .unwrap();
        let c = link_config(&sc.forward, &sc.flows, 1, "forward").unwrap();
        let QdiscConfig::Htb(h) = c.qdisc else {
            panic!("{:?}", c.qdisc)
        };
        assert_eq!(h.classes.len(), 2);
        assert_eq!(h.default_class.as_deref(), Some("be"));
        let cg = sc.flows.iter().find(|f| f.name == "cg").unwrap();
        assert_eq!(h.rules[0].class, "cg");
        assert_eq!(h.rules[0].matches.dst_port, Some(cg.port));
    }
}
