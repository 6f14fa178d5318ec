//! Scenarios: TOML files describing topology, bottleneck, traffic and metrics.
//!
//! [`Scenario::load`] parses and checks a file completely before anything is created; every
//! problem is a [`ScenarioError`] naming the file, line, column and field. Shipped presets
//! (papers' experiments) are in [`presets`].

pub mod presets;
pub mod schema;
pub mod units;

use std::fmt;
use std::net::Ipv4Addr;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use cg_link::qdisc::{HtbMatch, HtbRule, LinkInfo, QdiscConfig};
use cg_link::{CapacityConfig, DelayConfig, LossConfig, MahimahiTrace, Protocol, RateStep};
use cg_types::Bitrate;
use toml::Spanned;

pub use schema::{Backend, EcnSetting, Fallback, FlowKind, TcpCc, WebRtcMode};
use schema::{LossKind, RawCapacityStep, RawFlow, RawLink, RawLoss, RawScenario};

/// A scenario problem, located in its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    /// File name (or `<preset name>`).
    pub file: String,
    /// 1-based line (0 when the problem has no location, e.g. an unreadable file).
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// The field concerned (`forward.qdisc.kind`, `flows[2].from`…).
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            if !self.file.is_empty() {
                write!(f, "{}: ", self.file)?;
            }
            if !self.field.is_empty() {
                write!(f, "field `{}`: ", self.field)?;
            }
            write!(f, "{}", self.message)
        } else {
            write!(
                f,
                "{}:{}:{}: field `{}`: {}",
                self.file, self.line, self.column, self.field, self.message
            )
        }
    }
}

impl std::error::Error for ScenarioError {}

/// One direction of the bottleneck, checked: cg-link's own configs, so the emulated backend
/// runs exactly what was loaded and the kernel backend maps the same values.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkSpec {
    /// Capacity over time (with its outages), as cg-link takes it.
    pub capacity: CapacityConfig,
    /// Propagation delay, jitter, reordering and duplication, as cg-link takes it.
    pub delay: DelayConfig,
    /// Random loss before the queue, as cg-link takes it.
    pub loss: LossConfig,
    /// Queue discipline, as cg-link takes it; HTB classes' `flows` are already rules.
    pub qdisc: QdiscConfig,
    /// Where its fields were written.
    pub origin: Origin,
}

impl LinkSpec {
    /// A plain wire of `rate` with `delay` and Linux's default queue (pfifo 1000 packets),
    /// written nowhere: the default reverse path.
    pub fn wire(rate: Bitrate, delay: Duration) -> Self {
        LinkSpec {
            capacity: CapacityConfig::constant(rate),
            delay: DelayConfig::fixed(delay),
            loss: LossConfig::None,
            qdisc: QdiscConfig::default(),
            origin: Origin::default(),
        }
    }
}

/// Where a link's fields were written, so that a problem found after loading (the kernel
/// backend refusing a parameter `tc` cannot take) names file, line and field like a load
/// error does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Origin {
    file: String,
    /// `forward.qdisc.target` → (line, column).
    at: std::collections::BTreeMap<String, (usize, usize)>,
}

impl Origin {
    /// `field` was written at byte `offset` of the scenario text.
    fn note(&mut self, cx: &Ctx<'_>, field: String, offset: usize) {
        self.at.insert(field, line_col(cx.text, offset));
    }

    /// The error `message` about `field` (`forward.qdisc.limit`), placed where the field was
    /// written, or where its nearest written parent (`forward.qdisc`, `forward`) was.
    pub fn error(&self, field: &str, message: impl Into<String>) -> ScenarioError {
        let mut key = field;
        let (line, column) = loop {
            if let Some(at) = self.at.get(key) {
                break *at;
            }
            match key.rfind(['.', '[']) {
                Some(i) => key = &key[..i],
                None => break (0, 0),
            }
        };
        ScenarioError {
            file: self.file.clone(),
            line,
            column,
            field: field.to_owned(),
            message: message.into(),
        }
    }
}

/// The longest `delay`, `jitter` or `reorder_delay` a scenario may give: longer is a typo
/// (a geostationary satellite hop is 0.25 s).
pub const MAX_DELAY: Duration = Duration::from_secs(10);

/// The longest outage: one day, cg-link's bound on any duration.
pub const MAX_OUTAGE: Duration = Duration::from_secs(86_400);

/// A host of the topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    /// `s1`…`sN`, `r1`…`rM`.
    pub name: String,
    /// Its address.
    pub addr: Ipv4Addr,
    /// The router's address on its link.
    pub gateway: Ipv4Addr,
    /// True for receivers (the far side of the forward bottleneck).
    pub is_receiver: bool,
}

/// Which bottleneck a flow crosses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Sender host → receiver host (the forward bottleneck).
    Forward,
    /// Receiver host → sender host (the reverse link).
    Reverse,
}

/// One flow instance, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowSpec {
    /// Unique name.
    pub name: String,
    /// Traffic kind.
    pub kind: FlowKind,
    /// Index into [`Scenario::hosts`].
    pub from: usize,
    /// Index into [`Scenario::hosts`].
    pub to: usize,
    /// Which bottleneck.
    pub direction: Direction,
    /// Start, from run start.
    pub start: Duration,
    /// Stop, from run start.
    pub stop: Duration,
    /// On/off periods.
    pub on_off: Option<(Duration, Duration)>,
    /// TCP congestion control.
    pub cc: TcpCc,
    /// TCP ECN negotiation.
    pub tcp_ecn: bool,
    /// Rate steps (UDP rate; TCP application cap); empty = unlimited TCP.
    pub rate_steps: Vec<(Duration, Bitrate)>,
    /// UDP payload bytes.
    pub size: u32,
    /// UDP ECN.
    pub ecn: EcnSetting,
    /// Destination port (unique per flow).
    pub port: u16,
    /// cg flows: the controller passed to cg-send/cg-recv `--cc` (default `gcc`).
    pub controller: String,
    /// cg flows: extra cg-send arguments.
    pub send_args: Vec<String>,
    /// cg flows: extra cg-recv arguments.
    pub recv_args: Vec<String>,
    /// cg flows: plain RTP, or WebRTC mode with its viewer.
    pub webrtc: WebRtcMode,
}

/// A checked scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Run length.
    pub duration: Duration,
    /// Seed.
    pub seed: u64,
    /// Backend.
    pub backend: Backend,
    /// Kernel fallback policy.
    pub fallback: Fallback,
    /// Hosts: senders first, then receivers.
    pub hosts: Vec<Host>,
    /// Forward bottleneck.
    pub forward: LinkSpec,
    /// Reverse link.
    pub reverse: LinkSpec,
    /// Flow instances.
    pub flows: Vec<FlowSpec>,
    /// Metric bin.
    pub bin: Duration,
    /// Warm-up excluded from statistics.
    pub warmup: Duration,
    /// Where statistics end (`[metrics] until`, default the run's end).
    pub until: Duration,
    /// CPU load beside the endpoints (`[load]`).
    pub load: Option<Load>,
    /// The TOML text it came from (copied into the output directory).
    pub source: String,
}

/// `[load]`, checked: busy loops beside the endpoints, started before t0 and stopped with
/// the run, and the nice value of the media endpoints.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Load {
    /// Busy loops, 1…64.
    pub hogs: u32,
    /// Their nice value.
    pub nice: i32,
    /// The share of each 10 ms a loop is busy, (0, 1].
    pub duty: f64,
    /// The nice value of cg-send, cg-recv and Chromium.
    pub endpoint_nice: i32,
}

fn load(cx: &Ctx<'_>, raw: &schema::RawLoad) -> Result<Load, ScenarioError> {
    let nice = |v: &Spanned<i32>, field: &str| {
        if (-20..=19).contains(v.get_ref()) {
            Ok(*v.get_ref())
        } else {
            Err(cx.err(v.span(), field, "a nice value lies in −20…19"))
        }
    };
    let hogs = *raw.hogs.get_ref();
    if !(1..=64).contains(&hogs) {
        return Err(cx.err(raw.hogs.span(), "load.hogs", "must lie in 1…64"));
    }
    let duty = *raw.duty.get_ref();
    if !(duty > 0.0 && duty <= 1.0) {
        return Err(cx.err(raw.duty.span(), "load.duty", "must lie in (0, 1]"));
    }
    Ok(Load {
        hogs,
        nice: nice(&raw.nice, "load.nice")?,
        duty,
        endpoint_nice: nice(&raw.endpoint_nice, "load.endpoint_nice")?,
    })
}

