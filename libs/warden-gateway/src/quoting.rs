//! How a message quotes what it did not write itself: a caller's values ([`echo`]),
//! another component's error texts ([`detail`]), and the refusals that name them. A leaf:
//! it imports nothing from this crate, so every other module may use it.

use warden_rules::kinds::KindError;
use warden_rules::templates::MAX_NAME_CHARS;

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
    let (shown, cut) = warden_rules::text::clip(value, ECHO_CHARS);
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
    let (shown, cut) = warden_rules::text::clip(value, max);
    if cut { format!("{shown}…") } else { shown }
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

/// "There is no template named `x` in locale `en`.", noting the name limit when the name
/// is longer than any template's.
pub fn no_template_message(name: &str, locale: &str) -> String {
    if warden_core::templates::impossible_name(name) {
        format!(
            "There is no template named {} in locale {}: template names have at most {MAX_NAME_CHARS} characters.",
            echo(name),
            echo(locale)
        )
    } else {
        format!(
            "There is no template named {} in locale {}.",
            echo(name),
            echo(locale)
        )
    }
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
}
