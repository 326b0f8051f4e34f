//! Agent safety: the rules that keep a careless agent from sending twice, flooding a
//! customer, reaching numbers it should not, or pasting links and phrases it should not.
//!
//! - [`idempotency`]: what an `idempotency_key` may be and the fingerprint of a call's
//!   arguments (the store keeps the key; this only decides what "the same call" means).
//! - [`duplicate`]: `duplicate_guard` (same content to the same customer within a window).
//! - [`allowlist`]: `recipient_allowlist` (only these phones and/or tags).
//! - [`content`]: `content_filter` (`deny_patterns`, `link_domains`) and the texts of a
//!   message it reads.
//! - [`urls`]: finding the links in a text.
//! - [`error`]: why an agent-safety policy's values cannot be used.

pub mod allowlist;
pub mod content;
pub mod duplicate;
pub mod error;
pub mod idempotency;
pub mod urls;

use chrono::TimeDelta;
use serde_json::Value;

use crate::kinds::Category;
use crate::policy::{PolicySet, Rule};

/// A refusal by a content rule: the policy, why, and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentRefusal {
    /// The refusing policy.
    pub policy_id: String,
    /// One sentence naming the policy and the pattern or domain (never the message).
    pub explanation: String,
    /// What the agent should do.
    pub suggested_action: String,
}

/// The first enabled `content_filter` (file order) that applies to `category` and refuses
/// `content` (a stored message content).
pub fn content_refusal(
    policies: &PolicySet,
    category: Category,
    content: &Value,
) -> Option<ContentRefusal> {
    let mut texts: Option<Vec<&str>> = None;
    for p in policies.active_for(category) {
        let Rule::ContentFilter(filter) = p.rule() else {
            continue;
        };
        let texts = texts.get_or_insert_with(|| content::texts(content));
        let Some(hit) = filter.check(texts.iter().copied()) else {
            continue;
        };
        let (explanation, suggested_action) = match hit {
            content::ContentHit::Pattern(pattern) => (
                format!(
                    "Policy {} forbids messages matching the pattern {pattern:?}, and this message matches it.",
                    p.id()
                ),
                "Rewrite the message without that phrase; do not try to work around the filter."
                    .to_string(),
            ),
            content::ContentHit::Domain(host) => (
                format!(
                    "Policy {} allows links only to {}, and this message links to {host}.",
                    p.id(),
                    filter.link_domains.join(", ")
                ),
                "Remove that link or use one on an allowed domain.".to_string(),
            ),
        };
        return Some(ContentRefusal {
            policy_id: p.id().to_string(),
            explanation,
            suggested_action,
        });
    }
    None
}

/// The enabled `duplicate_guard`s that apply to `category`, in file order: (id, window).
pub fn duplicate_guards(policies: &PolicySet, category: Category) -> Vec<(&str, TimeDelta)> {
    policies
        .active_for(category)
        .filter_map(|p| match p.rule() {
            Rule::DuplicateGuard(g) => Some((p.id(), g.window)),
            _ => None,
        })
        .collect()
}

/// The refusal of a duplicate: names the policy and the earlier message.
pub fn duplicate_refusal(policy_id: &str, window: TimeDelta, earlier: &str) -> ContentRefusal {
    ContentRefusal {
        policy_id: policy_id.to_string(),
        explanation: format!(
            "Policy {policy_id} forbids sending the same content to the same customer within {}; message {earlier} already said this.",
            crate::policy::format_window(window)
        ),
        suggested_action: format!(
            "Do not repeat message {earlier}; check its status with get_delivery_status, or send something different."
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const EXAMPLE: &str = include_str!("../../../../policies/examples/agent-safety.yaml");

    #[test]
    fn the_shipped_example_parses_and_uses_all_three_types() {
        let set = PolicySet::from_yaml(EXAMPLE).unwrap();
        let types: Vec<&str> = set
            .policies()
            .iter()
            .map(|p| p.policy_type().as_str())
            .collect();
        for t in ["duplicate_guard", "recipient_allowlist", "content_filter"] {
            assert!(types.contains(&t), "{types:?}");
        }
        // The JSON copy reads back as the same set.
        let back: Vec<_> = set
            .policies()
            .iter()
            .map(|p| crate::policy::Policy::from_json(&p.to_json()).unwrap())
            .collect();
        assert_eq!(PolicySet::from_policies(back).unwrap(), set);
    }

    #[test]
    fn unknown_and_bad_fields_stop_loading() {
        let wrap = |body: &str| format!("version: 1\npolicies:\n  - id: p\n    {body}\n");
        for (body, want) in [
            (
                "type: duplicate_guard\n    window: 10m\n    max: 2",
                "field `max` belongs to type frequency_limit",
            ),
            ("type: duplicate_guard", "missing `window`"),
            (
                "type: recipient_allowlist\n    phone: [\"+15550100\"]",
                "unknown field `phone`",
            ),
            ("type: recipient_allowlist", "needs `phones` and/or `tags`"),
            (
                "type: recipient_allowlist\n    phones: [\"abc\"]",
                "not a phone number",
            ),
            (
                "type: content_filter\n    deny_patterns: [\"(\"]",
                "not a valid regular expression",
            ),
            (
                "type: content_filter\n    link_domain: [a.com]",
                "unknown field `link_domain`",
            ),
            (
                "type: content_filter\n    link_domains: [\"https://a.com/\"]",
                "must be a domain name",
            ),
        ] {
            let e = PolicySet::from_yaml(&wrap(body)).unwrap_err().to_string();
            assert!(e.contains(want) && e.contains("\"p\""), "{body}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn content_refusals_name_policy_and_pattern_or_domain() {
        let set = PolicySet::from_yaml(
            "version: 1\npolicies:\n  - id: links\n    type: content_filter\n    link_domains: [example.com]\n  - id: words\n    type: content_filter\n    message_types: [service]\n    deny_patterns: [\"(?i)password\"]\n",
        )
        .unwrap();
        let caption = json!({"type": "image", "image": {"link": "https://cdn.elsewhere/a.jpg", "caption": "Buy at https://evil.net/x now"}});
        let r = content_refusal(&set, Category::Service, &caption).unwrap();
        assert_eq!(r.policy_id, "links");
        assert!(
            r.explanation.contains("evil.net") && !r.explanation.contains("Buy at"),
            "{r:?}"
        );
        let text = json!({"type": "text", "text": {"body": "your PASSWORD is 1234"}});
        let r = content_refusal(&set, Category::Service, &text).unwrap();
        assert_eq!(r.policy_id, "words");
        assert!(!r.explanation.contains("1234"));
        assert_eq!(content_refusal(&set, Category::Utility, &text), None);
        let ok = json!({"type": "text", "text": {"body": "see https://www.example.com/a."}});
        assert_eq!(content_refusal(&set, Category::Service, &ok), None);
    }
}
