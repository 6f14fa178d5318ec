//! Scenario link specs → cg-link configurations (the same model the simulated tests use).

use cg_link::{CapacityConfig, DelayConfig, LinkConfig, LossConfig};

use crate::scenario::LinkSpec;
use crate::{Error, Result};

/// The cg-link config for one direction: the scenario's capacity, delay, loss and queue
/// already are cg-link's configs; this adds the seed and a small in-memory event log, and
/// validates the whole by building a link.
pub fn link_config(spec: &LinkSpec, seed: u64, what: &str) -> Result<LinkConfig> {
    let config = LinkConfig {
        capacity: spec.capacity.clone(),
        delay: spec.delay,
        loss: spec.loss,
        qdisc: spec.qdisc.clone(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use cg_link::RateStep;
    use cg_types::Bitrate;
    use std::time::Duration;

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
        let c = link_config(&sc.forward, 1, "forward").unwrap();
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
    fn the_scenario_qdisc_is_cg_links_with_every_omitted_field_at_its_default() {
        use cg_link::qdisc::{CodelConfig, QdiscConfig};
        let sc = scenario(
            r#"capacity = "1Mbit"
qdisc = { kind = "codel", target = "13ms", limit = 300, ecn = true }"#,
        );
        let c = link_config(&sc.forward, 1, "forward").unwrap();
        assert_eq!(
            c.qdisc,
            QdiscConfig::Codel(CodelConfig {
                target: Duration::from_millis(13),
                limit: 300,
                ecn: true,
                ..CodelConfig::default()
            })
        );
    }

    #[test]
    fn every_preset_builds_a_cg_link_config() {
        for name in crate::scenario::presets::names() {
            let sc = crate::scenario::presets::load(name).unwrap().unwrap();
            link_config(&sc.forward, 1, "forward").unwrap_or_else(|e| panic!("{name}: {e}"));
            link_config(&sc.reverse, 1, "reverse").unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    #[test]
    fn htb_classes_match_their_flows_by_port() {
        let sc = crate::scenario::presets::load("tma24-4-htb-cubic")
            .unwrap()
            .unwrap();
        let c = link_config(&sc.forward, 1, "forward").unwrap();
        let cg_link::qdisc::QdiscConfig::Htb(h) = c.qdisc else {
            panic!("{:?}", c.qdisc)
        };
        assert_eq!(h.classes.len(), 2);
        assert_eq!(h.default_class.as_deref(), Some("be"));
        let cg = sc.flows.iter().find(|f| f.name == "cg").unwrap();
        assert_eq!(h.rules[0].class, "cg");
        assert_eq!(h.rules[0].matches.dst_port, Some(cg.port));
    }
}
