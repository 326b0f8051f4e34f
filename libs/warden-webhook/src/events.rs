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
use warden_core::conversations::inbound::NoWindow;
use warden_core::customers::identity::Identity;
use warden_platform::webhook::{
    Change, Contact, ErrorDetail, InboundMessage, Metadata, PhoneNumberQualityUpdate, Status,
    StatusKind, TemplateStatusUpdate,
};
use warden_rules::keywords::OptChange;
use warden_rules::phone::PhoneNumber;

mod shared_numbers;
mod template_changes;
pub use shared_numbers::{EchoEvent, Handover, HandoverEvent, StandbyEvent};
pub use template_changes::{TemplateChange, TemplateChangeEvent};

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

/// A message a customer sent.
#[derive(Debug, Clone)]
pub struct InboundEvent {
    pub wamid: String,
    /// The customer as the webhook names it: the phone when it carries one, else the
    /// BSUID (`warden_core::customers::identity` maps it to the customer's key).
    pub phone: PhoneNumber,
    /// Every identifier the webhook carries for the sender (phone, BSUID, parent, username).
    pub identity: Identity,
    /// The message's own platform timestamp (clamped to `now`); `now` when implausible.
    pub at: DateTime<Utc>,
    /// `Ok(at)` when the message opens or extends the care window (a plausible customer
    /// message), else why it opens nothing (`warden_core::conversations::inbound`).
    pub window: Result<DateTime<Utc>, NoWindow>,
    /// `text`, `button`, `image`, ...
    pub message_type: String,
    /// The message as received (NUL-free), stored as the message row's content.
    pub content: Value,
    /// A stop / resume keyword (whole text, or the text of a quick-reply button).
    pub keyword: Option<OptChange>,
}

/// A delivery status of an outbound message.
#[derive(Debug, Clone)]
pub struct StatusEvent {
    /// Empty when the platform sent none (then only `callback` can match).
    pub wamid: String,
    pub status: StatusKind,
    pub at: DateTime<Utc>,
    /// `biz_opaque_callback_data`: our message_id when we set it.
    pub callback: Option<String>,
    pub recipient_id: String,
    /// The first error of a failed status.
    pub error: Option<StatusError>,
    /// The status's `pricing` object (what the platform charged), when it had one.
    pub pricing: Option<StatusPricing>,
}

/// A status's `pricing` object, cleaned (`warden_core::account::pricing`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusPricing {
    pub billable: Option<bool>,
    pub pricing_model: Option<String>,
    pub category: Option<String>,
    /// regular, free_customer_service, free_entry_point
    pub pricing_type: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusError {
    pub code: i32,
    pub title: Option<String>,
    pub details: Option<String>,
}

/// A template review decision.
#[derive(Debug, Clone)]
pub struct TemplateEvent {
    pub name: String,
    pub language: String,
    /// Upper case: APPROVED, REJECTED, PAUSED, ...
    pub event: String,
    pub template_id: String,
    /// None for `NONE` / null / empty.
    pub reason: Option<String>,
    /// Lower case: marketing, utility, authentication.
    pub category: Option<String>,
    /// When the platform decided it: the entry's `time` (arrival when it has none or an
    /// implausible one). Template status is applied by this time, never arrival order.
    pub at: DateTime<Utc>,
}

/// A marketing stop / resume preference.
#[derive(Debug, Clone)]
pub struct PreferenceEvent {
    /// The phone (`wa_id`), else the BSUID (`user_id`).
    pub phone: PhoneNumber,
    pub change: OptChange,
    pub at: DateTime<Utc>,
}

