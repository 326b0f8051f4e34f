//! A secret value (a token, an app secret) that never reaches a log line: its `Debug`
//! prints [`REDACTED`], it has no `Display`, and only [`Secret::expose`] gives the text.

use std::fmt;

use crate::print::REDACTED;

#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The secret's text, for the one place that sends it (an `Authorization` header, an
    /// HMAC key). Never log it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{REDACTED:?}")
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Secret(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Secret(value.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_the_value() {
        let s = Secret::new("tok-123");
        assert_eq!(format!("{s:?}"), "\"<redacted>\"");
        assert_eq!(format!("{s:#?}"), "\"<redacted>\"");
        assert_eq!(s.expose(), "tok-123");
    }
}
