//! A link's impairments, checked: propagation delay, jitter, reordering, duplication and
//! random loss (Bernoulli or Gilbert-Elliott).

use std::time::Duration;

use cg_link::{DelayConfig, LossConfig};
use toml::Spanned;

use super::error::{Ctx, ScenarioError};
use super::schema::{LossKind, RawLink, RawLoss};
use super::units;

/// The longest `delay`, `jitter` or `reorder_delay` a scenario may give: longer is a typo
/// (a geostationary satellite hop is 0.25 s).
pub const MAX_DELAY: Duration = Duration::from_secs(10);

/// `delay`, `jitter`, `reorder`, `reorder_delay`, `duplicate`.
pub(super) fn delay(cx: &Ctx<'_>, l: &RawLink, name: &str) -> Result<DelayConfig, ScenarioError> {
    let field = |k: &str| format!("{name}.{k}");
    let time = |v: &Option<Spanned<units::Dur>>, k: &str| match v {
        None => Ok(Duration::ZERO),
        Some(d) if d.get_ref().0 > MAX_DELAY => Err(cx.err(
            d.span(),
            &field(k),
            format!(
                "{} is longer than {}: surely a typo",
                humantime::format_duration(d.get_ref().0),
                humantime::format_duration(MAX_DELAY)
            ),
        )),
        Some(d) => Ok(d.get_ref().0),
    };
    let mut c = DelayConfig {
        base: time(&l.delay, "delay")?,
        jitter: time(&l.jitter, "jitter")?,
        reorder: probability(cx, l.reorder.as_ref(), &field("reorder"), true)?,
        duplicate: probability(cx, l.duplicate.as_ref(), &field("duplicate"), true)?,
        ..DelayConfig::default()
    };
    if let Some(rd) = &l.reorder_delay {
        if c.reorder == 0.0 {
            return Err(cx.err(
                rd.span(),
                &field("reorder_delay"),
                "`reorder_delay` without `reorder`: set `reorder`, the probability that a packet is held back",
            ));
        }
        if rd.get_ref().0.is_zero() {
            return Err(cx.err(
                rd.span(),
                &field("reorder_delay"),
                "must be above zero (a packet held back by nothing is not reordered)",
            ));
        }
        c.reorder_delay = time(&l.reorder_delay, "reorder_delay")?;
    }
    Ok(c)
}

/// A probability field: in `[0, 1]` (`[0, 1)` unless `one_ok`); absent is 0.
fn probability(
    cx: &Ctx<'_>,
    v: Option<&Spanned<f64>>,
    field: &str,
    one_ok: bool,
) -> Result<f64, ScenarioError> {
    let Some(v) = v else { return Ok(0.0) };
    let p = *v.get_ref();
    let ok = if one_ok {
        (0.0..=1.0).contains(&p)
    } else {
        (0.0..1.0).contains(&p)
    };
    if ok {
        Ok(p)
    } else {
        Err(cx.err(
            v.span(),
            field,
            format!(
                "must be a probability in [0, 1{}, got {p}",
                if one_ok { "]" } else { ")" }
            ),
        ))
    }
}

