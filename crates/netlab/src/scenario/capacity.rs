//! A link's capacity, checked: constant, a schedule of rate steps and outages, or a
//! Mahimahi trace (gzipped or not).

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use cg_link::{CapacityConfig, MahimahiTrace, RateStep};
use cg_types::Bitrate;
use toml::Spanned;

use super::error::{Ctx, ScenarioError};
use super::schema::{RawCapacityStep, RawLink};

/// The longest outage: one day, cg-link's bound on any duration.
pub const MAX_OUTAGE: Duration = Duration::from_secs(86_400);

/// The link's capacity: exactly one of `capacity` (constant), `schedule` (steps and
/// outages) or `trace` (a Mahimahi file, read relative to `base`).
pub(super) fn capacity(
    cx: &Ctx<'_>,
    l: &RawLink,
    span: Range<usize>,
    name: &str,
    base: &Path,
) -> Result<CapacityConfig, ScenarioError> {
    let given = [
        l.capacity.is_some(),
        l.schedule.is_some(),
        l.trace.is_some(),
    ]
    .iter()
    .filter(|b| **b)
    .count();
    if given != 1 {
        return Err(cx.err(
            span,
            &format!("{name}.capacity"),
            "give exactly one of `capacity`, `schedule` or `trace`",
        ));
    }
    if let Some(c) = &l.capacity {
        Ok(CapacityConfig::constant(c.get_ref().0))
    } else if let Some(s) = &l.schedule {
        schedule(cx, s.get_ref(), s.span(), &format!("{name}.schedule"))
    } else {
        let t = l.trace.as_ref().expect("exactly one capacity form is set");
        trace(cx, t, base, &format!("{name}.trace"))
    }
}

/// A Mahimahi trace file (`trace = "…"`, relative to `base`): one delivery opportunity per
/// line, in milliseconds.
fn trace(
    cx: &Ctx<'_>,
    t: &Spanned<String>,
    base: &Path,
    field: &str,
) -> Result<CapacityConfig, ScenarioError> {
    let path: PathBuf = base.join(t.get_ref());
    let text = read_trace(&path).map_err(|e| {
        cx.err(
            t.span(),
            field,
            format!("cannot read {}: {e}", path.display()),
        )
    })?;
    let mut ops = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let ms: u64 = line.parse().map_err(|_| {
            cx.err(
                t.span(),
                field,
                format!(
                    "{} line {}: `{line}` is not a millisecond count",
                    path.display(),
                    i + 1
                ),
            )
        })?;
        if ops.last().is_some_and(|&p| ms < p) {
            return Err(cx.err(
                t.span(),
                field,
                format!("{} line {}: timestamps go backwards", path.display(), i + 1),
            ));
        }
        ops.push(ms);
    }
    if ops.is_empty() || ops.last() == Some(&0) {
        return Err(cx.err(t.span(), field, "trace is empty"));
    }
    Ok(CapacityConfig::Trace {
        trace: MahimahiTrace::new(ops).map_err(|e| cx.err(t.span(), field, e.to_string()))?,
    })
}

/// A trace file's text; a name ending in `.gz` is gunzipped (a 360 s cellular trace is
/// 8.6 MB as text, 0.7 MB compressed).
fn read_trace(path: &Path) -> std::io::Result<String> {
    if path.extension().is_some_and(|e| e == "gz") {
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut flate2::read::GzDecoder::new(std::fs::File::open(path)?),
            &mut text,
        )?;
        Ok(text)
    } else {
        std::fs::read_to_string(path)
    }
}

