//! A link's queue, checked: cg-link's qdisc config as written, each mistake at its key, and
//! HTB classes' scenario flows taken out, to become rules once the flows are known.

use std::ops::Range;

use cg_link::qdisc::{LinkInfo, QdiscConfig};
use cg_types::Bitrate;
use toml::Spanned;

use super::error::{Ctx, Origin, ScenarioError};

/// HTB classes' scenario flows (`flows = ["cg"]`), by class name: netlab's one addition to
/// cg-link's qdisc config, turned into rules once the flows are known.
pub(super) type ClassFlows = Vec<(String, Vec<String>)>;

/// The link's queue: cg-link's [`QdiscConfig`] as written (`{ kind = "codel", target =
/// "13ms" }`, every omitted field at its Linux default), checked against the link's mean
/// `rate`. An HTB class may also name scenario flows (`flows = ["cg"]`); they are taken out
/// here and become rules in `link::with_flow_rules`. Every key's place goes into `origin`, and a
/// mistake is reported at the key it concerns.
pub(super) fn qdisc(
    cx: &Ctx<'_>,
    q: &Spanned<toml::Table>,
    name: &str,
    rate: Bitrate,
    origin: &mut Origin,
) -> Result<(QdiscConfig, ClassFlows), ScenarioError> {
    let field = format!("{name}.qdisc");
    let key_at = |key: &str| key_offset(cx.text, q.span(), key).unwrap_or(q.span().start);
    for key in q.get_ref().keys() {
        origin.note(cx, format!("{field}.{key}"), key_at(key));
    }
    let mut table = q.get_ref().clone();
    let mut class_flows = Vec::new();
    if table.get("kind").and_then(toml::Value::as_str) == Some("htb")
        && let Some(toml::Value::Array(classes)) = table.get_mut("classes")
    {
        for class in classes.iter_mut().filter_map(toml::Value::as_table_mut) {
            let Some(flows) = class.remove("flows") else {
                continue;
            };
            let flows: Vec<String> = flows.try_into().map_err(|_| {
                let at = key_at("flows");
                cx.err(
                    at..at,
                    &format!("{field}.classes.flows"),
                    "a list of flow names, such as [\"cg\"]",
                )
            })?;
            let class_name = class.get("name").and_then(toml::Value::as_str);
            class_flows.push((class_name.unwrap_or_default().to_owned(), flows));
        }
    }
    let config: QdiscConfig =
        toml::Value::Table(table.clone())
            .try_into()
            .map_err(|e: toml::de::Error| {
                // The qdisc is a tagged enum, so serde's error carries no key: the culprit is
                // `kind` if it fails alone, else the key that fails beside it alone (every
                // other field has a default).
                let fails = |keys: &[&str]| {
                    let t: toml::Table = keys
                        .iter()
                        .filter_map(|k| table.get_key_value(*k))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    toml::Value::Table(t).try_into::<QdiscConfig>().is_err()
                };
                let culprit = if fails(&["kind"]) {
                    Some("kind")
                } else {
                    table
                        .keys()
                        .map(String::as_str)
                        .filter(|k| *k != "kind")
                        .find(|k| fails(&["kind", k]))
                };
                let (field, at) = match culprit {
                    Some(k) => (format!("{field}.{k}"), key_at(k)),
                    None => (field.clone(), q.span().start),
                };
                cx.err(at..at, &field, e.message().trim().to_owned())
            })?;
    config
        .validate(LinkInfo::new(rate))
        .map_err(|e| cx.err(q.span(), &field, e.to_string()))?;
    Ok((config, class_flows))
}

