//! Whether one policy forbids a send, and the explanation and suggested action when it
//! does (quiet hours, tag exclusion, country block, recipient allowlist).

use chrono::{DateTime, Utc};

use super::quiet_hours::{format_clock, minute_in};
use super::{Policy, QuietZone, Rule};
use crate::kinds::Category;
use crate::phone::PhoneNumber;

impl Policy {
    /// Whether this (non-frequency) policy forbids sending to `ctx` at `now`:
    /// `Some(explanation, suggested action)` when it does. Frequency limits are judged
    /// by the caller with the message count, so they never deny here.
    pub(crate) fn restriction(
        &self,
        category: Category,
        tags: &[String],
        phone: &PhoneNumber,
        now: DateTime<Utc>,
    ) -> Option<(String, String)> {
        let what = format!("{} messages", category.as_str());
        match &self.rule {
            // Content rules are judged with the message (`crate::safety`).
            Rule::FrequencyLimit { .. } | Rule::DuplicateGuard(_) | Rule::ContentFilter(_) => None,
            Rule::RecipientAllowlist(list) => {
                if list.allows(phone, tags) {
                    return None;
                }
                Some((
                    format!(
                        "Policy {} allows {what} only to {}, and this recipient is not one of them.",
                        self.id,
                        list.describe()
                    ),
                    format!(
                        "Do not send to this recipient; policy {} limits this agent to its allowlist.",
                        self.id
                    ),
                ))
            }
            Rule::TagExclusion { tags: blocked } => {
                let hit = crate::tags::first_match(blocked, tags)?;
                Some((
                    format!(
                        "Policy {} forbids {what} to customers tagged {hit:?}, and this customer carries that tag.",
                        self.id
                    ),
                    format!(
                        "Do not send {what} to this customer; remove the {hit:?} tag first only if it was applied by mistake."
                    ),
                ))
            }
            Rule::CountryBlock { prefixes } => {
                let hit = prefixes.iter().find(|p| phone.starts_with_prefix(p))?;
                Some((
                    format!(
                        "Policy {} forbids {what} to numbers starting with +{hit}, and this recipient's number does.",
                        self.id
                    ),
                    format!(
                        "Do not send {what} to this number; no other send path is allowed for it."
                    ),
                ))
            }
            Rule::QuietHours(q) => {
                if !q.contains_for(phone, now) {
                    return None;
                }
                let tz = q.zone_for(phone);
                let local = format_clock(minute_in(tz, now));
                Some((
                    format!(
                        "Policy {} forbids {what} during quiet hours {}-{} {}{}; it is now {local} there.",
                        self.id,
                        q.start(),
                        q.end(),
                        tz.name(),
                        if q.zone() == QuietZone::Customer {
                            " (the customer's time zone, from their number's country)"
                        } else {
                            ""
                        }
                    ),
                    format!(
                        "Wait until {} {} (end of quiet hours) and try again, or schedule the message for then with schedule_message{}.",
                        q.end(),
                        tz.name(),
                        if q.holds() {
                            " (scheduled and campaign messages wait for it by themselves)"
                        } else {
                            ""
                        }
                    ),
                ))
            }
        }
    }
}
