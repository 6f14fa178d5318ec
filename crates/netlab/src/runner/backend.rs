//! The run's bottleneck: the kernel's `tc` qdiscs set up on the router's veths (or the
//! emulator instead, where the scenario allows the fallback), or the TUN forwarder started
//! in the router namespace.

use std::io::{BufRead, BufReader};
use std::path::Path;

use super::info::RunOptions;
use super::procs::{Helper, s, spawn_in};
use crate::emu::ForwarderStatus;
use crate::scenario::{Backend, Direction, Fallback, Scenario};
use crate::topology::Topology;
use crate::{Error, Result};

pub(super) fn backend_name(backend: Backend) -> &'static str {
    match backend {
        Backend::Emulated => "emulated",
        Backend::Kernel => "kernel",
    }
}

/// The backend the run uses: the scenario's, or the emulator where the kernel's cannot be
/// set up and the scenario allows the fallback (with the note saying why).
pub(super) fn choose_backend(
    sc: &Scenario,
    topo: &Topology,
    kernel_qdiscs: &std::collections::BTreeSet<String>,
) -> Result<(Backend, Option<String>)> {
    if sc.backend != Backend::Kernel {
        return Ok((sc.backend, None));
    }
    match kernel_setup(sc, topo, kernel_qdiscs) {
        Ok(()) => Ok((Backend::Kernel, None)),
        Err(e) if sc.fallback == Fallback::Emulated => {
            let note = format!("kernel backend unavailable ({e}); using the emulator");
            eprintln!("netlab: {note}");
            Ok((Backend::Emulated, Some(note)))
        }
        Err(e) => Err(e),
    }
}

/// Starts the TUN forwarder in the router namespace, waits for its `ready`, steers traffic
/// through it and relays its status lines as progress.
pub(super) fn start_forwarder(
    opts: &RunOptions,
    sc: &Scenario,
    topo: &Topology,
    raw: &Path,
    t0_ns: u64,
) -> Result<Helper> {
    let args = vec![
        s("__forward"),
        s("--scenario"),
        opts.scenario.display().to_string(),
        s("--base"),
        opts.base.display().to_string(),
        s("--t0-ns"),
        s(t0_ns),
        s("--out"),
        raw.display().to_string(),
        s("--coalesce-us"),
        s(opts.coalesce.as_micros()),
    ];
    let mut h = spawn_in(&topo.router(), &args, "forwarder", true)?;
    let stdout = h.child.stdout.take().expect("forwarder stdout is piped");
    let mut lines = BufReader::new(stdout).lines();
    match lines.next() {
        Some(Ok(l)) if l == ForwarderStatus::READY => {}
        other => {
            let why = match other {
                Some(Ok(l)) => format!("it said `{l}`"),
                Some(Err(e)) => e.to_string(),
                None => "it exited (its error is printed above)".into(),
            };
            return Err(Error::Process(format!(
                "the forwarder did not start: {why}"
            )));
        }
    }
    topo.steer_through_tuns()?;
    let progress = opts.progress;
    let duration = sc.duration.as_secs_f64();
    std::thread::spawn(move || {
        for line in lines.map_while(std::result::Result::ok) {
            if let Some(st) = ForwarderStatus::parse(&line)
                && progress
            {
                eprintln!(
                    "  [{:5.0}/{duration:.0} s] forward: {:.2} MB delivered, {} drops, {} CE, backlog {} pkts",
                    st.t_s,
                    st.delivered_bytes as f64 / 1e6,
                    st.drops,
                    st.ce_marks,
                    st.backlog_packets
                );
            }
        }
    });
    Ok(h)
}

/// Whether the kernel backend puts qdiscs on the reverse path: for reverse flows, or a
/// reverse link other than the default plain 1 Gbit/s wire. A reverse link with any
/// impairment is planned (and refused if `tc` cannot express it), never skipped.
pub fn kernel_shapes_reverse(sc: &Scenario) -> bool {
    sc.flows.iter().any(|f| f.direction == Direction::Reverse)
        || !matches!(sc.reverse.capacity, cg_link::CapacityConfig::Constant { rate } if rate >= cg_types::Bitrate::mbps(1000))
        || sc.reverse.delay != cg_link::DelayConfig::default()
        || sc.reverse.loss != cg_link::LossConfig::None
}

fn kernel_setup(
    sc: &Scenario,
    topo: &Topology,
    have: &std::collections::BTreeSet<String>,
) -> Result<()> {
    let senders: Vec<usize> = (0..sc.hosts.len())
        .filter(|i| !sc.hosts[*i].is_receiver)
        .collect();
    let receivers: Vec<usize> = (0..sc.hosts.len())
        .filter(|i| sc.hosts[*i].is_receiver)
        .collect();
    if receivers.len() != 1 || senders.len() != 1 {
        return Err(Error::KernelMissing(
            "the kernel backend shapes one veth per direction, so it needs exactly one sender and one receiver host".into(),
        ));
    }
    let fwd = crate::kernel::plan(&sc.forward, "forward", &topo.router_if(receivers[0]), have)?;
    let rev = if kernel_shapes_reverse(sc) {
        crate::kernel::plan(&sc.reverse, "reverse", &topo.router_if(senders[0]), have)?
    } else {
        Vec::new()
    };
    let ns = topo.router();
    let planned = [
        (topo.router_if(receivers[0]), fwd),
        (topo.router_if(senders[0]), rev),
    ];
    let applied = planned.iter().try_for_each(|(dev, cmds)| {
        if cmds.is_empty() {
            return Ok(());
        }
        crate::kernel::apply(&ns, cmds)?;
        crate::kernel::verify(cmds, &crate::kernel::show(&ns, dev)?).map(drop)
    });
    if applied.is_err() {
        // Whatever was applied goes, so a fallback to the emulator runs on plain veths.
        for (dev, _) in &planned {
            crate::sys::run("tc", &["-n", &ns, "qdisc", "del", "dev", dev, "root"]).ok();
        }
    }
    applied
}
