//! Webhook envelopes as the platform POSTs them.
//!
//! `{"object":"whatsapp_business_account","entry":[{"id":"<waba>","changes":[{"field","value"}]}]}`.
//! Parsing is lenient on purpose: unknown fields are ignored, numbers and strings are
//! both accepted for ids and timestamps, and a change whose `field` this crate does not
//! model is kept as raw JSON ([`Change::Other`]) instead of failing the whole batch.

use crate::error::ErrorData;
use crate::lenient;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// `object` of every platform webhook.
pub const OBJECT_WABA: &str = "whatsapp_business_account";
/// `field` of inbound messages and delivery statuses.
pub const FIELD_MESSAGES: &str = "messages";
/// `field` of template review decisions.
pub const FIELD_TEMPLATE_STATUS: &str = "message_template_status_update";
/// `field` of marketing stop/resume preferences.
pub const FIELD_USER_PREFERENCES: &str = "user_preferences";
/// `field` of phone number quality / limit changes.
pub const FIELD_QUALITY: &str = "phone_number_quality_update";
/// `field` of business portfolio capability changes (the messaging limit among them). Not
/// a [`Change`] variant of its own: it arrives as [`Change::Other`] and is read with
/// [`BusinessCapabilityUpdate`].
pub const FIELD_CAPABILITY: &str = "business_capability_update";

/// One webhook POST body. A POST may batch many entries and changes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WebhookEnvelope {
    pub object: String,
    #[serde(default)]
    pub entry: Vec<Entry>,
}

impl WebhookEnvelope {
    /// Envelope with one entry for `waba_id` holding `changes`.
    pub fn new(waba_id: impl Into<String>, time: i64, changes: Vec<Change>) -> Self {
        Self {
            object: OBJECT_WABA.to_owned(),
            entry: vec![Entry {
                id: waba_id.into(),
                time: Some(time),
                changes,
            }],
        }
    }

    /// Parses raw bytes (after the signature was verified).
    pub fn from_slice(body: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(body)
    }

    /// True when `object` is the business-account object the platform sends.
    pub fn is_platform_event(&self) -> bool {
        self.object == OBJECT_WABA
    }

    /// Every change of every entry, in order.
    pub fn changes(&self) -> impl Iterator<Item = &Change> {
        self.entry.iter().flat_map(|e| e.changes.iter())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The business account id.
    #[serde(default, deserialize_with = "lenient::string")]
    pub id: String,
    #[serde(
        default,
        deserialize_with = "lenient::opt_int",
        skip_serializing_if = "Option::is_none"
    )]
    pub time: Option<i64>,
    #[serde(default)]
    pub changes: Vec<Change>,
}

/// One `{"field": ..., "value": ...}` item, typed by its `field`.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    Messages(MessagesValue),
    TemplateStatus(TemplateStatusUpdate),
    UserPreferences(UserPreferencesValue),
    Quality(PhoneNumberQualityUpdate),
    /// A field this crate does not model; kept so a batch never fails on it.
    Other {
        field: String,
        value: Value,
    },
}

impl Change {
    pub fn field(&self) -> &str {
        match self {
            Change::Messages(_) => FIELD_MESSAGES,
            Change::TemplateStatus(_) => FIELD_TEMPLATE_STATUS,
            Change::UserPreferences(_) => FIELD_USER_PREFERENCES,
            Change::Quality(_) => FIELD_QUALITY,
            Change::Other { field, .. } => field,
        }
    }
}

