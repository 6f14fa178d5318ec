//! The kernel backend: real `tc` qdiscs on the router's egress veths, where the kernel has
//! them. Availability is found by probing (adding each qdisc kind to a scratch veth), never
//! assumed: on the project's machines only pfifo/bfifo/tbf/htb exist, so propagation delay
//! (netem) and the AQMs are missing and a scenario asking for them stops with a clear message
//! or falls back to the emulator (`kernel_fallback = "emulated"`).
//!
//! Mapping: capacity → `tbf rate R burst B` at the root; the scenario's queue becomes tbf's
//! child (`pfifo limit N` / `bfifo limit B` for DropTail, or the AQM's own kind with every
//! parameter of the scenario's cg-link config, given or defaulted, so both backends run the
//! same values; one `tc` cannot take is refused with the scenario's file, line and field);
//! one-way delay → `netem delay D` as the child of the queue... which needs netem, as does
//! random loss (`loss P%`, Gilbert-Elliott as `loss gemodel p r 1-h 1-k`).
//! tbf counts Ethernet bytes (IP + 14), as the papers' testbeds did.
//!
//! What netem would do differently from cg-link is refused by field name rather than mapped
//! to something else: `jitter` (netem's jitter reorders packets; cg-link's never does),
//! `reorder` (netem sends the chosen packets at once instead of holding them back
//! `reorder_delay`), `duplicate` (netem queues its copy again at the root qdisc, so the copy
//! would take tbf capacity; cg-link's is made after serialisation), capacity schedules
//! (with their outages) and traces.

use std::collections::BTreeSet;
use std::time::Duration;

use cg_link::qdisc::{LinkInfo, QdiscConfig, QueueLimit};
use cg_link::{CapacityConfig, LossConfig};

use crate::scenario::LinkSpec;
use crate::sys::run;
use crate::{Error, Result};

/// Qdisc kinds probed.
pub const KINDS: &[&str] = &[
    "pfifo", "bfifo", "tbf", "htb", "netem", "codel", "pie", "fq_codel", "sfq", "dualpi2",
];

/// Kinds the kernel accepts, found by trying each on a scratch veth in namespace `ns`.
pub fn probe(ns: &str) -> Result<BTreeSet<String>> {
    run(
        "ip",
        &[
            "-n", ns, "link", "add", "kprobe0", "type", "veth", "peer", "name", "kprobe1",
        ],
    )?;
    let mut ok = BTreeSet::new();
    for kind in KINDS {
        let args: Vec<&str> = match *kind {
            "tbf" => vec!["tbf", "rate", "1mbit", "burst", "10kb", "latency", "50ms"],
            "htb" => vec!["htb", "default", "1"],
            k => vec![k],
        };
        let mut cmd = vec![
            "-n", ns, "qdisc", "add", "dev", "kprobe0", "root", "handle", "1:",
        ];
        cmd.extend(args);
        if run("tc", &cmd).is_ok() {
            ok.insert((*kind).to_owned());
            run("tc", &["-n", ns, "qdisc", "del", "dev", "kprobe0", "root"]).ok();
        }
    }
    run("ip", &["-n", ns, "link", "del", "kprobe0"]).ok();
    Ok(ok)
}

