//! Lenient argument reading, in one place.
//!
//! rmcp turns a failed `Parameters<T>` deserialisation into a bare text error (not the
//! contract's envelope), so every tool takes its arguments as a raw JSON object and reads
//! them here: a missing, empty or ill-typed parameter becomes an `INVALID_ARGUMENT` tool
//! error naming the parameter and what to pass. Numbers also accept numeric strings
//! (`"50"`), strings also accept numbers (`131047`), JSON parameters accept a JSON string
//! or the JSON value itself.

use chrono::{DateTime, Utc};
use rmcp::model::JsonObject;
use serde_json::Value;
use uuid::Uuid;
use warden_rules::phone::PhoneNumber;

use crate::error::{ToolError, ToolResult};
use crate::text::{detail, echo, kind_message};

/// The longest language code taken (`zh_Hant_TW` has 10 characters).
pub const MAX_LANGUAGE_CHARS: usize = 16;

pub struct Args(JsonObject);

impl Args {
    pub fn new(map: JsonObject) -> Self {
        Args(map)
    }

    /// Whether `key` was given (an empty string counts; null does not).
    pub fn has(&self, key: &str) -> bool {
        self.raw(key).is_some()
    }

    fn raw(&self, key: &str) -> Option<&Value> {
        self.0.get(key).filter(|v| !v.is_null())
    }