/// First destination port; flow i uses `BASE_PORT + i`.
pub const BASE_PORT: u16 = 5201;

struct Ctx<'a> {
    file: &'a str,
    text: &'a str,
}

impl Ctx<'_> {
    fn err(&self, span: Range<usize>, field: &str, message: impl Into<String>) -> ScenarioError {
        let (line, column) = line_col(self.text, span.start);
        ScenarioError {
            file: self.file.to_owned(),
            line,
            column,
            field: field.to_owned(),
            message: message.into(),
        }
    }
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = offset - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    (line, column)
}

/// The key written before the value at `offset` (`kind` in `kind = "foo"`), for serde errors.
fn key_before(text: &str, offset: usize) -> String {
    let offset = offset.min(text.len());
    // An error at a key itself (an unknown field in an inline table) names that key.
    let rest = &text[offset..];
    let ident_len = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
        .unwrap_or(rest.len());
    if ident_len > 0 && rest[ident_len..].trim_start().starts_with('=') {
        return rest[..ident_len].to_owned();
    }
    let before = &text[..offset];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = &before[line_start..];
    if let Some(eq) = line.rfind('=') {
        let lhs = line[..eq].trim_end();
        let key: String = lhs
            .chars()
            .rev()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '-' || *c == '.')
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        if !key.is_empty() {
            return key;
        }
    }
    // A table header or a bare key: take the line's first word.
    let full_line = text[line_start..].lines().next().unwrap_or("");
    full_line
        .trim()
        .trim_matches(|c| c == '[' || c == ']')
        .split(['=', ' '])
        .next()
        .unwrap_or("")
        .to_owned()
}

impl Scenario {
    /// Reads and checks a scenario file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            file: file.clone(),
            line: 0,
            column: 0,
            field: String::new(),
            message: format!("cannot read: {e}"),
        })?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let default_name = path
            .file_stem()
            .map_or("scenario".into(), |s| s.to_string_lossy().into_owned());
        Scenario::parse(&text, &file, &default_name, &base)
    }

    /// Parses and checks scenario text; `file` names it in errors, `base` resolves trace paths.
    pub fn parse(
        text: &str,
        file: &str,
        default_name: &str,
        base: &Path,
    ) -> Result<Scenario, ScenarioError> {
        let cx = Ctx { file, text };
        let raw: RawScenario = toml::from_str(text).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            let field = key_before(text, span.start);
            cx.err(span, &field, e.message().trim().to_owned())
        })?;
        build(&cx, raw, default_name, base)
    }
}

fn build(
    cx: &Ctx<'_>,
    raw: RawScenario,
    default_name: &str,
    base: &Path,
) -> Result<Scenario, ScenarioError> {
    let duration = raw.duration.get_ref().0;
    if duration.is_zero() {
        return Err(cx.err(raw.duration.span(), "duration", "must be above zero"));
    }
    // Topology.
    let topo = &raw.topology;
    let ns = *topo.senders.get_ref();
    let nr = *topo.receivers.get_ref();
    if !(1..=100).contains(&ns) {
        return Err(cx.err(topo.senders.span(), "topology.senders", "must be 1 to 100"));
    }
    if !(1..=100).contains(&nr) {
        return Err(cx.err(
            topo.receivers.span(),
            "topology.receivers",
            "must be 1 to 100",
        ));
    }
    let subnet = parse_subnet(topo.subnet.get_ref())
        .map_err(|m| cx.err(topo.subnet.span(), "topology.subnet", m))?;
    let mut hosts = Vec::new();
    for i in 1..=ns {
        let net = i as u8;
        hosts.push(host(format!("s{i}"), subnet, net, false));
    }
    for j in 1..=nr {
        let net = 100 + j as u8;
        hosts.push(host(format!("r{j}"), subnet, net, true));
    }
    for (name, addr) in &topo.addresses {
        let field = format!("topology.addresses.{name}");
        let Some(h) = hosts.iter_mut().find(|h| &h.name == name) else {
            return Err(cx.err(addr.span(), &field, format!("no host `{name}`")));
        };
        let a: Ipv4Addr = addr
            .get_ref()
            .parse()
            .map_err(|_| cx.err(addr.span(), &field, "not an IPv4 address"))?;
        let [g0, g1, g2, _] = h.gateway.octets();
        let [a0, a1, a2, a3] = a.octets();
        if [a0, a1, a2] != [g0, g1, g2] || a3 == 0 || a3 == 1 || a3 == 255 {
            return Err(cx.err(
                addr.span(),
                &field,
                format!(
                    "{a} is not a host address of {name}'s link {g0}.{g1}.{g2}.0/24 (.1 is the router)"
                ),
            ));
        }
        h.addr = a;
    }
    for (i, h) in hosts.iter().enumerate() {
        if let Some(other) = hosts[..i].iter().find(|o| o.addr == h.addr) {
            let span = topo.addresses.get(&h.name).map_or(0..0, |s| s.span());
            return Err(cx.err(
                span,
                &format!("topology.addresses.{}", h.name),
                format!("address {} clashes with {}", h.addr, other.name),
            ));
        }
    }
    // Links.
    let forward = link(
        cx,
        raw.forward.get_ref(),
        raw.forward.span(),
        "forward",
        base,
    )?;
    let reverse = match &raw.reverse {
        Some(r) => link(cx, r.get_ref(), r.span(), "reverse", base)?,
        None => (
            LinkSpec::wire(Bitrate::mbps(1000), forward.0.delay.base),
            Vec::new(),
        ),
    };
    // Flows.
    let mut flows = Vec::new();
    for (idx, f) in raw.flows.iter().enumerate() {
        flow_instances(cx, idx, f, &hosts, duration, &mut flows)?;
    }
    if flows.len() > 2000 {
        return Err(cx.err(0..0, "flows", "more than 2000 flow instances"));
    }
    let forward = with_flow_rules(forward, "forward", &flows)?;
    let reverse = with_flow_rules(reverse, "reverse", &flows)?;
    let until = match &raw.metrics.until {
        None => duration,
        Some(u) => {
            let u_d = u.get_ref().0;
            if u_d > duration || u_d <= raw.metrics.warmup.0 {
                return Err(cx.err(
                    u.span(),
                    "metrics.until",
                    format!(
                        "must lie after the warm-up ({}) and within the run ({})",
                        humantime::format_duration(raw.metrics.warmup.0),
                        humantime::format_duration(duration)
                    ),
                ));
            }
            u_d
        }
    };
    let bin = raw.metrics.bin.get_ref().0;
    if bin < Duration::from_millis(10) {
        return Err(cx.err(
            raw.metrics.bin.span(),
            "metrics.bin",
            "must be at least 10ms",
        ));
    }
    let load = match &raw.load {
        Some(l) => Some(load(cx, l.get_ref())?),
        None => None,
    };
    Ok(Scenario {
        name: raw.name.clone().unwrap_or_else(|| default_name.to_owned()),
        description: raw.description.clone(),
        duration,
        seed: raw.seed,
        backend: raw.backend,
        fallback: raw.kernel_fallback,
        hosts,
        forward,
        reverse,
        flows,
        bin,
        warmup: raw.metrics.warmup.0,
        until,
        load,
        source: cx.text.to_owned(),
    })
}

fn host(name: String, subnet: [u8; 2], net: u8, is_receiver: bool) -> Host {
    Host {
        name,
        addr: Ipv4Addr::new(subnet[0], subnet[1], net, 2),
        gateway: Ipv4Addr::new(subnet[0], subnet[1], net, 1),
        is_receiver,
    }
}

