//! The fields of one row, whichever the format: booleans, the customer id, the score and
//! tags.

use super::RowError;
use crate::phone::PhoneNumber;

/// Parses an import boolean: `true`/`false`, `1`/`0`, `yes`/`no`, any case, trimmed.
pub fn parse_bool(field: &str, value: &str) -> Result<bool, RowError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => Ok(true),
        "false" | "0" | "no" => Ok(false),
        "" => Err(RowError::EmptyBool {
            field: field.to_string(),
        }),
        _ => Err(RowError::NotABool {
            field: field.to_string(),
            value: shorten(value),
        }),
    }
}

pub(super) fn shorten(s: &str) -> String {
    if s.chars().count() > 40 {
        format!("{}...", s.chars().take(40).collect::<String>())
    } else {
        s.to_string()
    }
}

/// A phone number or a BSUID (`crate::bsuid::customer_key`).
pub(super) fn parse_phone(raw: &str) -> Result<PhoneNumber, RowError> {
    crate::bsuid::customer_key(raw).map_err(|source| RowError::CustomerId {
        raw: shorten(raw),
        source,
    })
}

pub(super) fn parse_score(raw: &str) -> Result<f64, RowError> {
    let t = raw.trim();
    if t.is_empty() {
        return Ok(0.0);
    }
    let v: f64 = t
        .parse()
        .map_err(|_| RowError::ScoreNotANumber { raw: shorten(raw) })?;
    check_score(v)
}

pub(super) fn check_score(v: f64) -> Result<f64, RowError> {
    if !v.is_finite() || v < 0.0 {
        return Err(RowError::ScoreOutOfRange {
            value: v.to_string(),
        });
    }
    Ok(if v == 0.0 { 0.0 } else { v })
}

/// Tags are case-insensitive: stored lower-cased (`VIP` and `vip` are one tag).
pub(super) fn push_tag(tags: &mut Vec<String>, tag: &str) {
    let t = crate::tags::normalize(tag);
    if !t.is_empty() && !tags.contains(&t) {
        tags.push(t);
    }
}

pub(super) fn parse_tags(raw: &str) -> Vec<String> {
    let mut tags = Vec::new();
    for part in raw.split('|') {
        push_tag(&mut tags, part);
    }
    tags
}
