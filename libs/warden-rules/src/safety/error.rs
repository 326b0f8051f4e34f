//! Why the values of an agent-safety policy cannot be used (`recipient_allowlist`,
//! `content_filter`), as the policy file's parser reports it.

/// Why the values of an agent-safety policy (`recipient_allowlist`, `content_filter`)
/// cannot be used; the [`crate::policy::PolicyError`] that carries it names the policy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SafetyPolicyError {
    /// A `recipient_allowlist` with neither `phones` nor `tags`.
    #[error("needs `phones` and/or `tags` (e.g. phones: [\"+15550100\"])")]
    EmptyAllowlist,
    /// A `phones` entry that is not a phone number.
    #[error("`phones` entry {entry:?} is not a phone number: {error}")]
    Phone {
        /// The entry as written.
        entry: String,
        /// Why it is not a number.
        error: crate::phone::PhoneError,
    },
    /// A `content_filter` with neither `deny_patterns` nor `link_domains`.
    #[error("needs `deny_patterns` and/or `link_domains` (e.g. link_domains: [example.com])")]
    EmptyContentFilter,
    /// A `deny_patterns` entry that does not compile.
    #[error("`deny_patterns` entry {pattern:?} is not a valid regular expression: {reason}")]
    DenyPattern {
        /// The entry as written.
        pattern: String,
        /// The regex compiler's message, on one line.
        reason: String,
    },
    /// A `link_domains` entry that is not a domain name.
    #[error("`link_domains` entry {domain:?} must be a domain name such as example.com")]
    LinkDomain {
        /// The entry as written.
        domain: String,
    },
}