impl Serialize for Change {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Out<'a, T: Serialize> {
            field: &'a str,
            value: &'a T,
        }
        let field = self.field();
        match self {
            Change::Messages(v) => Out { field, value: v }.serialize(s),
            Change::TemplateStatus(v) => Out { field, value: v }.serialize(s),
            Change::UserPreferences(v) => Out { field, value: v }.serialize(s),
            Change::Quality(v) => Out { field, value: v }.serialize(s),
            Change::Other { value, .. } => Out { field, value }.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Change {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // `field` may come after `value` (the platform's own examples do that), so the
        // value is buffered and typed once the field is known.
        #[derive(Deserialize)]
        struct Raw {
            field: String,
            #[serde(default)]
            value: Value,
        }
        let raw = Raw::deserialize(d)?;
        fn typed<T: serde::de::DeserializeOwned, E: serde::de::Error>(
            field: &str,
            v: Value,
        ) -> Result<T, E> {
            serde_json::from_value(v).map_err(|e| E::custom(format!("{field} value: {e}")))
        }
        Ok(match raw.field.as_str() {
            FIELD_MESSAGES => Change::Messages(typed(FIELD_MESSAGES, raw.value)?),
            FIELD_TEMPLATE_STATUS => {
                Change::TemplateStatus(typed(FIELD_TEMPLATE_STATUS, raw.value)?)
            }
            FIELD_USER_PREFERENCES => {
                Change::UserPreferences(typed(FIELD_USER_PREFERENCES, raw.value)?)
            }
            FIELD_QUALITY => Change::Quality(typed(FIELD_QUALITY, raw.value)?),
            "" => return Err(D::Error::custom("empty change field")),
            _ => Change::Other {
                field: raw.field,
                value: raw.value,
            },
        })
    }
}

/// `value` of a `messages` change: inbound messages, delivery statuses, or
/// system-level errors.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MessagesValue {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messaging_product: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contacts: Vec<Contact>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<InboundMessage>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub statuses: Vec<Status>,
    /// System-level errors that belong to no single message (e.g. 130429).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<ErrorDetail>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Metadata {
    #[serde(default, deserialize_with = "lenient::string")]
    pub display_phone_number: String,
    #[serde(default, deserialize_with = "lenient::string")]
    pub phone_number_id: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Contact {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<Profile>,
    /// The phone number; absent for a user with a username who has not talked with the
    /// business number lately.
    #[serde(
        default,
        deserialize_with = "lenient::string",
        skip_serializing_if = "String::is_empty"
    )]
    pub wa_id: String,
    /// The business-scoped user ID (`US.1349…`), on every messages webhook since 2026.
    #[serde(
        default,
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub user_id: Option<String>,
    /// The parent BSUID (`US.ENT.…`) when the business's portfolios are linked.
    #[serde(
        default,
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub parent_user_id: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The user's username (display only: it can change).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
}

/// A message a customer sent to the business.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InboundMessage {
    /// The sender's phone number; absent (empty) for a phone-less username user.
    #[serde(
        default,
        deserialize_with = "lenient::string",
        skip_serializing_if = "String::is_empty"
    )]
    pub from: String,
    /// The sender's BSUID.
    #[serde(
        default,
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub from_user_id: Option<String>,
    /// The sender's parent BSUID.
    #[serde(
        default,
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub from_parent_user_id: Option<String>,
    #[serde(default, deserialize_with = "lenient::string")]
    pub id: String,
    /// Unix seconds (a string on the wire).
    #[serde(
        default,
        deserialize_with = "lenient::int",
        serialize_with = "lenient::int_as_string"
    )]
    pub timestamp: i64,
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<TextBody>,
    /// Everything else (`button`, `interactive`, `image`, `context`, ...), kept raw.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl InboundMessage {
    /// The text body of a `text` message.
    pub fn text_body(&self) -> Option<&str> {
        self.text.as_ref().map(|t| t.body.as_str())
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TextBody {
    #[serde(default)]
    pub body: String,
}

/// A delivery status of a message the business sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Status {
    /// The wamid.
    #[serde(default, deserialize_with = "lenient::string")]
    pub id: String,
    /// `sent`, `delivered`, `read`, `failed`, ... (see [`Status::kind`]).
    pub status: String,
    /// Unix seconds (a string on the wire).
    #[serde(
        default,
        deserialize_with = "lenient::int",
        serialize_with = "lenient::int_as_string"
    )]
    pub timestamp: i64,
    /// The recipient's phone number; absent for a send by BSUID to a phone-less user.
    #[serde(
        default,
        deserialize_with = "lenient::string",
        skip_serializing_if = "String::is_empty"
    )]
    pub recipient_id: String,
    /// The recipient's BSUID.
    #[serde(
        default,
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub recipient_user_id: Option<String>,
    /// The recipient's parent BSUID.
    #[serde(
        default,
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub recipient_parent_user_id: Option<String>,
    #[serde(
        default,
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub biz_opaque_callback_data: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pricing: Option<Pricing>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<ErrorDetail>,
}

