//! The answers the sim's handlers share: a platform refusal ([`refusal`]), the bearer-token
//! check every platform endpoint starts with ([`reject_unauthorized`]), and a control
//! endpoint's JSON body and bad request ([`control_json`], [`bad_request`]).

use actix_web::http::header::AUTHORIZATION;
use actix_web::{HttpRequest, HttpResponse};
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::state::{Refusal, Sim};

pub fn refusal(r: Refusal) -> HttpResponse {
    let status = actix_web::http::StatusCode::from_u16(r.http_status)
        .unwrap_or(actix_web::http::StatusCode::BAD_REQUEST);
    HttpResponse::build(status)
        .insert_header(("www-authenticate", "OAuth \"Facebook Platform\""))
        .json(&*r.body)
}

/// `Some(401 answer)` unless the request carries the right bearer token.
pub fn reject_unauthorized(sim: &Sim, req: &HttpRequest) -> Option<HttpResponse> {
    let ok = match req.headers().get(AUTHORIZATION) {
        Some(v) if v.as_bytes() == sim.expected_auth.as_bytes() => true,
        Some(v) => v.to_str().ok().is_some_and(|s| {
            // The scheme is case-insensitive; the token is not.
            s.split_once(' ').is_some_and(|(scheme, token)| {
                scheme.eq_ignore_ascii_case("bearer") && token.trim() == sim.config.access_token
            })
        }),
        None => false,
    };
    (!ok).then(|| {
        refusal(Refusal::new(
            401,
            190,
            "Invalid OAuth access token: missing or wrong bearer token",
        ))
    })
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
