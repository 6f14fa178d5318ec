//! `[topology]`, checked: the sender and receiver hosts and their addresses in the run's
//! private /16.

use std::net::Ipv4Addr;

use super::error::{Ctx, ScenarioError};
use super::schema::RawTopology;

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

/// The hosts of `[topology]`: senders `s1…`, then receivers `r1…`, at their default or
/// written addresses.
pub(super) fn hosts(cx: &Ctx<'_>, topo: &RawTopology) -> Result<Vec<Host>, ScenarioError> {
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
    Ok(hosts)
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

#[cfg(test)]
mod tests {
    use crate::scenario::testing::{OK, parse};

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
}
