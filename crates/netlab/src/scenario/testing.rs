//! What the scenario's unit tests share: a parser for test text and a valid scenario to
//! vary.

use std::path::Path;

use super::{Scenario, ScenarioError};

pub(super) fn parse(text: &str) -> Result<Scenario, ScenarioError> {
    Scenario::parse(text, "t.toml", "t", Path::new("."))
}

/// A valid scenario: one UDP flow over a 1 Mbit/s DropTail link.
pub(super) const OK: &str = r#"
duration = "10s"
[forward]
capacity = "1Mbit"
delay = "25ms"
qdisc = { kind = "droptail", limit = "300ms" }
[[flows]]
name = "u"
kind = "udp"
from = "s1"
to = "r1"
rate = "2Mbit"
"#;
