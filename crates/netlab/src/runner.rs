//! The runner: inside the isolated namespaces (see [`crate::isolate`]) it builds the topology,
//! starts the bottleneck (TUN forwarder or kernel `tc`), checks the RTT, starts the traffic at
//! the run's t0, shows progress, stops everything and leaves raw results in `OUT/raw/`.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::emu::ForwarderStatus;
use crate::scenario::{
    Backend, Direction, Fallback, FlowKind, FlowSpec as Flow, Scenario, WebRtcMode,
};
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

/// Pictures a second a Chromium viewer's page posts back for cg-send to score (its
/// `?score=`): enough for a mean and a low percentile over a run, few enough that copying
/// each picture's luma out and posting it costs the viewer little. cg-send
/// scores them only when it can make its source again (`--stamp` with the camera or game
/// pattern); otherwise the page stops at the first refusal.
const PAGE_SCORES_PER_SECOND: u32 = 2;

/// How long after the WHEP/WHIP server starts its client offers: the server binds its HTTP
/// listener first thing, well within this.
const WHEP_VIEWER_DELAY: Duration = Duration::from_millis(1000);
/// The set-up RTT check's tolerance below the configured RTT (ms): less is a bypass.
const RTT_EARLY_MS: f64 = 1.0;
/// ...and above it (ms): more is a wrong delay or an overloaded emulator.
const RTT_LATE_MS: f64 = 3.0;

/// Runs netlab itself with `args` (a helper, or `__exec-at` in front of a program) in
/// namespace `ns`.
fn spawn_in(ns: &str, args: &[String], name: &str, pipe_out: bool) -> Result<Helper> {
    let exe = std::env::current_exe().map_err(|e| Error::io("current_exe", e))?;
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

/// Runs the scenario inside the isolation; called as `netlab __runner`. The phases: set-up
/// (topology, backend, forwarder, RTT check), traffic started at t0, the run waited out,
/// everything stopped, `raw/run.json` written.
pub fn run(opts: &RunOptions) -> Result<()> {
    let setup_start = Instant::now();
    let sc = Scenario::load(&opts.scenario)?;
    let raw = opts.out.join("raw");
    std::fs::create_dir_all(&raw).map_err(|e| Error::io("mkdir raw", e))?;
    crate::isolate::private_netns_dir()?;
    let prefix = format!("nl{:x}-", std::process::id() ^ (mono_ns() as u32 & 0xffff));
    let mut tcp_ecn = vec![false; sc.hosts.len()];
    for f in sc.flows.iter().filter(|f| f.tcp_ecn) {
        tcp_ecn[f.from] = true;
    }
    let topo = Topology::create(&sc, &prefix, &tcp_ecn)?;
    let kernel_qdiscs = crate::kernel::probe(&topo.router()).unwrap_or_default();
    let (backend, backend_note) = choose_backend(&sc, &topo, &kernel_qdiscs)?;
    // t0 leaves time for the forwarder, the RTT check and spawning every helper (≈ 20 ms
    // per flow on a loaded 2-core machine).
    let lead_ns = 2_500_000_000 + 20_000_000 * sc.flows.len() as u64;
    let t0_ns = mono_ns() + lead_ns;
    let forwarder = match backend {
        Backend::Emulated => Some(start_forwarder(opts, &sc, &topo, &raw, t0_ns)?),
        Backend::Kernel => None,
    };
    let mut procs = Procs::default();
    for (i, _) in sc.hosts.iter().enumerate().filter(|(_, h)| h.is_receiver) {
        procs
            .helpers
            .push(spawn_in(&topo.ns(i), &[s("__echo")], "echo", false)?);
    }
    std::thread::sleep(Duration::from_millis(100));
    let rtt = check_rtt(opts, &sc, &topo, backend)?;
    if mono_ns() + 100_000_000 + 20_000_000 * sc.flows.len() as u64 > t0_ns {
        return Err(Error::Process(format!(
            "set-up took longer than the {:.1} s planned before t0; the machine is overloaded",
            lead_ns as f64 / 1e9
        )));
    }
    let setup_s = setup_start.elapsed().as_secs_f64();

    // The load runs from before t0 to the end, beside everything (the RTT check above ran
    // without it: it checks the path, not the host).
    if let Some(l) = sc.load {
        for i in 0..l.hogs {
            let args = [s("__hog"), s("--nice"), s(l.nice), s("--duty"), s(l.duty)];
            procs
                .helpers
                .push(spawn_in(&topo.ns(0), &args, &format!("hog {i}"), false)?);
        }
    }
    let launch = Launch {
        sc: &sc,
        topo: &topo,
        raw: &raw,
        t0_ns,
    };
    // Sinks first, then senders.
    for f in &sc.flows {
        launch.sink(f, &mut procs)?;
    }
    std::thread::sleep(Duration::from_millis(100));
    for f in &sc.flows {
        launch.source(f, &mut procs)?;
    }
    if progress_on(opts) {
        eprintln!(
            "netlab: running `{}` for {:.0} s ({} flows, backend {})",
            sc.name,
            sc.duration.as_secs_f64(),
            sc.flows.len(),
            backend_name(backend)
        );
    }
    wait_for_end(opts, &sc, &mut procs, t0_ns, forwarder.is_none())?;
    procs.stop();
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
    let info = RunInfo {
        t0_ns,
        backend: backend_name(backend).into(),
        backend_note,
        kernel_qdiscs: kernel_qdiscs.into_iter().collect(),
        rtt_expected_ms: rtt.expected_ms,
        rtt_measured_ms: rtt.probe.median_ms().unwrap_or(f64::NAN),
        rtt_min_ms: rtt.probe.min_ms().unwrap_or(f64::NAN),
        tun_drops,
        udp_rcvbuf_errors: (0..sc.hosts.len())
            .map(|i| udp_rcvbuf_errors(&topo.ns(i)))
            .sum(),
        prefix,
        setup_s,
    };
    let text = serde_json::to_string_pretty(&info).expect("RunInfo serialises");
    std::fs::write(raw.join("run.json"), text).map_err(|e| Error::io("write run.json", e))?;
    std::io::stderr().flush().ok();
    Ok(())
}

fn backend_name(backend: Backend) -> &'static str {
    match backend {
        Backend::Emulated => "emulated",
        Backend::Kernel => "kernel",
    }
}

