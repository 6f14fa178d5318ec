//! Metrics of a run, from the bottleneck's per-packet log (as TMA24 measured at the router)
//! and from the endpoints (TCP_INFO RTT as MMSys16 plotted; UDP one-way delay, ECN and loss).
//!
//! Definitions (MMSys16 §6, RFC 8867 §4 and CCR16 §4):
//! - throughput: bytes delivered by the bottleneck per bin;
//! - utilisation U = R / b: bytes delivered on the forward link over the capacity integral,
//!   both over the measurement window [warm-up, duration];
//! - loss ratio: packets dropped at the bottleneck / packets that arrived there;
//! - duplicates: a packet the link duplicated is delivered twice; the second delivery is
//!   counted as a duplicate, not as throughput or an arrival (the copy took no capacity);
//! - queuing delay: per-packet sojourn time in the queue (dequeue − enqueue); mean, standard
//!   deviation, p5/p25/p50/p75/p95, and the share of packets above 10/20/50/100 ms, per flow,
//!   for the link, and over the packets of the forward flows of each kind pooled;
//! - Jain's fairness index (Σx)² / (n·Σx²) over the mean throughputs of the forward flows,
//!   computed over the window in which all of them are active.

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use crate::dist::Dist;
use crate::emu::record::{self, Dir, FlowEntry, Kind, Record};
use crate::scenario::{Direction, FlowKind, FlowSpec, Scenario};
use crate::{Error, Result};

/// One time-series row of a flow.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowBin {
    /// Bin start, s since t0.
    pub t_s: f64,
    /// Delivered rate, Mb/s.
    pub rate_mbps: f64,
    /// Mean queuing delay of packets dequeued in the bin, ms (NaN if none).
    pub qdelay_ms: f64,
    /// Max queuing delay, ms.
    pub qdelay_max_ms: f64,
    /// Packets dropped at the bottleneck.
    pub drops: u64,
    /// Packets that arrived at the bottleneck.
    pub arrivals: u64,
    /// CE marks.
    pub ce: u64,
    /// Endpoint RTT (TCP_INFO, mean over the bin), ms (NaN if none).
    pub rtt_ms: f64,
    /// UDP one-way delay (mean), ms (NaN if none).
    pub owd_ms: f64,
    /// cg flows: the controller's target rate (mean over the bin), Mb/s (NaN if none).
    pub target_mbps: f64,
}

/// Per-flow results.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowSummary {
    /// Flow name.
    pub name: String,
    /// tcp / udp / cg.
    pub kind: String,
    /// forward / reverse.
    pub direction: String,
    /// Mean throughput over the flow's active time within the window, Mb/s.
    pub throughput_mbps: f64,
    /// Bytes delivered within the window.
    pub delivered_bytes: u64,
    /// Loss ratio at the bottleneck.
    pub loss_ratio: f64,
    /// Packets dropped at the bottleneck within the window.
    pub drops: u64,
    /// Queuing delay at the bottleneck (ms).
    pub qdelay_ms: Dist,
    /// CE marks by the bottleneck.
    pub ce_marks: u64,
    /// Share of delivered packets that were CE-marked.
    pub ce_ratio: f64,
    /// Endpoint RTT samples (TCP_INFO), ms.
    pub rtt_ms: Dist,
    /// UDP one-way delay (per-bin means), ms.
    pub owd_ms: Dist,
    /// UDP: CE marks seen by the receiver.
    pub receiver_ce: u64,
    /// UDP: datagrams missing at the receiver (sequence gaps not filled by a late datagram
    /// within the window; one filled just after the window's end still counts).
    pub receiver_lost: u64,
    /// UDP: datagrams that arrived after a later one (filling a sequence gap).
    pub receiver_reordered: u64,
    /// UDP: datagrams that arrived again (a copy of one already received).
    pub receiver_duplicates: u64,
    /// Copies delivered by the bottleneck (its duplication) within the window.
    pub duplicates: u64,
    /// cg GCC flows: delay-based decrease events within the window (n_dd, the count of
    /// `Ar` updates that lowered the target; MMSys16 §4, 2013 §IV-B), from cg-send's stats.
    pub n_dd: Option<u64>,
    /// cg flows: the controller's mean target rate within the window, Mb/s.
    pub target_mbps: Option<f64>,
    /// cg flows: what the viewer (cg-recv or a browser) saw within the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub viewer: Option<crate::viewer::ViewerSummary>,
    /// Time series.
    #[serde(skip)]
    pub bins: Vec<FlowBin>,
}

