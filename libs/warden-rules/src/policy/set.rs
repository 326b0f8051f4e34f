//! A validated set of policies in file order: lookups, the frequency cap in force for a
//! category (the first enabled one) and the remarks of `policies check`.

use std::collections::HashMap;

use chrono::TimeDelta;

use super::{
    DEFAULT_MARKETING_MAX, DEFAULT_MARKETING_WINDOW, Policy, PolicyError, Rule, format_window,
};
use crate::kinds::Category;

/// A frequency cap in force for one category. Messages are counted per category:
/// a limit listing `[marketing, utility]` caps each of them separately.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrequencyLimit {
    /// The policy that sets it; `None` for the built-in marketing default.
    pub policy_id: Option<String>,
    /// Accepted messages allowed per customer in the window.
    pub max: u32,
    /// Length of the rolling window.
    pub window: TimeDelta,
}

impl FrequencyLimit {
    /// The default marketing cap: 2 per rolling 24 h.
    pub fn default_marketing() -> Self {
        Self {
            policy_id: None,
            max: DEFAULT_MARKETING_MAX,
            window: DEFAULT_MARKETING_WINDOW,
        }
    }

    /// The window as written in files, e.g. `24h`.
    pub fn window_label(&self) -> String {
        format_window(self.window)
    }
}

/// A validated set of policies, in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PolicySet {
    pub(super) policies: Vec<Policy>,
}

impl PolicySet {
    /// Builds a set from policies already validated one by one (e.g. read back from
    /// the database); refuses duplicate ids.
    pub fn from_policies(policies: Vec<Policy>) -> Result<PolicySet, PolicyError> {
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for (i, p) in policies.iter().enumerate() {
            if let Some(first) = seen.insert(p.id(), i + 1) {
                return Err(PolicyError::Policy {
                    id: p.id.clone(),
                    reason: format!(
                        "duplicate id: policies #{first} and #{} both use it; ids must be unique",
                        i + 1
                    ),
                });
            }
        }
        Ok(PolicySet { policies })
    }

    /// All policies (enabled or not), in file order.
    pub fn policies(&self) -> &[Policy] {
        &self.policies
    }

    /// The policy with this id.
    pub fn get(&self, id: &str) -> Option<&Policy> {
        self.policies.iter().find(|p| p.id == id)
    }

    /// Number of policies.
    pub fn len(&self) -> usize {
        self.policies.len()
    }

    /// True when the file has no policies (only the default marketing cap applies).
    pub fn is_empty(&self) -> bool {
        self.policies.is_empty()
    }

    /// Enabled policies that apply to `category`, in file order.
    pub fn active_for(&self, category: Category) -> impl Iterator<Item = &Policy> {
        self.policies
            .iter()
            .filter(move |p| p.is_active_for(category))
    }

    /// The cap in force for `category`: the first enabled `frequency_limit` that applies
    /// to it. Without one, marketing gets the default 2 per 24 h (a disabled cap does
    /// not lift it; raise `max` instead) and other categories are unlimited (`None`).
    pub fn frequency_limit(&self, category: Category) -> Option<FrequencyLimit> {
        self.active_for(category)
            .find_map(|p| match p.rule {
                Rule::FrequencyLimit { max, window } => Some(FrequencyLimit {
                    policy_id: Some(p.id.clone()),
                    max,
                    window,
                }),
                _ => None,
            })
            .or_else(|| (category == Category::Marketing).then(FrequencyLimit::default_marketing))
    }

    /// Non-fatal remarks for `policies check`: frequency limits shadowed by an earlier
    /// one, and quiet hours that can never apply.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        for p in &self.policies {
            match &p.rule {
                Rule::QuietHours(q) if q.start == q.end => out.push(format!(
                    "policy {:?}: start equals end ({}), so these quiet hours never apply",
                    p.id,
                    q.start()
                )),
                Rule::FrequencyLimit { .. } if p.enabled => {
                    for c in Category::ALL {
                        if !p.applies_to(c) {
                            continue;
                        }
                        if let Some(first) = self.frequency_limit(c)
                            && first.policy_id.as_deref() != Some(p.id())
                        {
                            out.push(format!(
                                "policy {:?}: ignored for {} because policy {:?} comes first and sets that cap",
                                p.id,
                                c.as_str(),
                                first.policy_id.unwrap_or_default()
                            ));
                        }
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// Every policy as JSON ([`Policy::to_json`]), in file order.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::Value::Array(self.policies.iter().map(Policy::to_json).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_and_first_frequency_limit() {
        let empty = PolicySet::default();
        assert_eq!(
            empty.frequency_limit(Category::Marketing),
            Some(FrequencyLimit::default_marketing())
        );
        assert_eq!(empty.frequency_limit(Category::Utility), None);
        let set = PolicySet::from_yaml(
            "version: 1\npolicies:\n  - id: off\n    type: frequency_limit\n    message_types: [marketing]\n    max: 10\n    enabled: false\n  - id: first\n    type: frequency_limit\n    message_types: [marketing, utility]\n    max: 3\n    window: 7d\n  - id: second\n    type: frequency_limit\n    message_types: [marketing]\n    max: 1\n",
        )
        .unwrap();
        let m = set.frequency_limit(Category::Marketing).unwrap();
        assert_eq!((m.policy_id.as_deref(), m.max), (Some("first"), 3));
        assert_eq!(m.window, TimeDelta::days(7));
        assert_eq!(set.frequency_limit(Category::Utility).unwrap().max, 3);
        assert_eq!(set.frequency_limit(Category::Authentication), None);
        let w = set.warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("\"second\"") && w[0].contains("\"first\""),
            "{w:?}"
        );
        // Only a disabled cap: the default still holds.
        let only_off = PolicySet::from_yaml(
            "version: 1\npolicies:\n  - id: off\n    type: frequency_limit\n    max: 10\n    enabled: false\n",
        )
        .unwrap();
        assert_eq!(
            only_off.frequency_limit(Category::Marketing),
            Some(FrequencyLimit::default_marketing())
        );
    }
}