fn parse_subnet(s: &str) -> Result<[u8; 2], String> {
    let (addr, len) = s
        .split_once('/')
        .ok_or_else(|| format!("`{s}` is not an a.b.0.0/16 prefix"))?;
    let a: Ipv4Addr = addr
        .parse()
        .map_err(|_| format!("`{addr}` is not an IPv4 address"))?;
    if len != "16" {
        return Err(format!("prefix length must be 16, not {len}"));
    }
    let o = a.octets();
    if o[2] != 0 || o[3] != 0 {
        return Err(format!("`{s}` has host bits set"));
    }
    if !a.is_private() {
        return Err(format!("`{s}` is not a private (RFC 1918) range"));
    }
    Ok([o[0], o[1]])
}

fn link(
    cx: &Ctx<'_>,
    l: &RawLink,
    span: Range<usize>,
    name: &str,
    base: &Path,
) -> Result<(LinkSpec, ClassFlows), ScenarioError> {
    let given = [
        l.capacity.is_some(),
        l.schedule.is_some(),
        l.trace.is_some(),
    ]
    .iter()
    .filter(|b| **b)
    .count();
    if given != 1 {
        return Err(cx.err(
            span,
            &format!("{name}.capacity"),
            "give exactly one of `capacity`, `schedule` or `trace`",
        ));
    }
    let capacity = if let Some(c) = &l.capacity {
        CapacityConfig::constant(c.get_ref().0)
    } else if let Some(s) = &l.schedule {
        schedule(cx, s.get_ref(), s.span(), &format!("{name}.schedule"))?
    } else {
        let t = l.trace.as_ref().expect("exactly one capacity form is set");
        let path: PathBuf = base.join(t.get_ref());
        let field = format!("{name}.trace");
        let text = read_trace(&path).map_err(|e| {
            cx.err(
                t.span(),
                &field,
                format!("cannot read {}: {e}", path.display()),
            )
        })?;
        let mut ops = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let ms: u64 = line.parse().map_err(|_| {
                cx.err(
                    t.span(),
                    &field,
                    format!(
                        "{} line {}: `{line}` is not a millisecond count",
                        path.display(),
                        i + 1
                    ),
                )
            })?;
            if ops.last().is_some_and(|&p| ms < p) {
                return Err(cx.err(
                    t.span(),
                    &field,
                    format!("{} line {}: timestamps go backwards", path.display(), i + 1),
                ));
            }
            ops.push(ms);
        }
        if ops.is_empty() || ops.last() == Some(&0) {
            return Err(cx.err(t.span(), &field, "trace is empty"));
        }
        CapacityConfig::Trace {
            trace: MahimahiTrace::new(ops).map_err(|e| cx.err(t.span(), &field, e.to_string()))?,
        }
    };
    let delay = delay(cx, l, name)?;
    let loss = loss(cx, l.loss.as_ref(), &format!("{name}.loss"))?;
    let mut origin = Origin {
        file: cx.file.to_owned(),
        at: Default::default(),
    };
    origin.note(cx, name.to_owned(), span.start);
    for (field, at) in written_fields(l) {
        origin.note(cx, format!("{name}.{field}"), at);
    }
    let (qdisc, class_flows) = match &l.qdisc {
        Some(q) => qdisc(cx, q, name, capacity.mean_rate(), &mut origin)?,
        None => (QdiscConfig::default(), Vec::new()),
    };
    Ok((
        LinkSpec {
            capacity,
            delay,
            loss,
            qdisc,
            origin,
        },
        class_flows,
    ))
}

/// The fields of `l` that are written, with where.
fn written_fields(l: &RawLink) -> Vec<(&'static str, usize)> {
    [
        ("capacity", l.capacity.as_ref().map(Spanned::span)),
        ("schedule", l.schedule.as_ref().map(Spanned::span)),
        ("trace", l.trace.as_ref().map(Spanned::span)),
        ("delay", l.delay.as_ref().map(Spanned::span)),
        ("jitter", l.jitter.as_ref().map(Spanned::span)),
        ("reorder", l.reorder.as_ref().map(Spanned::span)),
        ("reorder_delay", l.reorder_delay.as_ref().map(Spanned::span)),
        ("duplicate", l.duplicate.as_ref().map(Spanned::span)),
        ("loss", l.loss.as_ref().map(Spanned::span)),
        ("qdisc", l.qdisc.as_ref().map(Spanned::span)),
    ]
    .into_iter()
    .filter_map(|(field, span)| Some((field, span?.start)))
    .collect()
}

/// HTB classes' scenario flows (`flows = ["cg"]`), by class name: netlab's one addition to
/// cg-link's qdisc config, turned into rules once the flows are known.
type ClassFlows = Vec<(String, Vec<String>)>;

/// The link's queue: cg-link's [`QdiscConfig`] as written (`{ kind = "codel", target =
/// "13ms" }`, every omitted field at its Linux default), checked against the link's mean
/// `rate`. An HTB class may also name scenario flows (`flows = ["cg"]`); they are taken out
/// here and become rules in [`with_flow_rules`]. Every key's place goes into `origin`, and a
/// mistake is reported at the key it concerns.
fn qdisc(
    cx: &Ctx<'_>,
    q: &Spanned<toml::Table>,
    name: &str,
    rate: Bitrate,
    origin: &mut Origin,
) -> Result<(QdiscConfig, ClassFlows), ScenarioError> {
    let field = format!("{name}.qdisc");
    let key_at = |key: &str| key_offset(cx.text, q.span(), key).unwrap_or(q.span().start);
    for key in q.get_ref().keys() {
        origin.note(cx, format!("{field}.{key}"), key_at(key));
    }
    let mut table = q.get_ref().clone();
    let mut class_flows = Vec::new();
    if table.get("kind").and_then(toml::Value::as_str) == Some("htb")
        && let Some(toml::Value::Array(classes)) = table.get_mut("classes")
    {
        for class in classes.iter_mut().filter_map(toml::Value::as_table_mut) {
            let Some(flows) = class.remove("flows") else {
                continue;
            };
            let flows: Vec<String> = flows.try_into().map_err(|_| {
                let at = key_at("flows");
                cx.err(
                    at..at,
                    &format!("{field}.classes.flows"),
                    "a list of flow names, such as [\"cg\"]",
                )
            })?;
            let class_name = class.get("name").and_then(toml::Value::as_str);
            class_flows.push((class_name.unwrap_or_default().to_owned(), flows));
        }
    }
    let config: QdiscConfig =
        toml::Value::Table(table.clone())
            .try_into()
            .map_err(|e: toml::de::Error| {
                // The qdisc is a tagged enum, so serde's error carries no key: the culprit is
                // `kind` if it fails alone, else the key that fails beside it alone (every
                // other field has a default).
                let fails = |keys: &[&str]| {
                    let t: toml::Table = keys
                        .iter()
                        .filter_map(|k| table.get_key_value(*k))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    toml::Value::Table(t).try_into::<QdiscConfig>().is_err()
                };
                let culprit = if fails(&["kind"]) {
                    Some("kind")
                } else {
                    table
                        .keys()
                        .map(String::as_str)
                        .filter(|k| *k != "kind")
                        .find(|k| fails(&["kind", k]))
                };
                let (field, at) = match culprit {
                    Some(k) => (format!("{field}.{k}"), key_at(k)),
                    None => (field.clone(), q.span().start),
                };
                cx.err(at..at, &field, e.message().trim().to_owned())
            })?;
    config
        .validate(LinkInfo::new(rate))
        .map_err(|e| cx.err(q.span(), &field, e.to_string()))?;
    Ok((config, class_flows))
}

/// Where `key = …` is first written in the table at `span`: an inline table's braces, or a
/// `[table]` section's body up to the next header.
fn key_offset(text: &str, span: Range<usize>, key: &str) -> Option<usize> {
    let start = span.start.min(text.len());
    let end = if text[start..].starts_with('{') {
        span.end.min(text.len())
    } else {
        let body = span.end.clamp(start, text.len());
        text[body..].find("\n[").map_or(text.len(), |i| body + i)
    };
    let text = &text[..end];
    let mut at = start;
    while let Some(i) = text[at..].find(key) {
        let start = at + i;
        let end = start + key.len();
        let ident = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
        let before_ok = !text[..start].chars().next_back().is_some_and(ident);
        let after = text[end..].trim_start_matches([' ', '\t']);
        if before_ok && after.starts_with('=') {
            return Some(start);
        }
        at = end;
    }
    None
}

