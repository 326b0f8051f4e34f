//! Small helpers shared by the tools.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;

use crate::error::{ToolError, ToolResult};

/// RFC 3339 in UTC (`Z`), fractional seconds only when present.
pub fn ts(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

pub fn opt_ts(t: Option<DateTime<Utc>>) -> Option<String> {
    t.map(ts)
}

/// A tool's answer: the object in `structuredContent` plus the same JSON as one text block,
/// or the error envelope with `isError: true`.
pub fn finish<T: Serialize>(tool: &str, result: ToolResult<T>) -> rmcp::model::CallToolResult {
    match result.and_then(|v| {
        serde_json::to_value(v).map_err(|e| {
            tracing::error!(tool, error = %e, "result did not serialise");
            ToolError::new(
                crate::error::code::UNAVAILABLE,
                "The result could not be encoded.",
                "Try again; report it to an operator if it repeats.",
            )
        })
    }) {
        Ok(value) => {
            tracing::debug!(tool, "tool call succeeded");
            rmcp::model::CallToolResult::structured(value)
        }
        Err(err) => {
            tracing::info!(tool, code = %err.code, detail = %err.message, "tool call refused");
            err.into_result()
        }
    }
}

/// Categories and types are stored and reported in lower case.
pub fn lower(s: &str) -> String {
    s.trim().to_ascii_lowercase()
}

/// Whole number bounds check with a clear message.
pub fn bounded(key: &str, value: i64, min: i64, max: i64, hint: &str) -> ToolResult<i64> {
    if value < min || value > max {
        return Err(ToolError::invalid(
            format!("The parameter `{key}` must be between {min} and {max}, got {value}."),
            format!("Pass `{key}` {hint}."),
        ));
    }
    Ok(value)
}

/// `value` of parameter `key` has at most `max` characters; `action` says what to pass.
pub fn check_len(key: &str, value: &str, max: usize, action: &str) -> ToolResult<()> {
    let n = value.chars().count();
    if n > max {
        return Err(ToolError::invalid(
            format!("The parameter `{key}` has {n} characters; at most {max} are allowed."),
            action,
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths() {
        assert!(check_len("k", &"a".repeat(512), 512, "x").is_ok());
        let e = check_len("k", &"a".repeat(513), 512, "x").unwrap_err();
        assert_eq!(e.code, "INVALID_ARGUMENT");
        assert!(
            e.message.contains("513 characters; at most 512"),
            "{}",
            e.message
        );
    }
}
