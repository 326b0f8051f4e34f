//! What the platform says of the account's numbers: a `phone_number_quality_update` and a
//! `business_capability_update` (its messaging limit), each kept raw for the quality table.

use serde_json::Value;
use warden_platform::webhook::PhoneNumberQualityUpdate;

use super::{Builder, EventBody, clean, clean_json, clip};

/// A phone-number quality / limit change.
#[derive(Debug, Clone)]
pub struct QualityEvent {
    pub event: String,
    pub current_limit: Option<String>,
    pub display_phone_number: Option<String>,
    pub payload: Value,
}

impl Builder<'_> {
    /// A `business_capability_update`: the portfolio's messaging limit, stored and applied
    /// like a quality update's `current_limit` (event `BUSINESS_CAPABILITY_UPDATE`).
    pub(super) fn capability(&mut self, value: Value, raw: Value, fp: &str) {
        let update: warden_platform::webhook::BusinessCapabilityUpdate =
            match serde_json::from_value(value) {
                Ok(u) => u,
                Err(e) => {
                    self.skip("bad_capability_update", clip(&e.to_string(), 128));
                    return;
                }
            };
        let Some(limit) = update.messaging_limit() else {
            // Phone-number counts only: nothing Warden enforces.
            self.skip("capability_without_limit", String::new());
            return;
        };
        self.push(
            format!("cap:{fp}"),
            EventBody::Quality(QualityEvent {
                event: warden_core::platform_events::CAPABILITY_EVENT.to_string(),
                current_limit: Some(limit.to_string()),
                display_phone_number: None,
                payload: clean_json(raw),
            }),
        );
    }

    pub(super) fn quality(&mut self, update: PhoneNumberQualityUpdate, raw: Value, fp: &str) {
        let event = clip(&clean(&update.event), 64);
        if event.is_empty() {
            self.skip("bad_quality_update", "no event");
            return;
        }
        let opt = |s: Option<&str>| s.map(|s| clip(&clean(s), 128)).filter(|s| !s.is_empty());
        self.push(
            format!("q:{fp}"),
            EventBody::Quality(QualityEvent {
                event,
                current_limit: opt(update.current_limit.as_deref()),
                display_phone_number: opt(Some(&update.display_phone_number)),
                payload: clean_json(raw),
            }),
        );
    }
}
