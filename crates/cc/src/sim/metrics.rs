//! Metrics over a link's per-packet events ([`cg_link::LinkEvent`]): throughput,
//! utilisation, queuing delay percentiles, loss and Jain's fairness index — the metrics of
//! MMSys16 §6 and RFC 8868.
//!
//! Every function takes the events (e.g. `sim.forward().events().iter()`) and a time window
//! `[from, to)`; `flow: None` means all flows. Keep the link's `event_limit` large enough
//! (or `None`) for the run, or the oldest events are gone.

use std::time::{Duration, Instant};

use cg_link::{EventKind, FlowId, LinkEvent};
use cg_types::{Bitrate, DataSize};

fn selected<'a>(
    events: impl IntoIterator<Item = &'a LinkEvent>,
    flow: Option<FlowId>,
    from: Instant,
    to: Instant,
) -> impl Iterator<Item = &'a LinkEvent> {
    events
        .into_iter()
        .filter(move |e| e.time >= from && e.time < to && flow.is_none_or(|f| e.flow == f))
}

/// Bytes delivered in `[from, to)`.
pub fn delivered_bytes<'a>(
    events: impl IntoIterator<Item = &'a LinkEvent>,
    flow: Option<FlowId>,
    from: Instant,
    to: Instant,
) -> DataSize {
    selected(events, flow, from, to)
        .filter(|e| matches!(e.kind, EventKind::Delivered { .. }))
        .map(|e| e.size)
        .sum()
}

/// Delivered throughput in `[from, to)`.
pub fn throughput<'a>(
    events: impl IntoIterator<Item = &'a LinkEvent>,
    flow: Option<FlowId>,
    from: Instant,
    to: Instant,
) -> Bitrate {
    delivered_bytes(events, flow, from, to) / to.saturating_duration_since(from)
}

/// Utilisation `U = R / b` (2013 §IV-B): delivered throughput over the capacity `b`.
pub fn utilisation<'a>(
    events: impl IntoIterator<Item = &'a LinkEvent>,
    capacity: Bitrate,
    from: Instant,
    to: Instant,
) -> f64 {
    if capacity == Bitrate::ZERO {
        return 0.0;
    }
    throughput(events, None, from, to).as_bps_f64() / capacity.as_bps_f64()
}

/// Queuing delays (time spent in the bottleneck queue) of the packets dequeued in
/// `[from, to)`, sorted.
pub fn queuing_delays<'a>(
    events: impl IntoIterator<Item = &'a LinkEvent>,
    flow: Option<FlowId>,
    from: Instant,
    to: Instant,
) -> Vec<Duration> {
    let mut v: Vec<Duration> = selected(events, flow, from, to)
        .filter_map(|e| match e.kind {
            EventKind::Dequeued { sojourn } => Some(sojourn),
            _ => None,
        })
        .collect();
    v.sort_unstable();
    v
}

/// The `p`-th percentile (`p` in `[0, 100]`, nearest rank) of sorted samples.
pub fn percentile(sorted: &[Duration], p: f64) -> Option<Duration> {
    if sorted.is_empty() {
        return None;
    }
    let p = if p.is_nan() { 0.0 } else { p.clamp(0.0, 100.0) };
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted
        .get(rank.saturating_sub(1).min(sorted.len() - 1))
        .copied()
}

/// Packets offered to the link, and how many of them were dropped, in `[from, to)`.
pub fn loss_counts<'a>(
    events: impl IntoIterator<Item = &'a LinkEvent>,
    flow: Option<FlowId>,
    from: Instant,
    to: Instant,
) -> (u64, u64) {
    let (mut offered, mut dropped) = (0, 0);
    for e in selected(events, flow, from, to) {
        match e.kind {
            EventKind::Enqueued => offered += 1,
            EventKind::Dropped(_) => {
                dropped += 1;
                offered += 1;
            }
            _ => {}
        }
    }
    // A packet dropped after being enqueued (AQM at dequeue) was counted twice as offered.
    (offered.max(dropped), dropped)
}

/// Loss ratio (dropped / offered) in `[from, to)`; `None` if nothing was offered (no
/// traffic is not a loss-free run).
pub fn loss_ratio<'a>(
    events: impl IntoIterator<Item = &'a LinkEvent>,
    flow: Option<FlowId>,
    from: Instant,
    to: Instant,
) -> Option<f64> {
    let (offered, dropped) = loss_counts(events, flow, from, to);
    (offered > 0).then(|| dropped as f64 / offered as f64)
}

pub use cg_link::stats::jain_index;

/// Delivered throughput per `bin` from `from` to `to` (a rate time series for plots and
/// tracking checks).
pub fn rate_series<'a>(
    events: impl IntoIterator<Item = &'a LinkEvent>,
    flow: Option<FlowId>,
    from: Instant,
    to: Instant,
    bin: Duration,
) -> Vec<(Instant, Bitrate)> {
    if bin.is_zero() || to <= from {
        return Vec::new();
    }
    let n = (to.saturating_duration_since(from).as_nanos() / bin.as_nanos()).max(1) as usize;
    let mut bytes = vec![0u64; n];
    for e in selected(events, flow, from, to) {
        if matches!(e.kind, EventKind::Delivered { .. }) {
            let i = (e.time.saturating_duration_since(from).as_nanos() / bin.as_nanos()) as usize;
            if let Some(b) = bytes.get_mut(i) {
                *b += e.size.as_bytes();
            }
        }
    }
    bytes
        .into_iter()
        .enumerate()
        .map(|(i, b)| (from + bin * i as u32, DataSize::bytes(b) / bin))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_is_nearest_rank() {
        let v: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(percentile(&v, 95.0), Some(Duration::from_millis(95)));
        assert_eq!(percentile(&v, 100.0), Some(Duration::from_millis(100)));
        assert_eq!(percentile(&v, 0.0), Some(Duration::from_millis(1)));
        assert_eq!(percentile(&[], 50.0), None);
    }
}
