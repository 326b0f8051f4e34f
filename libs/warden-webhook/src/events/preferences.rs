//! A customer's marketing preference (`user_preferences`): stop or resume marketing
//! messages, by phone or BSUID.

use chrono::{DateTime, Utc};
use warden_platform::webhook::UserPreferencesValue;
use warden_rules::keywords::OptChange;
use warden_rules::phone::PhoneNumber;

use super::{Builder, EventBody, clip, event_time};

/// A marketing stop / resume preference.
#[derive(Debug, Clone)]
pub struct PreferenceEvent {
    /// The phone (`wa_id`), else the BSUID (`user_id`).
    pub phone: PhoneNumber,
    pub change: OptChange,
    pub at: DateTime<Utc>,
}

impl Builder<'_> {
    pub(super) fn preferences(&mut self, value: UserPreferencesValue, now: DateTime<Utc>) {
        if self.foreign(value.metadata.as_ref()) {
            self.out.foreign += value.user_preferences.len() as u64;
            return;
        }
        for pref in value.user_preferences {
            let category = pref.category.trim().to_ascii_lowercase();
            if !(category.is_empty() || category == "marketing_messages") {
                self.skip("preference_category", clip(&category, 64));
                continue;
            }
            let Some(change) = warden_rules::keywords::parse_preference(&pref.value) else {
                self.skip("preference_value", clip(&pref.value, 64));
                continue;
            };
            let phone = warden_rules::phone::canonicalize(&pref.wa_id)
                .ok()
                .or_else(|| {
                    pref.user_id
                        .as_deref()
                        .and_then(|u| warden_rules::bsuid::parse(u).ok())
                        .map(|b| b.key())
                });
            let Some(phone) = phone else {
                self.skip("bad_phone", clip(&pref.wa_id, 64));
                continue;
            };
            let key = format!(
                "pref:{}:{}:{}",
                phone.digits(),
                change.as_str(),
                pref.timestamp
            );
            let at = event_time(pref.timestamp, now);
            self.push(
                key,
                EventBody::Preference(PreferenceEvent { phone, change, at }),
            );
        }
    }
}
