//! PNG plots in the papers' style: rate against capacity, queuing delay and RTT, loss.

use std::path::Path;

use plotters::prelude::*;

use crate::metrics::Metrics;
use crate::{Error, Result};

const W: u32 = 1000;
const H: u32 = 420;

fn err(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Output {
        path: path.to_owned(),
        detail: e.to_string(),
    }
}

fn color(i: usize) -> RGBColor {
    const C: [RGBColor; 8] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
    ];
    C[i % C.len()]
}

/// Flows drawn individually (beyond this many, the rest are summed into "others").
const MAX_FLOWS: usize = 6;

type Series = Vec<(String, Vec<(f64, f64)>)>;

fn line_chart(path: &Path, title: &str, y_label: &str, series: &Series, dur: f64) -> Result<()> {
    let root = BitMapBackend::new(path, (W, H)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(path, e))?;
    let ymax = series
        .iter()
        .flat_map(|(_, s)| s.iter().map(|p| p.1))
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max)
        .max(1e-3)
        * 1.1;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..dur.max(1e-3), 0.0..ymax)
        .map_err(|e| err(path, e))?;
    chart
        .configure_mesh()
        .x_desc("time (s)")
        .y_desc(y_label)
        .draw()
        .map_err(|e| err(path, e))?;
    for (i, (name, pts)) in series.iter().enumerate() {
        let c = if name == "capacity" { BLACK } else { color(i) };
        let pts: Vec<(f64, f64)> = pts.iter().copied().filter(|p| p.1.is_finite()).collect();
        chart
            .draw_series(LineSeries::new(pts, c.stroke_width(2)))
            .map_err(|e| err(path, e))?
            .label(name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| err(path, e))?;
    root.present().map_err(|e| err(path, e))?;
    Ok(())
}

/// Writes `rate.png`, `delay.png`, `loss.png` into `dir`.
pub fn all(m: &Metrics, dur: f64, dir: &Path) -> Result<()> {
    // Rate against capacity.
    let mut rate: Series = vec![(
        "capacity".into(),
        m.link.bins.iter().map(|(t, c, _)| (*t, *c)).collect(),
    )];
    rate.push((
        "total (forward)".into(),
        m.link.bins.iter().map(|(t, _, r)| (*t, *r)).collect(),
    ));
    for f in m.flows.iter().take(MAX_FLOWS) {
        rate.push((
            f.name.clone(),
            f.bins.iter().map(|b| (b.t_s, b.rate_mbps)).collect(),
        ));
    }
    line_chart(
        &dir.join("rate.png"),
        "Delivered rate and capacity",
        "Mb/s",
        &rate,
        dur,
    )?;
    // Queuing delay and RTT.
    let mut delay: Series = Vec::new();
    for f in m.flows.iter().take(MAX_FLOWS) {
        delay.push((
            format!("{} queuing", f.name),
            f.bins.iter().map(|b| (b.t_s, b.qdelay_ms)).collect(),
        ));
        if f.bins.iter().any(|b| b.rtt_ms.is_finite()) {
            delay.push((
                format!("{} RTT", f.name),
                f.bins.iter().map(|b| (b.t_s, b.rtt_ms)).collect(),
            ));
        }
        if f.bins.iter().any(|b| b.owd_ms.is_finite()) {
            delay.push((
                format!("{} one-way", f.name),
                f.bins.iter().map(|b| (b.t_s, b.owd_ms)).collect(),
            ));
        }
    }
    line_chart(
        &dir.join("delay.png"),
        "Queuing delay (bottleneck) and endpoint delay",
        "ms",
        &delay,
        dur,
    )?;
    // Loss ratio per bin.
    let mut loss: Series = Vec::new();
    for f in m.flows.iter().take(MAX_FLOWS) {
        loss.push((
            f.name.clone(),
            f.bins
                .iter()
                .map(|b| {
                    let l = if b.arrivals > 0 {
                        b.drops as f64 / b.arrivals as f64
                    } else {
                        0.0
                    };
                    (b.t_s, l)
                })
                .collect(),
        ));
    }
    line_chart(
        &dir.join("loss.png"),
        "Fraction lost at the bottleneck",
        "loss ratio",
        &loss,
        dur,
    )?;
    Ok(())
}
