//! A shared number: a person answering from the WhatsApp Business app (coexistence) and
//! other apps under conversation routing.
//!
//! Control endpoints script what the platform would tell the app, each as a signed
//! webhook under the number's account (`phone_number_id`, default the first number):
//! - `POST /sim/echo {"to", "text"}`: a person's reply from the Business app
//!   (`smb_message_echoes`, `message_echoes[]`);
//! - `POST /sim/handover {"customer", "type": "control_passed" | "control_taken"}`
//!   (`messaging_handovers`: passed to the app, or taken from it);
//! - `POST /sim/standby {"from", "text"}`: a copy of a customer's message in a thread another
//!   app owns (`standby`).
//!
//! The platform's `POST /{phone_number_id}/thread_control` (`pass`, `release`, `take`) is
//! answered as the platform does: a `take` is refused with 2494191 (only the escalation
//! partner may take) unless `POST /sim/thread_control {"take_allowed": true}` allowed it.
//! `GET /sim/thread_control` lists the calls received.

use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;
use serde_json::{Value, json};
use warden_platform::lenient;
use warden_platform::webhook::Change;

use crate::reply::{
    NodeId, bad_request, control_json, invalid, number_for, refusal, reject_unauthorized,
    reject_unless_number, unknown_object,
};
use crate::state::thread_control::ThreadControlCall;
use crate::state::{Number, Refusal, Sim};
use crate::webhooks::unix_now;

/// Only the configured escalation partner may take a thread.
pub const TAKE_NOT_ALLOWED: i64 = 2_494_191;
/// The longest `metadata` a thread control call may hand over.
const MAX_METADATA: usize = 2000;

fn digits(s: &str) -> String {
    s.chars().filter(char::is_ascii_digit).collect()
}

fn queue(sim: &Sim, number: &Number, field: &str, value: Value) -> bool {
    let Some(q) = &sim.webhooks else {
        return false;
    };
    q.push(
        number.origin,
        [Change::Other {
            field: field.to_owned(),
            value,
        }],
    );
    true
}

#[derive(Deserialize)]
struct EchoReq {
    #[serde(default, deserialize_with = "lenient::opt_string")]
    to: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default, deserialize_with = "lenient::opt_string")]
    phone_number_id: Option<String>,
}

/// `POST /sim/echo`: a person replies from the WhatsApp Business app.
pub async fn sim_echo(sim: web::Data<Sim>, body: web::Bytes) -> HttpResponse {
    let r: EchoReq = match control_json(&body) {
        Ok(r) => r,
        Err(e) => return bad_request(e),
    };
    let to = r.to.as_deref().map(digits).unwrap_or_default();
    if to.is_empty() {
        return bad_request("to (the customer's phone number) is required");
    }
    let number = match number_for(&sim, r.phone_number_id.as_deref()) {
        Ok(n) => n,
        Err(e) => return bad_request(e),
    };
    let wamid = sim.next_wamid();
    let value = json!({
        "messaging_product": "whatsapp",
        "metadata": number.metadata(),
        "message_echoes": [{
            "from": digits(&number.spec.display_phone_number),
            "to": to,
            "id": wamid,
            "timestamp": unix_now().to_string(),
            "type": "text",
            "text": {"body": r.text.unwrap_or_default()},
        }],
    });
    let queued = queue(&sim, number, "smb_message_echoes", value);
    HttpResponse::Ok().json(json!({
        "wamid": wamid, "to": to, "webhook_queued": queued, "phone_number_id": number.id()
    }))
}

#[derive(Deserialize)]
struct HandoverReq {
    #[serde(default, deserialize_with = "lenient::opt_string")]
    customer: Option<String>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default, deserialize_with = "lenient::opt_string")]
    phone_number_id: Option<String>,
    /// Handed to the new owner, as a `pass` call's `metadata`.
    #[serde(default)]
    metadata: Option<String>,
}

/// `POST /sim/handover`: the thread was passed to the app or taken from it.
pub async fn sim_handover(sim: web::Data<Sim>, body: web::Bytes) -> HttpResponse {
    let r: HandoverReq = match control_json(&body) {
        Ok(r) => r,
        Err(e) => return bad_request(e),
    };
    let customer = r.customer.as_deref().map(digits).unwrap_or_default();
    if customer.is_empty() {
        return bad_request("customer (the customer's phone number) is required");
    }
    let (kind, previous, new) = match r.kind.as_deref().map(str::trim) {
        Some("control_passed") => ("control_passed", "ai_agent", "app"),
        Some("control_taken") => ("control_taken", "app", "ai_agent"),
        other => {
            return bad_request(format!(
                "type {other:?} is not control_passed or control_taken"
            ));
        }
    };
    let number = match number_for(&sim, r.phone_number_id.as_deref()) {
        Ok(n) => n,
        Err(e) => return bad_request(e),
    };
    let mut object = json!({"previous_role": previous, "new_role": new});
    if let Some(m) = r.metadata {
        object["metadata"] = json!(m);
    }
    let value = json!({
        "messaging_product": "whatsapp",
        "metadata": number.metadata(),
        "contacts": [{"wa_id": customer}],
        // Milliseconds, as handover notifications carry them: two handovers of one thread
        // in the same second are two events.
        "timestamp": std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64),
        "type": kind,
        kind: object,
    });
    let queued = queue(&sim, number, "messaging_handovers", value);
    HttpResponse::Ok().json(json!({
        "customer": customer, "type": kind, "webhook_queued": queued,
        "phone_number_id": number.id()
    }))
}

