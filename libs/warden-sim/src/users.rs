//! Users the sim knows by business-scoped user ID (BSUID): created by `/sim/inbound` with
//! `user_id` (and `username`, `parent_user_id`; `from` optional: a username user arrives
//! without a phone). Sends by `recipient` reach only a BSUID the sim knows, as on the
//! platform; an unknown one is refused.

use std::collections::HashMap;
use std::sync::Mutex;

/// What the sim knows of one user.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SimUser {
    /// Phone digits, when the user shares them.
    pub phone: Option<String>,
    pub user_id: Option<String>,
    pub parent_user_id: Option<String>,
    pub username: Option<String>,
}

/// A user known by phone only (the sim's original `from`).
impl From<&str> for SimUser {
    fn from(phone: &str) -> Self {
        SimUser {
            phone: Some(phone.chars().filter(char::is_ascii_digit).collect()),
            ..SimUser::default()
        }
    }
}

impl From<String> for SimUser {
    fn from(phone: String) -> Self {
        SimUser::from(phone.as_str())
    }
}

/// Known users, by BSUID and parent BSUID.
#[derive(Debug, Default)]
pub struct Users {
    by_id: Mutex<HashMap<String, SimUser>>,
}

impl Users {
    /// Remembers `user` under its BSUID and parent BSUID.
    pub fn remember(&self, user: &SimUser) {
        let mut m = self.by_id.lock().unwrap_or_else(|p| p.into_inner());
        for id in [&user.user_id, &user.parent_user_id].into_iter().flatten() {
            m.insert(id.clone(), user.clone());
        }
    }

    /// The user a BSUID or parent BSUID names.
    pub fn get(&self, id: &str) -> Option<SimUser> {
        let m = self.by_id.lock().unwrap_or_else(|p| p.into_inner());
        m.get(id).cloned()
    }

    /// The BSUID of the user with these phone digits, if the sim knows one.
    pub fn bsuid_of_phone(&self, digits: &str) -> Option<String> {
        let m = self.by_id.lock().unwrap_or_else(|p| p.into_inner());
        m.values()
            .find(|u| u.phone.as_deref() == Some(digits))
            .and_then(|u| u.user_id.clone())
    }

    pub fn clear(&self) {
        self.by_id.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }
}

/// True for `CC.<alphanumerics>` or `CC.ENT.<alphanumerics>`.
pub fn is_bsuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() > 3
        && b[0].is_ascii_alphabetic()
        && b[1].is_ascii_alphabetic()
        && b[2] == b'.'
        && s[3..]
            .strip_prefix("ENT.")
            .unwrap_or(&s[3..])
            .bytes()
            .all(|c| c.is_ascii_alphanumeric())
        && !s[3..].strip_prefix("ENT.").unwrap_or(&s[3..]).is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bsuid_shapes() {
        assert!(is_bsuid("US.1349"));
        assert!(is_bsuid("US.ENT.1181"));
        assert!(!is_bsuid("US."));
        assert!(!is_bsuid("US.ENT."));
        assert!(!is_bsuid("1234567"));
        assert!(!is_bsuid("US.12-3"));
    }

    #[test]
    fn remembers_by_both_ids() {
        let users = Users::default();
        let u = SimUser {
            phone: None,
            user_id: Some("US.1".into()),
            parent_user_id: Some("US.ENT.9".into()),
            username: Some("@ana".into()),
        };
        users.remember(&u);
        assert_eq!(users.get("US.ENT.9"), Some(u.clone()));
        assert_eq!(users.get("US.1"), Some(u));
        assert_eq!(users.get("US.2"), None);
    }
}
