//! The scenario file's schema (serde), as written by users. [`super::Scenario`] is the
//! checked form built from it.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use toml::Spanned;

use super::units::{Dur, Rate};

/// Top level of a scenario TOML file.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawScenario {
    /// Short name (defaults to the file stem).
    pub name: Option<String>,
    /// Free text: which paper, section, figure.
    #[serde(default)]
    pub description: String,
    /// How long the run lasts.
    pub duration: Spanned<Dur>,
    /// Seed of every random decision (qdisc drops, loss); default 1.
    #[serde(default = "one")]
    pub seed: u64,
    /// `emulated` (default: TUN forwarder running cg-link) or `kernel` (real `tc` qdiscs).
    #[serde(default)]
    pub backend: Backend,
    /// What to do when the kernel lacks something the kernel backend needs.
    #[serde(default)]
    pub kernel_fallback: Fallback,
    /// Hosts and addresses.
    #[serde(default)]
    pub topology: RawTopology,
    /// The bottleneck from senders to receivers.
    pub forward: Spanned<RawLink>,
    /// The path from receivers back to senders (default: 1 Gbit/s, same delay as forward,
    /// DropTail 1000 packets: effectively no bottleneck).
    pub reverse: Option<Spanned<RawLink>>,
    /// The traffic.
    #[serde(default)]
    pub flows: Vec<Spanned<RawFlow>>,
    /// How metrics are computed.
    #[serde(default)]
    pub metrics: RawMetrics,
    /// CPU load beside the endpoints (a busy host: the game beside the encoder); none by
    /// default.
    pub load: Option<Spanned<RawLoad>>,
}

/// `[load]`: busy loops on the run's cores, and the priority the media endpoints run at.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawLoad {
    /// How many busy loops (default 2, one per core here).
    #[serde(default = "two")]
    pub hogs: Spanned<u32>,
    /// Their nice value, −20…19 (default 19: the lowest priority).
    #[serde(default = "nineteen")]
    pub nice: Spanned<i32>,
    /// The share of each 10 ms a loop is busy, (0, 1] (default 1).
    #[serde(default = "whole")]
    pub duty: Spanned<f64>,
    /// The nice value cg-send, cg-recv and Chromium run at, −20…19 (default 0, as a user
    /// starts them; without `[load]` they run at the run's own −15).
    #[serde(default = "zero")]
    pub endpoint_nice: Spanned<i32>,
}

fn two() -> Spanned<u32> {
    Spanned::new(0..0, 2)
}

fn nineteen() -> Spanned<i32> {
    Spanned::new(0..0, 19)
}

fn zero() -> Spanned<i32> {
    Spanned::new(0..0, 0)
}

fn whole() -> Spanned<f64> {
    Spanned::new(0..0, 1.0)
}

fn one() -> u64 {
    1
}

/// Bottleneck backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// TUN forwarder in the router namespace running the bottleneck model in real time.
    #[default]
    Emulated,
    /// Linux `tc` qdiscs on the router's egress veths.
    Kernel,
}

/// Kernel-backend fallback policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Fallback {
    /// Stop with an error naming what is missing.
    #[default]
    Error,
    /// Use the emulated backend instead (and say so).
    Emulated,
}

/// Hosts: `senders` namespaces s1…sN, `receivers` namespaces r1…rM, all joined to one router.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawTopology {
    /// Number of sender hosts (default 1).
    #[serde(default = "one_u32")]
    pub senders: Spanned<u32>,
    /// Number of receiver hosts (default 1).
    #[serde(default = "one_u32")]
    pub receivers: Spanned<u32>,
    /// IPv4 /16 the run's addresses come from (default `10.77.0.0/16`, a private range).
    #[serde(default = "default_subnet")]
    pub subnet: Spanned<String>,
    /// Explicit addresses for some hosts (`{ s1 = "10.77.1.2" }`); must lie in the host's
    /// /24 and not clash.
    #[serde(default)]
    pub addresses: std::collections::BTreeMap<String, Spanned<String>>,
}

impl Default for RawTopology {
    fn default() -> Self {
        RawTopology {
            senders: one_u32(),
            receivers: one_u32(),
            subnet: default_subnet(),
            addresses: Default::default(),
        }
    }
}

fn one_u32() -> Spanned<u32> {
    Spanned::new(0..0, 1)
}

fn default_subnet() -> Spanned<String> {
    Spanned::new(0..0, "10.77.0.0/16".to_owned())
}

