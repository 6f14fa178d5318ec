//! Scenario link specs → cg-link configurations (the same model the simulated tests use).

use std::time::Duration;

use cg_link::{CapacityConfig, DelayConfig, LinkConfig, LossConfig, MahimahiTrace, RateStep};
use cg_link::qdisc::{DropTailConfig, QdiscConfig, QueueLimit};

use cg_types::Bitrate;

use crate::scenario::units::{Dur, Limit};
use crate::scenario::{Capacity, LinkSpec, Qdisc};
use crate::{Error, Result};

/// Builds (and validates, by constructing a link) the cg-link config for one direction.
pub fn link_config(spec: &LinkSpec, seed: u64, what: &str) -> Result<LinkConfig> {
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
    let loss = if spec.loss > 0.0 {
        LossConfig::Bernoulli { p: spec.loss }
    } else {
        LossConfig::None
    };
    let config = LinkConfig {
        capacity,
        delay: DelayConfig::fixed(spec.delay),
        loss,
        qdisc: qdisc_config(&spec.qdisc, spec.capacity.rate_at(Duration::ZERO), what)?,
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

/// The cg-link queue discipline for a scenario qdisc at mean link rate `rate`.
///
/// Non-DropTail qdiscs go through cg-link's own serde form (`{ kind = "codel", target = … }`),
/// passing only the parameters the scenario sets, so every omitted one takes cg-link's (Linux's)
/// default. Limits given in bytes or time become packets of 1500 bytes at the mean rate for
/// qdiscs whose limit is a packet count.
pub fn qdisc_config(q: &Qdisc, rate: Bitrate, what: &str) -> Result<QdiscConfig> {
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
        Qdisc::Codel { target, interval, limit, ecn } => (
            &["codel"],
            vec![
                ("target", dur(target)),
                ("interval", dur(interval)),
                ("limit", pkts(limit)),
                ("ecn", ecn.map(V::Boolean)),
            ],
        ),
        Qdisc::Pie { target, tupdate, limit, ecn } => (
            &["pie"],
            vec![
                ("target", dur(target)),
                ("tupdate", dur(tupdate)),
                ("limit", pkts(limit)),
                ("ecn", ecn.map(V::Boolean)),
            ],
        ),
        Qdisc::Sfq { limit } => (&["sfq"], vec![("limit", pkts(limit))]),
        Qdisc::FqCodel { target, interval, limit, ecn } => (
            &["fq_codel"],
            vec![
                ("target", dur(target)),
                ("interval", dur(interval)),
                ("limit", pkts(limit)),
                ("ecn", ecn.map(V::Boolean)),
            ],
        ),
        Qdisc::Dualpi2 { target, limit, step, coupling } => (
            &["dualpi2", "dual_pi2"],
            vec![
                ("target", dur(target)),
                ("limit", pkts(limit)),
                ("step", dur(step)),
                ("coupling", coupling.map(V::Float)),
            ],
        ),
        Qdisc::Htb { .. } => {
            return Err(Error::NotAvailable(format!(
                "{what} qdisc `htb` is not available in cg-link yet"
            )));
        }
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
        Err(Error::NotAvailable(format!("{what} qdisc `{}`: {last}", q.kind())))
    }
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
            delay: Duration::from_millis(25),
            loss: 0.0,
            qdisc: Qdisc::Droptail {
                limit: Limit::Time(Duration::from_millis(300)),
            },
        };
        let c = link_config(&spec, 1, "forward").unwrap();
        match c.capacity {
            CapacityConfig::Schedule { steps, .. } => {
                assert_eq!(steps[0].duration, Duration::from_secs(20));
                assert_eq!(steps[1].rate, Bitrate::kbps(2500));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(c.delay.base, Duration::from_millis(25));
    }

    #[test]
    fn codel_parameters_reach_cg_link() {
        let q = Qdisc::Codel {
            target: Some(Dur(Duration::from_millis(13))),
            interval: None,
            limit: Some(Limit::Packets(1000)),
            ecn: Some(true),
        };
        let c = qdisc_config(&q, Bitrate::mbps(1), "forward").unwrap();
        let text = format!("{c:?}");
        assert!(text.contains("13ms") && text.contains("1000") && text.contains("ecn: true"), "{text}");
    }
}
