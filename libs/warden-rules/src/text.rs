//! Characters the platform refuses, checked before anything is written or sent.
//!
//! Postgres cannot store NUL in text or JSON, and the platform refuses C0 control
//! characters; letting them through made tools answer `UNAVAILABLE` after half the work.
//! Free text (message bodies, captions) may carry line breaks and tabs, as the platform
//! allows; every other string parameter may not. Template parameter values are stricter
//! still: the platform refuses a newline, a tab or more than four consecutive spaces in
//! them.

/// Why a string was refused. Messages name the character and its position.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TextError {
    /// A C0 control character (or DEL) that is not allowed here.
    #[error(
        "contains the control character U+{code:04X} at position {position}; remove it (only printable text{allowed} is accepted)"
    )]
    Control {
        /// The character's code point.
        code: u32,
        /// 1-based character position.
        position: usize,
        /// What is allowed besides printable text, for the message.
        allowed: &'static str,
    },
    /// More than [`MAX_PARAMETER_SPACES`] spaces in a row in a template parameter.
    #[error(
        "has more than {MAX_PARAMETER_SPACES} consecutive spaces at position {position}; template parameters may not (the platform refuses them)"
    )]
    TooManySpaces {
        /// 1-based position of the first space of the run.
        position: usize,
    },
}

/// The longest run of spaces the platform takes inside a template parameter.
pub const MAX_PARAMETER_SPACES: usize = 4;

/// Where a string goes, which decides the characters it may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextKind {
    /// Message text: line breaks (`\n`, `\r`) and tabs are allowed.
    FreeText,
    /// Names, ids, codes: no control character at all.
    Plain,
    /// A value filling a template placeholder: no control character (not even a newline
    /// or tab) and at most four spaces in a row.
    TemplateParameter,
}

fn is_refused_control(c: char, kind: TextKind) -> bool {
    let control = c.is_ascii_control();
    match kind {
        TextKind::FreeText => control && !matches!(c, '\n' | '\r' | '\t'),
        TextKind::Plain | TextKind::TemplateParameter => control,
    }
}

/// At most `max` characters of `value` (counted after escaping), and whether it was cut.
pub fn clip(value: &str, max: usize) -> (String, bool) {
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
pub fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
}

/// Checks `s` for characters `kind` does not allow.
pub fn check(s: &str, kind: TextKind) -> Result<(), TextError> {
    let allowed = match kind {
        TextKind::FreeText => ", line breaks and tabs",
        TextKind::Plain | TextKind::TemplateParameter => "",
    };
    let mut spaces = 0usize;
    for (i, c) in s.chars().enumerate() {
        if is_refused_control(c, kind) {
            return Err(TextError::Control {
                code: c as u32,
                position: i + 1,
                allowed,
            });
        }
        if kind == TextKind::TemplateParameter {
            spaces = if c == ' ' { spaces + 1 } else { 0 };
            if spaces > MAX_PARAMETER_SPACES {
                return Err(TextError::TooManySpaces {
                    position: i + 1 - MAX_PARAMETER_SPACES,
                });
            }
        }
    }
    Ok(())
}

/// Every string inside a JSON value (keys too) is at least [`TextKind::FreeText`]-clean:
/// Postgres refuses NUL in `jsonb`. Returns the JSON pointer of the first bad string.
pub fn check_json(value: &serde_json::Value) -> Result<(), (String, TextError)> {
    fn walk(v: &serde_json::Value, path: &mut String) -> Result<(), (String, TextError)> {
        match v {
            serde_json::Value::String(s) => {
                check(s, TextKind::FreeText).map_err(|e| (path.clone(), e))
            }
            serde_json::Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    let len = path.len();
                    path.push_str(&format!("/{i}"));
                    walk(item, path)?;
                    path.truncate(len);
                }
                Ok(())
            }
            serde_json::Value::Object(map) => {
                for (k, item) in map {
                    check(k, TextKind::FreeText).map_err(|e| (path.clone(), e))?;
                    let len = path.len();
                    path.push('/');
                    path.push_str(k);
                    walk(item, path)?;
                    path.truncate(len);
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
    walk(value, &mut String::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_text_allows_line_breaks_but_no_nul() {
        assert!(check("Hello\nworld\r\n\tok", TextKind::FreeText).is_ok());
        assert_eq!(
            check("a\0b", TextKind::FreeText),
            Err(TextError::Control {
                code: 0,
                position: 2,
                allowed: ", line breaks and tabs"
            })
        );
        assert!(check("bell\u{7}", TextKind::FreeText).is_err());
        assert!(check("del\u{7f}", TextKind::FreeText).is_err());
        assert!(check("émoji 🎉", TextKind::FreeText).is_ok());
    }

    #[test]
    fn plain_text_allows_no_control_character() {
        assert!(check("order_update", TextKind::Plain).is_ok());
        assert!(check("a\nb", TextKind::Plain).is_err());
        assert!(check("a\tb", TextKind::Plain).is_err());
    }

    #[test]
    fn template_parameters_refuse_newlines_tabs_and_long_space_runs() {
        assert!(check("Ana  Maria    X", TextKind::TemplateParameter).is_ok());
        assert!(check("a\nb", TextKind::TemplateParameter).is_err());
        assert!(check("a\tb", TextKind::TemplateParameter).is_err());
        assert_eq!(
            check("ab     c", TextKind::TemplateParameter),
            Err(TextError::TooManySpaces { position: 3 })
        );
        let msg = check("x\u{0}", TextKind::TemplateParameter)
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("U+0000") && msg.contains("position 2"),
            "{msg}"
        );
    }

    #[test]
    fn json_strings_are_checked_everywhere() {
        let ok = serde_json::json!({"type": "text", "text": {"body": "hi\nthere"}});
        assert!(check_json(&ok).is_ok());
        let bad = serde_json::json!({"template": {"variables": ["ok", "bad\u{0}"]}});
        let (path, _) = check_json(&bad).unwrap_err();
        assert_eq!(path, "/template/variables/1");
    }
}
