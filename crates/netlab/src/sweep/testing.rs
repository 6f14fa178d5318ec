//! What the sweep's unit tests share: a small simulated grid of two argument axes, and one
//! of key axes.

/// One preset, ku (three log-spaced values) × kd (two).
pub(super) const GRID: &str = r#"
name = "t"
scenarios = ["preset:mmsys16-6.1-variable-capacity"]
[[axis]]
name = "ku"
recv_arg = "--gcc-ku"
log = { from = 0.001, to = 0.1, n = 3 }
[[axis]]
name = "kd"
recv_arg = "--gcc-kd"
values = [0.0001, 0.001]
"#;

/// An "AQM × RTT × flow count" grid over two CCR16 §4.2 presets.
pub(super) const KEY_GRID: &str = r#"
name = "k"
scenarios = ["preset:ccr16-4.2-codel-3tcp-10mbit", "preset:ccr16-4.2-pie-3tcp-10mbit"]
[[axis]]
name = "rtt"
key = "forward.delay"
unit = "ms"
values = [10, 40]
[[axis]]
name = "ntcp"
key = "flows.tcp.count"
lin = { from = 1, to = 5, n = 3 }
[[axis]]
name = "ku"
recv_arg = "--gcc-ku"
values = [0.01]
"#;
