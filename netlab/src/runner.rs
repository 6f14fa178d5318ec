//! The runner: inside the isolated namespaces (see [`crate::isolate`]) it builds the topology,
//! starts the bottleneck (TUN forwarder or kernel `tc`), checks the RTT, starts the traffic at
//! the run's t0, shows progress, stops everything and leaves raw results in `OUT/raw/`.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::scenario::{Backend, Direction, Fallback, FlowKind, Scenario, WebRtcMode};
use crate::sys::mono_ns;
use crate::topology::Topology;
use crate::traffic::probe::{ECHO_PORT, ProbeResult};
use crate::{Error, Result};

/// Runner options (from the command line).
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Output directory (raw files go to `out/raw`).
    pub out: PathBuf,
    /// Scenario file (a copy in the output directory).
    pub scenario: PathBuf,
    /// Directory relative paths of the scenario (traces) resolve against.
    pub base: PathBuf,
    /// Forwarder wake-up coalescing.
    pub coalesce: Duration,
    /// Skip the start-up RTT check (never in tests).
    pub skip_rtt_check: bool,
    /// Print progress to stderr.
    pub progress: bool,
}

/// What the runner records about the run (`raw/run.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunInfo {
    /// t0 (CLOCK_MONOTONIC ns).
    pub t0_ns: u64,
    /// Backend actually used.
    pub backend: String,
    /// Why the backend differs from the scenario's, if it does.
    pub backend_note: Option<String>,
    /// Kernel qdiscs found by probing.
    pub kernel_qdiscs: Vec<String>,
    /// RTT check: expected and measured (median, min) in ms.
    pub rtt_expected_ms: f64,
    /// Median measured RTT, ms.
    pub rtt_measured_ms: f64,
    /// Minimum measured RTT, ms.
    pub rtt_min_ms: f64,
    /// Packets dropped on the TUN transmit queues (forward, reverse): hidden drops.
    pub tun_drops: [u64; 2],
    /// UDP receive-buffer drops summed over receiving hosts (`RcvbufErrors`).
    pub udp_rcvbuf_errors: u64,
    /// Namespace prefix used.
    pub prefix: String,
    /// Setup time, s.
    pub setup_s: f64,
}

struct Helper {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
}

/// How long after the WHEP/WHIP server starts its client offers: the server binds its HTTP
/// listener first thing, well within this.
const WHEP_VIEWER_DELAY: Duration = Duration::from_millis(1000);
/// The set-up RTT check's tolerance below the configured RTT (ms): less is a bypass.
const RTT_EARLY_MS: f64 = 1.0;
/// ...and above it (ms): more is a wrong delay or an overloaded emulator.
const RTT_LATE_MS: f64 = 3.0;

fn spawn_in(ns: &str, args: &[String], name: &str, pipe_out: bool) -> Result<Helper> {
    let exe = std::env::current_exe().map_err(|e| Error::io("current_exe", e))?;
    spawn_prog_in(ns, &exe, args, name, pipe_out)
}

