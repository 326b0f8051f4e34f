//! Events a number receives from the platform's side, scripted by the control endpoints:
//! an inbound message, a marketing preference, a quality change. Each webhook carries the
//! number's metadata and goes out under its account, signed with its secret.

use warden_platform::webhook::{
    Change, Contact, InboundMessage, MessagesValue, PhoneNumberQualityUpdate, Profile, TextBody,
    UserPreference, UserPreferencesValue,
};

use super::numbers::{Number, PhoneState};
use super::{InboundContent, Sim};
use crate::webhooks::unix_now;

impl Sim {
    /// [`Sim::inbound_to`] the first number.
    pub fn inbound(
        &self,
        from: crate::users::SimUser,
        message: InboundContent,
        name: Option<String>,
        timestamp: Option<i64>,
        wamid: Option<String>,
    ) -> (String, bool) {
        self.inbound_to(self.numbers.first(), from, message, name, timestamp, wamid)
    }

    /// Queues an inbound message webhook (any type) to `number`; returns its wamid and
    /// whether a webhook will be sent.
    pub fn inbound_to(
        &self,
        number: &Number,
        from: crate::users::SimUser,
        message: InboundContent,
        name: Option<String>,
        timestamp: Option<i64>,
        wamid: Option<String>,
    ) -> (String, bool) {
        let wamid = wamid.unwrap_or_else(|| self.next_wamid());
        self.users.remember(&from);
        let Some(q) = &self.webhooks else {
            return (wamid, false);
        };
        // A username user without a phone arrives as the platform sends them: no `wa_id`,
        // no `from`, only the BSUIDs.
        let phone = from.phone.unwrap_or_default();
        let change = Change::Messages(MessagesValue {
            messaging_product: Some("whatsapp".to_owned()),
            metadata: Some(number.metadata()),
            contacts: vec![Contact {
                profile: Some(Profile {
                    name: Some(name.unwrap_or_else(|| "Sim Customer".to_owned())),
                    username: from.username,
                }),
                wa_id: phone.clone(),
                user_id: from.user_id.clone(),
                parent_user_id: from.parent_user_id.clone(),
            }],
            messages: vec![InboundMessage {
                from: phone,
                from_user_id: from.user_id,
                from_parent_user_id: from.parent_user_id,
                id: wamid.clone(),
                timestamp: timestamp.unwrap_or_else(unix_now),
                kind: message.kind,
                text: message.text.map(|body| TextBody { body }),
                other: message.other,
            }],
            ..Default::default()
        });
        q.push(number.origin, [change]);
        (wamid, true)
    }

    /// Queues a `user_preferences` webhook (`value`: stop or resume) to `number`.
    pub fn user_preference_to(
        &self,
        number: &Number,
        wa_id: String,
        value: String,
        timestamp: Option<i64>,
    ) -> bool {
        let Some(q) = &self.webhooks else {
            return false;
        };
        let detail = format!("User requested to {value} marketing messages");
        q.push(
            number.origin,
            [Change::UserPreferences(UserPreferencesValue {
                messaging_product: Some("whatsapp".to_owned()),
                metadata: Some(number.metadata()),
                contacts: vec![Contact {
                    profile: Some(Profile {
                        name: Some("Sim Customer".to_owned()),
                        username: None,
                    }),
                    wa_id: wa_id.clone(),
                    ..Default::default()
                }],
                user_preferences: vec![UserPreference {
                    wa_id,
                    user_id: None,
                    detail: Some(detail),
                    category: "marketing_messages".to_owned(),
                    value,
                    timestamp: timestamp.unwrap_or_else(unix_now),
                }],
            })],
        );
        true
    }

    /// The first number's quality, tier and throughput.
    pub fn phone(&self) -> PhoneState {
        self.numbers.first().phone()
    }

    /// Changes a number's quality/tier and queues its `phone_number_quality_update`
    /// (`event` defaults to FLAGGED for YELLOW or RED, else UNFLAGGED).
    pub fn set_quality_of(
        &self,
        number: &Number,
        quality_rating: Option<String>,
        tier: Option<String>,
        event: Option<String>,
    ) -> PhoneState {
        let (before, state) = number.update_phone(|p| {
            if let Some(q) = quality_rating {
                p.quality_rating = q;
            }
            if let Some(t) = tier {
                p.messaging_limit_tier = t;
            }
        });
        if let Some(q) = &self.webhooks {
            let event = event.unwrap_or_else(|| {
                // The platform flags a number when its quality turns RED (low).
                if state.quality_rating == "RED" {
                    "FLAGGED".to_owned()
                } else {
                    "UNFLAGGED".to_owned()
                }
            });
            q.push(
                number.origin,
                [Change::Quality(PhoneNumberQualityUpdate {
                    display_phone_number: number.spec.display_phone_number.clone(),
                    event,
                    current_limit: Some(state.messaging_limit_tier.clone()),
                    old_limit: Some(before.messaging_limit_tier),
                })],
            );
        }
        state
    }
}
