//! Making what a body says safe to store: no NUL characters (Postgres `TEXT`/`JSONB`
//! refuse them), bounded identifiers and keys, sane timestamps.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::{MAX_KEY_LEN, MIN_SANE_TS};

/// The time of an event: its own timestamp, never in the future, `now` when missing or absurd.
pub fn event_time(ts: i64, now: DateTime<Utc>) -> DateTime<Utc> {
    if ts < MIN_SANE_TS {
        return now;
    }
    match DateTime::<Utc>::from_timestamp(ts, 0) {
        Some(at) if at < now => at,
        _ => now,
    }
}

/// The string without NUL characters (Postgres refuses them in TEXT and JSONB).
pub fn clean(s: &str) -> String {
    if s.contains('\0') {
        s.replace('\0', "")
    } else {
        s.to_string()
    }
}

/// At most `max` bytes, cut on a character boundary.
pub fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// The JSON with NUL characters removed from every string and key.
pub fn clean_json(v: Value) -> Value {
    match v {
        Value::String(s) => Value::String(clean(&s)),
        Value::Array(items) => Value::Array(items.into_iter().map(clean_json).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (clean(&k), clean_json(v)))
                .collect(),
        ),
        other => other,
    }
}

pub(super) fn bounded_key(key: &str) -> String {
    let key = clean(key);
    if key.len() <= MAX_KEY_LEN {
        return key;
    }
    let prefix = key.split(':').next().unwrap_or("k");
    format!("{}:h:{}", clip(prefix, 16), sha256_hex(key.as_bytes()))
}

pub(super) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(ring::digest::digest(&ring::digest::SHA256, bytes))
}

pub(super) fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => clip(&clean(s), 64),
        Value::Number(n) => n.to_string(),
        _ => String::new(),
    }
}

pub(super) fn value_int(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}
