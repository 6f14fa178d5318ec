//! Each flow's processes started in its hosts' namespaces, timed from t0: sinks and cg-recv
//! first, then the senders, cg-send and a WebRTC flow's viewer or publisher.

use std::path::Path;
use std::time::Duration;

use super::procs::{Helper, Procs, s, spawn_in};
use crate::scenario::{FlowKind, FlowSpec as Flow, Scenario, WebRtcMode};
use crate::topology::Topology;
use crate::{Error, Result};

/// Pictures a second a Chromium viewer's page posts back for cg-send to score (its
/// `?score=`): enough for a mean and a low percentile over a run, few enough that copying
/// each picture's luma out and posting it costs the viewer little. cg-send
/// scores them only when it can make its source again (`--stamp` with the camera or game
/// pattern); otherwise the page stops at the first refusal.
const PAGE_SCORES_PER_SECOND: u32 = 2;

/// How long after the WHEP/WHIP server starts its client offers: the server binds its HTTP
/// listener first thing, well within this.
const WHEP_VIEWER_DELAY: Duration = Duration::from_millis(1000);
/// The independent viewer page (`WebRtcMode::ChromiumWhepJs`) for the WHEP endpoint
/// `endpoint`: the page with medooze's whep.js inlined (a module script from a file would be
/// refused as cross-origin) and the endpoint written in.
fn whep_js_page(endpoint: &str) -> String {
    const PAGE: &str = include_str!("../../assets/whip-whep/viewer.html");
    const WHEP_JS: &str = include_str!("../../assets/whip-whep/whep.js");
    PAGE.replace("/*WHEP_JS*/", WHEP_JS)
        .replace("/*ENDPOINT*/", endpoint)
}

/// How a media endpoint sets its own priority once it runs.
#[derive(Debug, Clone, Copy)]
enum Priority<'a> {
    /// Chromium: it runs at the priority it was started at.
    AsStarted,
    /// cg-send or cg-recv with these arguments: it raises itself to its `--nice`
    /// ([`cg_host::REALTIME_NICE`] unless they give one), and never lowers itself.
    Raises(&'a [String]),
}

/// The nice value a media endpoint starts at on a loaded host: `endpoint_nice`, as a user
/// starts it, or the priority a cg program raises itself to where that is higher. The run is
/// inside a user namespace (`isolate`), where no process may raise its priority (that takes
/// CAP_SYS_NICE in the host's namespace), so cg-send's and cg-recv's own raise fails there:
/// starting them where it would have taken them runs them as they run on a host, as root.
fn start_nice(endpoint_nice: i32, priority: Priority<'_>) -> i32 {
    match priority {
        Priority::AsStarted => endpoint_nice,
        Priority::Raises(args) => endpoint_nice.min(nice_arg(args)),
    }
}

/// The `--nice N` (or `--nice=N`) among a cg program's arguments; its default otherwise, or
/// where the value does not read (the program then refuses to start, and says why).
fn nice_arg(args: &[String]) -> i32 {
    let value = args
        .iter()
        .enumerate()
        .find_map(|(i, a)| match a.strip_prefix("--nice") {
            Some("") => args.get(i + 1).map(String::as_str),
            Some(v) => v.strip_prefix('='),
            None => None,
        });
    value
        .and_then(|v| v.parse().ok())
        .unwrap_or(cg_host::REALTIME_NICE)
}

/// Starts each flow's processes in its hosts' namespaces, timed from t0.
pub(super) struct Launch<'a> {
    pub(super) sc: &'a Scenario,
    pub(super) topo: &'a Topology,
    pub(super) raw: &'a Path,
    pub(super) t0_ns: u64,
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

    /// The prefix that runs a media endpoint at `start` after t0, at the priority
    /// [`start_nice`] gives when the scenario loads the host.
    fn exec_at(&self, start: Duration, priority: Priority<'_>) -> Vec<String> {
        self.exec_prefix(self.t0_ns, start, priority)
    }

    /// The same, started at once (before t0: a receiver listening when its sender starts).
    fn exec_now(&self, priority: Priority<'_>) -> Vec<String> {
        self.exec_prefix(0, Duration::ZERO, priority)
    }

    fn exec_prefix(&self, t0_ns: u64, start: Duration, priority: Priority<'_>) -> Vec<String> {
        let mut v = vec![
            s("__exec-at"),
            s("--t0-ns"),
            s(t0_ns),
            s("--start"),
            s(start.as_secs_f64()),
        ];
        if let Some(l) = self.sc.load {
            v.extend([s("--nice"), s(start_nice(l.endpoint_nice, priority))]);
        }
        v.push(s("--"));
        v
    }

    /// The flow's receiving end, started before any sender: a sink, or cg-recv for a plain
    /// cg flow (a WebRTC viewer starts after its WHEP server, with the sender).
    pub(super) fn sink(&self, f: &Flow, procs: &mut Procs) -> Result<()> {
        let kind_sink = match f.kind {
            FlowKind::Tcp => "__tcp-sink",
            FlowKind::Udp => "__udp-sink",
            FlowKind::Cg if f.webrtc != WebRtcMode::Off => return Ok(()),
            FlowKind::Cg => {
                let (_, recv) = crate::traffic::cg::binaries().map_err(Error::NotAvailable)?;
                let mut a = self.exec_now(Priority::Raises(&f.recv_args));
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
    pub(super) fn source(&self, f: &Flow, procs: &mut Procs) -> Result<()> {
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
        let mut r = self.exec_at(start, Priority::Raises(&f.recv_args));
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
        let mut v = self.exec_at(start, Priority::AsStarted);
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
        let mut a = self.exec_at(f.start, Priority::Raises(&f.send_args));
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
                if viewer.chromium_views() {
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
            WebRtcMode::ChromiumWhepJs => {
                let page = self.raw.join(format!("whep-js-viewer-{}.html", f.name));
                std::fs::write(&page, whep_js_page(&url))
                    .map_err(|e| Error::io(format!("writing {}", page.display()), e))?;
                let page = format!("file://{}", page.display());
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

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn the_independent_page_carries_the_library_whole_and_the_endpoint() {
        let page = whep_js_page("http://10.0.0.1:5000/whep");
        assert!(page.contains(r#"const endpoint = "http://10.0.0.1:5000/whep";"#));
        assert!(page.contains(include_str!("../../assets/whip-whep/whep.js")));
        assert!(!page.contains("/*WHEP_JS*/") && !page.contains("/*ENDPOINT*/"));
    }

    #[test]
    fn a_cg_program_starts_where_it_would_raise_itself_and_chromium_as_a_user_starts_it() {
        let none = args(&["--codec", "vp8"]);
        assert_eq!(
            start_nice(0, Priority::Raises(&none)),
            cg_host::REALTIME_NICE
        );
        assert_eq!(start_nice(0, Priority::AsStarted), 0);
        for given in [args(&["--nice", "-3"]), args(&["--nice=-3"])] {
            assert_eq!(start_nice(0, Priority::Raises(&given)), -3);
        }
        // Started higher than it asks, it stays there: a program only ever raises itself.
        assert_eq!(
            start_nice(-15, Priority::Raises(&args(&["--nice", "5"]))),
            -15
        );
        assert_eq!(start_nice(0, Priority::Raises(&args(&["--nice", "5"]))), 0);
        // An unreadable value: the program refuses it; the default stands meanwhile.
        assert_eq!(
            start_nice(0, Priority::Raises(&args(&["--nice", "x"]))),
            cg_host::REALTIME_NICE
        );
    }
}