/// `link` with its HTB classes' scenario flows compiled into rules, ahead of the rules
/// written in the file: a flow matches on its protocol and destination port (each flow has
/// its own port); a name matches the flow or every instance of it (`cg` → `cg-1`, `cg-2`).
fn with_flow_rules(
    (mut link, class_flows): (LinkSpec, ClassFlows),
    name: &str,
    flows: &[FlowSpec],
) -> Result<LinkSpec, ScenarioError> {
    let QdiscConfig::Htb(htb) = &mut link.qdisc else {
        return Ok(link);
    };
    let mut rules = Vec::new();
    for (class, names) in class_flows {
        for f in names {
            let matching: Vec<&FlowSpec> = flows
                .iter()
                .filter(|x| {
                    x.name == f
                        || x.name
                            .strip_prefix(f.as_str())
                            .is_some_and(|r| r.starts_with('-'))
                })
                .collect();
            if matching.is_empty() {
                return Err(link.origin.error(
                    &format!("{name}.qdisc.classes"),
                    format!("class `{class}` names flow `{f}`, which does not exist"),
                ));
            }
            rules.extend(matching.into_iter().map(|x| HtbRule {
                class: class.clone(),
                matches: HtbMatch {
                    dst_port: Some(x.port),
                    protocol: Some(Protocol(if x.kind == FlowKind::Tcp { 6 } else { 17 })),
                    ..HtbMatch::default()
                },
            }));
        }
    }
    rules.append(&mut htb.rules);
    htb.rules = rules;
    Ok(link)
}

/// `delay`, `jitter`, `reorder`, `reorder_delay`, `duplicate`.
fn delay(cx: &Ctx<'_>, l: &RawLink, name: &str) -> Result<DelayConfig, ScenarioError> {
    let field = |k: &str| format!("{name}.{k}");
    let time = |v: &Option<Spanned<units::Dur>>, k: &str| match v {
        None => Ok(Duration::ZERO),
        Some(d) if d.get_ref().0 > MAX_DELAY => Err(cx.err(
            d.span(),
            &field(k),
            format!(
                "{} is longer than {}: surely a typo",
                humantime::format_duration(d.get_ref().0),
                humantime::format_duration(MAX_DELAY)
            ),
        )),
        Some(d) => Ok(d.get_ref().0),
    };
    let mut c = DelayConfig {
        base: time(&l.delay, "delay")?,
        jitter: time(&l.jitter, "jitter")?,
        reorder: probability(cx, l.reorder.as_ref(), &field("reorder"), true)?,
        duplicate: probability(cx, l.duplicate.as_ref(), &field("duplicate"), true)?,
        ..DelayConfig::default()
    };
    if let Some(rd) = &l.reorder_delay {
        if c.reorder == 0.0 {
            return Err(cx.err(
                rd.span(),
                &field("reorder_delay"),
                "`reorder_delay` without `reorder`: set `reorder`, the probability that a packet is held back",
            ));
        }
        if rd.get_ref().0.is_zero() {
            return Err(cx.err(
                rd.span(),
                &field("reorder_delay"),
                "must be above zero (a packet held back by nothing is not reordered)",
            ));
        }
        c.reorder_delay = time(&l.reorder_delay, "reorder_delay")?;
    }
    Ok(c)
}

/// A probability field: in `[0, 1]` (`[0, 1)` unless `one_ok`); absent is 0.
fn probability(
    cx: &Ctx<'_>,
    v: Option<&Spanned<f64>>,
    field: &str,
    one_ok: bool,
) -> Result<f64, ScenarioError> {
    let Some(v) = v else { return Ok(0.0) };
    let p = *v.get_ref();
    let ok = if one_ok {
        (0.0..=1.0).contains(&p)
    } else {
        (0.0..1.0).contains(&p)
    };
    if ok {
        Ok(p)
    } else {
        Err(cx.err(
            v.span(),
            field,
            format!(
                "must be a probability in [0, 1{}, got {p}",
                if one_ok { "]" } else { ")" }
            ),
        ))
    }
}

/// `loss = 0.01`, `loss = { mean = 0.02, burst = 4 }`, `loss = { kind = "gilbert_elliott",
/// p = …, r = …, loss_good = …, loss_bad = … }` or `loss = { kind = "bernoulli", p = … }`.
fn loss(
    cx: &Ctx<'_>,
    l: Option<&Spanned<RawLoss>>,
    field: &str,
) -> Result<LossConfig, ScenarioError> {
    let Some(l) = l else {
        return Ok(LossConfig::None);
    };
    let m = match l.get_ref() {
        RawLoss::Bernoulli(p) => {
            let p = probability(cx, Some(&Spanned::new(l.span(), *p)), field, false)?;
            return Ok(if p > 0.0 {
                LossConfig::Bernoulli { p }
            } else {
                LossConfig::None
            });
        }
        RawLoss::Model(m) => m,
    };
    let sub = |k: &str| format!("{field}.{k}");
    let refuse = |fields: &[(&Option<Spanned<f64>>, &str)], why: &str| match fields
        .iter()
        .find_map(|(v, k)| v.as_ref().map(|v| (v.span(), *k)))
    {
        Some((span, k)) => Err(cx.err(span, &sub(k), why)),
        None => Ok(()),
    };
    let need = |v: &Option<Spanned<f64>>, k: &str, why: &str| {
        v.as_ref()
            .map(|v| (v.span(), *v.get_ref()))
            .ok_or_else(|| cx.err(l.span(), &sub(k), why))
    };
    let kind = m
        .kind
        .as_ref()
        .map_or(LossKind::GilbertElliott, |k| *k.get_ref());
    match kind {
        LossKind::Bernoulli => {
            refuse(
                &[
                    (&m.r, "r"),
                    (&m.loss_good, "loss_good"),
                    (&m.loss_bad, "loss_bad"),
                    (&m.mean, "mean"),
                    (&m.burst, "burst"),
                ],
                "belongs to `kind = \"gilbert_elliott\"`; a Bernoulli loss has only `p`",
            )?;
            need(&m.p, "p", "a Bernoulli loss needs `p`, its probability")?;
            let p = probability(cx, m.p.as_ref(), &sub("p"), false)?;
            Ok(if p > 0.0 {
                LossConfig::Bernoulli { p }
            } else {
                LossConfig::None
            })
        }
        LossKind::GilbertElliott if m.mean.is_some() || m.burst.is_some() => {
            refuse(
                &[
                    (&m.p, "p"),
                    (&m.r, "r"),
                    (&m.loss_good, "loss_good"),
                    (&m.loss_bad, "loss_bad"),
                ],
                "give either `mean` and `burst`, or `p` and `r` (with `loss_good` and `loss_bad`), not both",
            )?;
            let (mean_span, mean) =
                need(&m.mean, "mean", "`burst` needs `mean`, the mean loss ratio")?;
            let (burst_span, burst) = need(
                &m.burst,
                "burst",
                "`mean` needs `burst`, the mean length of a loss burst in packets",
            )?;
            if !(mean > 0.0 && mean < 1.0) {
                return Err(cx.err(
                    mean_span,
                    &sub("mean"),
                    format!("must be above 0 and below 1, got {mean}"),
                ));
            }
            if !(burst.is_finite() && burst >= 1.0) {
                return Err(cx.err(
                    burst_span,
                    &sub("burst"),
                    format!("must be at least 1 (packets), got {burst}"),
                ));
            }
            LossConfig::gilbert_elliott_mean_burst(mean, burst)
                .map_err(|e| cx.err(mean_span, &sub("mean"), e.to_string()))
        }
        LossKind::GilbertElliott => {
            let why = "a Gilbert-Elliott loss needs `p` and `r` (or `mean` and `burst`)";
            need(&m.p, "p", why)?;
            let (r_span, _) = need(&m.r, "r", why)?;
            let p = probability(cx, m.p.as_ref(), &sub("p"), true)?;
            let r = probability(cx, m.r.as_ref(), &sub("r"), true)?;
            if r == 0.0 {
                return Err(cx.err(
                    r_span,
                    &sub("r"),
                    "must be above zero: with r = 0 the Bad state never ends",
                ));
            }
            let loss_good = probability(cx, m.loss_good.as_ref(), &sub("loss_good"), true)?;
            let loss_bad = match &m.loss_bad {
                Some(_) => probability(cx, m.loss_bad.as_ref(), &sub("loss_bad"), true)?,
                None => 1.0,
            };
            let c = LossConfig::GilbertElliott {
                p,
                r,
                loss_good,
                loss_bad,
            };
            if c.mean_loss() >= 1.0 {
                return Err(cx.err(l.span(), field, "loses every packet (mean loss 1)"));
            }
            Ok(c)
        }
    }
}