fn spawn_prog_in(
    ns: &str,
    exe: &Path,
    args: &[String],
    name: &str,
    pipe_out: bool,
) -> Result<Helper> {
    // Helpers inherit the run's priority (nice −15 as root, see `isolate`): a starved
    // traffic generator would distort the measurement as much as a starved forwarder.
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", ns])
        .arg(exe)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(if pipe_out {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stderr(Stdio::inherit());
    let mut child = cmd
        .spawn()
        .map_err(|e| Error::io(format!("spawn {name}"), e))?;
    let stdin = child.stdin.take();
    Ok(Helper {
        name: name.to_owned(),
        child,
        stdin,
    })
}

fn s(v: impl ToString) -> String {
    v.to_string()
}

/// Runs the scenario inside the isolation; called as `netlab __runner`.
pub fn run(opts: &RunOptions) -> Result<()> {
    let setup_start = Instant::now();
    let sc = Scenario::load(&opts.scenario)?;
    let raw = opts.out.join("raw");
    std::fs::create_dir_all(&raw).map_err(|e| Error::io("mkdir raw", e))?;
    crate::isolate::private_netns_dir()?;
    let prefix = format!("nl{:x}-", std::process::id() ^ (mono_ns() as u32 & 0xffff));
    let mut tcp_ecn = vec![false; sc.hosts.len()];
    for f in &sc.flows {
        if f.tcp_ecn {
            tcp_ecn[f.from] = true;
        }
    }
    let topo = Topology::create(&sc, &prefix, &tcp_ecn)?;
    let rt = topo.router();
    let kernel_qdiscs = crate::kernel::probe(&rt).unwrap_or_default();
    // Backend.
    let mut backend = sc.backend;
    let mut backend_note = None;
    if backend == Backend::Kernel {
        match kernel_setup(&sc, &topo, &kernel_qdiscs) {
            Ok(()) => {}
            Err(e) if sc.fallback == Fallback::Emulated => {
                let note = format!("kernel backend unavailable ({e}); using the emulator");
                eprintln!("netlab: {note}");
                backend_note = Some(note);
                backend = Backend::Emulated;
            }
            Err(e) => return Err(e),
        }
    }
    // t0 leaves time for the forwarder, the RTT check and spawning every helper (≈ 20 ms
    // per flow on a loaded 2-core machine).
    let lead_ns = 2_500_000_000 + 20_000_000 * sc.flows.len() as u64;
    let t0_ns = mono_ns() + lead_ns;
    let mut forwarder = None;
    if backend == Backend::Emulated {
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
        let mut h = spawn_in(&rt, &args, "forwarder", true)?;
        let stdout = h.child.stdout.take().expect("forwarder stdout is piped");
        let mut lines = BufReader::new(stdout).lines();
        match lines.next() {
            Some(Ok(l)) if l == "ready" => {}
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
        // Relay status lines as progress.
        let progress = opts.progress;
        let duration = sc.duration.as_secs_f64();
        std::thread::spawn(move || {
            for line in lines.map_while(std::result::Result::ok) {
                let p: Vec<&str> = line.split_whitespace().collect();
                if progress && p.len() == 6 && p[0] == "status" {
                    let t: f64 = p[1].parse().unwrap_or(0.0);
                    eprintln!(
                        "  [{t:5.0}/{duration:.0} s] forward: {:.2} MB delivered, {} drops, {} CE, backlog {} pkts",
                        p[2].parse::<f64>().unwrap_or(0.0) / 1e6,
                        p[3],
                        p[5],
                        p[4]
                    );
                }
            }
        });
        forwarder = Some(h);
    }
    // Echo servers on receivers, then the RTT check s1 → r1.
    let mut helpers: Vec<Helper> = Vec::new();
    for (i, h) in sc.hosts.iter().enumerate() {
        if h.is_receiver {
            helpers.push(spawn_in(&topo.ns(i), &[s("__echo")], "echo", false)?);
        }
    }
    std::thread::sleep(Duration::from_millis(100));
    let s1 = sc
        .hosts
        .iter()
        .position(|h| !h.is_receiver)
        .expect("at least one sender");
    let r1 = sc
        .hosts
        .iter()
        .position(|h| h.is_receiver)
        .expect("at least one receiver");
    let probe_out = crate::sys::run(
        "ip",
        &[
            "netns",
            "exec",
            &topo.ns(s1),
            &std::env::current_exe()
                .map_err(|e| Error::io("current_exe", e))?
                .display()
                .to_string(),
            "__probe",
            "--dst",
            &format!("{}:{ECHO_PORT}", sc.hosts[r1].addr),
            "--count",
            "15",
            "--gap-ms",
            "20",
        ],
    )?;
    let pr: ProbeResult = serde_json::from_str(&probe_out)
        .map_err(|e| Error::Process(format!("probe output: {e}")))?;
    let expected = expected_rtt_ms(&sc, backend);
    let measured = pr.median_ms().unwrap_or(f64::NAN);
    if progress_on(opts) {
        eprintln!(
            "netlab: RTT check {} → {}: measured {measured:.2} ms (min {:.2}), configured {expected:.2} ms",
            sc.hosts[s1].name,
            sc.hosts[r1].name,
            pr.min_ms().unwrap_or(f64::NAN)
        );
    }
    // The check uses the minimum of the 15 probes (like ping's "min"): a bypass shows as a
    // much shorter RTT, a misconfigured delay as a different one, while a scheduling hiccup
    // of a loaded machine on some probes does not fail the run. Early by more than
    // RTT_EARLY_MS cannot be timing (a route bypasses the bottleneck); late is allowed up
    // to RTT_LATE_MS, the timer lateness a busy 2-core host shows on every probe (a debug
    // build's emulator beside a parallel test: all 15 probes 1.0–1.1 ms late).
    let min = pr.min_ms().unwrap_or(f64::NAN);
    let off = min - expected;
    if !opts.skip_rtt_check && (off.is_nan() || !(-RTT_EARLY_MS..=RTT_LATE_MS).contains(&off)) {
        return Err(Error::Check(format!(
            "measured RTT {min:.2} ms (min of {} answered probes of {}; median {measured:.2} ms) is not within {RTT_EARLY_MS} ms below and {RTT_LATE_MS} ms above the configured {expected:.2} ms: a route bypasses the bottleneck, a delay is not the scenario's, or the emulator is overloaded",
            pr.rtts_ms.len(),
            pr.sent
        )));
    }
    if mono_ns() + 100_000_000 + 20_000_000 * sc.flows.len() as u64 > t0_ns {
        return Err(Error::Process(format!(
            "set-up took longer than the {:.1} s planned before t0; the machine is overloaded",
            lead_ns as f64 / 1e9
        )));
    }
    let setup_s = setup_start.elapsed().as_secs_f64();
    // Traffic: sinks first, then senders.
    let bin_ms = sc.bin.as_millis().to_string();
    let exe_args_common = |v: &mut Vec<String>| {
        v.extend([s("--t0-ns"), s(t0_ns), s("--bin-ms"), bin_ms.clone()]);
    };
    let mut senders: Vec<Helper> = Vec::new();
    let mut cg_receivers: Vec<Helper> = Vec::new();
    for f in &sc.flows {
        let kind_sink = match f.kind {
            FlowKind::Tcp => "__tcp-sink",
            FlowKind::Udp => "__udp-sink",
            // A WebRTC viewer starts after its WHEP server, below.
            FlowKind::Cg if f.webrtc != WebRtcMode::Off => continue,
            FlowKind::Cg => {
                let (_, recv) = crate::traffic::cg::binaries().map_err(Error::NotAvailable)?;
                let mut a = vec![
                    s("--listen"),
                    format!("0.0.0.0:{}", f.port),
                    s("--cc"),
                    f.controller.clone(),
                    s("--stats-file"),
                    raw.join(format!("cg-recv-{}.jsonl", f.name))
                        .display()
                        .to_string(),
                    s("--quiet"),
                ];
                a.extend(f.recv_args.iter().cloned());
                cg_receivers.push(spawn_prog_in(
                    &topo.ns(f.to),
                    &recv,
                    &a,
                    &format!("cg-recv {}", f.name),
                    false,
                )?);
                continue;
            }
        };
        let mut a = vec![
            s(kind_sink),
            s("--port"),
            s(f.port),
            s("--out"),
            raw.join(format!("sink-{}.csv", f.name))
                .display()
                .to_string(),
        ];
        exe_args_common(&mut a);
        helpers.push(spawn_in(
            &topo.ns(f.to),
            &a,
            &format!("sink {}", f.name),
            false,
        )?);
    }
    std::thread::sleep(Duration::from_millis(100));
    for f in &sc.flows {
        let dst = format!("{}:{}", sc.hosts[f.to].addr, f.port);
        let exec_at = |start: Duration| {
            vec![
                s("__exec-at"),
                s("--t0-ns"),
                s(t0_ns),
                s("--start"),
                s(start.as_secs_f64()),
                s("--"),
            ]
        };
        // cg-recv in the receiving host at `start`, in WebRTC `mode`, on the flow's port.
        let cg_recv_at = |start: Duration, mode: Vec<String>| -> Result<Helper> {
            let (_, recv) = crate::traffic::cg::binaries().map_err(Error::NotAvailable)?;
            let mut r = exec_at(start);
            r.push(recv.display().to_string());
            r.extend(mode);
            r.extend([
                s("--listen"),
                format!("{}:{}", sc.hosts[f.to].addr, f.port),
                s("--cc"),
                f.controller.clone(),
                s("--stats-file"),
                raw.join(format!("cg-recv-{}.jsonl", f.name))
                    .display()
                    .to_string(),
                s("--quiet"),
            ]);
            r.extend(f.recv_args.iter().cloned());
            spawn_in(&topo.ns(f.to), &r, &format!("cg-recv {}", f.name), false)
        };
        // Headless Chromium in namespace `ns` at `start` on `url`, with `extra` arguments.
        let chromium_at = |ns: usize, start: Duration, extra: &[String], url: String| {
            let browser = crate::traffic::cg::chromium().map_err(Error::NotAvailable)?;
            let profile = raw.join(format!("chromium-{}", f.name));
            let mut v = exec_at(start);
            v.push(browser.display().to_string());
            v.extend(crate::traffic::cg::chromium_args(&profile));
            v.extend(extra.iter().cloned());
            v.push(url);
            spawn_in(&topo.ns(ns), &v, &format!("chromium {}", f.name), false)
        };
        if f.kind == FlowKind::Cg && f.webrtc == WebRtcMode::ChromiumPublisher {
            // cg-recv serves WHIP on the receiving host; Chromium publishes to it.
            let to = format!("{}:{}", sc.hosts[f.to].addr, f.port);
            let reports = raw.join(format!("publisher-{}.jsonl", f.name));
            cg_receivers.push(cg_recv_at(
                f.start,
                vec![
                    s("--webrtc"),
                    s("whip"),
                    s("--http"),
                    to.clone(),
                    s("--publisher-reports"),
                    reports.display().to_string(),
                ],
            )?);
            // getUserMedia needs a secure context: plain http:// to another host is one only
            // by this flag (a user would serve the page over https, or from localhost).
            let mut extra = vec![
                s("--use-fake-device-for-media-stream"),
                s("--use-fake-ui-for-media-stream"),
                format!("--unsafely-treat-insecure-origin-as-secure=http://{to}"),
            ];
            extra.extend(f.send_args.iter().cloned());
            cg_receivers.push(chromium_at(
                f.from,
                f.start + WHEP_VIEWER_DELAY,
                &extra,
                format!("http://{to}/?report=1"),
            )?);
            continue;
        }
        if f.kind == FlowKind::Cg {
            let (send, _) = crate::traffic::cg::binaries().map_err(Error::NotAvailable)?;
            let mut a = exec_at(f.start);
            a.push(send.display().to_string());
            let from_addr = sc.hosts[f.from].addr;
            let http = format!("{from_addr}:{}", f.port);
            match f.webrtc {
                WebRtcMode::Off => a.extend([s("--to"), dst]),
                viewer => {
                    a.extend([s("--webrtc"), s("whep"), s("--http"), http.clone()]);
                    a.extend([s("--bind"), s(from_addr)]);
                    if viewer == WebRtcMode::Chromium {
                        a.push(s("--viewer-reports"));
                        a.push(
                            raw.join(format!("viewer-{}.jsonl", f.name))
                                .display()
                                .to_string(),
                        );
                    }
                }
            }
            a.extend([
                s("--cc"),
                f.controller.clone(),
                s("--ecn"),
                s(crate::traffic::cg::ecn_arg(f.ecn)),
                s("--duration"),
                format!("{}ms", (f.stop - f.start).as_millis()),
                s("--stats-file"),
                raw.join(format!("cg-send-{}.jsonl", f.name))
                    .display()
                    .to_string(),
                s("--quiet"),
            ]);
            // The viewer offers once the WHEP server is up (cg-send binds it at start).
            let view_at = f.start + WHEP_VIEWER_DELAY;
            let url = format!("http://{http}/whep");
            match f.webrtc {
                WebRtcMode::Off | WebRtcMode::ChromiumPublisher => {}
                WebRtcMode::Cg => {
                    let mode = vec![s("--webrtc"), s("whep-client"), url];
                    cg_receivers.push(cg_recv_at(view_at, mode)?);
                }
                WebRtcMode::Chromium => {
                    let page = format!("http://{http}/?report=1");
                    cg_receivers.push(chromium_at(f.to, view_at, &f.recv_args, page)?);
                }
            }
            a.extend(f.send_args.iter().cloned());
            senders.push(spawn_in(
                &topo.ns(f.from),
                &a,
                &format!("cg-send {}", f.name),
                false,
            )?);
            continue;
        }
        let mut a = match f.kind {
            FlowKind::Tcp => vec![
                s("__tcp-send"),
                s("--dst"),
                dst,
                s("--cc"),
                s(f.cc.name()),
                s("--out"),
                raw.join(format!("send-{}.csv", f.name))
                    .display()
                    .to_string(),
            ],
            _ => vec![
                s("__udp-send"),
                s("--dst"),
                dst,
                s("--size"),
                s(f.size),
                s("--ecn"),
                s(match f.ecn {
                    crate::scenario::EcnSetting::NotEct => "not-ect",
                    crate::scenario::EcnSetting::Ect0 => "ect0",
                    crate::scenario::EcnSetting::Ect1 => "ect1",
                }),
            ],
        };
        a.extend([
            s("--start"),
            s(f.start.as_secs_f64()),
            s("--stop"),
            s(f.stop.as_secs_f64()),
        ]);
        if !f.rate_steps.is_empty() {
            a.extend([s("--steps"), crate::traffic::format_steps(&f.rate_steps)]);
        }
        if let Some((on, off)) = f.on_off {
            a.extend([
                s("--on"),
                s(on.as_secs_f64()),
                s("--off"),
                s(off.as_secs_f64()),
            ]);
        }
        exe_args_common(&mut a);
        senders.push(spawn_in(
            &topo.ns(f.from),
            &a,
            &format!("sender {}", f.name),
            false,
        )?);
    }
    if progress_on(opts) {
        eprintln!(
            "netlab: running `{}` for {:.0} s ({} flows, backend {})",
            sc.name,
            sc.duration.as_secs_f64(),
            sc.flows.len(),
            if backend == Backend::Emulated {
                "emulated"
            } else {
                "kernel"
            }
        );
    }
    // Wait for the run to end.
    let end_ns = t0_ns + sc.duration.as_nanos() as u64;
    let mut last_progress = mono_ns();
    while mono_ns() < end_ns + 300_000_000 {
        std::thread::sleep(Duration::from_millis(100));
        let procs = senders
            .iter_mut()
            .chain(&mut cg_receivers)
            .chain(&mut helpers);
        if let Some(why) = failed_early(procs, t0_ns) {
            // The PID namespace takes the other processes down with the runner.
            return Err(Error::Process(why));
        }
        if forwarder.is_none() && progress_on(opts) && mono_ns() - last_progress > 1_000_000_000 {
            last_progress = mono_ns();
            eprintln!(
                "  [{:5.0}/{:.0} s]",
                (mono_ns() as f64 - t0_ns as f64) / 1e9,
                sc.duration.as_secs_f64()
            );
        }
    }
    // Senders stop by themselves at their stop time; give them a moment, then insist.
    let deadline = Instant::now() + Duration::from_secs(5);
    for h in &mut senders {
        while h.child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        if h.child.try_wait().ok().flatten().is_none() {
            eprintln!("netlab: {} did not stop in time; killing it", h.name);
            h.child.kill().ok();
        }
        h.child.wait().ok();
    }
    std::thread::sleep(Duration::from_millis(200));
    for h in &mut helpers {
        h.stdin.take();
    }
    for h in &mut cg_receivers {
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(h.child.id() as libc::pid_t, libc::SIGTERM) };
    }
    let deadline = Instant::now() + Duration::from_secs(3);
    for h in &mut cg_receivers {
        while h.child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        h.child.kill().ok();
        h.child.wait().ok();
    }
    for h in &mut helpers {
        h.child.wait().ok();
    }
    let tun_drops = if forwarder.is_some() {
        topo.tun_drops()
    } else {
        [0, 0]
    };
    if let Some(mut f) = forwarder {
        f.stdin.take();
        let st = f.child.wait().map_err(|e| Error::io("wait forwarder", e))?;
        if !st.success() {
            return Err(Error::Process(format!("forwarder failed: {st}")));
        }
    }
    let mut rcvbuf = 0;
    for (i, h) in sc.hosts.iter().enumerate() {
        let _ = h;
        rcvbuf += udp_rcvbuf_errors(&topo.ns(i));
    }
    let info = RunInfo {
        t0_ns,
        backend: if backend == Backend::Emulated {
            "emulated"
        } else {
            "kernel"
        }
        .into(),
        backend_note,
        kernel_qdiscs: kernel_qdiscs.into_iter().collect(),
        rtt_expected_ms: expected,
        rtt_measured_ms: measured,
        rtt_min_ms: pr.min_ms().unwrap_or(f64::NAN),
        tun_drops,
        udp_rcvbuf_errors: rcvbuf,
        prefix,
        setup_s,
    };
    let text = serde_json::to_string_pretty(&info).expect("RunInfo serialises");
    std::fs::write(raw.join("run.json"), text).map_err(|e| Error::io("write run.json", e))?;
    std::io::stderr().flush().ok();
    Ok(())
}

/// A traffic process (sender, sink, `cg-send`, `cg-recv`, echo) that exited with an error
/// code before the run's end, described for the user. The run stops: its flow would otherwise
/// be measured as an idle flow for the rest of the run and reported as a result (a mistyped
/// `--pattern` gave 200 s of U = 0 and exit status 0). A process killed by a signal is not a
/// failure here: tests and fault experiments kill receivers on purpose.
fn failed_early<'a>(procs: impl Iterator<Item = &'a mut Helper>, t0_ns: u64) -> Option<String> {
    for h in procs {
        if let Ok(Some(st)) = h.child.try_wait()
            && st.code().is_some_and(|c| c != 0)
        {
            let t = (mono_ns() as f64 - t0_ns as f64) / 1e9;
            return Some(format!(
                "{} exited with {st} at t = {t:.1} s, before the run's end (its error is printed above); the run is stopped",
                h.name
            ));
        }
    }
    None
}

fn progress_on(opts: &RunOptions) -> bool {
    opts.progress
}

/// The RTT a 60-byte probe should see: both one-way delays plus serialisation at the initial
/// rates (queues empty).
pub fn expected_rtt_ms(sc: &Scenario, backend: Backend) -> f64 {
    let ser = |spec: &crate::scenario::LinkSpec| -> f64 {
        let r = spec.capacity.rate_at(Duration::ZERO).as_bps_f64();
        if r > 0.0 { 60.0 * 8.0 / r * 1e3 } else { 0.0 }
    };
    match backend {
        Backend::Emulated => {
            (sc.forward.delay.base + sc.reverse.delay.base).as_secs_f64() * 1e3
                + ser(&sc.forward)
                + ser(&sc.reverse)
        }
        Backend::Kernel => {
            (sc.forward.delay.base + sc.reverse.delay.base).as_secs_f64() * 1e3
                + 74.0 * 8.0
                    / sc.forward
                        .capacity
                        .rate_at(Duration::ZERO)
                        .as_bps_f64()
                        .max(1.0)
                    * 1e3
        }
    }
}

/// Whether the kernel backend puts qdiscs on the reverse path: for reverse flows, or a
/// reverse link other than the default plain 1 Gbit/s wire. A reverse link with any
/// impairment is planned (and refused if `tc` cannot express it), never skipped.
pub fn kernel_shapes_reverse(sc: &Scenario) -> bool {
    sc.flows.iter().any(|f| f.direction == Direction::Reverse)
        || !matches!(sc.reverse.capacity, crate::scenario::Capacity::Constant(r) if r >= cg_types::Bitrate::mbps(1000))
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
    crate::kernel::apply(&topo.router(), &fwd)?;
    crate::kernel::apply(&topo.router(), &rev)?;
    Ok(())
}

fn udp_rcvbuf_errors(ns: &str) -> u64 {
    let Ok(text) = crate::sys::run("ip", &["netns", "exec", ns, "cat", "/proc/net/snmp"]) else {
        return 0;
    };
    let udp: Vec<&str> = text.lines().filter(|l| l.starts_with("Udp:")).collect();
    if udp.len() < 2 {
        return 0;
    }
    let names: Vec<&str> = udp[0].split_whitespace().collect();
    let vals: Vec<&str> = udp[1].split_whitespace().collect();
    names
        .iter()
        .position(|n| *n == "RcvbufErrors")
        .and_then(|i| vals.get(i))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Reads `raw/run.json`.
pub fn read_info(out: &Path) -> Result<RunInfo> {
    let p = out.join("raw").join("run.json");
    let text =
        std::fs::read_to_string(&p).map_err(|e| Error::io(format!("read {}", p.display()), e))?;
    serde_json::from_str(&text).map_err(|e| Error::Process(format!("{}: {e}", p.display())))
}