/// Link-level results (forward bottleneck).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LinkSummary {
    /// U = R/b over the window.
    pub utilisation: f64,
    /// Loss ratio over all forward packets.
    pub loss_ratio: f64,
    /// Queuing delay of all forward packets, ms.
    pub qdelay_ms: Dist,
    /// CE marks.
    pub ce_marks: u64,
    /// Copies delivered by the link's duplication (not counted in U or the loss ratio).
    pub duplicates: u64,
    /// Per-bin capacity and delivered rate, Mb/s: the capacity is what the link could carry
    /// in the bin (zero in an outage or a trace's gap).
    #[serde(skip)]
    pub bins: Vec<(f64, f64, f64)>,
}

/// Everything measured.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Metrics {
    /// Measurement window, s since t0.
    pub window_s: (f64, f64),
    /// Forward link.
    pub link: LinkSummary,
    /// Per flow.
    pub flows: Vec<FlowSummary>,
    /// Queuing delay at the bottleneck of every packet of the forward flows of each kind
    /// (`cg`, `tcp`, `udp`), pooled, ms: a percentile over several flows (MMSys16 Table 5's
    /// "two GCC flows"), which no per-flow percentile gives. Absent from summaries written
    /// before it existed.
    #[serde(default)]
    pub qdelay_ms_by_kind: std::collections::BTreeMap<String, Dist>,
    /// Jain's index over forward flows while all are active, and the window used.
    pub jain: Option<f64>,
    /// The window Jain's index was computed over.
    pub jain_window_s: Option<(f64, f64)>,
}

fn read_csv(path: &Path) -> Vec<Vec<f64>> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    text.lines()
        .skip(1)
        .map(|l| {
            l.split(',')
                .map(|x| x.parse().unwrap_or(f64::NAN))
                .collect()
        })
        .collect()
}

/// Which scenario flow (and whether data or its ACK/reply direction) a bottleneck flow is.
fn classify(e: &FlowEntry, sc: &Scenario) -> Option<usize> {
    let proto_of = |k: FlowKind| match k {
        FlowKind::Tcp => 6,
        _ => 17,
    };
    sc.flows.iter().position(|f| {
        let data_dir = match f.direction {
            Direction::Forward => Dir::Forward,
            Direction::Reverse => Dir::Reverse,
        };
        // Chromium picks its own port; its flow is told by the host pair (the scenario check
        // keeps that pair to the one UDP flow).
        let port_or_hosts = if f.webrtc.chromium_views() {
            e.src == IpAddr::V4(sc.hosts[f.from].addr)
        } else {
            e.dport == f.port
        };
        e.proto == proto_of(f.kind)
            && port_or_hosts
            && e.dir == data_dir
            && e.dst == IpAddr::V4(sc.hosts[f.to].addr)
    })
}

