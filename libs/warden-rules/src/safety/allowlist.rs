//! `recipient_allowlist`: only these phones and/or customers carrying these tags may be
//! messaged (for staging agents and first rollouts).

use super::error::SafetyPolicyError;
use crate::phone::PhoneNumber;

/// A validated allowlist: at least one of `phones` and `tags` is set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecipientAllowlist {
    /// Canonical E.164 digits.
    pub phones: Vec<String>,
    /// Lower-cased tags.
    pub tags: Vec<String>,
}

impl RecipientAllowlist {
    /// Builds the list from the file's entries; `phones` must be valid numbers.
    pub fn new(phones: Vec<String>, tags: Vec<String>) -> Result<Self, SafetyPolicyError> {
        if phones.is_empty() && tags.is_empty() {
            return Err(SafetyPolicyError::EmptyAllowlist);
        }
        let mut digits: Vec<String> = Vec::with_capacity(phones.len());
        for p in phones {
            let n = crate::phone::canonicalize(&p).map_err(|error| SafetyPolicyError::Phone {
                entry: p.clone(),
                error,
            })?;
            if !digits.iter().any(|d| d == n.digits()) {
                digits.push(n.digits().to_string());
            }
        }
        Ok(Self {
            phones: digits,
            tags: crate::tags::normalize_all(tags),
        })
    }

    /// True when the recipient is on the list (by number, or by one of its tags).
    pub fn allows(&self, phone: &PhoneNumber, tags: &[String]) -> bool {
        self.phones.iter().any(|p| p == phone.digits())
            || crate::tags::first_match(&self.tags, tags).is_some()
    }

    /// What the list admits, for explanations: `2 numbers and tags "qa", "staff"`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.phones.is_empty() {
            parts.push(format!("{} listed number(s)", self.phones.len()));
        }
        if !self.tags.is_empty() {
            let tags: Vec<String> = self.tags.iter().map(|t| format!("{t:?}")).collect();
            parts.push(format!("customers tagged {}", tags.join(", ")));
        }
        parts.join(" and ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phone::canonicalize;

    #[test]
    fn by_phone_or_tag() {
        let l = RecipientAllowlist::new(vec!["+1 555 0100 123".into()], vec!["QA".into()]).unwrap();
        let listed = canonicalize("+15550100123").unwrap();
        let other = canonicalize("+628123456789").unwrap();
        assert!(l.allows(&listed, &[]));
        assert!(!l.allows(&other, &[]));
        assert!(l.allows(&other, &["qa".into()]));
        assert!(!l.allows(&other, &["vip".into()]));
        assert!(RecipientAllowlist::new(vec![], vec![]).is_err());
        assert!(RecipientAllowlist::new(vec!["12".into()], vec![]).is_err());
    }
}
