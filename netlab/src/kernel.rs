//! The kernel backend: real `tc` qdiscs on the router's egress veths, where the kernel has
//! them. Availability is found by probing (adding each qdisc kind to a scratch veth), never
//! assumed: on the project's machines only pfifo/bfifo/tbf/htb exist, so propagation delay
//! (netem) and the AQMs are missing and a scenario asking for them stops with a clear message
//! or falls back to the emulator (`kernel_fallback = "emulated"`).
//!
//! Mapping: capacity → `tbf rate R burst B` at the root; the scenario's queue becomes tbf's
//! child (`pfifo limit N` / `bfifo limit B` for DropTail, or the AQM's own kind with its
//! defaults); one-way delay → `netem delay D` as the child of the queue... which needs netem.
//! tbf counts Ethernet bytes (IP + 14), as the papers' testbeds did.

use std::collections::BTreeSet;

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

/// The `tc` command lines (without `tc -n NS`) that build `spec` on `dev`, or what is
/// missing.
pub fn plan(spec: &LinkSpec, dev: &str, have: &BTreeSet<String>) -> Result<Vec<Vec<String>>> {
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
    let Capacity::Constant(rate) = spec.capacity else {
        return Err(Error::KernelMissing(
            "capacity schedules and traces need the emulated backend".into(),
        ));
    };
    if spec.loss > 0.0 || !spec.delay.is_zero() {
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
            s(&[k])
        }
    };
    let mut c = s(&["qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:"]);
    c.extend(child);
    cmds.push(c);
    if !spec.delay.is_zero() || spec.loss > 0.0 {
        let mut c = s(&[
            "qdisc", "add", "dev", dev, "parent", "10:", "handle", "20:", "netem",
        ]);
        c.extend(s(&["delay", &format!("{}us", spec.delay.as_micros())]));
        if spec.loss > 0.0 {
            c.extend(s(&["loss", &format!("{}%", spec.loss * 100.0)]));
        }
        cmds.push(c);
    }
    Ok(cmds)
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
    use cg_types::Bitrate;
    use std::time::Duration;

    fn spec(delay_ms: u64, qdisc: Qdisc) -> LinkSpec {
        LinkSpec {
            capacity: Capacity::Constant(Bitrate::mbps(10)),
            delay: Duration::from_millis(delay_ms),
            loss: 0.0,
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
        let e = plan(&spec(0, codel), "x", &h).unwrap_err();
        assert!(e.to_string().contains("codel"), "{e}");
    }
}
