//! Shipped scenario presets: the seed papers' experiments (files in `crates/netlab/scenarios/`).
//!
//! - MMSys16 §4.2 and §6.1–6.5 (Carlucci et al., "Analysis and design of the Google Congestion
//!   Control for WebRTC"): RTT 50 ms; §4.2's adaptive threshold at 1 Mb/s over a 150 ms
//!   drop-tail (Figs. 9–10) and against one CUBIC flow over 350 ms (Fig. 11); §6's DT/300,
//!   capacity schedules, GCC vs GCC, vs 99 TCP, vs on/off TCP, reverse TCP.
//! - CCR16 §4.1–4.2 (Carlucci et al., "Controlling queuing delays for real-time communication"),
//!   Table 1 settings: DT/300, CoDel (13 ms at 1 Mb/s, else 5 ms), PIE (20 ms / 30 ms), SFQ
//!   (300 ms, as packets), FQ-CoDel (13 ms); §4.2 at every flow count of its two cases
//!   (n_TCP ∈ {3, 5, 8} at 10 Mb/s; n_TCP ∈ {1, 4, 9, 49, 99} at n_TCP + 1 Mb/s).
//! - TMA24 §IV (cloud gaming, HTB vs L4S): 50 Mb/s, RTT 30 ms, DT 250 packets, HTB two classes,
//!   DualPI2 with limit 1000; SCReAM with ECT(1) at the paper's 30 Mbit/s (the model
//!   encoder) against a rate-stepped Cubic or BBR TCP flow; §III-B's cellular runs over a
//!   shipped synthetic 4G trace (`traces/tma24-cellular.mahimahi.gz`, made by
//!   `traces/tma24-cellular.py`).
//!
//! Each file opens with the section, table or figure it reproduces and every difference from
//! the paper with its reason.

use std::path::Path;

use super::{Scenario, ScenarioError};

include!("preset_list.rs");

/// Names of the shipped presets.
pub fn names() -> impl Iterator<Item = &'static str> {
    PRESETS.iter().map(|(n, _)| *n)
}

/// The TOML text of preset `name`.
pub fn text(name: &str) -> Option<&'static str> {
    PRESETS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// Where presets' trace files are read from: the checkout's `crates/netlab/scenarios/` (the
/// presets' text is compiled in, their traces are not: a 360 s cellular trace is 0.7 MB
/// compressed).
pub fn trace_dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios"))
}

/// Parses preset `name` (errors name the preset's file; traces are read from
/// [`trace_dir`]).
pub fn load(name: &str) -> Option<Result<Scenario, ScenarioError>> {
    let text = text(name)?;
    Some(Scenario::parse(
        text,
        &format!("scenarios/{name}.toml"),
        name,
        trace_dir(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::FlowKind;
    use cg_link::qdisc::QdiscConfig;

    #[test]
    fn the_matched_scenarios_parse_and_check() {
        for (file, text) in [
            (
                "scream-cubic-droptail-10mbit",
                include_str!("../../scenarios/matched/scream-cubic-droptail-10mbit.toml"),
            ),
            (
                "scream-cubic-codel-10mbit",
                include_str!("../../scenarios/matched/scream-cubic-codel-10mbit.toml"),
            ),
            (
                "scream-cubic-dualpi2-10mbit",
                include_str!("../../scenarios/matched/scream-cubic-dualpi2-10mbit.toml"),
            ),
            (
                "gcc-cubic-droptail-2mbit",
                include_str!("../../scenarios/matched/gcc-cubic-droptail-2mbit.toml"),
            ),
            (
                "gcc-remb-cubic-droptail-2mbit",
                include_str!("../../scenarios/matched/gcc-remb-cubic-droptail-2mbit.toml"),
            ),
        ] {
            let path = format!("scenarios/matched/{file}.toml");
            let s = Scenario::parse(text, &path, file, Path::new("."))
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(s.name, file);
            assert_eq!(s.flows.len(), 2, "{file}");
        }
    }

    #[test]
    fn every_preset_parses_and_checks() {
        assert!(PRESETS.len() >= 20);
        for name in names() {
            let s = load(name).unwrap().unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(s.name, name);
            assert!(!s.flows.is_empty(), "{name}");
        }
    }

    #[test]
    fn presets_carry_the_papers_settings() {
        let s = load("mmsys16-6.3-gcc-vs-99-tcp").unwrap().unwrap();
        assert_eq!(
            s.flows.iter().filter(|f| f.kind == FlowKind::Tcp).count(),
            99
        );
        let s = load("ccr16-4.1-codel-1mbit").unwrap().unwrap();
        assert!(matches!(&s.forward.qdisc, QdiscConfig::Codel(c) if c.target.as_millis() == 13));
        let s = load("tma24-4-htb-cubic").unwrap().unwrap();
        assert!(matches!(s.forward.qdisc, QdiscConfig::Htb(_)));
        assert_eq!(s.forward.delay.base.as_millis() * 2, 30);
    }
}
