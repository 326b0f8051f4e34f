//! Campaign audience filters (docs/operations.md, Scheduling and campaigns: `audience_filter`).
//!
//! A JSON object whose keys are all optional: `include_tags` (any of), `exclude_tags`
//! (none of), `customer_ids`, `opt_in` (`marketing` | `utility`) and
//! `active_within_days`. `{}` (or no filter at all) selects every known customer, and
//! nothing else does: an empty list (`{"customer_ids": []}`), a key set to `null`, and
//! the strings `""` / `"null"` are refused, since each reads as "nobody" to a person but
//! would select everyone. Unknown keys are refused too (a typo would otherwise silently
//! widen the audience). The filter is parsed here
//! and evaluated either by the store in SQL or by [`AudienceFilter::matches`]; both
//! follow the same semantics, documented on the fields.

use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};

use crate::phone::PhoneNumber;

/// Which opt-in a recipient must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OptInKind {
    /// Opted in to marketing.
    Marketing,
    /// Opted in to utility.
    Utility,
}

/// A validated audience filter.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AudienceFilter {
    /// Recipients must carry at least one of these tags (ignored when empty).
    pub include_tags: Vec<String>,
    /// Recipients must carry none of these tags.
    pub exclude_tags: Vec<String>,
    /// Recipients must be one of these customers (ignored when empty); canonical.
    pub customer_ids: Vec<PhoneNumber>,
    /// Recipients must be opted in to this category.
    pub opt_in: Option<OptInKind>,
    /// Recipients must have interacted within this many days (0 = within the last 0 days,
    /// i.e. nobody unless their last interaction is `now`).
    pub active_within_days: Option<u32>,
}

/// Raw JSON shape; `deny_unknown_fields` makes unknown keys an error.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFilter {
    include_tags: Option<Vec<String>>,
    exclude_tags: Option<Vec<String>>,
    customer_ids: Option<Vec<String>>,
    opt_in: Option<String>,
    active_within_days: Option<serde_json::Value>,
}

/// Why `""`, `"null"` and `null` are not filters.
/// Why an audience filter is refused; the text says what to fix.
// Each variant is documented by its message.
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AudienceError {
    #[error(
        "audience_filter is empty or null, which selects nobody; leave audience_filter out (or pass {{}}) for every customer"
    )]
    NotAFilter,
    #[error("audience_filter is not valid JSON: {0}")]
    NotJson(String),
    #[error("audience_filter must be a JSON object")]
    NotAnObject,
    #[error("audience_filter has unknown key {key:?}; allowed keys: {}", KEYS.join(", "))]
    UnknownKey { key: String },
    #[error("audience_filter.{key} is null; leave the key out rather than set it to null")]
    NullKey { key: String },
    #[error(
        "audience_filter.{key} is an empty list: an empty list selects nobody; leave the key out"
    )]
    EmptyList { key: String },
    #[error("audience_filter.{key} must be {want}, got {got}")]
    WrongType {
        key: String,
        want: &'static str,
        got: String,
    },
    #[error("audience_filter: {0}")]
    Shape(String),
    #[error("audience_filter.customer_ids entry {id:?}: {source}")]
    CustomerId {
        id: String,
        source: crate::bsuid::CustomerIdError,
    },
    #[error("audience_filter.opt_in must be \"marketing\" or \"utility\", got {got:?}")]
    OptIn { got: String },
    #[error("audience_filter.active_within_days must be a non-negative whole number, got {got}")]
    ActiveWithinDays { got: String },
    #[error("audience_filter.{key} has an empty tag")]
    EmptyTag { key: &'static str },
}

const KEYS: [&str; 5] = [
    "include_tags",
    "exclude_tags",
    "customer_ids",
    "opt_in",
    "active_within_days",
];

/// What a recipient looks like to [`AudienceFilter::matches`].
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate<'a> {
    /// The customer (its key).
    pub phone: &'a PhoneNumber,
    /// Its other identifiers (BSUID, parent BSUID): `customer_ids` may name it by them.
    pub aliases: &'a [String],
    /// The customer's tags.
    pub tags: &'a [String],
    /// Opted in to marketing.
    pub opt_in_marketing: bool,
    /// Opted in to utility.
    pub opt_in_utility: bool,
    /// Last interaction (inbound or outbound), if any.
    pub last_interaction: Option<DateTime<Utc>>,
}

fn clean_tags(key: &'static str, tags: Option<Vec<String>>) -> Result<Vec<String>, AudienceError> {
    let mut out: Vec<String> = Vec::new();
    for t in tags.unwrap_or_default() {
        // Tags are stored lower-cased: `VIP` selects customers tagged `vip`.
        let t = crate::tags::normalize(&t);
        if t.is_empty() {
            return Err(AudienceError::EmptyTag { key });
        }
        if !out.contains(&t) {
            out.push(t);
        }
    }
    Ok(out)
}

