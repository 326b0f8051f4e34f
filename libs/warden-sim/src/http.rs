//! HTTP routes: the platform's paths under any `/vNN.0/` version prefix, and the sim's
//! control endpoints.

use crate::reply::{bad_request, control_json, refusal, reject_unauthorized};
use crate::state::{Accepted, Refusal, Sim};
use crate::templates::{CATEGORIES, Template, check_components, name_problem, named_params};
use actix_web::dev::Service;
use actix_web::http::header::CONTENT_TYPE;
use actix_web::{HttpRequest, HttpResponse, guard, web};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use warden_platform::lenient;
use warden_platform::message::{SendContact, SendRequest, SendResponse, SentMessage};
use warden_platform::template::{CreateTemplateRequest, TemplateComponent, placeholders};

/// The platform's own cap on a text body.
const MAX_TEXT_BODY: usize = 4096;
const MAX_TEMPLATE_BODY: usize = 1024;

fn version_segment(path: &str) -> &str {
    path.trim_start_matches('/').split('/').next().unwrap_or("")
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/health", web::get().to(health))
        .route("/metrics", web::get().to(metrics))
        .service(
            // Every version is served the same way (the sim models today's platform);
            // calls are counted per version so a test can see which one a client used.
            web::scope("/{api_version}")
                .guard(guard::fn_guard(|ctx| {
                    warden_settings::is_api_version(version_segment(ctx.head().uri.path()))
                }))
                .wrap_fn(|req, srv| {
                    if let Some(sim) = req.app_data::<web::Data<Sim>>() {
                        sim.count_version_call(version_segment(req.path()));
                    }
                    srv.call(req)
                })
                .route("/{id}/messages", web::post().to(send_message))
                .route("/{id}/message_templates", web::post().to(create_template))
                .route("/{id}/message_templates", web::get().to(list_templates))
                .route("/{id}/phone_numbers", web::get().to(phone_numbers))
                .route("/{id}/media", web::post().to(crate::media::upload))
                .route("/{id}", web::get().to(read_node)),
        )
        .service(
            web::scope("/sim")
                .route("/inbound", web::post().to(crate::listen::sim_inbound))
                .route(
                    "/templates/{name}/{language}/decision",
                    web::post().to(sim_decision),
                )
                .route("/faults", web::post().to(sim_fault))
                .route("/faults", web::delete().to(sim_clear_faults))
                .route("/stats", web::get().to(sim_stats))
                .route("/reset", web::post().to(sim_reset))
                .route("/webhooks", web::get().to(sim_webhooks))
                .route("/user_preferences", web::post().to(sim_user_preferences))
                .route("/quality", web::post().to(sim_quality))
                .route("/throughput", web::post().to(crate::limits::sim_throughput))
                .route(
                    "/templates/{name}/{language}/category",
                    web::post().to(crate::limits::sim_template_category),
                )
                .route(
                    "/templates/{name}/{language}/quality",
                    web::post().to(crate::limits::sim_template_quality),
                )
                .route("/media", web::post().to(crate::media::sim_store)),
        )
        .route(
            crate::media::DOWNLOAD_PATH,
            web::get().to(crate::media::download),
        )
        .default_service(web::to(not_found));
}

// ---------------------------------------------------------------- helpers

/// The `{id}` segment of a platform path (the scope's `{api_version}` is not needed here).
#[derive(Deserialize)]
struct NodeId {
    id: String,
}

fn invalid(details: impl Into<String>) -> HttpResponse {
    refusal(Refusal::new(400, 100, details))
}