/// A capacity schedule: rate steps and outages (`{ at = "60s", down = "2s" }`: zero from
/// `at`, then back to the rate in force before, unless a later step starts right then).
fn schedule(
    cx: &Ctx<'_>,
    steps: &[Spanned<RawCapacityStep>],
    span: Range<usize>,
    field: &str,
) -> Result<CapacityConfig, ScenarioError> {
    if steps.is_empty() {
        return Err(cx.err(span, field, "schedule is empty"));
    }
    let fmt = |d: Duration| humantime::format_duration(d).to_string();
    let mut out: Vec<(Duration, Bitrate)> = Vec::new();
    let mut up_rate = Bitrate::ZERO;
    // The outage in force: its start and end.
    let mut down: Option<(Duration, Duration)> = None;
    for (i, step) in steps.iter().enumerate() {
        let s = step.get_ref();
        let f = |k: &str| format!("{field}[{i}].{k}");
        let at = s.at.get_ref().0;
        if i == 0 && !at.is_zero() {
            return Err(cx.err(
                s.at.span(),
                &f("at"),
                "the first step must be `at = \"0s\"`",
            ));
        }
        if out.last().is_some_and(|(prev, _)| at <= *prev) {
            return Err(cx.err(s.at.span(), &f("at"), "step times must increase"));
        }
        if let Some((from, until)) = down.take() {
            if at < until {
                return Err(cx.err(
                    s.at.span(),
                    &f("at"),
                    format!(
                        "starts at {} inside the outage from {} to {}",
                        fmt(at),
                        fmt(from),
                        fmt(until)
                    ),
                ));
            }
            if until < at {
                out.push((until, up_rate));
            }
        }
        match (&s.rate, &s.down) {
            (Some(r), None) => {
                up_rate = r.get_ref().0;
                out.push((at, up_rate));
            }
            (None, Some(d)) => {
                let len = d.get_ref().0;
                if i == 0 {
                    return Err(cx.err(
                        d.span(),
                        &f("down"),
                        "the link must be up at 0s (netlab measures the RTT through it before \
                         the run starts); start the outage later",
                    ));
                }
                if len.is_zero() || len > MAX_OUTAGE {
                    return Err(cx.err(
                        d.span(),
                        &f("down"),
                        format!("must be above zero and at most one day, got {}", fmt(len)),
                    ));
                }
                let Some(end) = at.checked_add(len) else {
                    return Err(cx.err(d.span(), &f("down"), "the outage ends beyond any run"));
                };
                out.push((at, Bitrate::ZERO));
                down = Some((at, end));
            }
            (Some(_), Some(d)) => {
                return Err(cx.err(d.span(), &f("down"), "give `rate` or `down`, not both"));
            }
            (None, None) => {
                return Err(cx.err(
                    step.span(),
                    &format!("{field}[{i}]"),
                    "a step needs `rate` (a new capacity) or `down` (an outage, e.g. \"2s\")",
                ));
            }
        }
    }
    if let Some((_, until)) = down {
        out.push((until, up_rate));
    }
    // cg-link's steps hold for a duration; the last holds for ever.
    let steps = out
        .iter()
        .enumerate()
        .map(|(i, (at, rate))| RateStep {
            duration: out
                .get(i + 1)
                .map_or(Duration::from_secs(1), |(next, _)| *next - *at),
            rate: *rate,
        })
        .collect();
    Ok(CapacityConfig::Schedule {
        steps,
        repeat: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;
    use crate::scenario::testing::{OK, parse};

    #[test]
    fn mahimahi_traces_are_read_relative_to_the_scenario() {
        let dir = std::env::temp_dir().join(format!("netlab-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // 12 Mb/s: one 1500-byte opportunity per ms.
        let ops: String = (1..=1000).map(|i| format!("{i}\n")).collect();
        std::fs::write(dir.join("12mbit.trace"), &ops).unwrap();
        std::fs::write(dir.join("empty.trace"), "\n").unwrap();
        let text = OK.replace("capacity = \"1Mbit\"", "trace = \"12mbit.trace\"");
        let s = Scenario::parse(&text, "t.toml", "t", &dir).unwrap();
        assert!(
            matches!(s.forward.capacity, CapacityConfig::Trace { ref trace } if trace.millis().len() == 1000)
        );
        assert_eq!(
            s.forward.capacity.rate_at(Duration::ZERO),
            Bitrate::mbps(12)
        );
        // Gzipped: the same trace.
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut gz, ops.as_bytes()).unwrap();
        std::fs::write(dir.join("12mbit.trace.gz"), gz.finish().unwrap()).unwrap();
        let text = OK.replace("capacity = \"1Mbit\"", "trace = \"12mbit.trace.gz\"");
        let s = Scenario::parse(&text, "t.toml", "t", &dir).unwrap();
        assert_eq!(
            s.forward.capacity.rate_at(Duration::ZERO),
            Bitrate::mbps(12)
        );
        // Not gzip although named so: a clear error on the field.
        std::fs::write(dir.join("bad.trace.gz"), "1\n2\n").unwrap();
        let bad = OK.replace("capacity = \"1Mbit\"", "trace = \"bad.trace.gz\"");
        let e = Scenario::parse(&bad, "t.toml", "t", &dir).unwrap_err();
        assert!(
            e.field == "forward.trace" && e.message.contains("cannot read"),
            "{e}"
        );
        let bad = OK.replace("capacity = \"1Mbit\"", "trace = \"empty.trace\"");
        let e = Scenario::parse(&bad, "t.toml", "t", &dir).unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (4, "forward.trace"), "{e}");
        let both = OK.replace(
            "capacity = \"1Mbit\"",
            "capacity = \"1Mbit\"\ntrace = \"x\"",
        );
        let e = Scenario::parse(&both, "t.toml", "t", &dir).unwrap_err();
        assert!(e.message.contains("exactly one"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }

    /// `OK` with a forward schedule of `steps` (one per line, from line 5) for its capacity.
    fn with_schedule(steps: &[&str]) -> String {
        OK.replace(
            "capacity = \"1Mbit\"",
            &format!("schedule = [\n{}\n]", steps.join(",\n")),
        )
    }

    #[test]
    fn outages_in_a_schedule_go_to_zero_and_come_back_at_the_rate_before() {
        let s = parse(&with_schedule(&[
            "{ at = \"0s\", rate = \"2Mbit\" }",
            "{ at = \"4s\", down = \"2s\" }",
            "{ at = \"8s\", rate = \"1Mbit\" }",
            "{ at = \"9s\", down = \"500ms\" }",
            "{ at = \"9500ms\", down = \"1s\" }",
        ]))
        .unwrap();
        let sec = Duration::from_secs_f64;
        let step = |secs: f64, mbps: u64| RateStep {
            duration: sec(secs),
            rate: Bitrate::mbps(mbps),
        };
        assert_eq!(
            s.forward.capacity,
            CapacityConfig::Schedule {
                steps: vec![
                    step(4.0, 2),
                    step(2.0, 0),
                    step(2.0, 2),
                    step(1.0, 1),
                    step(0.5, 0),
                    step(1.0, 0),
                    step(1.0, 1),
                ],
                repeat: false,
            }
        );
        assert_eq!(s.forward.capacity.rate_at(sec(5.0)), Bitrate::ZERO);
        // 2 Mb/s × 6 s + 1 Mb/s × 1 s, nothing in the outages.
        let bits = s.forward.capacity.bits_between(sec(0.0), sec(10.0));
        assert!((bits - 13e6).abs() < 1.0, "{bits}");
        // An outage ending where the next step starts needs no return step.
        let s = parse(&with_schedule(&[
            "{ at = \"0s\", rate = \"2Mbit\" }",
            "{ at = \"4s\", down = \"2s\" }",
            "{ at = \"6s\", rate = \"1Mbit\" }",
        ]))
        .unwrap();
        let CapacityConfig::Schedule { steps, .. } = &s.forward.capacity else {
            panic!()
        };
        assert_eq!(steps.len(), 3);
    }

    #[test]
    fn bad_outages_are_refused_with_file_line_and_field() {
        // The steps are refused at `line`, naming `field`, with a message containing `says`.
        let refused = |steps: &[&str], line: usize, field: &str, says: &str| {
            let e = parse(&with_schedule(steps)).unwrap_err();
            assert_eq!((e.line, e.field.as_str()), (line, field), "{e}");
            assert!(e.message.contains(says), "{e}");
        };
        let up = "{ at = \"0s\", rate = \"2Mbit\" }";
        refused(
            &["{ at = \"0s\", down = \"2s\" }"],
            5,
            "forward.schedule[0].down",
            "must be up at 0s",
        );
        refused(
            &[up, "{ at = \"4s\", down = \"2s\", rate = \"1Mbit\" }"],
            6,
            "forward.schedule[1].down",
            "not both",
        );
        refused(&[up, "{ at = \"4s\" }"], 6, "forward.schedule[1]", "`down`");
        refused(
            &[up, "{ at = \"4s\", down = \"0s\" }"],
            6,
            "forward.schedule[1].down",
            "above zero",
        );
        refused(
            &[
                up,
                "{ at = \"4s\", down = \"2s\" }",
                "{ at = \"5s\", rate = \"1Mbit\" }",
            ],
            7,
            "forward.schedule[2].at",
            "inside the outage from 4s to 6s",
        );
        // A zero rate points to `down`.
        refused(&[up, "{ at = \"4s\", rate = \"0\" }"], 6, "rate", "down = ");
        // An outage whose end does not fit in a duration is refused, not a panic.
        refused(
            &[up, "{ at = \"18446744073709551615s\", down = \"1day\" }"],
            6,
            "forward.schedule[1].down",
            "beyond any run",
        );
        let e = parse(&with_schedule(&[
            up,
            "{ at = \"4s\", down = \"2s\", up = true }",
        ]))
        .unwrap_err();
        assert!(e.message.contains("unknown field `up`"), "{e}");
    }
}