/// The `tc` command lines (without `tc -n NS`) that build `spec` (the `name` direction:
/// `forward`, `reverse`) on `dev`, or what is missing or cannot be expressed, placed at the
/// field's file and line.
pub fn plan(
    spec: &LinkSpec,
    name: &str,
    dev: &str,
    have: &BTreeSet<String>,
) -> Result<Vec<Vec<String>>> {
    let need = |k: &str| -> Result<()> {
        if have.contains(k) {
            Ok(())
        } else {
            Err(Error::KernelMissing(format!(
                "this kernel has no `{k}` qdisc (available: {})",
                have.iter().cloned().collect::<Vec<_>>().join(", ")
            )))
        }
    };
    let refuse = |field: &str, why: &str| -> Error {
        let e = spec.origin.error(
            &format!("{name}.{field}"),
            format!("{why}; the emulated backend takes it"),
        );
        Error::KernelMissing(e.to_string())
    };
    let rate = match spec.capacity {
        CapacityConfig::Constant { rate } => rate,
        CapacityConfig::Schedule { .. } => {
            return Err(refuse(
                "schedule",
                "netlab does not change tbf's rate during a run (nor take the link down)",
            ));
        }
        CapacityConfig::Trace { .. } => return Err(refuse("trace", "tc has no trace-driven rate")),
        _ => return Err(refuse("capacity", "tbf needs a rate")),
    };
    let d = &spec.delay;
    if !d.jitter.is_zero() {
        return Err(refuse(
            "jitter",
            "netem's jitter reorders packets, cg-link's never does",
        ));
    }
    if d.reorder > 0.0 {
        return Err(refuse(
            "reorder",
            "netem's reorder sends the chosen packets at once rather than holding them back `reorder_delay`",
        ));
    }
    if d.duplicate > 0.0 {
        return Err(refuse(
            "duplicate",
            "netem queues its copy again at the root qdisc, where it would take tbf capacity",
        ));
    }
    let loss: Vec<String> = match spec.loss {
        LossConfig::None => Vec::new(),
        LossConfig::Bernoulli { p } => vec!["loss".into(), percent(p)],
        LossConfig::GilbertElliott {
            p,
            r,
            loss_good,
            loss_bad,
        } => vec![
            "loss".into(),
            "gemodel".into(),
            percent(p),
            percent(r),
            percent(loss_bad),
            percent(loss_good),
        ],
        _ => return Err(refuse("loss", "a loss model netlab does not map to netem")),
    };
    let base = d.base;
    if !loss.is_empty() || !base.is_zero() {
        need("netem")?;
    }
    need("tbf")?;
    let s = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<String>>();
    let bps = rate.as_bps();
    // Burst: at least two MTUs, and at least rate/HZ (tc-tbf(8): with a smaller bucket more
    // tokens arrive per timer tick than it holds, and tbf falls short of its rate). 10 ms
    // covers every HZ from 100.
    let burst = (bps / 8 / 100).max(3028);
    let mut cmds = vec![s(&[
        "qdisc",
        "replace",
        "dev",
        dev,
        "root",
        "handle",
        "1:",
        "tbf",
        "rate",
        &format!("{bps}bit"),
        "burst",
        &burst.to_string(),
        "limit",
        "3028",
    ])];
    let qdisc = spec
        .qdisc
        .resolve(LinkInfo::new(rate))
        .map_err(|e| refuse("qdisc", &e.to_string()))?;
    let child: Vec<String> = match &qdisc {
        QdiscConfig::DropTail(c) => match c.limit {
            QueueLimit::Packets(p) => {
                need("pfifo")?;
                s(&["pfifo", "limit", &p.to_string()])
            }
            other => {
                need("bfifo")?;
                let bytes = other.bytes_at(rate).as_bytes().max(1514);
                s(&["bfifo", "limit", &bytes.to_string()])
            }
        },
        QdiscConfig::Htb(_) => {
            return Err(refuse(
                "qdisc",
                "netlab does not compile HTB's classes and flow rules to tc filters yet",
            ));
        }
        other => {
            let k = other.kind();
            need(k)?;
            let mut args = vec![k.to_owned()];
            args.extend(aqm_args(other, &|field, why| {
                refuse(&format!("qdisc.{field}"), why)
            })?);
            args
        }
    };
    let mut c = s(&["qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:"]);
    c.extend(child);
    cmds.push(c);
    if !base.is_zero() || !loss.is_empty() {
        let mut c = s(&[
            "qdisc", "add", "dev", dev, "parent", "10:", "handle", "20:", "netem",
        ]);
        c.extend(s(&["delay", &format!("{}us", base.as_micros())]));
        c.extend(loss);
        cmds.push(c);
    }
    Ok(cmds)
}

/// A probability as netem's percentage.
fn percent(p: f64) -> String {
    format!("{}%", p * 100.0)
}