fn unknown_object(id: &str, verb: &str) -> HttpResponse {
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

fn digits(s: &str) -> String {
    s.chars().filter(char::is_ascii_digit).collect()
}

fn ok() -> HttpResponse {
    HttpResponse::Ok().json(json!({ "ok": true }))
}

/// Keeps `id` plus the requested `fields` of a full object (all when none asked).
fn select_fields(full: Map<String, Value>, fields: Option<&String>) -> Value {
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

async fn health() -> HttpResponse {
    HttpResponse::Ok().content_type("text/plain").body("OK")
}

async fn not_found(req: HttpRequest) -> HttpResponse {
    let mut r = Refusal::new(
        404,
        100,
        format!("Unknown path components: {} {}", req.method(), req.path()),
    );
    r.body.error.message = "(#100) Unknown path components".to_owned();
    refusal(r)
}

// ---------------------------------------------------------------- messages

async fn send_message(
    sim: web::Data<Sim>,
    req: HttpRequest,
    path: web::Path<NodeId>,
    body: web::Bytes,
) -> HttpResponse {
    if let Some(resp) = reject_unauthorized(&sim, &req) {
        return resp;
    }
    if path.id != sim.config.phone_number_id {
        return unknown_object(&path.id, "post");
    }
    if let Some(delay) = sim.latency() {
        tokio::time::sleep(delay).await;
    }
    if let Some(resp) = crate::listen::receipt(&sim, &body) {
        return resp;
    }
    let send: SendRequest = match serde_json::from_slice(&body) {
        Ok(s) => s,
        Err(e) => return invalid(format!("Invalid JSON in request body: {e}")),
    };
    match handle_send(&sim, send) {
        Ok(resp) => HttpResponse::Ok().json(resp),
        Err(r) => refusal(r),
    }
}

fn handle_send(sim: &Sim, send: SendRequest) -> Result<SendResponse, Refusal> {
    if send.messaging_product != "whatsapp" {
        return Err(Refusal::new(
            400,
            100,
            "The parameter messaging_product is required and must be 'whatsapp'",
        ));
    }
    // `to` wins when both are given; else `recipient`, a BSUID or parent BSUID the
    // platform must know.
    let to_digits = digits(&send.to);
    let to_digits = match send.recipient.as_deref().map(str::trim) {
        _ if !to_digits.is_empty() => to_digits,
        Some(r) if !r.is_empty() => {
            if !crate::users::is_bsuid(r) {
                return Err(Refusal::new(
                    400,
                    100,
                    format!("Invalid parameter: recipient {r:?} is not a business-scoped user ID"),
                ));
            }
            match sim.users.get(r) {
                // A parent BSUID reaches the user's own BSUID on this number.
                Some(u) => u.user_id.unwrap_or_else(|| r.to_owned()),
                None => {
                    return Err(Refusal::new(
                        400,
                        131026,
                        format!(
                            "Message undeliverable: recipient {r} is not a WhatsApp user known to this business"
                        ),
                    ));
                }
            }
        }
        _ => return Err(Refusal::new(400, 100, "The parameter to is required")),
    };
    let kind = if send.kind.is_empty() {
        "text"
    } else {
        send.kind.as_str()
    };
    let (category, billable): (&str, bool) = match kind {
        "text" => {
            let body = send.text.as_ref().map(|t| t.body.as_str()).unwrap_or("");
            if body.is_empty() {
                return Err(Refusal::new(
                    400,
                    100,
                    "The parameter text['body'] is required",
                ));
            }
            if body.chars().count() > MAX_TEXT_BODY {
                return Err(Refusal::new(
                    400,
                    100,
                    format!("text['body'] is longer than {MAX_TEXT_BODY} characters"),
                ));
            }
            ("service", false)
        }
        "template" => {
            let Some(tm) = send.template.as_ref() else {
                return Err(Refusal::new(400, 100, "The parameter template is required"));
            };
            if tm.name.is_empty() || tm.language.code.is_empty() {
                return Err(Refusal::new(
                    400,
                    100,
                    "template['name'] and template['language']['code'] are required",
                ));
            }
            let templates = sim.templates.read().unwrap_or_else(|p| p.into_inner());
            let Some(t) = templates.get(&tm.name, &tm.language.code) else {
                return Err(Refusal::new(
                    404,
                    132001,
                    format!(
                        "template name ({}) does not exist in {}",
                        tm.name, tm.language.code
                    ),
                ));
            };
            match t.status.as_str() {
                "APPROVED" => {}
                "PAUSED" => {
                    return Err(Refusal::new(
                        400,
                        132015,
                        format!("template {} is paused", t.name),
                    ));
                }
                "DISABLED" => {
                    return Err(Refusal::new(
                        400,
                        132016,
                        format!("template {} is disabled", t.name),
                    ));
                }
                other => {
                    return Err(Refusal::new(
                        404,
                        132001,
                        format!(
                            "template name ({}) does not exist in {} (status {other})",
                            t.name, t.language
                        ),
                    ));
                }
            }
            if let Err((code, details)) = t.check_send(tm) {
                return Err(Refusal::new(400, code, details));
            }
            (t.pricing_category(), true)
        }
        // Every other kind is checked like the platform does (131051, 131009, 131052).
        other => {
            crate::bodies::check(sim, other, &send.other)?;
            ("service", false)
        }
    };
    let outcome = sim.accept_send(Accepted {
        to_digits: to_digits.clone(),
        callback: send.biz_opaque_callback_data,
        pricing_category: category,
        billable,
        template: send
            .template
            .as_ref()
            .and_then(|t| serde_json::to_value(t).ok()),
        kind,
    })?;
    Ok(SendResponse {
        messaging_product: "whatsapp".to_owned(),
        contacts: vec![SendContact {
            input: if send.to.is_empty() {
                send.recipient.clone().unwrap_or_default()
            } else {
                send.to.clone()
            },
            wa_id: to_digits,
        }],
        messages: vec![SentMessage {
            id: outcome.wamid,
            message_status: Some("accepted".to_owned()),
        }],
    })
}

// ---------------------------------------------------------------- templates

async fn create_template(
    sim: web::Data<Sim>,
    req: HttpRequest,
    path: web::Path<NodeId>,
    body: web::Bytes,
) -> HttpResponse {
    if let Some(resp) = reject_unauthorized(&sim, &req) {
        return resp;
    }
    if path.id != sim.config.waba_id {
        return unknown_object(&path.id, "post");
    }
    let create: CreateTemplateRequest = match serde_json::from_slice(&body) {
        Ok(c) => c,
        Err(e) => return invalid(format!("Invalid JSON in request body: {e}")),
    };
    if let Some(problem) = name_problem(&create.name) {
        return invalid(format!("name: {problem}"));
    }
    if create.language.trim().is_empty() {
        return invalid("The parameter language is required");
    }
    let category = create.category.to_ascii_uppercase();
    if !CATEGORIES.contains(&category.as_str()) {
        return invalid(format!(
            "category must be one of MARKETING, UTILITY, AUTHENTICATION; got {:?}",
            create.category
        ));
    }
    let Some(text) = create.body_text().filter(|t| !t.trim().is_empty()) else {
        return invalid("components must hold a BODY component with text");
    };
    if text.chars().count() > MAX_TEMPLATE_BODY {
        return invalid(format!(
            "BODY text is longer than {MAX_TEMPLATE_BODY} characters"
        ));
    }
    let named = create
        .parameter_format
        .as_deref()
        .is_some_and(|f| f.eq_ignore_ascii_case("named"));
    let params = if named {
        named_params(text).len()
    } else {
        match placeholders(text) {
            Ok(p) => p.len(),
            Err(e) => return invalid(format!("BODY text: {e}")),
        }
    };
    let extra: Vec<TemplateComponent> = create
        .components
        .iter()
        .filter(|c| !c.kind.eq_ignore_ascii_case("body"))
        .cloned()
        .collect();
    if let Err(problem) = check_components(&extra) {
        return invalid(problem.to_string());
    }
    let template = {
        let mut reg = sim.templates.write().unwrap_or_else(|p| p.into_inner());
        if reg.contains(&create.name, &create.language) {
            drop(reg);
            let mut r = Refusal::new(
                400,
                100,
                format!(
                    "Message template \"{}\" already exists in {}",
                    create.name, create.language
                ),
            )
            .with_subcode(2388024);
            r.body.error.message = "(#100) Content in this language already exists".to_owned();
            return refusal(r);
        }
        let t = Template {
            id: sim.next_template_id(),
            name: create.name.clone(),
            language: create.language.clone(),
            category: category.clone(),
            status: "PENDING".to_owned(),
            body: text.to_owned(),
            params,
            reason: None,
            components: extra,
            named: named.then(|| named_params(text)),
        };
        reg.insert(t.clone());
        t
    };
    tracing::info!(template = %template.name, language = %template.language, "template created (PENDING)");
    let sim: Arc<Sim> = sim.into_inner();
    sim.schedule_approval(template.name.clone(), template.language.clone());
    HttpResponse::Ok().json(json!({
        "id": template.id,
        "status": template.status,
        "category": template.category,
    }))
}

async fn list_templates(
    sim: web::Data<Sim>,
    req: HttpRequest,
    path: web::Path<NodeId>,
    query: web::Query<HashMap<String, String>>,
) -> HttpResponse {
    if let Some(resp) = reject_unauthorized(&sim, &req) {
        return resp;
    }
    if path.id != sim.config.waba_id {
        return unknown_object(&path.id, "get");
    }
    let q = query.into_inner();
    let matches = |t: &&Template| {
        q.get("name").is_none_or(|n| t.name == *n)
            && q.get("language").is_none_or(|l| t.language == *l)
            && q.get("status")
                .is_none_or(|s| t.status.eq_ignore_ascii_case(s))
            && q.get("category")
                .is_none_or(|c| t.category.eq_ignore_ascii_case(c))
    };
    let limit = q
        .get("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .unwrap_or(25)
        .clamp(1, 1000);
    let start = q
        .get("after")
        .and_then(|a| a.parse::<usize>().ok())
        .unwrap_or(0);
    let (page, total): (Vec<Value>, usize) = {
        let reg = sim.templates.read().unwrap_or_else(|p| p.into_inner());
        let all: Vec<&Template> = reg.sorted().into_iter().filter(matches).collect();
        let page = all
            .iter()
            .skip(start)
            .take(limit)
            .map(|t| serde_json::to_value(t.info()).unwrap_or(Value::Null))
            .collect();
        (page, all.len())
    };
    let end = (start + page.len()).min(total);
    let mut paging =
        json!({ "cursors": { "before": start.to_string(), "after": end.to_string() } });
    if end < total {
        let conn = req.connection_info();
        if let Ok(mut next) = reqwest::Url::parse(&format!(
            "{}://{}{}",
            conn.scheme(),
            conn.host(),
            req.path()
        )) {
            {
                let mut pairs = next.query_pairs_mut();
                for (k, v) in q.iter().filter(|(k, _)| k.as_str() != "after") {
                    pairs.append_pair(k, v);
                }
                pairs.append_pair("after", &end.to_string());
            }
            paging["next"] = Value::String(next.to_string());
        }
    }
    HttpResponse::Ok().json(json!({ "data": page, "paging": paging }))
}

// ---------------------------------------------------------------- account

fn phone_object(sim: &Sim) -> Map<String, Value> {
    let p = sim.phone();
    let v = json!({
        "id": sim.config.phone_number_id,
        "display_phone_number": sim.config.display_phone_number,
        "verified_name": "Warden Sim",
        "quality_rating": p.quality_rating,
        "messaging_limit_tier": p.messaging_limit_tier,
        "throughput": { "level": p.throughput_level },
        "is_on_biz_app": p.is_on_biz_app,
        "code_verification_status": "VERIFIED",
        "name_status": "APPROVED",
        "platform_type": "CLOUD_API",
        "status": "CONNECTED",
    });
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

async fn phone_numbers(
    sim: web::Data<Sim>,
    req: HttpRequest,
    path: web::Path<NodeId>,
    query: web::Query<HashMap<String, String>>,
) -> HttpResponse {
    if let Some(resp) = reject_unauthorized(&sim, &req) {
        return resp;
    }
    if path.id != sim.config.waba_id {
        return unknown_object(&path.id, "get");
    }
    let phone = select_fields(phone_object(&sim), query.get("fields"));
    HttpResponse::Ok().json(json!({
        "data": [phone],
        "paging": { "cursors": { "before": "0", "after": "1" } }
    }))
}

async fn read_node(
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
    if id == sim.config.phone_number_id {
        return HttpResponse::Ok().json(select_fields(phone_object(&sim), fields));
    }
    if id == sim.config.waba_id {
        let account = json!({
            "id": sim.config.waba_id,
            "name": "Warden Sim Business",
            "currency": "USD",
            "timezone_id": "1",
            "message_template_namespace": "warden_sim_namespace",
            "account_review_status": "APPROVED",
        });
        let Value::Object(m) = account else {
            unreachable!("json! object")
        };
        return HttpResponse::Ok().json(select_fields(m, fields));
    }
    unknown_object(&id, "get")
}

// ---------------------------------------------------------------- control

#[derive(Deserialize)]
struct DecisionReq {
    status: String,
    #[serde(default)]
    reason: Option<String>,
}

async fn sim_decision(
    sim: web::Data<Sim>,
    path: web::Path<(String, String)>,
    body: web::Bytes,
) -> HttpResponse {
    let r: DecisionReq = match control_json(&body) {
        Ok(r) => r,
        Err(e) => return bad_request(e),
    };
    let status = r.status.trim().to_ascii_uppercase();
    if status.is_empty() {
        return bad_request("status is required (APPROVED, REJECTED, PAUSED, DISABLED, ...)");
    }
    let (name, language) = path.into_inner();
    match sim.decide(&name, &language, &status, r.reason) {
        Some(t) => HttpResponse::Ok().json(t.info()),
        None => HttpResponse::NotFound()
            .json(json!({ "error": format!("no template {name}/{language}") })),
    }
}

#[derive(Deserialize)]
struct FaultReq {
    #[serde(default, deserialize_with = "lenient::opt_string")]
    recipient: Option<String>,
    #[serde(default, deserialize_with = "lenient::opt_int")]
    code: Option<i64>,
    #[serde(default)]
    http_status: Option<u16>,
    #[serde(default)]
    times: Option<u64>,
    #[serde(default)]
    latency_ms: Option<u64>,
    #[serde(default)]
    details: Option<String>,
}

async fn sim_fault(sim: web::Data<Sim>, body: web::Bytes) -> HttpResponse {
    let r: FaultReq = match control_json(&body) {
        Ok(r) => r,
        Err(e) => return bad_request(e),
    };
    if r.code.is_none() && r.latency_ms.is_none() {
        return bad_request("give either code (with recipient, http_status, times) or latency_ms");
    }
    if let Some(ms) = r.latency_ms {
        sim.set_latency_ms(ms);
    }
    if let Some(code) = r.code {
        let http_status = r.http_status.unwrap_or(400);
        if !(200..=599).contains(&http_status) {
            return bad_request("http_status must be between 200 and 599");
        }
        let recipient = match r.recipient.as_deref().map(str::trim) {
            None | Some("") | Some("*") => crate::state::ANY_RECIPIENT.to_owned(),
            Some(who) => {
                let d = digits(who);
                if d.is_empty() {
                    return bad_request("recipient must hold a phone number (or be \"*\")");
                }
                d
            }
        };
        let times = r.times.unwrap_or(1);
        tracing::info!(%recipient, code, http_status, times, "fault armed");
        sim.set_fault(recipient, code, http_status, times, r.details);
    }
    ok()
}

async fn sim_clear_faults(sim: web::Data<Sim>) -> HttpResponse {
    sim.clear_faults();
    ok()
}

async fn sim_stats(sim: web::Data<Sim>) -> HttpResponse {
    HttpResponse::Ok().json(sim.stats())
}

async fn sim_reset(sim: web::Data<Sim>) -> HttpResponse {
    sim.reset();
    ok()
}

async fn sim_webhooks(sim: web::Data<Sim>) -> HttpResponse {
    HttpResponse::Ok().json(sim.webhook_stats())
}

#[derive(Deserialize)]
struct PreferenceReq {
    #[serde(alias = "from", deserialize_with = "lenient::string")]
    wa_id: String,
    value: String,
    #[serde(default, deserialize_with = "lenient::opt_int")]
    timestamp: Option<i64>,
}

async fn sim_user_preferences(sim: web::Data<Sim>, body: web::Bytes) -> HttpResponse {
    let r: PreferenceReq = match control_json(&body) {
        Ok(r) => r,
        Err(e) => return bad_request(e),
    };
    let value = r.value.trim().to_ascii_lowercase();
    if value != "stop" && value != "resume" {
        return bad_request("value must be stop or resume");
    }
    let wa_id = digits(&r.wa_id);
    if wa_id.is_empty() {
        return bad_request("wa_id must hold a phone number");
    }
    let queued = sim.user_preference(wa_id, value, r.timestamp);
    HttpResponse::Ok().json(json!({ "ok": true, "webhook_queued": queued }))
}

#[derive(Deserialize)]
struct QualityReq {
    #[serde(default)]
    quality_rating: Option<String>,
    #[serde(default, alias = "current_limit")]
    messaging_limit_tier: Option<String>,
    #[serde(default)]
    event: Option<String>,
}

async fn sim_quality(sim: web::Data<Sim>, body: web::Bytes) -> HttpResponse {
    let r: QualityReq = match control_json(&body) {
        Ok(r) => r,
        Err(e) => return bad_request(e),
    };
    let up = |s: Option<String>| s.map(|v| v.trim().to_ascii_uppercase());
    let state = sim.set_quality(
        up(r.quality_rating),
        up(r.messaging_limit_tier),
        up(r.event),
    );
    HttpResponse::Ok().json(state)
}

async fn metrics(sim: web::Data<Sim>) -> HttpResponse {
    let s = sim.stats_counts();
    let w = sim.webhook_stats();
    let body = format!(
        "# TYPE sim_sends_total counter\nsim_sends_total {}\n\
         # TYPE sim_duplicates_total counter\nsim_duplicates_total {}\n\
         # TYPE sim_webhook_changes_enqueued_total counter\nsim_webhook_changes_enqueued_total {}\n\
         # TYPE sim_webhook_changes_delivered_total counter\nsim_webhook_changes_delivered_total {}\n\
         # TYPE sim_webhooks_dropped_total counter\nsim_webhooks_dropped_total {}\n\
         # TYPE sim_webhook_posts_total counter\nsim_webhook_posts_total {}\n\
         # TYPE sim_webhook_failed_posts_total counter\nsim_webhook_failed_posts_total {}\n\
         # TYPE sim_webhook_queue_depth gauge\nsim_webhook_queue_depth {}\n",
        s.0, s.1, w.enqueued, w.delivered, w.webhooks_dropped, w.posts, w.failed_posts, w.queued
    );
    HttpResponse::Ok()
        .insert_header((CONTENT_TYPE, "text/plain; version=0.0.4"))
        .body(body)
}
