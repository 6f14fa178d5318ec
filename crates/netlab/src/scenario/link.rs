//! One direction of the bottleneck, checked: capacity, impairments and queue, as cg-link's
//! own configs, its HTB classes' flows made rules.

use std::ops::Range;
use std::path::Path;
use std::time::Duration;

use cg_link::qdisc::{HtbMatch, HtbRule, QdiscConfig};
use cg_link::{CapacityConfig, DelayConfig, LossConfig, Protocol};
use cg_types::Bitrate;
use toml::Spanned;

use super::error::{Ctx, Origin, ScenarioError};
use super::flows::FlowSpec;
use super::qdisc::ClassFlows;
use super::schema::{FlowKind, RawLink};
use super::{capacity, impair, qdisc};

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

/// `[forward]` or `[reverse]` (`name`), with the HTB classes' flows still to be made rules.
pub(super) fn link(
    cx: &Ctx<'_>,
    l: &RawLink,
    span: Range<usize>,
    name: &str,
    base: &Path,
) -> Result<(LinkSpec, ClassFlows), ScenarioError> {
    let capacity = capacity::capacity(cx, l, span.clone(), name, base)?;
    let delay = impair::delay(cx, l, name)?;
    let loss = impair::loss(cx, l.loss.as_ref(), &format!("{name}.loss"))?;
    let mut origin = Origin {
        file: cx.file.to_owned(),
        at: Default::default(),
    };
    origin.note(cx, name.to_owned(), span.start);
    for (field, at) in written_fields(l) {
        origin.note(cx, format!("{name}.{field}"), at);
    }
    let (qdisc, class_flows) = match &l.qdisc {
        Some(q) => qdisc::qdisc(cx, q, name, capacity.mean_rate(), &mut origin)?,
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

/// `link` with its HTB classes' scenario flows compiled into rules, ahead of the rules
/// written in the file: a flow matches on its protocol and destination port (each flow has
/// its own port); a name matches the flow or every instance of it (`cg` → `cg-1`, `cg-2`).
pub(super) fn with_flow_rules(
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
