//! `content_filter`: phrases (regular expressions) no message may contain, and the only
//! domains its links may point to.
//!
//! A message's texts are every string of its stored content except the structural ones
//! (types, indexes, names of templates and parameters, language codes, media `link`s and
//! ids): the free text, captions, headers, footers, button titles and URLs, list rows,
//! template variables and component parameters (a template's URL button parameter
//! included). Patterns are matched against each text; links are found with [`super::urls`].

use regex::Regex;
use serde_json::Value;

use super::error::SafetyPolicyError;
use super::urls;

/// One `deny_patterns` entry, compiled once when the file is loaded.
#[derive(Debug, Clone)]
pub struct DenyPattern {
    source: String,
    regex: Regex,
}

impl DenyPattern {
    /// Compiles `source`; the error is one line saying why.
    pub fn new(source: &str) -> Result<Self, SafetyPolicyError> {
        let regex = regex::RegexBuilder::new(source)
            .size_limit(1 << 20)
            .build()
            .map_err(|e| SafetyPolicyError::DenyPattern {
                pattern: source.to_string(),
                reason: e
                    .to_string()
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" "),
            })?;
        Ok(Self {
            source: source.to_string(),
            regex,
        })
    }

    /// The pattern as written in the file.
    pub fn as_str(&self) -> &str {
        &self.source
    }
}

impl PartialEq for DenyPattern {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}
impl Eq for DenyPattern {}

/// A validated content filter: at least one of the two lists is set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentFilter {
    /// Refused when any matches any text.
    pub deny_patterns: Vec<DenyPattern>,
    /// As written in the file (for the JSON copy).
    pub link_domains: Vec<String>,
    /// Normalised (lower-case ASCII) forms of `link_domains`.
    normalised_domains: Vec<String>,
}

/// What a content filter found: named in the refusal instead of the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContentHit {
    /// A deny pattern matched.
    Pattern(String),
    /// A link to a host that is on none of the listed domains.
    Domain(String),
}

impl ContentFilter {
    /// Builds the filter; `deny_patterns` are compiled here (a bad one is an error).
    pub fn new(
        deny_patterns: Vec<String>,
        link_domains: Vec<String>,
    ) -> Result<Self, SafetyPolicyError> {
        if deny_patterns.is_empty() && link_domains.is_empty() {
            return Err(SafetyPolicyError::EmptyContentFilter);
        }
        let deny_patterns = deny_patterns
            .iter()
            .map(|p| DenyPattern::new(p))
            .collect::<Result<Vec<_>, _>>()?;
        let mut normalised_domains = Vec::with_capacity(link_domains.len());
        for d in &link_domains {
            let n = urls::normalise_host(d.trim_start_matches("*."));
            if n.is_empty() || n.contains(['/', ':', ' ', '@']) {
                return Err(SafetyPolicyError::LinkDomain { domain: d.clone() });
            }
            normalised_domains.push(n);
        }
        Ok(Self {
            deny_patterns,
            link_domains,
            normalised_domains,
        })
    }

    /// The first problem in the message whose texts are `texts`, patterns first.
    pub fn check<'a>(
        &self,
        texts: impl IntoIterator<Item = &'a str> + Clone,
    ) -> Option<ContentHit> {
        for p in &self.deny_patterns {
            if texts.clone().into_iter().any(|t| p.regex.is_match(t)) {
                return Some(ContentHit::Pattern(p.source.clone()));
            }
        }
        if self.normalised_domains.is_empty() {
            return None;
        }
        for t in texts {
            for link in urls::extract(t) {
                if !self
                    .normalised_domains
                    .iter()
                    .any(|d| urls::on_domain(&link.host, d))
                {
                    return Some(ContentHit::Domain(link.host));
                }
            }
        }
        None
    }
}

/// Keys whose values are structure, not words a customer reads.
const STRUCTURAL: [&str; 13] = [
    "type",
    "sub_type",
    "index",
    "link",
    "id",
    "mime_type",
    "locale",
    "language",
    "code",
    "name",
    "parameter_name",
    "message_id",
    "policy",
];

/// The texts of a stored message content (see the module docs).
pub fn texts(content: &Value) -> Vec<&str> {
    let mut out = Vec::new();
    collect(content, &mut out);
    out
}

fn collect<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::String(s) => out.push(s),
        Value::Array(items) => items.iter().for_each(|i| collect(i, out)),
        Value::Object(map) => {
            for (k, v) in map {
                if !STRUCTURAL.contains(&k.as_str()) || v.is_object() || v.is_array() {
                    collect(v, out);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn patterns_and_domains() {
        let f = ContentFilter::new(
            vec!["(?i)wire\\s+transfer".into()],
            vec!["example.com".into(), "Bücher.de".into()],
        )
        .unwrap();
        assert_eq!(f.check(["hello https://shop.example.com/x"]), None);
        assert_eq!(f.check(["https://xn--bcher-kva.de"]), None);
        assert_eq!(
            f.check(["ok", "send a WIRE  transfer"]),
            Some(ContentHit::Pattern("(?i)wire\\s+transfer".into()))
        );
        assert_eq!(
            f.check(["see www.evil.net."]),
            Some(ContentHit::Domain("www.evil.net".into()))
        );
        assert!(
            ContentFilter::new(vec!["(".into()], vec![])
                .unwrap_err()
                .to_string()
                .contains("\"(\"")
        );
        assert!(ContentFilter::new(vec![], vec![]).is_err());
        assert!(ContentFilter::new(vec![], vec!["https://x.com/".into()]).is_err());
    }

    #[test]
    fn texts_skip_structure() {
        let image = json!({"type": "image", "image": {"link": "https://cdn.other/a.jpg", "caption": "at https://evil.net"}});
        assert_eq!(texts(&image), ["at https://evil.net"]);
        let template = json!({"type": "template", "template": {"name": "t", "locale": "en", "variables": ["Ana"],
            "components": [{"type": "button", "sub_type": "url", "index": "0", "parameters": [{"type": "text", "text": "https://evil.net/x"}]}]}});
        let t = texts(&template);
        assert!(
            t.contains(&"Ana") && t.contains(&"https://evil.net/x") && !t.contains(&"t"),
            "{t:?}"
        );
    }
}