impl AudienceFilter {
    /// Parses the tool parameter (a JSON string). Blank or `null` is refused: leave the
    /// parameter out (or pass `{}`) for every customer.
    pub fn from_json_str(text: &str) -> Result<AudienceFilter, AudienceError> {
        if text.trim().is_empty() {
            return Err(AudienceError::NotAFilter);
        }
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| AudienceError::NotJson(e.to_string()))?;
        Self::from_value(&value)
    }

    /// Parses an already decoded JSON value (an object; `null` is refused).
    pub fn from_value(value: &serde_json::Value) -> Result<AudienceFilter, AudienceError> {
        let map = match value {
            serde_json::Value::Null => return Err(AudienceError::NotAFilter),
            serde_json::Value::Object(map) => map,
            _ => return Err(AudienceError::NotAnObject),
        };
        if let Some(unknown) = map.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(AudienceError::UnknownKey {
                key: unknown.clone(),
            });
        }
        for (key, v) in map {
            if v.is_null() {
                return Err(AudienceError::NullKey { key: key.clone() });
            }
            if v.as_array().is_some_and(|items| items.is_empty()) {
                return Err(AudienceError::EmptyList { key: key.clone() });
            }
            let ok = match key.as_str() {
                "opt_in" => v.is_null() || v.is_string(),
                "active_within_days" => true,
                _ => {
                    v.is_null()
                        || v.as_array()
                            .is_some_and(|items| items.iter().all(|i| i.is_string()))
                }
            };
            if !ok {
                let want = if key == "opt_in" {
                    "a string"
                } else {
                    "a list of strings"
                };
                return Err(AudienceError::WrongType {
                    key: key.clone(),
                    want,
                    got: v.to_string(),
                });
            }
        }
        let raw: RawFilter = serde_json::from_value(value.clone())
            .map_err(|e| AudienceError::Shape(e.to_string()))?;
        let mut customer_ids: Vec<PhoneNumber> = Vec::new();
        for id in raw.customer_ids.unwrap_or_default() {
            let p =
                crate::bsuid::customer_key(&id).map_err(|source| AudienceError::CustomerId {
                    id: id.clone(),
                    source,
                })?;
            if !customer_ids.contains(&p) {
                customer_ids.push(p);
            }
        }
        let opt_in = match raw.opt_in.as_deref().map(|s| s.trim().to_ascii_lowercase()) {
            None => None,
            Some(s) if s == "marketing" => Some(OptInKind::Marketing),
            Some(s) if s == "utility" => Some(OptInKind::Utility),
            Some(_) => {
                return Err(AudienceError::OptIn {
                    got: raw.opt_in.unwrap_or_default(),
                });
            }
        };
        let active_within_days = match raw.active_within_days {
            None | Some(serde_json::Value::Null) => None,
            Some(v) => Some(
                v.as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| AudienceError::ActiveWithinDays { got: v.to_string() })?,
            ),
        };
        Ok(AudienceFilter {
            include_tags: clean_tags("include_tags", raw.include_tags)?,
            exclude_tags: clean_tags("exclude_tags", raw.exclude_tags)?,
            customer_ids,
            opt_in,
            active_within_days,
        })
    }

    /// True for `{}`: every known customer.
    pub fn is_everyone(&self) -> bool {
        *self == AudienceFilter::default()
    }

    /// The earliest last interaction that still counts as active, at `now`.
    pub fn active_since(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.active_within_days.map(|d| {
            now.checked_sub_signed(TimeDelta::days(i64::from(d)))
                .unwrap_or(DateTime::<Utc>::MIN_UTC)
        })
    }

    /// Whether `c` belongs to the audience at `now`. Tags match exactly.
    pub fn matches(&self, c: &Candidate<'_>, now: DateTime<Utc>) -> bool {
        if !self.include_tags.is_empty() && !self.include_tags.iter().any(|t| c.tags.contains(t)) {
            return false;
        }
        if self.exclude_tags.iter().any(|t| c.tags.contains(t)) {
            return false;
        }
        if !self.customer_ids.is_empty()
            && !self
                .customer_ids
                .iter()
                .any(|id| id == c.phone || c.aliases.iter().any(|a| a.as_str() == id.digits()))
        {
            return false;
        }
        match self.opt_in {
            Some(OptInKind::Marketing) if !c.opt_in_marketing => return false,
            Some(OptInKind::Utility) if !c.opt_in_utility => return false,
            _ => {}
        }
        if let Some(since) = self.active_since(now) {
            return c.last_interaction.is_some_and(|t| t >= since);
        }
        true
    }

    /// The filter as JSON (canonical ids), for storing with the campaign.
    pub fn to_json(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        if !self.include_tags.is_empty() {
            m.insert("include_tags".into(), self.include_tags.clone().into());
        }
        if !self.exclude_tags.is_empty() {
            m.insert("exclude_tags".into(), self.exclude_tags.clone().into());
        }
        if !self.customer_ids.is_empty() {
            let ids: Vec<String> = self
                .customer_ids
                .iter()
                .map(|p| p.digits().to_string())
                .collect();
            m.insert("customer_ids".into(), ids.into());
        }
        if let Some(o) = self.opt_in {
            let s = match o {
                OptInKind::Marketing => "marketing",
                OptInKind::Utility => "utility",
            };
            m.insert("opt_in".into(), s.into());
        }
        if let Some(d) = self.active_within_days {
            m.insert("active_within_days".into(), d.into());
        }
        serde_json::Value::Object(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phone::canonicalize;
    use chrono::TimeZone;
    use proptest::prelude::*;

    #[test]
    fn only_an_empty_object_means_everyone() {
        assert!(AudienceFilter::from_json_str("{}").unwrap().is_everyone());
        assert!(
            AudienceFilter::from_json_str(" { } ")
                .unwrap()
                .is_everyone()
        );
    }

    #[test]
    fn empty_lists_and_null_never_mean_everyone() {
        for t in ["", "  ", "null", " null "] {
            let e = AudienceFilter::from_json_str(t).unwrap_err().to_string();
            assert!(e.contains("selects nobody"), "{t:?}: {e}");
        }
        for key in ["customer_ids", "include_tags", "exclude_tags"] {
            let e = AudienceFilter::from_json_str(&format!(r#"{{"{key}": []}}"#))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("an empty list selects nobody; leave the key out"),
                "{key}: {e}"
            );
            let e = AudienceFilter::from_json_str(&format!(r#"{{"{key}": null}}"#))
                .unwrap_err()
                .to_string();
            assert!(e.contains("leave the key out"), "{key}: {e}");
        }
        let e = AudienceFilter::from_json_str(r#"{"opt_in": null}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("leave the key out"), "{e}");
        assert!(AudienceFilter::from_value(&serde_json::Value::Null).is_err());
    }

    #[test]
    fn parses_every_key() {
        let f = AudienceFilter::from_json_str(
            r#"{"include_tags": ["vip", "beta", "vip"], "exclude_tags": ["churned"],
                "customer_ids": ["+62 812-3456-789", "628123456789", "14155550100"],
                "opt_in": "Marketing", "active_within_days": 30}"#,
        )
        .unwrap();
        assert_eq!(f.include_tags, ["vip", "beta"]);
        assert_eq!(f.exclude_tags, ["churned"]);
        assert_eq!(f.customer_ids.len(), 2);
        assert_eq!(f.customer_ids[0].digits(), "628123456789");
        assert_eq!(f.opt_in, Some(OptInKind::Marketing));
        assert_eq!(f.active_within_days, Some(30));
        let back = AudienceFilter::from_value(&f.to_json()).unwrap();
        assert_eq!(back, f);
    }

    #[test]
    fn refuses_bad_filters_naming_the_problem() {
        let cases = [
            (r#"{"segment": "x"}"#, "unknown key \"segment\""),
            (r#"{"opt_in": "sms"}"#, "\"sms\""),
            (r#"{"active_within_days": -1}"#, "non-negative"),
            (r#"{"active_within_days": 1.5}"#, "non-negative"),
            (r#"{"active_within_days": "7"}"#, "non-negative"),
            (r#"{"customer_ids": ["abc"]}"#, "\"abc\""),
            (
                r#"{"include_tags": "vip"}"#,
                "audience_filter.include_tags must be a list of strings",
            ),
            (
                r#"{"opt_in": 1}"#,
                "audience_filter.opt_in must be a string",
            ),
            (r#"{"include_tags": [""]}"#, "empty tag"),
            ("[1]", "must be a JSON object"),
            ("{", "not valid JSON"),
        ];
        for (text, want) in cases {
            let e = AudienceFilter::from_json_str(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn matching() {
        let now = Utc.with_ymd_and_hms(2025, 5, 5, 0, 0, 0).unwrap();
        let phone = canonicalize("628123456789").unwrap();
        let tags = vec!["vip".to_string()];
        let c = Candidate {
            phone: &phone,
            aliases: &[],
            tags: &tags,
            opt_in_marketing: true,
            opt_in_utility: false,
            last_interaction: Some(now - TimeDelta::days(3)),
        };
        let f = |s: &str| AudienceFilter::from_json_str(s).unwrap();
        assert!(f("{}").matches(&c, now));
        assert!(f(r#"{"include_tags": ["x", "vip"]}"#).matches(&c, now));
        assert!(!f(r#"{"include_tags": ["x"]}"#).matches(&c, now));
        assert!(!f(r#"{"exclude_tags": ["vip"]}"#).matches(&c, now));
        assert!(f(r#"{"customer_ids": ["+62 8123456789"]}"#).matches(&c, now));
        assert!(!f(r#"{"customer_ids": ["14155550100"]}"#).matches(&c, now));
        assert!(f(r#"{"opt_in": "marketing"}"#).matches(&c, now));
        assert!(!f(r#"{"opt_in": "utility"}"#).matches(&c, now));
        assert!(f(r#"{"active_within_days": 3}"#).matches(&c, now));
        assert!(!f(r#"{"active_within_days": 2}"#).matches(&c, now));
        let never = Candidate {
            last_interaction: None,
            ..c.clone()
        };
        assert!(!f(r#"{"active_within_days": 365}"#).matches(&never, now));
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,120}") {
            let _ = AudienceFilter::from_json_str(&s);
        }
    }
}