impl Status {
    pub fn kind(&self) -> StatusKind {
        StatusKind::parse(&self.status)
    }
}

/// The status values with a meaning for delivery tracking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StatusKind {
    Sent,
    Delivered,
    Read,
    Failed,
    Deleted,
    Warning,
    Played,
    Unknown,
}

impl StatusKind {
    /// Case-insensitive; anything unrecognised is `Unknown`.
    pub fn parse(s: &str) -> Self {
        match s.to_ascii_lowercase().as_str() {
            "sent" => Self::Sent,
            "delivered" => Self::Delivered,
            "read" => Self::Read,
            "failed" => Self::Failed,
            "deleted" => Self::Deleted,
            "warning" => Self::Warning,
            "played" => Self::Played,
            _ => Self::Unknown,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sent => "sent",
            Self::Delivered => "delivered",
            Self::Read => "read",
            Self::Failed => "failed",
            Self::Deleted => "deleted",
            Self::Warning => "warning",
            Self::Played => "played",
            Self::Unknown => "unknown",
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Pricing {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub billable: Option<bool>,
    /// `PMP` (per-message pricing) since 2025-07; `CBP` before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pricing_model: Option<String>,
    /// `marketing`, `utility`, `authentication`, `service`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

/// An error inside a status (`statuses[].errors[]`) or a system-level error.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ErrorDetail {
    #[serde(default, deserialize_with = "lenient::int")]
    pub code: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_data: Option<ErrorData>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub href: Option<String>,
}

impl ErrorDetail {
    pub fn details(&self) -> Option<&str> {
        self.error_data.as_ref().and_then(|d| d.details.as_deref())
    }
}

/// `value` of a `message_template_status_update` change.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TemplateStatusUpdate {
    /// APPROVED, REJECTED, PENDING, DISABLED, FLAGGED, PAUSED, ...
    #[serde(default)]
    pub event: String,
    /// A number in the platform's webhooks, a string elsewhere; kept as a string.
    #[serde(
        default,
        deserialize_with = "lenient::string",
        serialize_with = "lenient::digits_as_number"
    )]
    pub message_template_id: String,
    #[serde(default)]
    pub message_template_name: String,
    #[serde(default)]
    pub message_template_language: String,
    /// Rejection reason, `NONE`, or null.
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_template_category: Option<String>,
}

/// `value` of a `user_preferences` change.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UserPreferencesValue {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messaging_product: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contacts: Vec<Contact>,
    #[serde(default)]
    pub user_preferences: Vec<UserPreference>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UserPreference {
    #[serde(default, deserialize_with = "lenient::string")]
    pub wa_id: String,
    /// The user's BSUID (the only id of a phone-less user).
    #[serde(
        default,
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub user_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// `marketing_messages`.
    #[serde(default)]
    pub category: String,
    /// `stop` or `resume`.
    #[serde(default)]
    pub value: String,
    /// Unix seconds (a number on the wire).
    #[serde(default, deserialize_with = "lenient::int")]
    pub timestamp: i64,
}

/// `value` of a `phone_number_quality_update` change.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhoneNumberQualityUpdate {
    #[serde(default, deserialize_with = "lenient::string")]
    pub display_phone_number: String,
    /// FLAGGED, UNFLAGGED, UPGRADE, DOWNGRADE, ...
    #[serde(default)]
    pub event: String,
    #[serde(
        default,
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub current_limit: Option<String>,
    #[serde(
        default,
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub old_limit: Option<String>,
}

