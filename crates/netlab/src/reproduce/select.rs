//! Which experiments a reproduction runs: the presets the papers' figures name, filtered by
//! `--only` patterns.

use crate::papers::Paper;

/// Whether `name` matches `pattern`, or one of its comma-separated alternatives: `*` stands
/// for any run of characters; without a `*`, a substring match.
pub fn matches(pattern: &str, name: &str) -> bool {
    if pattern.contains(',') {
        return pattern.split(',').any(|p| matches(p.trim(), name));
    }
    if !pattern.contains('*') {
        return name.contains(pattern);
    }
    let parts: Vec<&str> = pattern.split('*').collect();
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !name.starts_with(first) || name.len() < first.len() + last.len() {
        return false;
    }
    let mut rest = &name[first.len()..name.len() - last.len()];
    if !name.ends_with(last) {
        return false;
    }
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    true
}

/// The presets the papers' figures name, in paper order, each once, filtered by `only`.
pub fn experiments(papers: &[Paper], only: Option<&str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for f in papers.iter().flat_map(|p| &p.figures) {
        if let Some(p) = &f.preset
            && !out.contains(p)
            && only.is_none_or(|pat| matches(pat, p))
        {
            out.push(p.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::papers;
    use crate::scenario::presets;

    #[test]
    fn patterns_match_substrings_and_globs() {
        assert!(matches("tma24", "tma24-4-htb-cubic"));
        assert!(matches("tma24-*-cubic", "tma24-4-htb-cubic"));
        assert!(matches("*cubic", "tma24-4-htb-cubic"));
        assert!(matches("*", "anything"));
        assert!(!matches("tma24-*-bbr", "tma24-4-htb-cubic"));
        assert!(!matches("mmsys*", "tma24-4-htb-cubic"));
        assert!(!matches("a*a", "a"));
        assert!(matches("mmsys16-*, tma24-4-*", "tma24-4-htb-cubic"));
        assert!(!matches("mmsys16-*,ccr16", "tma24-4-htb-cubic"));
    }

    #[test]
    fn every_preset_the_papers_name_exists_and_only_filters() {
        let papers = papers::all().unwrap();
        let all = experiments(&papers, None);
        assert!(all.len() >= 20, "{all:?}");
        for p in &all {
            assert!(
                presets::text(p).is_some(),
                "the papers name {p}, which is no preset"
            );
        }
        let tma = experiments(&papers, Some("tma24-4-*"));
        assert_eq!(tma.len(), 6, "{tma:?}");
        assert!(experiments(&papers, Some("no-such")).is_empty());
    }
}
