//! HTTP routes: the platform's paths under any `/vNN.0/` version prefix, and the sim's
//! control endpoints. Sends are answered here; templates are in `crate::template_api`,
//! account reads in `crate::account`.

use crate::account::{phone_numbers, read_node, sim_quality};
use crate::marketing::Endpoint;
use crate::reply::{
    NodeId, bad_request, control_json, invalid, number_for, refusal, reject_unauthorized,
    reject_unless_number, unknown_object,
};
use crate::state::{Accepted, Number, Refusal, Sim};
use crate::template_api::{create_template, list_templates, sim_decision};
use actix_web::dev::Service;
use actix_web::http::header::CONTENT_TYPE;
use actix_web::{HttpRequest, HttpResponse, guard, web};
use serde::Deserialize;
use serde_json::json;
use warden_platform::lenient;
use warden_platform::message::{SendContact, SendRequest, SendResponse, SentMessage};

/// The platform's own cap on a text body.
const MAX_TEXT_BODY: usize = 4096;

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
                .route(
                    "/{id}/marketing_messages",
                    web::post().to(send_marketing_message),
                )
                .route("/{id}/message_templates", web::post().to(create_template))
                .route("/{id}/message_templates", web::get().to(list_templates))
                .route("/{id}/phone_numbers", web::get().to(phone_numbers))
                .route("/{id}/flows", web::get().to(crate::flows::list_flows))
                .route("/{id}/media", web::post().to(crate::media::upload))
                .route(
                    "/{id}/thread_control",
                    web::post().to(crate::routing::thread_control),
                )
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
                .route("/media", web::post().to(crate::media::sim_store))
                .route("/echo", web::post().to(crate::routing::sim_echo))
                .route("/flows", web::post().to(crate::flows::sim_flows))
                .route(
                    "/flow_response",
                    web::post().to(crate::flows::sim_flow_response),
                )
                .route("/handover", web::post().to(crate::routing::sim_handover))
                .route("/standby", web::post().to(crate::routing::sim_standby))
                .route("/order", web::post().to(crate::commerce::sim_order))
                .route("/enquiry", web::post().to(crate::commerce::sim_enquiry))
                .route(
                    "/call_permission",
                    web::post().to(crate::calls::sim_call_permission),
                )
                .route(
                    "/thread_control",
                    web::post().to(crate::routing::sim_thread_control),
                )
                .route(
                    "/thread_control",
                    web::get().to(crate::routing::sim_thread_control_calls),
                ),
        )
        .route(
            crate::media::DOWNLOAD_PATH,
            web::get().to(crate::media::download),
        )
        .default_service(web::to(not_found));
}

// ---------------------------------------------------------------- helpers

fn digits(s: &str) -> String {
    s.chars().filter(char::is_ascii_digit).collect()
}

fn ok() -> HttpResponse {
    HttpResponse::Ok().json(json!({ "ok": true }))
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
    serve_send(sim, req, path, body, Endpoint::Messages).await
}

/// The Marketing Messages API (`POST /{phone_number_id}/marketing_messages`): a marketing
/// template, answered like `/messages` ([`crate::marketing`]).
async fn send_marketing_message(
    sim: web::Data<Sim>,
    req: HttpRequest,
    path: web::Path<NodeId>,
    body: web::Bytes,
) -> HttpResponse {
    serve_send(sim, req, path, body, Endpoint::Marketing).await
}

/// A send at `endpoint`: the same checks, limits and faults at either endpoint.
async fn serve_send(
    sim: web::Data<Sim>,
    req: HttpRequest,
    path: web::Path<NodeId>,
    body: web::Bytes,
    endpoint: Endpoint,
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
    if let Some(delay) = sim.latency() {
        tokio::time::sleep(delay).await;
    }
    if endpoint == Endpoint::Messages
        && let Some(resp) = crate::listen::receipt(&sim, &body)
    {
        return resp;
    }
    let send: SendRequest = match serde_json::from_slice(&body) {
        Ok(s) => s,
        Err(e) => return invalid(format!("Invalid JSON in request body: {e}")),
    };
    match handle_send(&sim, number, send, endpoint) {
        Ok(resp) => HttpResponse::Ok().json(resp),
        Err(r) => refusal(r),
    }
}

