//! What the pages' small scripts poll to stay current (reads only; every page is complete
//! without them):
//! - `GET /live/overview`: the overview's counters as JSON;
//! - `GET /live/inbox?offset=`: the inbox table as an HTML fragment, the same template the
//!   page includes.
//!
//! Same session rules as the pages, but a script cannot follow a redirect to a login form:
//! without a session the answer is 401 (503 when sessions cannot be read).

use actix_web::http::header::CACHE_CONTROL;
use actix_web::{HttpResponse, web};
use serde_json::json;
use warden_core::reports::overview;

use super::conversations::{Paging, inbox_context, read_inbox};
use super::overview::{since, stages};
use crate::auth::{NotSigned, Signed};
use crate::state::AppState;

/// The session, or the answer a script gets without one.
fn signed_or(signed: Result<Signed, NotSigned>) -> Result<Signed, HttpResponse> {
    signed.map_err(|e| match e.reason() {
        None => HttpResponse::Unauthorized()
            .insert_header((CACHE_CONTROL, "no-store"))
            .json(json!({"error": "no session: log in again"})),
        Some(why) => HttpResponse::ServiceUnavailable().json(json!({"error": why})),
    })
}

/// `GET /live/overview`: `{since, funnel: {recorded, ...}, share: {recorded: pct, ...},
/// inbound, refusals}`, the numbers `/` shows.
pub async fn overview_json(
    state: web::Data<AppState>,
    signed: Result<Signed, NotSigned>,
) -> HttpResponse {
    if let Err(res) = signed_or(signed) {
        return res;
    }
    match overview::overview(state.core.pg(), since()).await {
        Ok(o) => {
            let stages = stages(&o);
            let funnel: serde_json::Map<_, _> = stages
                .iter()
                .map(|(key, _, n, _)| (key.to_string(), json!(n)))
                .collect();
            let share: serde_json::Map<_, _> = stages
                .iter()
                .map(|(key, _, _, pct)| (key.to_string(), json!(pct)))
                .collect();
            HttpResponse::Ok()
                .insert_header((CACHE_CONTROL, "no-store"))
                .json(json!({
                    "since": o.since,
                    "funnel": funnel,
                    "share": share,
                    "inbound": o.inbound,
                    "refusals": o.refusals,
                }))
        }
        Err(e) => HttpResponse::ServiceUnavailable().json(json!({"error": e.to_string()})),
    }
}

/// `GET /live/inbox?offset=`: the inbox table (`inbox_table.html`) alone.
pub async fn inbox_fragment(
    state: web::Data<AppState>,
    signed: Result<Signed, NotSigned>,
    paging: web::Query<Paging>,
) -> HttpResponse {
    if let Err(res) = signed_or(signed) {
        return res;
    }
    let offset = paging.offset();
    match read_inbox(&state, offset).await {
        Ok(p) => state
            .templates
            .page("inbox_table.html", inbox_context(&p, offset)),
        Err(e) => HttpResponse::ServiceUnavailable()
            .content_type("text/plain; charset=utf-8")
            .body(e.to_string()),
    }
}
