//! The webhooks of a shared number (docs/compliance.md, "Shared numbers"):
//! - `smb_message_echoes`: `value.message_echoes[]`, what a person sent, edited or revoked
//!   from the WhatsApp Business app (`from` the business number, `to` the customer or
//!   `to_user_id` a BSUID, `id`, `timestamp`, `type` and its content);
//! - `messaging_handovers`: the thread's owner changed under conversation routing; `type`
//!   (or the object present) is `control_passed` (to us) or `control_taken` (from us), the
//!   object names the previous and the new owner's role, the customer is `wa_id` / `user_id`
//!   (on the value, in `contacts[]`, or in the object);
//! - `standby`: a copy of activity in a thread another app owns, shaped like a `messages`
//!   value (`messages[]`, `statuses[]`, `message_echoes[]`).
//!
//! Read leniently, like every change: an item without the ids it needs is skipped and
//! counted, never a reason to refuse the batch. Content is kept for echoes only (they are
//! history); a standby copy's content is not Warden's to store.

use chrono::{DateTime, Utc};
use serde_json::Value;
use warden_rules::phone::PhoneNumber;

use warden_platform::webhook::Metadata;

use super::{Builder, EventBody, MAX_ID_LEN, clean, clean_json, clip, value_int, value_text};

pub const FIELD_ECHOES: &str = "smb_message_echoes";
pub const FIELD_HANDOVERS: &str = "messaging_handovers";
pub const FIELD_STANDBY: &str = "standby";

/// A person's message from the WhatsApp Business app.
#[derive(Debug, Clone)]
pub struct EchoEvent {
    pub wamid: String,
    /// The customer it went to (the phone, else the BSUID).
    pub phone: PhoneNumber,
    /// `text`, `image`, ..., `edit`, `revoke`.
    pub message_type: String,
    /// The echo as received (NUL-free), stored as the message row's content.
    pub content: Value,
    /// Its platform time (plausible), else arrival.
    pub at: DateTime<Utc>,
}

/// Who owns a thread now (the core's rule reads it as it is).
pub use warden_core::platform_events::shared_numbers::Handover;

/// A `messaging_handovers` notification.
#[derive(Debug, Clone)]
pub struct HandoverEvent {
    pub phone: PhoneNumber,
    pub handover: Handover,
    /// The roles the platform names (e.g. `ai_agent`, `app`), for the audit log.
    pub previous_role: Option<String>,
    pub new_role: Option<String>,
    pub at: DateTime<Utc>,
}

/// A standby copy: another app owns the thread with this customer.
#[derive(Debug, Clone)]
pub struct StandbyEvent {
    pub phone: PhoneNumber,
    pub at: DateTime<Utc>,
}

