//! The kernel backend: real `tc` qdiscs on the router's egress veths, where the kernel has
//! them. Availability is found by probing (adding each qdisc kind to a scratch veth), never
//! assumed: on the project's machines only pfifo/bfifo/tbf/htb exist, so propagation delay
//! (netem) and the AQMs are missing and a scenario asking for them stops with a clear message
//! or falls back to the emulator (`kernel_fallback = "emulated"`).
//!
//! Mapping: capacity → `tbf rate R burst B` at the root; the scenario's queue becomes tbf's
//! child (`pfifo limit N` / `bfifo limit B` for DropTail, or the AQM's own kind with every
//! parameter the scenario gives, refused with the field's name where `tc` cannot take it);
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

use cg_link::LossConfig;

use crate::scenario::units::Limit;
use crate::scenario::{Capacity, LinkSpec, Qdisc};
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
/// `forward`, `reverse`) on `dev`, or what is missing or cannot be expressed.
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
    let refuse = |field: &str, why: &str| {
        Err(Error::KernelMissing(format!(
            "{name} link, field `{field}`: {why}; the emulated backend takes it"
        )))
    };
    let rate = match spec.capacity {
        Capacity::Constant(rate) => rate,
        Capacity::Schedule(_) => {
            return refuse(
                "schedule",
                "netlab does not change tbf's rate during a run (nor take the link down)",
            );
        }
        Capacity::Trace(_) => return refuse("trace", "tc has no trace-driven rate"),
    };
    let d = &spec.delay;
    if !d.jitter.is_zero() {
        return refuse(
            "jitter",
            "netem's jitter reorders packets, cg-link's never does",
        );
    }
    if d.reorder > 0.0 {
        return refuse(
            "reorder",
            "netem's reorder sends the chosen packets at once rather than holding them back `reorder_delay`",
        );
    }
    if d.duplicate > 0.0 {
        return refuse(
            "duplicate",
            "netem queues its copy again at the root qdisc, where it would take tbf capacity",
        );
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
        _ => return refuse("loss", "a loss model netlab does not map to netem"),
    };
    let base = d.base;
    if !loss.is_empty() || !base.is_zero() {
        need("netem")?;
    }
    need("tbf")?;
    let s = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<String>>();
    let bps = rate.as_bps();
    // Burst: at least two MTUs, or 1 ms of traffic at high rates.
    let burst = (bps / 8 / 1000).max(3028);
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
    let child: Vec<String> = match &spec.qdisc {
        Qdisc::Droptail { limit } => match limit {
            Limit::Packets(p) => {
                need("pfifo")?;
                s(&["pfifo", "limit", &p.to_string()])
            }
            other => {
                need("bfifo")?;
                let bytes = other.bytes_at(rate).as_bytes().max(1514);
                s(&["bfifo", "limit", &bytes.to_string()])
            }
        },
        Qdisc::Htb { .. } => {
            return Err(Error::KernelMissing(
                "HTB with per-flow classes needs the emulated backend (netlab does not compile flow filters to tc yet)".into(),
            ));
        }
        other => {
            let k = other.kind();
            need(k)?;
            let mut args = vec![k.to_owned()];
            args.extend(aqm_args(other)?);
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

/// The `tc` parameters of an AQM, every one the scenario gives; a parameter `tc` cannot take
/// as given is an error naming it, never dropped (the kernel's default would then run while
/// the report says the scenario's value).
fn aqm_args(q: &Qdisc) -> Result<Vec<String>> {
    let kind = q.kind();
    let refuse = |field: &str, why: &str| {
        Error::KernelMissing(format!(
            "qdisc `{kind}`, field `{field}`: {why} (the emulated backend takes it)"
        ))
    };
    let mut a: Vec<String> = Vec::new();
    let time = |a: &mut Vec<String>, name: &str, d: &Option<crate::scenario::units::Dur>| {
        if let Some(d) = d {
            a.extend([name.to_owned(), format!("{}us", d.0.as_micros())]);
        }
    };
    let packets = |a: &mut Vec<String>, limit: &Option<Limit>| -> Result<()> {
        match limit {
            None => Ok(()),
            Some(Limit::Packets(p)) => {
                a.extend(["limit".to_owned(), p.to_string()]);
                Ok(())
            }
            Some(_) => Err(refuse(
                "limit",
                &format!("the kernel's {kind} counts its limit in packets; give it as `\"1000p\"`"),
            )),
        }
    };
    let ecn = |a: &mut Vec<String>, e: &Option<bool>| {
        if let Some(e) = e {
            a.push(if *e { "ecn" } else { "noecn" }.to_owned());
        }
    };
    match q {
        Qdisc::Codel {
            target,
            interval,
            limit,
            ecn: e,
        }
        | Qdisc::FqCodel {
            target,
            interval,
            limit,
            ecn: e,
        } => {
            packets(&mut a, limit)?;
            time(&mut a, "target", target);
            time(&mut a, "interval", interval);
            ecn(&mut a, e);
        }
        Qdisc::Pie {
            target,
            tupdate,
            limit,
            ecn: e,
        } => {
            packets(&mut a, limit)?;
            time(&mut a, "target", target);
            time(&mut a, "tupdate", tupdate);
            ecn(&mut a, e);
        }
        Qdisc::Sfq { limit } => packets(&mut a, limit)?,
        Qdisc::Dualpi2 {
            target,
            limit,
            step,
            coupling,
        } => {
            packets(&mut a, limit)?;
            time(&mut a, "target", target);
            time(&mut a, "step_thresh", step);
            if let Some(k) = coupling {
                if k.fract() != 0.0 || !(1.0..=255.0).contains(k) {
                    return Err(refuse(
                        "coupling",
                        &format!("tc takes a whole coupling factor from 1 to 255, not {k}"),
                    ));
                }
                a.extend(["coupling_factor".to_owned(), format!("{k:.0}")]);
            }
        }
        Qdisc::Droptail { .. } | Qdisc::Htb { .. } => {}
    }
    Ok(a)
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
    use cg_types::Bitrate;
    use std::time::Duration;

    fn spec(delay_ms: u64, qdisc: Qdisc) -> LinkSpec {
        LinkSpec {
            capacity: Capacity::Constant(Bitrate::mbps(10)),
            delay: DelayConfig::fixed(Duration::from_millis(delay_ms)),
            loss: LossConfig::None,
            qdisc,
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
                Qdisc::Droptail {
                    limit: Limit::Time(Duration::from_millis(300)),
                },
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
        let e = plan(
            &spec(
                25,
                Qdisc::Droptail {
                    limit: Limit::Packets(100),
                },
            ),
            "forward",
            "x",
            &h,
        )
        .unwrap_err();
        assert!(e.to_string().contains("netem"), "{e}");
        let codel = Qdisc::Codel {
            target: None,
            interval: None,
            limit: None,
            ecn: None,
        };
        let e = plan(&spec(0, codel), "forward", "x", &h).unwrap_err();
        assert!(e.to_string().contains("codel"), "{e}");
    }

    fn aqms() -> BTreeSet<String> {
        have(&["tbf", "codel", "pie", "fq_codel", "sfq", "dualpi2"])
    }

    fn child(q: Qdisc) -> String {
        plan(&spec(0, q), "forward", "vr1", &aqms()).unwrap()[1][8..].join(" ")
    }

    #[test]
    fn every_aqm_parameter_reaches_tc() {
        use crate::scenario::units::Dur;
        let ms = |v| Some(Dur(Duration::from_millis(v)));
        assert_eq!(
            child(Qdisc::Codel {
                target: ms(13),
                interval: ms(50),
                limit: Some(Limit::Packets(300)),
                ecn: Some(true),
            }),
            "codel limit 300 target 13000us interval 50000us ecn"
        );
        assert_eq!(
            child(Qdisc::FqCodel {
                target: ms(5),
                interval: None,
                limit: None,
                ecn: Some(false),
            }),
            "fq_codel target 5000us noecn"
        );
        assert_eq!(
            child(Qdisc::Pie {
                target: ms(20),
                tupdate: ms(30),
                limit: Some(Limit::Packets(1000)),
                ecn: None,
            }),
            "pie limit 1000 target 20000us tupdate 30000us"
        );
        assert_eq!(
            child(Qdisc::Sfq {
                limit: Some(Limit::Packets(127))
            }),
            "sfq limit 127"
        );
        assert_eq!(
            child(Qdisc::Dualpi2 {
                target: ms(15),
                limit: Some(Limit::Packets(10_000)),
                step: Some(Dur(Duration::from_micros(1000))),
                coupling: Some(2.0),
            }),
            "dualpi2 limit 10000 target 15000us step_thresh 1000us coupling_factor 2"
        );
        // Defaults stay the kernel's only where the scenario gives nothing.
        assert_eq!(
            child(Qdisc::Codel {
                target: None,
                interval: None,
                limit: None,
                ecn: None,
            }),
            "codel"
        );
    }

    fn droptail() -> Qdisc {
        Qdisc::Droptail {
            limit: Limit::Packets(100),
        }
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
            (with(|d| d.jitter = Duration::from_millis(1)), "`jitter`"),
            (with(|d| d.reorder = 0.01), "`reorder`"),
            (with(|d| d.duplicate = 0.01), "`duplicate`"),
        ] {
            let e = refusal(spec);
            assert!(e.contains("reverse link") && e.contains(field), "{e}");
        }
        let mut outage = spec(10, droptail());
        outage.capacity = Capacity::Schedule(vec![
            (Duration::ZERO, Bitrate::mbps(2)),
            (Duration::from_secs(4), Bitrate::ZERO),
            (Duration::from_secs(6), Bitrate::mbps(2)),
        ]);
        let e = refusal(outage);
        assert!(e.contains("`schedule`"), "{e}");
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

    #[test]
    fn a_parameter_tc_cannot_take_is_refused_by_name() {
        let e = plan(
            &spec(
                0,
                Qdisc::Codel {
                    target: None,
                    interval: None,
                    limit: Some(Limit::Time(Duration::from_millis(300))),
                    ecn: None,
                },
            ),
            "forward",
            "x",
            &aqms(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("`codel`") && e.contains("`limit`"), "{e}");
        let e = plan(
            &spec(
                0,
                Qdisc::Dualpi2 {
                    target: None,
                    limit: None,
                    step: None,
                    coupling: Some(1.5),
                },
            ),
            "forward",
            "x",
            &aqms(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("`coupling`") && e.contains("1.5"), "{e}");
    }
}
