//! The policy types, what each one does ([`Rule`]) and one validated [`Policy`], with its
//! JSON shape (the file's) for the runtime copy in the database.

use std::fmt;
use std::str::FromStr;

use chrono::TimeDelta;

use super::{PolicyReason, QuietHours, format_window};
use crate::kinds::Category;

/// The policy types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PolicyType {
    /// No sends between two local clock times.
    QuietHours,
    /// At most `max` accepted messages per customer per rolling window.
    FrequencyLimit,
    /// No sends to customers carrying a tag.
    TagExclusion,
    /// No sends to numbers starting with a prefix.
    CountryBlock,
    /// No same content to the same customer within a window (`crate::safety::duplicate`).
    DuplicateGuard,
    /// Sends only to listed phones or tags (`crate::safety::allowlist`).
    RecipientAllowlist,
    /// No denied phrases, links only to listed domains (`crate::safety::content`).
    ContentFilter,
}

pub(super) const COMMON_FIELDS: [&str; 4] = ["id", "type", "message_types", "enabled"];

impl PolicyType {
    /// Name as written in the file.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::QuietHours => "quiet_hours",
            Self::FrequencyLimit => "frequency_limit",
            Self::TagExclusion => "tag_exclusion",
            Self::CountryBlock => "country_block",
            Self::DuplicateGuard => "duplicate_guard",
            Self::RecipientAllowlist => "recipient_allowlist",
            Self::ContentFilter => "content_filter",
        }
    }

    /// The fields only this type has.
    pub(super) fn own_fields(self) -> &'static [&'static str] {
        match self {
            Self::QuietHours => &["start", "end", "timezone", "action"],
            Self::FrequencyLimit => &["max", "window"],
            Self::TagExclusion => &["tags"],
            Self::CountryBlock => &["prefixes"],
            Self::DuplicateGuard => &["window"],
            Self::RecipientAllowlist => &["phones", "tags"],
            Self::ContentFilter => &["deny_patterns", "link_domains"],
        }
    }

    pub(super) const ALL: [PolicyType; 7] = [
        Self::QuietHours,
        Self::FrequencyLimit,
        Self::TagExclusion,
        Self::CountryBlock,
        Self::DuplicateGuard,
        Self::RecipientAllowlist,
        Self::ContentFilter,
    ];
}

impl fmt::Display for PolicyType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PolicyType {
    type Err = PolicyReason;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| PolicyReason::UnknownType {
                name: s.to_string(),
            })
    }
}

/// What a policy does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule {
    /// No sends in a local time interval.
    QuietHours(QuietHours),
    /// At most `max` accepted messages per customer per rolling `window`.
    FrequencyLimit {
        /// Messages allowed in the window (at least 1).
        max: u32,
        /// Length of the rolling window.
        window: TimeDelta,
    },
    /// No sends to customers carrying any of these tags (case-insensitive; stored lower-cased).
    TagExclusion {
        /// Excluding tags.
        tags: Vec<String>,
    },
    /// No sends to numbers whose canonical digits start with any of these prefixes.
    CountryBlock {
        /// Digit prefixes, without `+`.
        prefixes: Vec<String>,
    },
    /// No same content to the same customer within a window.
    DuplicateGuard(crate::safety::duplicate::DuplicateGuard),
    /// Sends only to listed phones or tags.
    RecipientAllowlist(crate::safety::allowlist::RecipientAllowlist),
    /// Denied phrases and allowed link domains.
    ContentFilter(crate::safety::content::ContentFilter),
}

impl Rule {
    /// The type of this rule.
    pub fn policy_type(&self) -> PolicyType {
        match self {
            Self::QuietHours(_) => PolicyType::QuietHours,
            Self::FrequencyLimit { .. } => PolicyType::FrequencyLimit,
            Self::TagExclusion { .. } => PolicyType::TagExclusion,
            Self::CountryBlock { .. } => PolicyType::CountryBlock,
            Self::DuplicateGuard(_) => PolicyType::DuplicateGuard,
            Self::RecipientAllowlist(_) => PolicyType::RecipientAllowlist,
            Self::ContentFilter(_) => PolicyType::ContentFilter,
        }
    }
}

/// One validated policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub(super) id: String,
    pub(super) enabled: bool,
    pub(super) message_types: Option<Vec<Category>>,
    pub(super) rule: Rule,
}

impl Policy {
    /// The upsert key, named in denials.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Disabled policies are kept (and stored) but never applied.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The categories the policy is limited to; `None` means every category.
    pub fn message_types(&self) -> Option<&[Category]> {
        self.message_types.as_deref()
    }

    /// What the policy does.
    pub fn rule(&self) -> &Rule {
        &self.rule
    }

    /// The policy's type.
    pub fn policy_type(&self) -> PolicyType {
        self.rule.policy_type()
    }

    /// True when the policy's `message_types` include `category` (ignores `enabled`).
    pub fn applies_to(&self, category: Category) -> bool {
        self.message_types
            .as_ref()
            .is_none_or(|types| types.contains(&category))
    }

    /// True when the policy is enabled and applies to `category`.
    pub fn is_active_for(&self, category: Category) -> bool {
        self.enabled && self.applies_to(category)
    }

    /// The policy in the file's shape as JSON, for the runtime copy in the database.
    /// [`Policy::from_json`] reads it back. `message_types` is omitted when it is "all".
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::{Value as J, json};
        let mut m = serde_json::Map::new();
        m.insert("id".into(), J::from(self.id.clone()));
        m.insert("type".into(), J::from(self.policy_type().as_str()));
        if let Some(types) = &self.message_types {
            m.insert(
                "message_types".into(),
                J::from(types.iter().map(|c| c.as_str()).collect::<Vec<_>>()),
            );
        }
        m.insert("enabled".into(), J::from(self.enabled));
        match &self.rule {
            Rule::QuietHours(q) => {
                m.insert("start".into(), J::from(q.start()));
                m.insert("end".into(), J::from(q.end()));
                m.insert("timezone".into(), J::from(q.zone_name()));
                if q.holds() {
                    m.insert("action".into(), J::from(q.action.as_str()));
                }
            }
            Rule::FrequencyLimit { max, window } => {
                m.insert("max".into(), json!(max));
                m.insert("window".into(), J::from(format_window(*window)));
            }
            Rule::TagExclusion { tags } => {
                m.insert("tags".into(), json!(tags));
            }
            Rule::CountryBlock { prefixes } => {
                m.insert("prefixes".into(), json!(prefixes));
            }
            Rule::DuplicateGuard(g) => {
                m.insert("window".into(), J::from(format_window(g.window)));
            }
            Rule::RecipientAllowlist(l) => {
                let phones: Vec<String> = l.phones.iter().map(|d| format!("+{d}")).collect();
                if !phones.is_empty() {
                    m.insert("phones".into(), json!(phones));
                }
                if !l.tags.is_empty() {
                    m.insert("tags".into(), json!(l.tags));
                }
            }
            Rule::ContentFilter(f) => {
                let patterns: Vec<&str> = f.deny_patterns.iter().map(|p| p.as_str()).collect();
                if !patterns.is_empty() {
                    m.insert("deny_patterns".into(), json!(patterns));
                }
                if !f.link_domains.is_empty() {
                    m.insert("link_domains".into(), json!(f.link_domains));
                }
            }
        }
        J::Object(m)
    }
}

impl serde::Serialize for Policy {
    /// Serialises as [`Policy::to_json`], the file's shape.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(serializer)
    }
}
