//! Control endpoints for the platform's newer limits (see `state/limits.rs`):
//!
//! - `POST /sim/throughput` `{"level": "HIGH"|"STANDARD", "is_on_biz_app": bool}`: the
//!   number's throughput; a move to HIGH sends `phone_number_quality_update`
//!   `THROUGHPUT_UPGRADE`.
//! - `POST /sim/templates/{name}/{language}/category` `{"category": "MARKETING",
//!   "effective_at": <unix s>?}`: a `template_category_update` (impending when
//!   `effective_at` is in the future, else completed).
//! - `POST /sim/templates/{name}/{language}/quality` `{"new": "YELLOW", "previous": "GREEN"?}`:
//!   a `message_template_quality_update`.

use actix_web::{HttpResponse, web};
use serde::Deserialize;
use serde_json::json;

use crate::reply::{bad_request, control_json};
use crate::state::Sim;

#[derive(Deserialize)]
struct ThroughputReq {
    #[serde(default)]
    level: Option<String>,
    #[serde(default)]
    is_on_biz_app: Option<bool>,
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
    HttpResponse::Ok().json(sim.set_throughput(level, r.is_on_biz_app))
}

#[derive(Deserialize)]
struct CategoryReq {
    category: String,
    #[serde(default)]
    effective_at: Option<i64>,
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
    let (name, language) = path.into_inner();
    match sim
        .into_inner()
        .recategorise_template(&name, &language, &category, r.effective_at)
    {
        Some(v) => HttpResponse::Ok().json(v),
        None => not_found(&name, &language),
    }
}

#[derive(Deserialize)]
struct QualityReq {
    new: String,
    #[serde(default)]
    previous: Option<String>,
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
    let (name, language) = path.into_inner();
    let previous = r.previous.unwrap_or_else(|| "GREEN".to_owned());
    match sim.template_quality(
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