    /// `idempotency_key` (optional) and the fingerprint of this call's other arguments, as
    /// the key `warden_core::Core::send_keyed` enforces for `actor`.
    pub fn idempotency(
        &self,
        tool: &str,
        actor: &str,
    ) -> ToolResult<Option<warden_core::send::idempotency::IdempotencyKey>> {
        use warden_rules::safety::idempotency::{check_key, fingerprint};
        let key = match self.raw("idempotency_key") {
            None => return Ok(None),
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                return Err(ToolError::invalid(
                    format!(
                        "The parameter `idempotency_key` must be a string, not {}.",
                        kind_of(other)
                    ),
                    "Pass `idempotency_key` as 1 to 128 printable ASCII characters, e.g. \"order-1234-reminder\".",
                ));
            }
        };
        check_key(&key).map_err(|e| {
            ToolError::invalid(
                format!("{e}."),
                "Pass `idempotency_key` as 1 to 128 printable ASCII characters, e.g. \"order-1234-reminder\", or leave it out.",
            )
        })?;
        Ok(Some(warden_core::send::idempotency::IdempotencyKey {
            actor: actor.to_string(),
            key,
            tool: tool.to_string(),
            args_hash: fingerprint(tool, &Value::Object(self.0.clone())),
        }))
    }

    /// A required string; `hint` says what to pass (one sentence).
    pub fn string(&self, key: &str, hint: &str) -> ToolResult<String> {
        match self.opt_string(key)? {
            Some(s) => Ok(s),
            None => Err(ToolError::invalid(
                format!("The parameter `{key}` is required and must not be empty."),
                format!("Pass `{key}`: {hint}"),
            )),
        }
    }

    /// An optional string: absent, null or blank is `None`; surrounding spaces are trimmed.
    pub fn opt_string(&self, key: &str) -> ToolResult<Option<String>> {
        let text = match self.raw(key) {
            None => return Ok(None),
            Some(Value::String(s)) => {
                check_chars(key, s)?;
                s.trim().to_string()
            }
            Some(Value::Number(n)) => n.to_string(),
            Some(Value::Bool(b)) => b.to_string(),
            Some(other) => {
                return Err(ToolError::invalid(
                    format!(
                        "The parameter `{key}` must be a string, not {}.",
                        kind_of(other)
                    ),
                    format!("Pass `{key}` as a string."),
                ));
            }
        };
        Ok((!text.is_empty()).then_some(text))
    }

    /// An optional whole number (a JSON number without fraction, or a numeric string).
    pub fn opt_int(&self, key: &str) -> ToolResult<Option<i64>> {
        let bad = |got: String| {
            ToolError::invalid(
                format!("The parameter `{key}` must be a whole number, got {got}."),
                format!(
                    "Pass `{key}` as a number such as 50 (a numeric string like \"50\" also works)."
                ),
            )
        };
        match self.raw(key) {
            None => Ok(None),
            Some(Value::Number(n)) => {
                if let Some(i) = n.as_i64() {
                    Ok(Some(i))
                } else if let Some(f) = n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 9e15) {
                    Ok(Some(f as i64))
                } else {
                    Err(bad(n.to_string()))
                }
            }
            Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
            Some(Value::String(s)) => {
                let t = s.trim();
                if let Ok(i) = t.parse::<i64>() {
                    return Ok(Some(i));
                }
                match t.parse::<f64>() {
                    Ok(f) if f.is_finite() && f.fract() == 0.0 && f.abs() < 9e15 => {
                        Ok(Some(f as i64))
                    }
                    _ => Err(bad(echo(s))),
                }
            }
            Some(other) => Err(bad(kind_of(other).to_string())),
        }
    }

    /// An optional boolean (`true`/`false`, or the strings "true"/"false").
    pub fn opt_bool(&self, key: &str) -> ToolResult<Option<bool>> {
        match self.raw(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
            Some(Value::String(s)) if s.trim().eq_ignore_ascii_case("true") => Ok(Some(true)),
            Some(Value::String(s)) if s.trim().eq_ignore_ascii_case("false") => Ok(Some(false)),
            Some(other) => Err(ToolError::invalid(
                format!(
                    "The parameter `{key}` must be true or false, got {}.",
                    match other {
                        Value::String(s) => echo(s),
                        v => kind_of(v).to_string(),
                    }
                ),
                format!("Pass `{key}` as true or false, or leave it out."),
            )),
        }
    }

    /// An optional JSON parameter: a string holding JSON, or the JSON value itself.
    pub fn opt_json(&self, key: &str, what: &str) -> ToolResult<Option<Value>> {
        match self.raw(key) {
            None => Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
            Some(Value::String(s)) => {
                let v = serde_json::from_str::<Value>(s).map_err(|e| {
                    ToolError::invalid(
                        format!("The parameter `{key}` is not valid JSON: {}.", detail(e)),
                        format!("Pass `{key}` as a string containing {what}."),
                    )
                })?;
                check_json_chars(key, &v)?;
                Ok(Some(v))
            }
            Some(v) => {
                check_json_chars(key, v)?;
                Ok(Some(v.clone()))
            }
        }
    }

    /// Whether `key` was given as a blank string (which `opt_json` reads as absent).
    pub fn is_blank_string(&self, key: &str) -> bool {
        matches!(self.raw(key), Some(Value::String(s)) if s.trim().is_empty())
    }

    pub fn json(&self, key: &str, what: &str) -> ToolResult<Value> {
        self.opt_json(key, what)?.ok_or_else(|| {
            ToolError::invalid(
                format!("The parameter `{key}` is required and must not be empty."),
                format!("Pass `{key}` as a string containing {what}."),
            )
        })
    }

    /// A template's `locale` (default `en`); `language`, as create_template and the platform
    /// call it, is accepted too. Either must be a language code ([`valid_language`]).
    pub fn locale(&self) -> ToolResult<String> {
        let locale = self.opt_string("locale")?;
        let language = self.opt_string("language")?;
        let (key, value) = match (locale, language) {
            (Some(l), Some(g)) if !l.eq_ignore_ascii_case(&g) => {
                return Err(ToolError::invalid(
                    format!(
                        "`locale` ({}) and `language` ({}) disagree.",
                        echo(&l),
                        echo(&g)
                    ),
                    "Pass only `locale`, e.g. \"en\".",
                ));
            }
            (Some(l), _) => ("locale", l),
            (None, Some(g)) => ("language", g),
            (None, None) => return Ok("en".into()),
        };
        check_language(key, &value)?;
        Ok(value)
    }

    /// The `channel` parameter: absent means `whatsapp`, the only channel.
    pub fn channel(&self) -> ToolResult<&'static str> {
        let raw = self.opt_string("channel")?;
        warden_rules::kinds::parse_channel(raw.as_deref()).map_err(|e| {
            ToolError::invalid(
                format!("{}.", kind_message(&e)),
                "Leave `channel` out or pass \"whatsapp\".",
            )
        })
    }

    /// A required phone number in any accepted spelling, canonicalised. A JSON number is
    /// refused: `14155550101.0` would silently name another customer.
    pub fn phone(&self, key: &str) -> ToolResult<PhoneNumber> {
        if let Some(Value::Number(n)) = self.raw(key) {
            return Err(ToolError::invalid(
                format!(
                    "The parameter `{key}` must be a phone number written as a string, not the JSON number {}.",
                    echo(&n.to_string())
                ),
                format!("Pass `{key}` as a string with the country code, e.g. \"+14155550101\"."),
            ));
        }
        let raw = self.string(
            key,
            "the customer's phone number with country code (e.g. +6281234567890) or BSUID (e.g. US.13491208655302741918)",
        )?;
        parse_phone(key, &raw)
    }

    /// A required UUID identifier.
    pub fn uuid(&self, key: &str, what: &str) -> ToolResult<Uuid> {
        let raw = self.string(key, &format!("the {what} (a UUID)"))?;
        parse_uuid(key, &raw, what)
    }

    /// A required RFC 3339 timestamp.
    pub fn timestamp(&self, key: &str) -> ToolResult<DateTime<Utc>> {
        let raw = self.string(key, "an RFC 3339 timestamp such as 2030-01-31T09:00:00Z")?;
        DateTime::parse_from_rfc3339(&raw)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|e| {
                ToolError::invalid(
                    format!(
                        "The parameter `{key}` is not an RFC 3339 timestamp ({}: {}).",
                        echo(&raw),
                        detail(e)
                    ),
                    format!("Pass `{key}` like 2030-01-31T09:00:00Z or 2030-01-31T16:00:00+07:00."),
                )
            })
    }
}

