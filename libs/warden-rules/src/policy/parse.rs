//! The policy file's format (see the module docs of [`crate::policy`]) and its strict
//! validation: every field is checked by hand so each error names the policy and the field.

use serde::Deserialize;
use serde_yaml::Value;

use super::error::one_line;
use super::quiet_hours::{QuietAction, QuietHours};
use super::rule::COMMON_FIELDS;
use super::{
    DEFAULT_WINDOW, Policy, PolicyError, PolicyReason, PolicySet, PolicyType, Rule, parse_window,
};
use crate::kinds::Category;

/// Raw shape of one policy. Every field is kept as a YAML value and checked by hand
/// so each error can name the field; `deny_unknown_fields` is the backstop that
/// makes any field this struct does not know an error.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    // `id` and `type` are read from the mapping before this struct is built; they are
    // here so that `deny_unknown_fields` knows them.
    #[serde(rename = "id")]
    _id: Option<Value>,
    #[serde(rename = "type")]
    _kind: Option<Value>,
    message_types: Option<Value>,
    enabled: Option<Value>,
    start: Option<Value>,
    end: Option<Value>,
    timezone: Option<Value>,
    max: Option<Value>,
    window: Option<Value>,
    tags: Option<Value>,
    prefixes: Option<Value>,
    phones: Option<Value>,
    deny_patterns: Option<Value>,
    link_domains: Option<Value>,
    action: Option<Value>,
}

/// Raw shape of the file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    version: Option<Value>,
    policies: Option<Value>,
}

fn show(v: &Value) -> String {
    let text = match v {
        Value::String(s) => format!("{s:?}"),
        other => serde_json::to_string(other)
            .or_else(|_| serde_yaml::to_string(other))
            .unwrap_or_else(|_| "?".into()),
    };
    let text = one_line(&text);
    if text.chars().count() > 60 {
        format!("{}...", text.chars().take(60).collect::<String>())
    } else {
        text
    }
}

fn scalar_text(field: &str, v: &Value) -> Result<String, PolicyReason> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        other => Err(PolicyReason::EntryNotText {
            field: field.to_string(),
            got: show(other),
        }),
    }
}

fn required<'a>(
    field: &str,
    v: &'a Option<Value>,
    example: &str,
) -> Result<&'a Value, PolicyReason> {
    v.as_ref().ok_or_else(|| PolicyReason::Missing {
        field: field.to_string(),
        example: example.to_string(),
    })
}

fn string_field(field: &str, v: &Value, hint: &str) -> Result<String, PolicyReason> {
    match v {
        Value::String(s) => Ok(s.clone()),
        other => Err(PolicyReason::WrongType {
            field: field.to_string(),
            hint: hint.to_string(),
            got: show(other),
        }),
    }
}

fn list_field(field: &str, v: &Value, example: &str) -> Result<Vec<String>, PolicyReason> {
    let items = match v {
        Value::Sequence(items) => items,
        other => {
            return Err(PolicyReason::NotAList {
                field: field.to_string(),
                example: example.to_string(),
                got: show(other),
            });
        }
    };
    if items.is_empty() {
        return Err(PolicyReason::EmptyList {
            field: field.to_string(),
            example: example.to_string(),
        });
    }
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for item in items {
        let text = scalar_text(field, item)?;
        let text = text.trim().to_string();
        if text.is_empty() {
            return Err(PolicyReason::EmptyEntry {
                field: field.to_string(),
            });
        }
        if !out.contains(&text) {
            out.push(text);
        }
    }
    Ok(out)
}

impl Policy {
    /// Reads a policy back from [`Policy::to_json`]'s shape, with the same validation
    /// as the file.
    pub fn from_json(value: &serde_json::Value) -> Result<Policy, PolicyError> {
        let yaml = serde_yaml::to_value(value).map_err(|e| PolicyError::Unnamed {
            index: 1,
            reason: e.to_string(),
        })?;
        Self::from_value(&yaml, 1)
    }