/// The `tc` parameters of an AQM: every parameter of cg-link's config, given or defaulted,
/// so the kernel runs the values the emulated backend would (not the kernel's own defaults,
/// which may differ between versions). A parameter `tc` cannot take as it is (a limit in
/// bytes, a PIE gain that is not a multiple of 1/16 Hz) or one the kernel hard-codes to
/// another value (PIE's 150 ms burst allowance) is refused through `refuse(field, why)`,
/// never dropped.
fn aqm_args(q: &QdiscConfig, refuse: &dyn Fn(&str, &str) -> Error) -> Result<Vec<String>> {
    let mut a: Vec<String> = Vec::new();
    let mut arg = |k: &str, v: String| a.extend([k.to_owned(), v]);
    let us = |d: Duration| format!("{}us", d.as_micros());
    let ecn = |e: bool| if e { "ecn" } else { "noecn" }.to_owned();
    // Linux takes PIE's gains in 1/16 Hz (`alpha 2` = 0.125 Hz), from 0 to 32.
    let sixteenths = |field: &str, hz: f64| -> Result<String> {
        let v = hz * 16.0;
        if v.fract() == 0.0 && (0.0..=32.0).contains(&v) {
            Ok(format!("{v:.0}"))
        } else {
            Err(refuse(
                field,
                &format!("tc takes PIE's gains in sixteenths of a hertz from 0 to 2, not {hz}"),
            ))
        }
    };
    let packets = |field: &str, l: QueueLimit| -> Result<String> {
        match l {
            QueueLimit::Packets(p) => Ok(p.to_string()),
            _ => Err(refuse(
                field,
                "the kernel counts this limit in packets; give it as a packet count",
            )),
        }
    };
    match q {
        QdiscConfig::Codel(c) => {
            arg("limit", c.limit.to_string());
            arg("target", us(c.target));
            arg("interval", us(c.interval));
            a.push(ecn(c.ecn));
        }
        QdiscConfig::FqCodel(c) => {
            arg("limit", c.limit.to_string());
            arg("flows", c.flows.to_string());
            arg("target", us(c.target));
            arg("interval", us(c.interval));
            arg("memory_limit", c.memory_limit.as_bytes().to_string());
            if let Some(q) = c.quantum {
                arg("quantum", q.as_bytes().to_string());
            }
            arg("drop_batch", c.drop_batch.to_string());
            a.push(ecn(c.ecn));
        }
        QdiscConfig::Pie(c) => {
            // Linux's PIE fixes these (include/net/pie.h: a 150 ms burst allowance, ECN
            // marking up to a 10 % probability).
            if c.max_burst != Duration::from_millis(150) {
                return Err(refuse("max_burst", "Linux's PIE fixes it at 150 ms"));
            }
            if c.mark_ecn_threshold != 0.1 {
                return Err(refuse("mark_ecn_threshold", "Linux's PIE fixes it at 0.1"));
            }
            arg("limit", c.limit.to_string());
            arg("target", us(c.target));
            arg("tupdate", us(c.tupdate));
            arg("alpha", sixteenths("alpha", c.alpha)?);
            arg("beta", sixteenths("beta", c.beta)?);
            a.push(ecn(c.ecn));
        }
        QdiscConfig::Sfq(c) => {
            arg("limit", packets("limit", c.limit)?);
            arg("depth", c.depth.to_string());
            arg("flows", c.flows.to_string());
            arg("divisor", c.divisor.to_string());
            if let Some(q) = c.quantum {
                arg("quantum", q.as_bytes().to_string());
            }
            if let Some(p) = c.perturb {
                if p.subsec_nanos() != 0 {
                    return Err(refuse("perturb", "tc takes whole seconds"));
                }
                arg("perturb", p.as_secs().to_string());
            }
            if c.headdrop {
                a.push("headdrop".to_owned());
            }
        }
        QdiscConfig::Dualpi2(c) => {
            // Linux's DualPI2 marks ECT(0) packets in the C queue like an RFC 3168 AQM.
            if !c.classic_ecn {
                return Err(refuse(
                    "classic_ecn",
                    "Linux's DualPI2 always marks ECN-capable classic packets",
                ));
            }
            let k = c.coupling_factor;
            if k.fract() != 0.0 || !(1.0..=255.0).contains(&k) {
                return Err(refuse(
                    "coupling_factor",
                    &format!("tc takes a whole coupling factor from 1 to 255, not {k}"),
                ));
            }
            let protection = c.c_protection * 100.0;
            if protection.fract() != 0.0 || !(0.0..=100.0).contains(&protection) {
                return Err(refuse(
                    "c_protection",
                    &format!("tc takes a whole percentage, not {protection} %"),
                ));
            }
            arg("limit", c.limit.to_string());
            arg("target", us(c.target));
            arg("tupdate", us(c.tupdate));
            arg("alpha", c.alpha.to_string());
            arg("beta", c.beta.to_string());
            arg("coupling_factor", format!("{k:.0}"));
            arg("step_thresh", us(c.step_threshold));
            arg("classic_protection", format!("{protection:.0}"));
            a.push(
                if c.drop_overload {
                    "drop_on_overload"
                } else {
                    "overflow"
                }
                .to_owned(),
            );
        }
        other => {
            return Err(refuse(
                "kind",
                &format!("netlab maps no `{}` to tc", other.kind()),
            ));
        }
    }
    Ok(a)
}