/// One direction of the bottleneck.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawLink {
    /// Constant capacity.
    pub capacity: Option<Spanned<Rate>>,
    /// Piecewise-constant capacity with outages: `[{ at = "0s", rate = "1Mbit" },
    /// { at = "60s", down = "2s" }, …]`.
    pub schedule: Option<Spanned<Vec<Spanned<RawCapacityStep>>>>,
    /// A Mahimahi delivery-opportunity trace file (one ms timestamp per 1500-byte
    /// opportunity), relative to the scenario file.
    pub trace: Option<Spanned<String>>,
    /// One-way propagation delay (default 0).
    pub delay: Option<Spanned<Dur>>,
    /// Standard deviation of a normal jitter added to `delay` (default 0); never reorders.
    pub jitter: Option<Spanned<Dur>>,
    /// Probability that a packet is held back by `reorder_delay` so later ones overtake it
    /// (default 0).
    pub reorder: Option<Spanned<f64>>,
    /// How long a reordered packet is held back (default 10 ms); needs `reorder`.
    pub reorder_delay: Option<Spanned<Dur>>,
    /// Probability that a packet is delivered twice (default 0).
    pub duplicate: Option<Spanned<f64>>,
    /// Random loss before the queue: a probability (Bernoulli) or a model table (default
    /// none).
    pub loss: Option<Spanned<RawLoss>>,
    /// The queue discipline: cg-link's `QdiscConfig` (`{ kind = "codel", target = "13ms" }`;
    /// default DropTail 1000 packets), whose HTB classes may also name scenario `flows`.
    pub qdisc: Option<Spanned<toml::Table>>,
}

/// One step of a link's capacity schedule: a new rate, or an outage.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawCapacityStep {
    /// When the step starts (from the start of the run).
    pub at: Spanned<Dur>,
    /// Capacity from then on.
    pub rate: Option<Spanned<Rate>>,
    /// An outage: the link is down for this long from `at`, then comes back at the rate in
    /// force before it.
    pub down: Option<Spanned<Dur>>,
}

/// A link's random loss as written: `loss = 0.01` or a model table.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum RawLoss {
    /// Each packet lost independently with this probability.
    Bernoulli(f64),
    /// `{ kind = "gilbert_elliott", p = …, r = … }`, `{ mean = 0.02, burst = 4 }` or
    /// `{ kind = "bernoulli", p = … }`.
    Model(Box<RawLossModel>),
}

impl<'de> Deserialize<'de> for RawLoss {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawLoss;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "a loss probability such as 0.01, or a table such as \
                     { mean = 0.02, burst = 4 } or { kind = \"gilbert_elliott\", p = 0.005, r = 0.25 }",
                )
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<RawLoss, E> {
                Ok(RawLoss::Bernoulli(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawLoss, E> {
                Ok(RawLoss::Bernoulli(v as f64))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawLoss, E> {
                Ok(RawLoss::Bernoulli(v as f64))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawLoss, A::Error> {
                RawLossModel::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(|m| RawLoss::Model(Box::new(m)))
            }
        }
        d.deserialize_any(V)
    }
}

/// A loss model table. Which fields go together is checked with the scenario
/// ([`super::Scenario::load`]), so each mistake is named with its line.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawLossModel {
    /// `gilbert_elliott` (default) or `bernoulli`.
    pub kind: Option<Spanned<LossKind>>,
    /// Bernoulli: the loss probability. Gilbert-Elliott: P(Good → Bad) per packet.
    pub p: Option<Spanned<f64>>,
    /// Gilbert-Elliott: P(Bad → Good) per packet.
    pub r: Option<Spanned<f64>>,
    /// Gilbert-Elliott: loss probability in Good (default 0).
    pub loss_good: Option<Spanned<f64>>,
    /// Gilbert-Elliott: loss probability in Bad (default 1).
    pub loss_bad: Option<Spanned<f64>>,
    /// Gilbert-Elliott by its effect: the mean loss ratio…
    pub mean: Option<Spanned<f64>>,
    /// …and the mean length of a loss burst in packets.
    pub burst: Option<Spanned<f64>>,
}

/// Loss model kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LossKind {
    /// Independent losses.
    Bernoulli,
    /// Two-state burst loss.
    GilbertElliott,
}

/// One step of a capacity schedule.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawStep {
    /// When the step starts (from the start of the run).
    pub at: Dur,
    /// Capacity from then on.
    pub rate: Rate,
}

/// Traffic kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowKind {
    /// Kernel TCP bulk transfer (netlab's own sender/receiver).
    Tcp,
    /// Constant-rate UDP.
    Udp,
    /// A cg media flow (cg-send → cg-recv).
    Cg,
}

/// ECN code point for UDP flows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EcnSetting {
    /// Not-ECT.
    #[default]
    NotEct,
    /// ECT(0), classic.
    Ect0,
    /// ECT(1), L4S.
    Ect1,
}

impl EcnSetting {
    /// The code point.
    pub fn ecn(self) -> cg_types::Ecn {
        match self {
            EcnSetting::NotEct => cg_types::Ecn::NotEct,
            EcnSetting::Ect0 => cg_types::Ecn::Ect0,
            EcnSetting::Ect1 => cg_types::Ecn::Ect1,
        }
    }
}

/// TCP congestion control (TCP_CONGESTION).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TcpCc {
    /// Cubic (Linux default).
    #[default]
    Cubic,
    /// BBR (v1 on these kernels).
    Bbr,
    /// Reno.
    Reno,
}