/// Where `key = …` is first written in the table at `span`: an inline table's braces, or a
/// `[table]` section's body up to the next header.
fn key_offset(text: &str, span: Range<usize>, key: &str) -> Option<usize> {
    let start = span.start.min(text.len());
    let end = if text[start..].starts_with('{') {
        span.end.min(text.len())
    } else {
        let body = span.end.clamp(start, text.len());
        text[body..].find("\n[").map_or(text.len(), |i| body + i)
    };
    let text = &text[..end];
    let mut at = start;
    while let Some(i) = text[at..].find(key) {
        let start = at + i;
        let end = start + key.len();
        let ident = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
        let before_ok = !text[..start].chars().next_back().is_some_and(ident);
        let after = text[end..].trim_start_matches([' ', '\t']);
        if before_ok && after.starts_with('=') {
            return Some(start);
        }
        at = end;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::testing::{OK, parse};
    use cg_link::Protocol;

    #[test]
    fn unknown_qdisc_names_file_line_and_field() {
        let e = parse(&OK.replace("\"droptail\"", "\"fifo9\"")).unwrap_err();
        assert_eq!(e.file, "t.toml");
        assert_eq!(e.line, 6, "{e}");
        assert_eq!(e.field, "forward.qdisc.kind", "{e}");
        assert!(e.message.contains("fifo9"), "{e}");
    }

    #[test]
    fn a_qdisc_mistake_names_the_key_it_is_in() {
        let bad = |qdisc: &str| {
            parse(&OK.replace("qdisc = { kind = \"droptail\", limit = \"300ms\" }", qdisc))
                .unwrap_err()
        };
        let e = bad("qdisc = { kind = \"codel\", target = \"soon\" }");
        assert_eq!(
            (e.line, e.column, e.field.as_str()),
            (6, 27, "forward.qdisc.target"),
            "{e}"
        );
        let e = bad("[forward.qdisc]\nkind = \"codel\"\ninterval = \"100ms\"\nlimit = \"300ms\"");
        assert_eq!(
            (e.line, e.field.as_str()),
            (9, "forward.qdisc.limit"),
            "{e}"
        );
        let e = bad("qdisc = { kind = \"pie\", targett = \"20ms\" }");
        assert!(e.message.contains("unknown field `targett`"), "{e}");
        assert_eq!(e.line, 6, "{e}");
        let e = bad("qdisc = { target = \"5ms\" }");
        assert_eq!((e.line, e.field.as_str()), (6, "forward.qdisc.kind"), "{e}");
        // cg-link's own checks run at load, at the qdisc.
        let e = bad("qdisc = { kind = \"codel\", interval = \"0s\" }");
        assert_eq!((e.line, e.field.as_str()), (6, "forward.qdisc"), "{e}");
    }

    #[test]
    fn htb_classes_name_flows_that_become_rules_before_the_written_ones() {
        let htb = r#"[forward.qdisc]
kind = "htb"
default_class = "be"
rules = [ { class = "be", dscp = 46 } ]
[[forward.qdisc.classes]]
name = "cg"
rate = "1Mbit"
flows = ["u"]
[[forward.qdisc.classes]]
name = "be"
rate = "1Mbit"
"#;
        let text = OK.replace("qdisc = { kind = \"droptail\", limit = \"300ms\" }\n", "") + htb;
        let s = parse(&text).unwrap();
        let QdiscConfig::Htb(h) = &s.forward.qdisc else {
            panic!("{:?}", s.forward.qdisc)
        };
        assert_eq!(h.rules.len(), 2);
        assert_eq!(h.rules[0].class, "cg");
        assert_eq!(h.rules[0].matches.dst_port, Some(s.flows[0].port));
        assert_eq!(h.rules[0].matches.protocol, Some(Protocol(17)));
        assert_eq!(h.rules[1].class, "be");
        let e = parse(&text.replace("flows = [\"u\"]", "flows = [\"v\"]")).unwrap_err();
        assert!(e.message.contains("flow `v`, which does not exist"), "{e}");
        assert!(e.field.starts_with("forward.qdisc.classes"), "{e}");
        let e =
            parse(&text.replace("default_class = \"be\"", "default_class = \"x\"")).unwrap_err();
        assert_eq!(e.field, "forward.qdisc", "{e}");
    }
}