/// What the kernel runs on `dev` in namespace `ns`: `tc -s -j qdisc show`, one JSON object
/// per qdisc (`kind`, `handle`, `options`, counters).
pub fn show(ns: &str, dev: &str) -> Result<serde_json::Value> {
    let text = run("tc", &["-n", ns, "-s", "-j", "qdisc", "show", "dev", dev])?;
    serde_json::from_str(&text)
        .map_err(|e| Error::Check(format!("`tc -j qdisc show dev {dev}` printed no JSON: {e}")))
}

/// Checks that the kernel runs what the plan `cmds` asked for, as `tc -j qdisc show` reports
/// it (`shown`): every qdisc of the plan at its handle with its kind, and every parameter the
/// kernel reports under the same name equal up to the kernel's own rounding (CoDel keeps
/// times in 1.024 µs units, tbf its burst in clock ticks). Returns the `kind.parameter`
/// names it compared. netem's parameters are not compared (`tc` nests them differently).
pub fn verify(cmds: &[Vec<String>], shown: &serde_json::Value) -> Result<Vec<String>> {
    let mismatch = |what: String| {
        Err(Error::Check(format!(
            "the kernel does not run the plan: {what}"
        )))
    };
    let mut compared = Vec::new();
    for cmd in cmds {
        let Some(h) = cmd.iter().position(|a| a == "handle") else {
            continue;
        };
        let (Some(handle), Some(kind)) = (cmd.get(h + 1), cmd.get(h + 2)) else {
            continue;
        };
        let Some(q) = shown
            .as_array()
            .and_then(|a| a.iter().find(|q| q["handle"] == handle.as_str()))
        else {
            return mismatch(format!("no qdisc at handle {handle}"));
        };
        if q["kind"] != kind.as_str() {
            return mismatch(format!("{} at handle {handle}, not {kind}", q["kind"]));
        }
        if kind == "netem" {
            continue;
        }
        let options = &q["options"];
        let mut args = cmd[h + 3..].iter();
        while let Some(key) = args.next() {
            let (key, asked) = match key.as_str() {
                "ecn" | "noecn" => ("ecn", serde_json::Value::Bool(key == "ecn")),
                "headdrop" | "drop_on_overload" | "overflow" => continue,
                _ => match args.next() {
                    Some(v) => (key.as_str(), serde_json::Value::String(v.clone())),
                    None => continue,
                },
            };
            let got = &options[key];
            if got.is_null() {
                continue;
            }
            let same = match (&asked, got) {
                (serde_json::Value::Bool(a), serde_json::Value::Bool(g)) => a == g,
                (serde_json::Value::String(a), g) => match (tc_number(a), g.as_f64()) {
                    (Some(a), Some(g)) => (a - g).abs() <= (a.abs() * 2e-3).max(2.0),
                    _ => continue,
                },
                _ => continue,
            };
            if !same {
                return mismatch(format!("{kind} {key} is {got}, the plan says {asked}"));
            }
            compared.push(format!("{kind}.{key}"));
        }
    }
    Ok(compared)
}

/// A planned `tc` value as the number `tc -j` reports: times in µs, rates in bytes/s.
fn tc_number(v: &str) -> Option<f64> {
    if let Some(us) = v.strip_suffix("us") {
        us.parse().ok()
    } else if let Some(bits) = v.strip_suffix("bit") {
        bits.parse::<f64>().ok().map(|b| b / 8.0)
    } else {
        v.parse().ok()
    }
}