/// One send as the platform answers it: the recipient, then the body's own checks, then
/// the number's limits and faults ([`Sim::accept_send`]), in the platform's order.
fn handle_send(
    sim: &Sim,
    number: &Number,
    send: SendRequest,
    endpoint: Endpoint,
) -> Result<SendResponse, Refusal> {
    if send.messaging_product != "whatsapp" {
        return Err(Refusal::new(
            400,
            100,
            "The parameter messaging_product is required and must be 'whatsapp'",
        ));
    }
    let to_digits = recipient_digits(sim, &send)?;
    let kind = if send.kind.is_empty() {
        "text"
    } else {
        send.kind.as_str()
    };
    let (category, billable): (&str, bool) = match kind {
        "text" => {
            check_text_body(&send)?;
            ("service", false)
        }
        "template" => (template_category(sim, number, &send)?, true),
        // Every other kind is checked like the platform does (131051, 131009, 131052).
        other => {
            crate::bodies::check(sim, other, &send.other)?;
            ("service", false)
        }
    };
    // The Marketing Messages API sends marketing templates only, priced as marketing_lite.
    let category = crate::marketing::check(endpoint, &send, category)?;
    let outcome = sim.accept_send(Accepted {
        number,
        to_digits: to_digits.clone(),
        callback: send.biz_opaque_callback_data,
        pricing_category: category,
        billable,
        template: send
            .template
            .as_ref()
            .and_then(|t| serde_json::to_value(t).ok()),
        kind,
        body: match kind {
            "text" | "template" => None,
            other => send.other.get(other).cloned(),
        },
        endpoint: endpoint.as_str(),
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

/// Whom a send goes to: `to` wins when both are given; else `recipient`, a BSUID or parent
/// BSUID the platform must know.
fn recipient_digits(sim: &Sim, send: &SendRequest) -> Result<String, Refusal> {
    let to_digits = digits(&send.to);
    match send.recipient.as_deref().map(str::trim) {
        _ if !to_digits.is_empty() => Ok(to_digits),
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
                Some(u) => Ok(u.user_id.unwrap_or_else(|| r.to_owned())),
                None => Err(Refusal::new(
                    400,
                    131026,
                    format!(
                        "Message undeliverable: recipient {r} is not a WhatsApp user known to this business"
                    ),
                )),
            }
        }
        _ => Err(Refusal::new(400, 100, "The parameter to is required")),
    }
}

/// A text send has a body of 1 to [`MAX_TEXT_BODY`] characters.
fn check_text_body(send: &SendRequest) -> Result<(), Refusal> {
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
    Ok(())
}

/// A template send names an APPROVED template of the sending number's account and fills
/// it as the template asks; its pricing category.
fn template_category(
    sim: &Sim,
    number: &Number,
    send: &SendRequest,
) -> Result<&'static str, Refusal> {
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
    // Only the templates of the sending number's account.
    let templates = sim
        .registry(number.waba_id())
        .unwrap_or(&sim.templates)
        .read()
        .unwrap_or_else(|p| p.into_inner());
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
    Ok(t.pricing_category())
}

// ---------------------------------------------------------------- control

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
    /// The number the customer wrote to (default: the first).
    #[serde(default, deserialize_with = "lenient::opt_string")]
    phone_number_id: Option<String>,
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
    let number = match number_for(&sim, r.phone_number_id.as_deref()) {
        Ok(n) => n,
        Err(e) => return bad_request(e),
    };
    let queued = sim.user_preference_to(number, wa_id, value, r.timestamp);
    HttpResponse::Ok().json(json!({ "ok": true, "webhook_queued": queued }))
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
