//! Bounds every tool applies to its arguments, worded the same way everywhere.

use crate::error::{ToolError, ToolResult};

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
