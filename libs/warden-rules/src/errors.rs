//! One error type over the module errors, for callers that only need to turn any
//! rule violation in the input into an `INVALID_ARGUMENT` with a one-line message.

use crate::import::ImportError;
use crate::kinds::KindError;
use crate::phone::PhoneError;
use crate::policy::PolicyError;

/// Any invalid input this crate can report. Every message is one line.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RuleError {
    /// A bad phone number.
    #[error(transparent)]
    Phone(#[from] PhoneError),
    /// A bad message type, category or channel.
    #[error(transparent)]
    Kind(#[from] KindError),
    /// A bad policy file or policy.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// A bad import file.
    #[error(transparent)]
    Import(#[from] ImportError),
    /// Any other invalid argument (templates, variables, audience filters).
    #[error("{0}")]
    InvalidArgument(String),
}

impl RuleError {
    /// The tool error code for this error: always `INVALID_ARGUMENT`, since every
    /// error here is about the caller's input.
    pub fn code(&self) -> &'static str {
        "INVALID_ARGUMENT"
    }
}

impl From<String> for RuleError {
    fn from(message: String) -> Self {
        Self::InvalidArgument(message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_module_errors_transparently() {
        let e: RuleError = crate::phone::canonicalize("12").unwrap_err().into();
        assert_eq!(e.code(), "INVALID_ARGUMENT");
        assert!(e.to_string().contains("2 digits"));
        let e: RuleError = crate::kinds::parse_channel(Some("sms")).unwrap_err().into();
        assert!(e.to_string().contains("\"sms\""));
        let e: RuleError = String::from("variables do not match").into();
        assert_eq!(e.to_string(), "variables do not match");
    }
}