/// Computes the metrics from `raw/` of a finished run.
pub fn compute(sc: &Scenario, raw: &Path) -> Result<Metrics> {
    let dur = sc.duration.as_secs_f64();
    let w0 = sc.warmup.as_secs_f64().min(dur);
    // The statistics window ends at `[metrics] until` (the run's end by default).
    let end = sc.until.as_secs_f64().min(dur);
    let bin = sc.bin.as_secs_f64();
    let nbins = ((dur / bin).ceil() as usize).max(1);
    let in_window = |t: f64| t >= w0 && t < end;
    let table: Vec<FlowEntry> = std::fs::read_to_string(raw.join("flows.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    let map: HashMap<u16, usize> = table
        .iter()
        .filter_map(|e| classify(e, sc).map(|i| (e.index, i)))
        .collect();
    let records: Vec<Record> = match std::fs::File::open(raw.join("bottleneck.log")) {
        Ok(f) => record::read_all(&mut std::io::BufReader::new(f))
            .map_err(|e| Error::io("read bottleneck.log", e))?,
        Err(_) => Vec::new(),
    };
    let have_log = !records.is_empty();
    let nf = sc.flows.len();
    let mut bins: Vec<Vec<FlowBin>> = (0..nf)
        .map(|_| {
            (0..nbins)
                .map(|i| FlowBin {
                    t_s: i as f64 * bin,
                    qdelay_ms: f64::NAN,
                    rtt_ms: f64::NAN,
                    owd_ms: f64::NAN,
                    target_mbps: f64::NAN,
                    ..FlowBin::default()
                })
                .collect()
        })
        .collect();
    let mut qsum = vec![vec![0.0f64; nbins]; nf];
    let mut qn = vec![vec![0u64; nbins]; nf];
    let mut q_samples: Vec<Vec<f64>> = vec![Vec::new(); nf];
    let mut link_q: Vec<f64> = Vec::new();
    let mut delivered = vec![0u64; nf];
    let mut delivered_pkts = vec![0u64; nf];
    let mut dropped = vec![0u64; nf];
    let mut ce = vec![0u64; nf];
    let mut copies = vec![0u64; nf];
    let mut link_bytes = 0u64;
    let mut link_bins = vec![0.0f64; nbins];
    let (mut link_drops, mut link_pkts, mut link_ce, mut link_copies) = (0u64, 0u64, 0u64, 0u64);
    for r in &records {
        let t = r.t_ns as f64 / 1e9;
        let b = (t / bin) as usize;
        if b >= nbins {
            continue; // after the end of the run (queues draining)
        }
        let fi = map.get(&r.flow).copied();
        if r.dir == Dir::Forward {
            match r.kind {
                Kind::Delivered => {
                    link_bins[b] += f64::from(r.size);
                    if in_window(t) {
                        link_bytes += u64::from(r.size);
                        link_pkts += 1;
                    }
                }
                Kind::Dropped if in_window(t) => {
                    link_drops += 1;
                    link_pkts += 1;
                }
                Kind::Dequeued if in_window(t) => link_q.push(r.dur_ns as f64 / 1e6),
                Kind::Marked if in_window(t) => link_ce += 1,
                Kind::Copy if in_window(t) => link_copies += 1,
                _ => {}
            }
        }
        let Some(fi) = fi else { continue };
        let fb = &mut bins[fi][b];
        match r.kind {
            Kind::Delivered => {
                fb.rate_mbps += f64::from(r.size) * 8.0 / bin / 1e6;
                fb.arrivals += 1;
                if in_window(t) {
                    delivered[fi] += u64::from(r.size);
                    delivered_pkts[fi] += 1;
                }
            }
            Kind::Dropped => {
                fb.drops += 1;
                fb.arrivals += 1;
                if in_window(t) {
                    dropped[fi] += 1;
                }
            }
            Kind::Dequeued => {
                let ms = r.dur_ns as f64 / 1e6;
                qsum[fi][b] += ms;
                qn[fi][b] += 1;
                fb.qdelay_max_ms = fb.qdelay_max_ms.max(ms);
                if in_window(t) {
                    q_samples[fi].push(ms);
                }
            }
            Kind::Marked => {
                fb.ce += 1;
                if in_window(t) {
                    ce[fi] += 1;
                }
            }
            Kind::Copy => {
                if in_window(t) {
                    copies[fi] += 1;
                }
            }
        }
    }
    let mut flows = Vec::new();
    for (fi, f) in sc.flows.iter().enumerate() {
        for b in 0..nbins {
            if qn[fi][b] > 0 {
                bins[fi][b].qdelay_ms = qsum[fi][b] / qn[fi][b] as f64;
            }
        }
        // Endpoint data.
        let mut rtts = Vec::new();
        let mut owds = Vec::new();
        let (mut rce, mut rlost, mut rreordered, mut rdup) = (0u64, 0.0f64, 0u64, 0u64);
        if f.kind == FlowKind::Tcp {
            let rows = read_csv(&raw.join(format!("send-{}.csv", f.name)));
            let mut per_bin: Vec<(f64, u32)> = vec![(0.0, 0); nbins];
            for r in rows {
                if r.len() >= 3 && r[2].is_finite() && r[2] > 0.0 && r[0] < dur {
                    let b = (r[0] / bin).max(0.0) as usize;
                    per_bin[b].0 += r[2];
                    per_bin[b].1 += 1;
                    if in_window(r[0]) {
                        rtts.push(r[2]);
                    }
                }
            }
            for (b, (s, n)) in per_bin.iter().enumerate() {
                if *n > 0 {
                    bins[fi][b].rtt_ms = s / f64::from(*n);
                }
            }
        }
        let (mut n_dd, mut target_mbps, mut viewer) = (None, None, None);
        if f.kind == FlowKind::Cg {
            let cg = cg_send_stats(&raw.join(format!("cg-send-{}.jsonl", f.name)));
            let t0_ns = crate::runner::read_info(raw.parent().unwrap_or(raw))
                .map(|i| i.t0_ns)
                .unwrap_or(0);
            viewer = crate::viewer::summarise(raw, &f.name, t0_ns, (w0, end));
            let mut per_bin: Vec<(f64, f64, u32, u32)> = vec![(0.0, 0.0, 0, 0); nbins];
            let (mut first_ndd, mut last_ndd) = (None, None);
            let (mut tsum, mut tn) = (0.0, 0u32);
            for r in &cg {
                let t = (r.mono_ns as f64 - t0_ns as f64) / 1e9;
                if !(0.0..dur).contains(&t) {
                    continue;
                }
                let b = (t / bin) as usize;
                per_bin[b].0 += r.target_bps / 1e6;
                per_bin[b].2 += 1;
                if let Some(rtt) = r.rtt_ms {
                    per_bin[b].1 += rtt;
                    per_bin[b].3 += 1;
                    if in_window(t) {
                        rtts.push(rtt);
                    }
                }
                if in_window(t) {
                    tsum += r.target_bps / 1e6;
                    tn += 1;
                    if let Some(n) = r.n_dd() {
                        first_ndd.get_or_insert(n);
                        last_ndd = Some(n);
                    }
                }
            }
            for (b, (ts, rs, n, m)) in per_bin.iter().enumerate() {
                if *n > 0 {
                    bins[fi][b].target_mbps = ts / f64::from(*n);
                }
                if *m > 0 {
                    bins[fi][b].rtt_ms = rs / f64::from(*m);
                }
            }
            n_dd = first_ndd.zip(last_ndd).map(|(a, b)| b.saturating_sub(a));
            target_mbps = (tn > 0).then(|| tsum / f64::from(tn));
        }
        let sink = read_csv(&raw.join(format!("sink-{}.csv", f.name)));
        let mut sink_bytes = 0.0;
        for r in &sink {
            if r.is_empty() || r[0].is_nan() || r[0] >= dur {
                continue;
            }
            let b = (r[0] / bin).max(0.0) as usize;
            // UDP sinks count payload: add the UDP/IPv4 headers (28 B per datagram) so the
            // receiver's rate is in IP bytes like the bottleneck log.
            let ip_bytes = if f.kind == FlowKind::Udp && r.len() >= 3 {
                r[1] + 28.0 * r[2]
            } else {
                r[1]
            };
            if !have_log {
                // Kernel backend: throughput from the receiver.
                bins[fi][b].rate_mbps += ip_bytes * 8.0 / bin / 1e6;
            }
            if in_window(r[0]) {
                sink_bytes += ip_bytes;
            }
            if f.kind == FlowKind::Udp && r.len() >= 8 {
                if r[2] > 0.0 {
                    bins[fi][b].owd_ms = r[5];
                    if in_window(r[0]) {
                        owds.push(r[5]);
                    }
                }
                if in_window(r[0]) {
                    rce += r[3] as u64;
                    // Net per bin: gaps opened minus gaps a late datagram filled (can be
                    // negative in the bin a late one arrives in).
                    rlost += r[7];
                    if r.len() >= 10 {
                        rreordered += r[8] as u64;
                        rdup += r[9] as u64;
                    }
                }
            }
        }
        let active = (f.stop.as_secs_f64().min(end) - f.start.as_secs_f64().max(w0)).max(1e-9);
        let bytes = if have_log {
            delivered[fi] as f64
        } else {
            sink_bytes
        };
        let arrivals = delivered_pkts[fi] + dropped[fi];
        flows.push(FlowSummary {
            name: f.name.clone(),
            kind: format!("{:?}", f.kind).to_lowercase(),
            direction: match f.direction {
                Direction::Forward => "forward".into(),
                Direction::Reverse => "reverse".into(),
            },
            throughput_mbps: bytes * 8.0 / active / 1e6,
            delivered_bytes: bytes as u64,
            loss_ratio: if arrivals > 0 {
                dropped[fi] as f64 / arrivals as f64
            } else if f.kind == FlowKind::Udp && !have_log {
                let got: f64 = sink
                    .iter()
                    .filter(|r| r.len() >= 8 && in_window(r[0]))
                    .map(|r| r[2])
                    .sum::<f64>()
                    - rdup as f64;
                let lost = rlost.max(0.0);
                if got + lost > 0.0 {
                    lost / (got + lost)
                } else {
                    0.0
                }
            } else {
                0.0
            },
            drops: dropped[fi],
            qdelay_ms: Dist::of(&mut q_samples[fi]),
            ce_marks: ce[fi],
            ce_ratio: if delivered_pkts[fi] > 0 {
                ce[fi] as f64 / delivered_pkts[fi] as f64
            } else {
                0.0
            },
            rtt_ms: Dist::of(&mut rtts),
            owd_ms: Dist::of(&mut owds),
            receiver_ce: rce,
            receiver_lost: rlost.max(0.0) as u64,
            receiver_reordered: rreordered,
            receiver_duplicates: rdup,
            duplicates: copies[fi],
            n_dd,
            target_mbps,
            viewer,
            bins: std::mem::take(&mut bins[fi]),
        });
    }
    // Every packet of the forward flows of a kind, pooled.
    let mut by_kind: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    for (fi, f) in sc.flows.iter().enumerate() {
        if f.direction == Direction::Forward {
            by_kind
                .entry(flows[fi].kind.clone())
                .or_default()
                .extend_from_slice(&q_samples[fi]);
        }
    }
    let qdelay_ms_by_kind = by_kind
        .into_iter()
        .map(|(k, mut v)| (k, Dist::of(&mut v)))
        .collect();
    // Utilisation and link series.
    let cap_bits = sc
        .forward
        .capacity
        .bits_between(Duration::from_secs_f64(w0), Duration::from_secs_f64(end));
    let link_total_bytes = if have_log {
        link_bytes as f64
    } else {
        flows
            .iter()
            .zip(&sc.flows)
            .filter(|(_, f)| f.direction == Direction::Forward)
            .map(|(s, _)| s.delivered_bytes as f64)
            .sum()
    };
    let link_series = (0..nbins)
        .map(|b| {
            let t = b as f64 * bin;
            let cap = sc
                .forward
                .capacity
                .bits_between(Duration::from_secs_f64(t), Duration::from_secs_f64(t + bin))
                / bin
                / 1e6;
            let rate = if have_log {
                link_bins[b] * 8.0 / bin / 1e6
            } else {
                flows
                    .iter()
                    .zip(&sc.flows)
                    .filter(|(_, f)| f.direction == Direction::Forward)
                    .map(|(s, _)| s.bins.get(b).map_or(0.0, |x| x.rate_mbps))
                    .sum()
            };
            (t, cap, rate)
        })
        .collect();
    let link = LinkSummary {
        utilisation: if cap_bits > 0.0 {
            link_total_bytes * 8.0 / cap_bits
        } else {
            0.0
        },
        loss_ratio: if link_pkts > 0 {
            link_drops as f64 / link_pkts as f64
        } else {
            0.0
        },
        qdelay_ms: Dist::of(&mut link_q),
        ce_marks: link_ce,
        duplicates: link_copies,
        bins: link_series,
    };
    // Jain over forward flows while all are active.
    let fwd: Vec<usize> = (0..nf)
        .filter(|i| sc.flows[*i].direction == Direction::Forward)
        .collect();
    let (mut jain_v, mut jain_w) = (None, None);
    if fwd.len() >= 2 {
        let a = fwd
            .iter()
            .map(|i| sc.flows[*i].start.as_secs_f64())
            .fold(w0, f64::max);
        let b = fwd
            .iter()
            .map(|i| sc.flows[*i].stop.as_secs_f64())
            .fold(end, f64::min);
        if b - a >= bin {
            let x: Vec<f64> = fwd
                .iter()
                .map(|i| {
                    let s = &flows[*i].bins;
                    let sel: Vec<f64> = s
                        .iter()
                        .filter(|fb| fb.t_s >= a && fb.t_s + bin <= b)
                        .map(|fb| fb.rate_mbps)
                        .collect();
                    sel.iter().sum::<f64>() / sel.len().max(1) as f64
                })
                .collect();
            jain_v = cg_link::stats::jain_index(&x);
            jain_w = Some((a, b));
        }
    }
    Ok(Metrics {
        window_s: (w0, end),
        link,
        flows,
        qdelay_ms_by_kind,
        jain: jain_v,
        jain_window_s: jain_w,
    })
}

/// One line of cg-send's `--stats-file` (newline-delimited JSON, cg-sender's `Stats`), the
/// fields netlab uses, deserialised by name (the others are ignored).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct CgSendStat {
    /// CLOCK_MONOTONIC of the sample.
    pub mono_ns: u64,
    /// Controller target, bit/s.
    #[serde(default = "f64_nan")]
    pub target_bps: f64,
    /// RTT, ms.
    #[serde(default)]
    pub rtt_ms: Option<f64>,
    /// The controller's own figures (GCC: `n_dd`…; SCReAM: `alpha`…).
    #[serde(default)]
    pub extra: HashMap<String, f64>,
}

fn f64_nan() -> f64 {
    f64::NAN
}

impl CgSendStat {
    /// GCC's cumulative delay-based decrease count.
    pub fn n_dd(&self) -> Option<u64> {
        self.extra.get("n_dd").map(|&n| n as u64)
    }
}

/// Reads cg-send statistics; lines that do not parse are skipped.
pub fn cg_send_stats(path: &Path) -> Vec<CgSendStat> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Flow spec of a summary (same order).
pub fn spec_of<'a>(sc: &'a Scenario, name: &str) -> Option<&'a FlowSpec> {
    sc.flows.iter().find(|f| f.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cg_send_statistics_lines_are_read_and_bad_ones_skipped() {
        let dir = std::env::temp_dir().join(format!("netlab-cgstats-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("s.jsonl");
        std::fs::write(
            &p,
            "{\"mono_ns\":5,\"target_bps\":300000,\"rtt_ms\":null,\"extra\":{\"n_dd\":2.0}}\nnot json\n{\"mono_ns\":7,\"target_bps\":1e6,\"rtt_ms\":51.5,\"extra\":{}}\n",
        )
        .unwrap();
        let v = cg_send_stats(&p);
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].n_dd(), Some(2));
        assert_eq!(v[1].rtt_ms, Some(51.5));
        assert_eq!(v[1].n_dd(), None);
        std::fs::remove_dir_all(&dir).ok();
    }
}