/// A capacity schedule: rate steps and outages (`{ at = "60s", down = "2s" }`: zero from
/// `at`, then back to the rate in force before, unless a later step starts right then).
/// A trace file's text; a name ending in `.gz` is gunzipped (a 360 s cellular trace is
/// 8.6 MB as text, 0.7 MB compressed).
fn read_trace(path: &Path) -> std::io::Result<String> {
    if path.extension().is_some_and(|e| e == "gz") {
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut flate2::read::GzDecoder::new(std::fs::File::open(path)?),
            &mut text,
        )?;
        Ok(text)
    } else {
        std::fs::read_to_string(path)
    }
}

fn schedule(
    cx: &Ctx<'_>,
    steps: &[Spanned<RawCapacityStep>],
    span: Range<usize>,
    field: &str,
) -> Result<CapacityConfig, ScenarioError> {
    if steps.is_empty() {
        return Err(cx.err(span, field, "schedule is empty"));
    }
    let fmt = |d: Duration| humantime::format_duration(d).to_string();
    let mut out: Vec<(Duration, Bitrate)> = Vec::new();
    let mut up_rate = Bitrate::ZERO;
    // The outage in force: its start and end.
    let mut down: Option<(Duration, Duration)> = None;
    for (i, step) in steps.iter().enumerate() {
        let s = step.get_ref();
        let f = |k: &str| format!("{field}[{i}].{k}");
        let at = s.at.get_ref().0;
        if i == 0 && !at.is_zero() {
            return Err(cx.err(
                s.at.span(),
                &f("at"),
                "the first step must be `at = \"0s\"`",
            ));
        }
        if out.last().is_some_and(|(prev, _)| at <= *prev) {
            return Err(cx.err(s.at.span(), &f("at"), "step times must increase"));
        }
        if let Some((from, until)) = down.take() {
            if at < until {
                return Err(cx.err(
                    s.at.span(),
                    &f("at"),
                    format!(
                        "starts at {} inside the outage from {} to {}",
                        fmt(at),
                        fmt(from),
                        fmt(until)
                    ),
                ));
            }
            if until < at {
                out.push((until, up_rate));
            }
        }
        match (&s.rate, &s.down) {
            (Some(r), None) => {
                up_rate = r.get_ref().0;
                out.push((at, up_rate));
            }
            (None, Some(d)) => {
                let len = d.get_ref().0;
                if i == 0 {
                    return Err(cx.err(
                        d.span(),
                        &f("down"),
                        "the link must be up at 0s (netlab measures the RTT through it before \
                         the run starts); start the outage later",
                    ));
                }
                if len.is_zero() || len > MAX_OUTAGE {
                    return Err(cx.err(
                        d.span(),
                        &f("down"),
                        format!("must be above zero and at most one day, got {}", fmt(len)),
                    ));
                }
                let Some(end) = at.checked_add(len) else {
                    return Err(cx.err(d.span(), &f("down"), "the outage ends beyond any run"));
                };
                out.push((at, Bitrate::ZERO));
                down = Some((at, end));
            }
            (Some(_), Some(d)) => {
                return Err(cx.err(d.span(), &f("down"), "give `rate` or `down`, not both"));
            }
            (None, None) => {
                return Err(cx.err(
                    step.span(),
                    &format!("{field}[{i}]"),
                    "a step needs `rate` (a new capacity) or `down` (an outage, e.g. \"2s\")",
                ));
            }
        }
    }
    if let Some((_, until)) = down {
        out.push((until, up_rate));
    }
    // cg-link's steps hold for a duration; the last holds for ever.
    let steps = out
        .iter()
        .enumerate()
        .map(|(i, (at, rate))| RateStep {
            duration: out
                .get(i + 1)
                .map_or(Duration::from_secs(1), |(next, _)| *next - *at),
            rate: *rate,
        })
        .collect();
    Ok(CapacityConfig::Schedule {
        steps,
        repeat: false,
    })
}