    /// Validates one entry of the `policies` list (`index` is 1-based, for errors).
    fn from_value(value: &Value, index: usize) -> Result<Policy, PolicyError> {
        let unnamed = |reason: String| PolicyError::Unnamed { index, reason };
        let map = value.as_mapping().ok_or_else(|| {
            unnamed(format!(
                "each policy must be a mapping with `id` and `type`, got {}",
                show(value)
            ))
        })?;
        let id = match map.get("id") {
            None | Some(Value::Null) => return Err(unnamed("missing `id`".into())),
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                return Err(unnamed(format!("`id` must be text, got {}", show(other))));
            }
        };
        if id.trim().is_empty() {
            return Err(unnamed("`id` is empty".into()));
        }
        if id.trim() != id || id.chars().any(char::is_control) || id.chars().count() > 200 {
            return Err(unnamed(format!(
                "`id` {id:?} must be at most 200 characters without control characters or surrounding spaces"
            )));
        }
        let fail = |reason: String| PolicyError::Policy {
            id: id.clone(),
            reason,
        };
        let ptype = match map.get("type") {
            None | Some(Value::Null) => {
                return Err(fail(
                    "missing `type` (quiet_hours, frequency_limit, tag_exclusion, country_block, duplicate_guard, recipient_allowlist or content_filter)"
                        .into(),
                ));
            }
            Some(Value::String(s)) => s.parse::<PolicyType>().map_err(|e| fail(e.to_string()))?,
            Some(other) => {
                return Err(fail(format!("`type` must be text, got {}", show(other))));
            }
        };
        let allowed: Vec<&str> = COMMON_FIELDS
            .iter()
            .chain(ptype.own_fields())
            .copied()
            .collect();
        for key in map.keys() {
            let Some(key) = key.as_str() else {
                return Err(fail(format!("field names must be text, got {}", show(key))));
            };
            if allowed.contains(&key) {
                continue;
            }
            let owner = PolicyType::ALL
                .into_iter()
                .find(|t| t.own_fields().contains(&key));
            return Err(fail(match owner {
                Some(owner) => format!(
                    "field `{key}` belongs to type {owner}, not {ptype} (fields of {ptype}: {})",
                    allowed.join(", ")
                ),
                None => format!(
                    "unknown field `{key}` (fields of {ptype}: {})",
                    allowed.join(", ")
                ),
            }));
        }
        let raw: RawPolicy =
            serde_yaml::from_value(value.clone()).map_err(|e| fail(e.to_string()))?;
        Self::from_raw(id.clone(), ptype, raw).map_err(|e| fail(e.to_string()))
    }

    fn from_raw(id: String, ptype: PolicyType, raw: RawPolicy) -> Result<Policy, PolicyReason> {
        let enabled = match &raw.enabled {
            None => true,
            Some(Value::Bool(b)) => *b,
            Some(other) => return Err(PolicyReason::Enabled { got: show(other) }),
        };
        let message_types = match &raw.message_types {
            None => None,
            Some(v) => {
                let names = list_field("message_types", v, "[marketing, utility]")?;
                let mut types = Vec::with_capacity(names.len());
                for name in names {
                    let c = name
                        .parse::<Category>()
                        .map_err(|e| PolicyReason::MessageType(e.to_string()))?;
                    if !types.contains(&c) {
                        types.push(c);
                    }
                }
                Some(types)
            }
        };
        let rule = match ptype {
            PolicyType::QuietHours => {
                let text = |field: &str, example: &str| -> Result<String, PolicyReason> {
                    let v = match field {
                        "start" => &raw.start,
                        "end" => &raw.end,
                        _ => &raw.timezone,
                    };
                    let v = required(field, v, example)?;
                    string_field(field, v, &format!("quoted text like {example}"))
                };
                let start = text("start", "\"20:00\"")?;
                let end = text("end", "\"08:00\"")?;
                let tz = text("timezone", "Asia/Jakarta")?;
                let action = match &raw.action {
                    None => QuietAction::Deny,
                    Some(Value::String(a)) if a.trim() == "deny" => QuietAction::Deny,
                    Some(Value::String(a)) if a.trim() == "hold" => QuietAction::Hold,
                    Some(other) => return Err(PolicyReason::QuietAction { got: show(other) }),
                };
                Rule::QuietHours(QuietHours::new(&start, &end, &tz)?.with_action(action))
            }
            PolicyType::FrequencyLimit => {
                let max = match required("max", &raw.max, "max: 2")? {
                    Value::Number(n) => n
                        .as_u64()
                        .filter(|n| (1..=u64::from(u32::MAX)).contains(n))
                        .map(|n| n as u32),
                    _ => None,
                }
                .ok_or_else(|| PolicyReason::Max {
                    got: raw.max.as_ref().map(show).unwrap_or_default(),
                })?;
                let window = match &raw.window {
                    None => DEFAULT_WINDOW,
                    Some(Value::String(s)) => parse_window(s)?,
                    Some(other) => parse_window(&show(other))?,
                };
                Rule::FrequencyLimit { max, window }
            }
            PolicyType::TagExclusion => {
                let tags =
                    list_field("tags", required("tags", &raw.tags, "tags: [vip]")?, "[vip]")?;
                Rule::TagExclusion {
                    tags: crate::tags::normalize_all(tags),
                }
            }
            PolicyType::CountryBlock => {
                let v = required("prefixes", &raw.prefixes, "prefixes: [\"1\"]")?;
                let mut prefixes = Vec::new();
                for p in list_field("prefixes", v, "[\"1\", \"44\"]")? {
                    let digits = p.strip_prefix('+').unwrap_or(&p);
                    if digits.is_empty()
                        || digits.len() > crate::phone::MAX_DIGITS
                        || !digits.bytes().all(|b| b.is_ascii_digit())
                        || digits.starts_with('0')
                    {
                        return Err(PolicyReason::Prefix { prefix: p });
                    }
                    if !prefixes.iter().any(|x: &String| x == digits) {
                        prefixes.push(digits.to_string());
                    }
                }
                Rule::CountryBlock { prefixes }
            }
            PolicyType::DuplicateGuard => {
                let window = match required("window", &raw.window, "window: 10m")? {
                    Value::String(s) => parse_window(s)?,
                    other => parse_window(&show(other))?,
                };
                Rule::DuplicateGuard(crate::safety::duplicate::DuplicateGuard { window })
            }
            PolicyType::RecipientAllowlist => {
                let list = |field: &str, v: &Option<Value>, example: &str| match v {
                    None => Ok(Vec::new()),
                    Some(v) => list_field(field, v, example),
                };
                let phones = list("phones", &raw.phones, "[\"+15550100\"]")?;
                let tags = list("tags", &raw.tags, "[qa]")?;
                Rule::RecipientAllowlist(crate::safety::allowlist::RecipientAllowlist::new(
                    phones, tags,
                )?)
            }
            PolicyType::ContentFilter => {
                let list = |field: &str, v: &Option<Value>, example: &str| match v {
                    None => Ok(Vec::new()),
                    Some(v) => list_field(field, v, example),
                };
                let patterns = list("deny_patterns", &raw.deny_patterns, "[\"(?i)password\"]")?;
                let domains = list("link_domains", &raw.link_domains, "[example.com]")?;
                Rule::ContentFilter(crate::safety::content::ContentFilter::new(
                    patterns, domains,
                )?)
            }
        };
        Ok(Policy {
            id,
            enabled,
            message_types,
            rule,
        })
    }
}

