//! A sender's Marketing Messages API options: `marketing_messages: true` sends its
//! MARKETING templates through the platform's Marketing Messages API, with
//! `marketing_product_policy` (`CLOUD_API_FALLBACK`, the default, or `STRICT`).

use serde_yaml::Value;

use super::{File, field_name, field_path, kind};
use crate::senders::ProductPolicy;

impl File<'_> {
    /// `marketing_messages`: true or false (default false).
    pub(super) fn marketing_flag(&mut self, index: usize, map: &serde_yaml::Mapping) -> bool {
        match map.get("marketing_messages") {
            None | Some(Value::Null) | Some(Value::Bool(false)) => false,
            Some(Value::Bool(true)) => true,
            Some(other) => {
                self.at_value(
                    &field_path(index, "marketing_messages"),
                    field_name(index, "marketing_messages"),
                    format!("must be true or false, not {}", kind(other)),
                );
                false
            }
        }
    }

    /// `marketing_product_policy`: `CLOUD_API_FALLBACK` (default) or `STRICT`.
    pub(super) fn product_policy(
        &mut self,
        index: usize,
        map: &serde_yaml::Mapping,
    ) -> ProductPolicy {
        let field = "marketing_product_policy";
        match map.get(field) {
            None | Some(Value::Null) => ProductPolicy::default(),
            Some(Value::String(s)) if ProductPolicy::parse(s).is_some() => {
                ProductPolicy::parse(s).unwrap_or_default()
            }
            Some(other) => {
                let shown = match other {
                    Value::String(s) => format!("`{}`", s.chars().take(40).collect::<String>()),
                    v => kind(v).to_string(),
                };
                self.at_value(
                    &field_path(index, field),
                    field_name(index, field),
                    format!("{shown} is not a product policy; use CLOUD_API_FALLBACK or STRICT"),
                );
                ProductPolicy::default()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::senders::{ProductPolicy, Senders};

    fn file(extra: &str) -> String {
        format!(
            "version: 1\nsenders:\n  - id: a1\n    phone_number_id: \"1001\"\n    waba_id: \"2001\"\n    portfolio_id: \"3001\"\n    access_token_env: TOKEN\n    app_secret_env: SECRET\n    default: true\n{extra}"
        )
    }

    fn load(extra: &str) -> Result<Senders, Vec<crate::senders::SenderProblem>> {
        Senders::from_yaml(&file(extra), &|_| Some("s3cret".into()))
    }

    #[test]
    fn off_by_default_with_the_fallback_policy() {
        let s = load("").unwrap();
        assert!(!s.default().marketing_messages);
        assert_eq!(
            s.default().marketing_product_policy,
            ProductPolicy::CloudApiFallback
        );
    }

    #[test]
    fn on_with_a_strict_policy() {
        let s =
            load("    marketing_messages: true\n    marketing_product_policy: STRICT\n").unwrap();
        assert!(s.default().marketing_messages);
        assert_eq!(s.default().marketing_product_policy, ProductPolicy::Strict);
    }

    #[test]
    fn an_unknown_policy_is_refused_naming_key_and_line() {
        let problems =
            load("    marketing_messages: true\n    marketing_product_policy: LAX\n").unwrap_err();
        assert_eq!(problems.len(), 1, "{problems:?}");
        let p = &problems[0];
        assert_eq!(p.field, "senders[0].marketing_product_policy");
        assert_eq!(p.line, 11);
        assert!(p.reason.contains("LAX"), "{}", p.reason);
        let problems = load("    marketing_messages: yes please\n").unwrap_err();
        assert_eq!(problems[0].field, "senders[0].marketing_messages");
        assert_eq!(problems[0].line, 10);
    }
}
