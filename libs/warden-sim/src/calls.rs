//! Call permission and location requests as the platform takes them, and the customer's
//! answer to a call permission request.
//!
//! The two interactive kinds show only a body: a header or a footer is 131009, an action
//! whose `name` is not the kind's own is 131009, a missing one 131008.
//! `POST /sim/call_permission {"from", "response": "accept"|"reject", "permanent",
//! "expires_in_secs"?, "phone_number_id"?, "timestamp"?}` sends the signed
//! `call_permission_reply` a customer's tap makes.

use actix_web::{HttpResponse, web};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use warden_platform::lenient;

use crate::state::{InboundContent, Refusal, Sim};
use crate::webhooks::unix_now;

/// A body-only interactive kind: no header, no footer, `action.name` its own.
fn body_only(i: &Value, action: &Value, kind: &str, name: &str) -> Result<(), Refusal> {
    for part in ["header", "footer"] {
        if i.get(part).is_some() {
            return Err(Refusal::new(
                400,
                131009,
                format!("interactive.{part} is not allowed in a {kind} message"),
            ));
        }
    }
    match action.get("name").and_then(Value::as_str) {
        Some(n) if n == name => {}
        Some(n) => {
            return Err(Refusal::new(
                400,
                131009,
                format!("action.name {n:?} is invalid for {kind}; expected {name:?}"),
            ));
        }
        None => {
            return Err(Refusal::new(
                400,
                131008,
                format!("action.name is required for {kind}"),
            ));
        }
    }
    let extra = action
        .as_object()
        .and_then(|a| a.keys().find(|k| *k != "name"));
    match extra {
        Some(k) => Err(Refusal::new(
            400,
            131009,
            format!("action.{k} is not a parameter of {kind}"),
        )),
        None => Ok(()),
    }
}

/// `interactive.type "location_request_message"`.
pub fn location_request_action(i: &Value, action: &Value) -> Result<(), Refusal> {
    body_only(i, action, "location_request_message", "send_location")
}

/// `interactive.type "call_permission_request"`.
pub fn call_permission_action(i: &Value, action: &Value) -> Result<(), Refusal> {
    body_only(
        i,
        action,
        "call_permission_request",
        "call_permission_request",
    )
}

#[derive(Deserialize)]
struct CallPermissionReq {
    #[serde(default, deserialize_with = "lenient::opt_string")]
    from: Option<String>,
    #[serde(default, deserialize_with = "lenient::opt_string")]
    response: Option<String>,
    #[serde(default)]
    permanent: bool,
    #[serde(default)]
    expires_in_secs: Option<i64>,
    #[serde(default, deserialize_with = "lenient::opt_string")]
    phone_number_id: Option<String>,
    /// The answer's platform time (unix seconds); default now. Lets a test send answers
    /// out of order.
    #[serde(default)]
    timestamp: Option<i64>,
    #[serde(default, deserialize_with = "lenient::opt_string")]
    response_source: Option<String>,
}

fn bad_request(e: impl std::fmt::Display) -> HttpResponse {
    HttpResponse::BadRequest().json(json!({ "error": e.to_string() }))
}

/// The `call_permission_reply` object the platform sends for this answer.
fn reply_object(r: &CallPermissionReq, response: &str, at: i64) -> Value {
    let mut reply = json!({
        "response": response,
        "is_permanent": r.permanent,
        "response_source": r.response_source.as_deref().unwrap_or("user_action"),
    });
    // A temporary grant says when it ends (7 days unless told otherwise).
    if response == "accept" && !r.permanent {
        reply["expiration_timestamp"] = json!(at + r.expires_in_secs.unwrap_or(7 * 24 * 3600));
    }
    reply
}

/// `POST /sim/call_permission`.
pub async fn sim_call_permission(sim: web::Data<Sim>, body: web::Bytes) -> HttpResponse {
    let r: CallPermissionReq = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => return bad_request(format!("invalid JSON body: {e}")),
    };
    let from: String = r
        .from
        .as_deref()
        .unwrap_or_default()
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    if from.is_empty() {
        return bad_request("from (the customer's phone number) is required");
    }
    let response = match r.response.as_deref().map(str::trim) {
        Some(x @ ("accept" | "reject")) => x.to_owned(),
        _ => return bad_request("response must be \"accept\" or \"reject\""),
    };
    let number = match crate::reply::number_for(&sim, r.phone_number_id.as_deref()) {
        Ok(n) => n,
        Err(e) => return bad_request(e),
    };
    let at = r.timestamp.unwrap_or_else(unix_now);
    let reply = reply_object(&r, &response, at);
    let mut other = Map::new();
    other.insert(
        "interactive".into(),
        json!({"type": "call_permission_reply", "call_permission_reply": reply}),
    );
    let content = InboundContent {
        kind: "interactive".into(),
        text: None,
        other,
    };
    let user = crate::users::SimUser {
        phone: Some(from.clone()),
        ..Default::default()
    };
    let (wamid, queued) = sim.inbound_to(number, user, content, None, Some(at), None);
    HttpResponse::Ok().json(json!({
        "wamid": wamid, "from": from, "call_permission_reply": reply,
        "webhook_queued": queued, "phone_number_id": number.id()
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_only_kinds() {
        let ok = json!({"type": "location_request_message", "body": {"text": "Where?"},
                        "action": {"name": "send_location"}});
        assert!(location_request_action(&ok, &ok["action"]).is_ok());
        let footer = json!({"footer": {"text": "x"}});
        let e = location_request_action(&footer, &ok["action"]).unwrap_err();
        assert_eq!(e.body.error.code, 131009);
        let e = call_permission_action(&ok, &ok["action"]).unwrap_err();
        assert_eq!(e.body.error.code, 131009);
        let e = call_permission_action(&json!({}), &json!({})).unwrap_err();
        assert_eq!(e.body.error.code, 131008);
        let e = call_permission_action(
            &json!({}),
            &json!({"name": "call_permission_request", "buttons": []}),
        )
        .unwrap_err();
        assert_eq!(e.body.error.code, 131009);
    }
}