impl PolicySet {
    /// Parses and validates a policy file (see the module docs for the format).
    pub fn from_yaml(text: &str) -> Result<PolicySet, PolicyError> {
        let doc: Value = serde_yaml::from_str(text).map_err(|e| {
            let location = e.location().map(|l| (l.line(), l.column()));
            let mut message = e.to_string();
            if let Some((line, column)) = location {
                // The location is reported once, in front; drop the parser's repeat.
                message = message.replacen(&format!(" at line {line} column {column}"), "", 1);
            }
            PolicyError::Syntax { location, message }
        })?;
        let file_err = |reason: String| PolicyError::File { reason };
        match &doc {
            Value::Null => {
                return Err(file_err(
                    "the file is empty; it needs `version: 1` and a `policies` list".into(),
                ));
            }
            Value::Mapping(_) => {}
            other => {
                return Err(file_err(format!(
                    "the top level must be a mapping with `version` and `policies`, got {}",
                    show(other)
                )));
            }
        }
        let raw: RawFile = serde_yaml::from_value(doc).map_err(|e| file_err(e.to_string()))?;
        match &raw.version {
            None => return Err(file_err("missing `version: 1`".into())),
            Some(Value::Number(n)) if n.as_u64() == Some(1) => {}
            Some(other) => {
                return Err(file_err(format!(
                    "unsupported version {}; the only version is 1",
                    show(other)
                )));
            }
        }
        let items = match raw.policies {
            None => {
                return Err(file_err(
                    "missing `policies` (write `policies: []` for none)".into(),
                ));
            }
            Some(Value::Sequence(items)) => items,
            Some(other) => {
                return Err(file_err(format!(
                    "`policies` must be a list, got {}",
                    show(&other)
                )));
            }
        };
        let policies = items
            .iter()
            .enumerate()
            .map(|(i, v)| Policy::from_value(v, i + 1))
            .collect::<Result<Vec<_>, _>>()?;
        Self::from_policies(policies)
    }
}

#[cfg(test)]
mod tests;