/// The backend the run uses: the scenario's, or the emulator where the kernel's cannot be
/// set up and the scenario allows the fallback (with the note saying why).
fn choose_backend(
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
fn start_forwarder(
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

/// The set-up RTT check's probes and what the scenario's links should give.
struct RttCheck {
    probe: ProbeResult,
    expected_ms: f64,
}

/// Probes the RTT from the first sender to the first receiver (their echo servers run) and
/// refuses a run whose RTT is not the scenario's.
fn check_rtt(
    opts: &RunOptions,
    sc: &Scenario,
    topo: &Topology,
    backend: Backend,
) -> Result<RttCheck> {
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
    let expected = expected_rtt_ms(sc, backend);
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
    Ok(RttCheck {
        probe: pr,
        expected_ms: expected,
    })
}

/// The run's traffic processes.
#[derive(Default)]
struct Procs {
    /// Traffic generators and cg-send: they stop by themselves at their stop time.
    senders: Vec<Helper>,
    /// cg-recv and browsers: stopped with SIGTERM.
    cg_receivers: Vec<Helper>,
    /// Sinks and echo servers: stopped by closing their stdin.
    helpers: Vec<Helper>,
}

impl Procs {
    fn all(&mut self) -> impl Iterator<Item = &mut Helper> {
        self.senders
            .iter_mut()
            .chain(&mut self.cg_receivers)
            .chain(&mut self.helpers)
    }

    /// Senders stop by themselves at their stop time: a moment, then they are killed;
    /// then the sinks' stdin is closed and the receivers get SIGTERM.
    fn stop(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(5);
        for h in &mut self.senders {
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
        for h in &mut self.helpers {
            h.stdin.take();
        }
        for h in &mut self.cg_receivers {
            // SAFETY: kill(2) on our own child's pid.
            unsafe { libc::kill(h.child.id() as libc::pid_t, libc::SIGTERM) };
        }
        let deadline = Instant::now() + Duration::from_secs(3);
        for h in &mut self.cg_receivers {
            while h.child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            h.child.kill().ok();
            h.child.wait().ok();
        }
        for h in &mut self.helpers {
            h.child.wait().ok();
        }
    }
}

/// Waits out the run (and 300 ms), stopping it if a traffic process fails; shows a
/// once-a-second progress line when the forwarder does not (`own_progress`).
fn wait_for_end(
    opts: &RunOptions,
    sc: &Scenario,
    procs: &mut Procs,
    t0_ns: u64,
    own_progress: bool,
) -> Result<()> {
    let end_ns = t0_ns + sc.duration.as_nanos() as u64;
    let mut last_progress = mono_ns();
    while mono_ns() < end_ns + 300_000_000 {
        std::thread::sleep(Duration::from_millis(100));
        if let Some(why) = failed_early(procs.all(), t0_ns) {
            // The PID namespace takes the other processes down with the runner.
            return Err(Error::Process(why));
        }
        if own_progress && progress_on(opts) && mono_ns() - last_progress > 1_000_000_000 {
            last_progress = mono_ns();
            eprintln!(
                "  [{:5.0}/{:.0} s]",
                (mono_ns() as f64 - t0_ns as f64) / 1e9,
                sc.duration.as_secs_f64()
            );
        }
    }
    Ok(())
}

/// Starts each flow's processes in its hosts' namespaces, timed from t0.
struct Launch<'a> {
    sc: &'a Scenario,
    topo: &'a Topology,
    raw: &'a Path,
    t0_ns: u64,
}

impl Launch<'_> {
    fn raw_file(&self, name: String) -> String {
        self.raw.join(name).display().to_string()
    }

    /// `--t0-ns T0 --bin-ms BIN`: what every traffic helper takes.
    fn timing(&self, v: &mut Vec<String>) {
        v.extend([
            s("--t0-ns"),
            s(self.t0_ns),
            s("--bin-ms"),
            s(self.sc.bin.as_millis()),
        ]);
    }

    /// The prefix that runs a media endpoint (cg-send, cg-recv, Chromium) at `start` after
    /// t0, at `[load] endpoint_nice` when the scenario loads the host.
    fn exec_at(&self, start: Duration) -> Vec<String> {
        self.exec_prefix(self.t0_ns, start)
    }

    /// The same, started at once (before t0: a receiver listening when its sender starts).
    fn exec_now(&self) -> Vec<String> {
        self.exec_prefix(0, Duration::ZERO)
    }

    fn exec_prefix(&self, t0_ns: u64, start: Duration) -> Vec<String> {
        let mut v = vec![
            s("__exec-at"),
            s("--t0-ns"),
            s(t0_ns),
            s("--start"),
            s(start.as_secs_f64()),
        ];
        if let Some(l) = self.sc.load {
            v.extend([s("--nice"), s(l.endpoint_nice)]);
        }
        v.push(s("--"));
        v
    }

    /// The flow's receiving end, started before any sender: a sink, or cg-recv for a plain
    /// cg flow (a WebRTC viewer starts after its WHEP server, with the sender).
    fn sink(&self, f: &Flow, procs: &mut Procs) -> Result<()> {
        let kind_sink = match f.kind {
            FlowKind::Tcp => "__tcp-sink",
            FlowKind::Udp => "__udp-sink",
            FlowKind::Cg if f.webrtc != WebRtcMode::Off => return Ok(()),
            FlowKind::Cg => {
                let (_, recv) = crate::traffic::cg::binaries().map_err(Error::NotAvailable)?;
                let mut a = self.exec_now();
                a.push(recv.display().to_string());
                a.extend(self.cg_recv_args(f, format!("0.0.0.0:{}", f.port)));
                procs.cg_receivers.push(spawn_in(
                    &self.topo.ns(f.to),
                    &a,
                    &format!("cg-recv {}", f.name),
                    false,
                )?);
                return Ok(());
            }
        };
        let mut a = vec![
            s(kind_sink),
            s("--port"),
            s(f.port),
            s("--out"),
            self.raw_file(format!("sink-{}.csv", f.name)),
        ];
        self.timing(&mut a);
        procs.helpers.push(spawn_in(
            &self.topo.ns(f.to),
            &a,
            &format!("sink {}", f.name),
            false,
        )?);
        Ok(())
    }

    /// The flow's sending end (and a WebRTC flow's viewer or publisher page).
    fn source(&self, f: &Flow, procs: &mut Procs) -> Result<()> {
        match f.kind {
            FlowKind::Cg if f.webrtc == WebRtcMode::ChromiumPublisher => {
                self.chromium_publisher(f, procs)
            }
            FlowKind::Cg => self.cg_send(f, procs),
            FlowKind::Tcp | FlowKind::Udp => self.generator(f, procs),
        }
    }

    /// cg-recv's arguments for flow `f`, listening on `listen`: its controller, its
    /// statistics file and the flow's own receiver arguments.
    fn cg_recv_args(&self, f: &Flow, listen: String) -> Vec<String> {
        let mut a = vec![
            s("--listen"),
            listen,
            s("--cc"),
            f.controller.clone(),
            s("--stats-file"),
            self.raw_file(format!("cg-recv-{}.jsonl", f.name)),
            s("--quiet"),
        ];
        a.extend(f.recv_args.iter().cloned());
        a
    }

    /// cg-recv in the receiving host at `start`, in WebRTC `mode`, on the flow's port.
    fn cg_recv_at(&self, f: &Flow, start: Duration, mode: Vec<String>) -> Result<Helper> {
        let (_, recv) = crate::traffic::cg::binaries().map_err(Error::NotAvailable)?;
        let mut r = self.exec_at(start);
        r.push(recv.display().to_string());
        r.extend(mode);
        r.extend(self.cg_recv_args(f, format!("{}:{}", self.sc.hosts[f.to].addr, f.port)));
        spawn_in(
            &self.topo.ns(f.to),
            &r,
            &format!("cg-recv {}", f.name),
            false,
        )
    }

    /// Headless Chromium in host `host`'s namespace at `start` on `url`, with `extra`
    /// arguments.
    fn chromium_at(
        &self,
        f: &Flow,
        host: usize,
        start: Duration,
        extra: &[String],
        url: String,
    ) -> Result<Helper> {
        let browser = crate::traffic::cg::chromium().map_err(Error::NotAvailable)?;
        let profile = self.raw.join(format!("chromium-{}", f.name));
        let mut v = self.exec_at(start);
        v.push(browser.display().to_string());
        v.extend(crate::traffic::cg::chromium_args(&profile));
        v.extend(extra.iter().cloned());
        v.push(url);
        spawn_in(
            &self.topo.ns(host),
            &v,
            &format!("chromium {}", f.name),
            false,
        )
    }

    /// cg-recv serves WHIP on the receiving host; Chromium publishes to it.
    fn chromium_publisher(&self, f: &Flow, procs: &mut Procs) -> Result<()> {
        let to = format!("{}:{}", self.sc.hosts[f.to].addr, f.port);
        let reports = self.raw_file(format!("publisher-{}.jsonl", f.name));
        procs.cg_receivers.push(self.cg_recv_at(
            f,
            f.start,
            vec![
                s("--webrtc"),
                s("whip"),
                s("--http"),
                to.clone(),
                s("--publisher-reports"),
                reports,
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
        procs.cg_receivers.push(self.chromium_at(
            f,
            f.from,
            f.start + WHEP_VIEWER_DELAY,
            &extra,
            format!("http://{to}/?report=1"),
        )?);
        Ok(())
    }

    /// cg-send to the flow's receiver, or serving WHEP to its viewer (cg-recv or Chromium,
    /// started once the WHEP server is up).
    fn cg_send(&self, f: &Flow, procs: &mut Procs) -> Result<()> {
        let (send, _) = crate::traffic::cg::binaries().map_err(Error::NotAvailable)?;
        let mut a = self.exec_at(f.start);
        a.push(send.display().to_string());
        let from_addr = self.sc.hosts[f.from].addr;
        let http = format!("{from_addr}:{}", f.port);
        match f.webrtc {
            WebRtcMode::Off => a.extend([
                s("--to"),
                format!("{}:{}", self.sc.hosts[f.to].addr, f.port),
            ]),
            viewer => {
                a.extend([s("--webrtc"), s("whep"), s("--http"), http.clone()]);
                a.extend([s("--bind"), s(from_addr)]);
                if viewer == WebRtcMode::Chromium {
                    a.push(s("--viewer-reports"));
                    a.push(self.raw_file(format!("viewer-{}.jsonl", f.name)));
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
            self.raw_file(format!("cg-send-{}.jsonl", f.name)),
            s("--quiet"),
        ]);
        // The viewer offers once the WHEP server is up (cg-send binds it at start).
        let view_at = f.start + WHEP_VIEWER_DELAY;
        let url = format!("http://{http}/whep");
        match f.webrtc {
            WebRtcMode::Off | WebRtcMode::ChromiumPublisher => {}
            WebRtcMode::Cg => {
                let mode = vec![s("--webrtc"), s("whep-client"), url];
                procs.cg_receivers.push(self.cg_recv_at(f, view_at, mode)?);
            }
            WebRtcMode::Chromium => {
                let page = format!("http://{http}/?report=1&score={PAGE_SCORES_PER_SECOND}");
                procs
                    .cg_receivers
                    .push(self.chromium_at(f, f.to, view_at, &f.recv_args, page)?);
            }
        }
        a.extend(f.send_args.iter().cloned());
        procs.senders.push(spawn_in(
            &self.topo.ns(f.from),
            &a,
            &format!("cg-send {}", f.name),
            false,
        )?);
        Ok(())
    }

    /// netlab's own TCP or UDP traffic generator.
    fn generator(&self, f: &Flow, procs: &mut Procs) -> Result<()> {
        let dst = format!("{}:{}", self.sc.hosts[f.to].addr, f.port);
        let mut a = match f.kind {
            FlowKind::Tcp => vec![
                s("__tcp-send"),
                s("--dst"),
                dst,
                s("--cc"),
                s(f.cc.name()),
                s("--out"),
                self.raw_file(format!("send-{}.csv", f.name)),
            ],
            _ => vec![
                s("__udp-send"),
                s("--dst"),
                dst,
                s("--size"),
                s(f.size),
                s("--ecn"),
                s(f.ecn.ecn()),
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
        self.timing(&mut a);
        procs.senders.push(spawn_in(
            &self.topo.ns(f.from),
            &a,
            &format!("sender {}", f.name),
            false,
        )?);
        Ok(())
    }
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