/// NUL and other control characters the platform refuses (line breaks and tabs are
/// allowed: free text may carry them; stricter parameters check again) are
/// INVALID_ARGUMENT naming the parameter, before anything is written.
fn check_chars(key: &str, s: &str) -> ToolResult<()> {
    warden_rules::text::check(s, warden_rules::text::TextKind::FreeText).map_err(|e| {
        ToolError::invalid(
            format!("The parameter `{key}` {e}."),
            format!("Remove control characters from `{key}` and call again."),
        )
    })
}

/// [`check_chars`] for every string inside a JSON parameter (Postgres refuses NUL in jsonb).
fn check_json_chars(key: &str, v: &Value) -> ToolResult<()> {
    warden_rules::text::check_json(v).map_err(|(at, e)| {
        let place = if at.is_empty() {
            format!("`{key}`")
        } else {
            format!("`{key}` (at {at})")
        };
        ToolError::invalid(
            format!("The parameter {place} {e}."),
            format!("Remove control characters from `{key}` and call again."),
        )
    })
}

/// A language code such as `en`, `id`, `pt_BR`, `zh_Hant_TW` or `es-419`: 2 or 3 letters,
/// then at most two subtags of 2 to 4 letters or digits, joined by `_` or `-`.
pub fn valid_language(lang: &str) -> bool {
    if lang.len() > MAX_LANGUAGE_CHARS {
        return false;
    }
    let mut parts = lang.split(['_', '-']);
    let first = parts.next().unwrap_or_default();
    let rest: Vec<&str> = parts.collect();
    (2..=3).contains(&first.len())
        && first.chars().all(|c| c.is_ascii_alphabetic())
        && rest.len() <= 2
        && rest
            .iter()
            .all(|p| (2..=4).contains(&p.len()) && p.chars().all(|c| c.is_ascii_alphanumeric()))
}

/// INVALID_ARGUMENT unless `value` (of parameter `key`) is a language code.
pub fn check_language(key: &str, value: &str) -> ToolResult<()> {
    if valid_language(value) {
        return Ok(());
    }
    Err(ToolError::invalid(
        format!(
            "The parameter `{key}` ({}) is not a language code.",
            echo(value)
        ),
        format!("Pass `{key}` like en, id, pt_BR or en_US."),
    ))
}

/// A customer: a phone number in any accepted spelling, or a BSUID (`CC.` + letters and
/// digits, or `CC.ENT.` + ... for a parent BSUID). Returns the key as given (a BSUID is
/// mapped to its customer by the core).
pub fn parse_phone(key: &str, raw: &str) -> ToolResult<PhoneNumber> {
    warden_rules::bsuid::customer_key(raw).map_err(|e| match e {
        warden_rules::bsuid::CustomerIdError::Bsuid(e) => ToolError::invalid(
            format!("The parameter `{key}` is not a valid BSUID: {}.", detail(e)),
            format!(
                "Pass `{key}` as a BSUID like US.13491208655302741918 (or US.ENT.… for a parent BSUID), or as a phone number with the country code."
            ),
        ),
        warden_rules::bsuid::CustomerIdError::Phone(e) => ToolError::invalid(
            format!(
                "The parameter `{key}` is not a valid phone number: {}.",
                detail(e)
            ),
            format!(
                "Pass `{key}` with the country code, e.g. +6281234567890 or 6281234567890, or as a BSUID like US.13491208655302741918."
            ),
        ),
    })
}

