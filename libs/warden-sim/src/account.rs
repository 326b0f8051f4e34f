//! The platform's account reads (`/{waba_id}/phone_numbers`, `/{phone_number_id}`,
//! `/{waba_id}`), each answering only a token of that number or account, and the control
//! endpoint changing a number's quality (`POST /sim/quality`).

use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use warden_platform::lenient;

use crate::reply::{
    NodeId, bad_request, control_json, number_for, reject_unauthorized, reject_unless_number,
    reject_unless_waba, select_fields, unknown_object,
};
use crate::senders::QUALITIES;
use crate::state::{Number, PhoneState, Sim};

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn phone_object(number: &Number) -> Map<String, Value> {
    let p = number.phone();
    object(json!({
        "id": number.id(),
        "display_phone_number": number.spec.display_phone_number,
        "verified_name": "Warden Sim",
        "quality_rating": p.quality_rating,
        "messaging_limit_tier": p.messaging_limit_tier,
        "throughput": { "level": p.throughput_level },
        "is_on_biz_app": p.is_on_biz_app,
        "code_verification_status": "VERIFIED",
        "name_status": "APPROVED",
        "platform_type": "CLOUD_API",
        "status": "CONNECTED",
    }))
}

fn account_object(sim: &Sim, waba_id: &str) -> Map<String, Value> {
    let mut m = object(json!({
        "id": waba_id,
        "name": "Warden Sim Business",
        "currency": "USD",
        "timezone_id": "1",
        "message_template_namespace": "warden_sim_namespace",
        "account_review_status": "APPROVED",
    }));
    // The owning portfolio, when the senders file names one (the platform's field).
    if let Some(portfolio) = sim
        .numbers
        .of_waba(waba_id)
        .find_map(|n| n.spec.portfolio_id.clone())
    {
        m.insert(
            "owner_business_info".to_owned(),
            json!({ "id": portfolio, "name": "Warden Sim Portfolio" }),
        );
    }
    m
}

/// `GET /{version}/{waba_id}/phone_numbers`: the account's numbers.
pub(crate) async fn phone_numbers(
    sim: web::Data<Sim>,
    req: HttpRequest,
    path: web::Path<NodeId>,
    query: web::Query<HashMap<String, String>>,
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
    let phones: Vec<Value> = sim
        .numbers
        .of_waba(&path.id)
        .map(|n| select_fields(phone_object(n), query.get("fields")))
        .collect();
    let after = phones.len().to_string();
    HttpResponse::Ok().json(json!({
        "data": phones,
        "paging": { "cursors": { "before": "0", "after": after } }
    }))
}

/// `GET /{version}/{id}`: a media object (any served token), a number (its own token) or an
/// account (a token of one of its numbers).
pub(crate) async fn read_node(
    sim: web::Data<Sim>,
    req: HttpRequest,
    path: web::Path<NodeId>,
    query: web::Query<HashMap<String, String>>,
) -> HttpResponse {
    if let Some(resp) = reject_unauthorized(&sim, &req) {
        return resp;
    }
    let id = path.into_inner().id;
    if let Some(info) = crate::media::info(&sim, &req, &id) {
        return HttpResponse::Ok().json(info);
    }
    let fields = query.get("fields");
    if let Some(number) = sim.numbers.get(&id) {
        if let Some(resp) = reject_unless_number(&req, number) {
            return resp;
        }
        return HttpResponse::Ok().json(select_fields(phone_object(number), fields));
    }
    if sim.registry(&id).is_some() {
        if let Some(resp) = reject_unless_waba(&sim, &req, &id) {
            return resp;
        }
        return HttpResponse::Ok().json(select_fields(account_object(&sim, &id), fields));
    }
    unknown_object(&id, "get")
}

#[derive(Deserialize)]
struct QualityReq {
    #[serde(default, alias = "quality")]
    quality_rating: Option<String>,
    #[serde(default, alias = "current_limit")]
    messaging_limit_tier: Option<String>,
    #[serde(default)]
    event: Option<String>,
    #[serde(default, deserialize_with = "lenient::opt_string")]
    phone_number_id: Option<String>,
}

/// `POST /sim/quality`: a number's quality (GREEN, YELLOW, RED) and tier, announced by a
/// signed `phone_number_quality_update` under its account.
pub(crate) async fn sim_quality(sim: web::Data<Sim>, body: web::Bytes) -> HttpResponse {
    let r: QualityReq = match control_json(&body) {
        Ok(r) => r,
        Err(e) => return bad_request(e),
    };
    let number = match number_for(&sim, r.phone_number_id.as_deref()) {
        Ok(n) => n,
        Err(e) => return bad_request(e),
    };
    let up = |s: Option<String>| s.map(|v| v.trim().to_ascii_uppercase());
    let quality = up(r.quality_rating);
    if let Some(q) = &quality
        && !QUALITIES.contains(&q.as_str())
    {
        return bad_request(format!("quality {q:?} is not GREEN, YELLOW or RED"));
    }
    let state = sim.set_quality_of(number, quality, up(r.messaging_limit_tier), up(r.event));
    state_reply(number, &state)
}

/// A control endpoint's answer: the number's state, with its id.
pub(crate) fn state_reply(number: &Number, state: &PhoneState) -> HttpResponse {
    let mut v = serde_json::to_value(state).unwrap_or_else(|_| json!({}));
    v["phone_number_id"] = json!(number.id());
    HttpResponse::Ok().json(v)
}
