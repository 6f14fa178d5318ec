//! Scenario link specs → cg-link configurations (the same model the simulated tests use).

use std::time::Duration;

use cg_link::{CapacityConfig, DelayConfig, LinkConfig, LossConfig, MahimahiTrace, RateStep};
use cg_link::qdisc::{DropTailConfig, QdiscConfig, QueueLimit};

use crate::scenario::units::Limit;
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
        qdisc: qdisc_config(&spec.qdisc, what)?,
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

/// The cg-link queue discipline for a scenario qdisc.
pub fn qdisc_config(q: &Qdisc, what: &str) -> Result<QdiscConfig> {
    match q {
        Qdisc::Droptail { limit } => Ok(QdiscConfig::DropTail(DropTailConfig {
            limit: queue_limit(*limit),
        })),
        other => Err(Error::NotAvailable(format!(
            "{what} qdisc `{}` is not available in cg-link yet",
            other.kind()
        ))),
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
    use cg_types::Bitrate;

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
}