/// `loss = 0.01`, `loss = { mean = 0.02, burst = 4 }`, `loss = { kind = "gilbert_elliott",
/// p = …, r = …, loss_good = …, loss_bad = … }` or `loss = { kind = "bernoulli", p = … }`.
pub(super) fn loss(
    cx: &Ctx<'_>,
    l: Option<&Spanned<RawLoss>>,
    field: &str,
) -> Result<LossConfig, ScenarioError> {
    let Some(l) = l else {
        return Ok(LossConfig::None);
    };
    let m = match l.get_ref() {
        RawLoss::Bernoulli(p) => {
            let p = probability(cx, Some(&Spanned::new(l.span(), *p)), field, false)?;
            return Ok(bernoulli(p));
        }
        RawLoss::Model(m) => m,
    };
    let sub = |k: &str| format!("{field}.{k}");
    let refuse = |fields: &[(&Option<Spanned<f64>>, &str)], why: &str| match fields
        .iter()
        .find_map(|(v, k)| v.as_ref().map(|v| (v.span(), *k)))
    {
        Some((span, k)) => Err(cx.err(span, &sub(k), why)),
        None => Ok(()),
    };
    let need = |v: &Option<Spanned<f64>>, k: &str, why: &str| {
        v.as_ref()
            .map(|v| (v.span(), *v.get_ref()))
            .ok_or_else(|| cx.err(l.span(), &sub(k), why))
    };
    let kind = m
        .kind
        .as_ref()
        .map_or(LossKind::GilbertElliott, |k| *k.get_ref());
    match kind {
        LossKind::Bernoulli => {
            refuse(
                &[
                    (&m.r, "r"),
                    (&m.loss_good, "loss_good"),
                    (&m.loss_bad, "loss_bad"),
                    (&m.mean, "mean"),
                    (&m.burst, "burst"),
                ],
                "belongs to `kind = \"gilbert_elliott\"`; a Bernoulli loss has only `p`",
            )?;
            need(&m.p, "p", "a Bernoulli loss needs `p`, its probability")?;
            let p = probability(cx, m.p.as_ref(), &sub("p"), false)?;
            Ok(bernoulli(p))
        }
        LossKind::GilbertElliott if m.mean.is_some() || m.burst.is_some() => {
            refuse(
                &[
                    (&m.p, "p"),
                    (&m.r, "r"),
                    (&m.loss_good, "loss_good"),
                    (&m.loss_bad, "loss_bad"),
                ],
                "give either `mean` and `burst`, or `p` and `r` (with `loss_good` and `loss_bad`), not both",
            )?;
            let (mean_span, mean) =
                need(&m.mean, "mean", "`burst` needs `mean`, the mean loss ratio")?;
            let (burst_span, burst) = need(
                &m.burst,
                "burst",
                "`mean` needs `burst`, the mean length of a loss burst in packets",
            )?;
            if !(mean > 0.0 && mean < 1.0) {
                return Err(cx.err(
                    mean_span,
                    &sub("mean"),
                    format!("must be above 0 and below 1, got {mean}"),
                ));
            }
            if !(burst.is_finite() && burst >= 1.0) {
                return Err(cx.err(
                    burst_span,
                    &sub("burst"),
                    format!("must be at least 1 (packets), got {burst}"),
                ));
            }
            LossConfig::gilbert_elliott_mean_burst(mean, burst)
                .map_err(|e| cx.err(mean_span, &sub("mean"), e.to_string()))
        }
        LossKind::GilbertElliott => {
            let why = "a Gilbert-Elliott loss needs `p` and `r` (or `mean` and `burst`)";
            need(&m.p, "p", why)?;
            let (r_span, _) = need(&m.r, "r", why)?;
            let p = probability(cx, m.p.as_ref(), &sub("p"), true)?;
            let r = probability(cx, m.r.as_ref(), &sub("r"), true)?;
            if r == 0.0 {
                return Err(cx.err(
                    r_span,
                    &sub("r"),
                    "must be above zero: with r = 0 the Bad state never ends",
                ));
            }
            let loss_good = probability(cx, m.loss_good.as_ref(), &sub("loss_good"), true)?;
            let loss_bad = match &m.loss_bad {
                Some(_) => probability(cx, m.loss_bad.as_ref(), &sub("loss_bad"), true)?,
                None => 1.0,
            };
            let c = LossConfig::GilbertElliott {
                p,
                r,
                loss_good,
                loss_bad,
            };
            if c.mean_loss() >= 1.0 {
                return Err(cx.err(l.span(), field, "loses every packet (mean loss 1)"));
            }
            Ok(c)
        }
    }
}