pub fn parse_uuid(key: &str, raw: &str, what: &str) -> ToolResult<Uuid> {
    Uuid::parse_str(raw.trim()).map_err(|_| {
        ToolError::invalid(
            format!("The parameter `{key}` must be a UUID, got {}.", echo(raw)),
            format!("Pass the {what} exactly as a tool returned it, e.g. 0192f3c4-5d6e-7f80-9a1b-2c3d4e5f6a7b."),
        )
    })
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(v: Value) -> Args {
        Args::new(v.as_object().cloned().unwrap())
    }

    #[test]
    fn strings_are_trimmed_and_blank_is_missing() {
        let a = args(json!({"a": "  x ", "b": "", "c": null, "d": 131047, "e": [1]}));
        assert_eq!(a.string("a", "x").unwrap(), "x");
        assert_eq!(a.string("b", "x").unwrap_err().code, "INVALID_ARGUMENT");
        assert_eq!(a.opt_string("c").unwrap(), None);
        assert_eq!(a.string("d", "x").unwrap(), "131047");
        assert!(a.opt_string("e").is_err());
        assert!(a.string("zz", "x").unwrap_err().message.contains("`zz`"));
    }

    #[test]
    fn numbers_accept_numeric_strings() {
        let a =
            args(json!({"a": 50, "b": "50", "c": 2.0, "d": "2.5", "e": "x", "f": 1.5, "g": ""}));
        assert_eq!(a.opt_int("a").unwrap(), Some(50));
        assert_eq!(a.opt_int("b").unwrap(), Some(50));
        assert_eq!(a.opt_int("c").unwrap(), Some(2));
        assert!(a.opt_int("d").is_err());
        assert!(a.opt_int("e").is_err());
        assert!(a.opt_int("f").is_err());
        assert_eq!(a.opt_int("g").unwrap(), None);
        assert_eq!(a.opt_int("missing").unwrap(), None);
    }

    #[test]
    fn json_params_take_strings_or_values() {
        let a = args(json!({"a": "[\"x\"]", "b": ["y"], "c": "{nope", "d": " "}));
        assert_eq!(a.opt_json("a", "x").unwrap(), Some(json!(["x"])));
        assert_eq!(a.opt_json("b", "x").unwrap(), Some(json!(["y"])));
        assert!(a.opt_json("c", "x").is_err());
        assert_eq!(a.opt_json("d", "x").unwrap(), None);
        assert!(a.json("d", "x").is_err());
    }

    #[test]
    fn channel_phone_uuid_time() {
        assert_eq!(args(json!({})).channel().unwrap(), "whatsapp");
        assert_eq!(
            args(json!({"channel": "WhatsApp"})).channel().unwrap(),
            "whatsapp"
        );
        assert!(args(json!({"channel": "sms"})).channel().is_err());
        assert_eq!(
            args(json!({"p": "+62 812-3456-7890"}))
                .phone("p")
                .unwrap()
                .digits(),
            "6281234567890"
        );
        assert!(args(json!({"p": "not-a-phone"})).phone("p").is_err());
        assert!(args(json!({"u": "nope"})).uuid("u", "id").is_err());
        assert!(
            args(json!({"t": "2030-01-01T00:00:00+07:00"}))
                .timestamp("t")
                .is_ok()
        );
        assert!(args(json!({"t": "tomorrow"})).timestamp("t").is_err());
    }

    #[test]
    fn language_codes() {
        for ok in ["en", "id", "en_US", "pt_BR", "zh_Hant_TW", "fil", "es-419"] {
            assert!(valid_language(ok), "{ok}");
        }
        for bad in ["", "e", "english", "en_", "en US", "1n", "en_US_POSIX_X"] {
            assert!(!valid_language(bad), "{bad}");
        }
        assert!(!valid_language(&"a".repeat(70_000)));
    }

    #[test]
    fn locales_are_language_codes_and_echoes_are_short() {
        assert_eq!(args(json!({})).locale().unwrap(), "en");
        assert_eq!(args(json!({"language": "id"})).locale().unwrap(), "id");
        assert_eq!(
            args(json!({"locale": "pt_BR", "language": "PT_br"}))
                .locale()
                .unwrap(),
            "pt_BR"
        );
        let long = "x".repeat(100_000);
        for a in [
            json!({"locale": long}),
            json!({"language": long}),
            json!({"locale": "en", "language": long}),
        ] {
            let e = args(a).locale().unwrap_err();
            assert_eq!(e.code, "INVALID_ARGUMENT");
            assert!(e.message.len() < 300, "{}", e.message);
        }
        for (k, v) in [
            ("u", "uuid"),
            ("t", "timestamp"),
            ("n", "int"),
            ("channel", "channel"),
        ] {
            let a = args(json!({ k: long }));
            let e = match v {
                "uuid" => a.uuid(k, "id").unwrap_err(),
                "timestamp" => a.timestamp(k).unwrap_err(),
                "int" => a.opt_int(k).unwrap_err(),
                _ => a.channel().unwrap_err(),
            };
            assert!(e.message.len() < 300, "{v}: {}", e.message);
            assert!(
                e.message.contains("100000 characters"),
                "{v}: {}",
                e.message
            );
        }
    }
}
