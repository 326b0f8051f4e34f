//! What the listen tools need of the sim (docs/tools.md, The conversation loop):
//! `/sim/inbound` for every message type, to any served number (`phone_number_id`,
//! default the first), and read receipts on the messages endpoint.

use actix_web::{HttpResponse, web};
use serde_json::{Map, Value, json};

use crate::state::{InboundContent, Sim};

/// Fields of `/sim/inbound` that are the sim's, not the platform message object's.
const CONTROL_FIELDS: &[&str] = &[
    "from",
    "user_id",
    "parent_user_id",
    "username",
    "type",
    "text",
    "name",
    "timestamp",
    "wamid",
    "id",
    "phone_number_id",
];

/// The longest text a `{"from","text"}` request may carry (the platform's text limit).
const MAX_TEXT: usize = 4096;

/// Why an inbound control request was refused.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum InboundError {
    #[error("invalid JSON body: {0}")]
    Json(String),
    #[error("the body must be a JSON object")]
    NotObject,
    #[error("from must hold a phone number, or user_id a BSUID (e.g. US.13491208655302741918)")]
    From,
    #[error("{0}")]
    Shape(String),
}

/// A parsed `/sim/inbound` request.
#[derive(Debug)]
pub struct InboundRequest {
    /// The business number written to; `None`: the first.
    pub phone_number_id: Option<String>,
    pub from: crate::users::SimUser,
    pub name: Option<String>,
    pub timestamp: Option<i64>,
    pub wamid: Option<String>,
    pub content: InboundContent,
}

fn digits(s: &str) -> String {
    s.chars().filter(char::is_ascii_digit).collect()
}

fn text_of(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// `{"from", "text"}` (a text message), or `{"from", "type", ...the platform's message
/// object}`: `{"from": "...", "type": "image", "image": {"id": "...", ...}}`. For `text`,
/// `"text"` may be the body string or the platform's `{"body": ...}`. The other fields
/// are sent as given, so a test can send any payload the platform does (`context`,
/// `referral`, `errors`, ...).
pub fn parse_inbound(body: &[u8]) -> Result<InboundRequest, InboundError> {
    let v: Value = serde_json::from_slice(body).map_err(|e| InboundError::Json(e.to_string()))?;
    let Value::Object(obj) = v else {
        return Err(InboundError::NotObject);
    };
    // `from` (a phone), or `user_id` (a BSUID) with `username` for a user whose phone is
    // hidden; both for a user who shares them.
    let phone = digits(&text_of(obj.get("from")).unwrap_or_default());
    let bsuid = |key: &str| -> Result<Option<String>, InboundError> {
        match text_of(obj.get(key)).map(|s| s.trim().to_owned()) {
            None => Ok(None),
            Some(s) if s.is_empty() => Ok(None),
            Some(s) if crate::users::is_bsuid(&s) => Ok(Some(s)),
            Some(_) => Err(InboundError::From),
        }
    };
    let from = crate::users::SimUser {
        phone: (!phone.is_empty()).then_some(phone),
        user_id: bsuid("user_id")?,
        parent_user_id: bsuid("parent_user_id")?,
        username: text_of(obj.get("username")).filter(|u| !u.trim().is_empty()),
    };
    if from.phone.is_none() && from.user_id.is_none() {
        return Err(InboundError::From);
    }
    let kind = match obj.get("type") {
        None | Some(Value::Null) => "text".to_owned(),
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_owned(),
        Some(_) => {
            return Err(InboundError::Shape(
                "type must be a non-empty string".into(),
            ));
        }
    };
    let text = if kind == "text" {
        let body = match obj.get("text") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Object(t)) => text_of(t.get("body")).unwrap_or_default(),
            _ => String::new(),
        };
        if body.is_empty() {
            return Err(InboundError::Shape(
                "a text message needs text (a string or {\"body\": ...})".into(),
            ));
        }
        if body.chars().count() > MAX_TEXT {
            return Err(InboundError::Shape(format!(
                "text is longer than {MAX_TEXT} characters"
            )));
        }
        Some(body)
    } else {
        None
    };
    let other: Map<String, Value> = obj
        .iter()
        .filter(|(k, _)| !CONTROL_FIELDS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if kind != "text"
        && !other.contains_key(&kind)
        && !["unsupported", "unknown"].contains(&kind.as_str())
    {
        return Err(InboundError::Shape(format!(
            "a {kind} message needs its \"{kind}\" object (the platform's shape)"
        )));
    }
    Ok(InboundRequest {
        phone_number_id: text_of(obj.get("phone_number_id")).filter(|id| !id.trim().is_empty()),
        from,
        name: text_of(obj.get("name")),
        timestamp: obj.get("timestamp").and_then(|t| match t {
            Value::Number(n) => n.as_i64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }),
        wamid: text_of(obj.get("wamid")).or_else(|| text_of(obj.get("id"))),
        content: InboundContent { kind, text, other },
    })
}