/// A phone-number quality / limit change.
#[derive(Debug, Clone)]
pub struct QualityEvent {
    pub event: String,
    pub current_limit: Option<String>,
    pub display_phone_number: Option<String>,
    pub payload: Value,
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
            Change::Messages(value) => {
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
            Change::TemplateStatus(update) => {
                let fp = fingerprint(&serde_json::to_value(&update).unwrap_or_default());
                self.template(update, entry_time, &fp, now)
            }
            Change::UserPreferences(value) => {
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
            Change::Quality(update) => {
                let fp = fingerprint(&raw_value);
                self.quality(update, raw_value, &fp)
            }
            Change::Other { field, value }
                if field == template_changes::FIELD_CATEGORY
                    || field == template_changes::FIELD_QUALITY =>
            {
                match template_changes::parse(&field, &value) {
                    Ok(e) => self.push(
                        format!("tchg:{}", fingerprint(&value)),
                        EventBody::TemplateChange(e),
                    ),
                    Err(reason) => self.skip(reason, clip(&field, 64)),
                }
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

    fn inbound(&mut self, msg: InboundMessage, contacts: &[Contact], now: DateTime<Utc>) {
        let wamid = clean(&msg.id);
        if wamid.is_empty() || wamid.len() > MAX_ID_LEN {
            self.skip("bad_wamid", clip(&wamid, 64));
            return;
        }
        let identity = sender_identity(&msg, contacts);
        let Some(phone) = identity.key() else {
            let shown = if msg.from.is_empty() {
                msg.from_user_id.as_deref().unwrap_or("")
            } else {
                &msg.from
            };
            self.skip("bad_phone", clip(shown, 64));
            return;
        };
        let keyword = keyword_of(&msg);
        let message_type = clip(&clean(&msg.kind), 64);
        let window = warden_core::conversations::inbound::window_opened_at(
            &message_type,
            msg.timestamp,
            now,
        );
        // The stored time of a message that opens nothing: its plausible stamp, else now.
        let at =
            warden_core::conversations::inbound::plausible_time(msg.timestamp, now).unwrap_or(now);
        let content = clean_json(serde_json::to_value(&msg).unwrap_or(Value::Null));
        self.push(
            format!("msg:{wamid}"),
            EventBody::Inbound(InboundEvent {
                wamid,
                phone,
                identity,
                at,
                window,
                message_type: if message_type.is_empty() {
                    "unknown".into()
                } else {
                    message_type
                },
                content,
                keyword,
            }),
        );
    }

    fn status(&mut self, status: Status, now: DateTime<Utc>) {
        let kind = status.kind();
        if !matches!(
            kind,
            StatusKind::Sent | StatusKind::Delivered | StatusKind::Read | StatusKind::Failed
        ) {
            self.skip("status_kind", clip(&status.status, 64));
            return;
        }
        let wamid = clean(&status.id);
        let callback = status
            .biz_opaque_callback_data
            .as_deref()
            .map(clean)
            .filter(|c| !c.is_empty() && c.len() <= MAX_ID_LEN);
        if wamid.len() > MAX_ID_LEN || (wamid.is_empty() && callback.is_none()) {
            self.skip("bad_wamid", clip(&wamid, 64));
            return;
        }
        let key = if wamid.is_empty() {
            format!(
                "st:cb:{}:{}",
                callback.as_deref().unwrap_or(""),
                kind.as_str()
            )
        } else {
            format!("st:{wamid}:{}", kind.as_str())
        };
        let error = status.errors.first().map(|e| StatusError {
            code: i32::try_from(e.code).unwrap_or(0),
            title: e.title.as_deref().map(|t| clip(&clean(t), 512)),
            details: e.details().map(|d| clip(&clean(d), 1024)),
        });
        self.push(
            key,
            EventBody::Status(StatusEvent {
                wamid,
                status: kind,
                at: event_time(status.timestamp, now),
                callback,
                // The phone, else the BSUID (a send by BSUID to a phone-less user).
                recipient_id: clip(
                    &clean(if status.recipient_id.is_empty() {
                        status.recipient_user_id.as_deref().unwrap_or("")
                    } else {
                        &status.recipient_id
                    }),
                    64,
                ),
                error,
                pricing: status.pricing.as_ref().map(|p| {
                    let short = |s: &Option<String>| {
                        s.as_deref()
                            .map(|s| clip(&clean(s.trim()), 64))
                            .filter(|s| !s.is_empty())
                    };
                    StatusPricing {
                        billable: p.billable,
                        pricing_model: short(&p.pricing_model),
                        category: short(&p.category),
                        pricing_type: short(&p.kind),
                    }
                }),
            }),
        );
    }

    fn template(
        &mut self,
        update: TemplateStatusUpdate,
        entry_time: Option<i64>,
        fp: &str,
        now: DateTime<Utc>,
    ) {
        let name = clean(&update.message_template_name);
        let language = clean(&update.message_template_language);
        let event = clean(&update.event).trim().to_ascii_uppercase();
        if name.is_empty() || name.len() > 512 || language.len() > 64 || event.is_empty() {
            self.skip("bad_template_update", clip(&name, 64));
            return;
        }
        if event.len() > 64
            || !event
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            self.skip("bad_template_event", clip(&event, 64));
            return;
        }
        let template_id = clip(&clean(&update.message_template_id), 64);
        let reason = update
            .reason
            .as_deref()
            .map(|r| clip(clean(r).trim(), 512))
            .filter(|r| !r.is_empty() && !r.eq_ignore_ascii_case("NONE"));
        let category = update
            .message_template_category
            .as_deref()
            .map(|c| clean(c).trim().to_ascii_lowercase())
            .filter(|c| matches!(c.as_str(), "marketing" | "utility" | "authentication"));
        let when = entry_time.map_or_else(|| fp.to_string(), |t| t.to_string());
        let key = format!("tpl:{name}:{language}:{event}:{template_id}:{when}");
        self.push(
            key,
            EventBody::Template(TemplateEvent {
                name,
                language,
                event,
                template_id,
                reason,
                category,
                at: entry_time
                    .and_then(|t| warden_core::conversations::inbound::plausible_time(t, now))
                    .unwrap_or(now),
            }),
        );
    }

    /// Echoes, handovers and standby copies of a shared number (`shared_numbers`), routed
    /// by their `metadata.phone_number_id` like messages.
    fn shared_number(&mut self, field: &str, value: &Value, fp: &str, now: DateTime<Utc>) {
        let metadata: Option<Metadata> = value
            .get("metadata")
            .and_then(|m| serde_json::from_value(m.clone()).ok());
        if self.foreign(metadata.as_ref()) {
            self.out.foreign += 1;
            return;
        }
        self.set_number(metadata.as_ref());
        for parsed in shared_numbers::parse(field, value, fp, now) {
            match parsed {
                shared_numbers::Parsed::Echo(key, e) => self.push(key, EventBody::Echo(e)),
                shared_numbers::Parsed::Handover(key, h) => self.push(key, EventBody::Handover(h)),
                shared_numbers::Parsed::Standby(key, s) => self.push(key, EventBody::Standby(s)),
                shared_numbers::Parsed::Skip(reason, detail) => self.skip(reason, detail),
            }
        }
    }

    /// A `business_capability_update`: the portfolio's messaging limit, stored and applied
    /// like a quality update's `current_limit` (event `BUSINESS_CAPABILITY_UPDATE`).
    fn capability(&mut self, value: Value, raw: Value, fp: &str) {
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
                event: warden_core::delivery::platform_events::CAPABILITY_EVENT.to_string(),
                current_limit: Some(limit.to_string()),
                display_phone_number: None,
                payload: clean_json(raw),
            }),
        );
    }

    fn quality(&mut self, update: PhoneNumberQualityUpdate, raw: Value, fp: &str) {
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

/// The sender's identifiers: the message's own (`from`, `from_user_id`,
/// `from_parent_user_id`) and those of its contact (matched by phone or BSUID, or the only
/// contact). A malformed identifier counts as absent.
fn sender_identity(msg: &InboundMessage, contacts: &[Contact]) -> Identity {
    let user_id = msg.from_user_id.as_deref().filter(|u| !u.is_empty());
    let contact = contacts
        .iter()
        .find(|c| {
            (!msg.from.is_empty() && c.wa_id == msg.from)
                || (user_id.is_some() && c.user_id.as_deref() == user_id)
        })
        .or(if contacts.len() == 1 {
            contacts.first()
        } else {
            None
        });
    let phone = [Some(msg.from.as_str()), contact.map(|c| c.wa_id.as_str())]
        .into_iter()
        .flatten()
        .filter(|p| !p.trim().is_empty())
        .find_map(|p| warden_rules::phone::canonicalize(p).ok());
    let bsuid = bsuid_of([user_id, contact.and_then(|c| c.user_id.as_deref())], false);
    let parent_bsuid = bsuid_of(
        [
            msg.from_parent_user_id.as_deref(),
            contact.and_then(|c| c.parent_user_id.as_deref()),
        ],
        true,
    );
    let username = contact
        .and_then(|c| c.profile.as_ref())
        .and_then(|p| p.username.as_deref())
        .map(|u| clip(clean(u).trim(), 64))
        .filter(|u| !u.is_empty());
    Identity {
        phone,
        bsuid,
        parent_bsuid,
        username,
    }
}

/// The first valid BSUID (or parent BSUID, with `parent`) of `ids`.
fn bsuid_of(ids: [Option<&str>; 2], parent: bool) -> Option<warden_rules::bsuid::Bsuid> {
    ids.into_iter()
        .flatten()
        .filter_map(|u| warden_rules::bsuid::parse(&clean(u)).ok())
        .find(|b| b.is_parent() == parent)
}

/// A stop / resume request in a text, or in the text of a quick-reply / interactive button
/// (the platform's "Stop promotions" button arrives that way).
fn keyword_of(msg: &InboundMessage) -> Option<OptChange> {
    use warden_rules::keywords::classify_inbound;
    match msg.kind.as_str() {
        "text" => msg.text_body().and_then(classify_inbound),
        "button" => msg
            .other
            .get("button")
            .and_then(|b| b.get("text"))
            .and_then(Value::as_str)
            .and_then(classify_inbound),
        "interactive" => msg
            .other
            .get("interactive")
            .and_then(|i| i.get("button_reply"))
            .and_then(|b| b.get("title"))
            .and_then(Value::as_str)
            .and_then(classify_inbound),
        _ => None,
    }
}

fn describe_error(err: &ErrorDetail) -> String {
    format!(
        "{} {}",
        err.code,
        clip(&clean(err.title.as_deref().unwrap_or("")), 128)
    )
}

/// The time of an event: its own timestamp, never in the future, `now` when missing or absurd.
pub fn event_time(ts: i64, now: DateTime<Utc>) -> DateTime<Utc> {
    if ts < MIN_SANE_TS {
        return now;
    }
    match DateTime::<Utc>::from_timestamp(ts, 0) {
        Some(at) if at < now => at,
        _ => now,
    }
}

/// The string without NUL characters (Postgres refuses them in TEXT and JSONB).
pub fn clean(s: &str) -> String {
    if s.contains('\0') {
        s.replace('\0', "")
    } else {
        s.to_string()
    }
}

/// At most `max` bytes, cut on a character boundary.
pub fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// The JSON with NUL characters removed from every string and key.
pub fn clean_json(v: Value) -> Value {
    match v {
        Value::String(s) => Value::String(clean(&s)),
        Value::Array(items) => Value::Array(items.into_iter().map(clean_json).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (clean(&k), clean_json(v)))
                .collect(),
        ),
        other => other,
    }
}

fn bounded_key(key: &str) -> String {
    let key = clean(key);
    if key.len() <= MAX_KEY_LEN {
        return key;
    }
    let prefix = key.split(':').next().unwrap_or("k");
    format!("{}:h:{}", clip(prefix, 16), sha256_hex(key.as_bytes()))
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(ring::digest::digest(&ring::digest::SHA256, bytes))
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => clip(&clean(s), 64),
        Value::Number(n) => n.to_string(),
        _ => String::new(),
    }
}

fn value_int(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