impl TcpCc {
    /// The kernel's name.
    pub fn name(self) -> &'static str {
        match self {
            TcpCc::Cubic => "cubic",
            TcpCc::Bbr => "bbr",
            TcpCc::Reno => "reno",
        }
    }
}

/// One flow (or `count` identical flows).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawFlow {
    /// Name in reports (instances get `-1`, `-2`… when `count > 1`).
    pub name: Spanned<String>,
    /// What traffic.
    pub kind: Spanned<FlowKind>,
    /// Sending host (`s1`…, or `r1`… for reverse-path traffic).
    pub from: Option<Spanned<String>>,
    /// Receiving host.
    pub to: Option<Spanned<String>>,
    /// Number of identical flows (default 1).
    #[serde(default = "one_u32")]
    pub count: Spanned<u32>,
    /// Start time (default 0).
    #[serde(default)]
    pub start: Dur,
    /// Stop time (default: end of run).
    pub stop: Option<Spanned<Dur>>,
    /// On/off: on for `on`, then off for `off`, repeating (each on-period a new TCP connection).
    pub on: Option<Spanned<Dur>>,
    /// Off time of an on/off flow.
    pub off: Option<Spanned<Dur>>,
    /// TCP congestion control (cubic).
    pub cc: Option<TcpCc>,
    /// TCP: negotiate ECN (sysctl tcp_ecn on the sending host) (false).
    #[serde(default)]
    pub tcp_ecn: bool,
    /// UDP rate, or a cap on a TCP flow's application rate.
    pub rate: Option<Spanned<Rate>>,
    /// Rate steps (UDP or rate-capped TCP): `[{ at = "60s", rate = "20Mbit" }]`, times from run start.
    pub rate_steps: Option<Vec<RawStep>>,
    /// UDP payload size in bytes (1200).
    pub size: Option<Spanned<u32>>,
    /// UDP ECN code point (not_ect).
    #[serde(default)]
    pub ecn: EcnSetting,
    /// cg flows: controller name (gcc, scream) — passed to cg-send.
    pub controller: Option<String>,
    /// cg flows: extra `cg-send` arguments (e.g. `["--width", "640", "--max-bitrate", "20M"]`).
    #[serde(default)]
    pub send_args: Vec<String>,
    /// cg flows: extra `cg-recv` arguments.
    #[serde(default)]
    pub recv_args: Vec<String>,
    /// cg flows: WebRTC mode — `cg` (cg-send serves WHEP on the sending host, cg-recv views
    /// it), `chromium` (headless Chromium views it on cg-send's page), `chromium_whep_js`
    /// (headless Chromium views it on an independent page), `chromium_publisher` (Chromium's
    /// fake camera on the sending host publishes over WHIP to cg-recv; no cg-send); default
    /// `off` (plain RTP).
    #[serde(default)]
    pub webrtc: WebRtcMode,
}

/// A cg flow's WebRTC mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WebRtcMode {
    /// Plain RTP: cg-send → cg-recv.
    #[default]
    Off,
    /// cg-recv as a WHEP client.
    Cg,
    /// Headless Chromium playing cg-send's viewer page; its `getStats()` reports go to
    /// `raw/viewer-<flow>.jsonl`.
    Chromium,
    /// Headless Chromium playing a page that shares no code with cg: medooze's whip-whep
    /// client (`crates/netlab/assets/whip-whep`), opened from a file (another origin than
    /// cg-send's), which trickles its candidates and offers audio too; its `getStats()`
    /// reports go to `raw/viewer-<flow>.jsonl` as the cg page's do.
    ChromiumWhepJs,
    /// Headless Chromium publishing its fake camera to cg-recv (`--webrtc whip`), which
    /// sends the feedback Chromium's own controller runs on; `send_args` are extra Chromium
    /// arguments, the page's reports go to `raw/publisher-<flow>.jsonl`.
    ChromiumPublisher,
}

impl WebRtcMode {
    /// Chromium views cg-send's stream, on either page: it picks its own port, and its
    /// `getStats()` reports are the viewer's figures.
    pub fn chromium_views(self) -> bool {
        matches!(self, Self::Chromium | Self::ChromiumWhepJs)
    }
}

/// Metric settings.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawMetrics {
    /// Time-series bin (default 200 ms).
    #[serde(default = "default_bin")]
    pub bin: Spanned<Dur>,
    /// Statistics ignore the first `warmup` of the run (default 0).
    #[serde(default)]
    pub warmup: Dur,
    /// Statistics end here (default: the end of the run), e.g. when competing flows stop
    /// before the media flow (CCR16 §4.2 measures [100, 300] s of a 400 s run).
    #[serde(default)]
    pub until: Option<Spanned<Dur>>,
}

impl Default for RawMetrics {
    fn default() -> Self {
        RawMetrics {
            bin: default_bin(),
            warmup: Dur::default(),
            until: None,
        }
    }
}

fn default_bin() -> Spanned<Dur> {
    Spanned::new(0..0, Dur(std::time::Duration::from_millis(200)))
}
