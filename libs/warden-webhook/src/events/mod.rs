//! From a verified POST body to a list of events, each with a stable de-duplication key.
//!
//! Pure: no I/O, no clock (callers pass `now`). Everything that reaches Postgres is made
//! safe here, so a hostile or broken body can cost a 400 or be skipped, never a 5xx:
//! NUL characters (which Postgres `TEXT`/`JSONB` refuse) are stripped, identifiers are
//! bounded, timestamps are clamped into a sane range and phone numbers are canonical.
//!
//! Events for a business number we do not serve (`metadata.phone_number_id` of no sender)
//! are counted in [`Extracted::foreign`] and dropped here: they are acknowledged but never
//! stored, so they cannot open our window with a customer.
//!
//! Leniency: the envelope must be a platform event (`object` =
//! `whatsapp_business_account`, `entry` an array), otherwise the POST is a 400. Inside
//! it, a change of an unknown `field`, a known change whose value does not parse, or an
//! item without the ids it needs is skipped (and counted), never a reason to refuse the
//! whole batch: one poisoned change must not make the platform retry 999 good ones.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::Value;
use warden_platform::webhook::{Change, ErrorDetail, MessagesValue, Metadata};
// The unit tests name the types of the events' fields.
#[cfg(test)]
use {warden_core::conversations::inbound::NoWindow, warden_rules::keywords::OptChange};

mod account;
mod calls;
pub mod commerce;
mod flows;
mod inbound;
mod preferences;
mod sanitize;
mod shared_numbers;
mod statuses;
mod template_changes;
mod templates;
pub use account::QualityEvent;
pub use flows::FlowReplyEvent;
pub use inbound::InboundEvent;
pub use preferences::PreferenceEvent;
use sanitize::{bounded_key, sha256_hex, value_int, value_text};
pub use sanitize::{clean, clean_json, clip, event_time};
pub use shared_numbers::{EchoEvent, Handover, HandoverEvent, StandbyEvent};
pub use statuses::{StatusError, StatusEvent, StatusPricing};
pub use template_changes::{TemplateChange, TemplateChangeEvent};
pub use templates::TemplateEvent;

/// Longest identifier (wamid, template name, ...) kept as is; longer ones are not real.
pub const MAX_ID_LEN: usize = 256;
/// Keys longer than this are shortened to `<prefix>:h:<sha256>` (btree entries are bounded).
const MAX_KEY_LEN: usize = 200;
/// Unix seconds before which a timestamp is treated as missing (2000-01-01).
const MIN_SANE_TS: i64 = 946_684_800;

/// What kind of event, as counted in `warden_webhook_events_total{kind}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    Inbound,
    Status,
    Template,
    UserPreference,
    Quality,
    /// A template's category or quality changed by the platform.
    TemplateChange,
    /// A person's message from the WhatsApp Business app (shared numbers).
    Echo,
    /// The thread's owner changed under conversation routing.
    Handover,
    /// A copy of a thread another app owns.
    Standby,
}

impl EventKind {
    pub const ALL: [EventKind; 9] = [
        EventKind::Inbound,
        EventKind::Status,
        EventKind::Template,
        EventKind::UserPreference,
        EventKind::Quality,
        EventKind::TemplateChange,
        EventKind::Echo,
        EventKind::Handover,
        EventKind::Standby,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Inbound => "inbound",
            EventKind::Status => "status",
            EventKind::Template => "template",
            EventKind::UserPreference => "user_preferences",
            EventKind::Quality => "quality",
            EventKind::TemplateChange => "template_change",
            EventKind::Echo => "echo",
            EventKind::Handover => "handover",
            EventKind::Standby => "standby",
        }
    }
}

/// One event to apply once.
#[derive(Debug, Clone)]
pub struct Event {
    /// The `webhook_events.event_key` that tells a replay apart.
    pub key: String,
    pub body: EventBody,
    /// The business number it is about (`metadata.phone_number_id`), when it says.
    pub number: Option<String>,
    /// The business account of its entry (`entry[].id`).
    pub account: String,
    /// The number's display number as this event's `metadata` shows it (every event that
    /// names a number carries it): how Warden learns which display number is whose.
    pub display: Option<String>,
}

impl Event {
    pub fn kind(&self) -> EventKind {
        match &self.body {
            EventBody::Inbound(_) => EventKind::Inbound,
            EventBody::Status(_) => EventKind::Status,
            EventBody::Template(_) => EventKind::Template,
            EventBody::Preference(_) => EventKind::UserPreference,
            EventBody::Quality(_) => EventKind::Quality,
            EventBody::TemplateChange(_) => EventKind::TemplateChange,
            EventBody::Echo(_) => EventKind::Echo,
            EventBody::Handover(_) => EventKind::Handover,
            EventBody::Standby(_) => EventKind::Standby,
        }
    }
}

