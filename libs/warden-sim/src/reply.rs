//! The answers the sim's handlers share: a platform refusal ([`refusal`]), the bearer-token
//! checks every platform endpoint starts with ([`reject_unauthorized`] for any served
//! number, [`reject_unless_number`] and [`reject_unless_waba`] for the object in the path),
//! the number or account a control request names ([`number_for`], [`waba_for`]), and a
//! control endpoint's JSON body and bad request ([`control_json`], [`bad_request`]).

use actix_web::http::header::AUTHORIZATION;
use actix_web::{HttpRequest, HttpResponse};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::state::{Number, Refusal, Sim};

pub fn refusal(r: Refusal) -> HttpResponse {
    let status = actix_web::http::StatusCode::from_u16(r.http_status)
        .unwrap_or(actix_web::http::StatusCode::BAD_REQUEST);
    HttpResponse::build(status)
        .insert_header(("www-authenticate", "OAuth \"Facebook Platform\""))
        .json(&*r.body)
}

/// True when the request carries `number`'s bearer token (the scheme is case-insensitive,
/// the token is not).
fn carries(req: &HttpRequest, number: &Number) -> bool {
    match req.headers().get(AUTHORIZATION) {
        Some(v) if v.as_bytes() == number.expected_auth.as_bytes() => true,
        Some(v) => v.to_str().ok().is_some_and(|s| {
            s.split_once(' ').is_some_and(|(scheme, token)| {
                scheme.eq_ignore_ascii_case("bearer") && token.trim() == number.spec.access_token
            })
        }),
        None => false,
    }
}

fn unauthorized() -> HttpResponse {
    refusal(Refusal::unauthorized())
}

/// `Some(401 answer)` unless the request carries the token of some served number.
pub fn reject_unauthorized(sim: &Sim, req: &HttpRequest) -> Option<HttpResponse> {
    let ok = sim.numbers.all().iter().any(|n| carries(req, n));
    (!ok).then(unauthorized)
}

/// `Some(401 answer)` unless the request carries this number's own token: another
/// number's token is refused as the platform refuses a token without access to the object.
pub fn reject_unless_number(req: &HttpRequest, number: &Number) -> Option<HttpResponse> {
    (!carries(req, number)).then(unauthorized)
}

/// `Some(401 answer)` unless the request carries the token of a number of account `waba_id`.
pub fn reject_unless_waba(sim: &Sim, req: &HttpRequest, waba_id: &str) -> Option<HttpResponse> {
    let ok = sim.numbers.of_waba(waba_id).any(|n| carries(req, n));
    (!ok).then(unauthorized)
}

/// A control request naming a number or account the sim does not serve (a 400 naming
/// the served ones).
#[derive(Debug, thiserror::Error)]
#[error("unknown {field} {id:?} (the sim serves {served})")]
pub struct NotServed {
    field: &'static str,
    id: String,
    served: String,
}

/// The number a control request names by `phone_number_id` (none or blank: the first).
pub fn number_for<'a>(
    sim: &'a Sim,
    phone_number_id: Option<&str>,
) -> Result<&'a Number, NotServed> {
    match phone_number_id.map(str::trim).filter(|id| !id.is_empty()) {
        None => Ok(sim.numbers.first()),
        Some(id) => sim.numbers.get(id).ok_or_else(|| NotServed {
            field: "phone_number_id",
            id: id.to_owned(),
            served: sim.numbers.ids(),
        }),
    }
}

/// The business account a template control request means: `waba_id`, else the account of
/// `phone_number_id`, else the first number's.
pub fn waba_for(
    sim: &Sim,
    waba_id: Option<&str>,
    phone_number_id: Option<&str>,
) -> Result<String, NotServed> {
    match waba_id.map(str::trim).filter(|w| !w.is_empty()) {
        Some(w) if sim.registry(w).is_some() => Ok(w.to_owned()),
        Some(w) => Err(NotServed {
            field: "waba_id",
            id: w.to_owned(),
            served: sim.numbers.wabas().join(", "),
        }),
        None => number_for(sim, phone_number_id).map(|n| n.waba_id().to_owned()),
    }
}

pub fn bad_request(msg: impl std::fmt::Display) -> HttpResponse {
    HttpResponse::BadRequest().json(json!({ "error": msg.to_string() }))
}

/// A control endpoint's body that is not the JSON it takes.
#[derive(Debug, thiserror::Error)]
#[error("invalid JSON body: {0}")]
pub struct BadControlBody(#[from] serde_json::Error);

pub fn control_json<T: DeserializeOwned>(body: &[u8]) -> Result<T, BadControlBody> {
    Ok(serde_json::from_slice(body)?)
}

/// The `{id}` segment of a platform path (the scope's `{api_version}` is not needed here).
#[derive(Deserialize)]
pub(crate) struct NodeId {
    pub id: String,
}

pub(crate) fn invalid(details: impl Into<String>) -> HttpResponse {
    refusal(Refusal::new(400, 100, details))
}

pub(crate) fn unknown_object(id: &str, verb: &str) -> HttpResponse {
    refusal(
        Refusal::new(
            400,
            100,
            format!(
                "Unsupported {verb} request. Object with ID '{id}' does not exist, cannot be \
                 loaded due to missing permissions, or does not support this operation"
            ),
        )
        .with_subcode(33),
    )
}

/// Keeps `id` plus the requested `fields` of a full object (all when none asked).
pub(crate) fn select_fields(full: Map<String, Value>, fields: Option<&String>) -> Value {
    let Some(fields) = fields.filter(|f| !f.trim().is_empty()) else {
        return Value::Object(full);
    };
    let wanted: Vec<&str> = fields.split(',').map(str::trim).collect();
    Value::Object(
        full.into_iter()
            .filter(|(k, _)| k == "id" || wanted.contains(&k.as_str()))
            .collect(),
    )
}
