//! Namespaces, veth pairs, addresses, routes and the policy rules that steer traffic through
//! the emulator. Runs inside the isolated runner (see [`crate::isolate`]), so names only need
//! to be unique inside that private `/run/netns`; a per-run prefix is added anyway.
//!
//! ```text
//!  s1 ─ eth0 ══ vs1 ┐                       ┌ vr1 ══ eth0 ─ r1
//!  s2 ─ eth0 ══ vs2 ┤ router: tfwd ⇄ trev   ├ vr2 ══ eth0 ─ r2
//!                   (policy routing: iif vs* → table 100 → tfwd; iif vr* → table 101 → trev)
//! ```
//! Interface names are fixed, short and never `ip` keywords (`up`, `dn`, `a`… break `ip link`).

use crate::Result;
use crate::scenario::{Host, Scenario};
use crate::sys::{ip, ip_in, sysctl_in};

/// TUN that carries the forward direction out of the router's routing (senders' traffic).
pub const TUN_FORWARD: &str = "tfwd";
/// TUN for the reverse direction.
pub const TUN_REVERSE: &str = "trev";

/// A created topology.
#[derive(Debug, Clone)]
pub struct Topology {
    /// Prefix of every namespace name.
    pub prefix: String,
    /// Hosts, as in the scenario.
    pub hosts: Vec<Host>,
}

impl Topology {
    /// Namespace of the router.
    pub fn router(&self) -> String {
        format!("{}rt", self.prefix)
    }

    /// Namespace of host `i`.
    pub fn ns(&self, i: usize) -> String {
        format!("{}{}", self.prefix, self.hosts[i].name)
    }

    /// Router-side interface facing host `i`.
    pub fn router_if(&self, i: usize) -> String {
        format!("v{}", self.hosts[i].name)
    }

    /// Creates namespaces, veths, addresses and default routes. `tcp_ecn[i]` enables ECN
    /// negotiation on host `i`.
    pub fn create(sc: &Scenario, prefix: &str, tcp_ecn: &[bool]) -> Result<Topology> {
        let t = Topology {
            prefix: prefix.to_owned(),
            hosts: sc.hosts.clone(),
        };
        let rt = t.router();
        ip(&["netns", "add", &rt])?;
        sysctl_in(
            &rt,
            &[
                "net.ipv4.ip_forward=1",
                "net.ipv4.conf.all.rp_filter=0",
                "net.ipv4.conf.default.rp_filter=0",
                "net.ipv4.conf.all.send_redirects=0",
                "net.ipv4.conf.default.send_redirects=0",
                "net.ipv4.conf.all.accept_local=1",
                "net.ipv6.conf.all.disable_ipv6=1",
                "net.ipv6.conf.default.disable_ipv6=1",
            ],
        )?;
        ip_in(&rt, &["link", "set", "lo", "up"])?;
        for (i, h) in t.hosts.iter().enumerate() {
            let ns = t.ns(i);
            let rif = t.router_if(i);
            ip(&["netns", "add", &ns])?;
            let ecn = if tcp_ecn.get(i).copied().unwrap_or(false) {
                "net.ipv4.tcp_ecn=1"
            } else {
                "net.ipv4.tcp_ecn=2"
            };
            sysctl_in(
                &ns,
                &[
                    "net.ipv6.conf.all.disable_ipv6=1",
                    "net.ipv6.conf.default.disable_ipv6=1",
                    "net.ipv4.conf.all.rp_filter=0",
                    "net.ipv4.conf.default.rp_filter=0",
                    ecn,
                ],
            )?;
            ip_in(
                &rt,
                &[
                    "link", "add", &rif, "type", "veth", "peer", "name", "eth0", "netns", &ns,
                ],
            )?;
            ip_in(
                &rt,
                &["addr", "add", &format!("{}/24", h.gateway), "dev", &rif],
            )?;
            ip_in(&rt, &["link", "set", &rif, "up"])?;
            ip_in(&ns, &["link", "set", "lo", "up"])?;
            ip_in(
                &ns,
                &["addr", "add", &format!("{}/24", h.addr), "dev", "eth0"],
            )?;
            ip_in(&ns, &["link", "set", "eth0", "up"])?;
            ip_in(
                &ns,
                &["route", "add", "default", "via", &h.gateway.to_string()],
            )?;
        }
        Ok(t)
    }

    /// Steers traffic through the TUN forwarder (after it created the TUNs).
    pub fn steer_through_tuns(&self) -> Result<()> {
        let rt = self.router();
        for tun in [TUN_FORWARD, TUN_REVERSE] {
            ip_in(&rt, &["link", "set", tun, "up"])?;
            ip_in(&rt, &["link", "set", tun, "txqueuelen", "1000"])?;
        }
        ip_in(
            &rt,
            &[
                "route",
                "add",
                "default",
                "dev",
                TUN_FORWARD,
                "table",
                "100",
            ],
        )?;
        ip_in(
            &rt,
            &[
                "route",
                "add",
                "default",
                "dev",
                TUN_REVERSE,
                "table",
                "101",
            ],
        )?;
        for (i, h) in self.hosts.iter().enumerate() {
            let table = if h.is_receiver { "101" } else { "100" };
            ip_in(
                &rt,
                &[
                    "rule",
                    "add",
                    "iif",
                    &self.router_if(i),
                    "lookup",
                    table,
                    "pref",
                    "100",
                ],
            )?;
        }
        Ok(())
    }

    /// Packets the kernel dropped on the TUNs' transmit queues (hidden drops), per TUN.
    pub fn tun_drops(&self) -> [u64; 2] {
        [TUN_FORWARD, TUN_REVERSE].map(|t| self.if_stat(&self.router(), t, "tx_dropped"))
    }

    /// One statistics counter of interface `dev` in namespace `ns` (0 if unreadable).
    pub fn if_stat(&self, ns: &str, dev: &str, counter: &str) -> u64 {
        let path = format!("/sys/class/net/{dev}/statistics/{counter}");
        crate::sys::run("ip", &["netns", "exec", ns, "cat", &path])
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0)
    }
}