#[derive(Debug, Clone)]
pub enum EventBody {
    Inbound(InboundEvent),
    Status(StatusEvent),
    Template(TemplateEvent),
    Preference(PreferenceEvent),
    Quality(QualityEvent),
    TemplateChange(TemplateChangeEvent),
    Echo(EchoEvent),
    Handover(HandoverEvent),
    Standby(StandbyEvent),
}

/// Why a part of a body was skipped (logged and counted, never an error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub reason: &'static str,
    pub detail: String,
}

/// What a body holds.
#[derive(Debug, Default)]
pub struct Extracted {
    /// Distinct events in document order.
    pub events: Vec<Event>,
    /// Events whose key appeared earlier in the same POST.
    pub duplicates: usize,
    pub skipped: Vec<Skipped>,
    /// Messages, statuses and preferences addressed to a business number we do not serve.
    pub foreign: u64,
}

/// The body is not a platform event (400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    #[error("body is not JSON: {0}")]
    NotJson(String),
    #[error("not a platform event: object must be \"whatsapp_business_account\"")]
    WrongObject,
    #[error("not a platform event: entry must be an array")]
    NoEntries,
}

#[derive(Deserialize)]
struct RawEnvelope {
    #[serde(default)]
    object: Value,
    #[serde(default)]
    entry: Value,
}

/// Parse a verified body and list its events, whatever number they are for.
pub fn extract(body: &[u8], now: DateTime<Utc>) -> Result<Extracted, BodyError> {
    extract_for(body, now, None)
}

/// Parse a verified body and list its events for the business numbers `ours` (the
/// senders' `phone_number_id`s); events for another number are only counted. An event
/// without a `metadata.phone_number_id` is taken as ours (nothing says otherwise).
pub fn extract_for(
    body: &[u8],
    now: DateTime<Utc>,
    ours: Option<&[String]>,
) -> Result<Extracted, BodyError> {
    let raw: RawEnvelope =
        serde_json::from_slice(body).map_err(|e| BodyError::NotJson(e.to_string()))?;
    if raw.object.as_str() != Some(warden_platform::webhook::OBJECT_WABA) {
        return Err(BodyError::WrongObject);
    }
    let Value::Array(entries) = raw.entry else {
        return Err(BodyError::NoEntries);
    };
    let mut out = Builder {
        ours,
        ..Builder::default()
    };
    for entry in entries {
        let Value::Object(mut entry) = entry else {
            out.skip("bad_entry", "entry is not an object");
            continue;
        };
        let entry_id = entry.get("id").map(value_text).unwrap_or_default();
        let entry_time = entry.get("time").and_then(value_int);
        let changes = match entry.remove("changes") {
            Some(Value::Array(changes)) => changes,
            Some(Value::Null) | None => Vec::new(),
            Some(_) => {
                out.skip("bad_entry", "changes is not an array");
                continue;
            }
        };
        for change in changes {
            out.change(change, &entry_id, entry_time, now);
        }
    }
    Ok(out.finish())
}

/// The business numbers a body names (`entry[].changes[].value.metadata.phone_number_id`),
/// each once, in order; before the signature is checked, to choose whose app secret signs
/// it. Nothing here is trusted beyond that choice.
pub fn named_numbers(body: &[u8]) -> Vec<String> {
    let Ok(raw) = serde_json::from_slice::<RawEnvelope>(body) else {
        return Vec::new();
    };
    let mut numbers: Vec<String> = Vec::new();
    let entries = raw.entry.as_array().map(Vec::as_slice).unwrap_or_default();
    for change in entries
        .iter()
        .filter_map(|e| e.get("changes")?.as_array())
        .flatten()
    {
        let number = change
            .pointer("/value/metadata/phone_number_id")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|n| !n.is_empty());
        if let Some(n) = number
            && !numbers.iter().any(|known| known == n)
        {
            numbers.push(n.to_string());
        }
    }
    numbers
}

#[derive(Default)]
struct Builder<'a> {
    seen: HashSet<String>,
    out: Extracted,
    ours: Option<&'a [String]>,
    /// The number and account of the change being read.
    number: Option<String>,
    account: String,
    /// The display number its metadata gives.
    display: Option<String>,
}