fn flow_instances(
    cx: &Ctx<'_>,
    idx: usize,
    f: &Spanned<RawFlow>,
    hosts: &[Host],
    duration: Duration,
    out: &mut Vec<FlowSpec>,
) -> Result<(), ScenarioError> {
    let r = f.get_ref();
    let field = |k: &str| format!("flows[{idx}].{k}");
    let find = |h: &Option<Spanned<String>>, key: &str| -> Result<usize, ScenarioError> {
        let h = h.as_ref().ok_or_else(|| {
            cx.err(
                f.span(),
                &field(key),
                format!("flow `{}` has no `{key}` endpoint", r.name.get_ref()),
            )
        })?;
        hosts
            .iter()
            .position(|x| &x.name == h.get_ref())
            .ok_or_else(|| {
                let names: Vec<_> = hosts.iter().map(|h| h.name.as_str()).collect();
                cx.err(
                    h.span(),
                    &field(key),
                    format!("no host `{}` (hosts: {})", h.get_ref(), names.join(", ")),
                )
            })
    };
    let from = find(&r.from, "from")?;
    let to = find(&r.to, "to")?;
    let direction = match (hosts[from].is_receiver, hosts[to].is_receiver) {
        (false, true) => Direction::Forward,
        (true, false) => Direction::Reverse,
        _ => {
            return Err(cx.err(
                r.to.as_ref().map_or(f.span(), Spanned::span),
                &field("to"),
                "a flow must cross the bottleneck: from a sender (s*) to a receiver (r*) or back",
            ));
        }
    };
    let stop = r.stop.as_ref().map_or(duration, |s| s.get_ref().0);
    if stop <= r.start.0 {
        return Err(cx.err(
            r.stop.as_ref().map_or(f.span(), Spanned::span),
            &field("stop"),
            "stop must be after start",
        ));
    }
    if stop > duration {
        return Err(cx.err(
            r.stop.as_ref().map_or(f.span(), Spanned::span),
            &field("stop"),
            "stop is after the end of the run",
        ));
    }
    let on_off = match (&r.on, &r.off) {
        (None, None) => None,
        (Some(on), Some(off)) => {
            if on.get_ref().0.is_zero() {
                return Err(cx.err(on.span(), &field("on"), "must be above zero"));
            }
            Some((on.get_ref().0, off.get_ref().0))
        }
        (Some(s), None) | (None, Some(s)) => {
            return Err(cx.err(s.span(), &field("on"), "give both `on` and `off`"));
        }
    };
    let mut rate_steps = Vec::new();
    if let Some(rate) = &r.rate {
        rate_steps.push((Duration::ZERO, rate.get_ref().0));
    }
    if let Some(steps) = &r.rate_steps {
        for s in steps {
            rate_steps.push((s.at.0, s.rate.0));
        }
        if rate_steps.windows(2).any(|w| w[1].0 <= w[0].0) {
            return Err(cx.err(f.span(), &field("rate_steps"), "step times must increase"));
        }
    }
    let kind = *r.kind.get_ref();
    if kind == FlowKind::Udp && rate_steps.is_empty() {
        return Err(cx.err(f.span(), &field("rate"), "a UDP flow needs a `rate`"));
    }
    let size = r.size.as_ref().map_or(1200, |s| *s.get_ref());
    if !(16..=1472).contains(&size) {
        let span = r.size.as_ref().map_or(f.span(), Spanned::span);
        return Err(cx.err(span, &field("size"), "UDP payload must be 16 to 1472 bytes"));
    }
    if r.webrtc != WebRtcMode::Off && kind != FlowKind::Cg {
        return Err(cx.err(
            f.span(),
            &field("webrtc"),
            "only cg flows have a WebRTC mode",
        ));
    }
    let count = *r.count.get_ref();
    if count == 0 || count > 1000 {
        return Err(cx.err(r.count.span(), &field("count"), "must be 1 to 1000"));
    }
    for i in 0..count {
        let name = if count == 1 {
            r.name.get_ref().clone()
        } else {
            format!("{}-{}", r.name.get_ref(), i + 1)
        };
        if out.iter().any(|o: &FlowSpec| o.name == name) {
            return Err(cx.err(
                r.name.span(),
                &field("name"),
                format!("duplicate flow name `{name}`"),
            ));
        }
        let port = BASE_PORT + out.len() as u16;
        let chromium_pair = |o: &FlowSpec| {
            o.kind != FlowKind::Tcp && o.from == from && o.to == to && o.direction == direction
        };
        if (r.webrtc == WebRtcMode::Chromium && (count > 1 || out.iter().any(chromium_pair)))
            || out.iter().any(|o| {
                o.webrtc == WebRtcMode::Chromium && chromium_pair(o) && kind != FlowKind::Tcp
            })
        {
            return Err(cx.err(
                f.span(),
                &field("webrtc"),
                "a Chromium viewer's flow must be the only UDP flow between its two hosts \
                 (Chromium picks its own port, so the metrics tell its flow by the host pair)",
            ));
        }
        out.push(FlowSpec {
            name,
            kind,
            from,
            to,
            direction,
            start: r.start.0,
            stop,
            on_off,
            cc: r.cc.unwrap_or_default(),
            tcp_ecn: r.tcp_ecn,
            rate_steps: rate_steps.clone(),
            size,
            ecn: r.ecn,
            port,
            controller: r.controller.clone().unwrap_or_else(|| "gcc".to_owned()),
            send_args: r.send_args.clone(),
            recv_args: r.recv_args.clone(),
            webrtc: r.webrtc,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Scenario, ScenarioError> {
        Scenario::parse(text, "t.toml", "t", Path::new("."))
    }

    const OK: &str = r#"
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

    #[test]
    fn a_valid_scenario_is_checked_into_flows_and_hosts() {
        let s = parse(OK).unwrap();
        assert_eq!(s.hosts.len(), 2);
        assert_eq!(s.flows[0].direction, Direction::Forward);
        assert_eq!(s.flows[0].stop, Duration::from_secs(10));
        assert_eq!(s.forward.delay.base, Duration::from_millis(25));
        assert_eq!(s.reverse.delay.base, Duration::from_millis(25));
    }

    #[test]
    fn unknown_qdisc_names_file_line_and_field() {
        let e = parse(&OK.replace("\"droptail\"", "\"fifo9\"")).unwrap_err();
        assert_eq!(e.file, "t.toml");
        assert_eq!(e.line, 6, "{e}");
        assert_eq!(e.field, "forward.qdisc.kind", "{e}");
        assert!(e.message.contains("fifo9"), "{e}");
    }

    #[test]
    fn a_qdisc_mistake_names_the_key_it_is_in() {
        let bad = |qdisc: &str| {
            parse(&OK.replace("qdisc = { kind = \"droptail\", limit = \"300ms\" }", qdisc))
                .unwrap_err()
        };
        let e = bad("qdisc = { kind = \"codel\", target = \"soon\" }");
        assert_eq!(
            (e.line, e.column, e.field.as_str()),
            (6, 27, "forward.qdisc.target"),
            "{e}"
        );
        let e = bad("[forward.qdisc]\nkind = \"codel\"\ninterval = \"100ms\"\nlimit = \"300ms\"");
        assert_eq!(
            (e.line, e.field.as_str()),
            (9, "forward.qdisc.limit"),
            "{e}"
        );
        let e = bad("qdisc = { kind = \"pie\", targett = \"20ms\" }");
        assert!(e.message.contains("unknown field `targett`"), "{e}");
        assert_eq!(e.line, 6, "{e}");
        let e = bad("qdisc = { target = \"5ms\" }");
        assert_eq!((e.line, e.field.as_str()), (6, "forward.qdisc.kind"), "{e}");
        // cg-link's own checks run at load, at the qdisc.
        let e = bad("qdisc = { kind = \"codel\", interval = \"0s\" }");
        assert_eq!((e.line, e.field.as_str()), (6, "forward.qdisc"), "{e}");
    }

    #[test]
    fn htb_classes_name_flows_that_become_rules_before_the_written_ones() {
        let htb = r#"[forward.qdisc]
kind = "htb"
default_class = "be"
rules = [ { class = "be", dscp = 46 } ]
[[forward.qdisc.classes]]
name = "cg"
rate = "1Mbit"
flows = ["u"]
[[forward.qdisc.classes]]
name = "be"
rate = "1Mbit"
"#;
        let text = OK.replace("qdisc = { kind = \"droptail\", limit = \"300ms\" }\n", "") + htb;
        let s = parse(&text).unwrap();
        let QdiscConfig::Htb(h) = &s.forward.qdisc else {
            panic!("{:?}", s.forward.qdisc)
        };
        assert_eq!(h.rules.len(), 2);
        assert_eq!(h.rules[0].class, "cg");
        assert_eq!(h.rules[0].matches.dst_port, Some(s.flows[0].port));
        assert_eq!(h.rules[0].matches.protocol, Some(Protocol(17)));
        assert_eq!(h.rules[1].class, "be");
        let e = parse(&text.replace("flows = [\"u\"]", "flows = [\"v\"]")).unwrap_err();
        assert!(e.message.contains("flow `v`, which does not exist"), "{e}");
        assert!(e.field.starts_with("forward.qdisc.classes"), "{e}");
        let e =
            parse(&text.replace("default_class = \"be\"", "default_class = \"x\"")).unwrap_err();
        assert_eq!(e.field, "forward.qdisc", "{e}");
    }

    #[test]
    fn negative_rate_names_its_line() {
        let e = parse(&OK.replace("\"1Mbit\"", "\"-1Mbit\"")).unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (4, "capacity"), "{e}");
        assert!(e.message.contains("negative"), "{e}");
    }

    #[test]
    fn flow_without_endpoints_is_rejected() {
        let e = parse(&OK.replace("from = \"s1\"\n", "")).unwrap_err();
        assert_eq!(e.field, "flows[0].from", "{e}");
        assert_eq!(e.line, 7, "{e}");
    }

    #[test]
    fn unknown_host_is_rejected() {
        let e = parse(&OK.replace("to = \"r1\"", "to = \"r7\"")).unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (11, "flows[0].to"), "{e}");
    }

    #[test]
    fn clashing_addresses_are_rejected() {
        let text = format!(
            "{OK}\n[topology]\nsenders = 2\n[topology.addresses]\ns1 = \"10.77.1.5\"\ns2 = \"10.77.1.6\"\n"
        );
        let e = parse(&text).unwrap_err();
        assert!(e.field.starts_with("topology.addresses.s2"), "{e}");
        assert!(e.message.contains("not a host address"), "{e}");
        let text = format!("{OK}\n[topology]\nsubnet = \"8.8.0.0/16\"\n");
        let e = parse(&text).unwrap_err();
        assert_eq!(e.field, "topology.subnet", "{e}");
    }

    #[test]
    fn unknown_field_is_named() {
        let e = parse(&OK.replace("delay =", "dleay =")).unwrap_err();
        assert_eq!(e.line, 5, "{e}");
        assert!(e.message.contains("dleay"), "{e}");
    }

    #[test]
    fn count_expands_to_named_instances_with_unique_ports() {
        let s = parse(&OK.replace("rate = \"2Mbit\"", "rate = \"2Mbit\"\ncount = 3")).unwrap();
        let names: Vec<_> = s.flows.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["u-1", "u-2", "u-3"]);
        assert_eq!(s.flows[2].port, BASE_PORT + 2);
    }

    #[test]
    fn a_load_section_is_checked_with_its_defaults() {
        assert_eq!(parse(OK).unwrap().load, None);
        let s = parse(&format!("{OK}[load]\n")).unwrap();
        assert_eq!(
            s.load,
            Some(Load {
                hogs: 2,
                nice: 19,
                duty: 1.0,
                endpoint_nice: 0
            })
        );
        let s = parse(&format!(
            "{OK}[load]\nhogs = 1\nnice = 5\nduty = 0.5\nendpoint_nice = -5\n"
        ))
        .unwrap();
        assert_eq!(
            s.load.map(|l| (l.hogs, l.nice, l.duty, l.endpoint_nice)),
            Some((1, 5, 0.5, -5))
        );
        for (bad, field) in [
            ("hogs = 0", "load.hogs"),
            ("nice = 20", "load.nice"),
            ("duty = 0.0", "load.duty"),
            ("duty = 1.5", "load.duty"),
            ("endpoint_nice = -21", "load.endpoint_nice"),
        ] {
            let e = parse(&format!("{OK}[load]\n{bad}\n")).unwrap_err();
            assert_eq!(e.field, field, "{bad}: {e}");
            assert!(e.line > 0, "{bad}: {e} has a location");
        }
        assert!(parse(&format!("{OK}[load]\nhog = 2\n")).is_err());
    }

    #[test]
    fn the_metrics_window_may_end_before_the_run() {
        let s = parse(&format!("{OK}[metrics]\nwarmup = \"2s\"\nuntil = \"8s\"\n")).unwrap();
        assert_eq!(
            (s.warmup, s.until),
            (Duration::from_secs(2), Duration::from_secs(8))
        );
        assert_eq!(parse(OK).unwrap().until, parse(OK).unwrap().duration);
        for bad in ["until = \"11s\"", "warmup = \"5s\"\nuntil = \"5s\""] {
            let e = parse(&format!("{OK}[metrics]\n{bad}\n")).unwrap_err();
            assert_eq!(e.field, "metrics.until", "{e}");
        }
    }

    #[test]
    fn mahimahi_traces_are_read_relative_to_the_scenario() {
        let dir = std::env::temp_dir().join(format!("netlab-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // 12 Mb/s: one 1500-byte opportunity per ms.
        let ops: String = (1..=1000).map(|i| format!("{i}\n")).collect();
        std::fs::write(dir.join("12mbit.trace"), &ops).unwrap();
        std::fs::write(dir.join("empty.trace"), "\n").unwrap();
        let text = OK.replace("capacity = \"1Mbit\"", "trace = \"12mbit.trace\"");
        let s = Scenario::parse(&text, "t.toml", "t", &dir).unwrap();
        assert!(
            matches!(s.forward.capacity, CapacityConfig::Trace { ref trace } if trace.millis().len() == 1000)
        );
        assert_eq!(
            s.forward.capacity.rate_at(Duration::ZERO),
            Bitrate::mbps(12)
        );
        // Gzipped: the same trace.
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut gz, ops.as_bytes()).unwrap();
        std::fs::write(dir.join("12mbit.trace.gz"), gz.finish().unwrap()).unwrap();
        let text = OK.replace("capacity = \"1Mbit\"", "trace = \"12mbit.trace.gz\"");
        let s = Scenario::parse(&text, "t.toml", "t", &dir).unwrap();
        assert_eq!(
            s.forward.capacity.rate_at(Duration::ZERO),
            Bitrate::mbps(12)
        );
        // Not gzip although named so: a clear error on the field.
        std::fs::write(dir.join("bad.trace.gz"), "1\n2\n").unwrap();
        let bad = OK.replace("capacity = \"1Mbit\"", "trace = \"bad.trace.gz\"");
        let e = Scenario::parse(&bad, "t.toml", "t", &dir).unwrap_err();
        assert!(
            e.field == "forward.trace" && e.message.contains("cannot read"),
            "{e}"
        );
        let bad = OK.replace("capacity = \"1Mbit\"", "trace = \"empty.trace\"");
        let e = Scenario::parse(&bad, "t.toml", "t", &dir).unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (4, "forward.trace"), "{e}");
        let both = OK.replace(
            "capacity = \"1Mbit\"",
            "capacity = \"1Mbit\"\ntrace = \"x\"",
        );
        let e = Scenario::parse(&both, "t.toml", "t", &dir).unwrap_err();
        assert!(e.message.contains("exactly one"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }

    /// `OK` with `lines` added to `[forward]` after its delay (so they start on line 6).
    fn forward_with(lines: &str) -> String {
        OK.replace(
            "delay = \"25ms\"\n",
            &format!("delay = \"25ms\"\n{lines}\n"),
        )
    }

    /// The error of `OK` with `lines` added to `[forward]`.
    fn refused(lines: &str) -> ScenarioError {
        parse(&forward_with(lines)).expect_err(lines)
    }

    #[test]
    fn every_impairment_is_read_per_direction_into_cg_link_configs() {
        let text = format!(
            "{}\n[reverse]\ncapacity = \"10Mbit\"\ndelay = \"5ms\"\njitter = \"1ms\"\nloss = 0.01\n",
            forward_with(
                "jitter = \"2ms\"\nreorder = 0.01\nreorder_delay = \"20ms\"\nduplicate = 0.02\n\
                 loss = { kind = \"gilbert_elliott\", p = 0.005, r = 0.25, loss_good = 0, loss_bad = 1 }"
            )
        );
        let s = parse(&text).unwrap();
        assert_eq!(
            s.forward.delay,
            DelayConfig {
                base: Duration::from_millis(25),
                jitter: Duration::from_millis(2),
                reorder: 0.01,
                reorder_delay: Duration::from_millis(20),
                duplicate: 0.02,
            }
        );
        assert_eq!(
            s.forward.loss,
            LossConfig::GilbertElliott {
                p: 0.005,
                r: 0.25,
                loss_good: 0.0,
                loss_bad: 1.0
            }
        );
        assert_eq!(s.reverse.delay.base, Duration::from_millis(5));
        assert_eq!(s.reverse.delay.jitter, Duration::from_millis(1));
        assert_eq!(s.reverse.delay.reorder, 0.0);
        assert_eq!(s.reverse.loss, LossConfig::Bernoulli { p: 0.01 });
    }

    #[test]
    fn omitted_impairments_are_none_and_reorder_delay_defaults_to_10ms() {
        let s = parse(OK).unwrap();
        assert_eq!(
            s.forward.delay,
            DelayConfig::fixed(Duration::from_millis(25))
        );
        assert_eq!(s.forward.loss, LossConfig::None);
        // The default reverse path copies the forward base delay, not its impairments.
        let s = parse(&forward_with("jitter = \"3ms\"\nreorder = 0.1\nloss = 0.1")).unwrap();
        assert_eq!(s.forward.delay.reorder_delay, Duration::from_millis(10));
        assert_eq!(
            s.reverse.delay,
            DelayConfig::fixed(Duration::from_millis(25))
        );
        assert_eq!(s.reverse.loss, LossConfig::None);
    }

    #[test]
    fn loss_is_a_probability_or_a_model_table() {
        let loss = |l: &str| {
            parse(&forward_with(&format!("loss = {l}")))
                .unwrap()
                .forward
                .loss
        };
        assert_eq!(loss("0.02"), LossConfig::Bernoulli { p: 0.02 });
        assert_eq!(loss("0"), LossConfig::None);
        assert_eq!(
            loss("{ kind = \"bernoulli\", p = 0.03 }"),
            LossConfig::Bernoulli { p: 0.03 }
        );
        // loss_good and loss_bad default to 0 and 1; integers are accepted as probabilities.
        assert_eq!(
            loss("{ kind = \"gilbert_elliott\", p = 0.01, r = 1 }"),
            LossConfig::GilbertElliott {
                p: 0.01,
                r: 1.0,
                loss_good: 0.0,
                loss_bad: 1.0
            }
        );
        // Mean loss and burst length: r = 1/burst, p = r·mean/(1 − mean).
        let LossConfig::GilbertElliott {
            p,
            r,
            loss_good,
            loss_bad,
        } = loss("{ mean = 0.02, burst = 4 }")
        else {
            panic!("not Gilbert-Elliott")
        };
        assert_eq!((r, loss_good, loss_bad), (0.25, 0.0, 1.0));
        assert!((p - 0.25 * 0.02 / 0.98).abs() < 1e-12, "{p}");
    }

    /// `(line, field, part of the message)` of the error for `lines` in `[forward]`.
    fn check_refused(lines: &str, line: usize, field: &str, says: &str) {
        let e = refused(lines);
        assert_eq!(e.file, "t.toml");
        assert_eq!((e.line, e.field.as_str()), (line, field), "{lines}: {e}");
        assert!(e.message.contains(says), "{lines}: {e}");
        assert!(e.to_string().starts_with(&format!("t.toml:{line}:")), "{e}");
    }

    #[test]
    fn out_of_range_delays_and_probabilities_are_refused_with_file_line_and_field() {
        check_refused("jitter = \"-1ms\"", 6, "jitter", "negative");
        check_refused("jitter = \"11s\"", 6, "forward.jitter", "longer than 10s");
        check_refused("\n\ndelay2 = 1", 8, "delay2", "unknown field");
        check_refused("reorder = 1.5", 6, "forward.reorder", "[0, 1]");
        check_refused("reorder = -0.1", 6, "forward.reorder", "[0, 1]");
        check_refused("duplicate = nan", 6, "forward.duplicate", "got NaN");
        check_refused(
            "reorder_delay = \"20ms\"",
            6,
            "forward.reorder_delay",
            "without `reorder`",
        );
        check_refused(
            "reorder = 0.1\nreorder_delay = \"0s\"",
            7,
            "forward.reorder_delay",
            "above zero",
        );
        check_refused(
            "reorder = 0.1\nreorder_delay = \"1h\"",
            7,
            "forward.reorder_delay",
            "longer than",
        );
        check_refused("jiter = \"1ms\"", 6, "jiter", "unknown field");
        let e = parse(&OK.replace("delay = \"25ms\"", "delay = \"2min\"")).unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (5, "forward.delay"), "{e}");
    }

    #[test]
    fn bad_loss_models_are_refused_with_file_line_and_field() {
        check_refused("loss = 1.0", 6, "forward.loss", "[0, 1)");
        check_refused("loss = -0.5", 6, "forward.loss", "[0, 1)");
        check_refused(
            "loss = \"lots\"",
            6,
            "loss",
            "a loss probability such as 0.01",
        );
        check_refused(
            "loss = { kind = \"gilbert_elliott\", p = 0.1 }",
            6,
            "forward.loss.r",
            "needs `p` and `r`",
        );
        check_refused(
            "loss = { p = 0.1, r = 0 }",
            6,
            "forward.loss.r",
            "never ends",
        );
        check_refused("loss = { p = 1.2, r = 0.5 }", 6, "forward.loss.p", "[0, 1]");
        check_refused(
            "loss = { p = 0.1, r = 0.5, loss_bad = 2 }",
            6,
            "forward.loss.loss_bad",
            "[0, 1]",
        );
        check_refused(
            "loss = { p = 0.1, r = 0.5, loss_good = 1 }",
            6,
            "forward.loss",
            "every packet",
        );
        check_refused(
            "loss = { mean = 0.02 }",
            6,
            "forward.loss.burst",
            "`mean` needs `burst`",
        );
        check_refused(
            "loss = { burst = 3 }",
            6,
            "forward.loss.mean",
            "`burst` needs `mean`",
        );
        check_refused(
            "loss = { mean = 0.02, burst = 0.5 }",
            6,
            "forward.loss.burst",
            "at least 1",
        );
        check_refused(
            "loss = { mean = 1, burst = 4 }",
            6,
            "forward.loss.mean",
            "below 1",
        );
        check_refused(
            "loss = { mean = 0.9, burst = 2 }",
            6,
            "forward.loss.mean",
            "at most burst/(burst + 1) = 0.667",
        );
        check_refused(
            "loss = { mean = 0.02, burst = 4, p = 0.1 }",
            6,
            "forward.loss.p",
            "not both",
        );
        check_refused(
            "loss = { kind = \"bernoulli\", p = 0.1, r = 0.3 }",
            6,
            "forward.loss.r",
            "only `p`",
        );
        check_refused(
            "loss = { kind = \"markov\" }",
            6,
            "kind",
            "unknown variant `markov`",
        );
        check_refused(
            "loss = { mean = 0.02, burst = 4, brust = 1 }",
            6,
            "brust",
            "unknown field `brust`",
        );
    }

    /// `OK` with a forward schedule of `steps` (one per line, from line 5) for its capacity.
    fn with_schedule(steps: &[&str]) -> String {
        OK.replace(
            "capacity = \"1Mbit\"",
            &format!("schedule = [\n{}\n]", steps.join(",\n")),
        )
    }

    #[test]
    fn outages_in_a_schedule_go_to_zero_and_come_back_at_the_rate_before() {
        let s = parse(&with_schedule(&[
            "{ at = \"0s\", rate = \"2Mbit\" }",
            "{ at = \"4s\", down = \"2s\" }",
            "{ at = \"8s\", rate = \"1Mbit\" }",
            "{ at = \"9s\", down = \"500ms\" }",
            "{ at = \"9500ms\", down = \"1s\" }",
        ]))
        .unwrap();
        let sec = Duration::from_secs_f64;
        let step = |secs: f64, mbps: u64| RateStep {
            duration: sec(secs),
            rate: Bitrate::mbps(mbps),
        };
        assert_eq!(
            s.forward.capacity,
            CapacityConfig::Schedule {
                steps: vec![
                    step(4.0, 2),
                    step(2.0, 0),
                    step(2.0, 2),
                    step(1.0, 1),
                    step(0.5, 0),
                    step(1.0, 0),
                    step(1.0, 1),
                ],
                repeat: false,
            }
        );
        assert_eq!(s.forward.capacity.rate_at(sec(5.0)), Bitrate::ZERO);
        // 2 Mb/s × 6 s + 1 Mb/s × 1 s, nothing in the outages.
        let bits = s.forward.capacity.bits_between(sec(0.0), sec(10.0));
        assert!((bits - 13e6).abs() < 1.0, "{bits}");
        // An outage ending where the next step starts needs no return step.
        let s = parse(&with_schedule(&[
            "{ at = \"0s\", rate = \"2Mbit\" }",
            "{ at = \"4s\", down = \"2s\" }",
            "{ at = \"6s\", rate = \"1Mbit\" }",
        ]))
        .unwrap();
        let CapacityConfig::Schedule { steps, .. } = &s.forward.capacity else {
            panic!()
        };
        assert_eq!(steps.len(), 3);
    }

    #[test]
    fn bad_outages_are_refused_with_file_line_and_field() {
        // The steps are refused at `line`, naming `field`, with a message containing `says`.
        let refused = |steps: &[&str], line: usize, field: &str, says: &str| {
            let e = parse(&with_schedule(steps)).unwrap_err();
            assert_eq!((e.line, e.field.as_str()), (line, field), "{e}");
            assert!(e.message.contains(says), "{e}");
        };
        let up = "{ at = \"0s\", rate = \"2Mbit\" }";
        refused(
            &["{ at = \"0s\", down = \"2s\" }"],
            5,
            "forward.schedule[0].down",
            "must be up at 0s",
        );
        refused(
            &[up, "{ at = \"4s\", down = \"2s\", rate = \"1Mbit\" }"],
            6,
            "forward.schedule[1].down",
            "not both",
        );
        refused(&[up, "{ at = \"4s\" }"], 6, "forward.schedule[1]", "`down`");
        refused(
            &[up, "{ at = \"4s\", down = \"0s\" }"],
            6,
            "forward.schedule[1].down",
            "above zero",
        );
        refused(
            &[
                up,
                "{ at = \"4s\", down = \"2s\" }",
                "{ at = \"5s\", rate = \"1Mbit\" }",
            ],
            7,
            "forward.schedule[2].at",
            "inside the outage from 4s to 6s",
        );
        // A zero rate points to `down`.
        refused(&[up, "{ at = \"4s\", rate = \"0\" }"], 6, "rate", "down = ");
        // An outage whose end does not fit in a duration is refused, not a panic.
        refused(
            &[up, "{ at = \"18446744073709551615s\", down = \"1day\" }"],
            6,
            "forward.schedule[1].down",
            "beyond any run",
        );
        let e = parse(&with_schedule(&[
            up,
            "{ at = \"4s\", down = \"2s\", up = true }",
        ]))
        .unwrap_err();
        assert!(e.message.contains("unknown field `up`"), "{e}");
    }
}
