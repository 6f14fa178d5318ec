//! PNG plots in the papers' style: rate against capacity, queuing delay and RTT, loss.

use std::path::Path;

use plotters::prelude::*;

use crate::metrics::Metrics;
use crate::{Error, Result};

const W: u32 = 1000;
const H: u32 = 420;

fn err(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::output(path, e)
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

/// One axis of a heat map: its name and where each of its values sits (a sweep axis's
/// numbers, or positions 0, 1, … for an axis of strings).
#[derive(Debug, Clone, Copy)]
pub struct HeatAxis<'a> {
    /// Its name, the axis label.
    pub name: &'a str,
    /// Its values' coordinates, in order.
    pub coords: &'a [f64],
}

/// A heat map of `cells` (`(x, y)` index → value, NaN for none) over two sweep axes, drawn
/// on log₁₀ axes when every value of an axis is positive (MMSys16 Fig. 8's ku × kd), with the
/// best cell outlined; an axis of strings is drawn by its values' positions 0, 1, ….
/// Colour: dark (low) to yellow (high).
pub fn heatmap(
    path: &Path,
    title: &str,
    ax: HeatAxis<'_>,
    ay: HeatAxis<'_>,
    cells: &std::collections::BTreeMap<(usize, usize), f64>,
) -> Result<()> {
    let (vx, vy) = (ax.coords, ay.coords);
    let log = |v: &[f64]| v.iter().all(|x| *x > 0.0);
    let (lx, ly) = (log(vx), log(vy));
    let coord = |v: f64, is_log: bool| if is_log { v.log10() } else { v };
    // Cell edges halfway between neighbouring values (in the drawn scale).
    let edges = |vals: &[f64], is_log: bool| -> Vec<f64> {
        let c: Vec<f64> = vals.iter().map(|v| coord(*v, is_log)).collect();
        let mut e = Vec::with_capacity(c.len() + 1);
        let half = |i: usize| {
            if c.len() > 1 {
                (c[i + 1] - c[i]) / 2.0
            } else {
                0.5
            }
        };
        e.push(c[0] - half(0));
        for i in 0..c.len().saturating_sub(1) {
            e.push((c[i] + c[i + 1]) / 2.0);
        }
        e.push(c[c.len() - 1] + half(c.len().saturating_sub(2)));
        e
    };
    let (ex, ey) = (edges(vx, lx), edges(vy, ly));
    let finite: Vec<f64> = cells.values().copied().filter(|v| v.is_finite()).collect();
    let lo = finite.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = finite.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let root = BitMapBackend::new(path, (760, 640)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(path, e))?;
    let name = |a: HeatAxis<'_>, is_log: bool| {
        if is_log {
            format!("log10 {}", a.name)
        } else {
            a.name.to_owned()
        }
    };
    let (x0, x1) = (ex[0].min(ex[ex.len() - 1]), ex[0].max(ex[ex.len() - 1]));
    let (y0, y1) = (ey[0].min(ey[ey.len() - 1]), ey[0].max(ey[ey.len() - 1]));
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(|e| err(path, e))?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc(name(ax, lx))
        .y_desc(name(ay, ly))
        .draw()
        .map_err(|e| err(path, e))?;
    let best = cells
        .iter()
        .filter(|(_, v)| v.is_finite())
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map(|(k, _)| *k);
    let shade = |v: f64| {
        if !v.is_finite() {
            return RGBColor(220, 220, 220);
        }
        let t = if hi > lo { (v - lo) / (hi - lo) } else { 1.0 };
        // viridis-like: dark blue → green → yellow.
        let lerp = |a: f64, b: f64, t: f64| (a + (b - a) * t).round().clamp(0.0, 255.0) as u8;
        if t < 0.5 {
            let u = t * 2.0;
            RGBColor(
                lerp(68.0, 33.0, u),
                lerp(1.0, 145.0, u),
                lerp(84.0, 140.0, u),
            )
        } else {
            let u = (t - 0.5) * 2.0;
            RGBColor(
                lerp(33.0, 253.0, u),
                lerp(145.0, 231.0, u),
                lerp(140.0, 37.0, u),
            )
        }
    };
    chart
        .draw_series(cells.iter().map(|(&(x, y), &v)| {
            Rectangle::new([(ex[x], ey[y]), (ex[x + 1], ey[y + 1])], shade(v).filled())
        }))
        .map_err(|e| err(path, e))?;
    if let Some((x, y)) = best {
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(ex[x], ey[y]), (ex[x + 1], ey[y + 1])],
                ShapeStyle::from(&RED).stroke_width(3),
            )))
            .map_err(|e| err(path, e))?;
    }
    root.present().map_err(|e| err(path, e))?;
    Ok(())
}
