//! Tool inputs, in one shape: each tool's parameters are one struct beside its handler. Its
//! doc comments are the published JSON Schema ([`crate::schema::input`]) and [`parse`]
//! deserialises the call's arguments into it, so a parameter is written once.
//!
//! rmcp's own `Parameters<T>` would answer a bad argument with a bare text error, not the
//! tool error envelope, so every tool takes the raw object and calls [`parse`]: a missing,
//! empty or ill-typed parameter is `INVALID_ARGUMENT` naming the parameter and what to pass
//! (the parameter's own description when the field type has nothing more specific).
//!
//! Before the struct is read, `null` and blank strings count as absent and strings are
//! trimmed, except the [`EXACT`] ones (keys), taken as given: trimming a key would make two
//! different keys one. The field types in [`fields`] carry the leniencies the tools allow: numbers given
//! as numeric strings, strings given as numbers, phone numbers in any spelling, a JSON
//! parameter as a string or as the value itself. The fields several tools share (`channel`,
//! `idempotency_key`) are the structs in [`shared`], flattened into each tool's struct.

/// The schema of `$plain` for a field type that stands for it.
macro_rules! schema_of {
    ($ty:ty => $plain:ty) => {
        impl schemars::JsonSchema for $ty {
            fn inline_schema() -> bool {
                true
            }
            fn schema_name() -> std::borrow::Cow<'static, str> {
                <$plain as schemars::JsonSchema>::schema_name()
            }
            fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
                <$plain as schemars::JsonSchema>::json_schema(generator)
            }
        }
    };
}

pub(crate) mod checks;
pub(crate) mod fields;
pub(crate) mod parsers;
pub(crate) mod shared;
pub(crate) mod template_values;

use std::ops::Deref;

use rmcp::model::JsonObject;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{ToolError, ToolResult};
use crate::quoting::detail;

/// Stands for the parameter's name in a field type's error; [`parse`] writes the name in
/// (a field type does not know which parameter it is). Invisible characters around it, so
/// no caller's value (quoted with [`crate::quoting::echo`], which escapes them) can contain it.
pub(crate) const PARAM: &str = "\u{2063}PARAM\u{2063}";
/// Separates the message from the suggested action inside a serde error.
const SEP: char = '\u{2064}';

/// A field type's refusal as a serde error: `message` and `action` may name the parameter
/// as [`PARAM`].
pub(crate) fn refuse<E: serde::de::Error>(
    message: impl std::fmt::Display,
    action: impl std::fmt::Display,
) -> E {
    E::custom(format_args!("{SEP}{message}{SEP}{action}"))
}

/// A [`ToolError`] built by a parser that names the parameter as [`PARAM`], as a serde error.
pub(crate) fn lift<E: serde::de::Error>(err: ToolError) -> E {
    refuse(err.message, err.suggested_action)
}

/// A tool's parsed arguments, with the call as it came (for the idempotency fingerprint and
/// the few parameters where a blank string means something).
pub struct Input<T> {
    args: T,
    raw: JsonObject,
}

impl<T> Deref for Input<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.args
    }
}

impl<T> Input<T> {
    /// Whether `key` was given at all (a blank string counts; null does not).
    pub fn given(&self, key: &str) -> bool {
        self.raw.get(key).is_some_and(|v| !v.is_null())
    }

    /// Whether `key` was given as a blank string (which the struct reads as absent).
    pub fn blank(&self, key: &str) -> bool {
        matches!(self.raw.get(key), Some(Value::String(s)) if s.trim().is_empty())
    }

    /// The key `warden_core::Core::send_keyed` enforces for `actor`: the call's
    /// `idempotency_key` and the fingerprint of all its arguments. A blank key is refused
    /// rather than read as absent: the caller meant to name the call.
    pub fn idempotency(
        &self,
        key: &shared::Keyed,
        tool: &str,
        actor: &str,
    ) -> ToolResult<Option<warden_core::send::idempotency::IdempotencyKey>> {
        if let Some(Value::String(blank)) = self.raw.get("idempotency_key")
            && blank.trim().is_empty()
        {
            let e = warden_rules::safety::idempotency::check_key(blank)
                .err()
                .map_or_else(
                    || "`idempotency_key` is blank".to_string(),
                    |e| e.to_string(),
                );
            return Err(ToolError::invalid(
                format!("{e}."),
                "Pass `idempotency_key` as 1 to 128 printable ASCII characters, e.g. \"order-1234-reminder\", or leave it out.",
            ));
        }
        let Some(key) = key.idempotency_key.as_ref() else {
            return Ok(None);
        };
        Ok(Some(warden_core::send::idempotency::IdempotencyKey {
            actor: actor.to_string(),
            key: key.0.clone(),
            tool: tool.to_string(),
            args_hash: warden_rules::safety::idempotency::fingerprint(
                tool,
                &Value::Object(self.raw.clone()),
            ),
        }))
    }