/// Applies a plan in namespace `ns`.
pub fn apply(ns: &str, cmds: &[Vec<String>]) -> Result<()> {
    for c in cmds {
        let mut args: Vec<&str> = vec!["-n", ns];
        args.extend(c.iter().map(String::as_str));
        run("tc", &args)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use cg_link::DelayConfig;
    use cg_link::qdisc::{
        CodelConfig, DropTailConfig, DualPi2Config, FqCodelConfig, PieConfig, SfqConfig,
    };
    use cg_types::Bitrate;

    fn spec(delay_ms: u64, qdisc: QdiscConfig) -> LinkSpec {
        LinkSpec {
            qdisc,
            ..LinkSpec::wire(Bitrate::mbps(10), Duration::from_millis(delay_ms))
        }
    }

    fn have(k: &[&str]) -> BTreeSet<String> {
        k.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn droptail_in_time_becomes_tbf_with_bfifo() {
        let p = plan(
            &spec(
                0,
                QdiscConfig::DropTail(DropTailConfig::time(Duration::from_millis(300))),
            ),
            "forward",
            "vr1",
            &have(&["tbf", "bfifo", "pfifo", "htb"]),
        )
        .unwrap();
        assert_eq!(p.len(), 2);
        assert!(p[0].contains(&"10000000bit".to_owned()));
        assert_eq!(p[1].last().unwrap(), "375000");
    }

    #[test]
    fn missing_netem_or_aqm_is_a_clear_error() {
        let h = have(&["tbf", "bfifo", "pfifo", "htb"]);
        let e = plan(&spec(25, droptail()), "forward", "x", &h).unwrap_err();
        assert!(e.to_string().contains("netem"), "{e}");
        let codel = QdiscConfig::Codel(CodelConfig::default());
        let e = plan(&spec(0, codel), "forward", "x", &h).unwrap_err();
        assert!(e.to_string().contains("codel"), "{e}");
    }

    fn aqms() -> BTreeSet<String> {
        have(&["tbf", "codel", "pie", "fq_codel", "sfq", "dualpi2"])
    }

    fn child(q: QdiscConfig) -> String {
        plan(&spec(0, q), "forward", "vr1", &aqms()).unwrap()[1][8..].join(" ")
    }

    #[test]
    fn every_aqm_parameter_reaches_tc_given_or_defaulted() {
        let ms = Duration::from_millis;
        assert_eq!(
            child(QdiscConfig::Codel(CodelConfig {
                target: ms(13),
                interval: ms(50),
                limit: 300,
                ecn: true,
            })),
            "codel limit 300 target 13000us interval 50000us ecn"
        );
        // Omitted fields are cg-link's (Linux's) defaults, written out: the kernel runs the
        // values the emulated backend would.
        assert_eq!(
            child(QdiscConfig::Codel(CodelConfig::default())),
            "codel limit 1000 target 5000us interval 100000us noecn"
        );
        assert_eq!(
            child(QdiscConfig::FqCodel(FqCodelConfig {
                ecn: false,
                ..FqCodelConfig::default()
            })),
            "fq_codel limit 10240 flows 1024 target 5000us interval 100000us \
             memory_limit 33554432 drop_batch 64 noecn"
        );
        assert_eq!(
            child(QdiscConfig::Pie(PieConfig {
                target: ms(20),
                tupdate: ms(30),
                ..PieConfig::default()
            })),
            "pie limit 1000 target 20000us tupdate 30000us alpha 2 beta 20 noecn"
        );
        assert_eq!(
            child(QdiscConfig::Sfq(SfqConfig::default())),
            "sfq limit 127 depth 127 flows 128 divisor 1024"
        );
        assert_eq!(
            child(QdiscConfig::Dualpi2(DualPi2Config {
                limit: 1000,
                ..DualPi2Config::default()
            })),
            "dualpi2 limit 1000 target 15000us tupdate 16000us alpha 0.16 beta 3.2 \
             coupling_factor 2 step_thresh 1000us classic_protection 10 drop_on_overload"
        );
    }

    fn droptail() -> QdiscConfig {
        QdiscConfig::DropTail(DropTailConfig::packets(100))
    }

    #[test]
    fn impairments_netem_would_change_are_refused_by_field() {
        let every = have(KINDS);
        let refusal = |spec: LinkSpec| plan(&spec, "reverse", "x", &every).unwrap_err().to_string();
        let with = |f: fn(&mut DelayConfig)| {
            let mut s = spec(10, droptail());
            f(&mut s.delay);
            s
        };
        for (spec, field) in [
            (
                with(|d| d.jitter = Duration::from_millis(1)),
                "`reverse.jitter`",
            ),
            (with(|d| d.reorder = 0.01), "`reverse.reorder`"),
            (with(|d| d.duplicate = 0.01), "`reverse.duplicate`"),
        ] {
            let e = refusal(spec);
            assert!(e.contains(field), "{e}");
        }
        let mut outage = spec(10, droptail());
        outage.capacity = CapacityConfig::Schedule {
            steps: vec![
                cg_link::RateStep {
                    duration: Duration::from_secs(4),
                    rate: Bitrate::mbps(2),
                },
                cg_link::RateStep::down(Duration::from_secs(2)),
                cg_link::RateStep {
                    duration: Duration::from_secs(1),
                    rate: Bitrate::mbps(2),
                },
            ],
            repeat: false,
        };
        let e = refusal(outage);
        assert!(e.contains("`reverse.schedule`"), "{e}");
    }

    #[test]
    fn gilbert_elliott_loss_becomes_netem_gemodel() {
        let mut s = spec(10, droptail());
        s.loss = LossConfig::GilbertElliott {
            p: 0.005,
            r: 0.25,
            loss_good: 0.0,
            loss_bad: 1.0,
        };
        let p = plan(&s, "forward", "vr1", &have(KINDS)).unwrap();
        // `loss gemodel p r 1-h 1-k`: 1-h is Bad's loss, 1-k Good's.
        assert!(
            p[2].join(" ")
                .ends_with("delay 10000us loss gemodel 0.5% 25% 100% 0%"),
            "{:?}",
            p[2]
        );
        // Without netem it is missing, like the delay.
        let e = plan(&s, "forward", "vr1", &have(&["tbf", "pfifo"])).unwrap_err();
        assert!(e.to_string().contains("netem"), "{e}");
    }

    /// The scenario's forward link, loaded from `qdisc`.
    fn scenario_link(qdisc: &str) -> LinkSpec {
        let text = format!("duration = \"10s\"\n[forward]\ncapacity = \"10Mbit\"\n{qdisc}\n");
        crate::scenario::Scenario::parse(&text, "t.toml", "t", std::path::Path::new("."))
            .unwrap()
            .forward
    }

    #[test]
    fn a_parameter_tc_cannot_take_is_refused_with_file_line_and_field() {
        let refusal = |qdisc: &str| {
            plan(&scenario_link(qdisc), "forward", "x", &aqms())
                .unwrap_err()
                .to_string()
        };
        let e = refusal("[forward.qdisc]\nkind = \"sfq\"\nlimit = \"300ms\"");
        assert!(e.contains("t.toml:6:1: field `forward.qdisc.limit`"), "{e}");
        assert!(e.contains("in packets"), "{e}");
        let e = refusal("qdisc = { kind = \"dualpi2\", coupling_factor = 1.5 }");
        assert!(
            e.contains("t.toml:4:") && e.contains("`forward.qdisc.coupling_factor`"),
            "{e}"
        );
        assert!(e.contains("1.5"), "{e}");
        let e = refusal("qdisc = { kind = \"pie\", max_burst = \"100ms\" }");
        assert!(
            e.contains("`forward.qdisc.max_burst`") && e.contains("150 ms"),
            "{e}"
        );
        let e = refusal("qdisc = { kind = \"pie\", alpha = 0.1 }");
        assert!(e.contains("`forward.qdisc.alpha`"), "{e}");
    }

    #[test]
    fn verify_allows_the_kernels_rounding_and_catches_a_different_value() {
        let cmds = plan(
            &spec(0, QdiscConfig::FqCodel(FqCodelConfig::default())),
            "forward",
            "vr1",
            &aqms(),
        )
        .unwrap();
        // What a kernel prints for that plan (fq_codel keeps times in 1.024 µs units).
        let mut shown = serde_json::json!([
            { "kind": "tbf", "handle": "1:", "options": { "rate": 1250000, "burst": 12499, "lat": 0 } },
            { "kind": "fq_codel", "handle": "10:", "parent": "1:1", "options": {
                "limit": 10240, "flows": 1024, "quantum": 1514, "target": 4999,
                "interval": 99999, "memory_limit": 33554432, "ecn": true, "drop_batch": 64 } }
        ]);
        let compared = verify(&cmds, &shown).unwrap();
        for k in [
            "tbf.rate",
            "fq_codel.target",
            "fq_codel.interval",
            "fq_codel.ecn",
        ] {
            assert!(compared.contains(&k.to_owned()), "{k}: {compared:?}");
        }
        shown[1]["options"]["target"] = 13_000.into();
        let e = verify(&cmds, &shown).unwrap_err().to_string();
        assert!(e.contains("fq_codel target is 13000"), "{e}");
        shown[1]["kind"] = "codel".into();
        assert!(verify(&cmds, &shown).is_err());
    }
}
