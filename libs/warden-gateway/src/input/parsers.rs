//! Parsers that name the parameter they read, for values inside other parameters or
//! shared by several field types: language codes and customer identifiers.

use crate::error::{ToolError, ToolResult};
use crate::quoting::{detail, echo};

/// The longest language code taken (`zh_Hant_TW` has 10 characters).
pub const MAX_LANGUAGE_CHARS: usize = 16;

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
pub fn parse_phone(key: &str, raw: &str) -> ToolResult<warden_rules::phone::PhoneNumber> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
