//! Flows as the platform knows them: the flows registered with `POST /sim/flows`
//! (listed by `GET /{waba_id}/flows`), the checks of a flow message's action and of a
//! template's FLOW button (131009 naming the field, written from the platform's rules and
//! not from Warden's), and `POST /sim/flow_response`, a customer's submission sent as the
//! signed `nfm_reply` webhook.

use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::reply::{NodeId, reject_unauthorized, reject_unless_waba, unknown_object};
use crate::state::flows::SimFlow;
use crate::state::{InboundContent, Refusal, Sim};

fn bad(details: impl Into<String>) -> Refusal {
    Refusal::new(400, 131009, details)
}

fn missing(details: impl Into<String>) -> Refusal {
    Refusal::new(400, 131008, details)
}

/// The platform refuses emoji in a flow's button text.
fn emoji(s: &str) -> bool {
    s.chars().any(|c| {
        let c = c as u32;
        (0x1F000..=0x1FAFF).contains(&c) || (0x2600..=0x27BF).contains(&c) || c == 0xFE0F
    })
}

/// The `action` of an interactive `flow` message.
pub fn flow_action(sim: &Sim, action: &Value) -> Result<(), Refusal> {
    if action.get("name").and_then(Value::as_str) != Some("flow") {
        return Err(bad("action.name must be \"flow\""));
    }
    let p = action
        .get("parameters")
        .and_then(Value::as_object)
        .ok_or_else(|| missing("action.parameters is required"))?;
    let s = |k: &str| p.get(k).and_then(Value::as_str);
    if s("flow_message_version") != Some("3") {
        return Err(bad("parameters.flow_message_version must be \"3\""));
    }
    let flow = match (s("flow_id"), s("flow_name")) {
        (Some(_), Some(_)) => return Err(bad("parameters: give flow_id or flow_name, not both")),
        (None, None) => return Err(missing("parameters.flow_id or flow_name is required")),
        (id, name) => sim.flows.find(id, name).ok_or_else(|| {
            let field = if id.is_some() { "flow_id" } else { "flow_name" };
            bad(format!(
                "parameters.{field} does not name a flow of this business"
            ))
        })?,
    };
    let cta = s("flow_cta").ok_or_else(|| missing("parameters.flow_cta is required"))?;
    let n = cta.chars().count();
    if n == 0 || n > 20 {
        return Err(bad(format!(
            "parameters.flow_cta has {n} characters; allowed 1 to 20"
        )));
    }
    if emoji(cta) {
        return Err(bad("parameters.flow_cta may not contain emoji"));
    }
    if let Some(t) = p.get("flow_token")
        && t.as_str().is_none_or(str::is_empty)
    {
        return Err(bad("parameters.flow_token must be a non-empty string"));
    }
    let mode = s("mode").unwrap_or("published");
    match mode {
        "published" if flow.status.eq_ignore_ascii_case("DRAFT") => {
            return Err(bad(
                "parameters.mode is published but the flow is a draft; send with mode draft",
            ));
        }
        "published" | "draft" => {}
        _ => return Err(bad("parameters.mode must be published or draft")),
    }
    let payload = p.get("flow_action_payload");
    match s("flow_action").unwrap_or("navigate") {
        "navigate" => {
            let screen = payload
                .and_then(|x| x.get("screen"))
                .and_then(Value::as_str);
            if screen.is_none_or(str::is_empty) {
                return Err(missing(
                    "parameters.flow_action_payload.screen is required for navigate",
                ));
            }
            if let Some(d) = payload.and_then(|x| x.get("data"))
                && d.as_object().is_none_or(Map::is_empty)
            {
                return Err(bad(
                    "parameters.flow_action_payload.data must be a non-empty object",
                ));
            }
        }
        "data_exchange" => {
            if payload.is_some() {
                return Err(bad(
                    "parameters.flow_action_payload is only for flow_action navigate",
                ));
            }
        }
        _ => {
            return Err(bad(
                "parameters.flow_action must be navigate or data_exchange",
            ));
        }
    }
    Ok(())
}

#[derive(Deserialize)]
struct RegisterReq {
    #[serde(deserialize_with = "warden_platform::lenient::string")]
    flow_id: String,
    name: String,
    #[serde(default = "published")]
    status: String,
    #[serde(default)]
    categories: Vec<String>,
}

fn published() -> String {
    "PUBLISHED".into()
}

/// `POST /sim/flows {"flow_id", "name", "status"?, "categories"?}`.
pub(crate) async fn sim_flows(sim: web::Data<Sim>, body: web::Bytes) -> HttpResponse {
    let r: RegisterReq = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => return HttpResponse::BadRequest().json(json!({ "error": e.to_string() })),
    };
    if r.flow_id.trim().is_empty() || r.name.trim().is_empty() {
        return HttpResponse::BadRequest()
            .json(json!({ "error": "flow_id and name must not be empty" }));
    }
    let flow = SimFlow {
        id: r.flow_id,
        name: r.name,
        status: r.status.to_ascii_uppercase(),
        categories: r.categories,
    };
    sim.flows.register(flow.clone());
    HttpResponse::Ok().json(json!({ "id": flow.id, "name": flow.name, "status": flow.status }))
}