    #[cfg(test)]
    pub fn into_inner(self) -> T {
        self.args
    }
}

/// Parameters taken exactly as given, never trimmed: a key names a call, and `"k\n"` and
/// `"k"` are two keys (the key's own type refuses what it may not hold). Ids are trimmed:
/// no valid id holds white space, so trimming never makes two of them one.
pub const EXACT: &[&str] = &["idempotency_key"];

/// The call's arguments as `T`, or INVALID_ARGUMENT naming the first bad parameter.
pub fn parse<T: DeserializeOwned + JsonSchema + 'static>(raw: JsonObject) -> ToolResult<Input<T>> {
    let mut prepared = JsonObject::new();
    for (key, value) in &raw {
        match value {
            Value::Null => {}
            Value::String(s) => {
                let trimmed = s.trim();
                if trimmed.is_empty() {
                    continue;
                }
                let kept = if EXACT.contains(&key.as_str()) {
                    s.as_str()
                } else {
                    trimmed
                };
                prepared.insert(key.clone(), Value::String(kept.to_string()));
            }
            other => {
                prepared.insert(key.clone(), other.clone());
            }
        }
    }
    let present: Vec<String> = prepared.keys().cloned().collect();
    match serde_path_to_error::deserialize::<_, T>(Value::Object(prepared)) {
        Ok(args) => Ok(Input { args, raw }),
        Err(e) => Err(first_missing::<T>(&present)
            .unwrap_or_else(|| invalid::<T>(&e.path().to_string(), &e.into_inner().to_string()))),
    }
}

/// A required parameter that is missing (or blank) is named before any other problem, in
/// the order the tool declares them, whichever parameter serde happened to read first.
fn first_missing<T: JsonSchema + 'static>(present: &[String]) -> Option<ToolError> {
    let schema = crate::schema::input::<T>();
    let missing = schema
        .get("required")?
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .find(|key| !present.iter().any(|p| p == key))?;
    Some(invalid::<T>(".", &format!("missing field `{missing}`")))
}

/// The envelope for a serde error at `path` (a parameter's name, or `.` when serde did not
/// say, as for the flattened shared fields, whose types name themselves).
fn invalid<T: JsonSchema + 'static>(path: &str, error: &str) -> ToolError {
    if let Some(missing) = error
        .strip_prefix("missing field `")
        .and_then(|rest| rest.strip_suffix('`'))
    {
        return ToolError::invalid(
            format!("The parameter `{missing}` is required and must not be empty."),
            format!("Pass `{missing}`: {}", description::<T>(missing)),
        );
    }
    let key = if path == "." { "arguments" } else { path };
    let fill = |s: &str| s.replace(PARAM, key);
    let mut parts = error.split(SEP);
    match (parts.next(), parts.next(), parts.next()) {
        (Some(""), Some(message), Some(action)) => {
            let action = if action.is_empty() {
                format!("Pass `{key}`: {}", description::<T>(key))
            } else {
                fill(action)
            };
            ToolError::invalid(fill(message), action)
        }
        _ => ToolError::invalid(
            format!("The parameter `{key}` is not valid: {}.", detail(error)),
            format!("Pass `{key}`: {}", description::<T>(key)),
        ),
    }
}

/// What `T`'s schema says of parameter `key` (only on the error path: the schema is built
/// each time).
fn description<T: JsonSchema + 'static>(key: &str) -> String {
    crate::schema::input::<T>()
        .get("properties")
        .and_then(|p| p.get(key))
        .and_then(|p| p.get("description"))
        .and_then(Value::as_str)
        .map_or_else(
            || "see the tool's input schema.".to_string(),
            str::to_string,
        )
}
