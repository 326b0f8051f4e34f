//! Small helpers shared by the tools.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;
use warden_rules::kinds::KindError;

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

/// Characters of a caller's value a message quotes back at most (see [`echo`]).
pub const ECHO_CHARS: usize = 64;
/// Characters of another component's error text a message carries at most (see [`detail`]):
/// such texts (parsers, the platform) may quote the caller's input themselves.
pub const DETAIL_CHARS: usize = 300;

/// A value a caller passed, as an error message quotes it back: in backticks, control and
/// invisible formatting characters escaped, and past [`ECHO_CHARS`] characters cut with
/// "…" and the full length noted, so a message stays one short sentence whatever was sent:
/// `` `order_update` ``, `` `AAAA…` (70000 characters) ``.
pub fn echo(value: &str) -> String {
    let (shown, cut) = clip(value, ECHO_CHARS);
    if cut {
        format!("`{shown}…` ({} characters)", value.chars().count())
    } else {
        format!("`{shown}`")
    }
}

/// Another component's error text inside one of our messages: escaped as [`echo`] does and
/// cut after [`DETAIL_CHARS`] characters with "…".
pub fn detail(text: impl std::fmt::Display) -> String {
    shorten(&text.to_string(), DETAIL_CHARS)
}

/// `value` escaped as [`echo`] does and cut after `max` characters with "…", unquoted (for
/// a caller's value shown back in a result field rather than a sentence).
pub fn shorten(value: &str, max: usize) -> String {
    let (shown, cut) = clip(value, max);
    if cut { format!("{shown}…") } else { shown }
}

/// At most `max` characters of `value` (counted after escaping), and whether it was cut.
fn clip(value: &str, max: usize) -> (String, bool) {
    let mut out = String::with_capacity(value.len().min(max * 2));
    let mut used = 0;
    for c in value.chars() {
        let piece = if needs_escape(c) {
            c.escape_debug().to_string()
        } else {
            c.to_string()
        };
        let n = piece.chars().count();
        if used + n > max {
            return (out, true);
        }
        out.push_str(&piece);
        used += n;
    }
    (out, false)
}

/// Control characters and the invisible ones that reorder or hide text.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
}

/// A type, category or channel refusal, with the caller's value bounded by [`echo`].
pub fn kind_message(e: &KindError) -> String {
    match e {
        KindError::UnknownMessageType(s) => format!(
            "unknown message_type {}; use marketing, utility, authentication, service (or text) or template",
            echo(s)
        ),
        KindError::UnknownTemplateCategory(s) => format!(
            "unknown template category {}; use MARKETING, UTILITY or AUTHENTICATION",
            echo(s)
        ),
        KindError::UnknownCategory(s) => format!(
            "unknown category {}; use marketing, utility, authentication or service",
            echo(s)
        ),
        KindError::UnsupportedChannel(s) => format!(
            "unsupported channel {}; the only channel is \"whatsapp\"",
            echo(s)
        ),
        other => detail(other),
    }
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
    fn echo_is_bounded_and_escaped() {
        assert_eq!(echo("order_update"), "`order_update`");
        assert_eq!(echo(""), "``");
        let long = "A".repeat(70_000);
        let e = echo(&long);
        assert_eq!(
            e,
            format!("`{}…` (70000 characters)", "A".repeat(ECHO_CHARS))
        );
        assert_eq!(echo("a\nb\u{7}c\u{202E}"), "`a\\nb\\u{7}c\\u{202e}`");
        // escapes count towards the bound; a cut never splits one
        let ctl = "\u{1}".repeat(100);
        let e = echo(&ctl);
        assert!(e.ends_with("…` (100 characters)"), "{e}");
        assert!(e.chars().count() < ECHO_CHARS + 40, "{e}");
        // exactly at the bound: not cut
        assert_eq!(
            echo(&"b".repeat(ECHO_CHARS)),
            format!("`{}`", "b".repeat(ECHO_CHARS))
        );
        // multi-byte characters are counted as characters
        assert_eq!(
            echo(&"é".repeat(65)).chars().count(),
            2 + 64 + 1 + " (65 characters)".len()
        );
    }

    #[test]
    fn detail_is_bounded() {
        assert_eq!(detail("short"), "short");
        let d = detail("x".repeat(10_000));
        assert_eq!(d.chars().count(), DETAIL_CHARS + 1);
        assert!(d.ends_with('…'));
    }

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