/// `GET /{version}/{waba_id}/flows`: every registered flow, in one page.
pub(crate) async fn list_flows(
    sim: web::Data<Sim>,
    req: HttpRequest,
    path: web::Path<NodeId>,
) -> HttpResponse {
    if let Some(resp) = reject_unauthorized(&sim, &req) {
        return resp;
    }
    if sim.registry(&path.id).is_none() {
        return unknown_object(&path.id, "get");
    }
    if let Some(resp) = reject_unless_waba(&sim, &req, &path.id) {
        return resp;
    }
    let data: Vec<Value> = sim
        .flows
        .all()
        .into_iter()
        .map(
            |f| json!({"id": f.id, "name": f.name, "status": f.status, "categories": f.categories}),
        )
        .collect();
    HttpResponse::Ok()
        .json(json!({ "data": data, "paging": {"cursors": {"before": "0", "after": "0"}} }))
}

#[derive(Deserialize)]
struct ResponseReq {
    from: String,
    #[serde(default)]
    flow_token: Option<String>,
    #[serde(default)]
    response: Value,
    #[serde(default)]
    context_message_id: Option<String>,
    #[serde(default)]
    phone_number_id: Option<String>,
}

/// `response_json` as the customer's app sends it: an object (with the token added when
/// given and absent) as JSON text; a string as it is (so a test can send broken JSON).
fn response_json(response: Value, token: Option<&str>) -> String {
    match response {
        Value::Object(mut o) => {
            if let Some(t) = token
                && !o.contains_key("flow_token")
            {
                o.insert("flow_token".into(), json!(t));
            }
            Value::Object(o).to_string()
        }
        Value::String(raw) => raw,
        Value::Null => match token {
            Some(t) => json!({ "flow_token": t }).to_string(),
            None => "{}".into(),
        },
        other => other.to_string(),
    }
}

/// `POST /sim/flow_response {"from", "flow_token"?, "response", "context_message_id"?,
/// "phone_number_id"?}`: the signed `nfm_reply` webhook of a customer's submission.
pub(crate) async fn sim_flow_response(sim: web::Data<Sim>, body: web::Bytes) -> HttpResponse {
    let r: ResponseReq = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => return HttpResponse::BadRequest().json(json!({ "error": e.to_string() })),
    };
    let phone: String = r.from.chars().filter(char::is_ascii_digit).collect();
    if phone.is_empty() {
        return HttpResponse::BadRequest()
            .json(json!({ "error": "from must hold a phone number" }));
    }
    let number = match crate::reply::number_for(&sim, r.phone_number_id.as_deref()) {
        Ok(n) => n,
        Err(e) => return HttpResponse::BadRequest().json(json!({ "error": e.to_string() })),
    };
    let mut other = Map::new();
    other.insert(
        "interactive".into(),
        json!({"type": "nfm_reply", "nfm_reply": {
            "name": "flow",
            "body": "Sent",
            "response_json": response_json(r.response, r.flow_token.as_deref()),
        }}),
    );
    if let Some(id) = r.context_message_id.filter(|i| !i.is_empty()) {
        other.insert(
            "context".into(),
            json!({"from": number.metadata().display_phone_number, "id": id}),
        );
    }
    let from = crate::users::SimUser {
        phone: Some(phone.clone()),
        user_id: None,
        parent_user_id: None,
        username: None,
    };
    let content = InboundContent {
        kind: "interactive".into(),
        text: None,
        other,
    };
    let (wamid, queued) = sim.inbound_to(number, from, content, None, None, None);
    HttpResponse::Ok().json(json!({
        "wamid": wamid, "from": phone, "type": "interactive", "webhook_queued": queued,
        "phone_number_id": number.id()
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow_checks::check_flow_button;

    #[test]
    fn response_json_keeps_what_it_is_given() {
        assert_eq!(
            response_json(json!({"a": 1}), Some("t")),
            r#"{"a":1,"flow_token":"t"}"#
        );
        assert_eq!(response_json(json!("{broken"), Some("t")), "{broken");
        assert_eq!(response_json(Value::Null, None), "{}");
        assert_eq!(response_json(json!([1]), None), "[1]");
    }

    #[test]
    fn flow_buttons_are_checked_at_create() {
        assert!(
            check_flow_button(0, &json!({"type": "FLOW", "text": "Go", "flow_id": "1"})).is_ok()
        );
        assert!(
            check_flow_button(0, &json!({"type": "FLOW", "text": "Go"}))
                .unwrap_err()
                .contains("flow_id")
        );
        assert!(
            check_flow_button(
                1,
                &json!({"type": "FLOW", "text": "Go", "flow_id": "1", "flow_action": "x"})
            )
            .unwrap_err()
            .contains("buttons[1].flow_action")
        );
    }
}
