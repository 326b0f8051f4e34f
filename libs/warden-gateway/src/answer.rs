//! A tool's answer ([`finish`]) and how answers write times ([`ts`]).

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
/// or the error envelope with `isError: true`. `tool` is the name the call was made by
/// (the handler's `ToolName`), so a tool's name is written only where its router entry is.
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
