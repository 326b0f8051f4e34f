//! Control endpoints for the platform's newer limits (see `state/limits.rs`):
//!
//! - `POST /sim/throughput` `{"level": "HIGH"|"STANDARD", "is_on_biz_app": bool,
//!   "throughput_mps": N|null}`: a number's throughput; a move to HIGH sends
//!   `phone_number_quality_update` `THROUGHPUT_UPGRADE`.
//!
//! Each takes an optional `"phone_number_id"` (the templates ones also `"waba_id"`),
//! default the first number.
//! - `POST /sim/templates/{name}/{language}/category` `{"category": "MARKETING",
//!   "effective_at": <unix s>?}`: a `template_category_update` (impending when
//!   `effective_at` is in the future, else completed).
//! - `POST /sim/templates/{name}/{language}/quality` `{"new": "YELLOW", "previous": "GREEN"?}`:
//!   a `message_template_quality_update`.

use actix_web::{HttpResponse, web};
use serde::Deserialize;
use serde_json::json;
use warden_platform::lenient;

use crate::reply::{bad_request, control_json, number_for, waba_for};
use crate::state::Sim;

#[derive(Deserialize)]
struct ThroughputReq {
    #[serde(default)]
    level: Option<String>,
    #[serde(default)]
    is_on_biz_app: Option<bool>,
    /// Sends per second before 130429; `null` lifts the limit; absent leaves it.
    #[serde(default, deserialize_with = "present")]
    throughput_mps: Option<Option<u32>>,
    #[serde(default, deserialize_with = "lenient::opt_string")]
    phone_number_id: Option<String>,
}

/// Tells a field given as `null` (Some(None)) from one left out (None).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<u32>>, D::Error> {
    Option::<u32>::deserialize(d).map(Some)
}

/// Which account a template control request means.
#[derive(Deserialize, Default)]
struct Account {
    #[serde(default, deserialize_with = "lenient::opt_string")]
    waba_id: Option<String>,
    #[serde(default, deserialize_with = "lenient::opt_string")]
    phone_number_id: Option<String>,
}

pub(crate) async fn sim_throughput(sim: web::Data<Sim>, body: web::Bytes) -> HttpResponse {
    let r: ThroughputReq = match control_json(&body) {
        Ok(r) => r,
        Err(e) => return bad_request(e),
    };
    let level = r.level.map(|l| l.trim().to_ascii_uppercase());
    if let Some(l) = &level
        && l != "HIGH"
        && l != "STANDARD"
    {
        return bad_request("level is HIGH or STANDARD");
    }
    if r.throughput_mps == Some(Some(0)) {
        return bad_request("throughput_mps is at least 1 (null: no limit)");
    }
    let number = match number_for(&sim, r.phone_number_id.as_deref()) {
        Ok(n) => n,
        Err(e) => return bad_request(e),
    };
    let state = sim.set_throughput_of(number, level, r.is_on_biz_app, r.throughput_mps);
    crate::account::state_reply(number, &state)
}

#[derive(Deserialize)]
struct CategoryReq {
    category: String,
    #[serde(default)]
    effective_at: Option<i64>,
    #[serde(flatten)]
    account: Account,
}

pub(crate) async fn sim_template_category(
    sim: web::Data<Sim>,
    path: web::Path<(String, String)>,
    body: web::Bytes,
) -> HttpResponse {
    let r: CategoryReq = match control_json(&body) {
        Ok(r) => r,
        Err(e) => return bad_request(e),
    };
    let category = r.category.trim().to_ascii_uppercase();
    if !crate::templates::CATEGORIES.contains(&category.as_str()) {
        return bad_request("category is MARKETING, UTILITY or AUTHENTICATION");
    }
    let waba_id = match waba_for(
        &sim,
        r.account.waba_id.as_deref(),
        r.account.phone_number_id.as_deref(),
    ) {
        Ok(w) => w,
        Err(e) => return bad_request(e),
    };
    let (name, language) = path.into_inner();
    match sim.into_inner().recategorise_template_in(
        &waba_id,
        &name,
        &language,
        &category,
        r.effective_at,
    ) {
        Some(v) => HttpResponse::Ok().json(v),
        None => not_found(&name, &language),
    }
}

#[derive(Deserialize)]
struct QualityReq {
    new: String,
    #[serde(default)]
    previous: Option<String>,
    #[serde(flatten)]
    account: Account,
}

pub(crate) async fn sim_template_quality(
    sim: web::Data<Sim>,
    path: web::Path<(String, String)>,
    body: web::Bytes,
) -> HttpResponse {
    let r: QualityReq = match control_json(&body) {
        Ok(r) => r,
        Err(e) => return bad_request(e),
    };
    let waba_id = match waba_for(
        &sim,
        r.account.waba_id.as_deref(),
        r.account.phone_number_id.as_deref(),
    ) {
        Ok(w) => w,
        Err(e) => return bad_request(e),
    };
    let (name, language) = path.into_inner();
    let previous = r.previous.unwrap_or_else(|| "GREEN".to_owned());
    match sim.template_quality_in(
        &waba_id,
        &name,
        &language,
        &previous.to_ascii_uppercase(),
        &r.new.trim().to_ascii_uppercase(),
    ) {
        Some(v) => HttpResponse::Ok().json(v),
        None => not_found(&name, &language),
    }
}

fn not_found(name: &str, language: &str) -> HttpResponse {
    HttpResponse::NotFound().json(json!({ "error": format!("no template {name}/{language}") }))
}