/// `value` of a `business_capability_update` change.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BusinessCapabilityUpdate {
    /// The portfolio's messaging limit: 250, 2000, 10000, 100000, or -1 (unlimited).
    #[serde(
        default,
        deserialize_with = "lenient::opt_int",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_daily_conversations_per_business: Option<i64>,
    /// The same limit under its older name (removed by the platform in 2026-02).
    #[serde(
        default,
        deserialize_with = "lenient::opt_int",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_daily_conversation_per_phone: Option<i64>,
    #[serde(
        default,
        deserialize_with = "lenient::opt_int",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_phone_numbers_per_business: Option<i64>,
}

impl BusinessCapabilityUpdate {
    /// The messaging limit it reports (the new field first), as a number; -1 is unlimited.
    pub fn messaging_limit(&self) -> Option<i64> {
        self.max_daily_conversations_per_business
            .or(self.max_daily_conversation_per_phone)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_inbound_text_and_keeps_other_kinds_raw() {
        let body = json!({
            "object": "whatsapp_business_account",
            "entry": [{"id": 200000000000001u64, "time": "1700000000", "changes": [{
                "value": {
                    "messaging_product": "whatsapp",
                    "metadata": {"display_phone_number": "15550100000", "phone_number_id": "100"},
                    "contacts": [{"profile": {"name": "Ana"}, "wa_id": "628123456789"}],
                    "messages": [
                        {"from": "628123456789", "id": "wamid.A", "timestamp": "1700000001",
                         "type": "text", "text": {"body": "STOP"}},
                        {"from": 628123456789u64, "id": "wamid.B", "timestamp": 1700000002,
                         "type": "button", "button": {"text": "Yes", "payload": "y"},
                         "context": {"id": "wamid.prev"}}
                    ]
                },
                "field": "messages"
            }]}]
        });
        let env: WebhookEnvelope = serde_json::from_value(body).unwrap();
        assert!(env.is_platform_event());
        assert_eq!(env.entry[0].id, "200000000000001");
        assert_eq!(env.entry[0].time, Some(1_700_000_000));
        let Change::Messages(v) = &env.entry[0].changes[0] else {
            panic!("not messages")
        };
        assert_eq!(v.messages[0].text_body(), Some("STOP"));
        assert_eq!(v.messages[0].timestamp, 1_700_000_001);
        assert_eq!(v.messages[1].from, "628123456789");
        assert_eq!(v.messages[1].kind, "button");
        assert_eq!(v.messages[1].other["button"]["payload"], "y");
        assert!(v.messages[1].other.contains_key("context"));
        // Round trip keeps the wire shape: string timestamps, raw extras.
        let again = serde_json::to_value(&env).unwrap();
        let msg = &again["entry"][0]["changes"][0]["value"]["messages"][1];
        assert_eq!(msg["timestamp"], "1700000002");
        assert_eq!(msg["button"]["text"], "Yes");
    }

    #[test]
    fn parses_statuses_with_errors_and_pricing() {
        let body = json!({"object": "whatsapp_business_account", "entry": [{"id": "1", "changes": [{
            "field": "messages",
            "value": {"messaging_product": "whatsapp", "statuses": [
                {"id": "wamid.X", "status": "failed", "timestamp": "1700000000",
                 "recipient_id": "628111", "biz_opaque_callback_data": "msg-1",
                 "errors": [{"code": 131050, "title": "Stopped", "message": "Stopped",
                             "error_data": {"details": "user stopped marketing"}}]},
                {"id": "wamid.Y", "status": "read", "timestamp": 1700000001, "recipient_id": "628111",
                 "pricing": {"billable": true, "pricing_model": "PMP", "category": "marketing", "type": "regular"},
                 "conversation": {"id": "c1"}, "unknown_field": 1}
            ]}
        }]}]});
        let env = WebhookEnvelope::from_slice(body.to_string().as_bytes()).unwrap();
        let Change::Messages(v) = env.changes().next().unwrap() else {
            panic!()
        };
        let failed = &v.statuses[0];
        assert_eq!(failed.kind(), StatusKind::Failed);
        assert_eq!(failed.biz_opaque_callback_data.as_deref(), Some("msg-1"));
        assert_eq!(failed.errors[0].code, 131050);
        assert_eq!(failed.errors[0].details(), Some("user stopped marketing"));
        let read = &v.statuses[1];
        assert_eq!(read.kind(), StatusKind::Read);
        assert_eq!(read.timestamp, 1_700_000_001);
        let pricing = read.pricing.as_ref().unwrap();
        assert_eq!(pricing.pricing_model.as_deref(), Some("PMP"));
        assert_eq!(pricing.billable, Some(true));
    }

    #[test]
    fn parses_template_updates_with_number_or_string_ids_and_null_reason() {
        for (id, reason) in [
            (json!(1689556908129832u64), json!("NONE")),
            (json!("42"), json!(null)),
        ] {
            let body = json!({"object": "whatsapp_business_account", "entry": [{"id": "1", "changes": [{
                "field": "message_template_status_update",
                "value": {"event": "APPROVED", "message_template_id": id,
                          "message_template_name": "order_update", "message_template_language": "en_US",
                          "reason": reason, "other_info": {"title": "x"}}
            }]}]});
            let env: WebhookEnvelope = serde_json::from_value(body).unwrap();
            let Change::TemplateStatus(t) = &env.entry[0].changes[0] else {
                panic!()
            };
            assert_eq!(t.event, "APPROVED");
            assert!(!t.message_template_id.is_empty());
            assert_eq!(t.message_template_category, None);
            // Serialized ids go back out as numbers, like the platform's.
            let v = serde_json::to_value(Change::TemplateStatus(t.clone())).unwrap();
            assert!(v["value"]["message_template_id"].is_u64());
            assert!(v["value"].as_object().unwrap().contains_key("reason"));
        }
    }

    #[test]
    fn parses_user_preferences_and_quality_and_unknown_fields() {
        let body = json!({"object": "whatsapp_business_account", "entry": [{"id": "1", "changes": [
            {"field": "user_preferences", "value": {"user_preferences": [
                {"wa_id": "628111", "detail": "stop", "category": "marketing_messages", "value": "stop",
                 "timestamp": 1700000000},
                {"wa_id": "628112", "category": "marketing_messages", "value": "resume",
                 "timestamp": "1700000001"}]}},
            {"field": "phone_number_quality_update", "value": {
                "display_phone_number": 15550100000u64, "event": "FLAGGED", "current_limit": "TIER_1K"}},
            {"field": "account_alerts", "value": {"anything": [1, 2]}}
        ]}]});
        let env: WebhookEnvelope = serde_json::from_value(body).unwrap();
        let changes: Vec<_> = env.changes().collect();
        let Change::UserPreferences(p) = changes[0] else {
            panic!()
        };
        assert_eq!(p.user_preferences[0].value, "stop");
        assert_eq!(p.user_preferences[1].timestamp, 1_700_000_001);
        let Change::Quality(q) = changes[1] else {
            panic!()
        };
        assert_eq!(q.display_phone_number, "15550100000");
        assert_eq!(q.current_limit.as_deref(), Some("TIER_1K"));
        let Change::Other { field, value } = changes[2] else {
            panic!()
        };
        assert_eq!(field, "account_alerts");
        assert_eq!(value["anything"][1], 2);
        // Unknown kinds round-trip untouched.
        let v = serde_json::to_value(changes[2]).unwrap();
        assert_eq!(
            v,
            json!({"field": "account_alerts", "value": {"anything": [1, 2]}})
        );
    }

    #[test]
    fn rejects_known_field_with_bad_value() {
        let body = json!({"object": "whatsapp_business_account", "entry": [{"id": "1", "changes": [
            {"field": "messages", "value": {"statuses": [{"id": "w", "status": 5}]}}]}]});
        assert!(serde_json::from_value::<WebhookEnvelope>(body).is_err());
    }
}