#[derive(Deserialize)]
struct StandbyReq {
    #[serde(default, deserialize_with = "lenient::opt_string")]
    from: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default, deserialize_with = "lenient::opt_string")]
    phone_number_id: Option<String>,
}

/// `POST /sim/standby`: a customer's message in a thread another app owns, copied to this one.
pub async fn sim_standby(sim: web::Data<Sim>, body: web::Bytes) -> HttpResponse {
    let r: StandbyReq = match control_json(&body) {
        Ok(r) => r,
        Err(e) => return bad_request(e),
    };
    let from = r.from.as_deref().map(digits).unwrap_or_default();
    if from.is_empty() {
        return bad_request("from (the customer's phone number) is required");
    }
    let number = match number_for(&sim, r.phone_number_id.as_deref()) {
        Ok(n) => n,
        Err(e) => return bad_request(e),
    };
    let wamid = sim.next_wamid();
    let value = json!({
        "messaging_product": "whatsapp",
        "metadata": number.metadata(),
        "contacts": [{"profile": {"name": "Sim Customer"}, "wa_id": from}],
        "messages": [{
            "from": from,
            "id": wamid,
            "timestamp": unix_now().to_string(),
            "type": "text",
            "text": {"body": r.text.unwrap_or_default()},
        }],
    });
    let queued = queue(&sim, number, "standby", value);
    HttpResponse::Ok().json(json!({
        "wamid": wamid, "from": from, "webhook_queued": queued, "phone_number_id": number.id()
    }))
}

#[derive(Deserialize)]
struct ThreadControlSettings {
    #[serde(default)]
    take_allowed: Option<bool>,
}

/// `POST /sim/thread_control {"take_allowed": bool}`: whether `take` is allowed (this app
/// is the escalation partner).
pub async fn sim_thread_control(sim: web::Data<Sim>, body: web::Bytes) -> HttpResponse {
    let r: ThreadControlSettings = match control_json(&body) {
        Ok(r) => r,
        Err(e) => return bad_request(e),
    };
    if let Some(allowed) = r.take_allowed {
        sim.routing.allow_take(allowed);
    }
    sim_thread_control_calls(sim).await
}

/// `GET /sim/thread_control`: the calls received, and whether `take` is allowed.
pub async fn sim_thread_control_calls(sim: web::Data<Sim>) -> HttpResponse {
    HttpResponse::Ok().json(json!({
        "take_allowed": sim.routing.take_allowed(),
        "calls": sim.routing.calls(),
    }))
}

#[derive(Deserialize)]
struct ThreadControlReq {
    #[serde(default)]
    messaging_product: Option<String>,
    #[serde(default, deserialize_with = "lenient::opt_string")]
    to: Option<String>,
    #[serde(default, deserialize_with = "lenient::opt_string")]
    recipient: Option<String>,
    #[serde(default)]
    action: Option<String>,
    #[serde(default)]
    metadata: Option<String>,
    #[serde(default)]
    control_pass: Option<Value>,
}

/// `POST /{phone_number_id}/thread_control`.
pub(crate) async fn thread_control(
    sim: web::Data<Sim>,
    req: HttpRequest,
    path: web::Path<NodeId>,
    body: web::Bytes,
) -> HttpResponse {
    if let Some(resp) = reject_unauthorized(&sim, &req) {
        return resp;
    }
    let Some(number) = sim.numbers.get(&path.id) else {
        return unknown_object(&path.id, "post");
    };
    if let Some(resp) = reject_unless_number(&req, number) {
        return resp;
    }
    let r: ThreadControlReq = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => return invalid(format!("Invalid JSON in request body: {e}")),
    };
    if r.messaging_product.as_deref() != Some("whatsapp") {
        return invalid("The parameter messaging_product is required and must be 'whatsapp'");
    }
    let to =
        r.to.or(r.recipient)
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty());
    let Some(to) = to else {
        return invalid("The parameter to (or recipient) is required");
    };
    let action = r.action.unwrap_or_default();
    if !matches!(action.as_str(), "pass" | "release" | "take") {
        return invalid("The parameter action must be one of pass, release, take");
    }
    if r.metadata
        .as_ref()
        .is_some_and(|m| m.chars().count() > MAX_METADATA)
    {
        return invalid("The parameter metadata must be at most 2000 characters");
    }
    let target_role = match &r.control_pass {
        None => None,
        Some(_) if action != "pass" => {
            return invalid("The parameter control_pass is only valid with action pass");
        }
        Some(p) => match p.get("target_role").and_then(Value::as_str) {
            Some("ai_agent") => Some("ai_agent".to_owned()),
            _ => return invalid("control_pass.target_role must be ai_agent"),
        },
    };
    if action == "take" && !sim.routing.take_allowed() {
        return refusal(Refusal::new(
            400,
            TAKE_NOT_ALLOWED,
            "Only the escalation partner configured for this phone number may take thread control",
        ));
    }
    sim.routing.record(ThreadControlCall {
        phone_number_id: number.id().to_owned(),
        action,
        to,
        target_role,
        metadata: r.metadata,
    });
    HttpResponse::Ok().json(json!({"messaging_product": "whatsapp", "success": true}))
}
