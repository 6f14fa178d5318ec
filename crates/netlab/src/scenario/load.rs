//! `[load]`, checked: busy loops beside the endpoints and the endpoints' nice value.

use toml::Spanned;

use super::error::{Ctx, ScenarioError};
use super::schema;

/// `[load]`, checked: busy loops beside the endpoints, started before t0 and stopped with
/// the run, and the nice value of the media endpoints.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Load {
    /// Busy loops, 1…64.
    pub hogs: u32,
    /// Their nice value.
    pub nice: i32,
    /// The share of each 10 ms a loop is busy, (0, 1].
    pub duty: f64,
    /// The nice value of cg-send, cg-recv and Chromium.
    pub endpoint_nice: i32,
}

pub(super) fn load(cx: &Ctx<'_>, raw: &schema::RawLoad) -> Result<Load, ScenarioError> {
    let nice = |v: &Spanned<i32>, field: &str| {
        if (-20..=19).contains(v.get_ref()) {
            Ok(*v.get_ref())
        } else {
            Err(cx.err(v.span(), field, "a nice value lies in −20…19"))
        }
    };
    let hogs = *raw.hogs.get_ref();
    if !(1..=64).contains(&hogs) {
        return Err(cx.err(raw.hogs.span(), "load.hogs", "must lie in 1…64"));
    }
    let duty = *raw.duty.get_ref();
    if !(duty > 0.0 && duty <= 1.0) {
        return Err(cx.err(raw.duty.span(), "load.duty", "must lie in (0, 1]"));
    }
    Ok(Load {
        hogs,
        nice: nice(&raw.nice, "load.nice")?,
        duty,
        endpoint_nice: nice(&raw.endpoint_nice, "load.endpoint_nice")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::testing::{OK, parse};

    #[test]
    fn a_load_section_is_checked_with_its_defaults() {
        assert_eq!(parse(OK).unwrap().load, None);
        let s = parse(&format!("{OK}[load]\n")).unwrap();
        assert_eq!(
            s.load,
            Some(Load {
                hogs: 2,
                nice: 19,
                duty: 1.0,
                endpoint_nice: 0
            })
        );
        let s = parse(&format!(
            "{OK}[load]\nhogs = 1\nnice = 5\nduty = 0.5\nendpoint_nice = -5\n"
        ))
        .unwrap();
        assert_eq!(
            s.load.map(|l| (l.hogs, l.nice, l.duty, l.endpoint_nice)),
            Some((1, 5, 0.5, -5))
        );
        for (bad, field) in [
            ("hogs = 0", "load.hogs"),
            ("nice = 20", "load.nice"),
            ("duty = 0.0", "load.duty"),
            ("duty = 1.5", "load.duty"),
            ("endpoint_nice = -21", "load.endpoint_nice"),
        ] {
            let e = parse(&format!("{OK}[load]\n{bad}\n")).unwrap_err();
            assert_eq!(e.field, field, "{bad}: {e}");
            assert!(e.line > 0, "{bad}: {e} has a location");
        }
        assert!(parse(&format!("{OK}[load]\nhog = 2\n")).is_err());
    }
}