/// Bernoulli loss of probability `p`; none at 0.
fn bernoulli(p: f64) -> LossConfig {
    if p > 0.0 {
        LossConfig::Bernoulli { p }
    } else {
        LossConfig::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::testing::{OK, parse};

    /// `OK` with `lines` added to `[forward]` after its delay (so they start on line 6).
    fn forward_with(lines: &str) -> String {
        OK.replace(
            "delay = \"25ms\"\n",
            &format!("delay = \"25ms\"\n{lines}\n"),
        )
    }

    /// The error of `OK` with `lines` added to `[forward]`.
    fn refused(lines: &str) -> ScenarioError {
        parse(&forward_with(lines)).expect_err(lines)
    }

    #[test]
    fn every_impairment_is_read_per_direction_into_cg_link_configs() {
        let text = format!(
            "{}\n[reverse]\ncapacity = \"10Mbit\"\ndelay = \"5ms\"\njitter = \"1ms\"\nloss = 0.01\n",
            forward_with(
                "jitter = \"2ms\"\nreorder = 0.01\nreorder_delay = \"20ms\"\nduplicate = 0.02\n\
                 loss = { kind = \"gilbert_elliott\", p = 0.005, r = 0.25, loss_good = 0, loss_bad = 1 }"
            )
        );
        let s = parse(&text).unwrap();
        assert_eq!(
            s.forward.delay,
            DelayConfig {
                base: Duration::from_millis(25),
                jitter: Duration::from_millis(2),
                reorder: 0.01,
                reorder_delay: Duration::from_millis(20),
                duplicate: 0.02,
            }
        );
        assert_eq!(
            s.forward.loss,
            LossConfig::GilbertElliott {
                p: 0.005,
                r: 0.25,
                loss_good: 0.0,
                loss_bad: 1.0
            }
        );
        assert_eq!(s.reverse.delay.base, Duration::from_millis(5));
        assert_eq!(s.reverse.delay.jitter, Duration::from_millis(1));
        assert_eq!(s.reverse.delay.reorder, 0.0);
        assert_eq!(s.reverse.loss, LossConfig::Bernoulli { p: 0.01 });
    }

    #[test]
    fn omitted_impairments_are_none_and_reorder_delay_defaults_to_10ms() {
        let s = parse(OK).unwrap();
        assert_eq!(
            s.forward.delay,
            DelayConfig::fixed(Duration::from_millis(25))
        );
        assert_eq!(s.forward.loss, LossConfig::None);
        // The default reverse path copies the forward base delay, not its impairments.
        let s = parse(&forward_with("jitter = \"3ms\"\nreorder = 0.1\nloss = 0.1")).unwrap();
        assert_eq!(s.forward.delay.reorder_delay, Duration::from_millis(10));
        assert_eq!(
            s.reverse.delay,
            DelayConfig::fixed(Duration::from_millis(25))
        );
        assert_eq!(s.reverse.loss, LossConfig::None);
    }

    #[test]
    fn loss_is_a_probability_or_a_model_table() {
        let loss = |l: &str| {
            parse(&forward_with(&format!("loss = {l}")))
                .unwrap()
                .forward
                .loss
        };
        assert_eq!(loss("0.02"), LossConfig::Bernoulli { p: 0.02 });
        assert_eq!(loss("0"), LossConfig::None);
        assert_eq!(
            loss("{ kind = \"bernoulli\", p = 0.03 }"),
            LossConfig::Bernoulli { p: 0.03 }
        );
        // loss_good and loss_bad default to 0 and 1; integers are accepted as probabilities.
        assert_eq!(
            loss("{ kind = \"gilbert_elliott\", p = 0.01, r = 1 }"),
            LossConfig::GilbertElliott {
                p: 0.01,
                r: 1.0,
                loss_good: 0.0,
                loss_bad: 1.0
            }
        );
        // Mean loss and burst length: r = 1/burst, p = r·mean/(1 − mean).
        let LossConfig::GilbertElliott {
            p,
            r,
            loss_good,
            loss_bad,
        } = loss("{ mean = 0.02, burst = 4 }")
        else {
            panic!("not Gilbert-Elliott")
        };
        assert_eq!((r, loss_good, loss_bad), (0.25, 0.0, 1.0));
        assert!((p - 0.25 * 0.02 / 0.98).abs() < 1e-12, "{p}");
    }

    /// `(line, field, part of the message)` of the error for `lines` in `[forward]`.
    fn check_refused(lines: &str, line: usize, field: &str, says: &str) {
        let e = refused(lines);
        assert_eq!(e.file, "t.toml");
        assert_eq!((e.line, e.field.as_str()), (line, field), "{lines}: {e}");
        assert!(e.message.contains(says), "{lines}: {e}");
        assert!(e.to_string().starts_with(&format!("t.toml:{line}:")), "{e}");
    }

    #[test]
    fn out_of_range_delays_and_probabilities_are_refused_with_file_line_and_field() {
        check_refused("jitter = \"-1ms\"", 6, "jitter", "negative");
        check_refused("jitter = \"11s\"", 6, "forward.jitter", "longer than 10s");
        check_refused("\n\ndelay2 = 1", 8, "delay2", "unknown field");
        check_refused("reorder = 1.5", 6, "forward.reorder", "[0, 1]");
        check_refused("reorder = -0.1", 6, "forward.reorder", "[0, 1]");
        check_refused("duplicate = nan", 6, "forward.duplicate", "got NaN");
        check_refused(
            "reorder_delay = \"20ms\"",
            6,
            "forward.reorder_delay",
            "without `reorder`",
        );
        check_refused(
            "reorder = 0.1\nreorder_delay = \"0s\"",
            7,
            "forward.reorder_delay",
            "above zero",
        );
        check_refused(
            "reorder = 0.1\nreorder_delay = \"1h\"",
            7,
            "forward.reorder_delay",
            "longer than",
        );
        check_refused("jiter = \"1ms\"", 6, "jiter", "unknown field");
        let e = parse(&OK.replace("delay = \"25ms\"", "delay = \"2min\"")).unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (5, "forward.delay"), "{e}");
    }

    #[test]
    fn bad_loss_models_are_refused_with_file_line_and_field() {
        check_refused("loss = 1.0", 6, "forward.loss", "[0, 1)");
        check_refused("loss = -0.5", 6, "forward.loss", "[0, 1)");
        check_refused(
            "loss = \"lots\"",
            6,
            "loss",
            "a loss probability such as 0.01",
        );
        check_refused(
            "loss = { kind = \"gilbert_elliott\", p = 0.1 }",
            6,
            "forward.loss.r",
            "needs `p` and `r`",
        );
        check_refused(
            "loss = { p = 0.1, r = 0 }",
            6,
            "forward.loss.r",
            "never ends",
        );
        check_refused("loss = { p = 1.2, r = 0.5 }", 6, "forward.loss.p", "[0, 1]");
        check_refused(
            "loss = { p = 0.1, r = 0.5, loss_bad = 2 }",
            6,
            "forward.loss.loss_bad",
            "[0, 1]",
        );
        check_refused(
            "loss = { p = 0.1, r = 0.5, loss_good = 1 }",
            6,
            "forward.loss",
            "every packet",
        );
        check_refused(
            "loss = { mean = 0.02 }",
            6,
            "forward.loss.burst",
            "`mean` needs `burst`",
        );
        check_refused(
            "loss = { burst = 3 }",
            6,
            "forward.loss.mean",
            "`burst` needs `mean`",
        );
        check_refused(
            "loss = { mean = 0.02, burst = 0.5 }",
            6,
            "forward.loss.burst",
            "at least 1",
        );
        check_refused(
            "loss = { mean = 1, burst = 4 }",
            6,
            "forward.loss.mean",
            "below 1",
        );
        check_refused(
            "loss = { mean = 0.9, burst = 2 }",
            6,
            "forward.loss.mean",
            "at most burst/(burst + 1) = 0.667",
        );
        check_refused(
            "loss = { mean = 0.02, burst = 4, p = 0.1 }",
            6,
            "forward.loss.p",
            "not both",
        );
        check_refused(
            "loss = { kind = \"bernoulli\", p = 0.1, r = 0.3 }",
            6,
            "forward.loss.r",
            "only `p`",
        );
        check_refused(
            "loss = { kind = \"markov\" }",
            6,
            "kind",
            "unknown variant `markov`",
        );
        check_refused(
            "loss = { mean = 0.02, burst = 4, brust = 1 }",
            6,
            "brust",
            "unknown field `brust`",
        );
    }
}
