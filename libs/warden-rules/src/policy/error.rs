//! What can be wrong with a policy file or one policy: [`PolicyError`] names the policy,
//! [`PolicyReason`] says what is wrong inside it. Every message is one line.

use std::fmt;

/// A policy file or policy that cannot be used. `Display` is a single line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyError {
    /// The text is not YAML.
    Syntax {
        /// 1-based line and column, when the parser knows them.
        location: Option<(usize, usize)>,
        /// The parser's message.
        message: String,
    },
    /// A problem with the file as a whole (version, top-level keys).
    File {
        /// What is wrong.
        reason: String,
    },
    /// A problem with the policy that has this id.
    Policy {
        /// The policy's id.
        id: String,
        /// What is wrong.
        reason: String,
    },
    /// A problem with a policy that has no usable id.
    Unnamed {
        /// 1-based position in the `policies` list.
        index: usize,
        /// What is wrong.
        reason: String,
    },
}

impl PolicyError {
    /// The id of the policy at fault, when known.
    pub fn policy_id(&self) -> Option<&str> {
        match self {
            Self::Policy { id, .. } => Some(id),
            _ => None,
        }
    }
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Syntax {
                location: Some((line, column)),
                message,
            } => write!(
                f,
                "policy file is not valid YAML at line {line}, column {column}: {}",
                one_line(message)
            ),
            Self::Syntax {
                location: None,
                message,
            } => write!(f, "policy file is not valid YAML: {}", one_line(message)),
            Self::File { reason } => write!(f, "policy file: {}", one_line(reason)),
            Self::Policy { id, reason } => write!(f, "policy {id:?}: {}", one_line(reason)),
            Self::Unnamed { index, reason } => {
                write!(f, "policy #{index} (no id): {}", one_line(reason))
            }
        }
    }
}

impl std::error::Error for PolicyError {}

pub(super) fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What is wrong inside one policy (or with one of its values); the [`PolicyError`] that
/// carries it names the policy.
// Each variant is documented by its message.
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyReason {
    #[error(
        "unknown type {name:?} (expected quiet_hours, frequency_limit, tag_exclusion, country_block, duplicate_guard, recipient_allowlist or content_filter)"
    )]
    UnknownType { name: String },
    #[error("`{field}` must be a time HH:MM from 00:00 to 23:59 (end may be 24:00), got {text:?}")]
    Clock { field: String, text: String },
    #[error(
        "unknown timezone {name:?}; use an IANA time zone name such as Asia/Jakarta, Europe/London or UTC, or customer (the zone of the customer's country)"
    )]
    Timezone { name: String },
    #[error(
        "`window` must be a duration such as 24h, 30m, 7d or 3600s (at most 366d), got {text:?}"
    )]
    Window { text: String },
    #[error("`{field}` entries must be text, got {got}")]
    EntryNotText { field: String, got: String },
    #[error("missing `{field}` (e.g. {example})")]
    Missing { field: String, example: String },
    #[error("`{field}` must be {hint}, got {got}")]
    WrongType {
        field: String,
        hint: String,
        got: String,
    },
    #[error("`{field}` must be a list like {example}, got {got}")]
    NotAList {
        field: String,
        example: String,
        got: String,
    },
    #[error("`{field}` must not be empty (e.g. {example})")]
    EmptyList { field: String, example: String },
    #[error("`{field}` has an empty entry")]
    EmptyEntry { field: String },
    #[error("`enabled` must be true or false, got {got}")]
    Enabled { got: String },
    #[error("`message_types`: {0}")]
    MessageType(String),
    #[error("`action` must be deny or hold, got {got}")]
    QuietAction { got: String },
    #[error("`max` must be a whole number of at least 1, got {got}")]
    Max { got: String },
    /// An agent-safety policy's own reason (see `crate::safety`).
    #[error("{0}")]
    Safety(#[from] crate::safety::error::SafetyPolicyError),
    #[error(
        "`prefixes` entry {prefix:?} must be the leading digits of E.164 numbers (e.g. \"1\" or \"44\"), without a leading 0"
    )]
    Prefix { prefix: String },
}