impl Builder<'_> {
    fn skip(&mut self, reason: &'static str, detail: impl Into<String>) {
        self.out.skipped.push(Skipped {
            reason,
            detail: detail.into(),
        });
    }

    fn push(&mut self, key: String, body: EventBody) {
        let key = bounded_key(&key);
        if self.seen.insert(key.clone()) {
            self.out.events.push(Event {
                key,
                body,
                number: self.number.clone(),
                account: self.account.clone(),
                display: self.display.clone(),
            });
        } else {
            self.out.duplicates += 1;
        }
    }

    fn finish(self) -> Extracted {
        self.out
    }

    /// The number (and its display number) the next events are about, from `metadata`.
    fn set_number(&mut self, metadata: Option<&Metadata>) {
        self.number = metadata
            .map(|m| m.phone_number_id.trim().to_string())
            .filter(|n| !n.is_empty());
        self.display = metadata
            .filter(|_| self.number.is_some())
            .map(|m| clip(&clean(m.display_phone_number.trim()), 64))
            .filter(|d| !d.is_empty());
    }

    /// True when `metadata` names a business number other than ours.
    fn foreign(&self, metadata: Option<&Metadata>) -> bool {
        let Some(ours) = self.ours else {
            return false;
        };
        metadata
            .map(|m| m.phone_number_id.trim())
            .is_some_and(|id| !id.is_empty() && !ours.iter().any(|o| o == id))
    }

    /// One change of an entry, by its `field`.
    fn change(
        &mut self,
        change: Value,
        entry_id: &str,
        entry_time: Option<i64>,
        now: DateTime<Utc>,
    ) {
        let field = change
            .get("field")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        // Kept raw for the quality table's payload column.
        let raw_value = if field == warden_platform::webhook::FIELD_QUALITY
            || field == warden_platform::webhook::FIELD_CAPABILITY
        {
            change.get("value").cloned().unwrap_or(Value::Null)
        } else {
            Value::Null
        };
        // Hash of a change, for kinds whose payload carries no id of its own.
        let fingerprint = |v: &dyn std::fmt::Display| {
            sha256_hex(format!("{entry_id}|{entry_time:?}|{v}").as_bytes())
        };
        let typed = match serde_json::from_value::<Change>(change) {
            Ok(typed) => typed,
            Err(e) => {
                self.skip("malformed_change", format!("{}: {e}", clip(&field, 64)));
                return;
            }
        };
        self.account = entry_id.to_string();
        let metadata = match &typed {
            Change::Messages(v) => v.metadata.as_ref(),
            Change::UserPreferences(v) => v.metadata.as_ref(),
            _ => None,
        };
        self.set_number(metadata);
        match typed {
            Change::Messages(value) => self.messages(value, now),
            Change::TemplateStatus(update) => {
                let fp = fingerprint(&serde_json::to_value(&update).unwrap_or_default());
                self.template(update, entry_time, &fp, now)
            }
            Change::UserPreferences(value) => self.preferences(value, now),
            Change::Quality(update) => {
                let fp = fingerprint(&raw_value);
                self.quality(update, raw_value, &fp)
            }
            Change::Other { field, value }
                if field == template_changes::FIELD_CATEGORY
                    || field == template_changes::FIELD_QUALITY =>
            {
                self.template_change(&field, &value, &fingerprint(&value))
            }
            Change::Other { field, value }
                if matches!(
                    field.as_str(),
                    shared_numbers::FIELD_ECHOES
                        | shared_numbers::FIELD_HANDOVERS
                        | shared_numbers::FIELD_STANDBY
                ) =>
            {
                self.shared_number(&field, &value, &fingerprint(&value), now)
            }
            Change::Other { field, value }
                if field == warden_platform::webhook::FIELD_CAPABILITY =>
            {
                let fp = fingerprint(&raw_value);
                self.capability(value, raw_value, &fp)
            }
            Change::Other { field, .. } => self.skip("unknown_field", clip(&field, 64)),
        }
    }

    /// A `messages` change: customers' messages, statuses of ours, and system errors.
    fn messages(&mut self, value: MessagesValue, now: DateTime<Utc>) {
        if self.foreign(value.metadata.as_ref()) {
            self.out.foreign += (value.messages.len() + value.statuses.len()) as u64;
            return;
        }
        for msg in value.messages {
            self.inbound(msg, &value.contacts, now);
        }
        for status in value.statuses {
            self.status(status, now);
        }
        for err in value.errors {
            // System-level errors belong to no message: worth a log line only.
            self.skip("system_error", describe_error(&err));
        }
    }
}

fn describe_error(err: &ErrorDetail) -> String {
    format!(
        "{} {}",
        err.code,
        clip(&clean(err.title.as_deref().unwrap_or("")), 128)
    )
}

#[cfg(test)]
mod tests;
