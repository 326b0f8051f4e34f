//! Customer tags are case-insensitive: `VIP`, `Vip` and `vip` are one tag. They are
//! stored lower-cased (imports, filters, policy files all pass through [`normalize`]), so
//! comparisons everywhere are plain equality on the normalised form.

/// The stored form of a tag: trimmed and lower-cased. Empty when nothing is left.
pub fn normalize(tag: &str) -> String {
    tag.trim().to_lowercase()
}

/// Normalises and de-duplicates, keeping the first occurrence's order; drops empties.
pub fn normalize_all<I, S>(tags: I) -> Vec<String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut out: Vec<String> = Vec::new();
    for t in tags {
        let t = normalize(t.as_ref());
        if !t.is_empty() && !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

/// The first of `wanted` the customer carries, compared case-insensitively.
pub fn first_match<'a>(wanted: &'a [String], carried: &[String]) -> Option<&'a String> {
    wanted.iter().find(|w| {
        carried
            .iter()
            .any(|c| c.trim().to_lowercase() == normalize(w))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_case_insensitive() {
        assert_eq!(normalize(" VIP "), "vip");
        assert_eq!(normalize_all(["VIP", "vip", " Beta", ""]), ["vip", "beta"]);
        let wanted = vec!["vip".to_string()];
        assert_eq!(
            first_match(&wanted, &["VIP".to_string()]),
            Some(&"vip".to_string())
        );
        assert_eq!(first_match(&wanted, &["vipx".to_string()]), None);
    }
}