/// `POST /sim/inbound`.
pub async fn sim_inbound(sim: web::Data<Sim>, body: web::Bytes) -> HttpResponse {
    let r = match parse_inbound(&body) {
        Ok(r) => r,
        Err(e) => return HttpResponse::BadRequest().json(json!({ "error": e.to_string() })),
    };
    let number = match crate::reply::number_for(&sim, r.phone_number_id.as_deref()) {
        Ok(n) => n,
        Err(e) => {
            return HttpResponse::BadRequest().json(json!({ "error": e.to_string() }));
        }
    };
    let (from, user_id) = (r.from.phone.clone(), r.from.user_id.clone());
    let kind = r.content.kind.clone();
    let (wamid, queued) = sim.inbound_to(number, r.from, r.content, r.name, r.timestamp, r.wamid);
    HttpResponse::Ok().json(json!({
        "wamid": wamid, "from": from, "user_id": user_id, "type": kind, "webhook_queued": queued,
        "phone_number_id": number.id()
    }))
}

/// A read receipt sent to `POST /{phone_number_id}/messages` (`status: "read"`), answered
/// as the platform does; `None` for any other body (a send).
pub fn receipt(sim: &Sim, body: &[u8]) -> Option<HttpResponse> {
    let v: Value = serde_json::from_slice(body).ok()?;
    if v.get("status").and_then(Value::as_str) != Some("read") {
        return None;
    }
    let refuse = |details: &str| {
        let r = crate::state::Refusal::new(400, 100, details);
        HttpResponse::build(
            actix_web::http::StatusCode::from_u16(r.http_status)
                .unwrap_or(actix_web::http::StatusCode::BAD_REQUEST),
        )
        .json(&*r.body)
    };
    if v.get("messaging_product").and_then(Value::as_str) != Some("whatsapp") {
        return Some(refuse(
            "The parameter messaging_product is required and must be 'whatsapp'",
        ));
    }
    let id = v.get("message_id").and_then(Value::as_str).unwrap_or("");
    if id.trim().is_empty() {
        return Some(refuse("The parameter message_id is required"));
    }
    if let Some(t) = v.get("typing_indicator")
        && t.get("type").and_then(Value::as_str) != Some("text")
    {
        return Some(refuse("typing_indicator['type'] must be 'text'"));
    }
    sim.count_marked_read();
    Some(HttpResponse::Ok().json(json!({ "success": true })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_still_works() {
        let r = parse_inbound(br#"{"from": "+62 811 000", "text": "hi"}"#).unwrap();
        assert_eq!(r.from.phone.as_deref(), Some("62811000"));
        assert_eq!(r.content.kind, "text");
        assert_eq!(r.content.text.as_deref(), Some("hi"));
        assert!(r.content.other.is_empty());
        let r =
            parse_inbound(br#"{"from": "62811", "type": "text", "text": {"body": "yo"}}"#).unwrap();
        assert_eq!(r.content.text.as_deref(), Some("yo"));
    }

    #[test]
    fn any_type_with_its_object() {
        let r = parse_inbound(
            br#"{"from": "62811", "type": "image", "image": {"id": "1", "mime_type": "image/jpeg"},
                 "context": {"id": "wamid.X"}, "timestamp": "1764000000"}"#,
        )
        .unwrap();
        assert_eq!(r.content.kind, "image");
        assert_eq!(r.content.other["image"]["id"], "1");
        assert_eq!(r.content.other["context"]["id"], "wamid.X");
        assert_eq!(r.timestamp, Some(1_764_000_000));
        assert!(!r.content.other.contains_key("from"));
        assert_eq!(r.phone_number_id, None);
        let r =
            parse_inbound(br#"{"from": "62811", "text": "hi", "phone_number_id": 222}"#).unwrap();
        assert_eq!(r.phone_number_id.as_deref(), Some("222"));
        assert!(!r.content.other.contains_key("phone_number_id"));
    }

    #[test]
    fn a_username_user_without_a_phone() {
        let r = parse_inbound(
            br#"{"user_id": "US.13491208655302741918", "username": "@ana", "text": "STOP"}"#,
        )
        .unwrap();
        assert_eq!(r.from.phone, None);
        assert_eq!(r.from.user_id.as_deref(), Some("US.13491208655302741918"));
        assert_eq!(r.from.username.as_deref(), Some("@ana"));
        assert!(!r.content.other.contains_key("user_id"));
        assert_eq!(
            parse_inbound(br#"{"user_id": "not a bsuid", "text": "hi"}"#).unwrap_err(),
            InboundError::From
        );
    }

    #[test]
    fn refusals() {
        assert_eq!(
            parse_inbound(br#"{"text": "hi"}"#).unwrap_err(),
            InboundError::From
        );
        assert!(matches!(
            parse_inbound(br#"{"from": "1", "type": "image"}"#),
            Err(InboundError::Shape(_))
        ));
        assert!(matches!(
            parse_inbound(br#"{"from": "1"}"#),
            Err(InboundError::Shape(_))
        ));
        assert!(matches!(
            parse_inbound(b"[1]"),
            Err(InboundError::NotObject)
        ));
    }
}