/// What one change of these fields holds.
pub enum Parsed {
    Echo(String, EchoEvent),
    Handover(String, HandoverEvent),
    Standby(String, StandbyEvent),
    Skip(&'static str, String),
}

/// The customer a phone or a BSUID names.
fn customer(phone: Option<&Value>, bsuid: Option<&Value>) -> Option<PhoneNumber> {
    let phone = phone.map(value_text).filter(|p| !p.trim().is_empty());
    phone
        .and_then(|p| warden_rules::phone::canonicalize(&p).ok())
        .or_else(|| {
            bsuid
                .map(value_text)
                .and_then(|u| warden_rules::bsuid::parse(&u).ok())
                .map(|b| b.key())
        })
}

fn time(v: &Value, now: DateTime<Utc>) -> DateTime<Utc> {
    v.get("timestamp")
        .and_then(value_int)
        // Some payloads give milliseconds.
        .map(|t| if t > 100_000_000_000 { t / 1000 } else { t })
        .and_then(|t| warden_core::conversations::inbound::plausible_time(t, now))
        .unwrap_or(now)
}

fn short(v: Option<&Value>) -> Option<String> {
    v.map(value_text)
        .map(|s| clip(&clean(s.trim()), 64))
        .filter(|s| !s.is_empty())
}

/// Every event of one change of `field` (one of the three above); `fingerprint` names a
/// change whose items carry no id of their own.
pub fn parse(field: &str, value: &Value, fingerprint: &str, now: DateTime<Utc>) -> Vec<Parsed> {
    match field {
        FIELD_ECHOES => echoes(value, now),
        FIELD_HANDOVERS => vec![handover(value, fingerprint, now)],
        _ => standby(value, fingerprint, now),
    }
}

fn echoes(value: &Value, now: DateTime<Utc>) -> Vec<Parsed> {
    let Some(items) = value.get("message_echoes").and_then(Value::as_array) else {
        return vec![Parsed::Skip("echo_without_items", String::new())];
    };
    items
        .iter()
        .map(|echo| {
            let wamid = echo
                .get("id")
                .map(value_text)
                .map(|w| clean(&w))
                .unwrap_or_default();
            if wamid.is_empty() || wamid.len() > MAX_ID_LEN {
                return Parsed::Skip("bad_wamid", clip(&wamid, 64));
            }
            let Some(phone) = customer(echo.get("to"), echo.get("to_user_id")) else {
                return Parsed::Skip("bad_phone", short(echo.get("to")).unwrap_or_default());
            };
            let message_type = short(echo.get("type")).unwrap_or_else(|| "unknown".into());
            Parsed::Echo(
                format!("echo:{wamid}"),
                EchoEvent {
                    wamid,
                    phone,
                    message_type,
                    content: clean_json(echo.clone()),
                    at: time(echo, now),
                },
            )
        })
        .collect()
}

fn handover(value: &Value, fingerprint: &str, now: DateTime<Utc>) -> Parsed {
    let named = value.get("type").and_then(Value::as_str).map(str::trim);
    let (handover, object) = match named {
        Some("control_passed") => (Handover::Passed, value.get("control_passed")),
        Some("control_taken") => (Handover::Taken, value.get("control_taken")),
        _ => match (value.get("control_passed"), value.get("control_taken")) {
            (Some(o), None) => (Handover::Passed, Some(o)),
            (None, Some(o)) => (Handover::Taken, Some(o)),
            _ => {
                return Parsed::Skip("handover_type", clip(named.unwrap_or_default(), 64));
            }
        },
    };
    let object = object.unwrap_or(&Value::Null);
    let contact = value
        .get("contacts")
        .and_then(Value::as_array)
        .and_then(|c| c.first());
    let phone = [Some(value), Some(object), contact]
        .into_iter()
        .flatten()
        .find_map(|v| {
            customer(
                v.get("wa_id")
                    .or_else(|| v.get("to"))
                    .or_else(|| v.get("recipient")),
                v.get("user_id"),
            )
        });
    let Some(phone) = phone else {
        return Parsed::Skip("bad_phone", "handover names no customer".into());
    };
    let role = |keys: [&str; 2]| keys.iter().find_map(|k| short(object.get(*k)));
    let at = if object.get("timestamp").is_some() {
        time(object, now)
    } else {
        time(value, now)
    };
    Parsed::Handover(
        format!(
            "handover:{}:{}:{fingerprint}",
            phone.digits(),
            handover.as_str()
        ),
        HandoverEvent {
            phone,
            handover,
            previous_role: role(["previous_role", "previous_owner_role"]),
            new_role: role(["new_role", "new_owner_role"]),
            at,
        },
    )
}

fn standby(value: &Value, fingerprint: &str, now: DateTime<Utc>) -> Vec<Parsed> {
    let list = |k: &str| {
        value
            .get(k)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
    };
    let mut out = Vec::new();
    let items = list("messages")
        .iter()
        .map(|m| (m, customer(m.get("from"), m.get("from_user_id"))))
        .chain(list("statuses").iter().map(|s| {
            (
                s,
                customer(s.get("recipient_id"), s.get("recipient_user_id")),
            )
        }))
        .chain(
            list("message_echoes")
                .iter()
                .map(|e| (e, customer(e.get("to"), e.get("to_user_id")))),
        );
    for (n, (item, phone)) in items.enumerate() {
        let Some(phone) = phone else {
            out.push(Parsed::Skip(
                "bad_phone",
                "standby copy names no customer".into(),
            ));
            continue;
        };
        let id = item
            .get("id")
            .map(value_text)
            .map(|w| clip(&clean(&w), MAX_ID_LEN))
            .filter(|w| !w.is_empty())
            .unwrap_or_else(|| format!("{fingerprint}:{n}"));
        let status = short(item.get("status")).unwrap_or_default();
        out.push(Parsed::Standby(
            format!("standby:{id}:{status}"),
            StandbyEvent {
                phone,
                at: time(item, now),
            },
        ));
    }
    if out.is_empty() {
        out.push(Parsed::Skip("standby_without_items", String::new()));
    }
    out
}

impl Builder<'_> {
    /// Echoes, handovers and standby copies of a shared number (`shared_numbers`), routed
    /// by their `metadata.phone_number_id` like messages.
    pub(super) fn shared_number(
        &mut self,
        field: &str,
        value: &Value,
        fp: &str,
        now: DateTime<Utc>,
    ) {
        let metadata: Option<Metadata> = value
            .get("metadata")
            .and_then(|m| serde_json::from_value(m.clone()).ok());
        if self.foreign(metadata.as_ref()) {
            self.out.foreign += 1;
            return;
        }
        self.set_number(metadata.as_ref());
        for parsed in parse(field, value, fp, now) {
            match parsed {
                Parsed::Echo(key, e) => self.push(key, EventBody::Echo(e)),
                Parsed::Handover(key, h) => self.push(key, EventBody::Handover(h)),
                Parsed::Standby(key, s) => self.push(key, EventBody::Standby(s)),
                Parsed::Skip(reason, detail) => self.skip(reason, detail),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000, 0).unwrap()
    }

    #[test]
    fn echoes_name_the_customer_they_went_to() {
        let v = json!({"messaging_product": "whatsapp",
            "metadata": {"display_phone_number": "15550000000", "phone_number_id": "1"},
            "message_echoes": [
                {"from": "15550000000", "to": "6281234567890", "id": "wamid.E1",
                 "timestamp": "1799999990", "type": "text", "text": {"body": "hi"}},
                {"from": "15550000000", "id": "wamid.E2", "type": "text"}]});
        let parsed = parse(FIELD_ECHOES, &v, "fp", now());
        let Parsed::Echo(key, e) = &parsed[0] else {
            panic!("not an echo")
        };
        assert_eq!(key, "echo:wamid.E1");
        assert_eq!(e.phone.digits(), "6281234567890");
        assert_eq!(e.at.timestamp(), 1_799_999_990);
        assert!(matches!(parsed[1], Parsed::Skip("bad_phone", _)));
    }

    #[test]
    fn handovers_by_type_or_by_object() {
        for (v, want) in [
            (
                json!({"type": "control_passed", "wa_id": "6281234567890",
                       "control_passed": {"previous_role": "ai_agent", "new_role": "app"}}),
                Handover::Passed,
            ),
            (
                json!({"control_taken": {"wa_id": "6281234567890", "new_role": "ai_agent"}}),
                Handover::Taken,
            ),
        ] {
            let Parsed::Handover(_, h) = &parse(FIELD_HANDOVERS, &v, "fp", now())[0] else {
                panic!("not a handover: {v}")
            };
            assert_eq!(h.handover, want);
            assert_eq!(h.phone.digits(), "6281234567890");
        }
        assert!(matches!(
            parse(FIELD_HANDOVERS, &json!({"type": "x"}), "fp", now())[0],
            Parsed::Skip("handover_type", _)
        ));
    }

    #[test]
    fn standby_copies_name_their_customers() {
        let v = json!({"messages": [{"from": "6281234567890", "id": "wamid.S1", "type": "text"}],
                       "statuses": [{"recipient_id": "6281234567891", "id": "wamid.S2", "status": "sent"}]});
        let parsed = parse(FIELD_STANDBY, &v, "fp", now());
        let phones: Vec<String> = parsed
            .iter()
            .filter_map(|p| match p {
                Parsed::Standby(_, s) => Some(s.phone.digits().to_string()),
                _ => None,
            })
            .collect();
        assert_eq!(phones, ["6281234567890", "6281234567891"]);
    }
}

#[cfg(test)]
mod extract_tests {
    use serde_json::json;

    #[test]
    fn a_standby_body_gives_one_standby_event() {
        let body = json!({"object": "whatsapp_business_account", "entry": [{"id": "1", "changes": [
            {"field": "standby", "value": {"messaging_product": "whatsapp",
              "metadata": {"display_phone_number": "15550000000", "phone_number_id": "1"},
              "contacts": [{"profile": {"name": "Sim Customer"}, "wa_id": "6281234567890"}],
              "messages": [{"from": "6281234567890", "id": "wamid.S", "timestamp": "1799999990",
                            "type": "text", "text": {"body": "hello?"}}]}}]}]});
        let out = super::super::extract(body.to_string().as_bytes(), chrono::Utc::now()).unwrap();
        assert_eq!(out.events.len(), 1, "{:?} {:?}", out.events, out.skipped);
    }
}
