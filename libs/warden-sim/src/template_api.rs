//! The platform's template endpoints, per business account (`/{waba_id}/message_templates`:
//! a template created on one account is not seen on another), and the control endpoint
//! deciding a template.

use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use warden_platform::lenient;
use warden_platform::template::{CreateTemplateRequest, TemplateComponent, placeholders};

use crate::reply::{
    NodeId, bad_request, control_json, invalid, refusal, reject_unauthorized, reject_unless_waba,
    unknown_object, waba_for,
};
use crate::state::{Refusal, Sim};
use crate::templates::{
    CATEGORIES, Template, check_components, formats, name_problem, named_params,
};

/// The platform's cap on a template body.
const MAX_TEMPLATE_BODY: usize = 1024;

/// `POST /{version}/{waba_id}/message_templates`.
pub(crate) async fn create_template(
    sim: web::Data<Sim>,
    req: HttpRequest,
    path: web::Path<NodeId>,
    body: web::Bytes,
) -> HttpResponse {
    if let Some(resp) = reject_unauthorized(&sim, &req) {
        return resp;
    }
    let waba_id = path.into_inner().id;
    let Some(registry) = sim.registry(&waba_id) else {
        return unknown_object(&waba_id, "post");
    };
    if let Some(resp) = reject_unless_waba(&sim, &req, &waba_id) {
        return resp;
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
    if let Err(problem) = formats::check_create(&category, &create.components) {
        return invalid(problem);
    }
    // An authentication template's body is the platform's own.
    let preset = (category == "AUTHENTICATION"
        && formats::otp_button(&create.components).is_some())
    .then_some(formats::AUTH_BODY);
    let Some(text) = create
        .body_text()
        .or(preset)
        .filter(|t| !t.trim().is_empty())
    else {
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
    match check_components(&extra) {
        Ok(()) => {}
        // A FLOW button's field, named as the platform does for a value out of its rules.
        Err(crate::templates::ComponentError::Button(b)) => {
            return refusal(Refusal::new(400, 131009, b));
        }
        Err(problem) => return invalid(problem.to_string()),
    }
    let template = {
        let mut reg = registry.write().unwrap_or_else(|p| p.into_inner());
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
    tracing::info!(template = %template.name, language = %template.language, %waba_id, "template created (PENDING)");
    let sim: Arc<Sim> = sim.into_inner();
    sim.schedule_approval_in(waba_id, template.name.clone(), template.language.clone());
    HttpResponse::Ok().json(json!({
        "id": template.id,
        "status": template.status,
        "category": template.category,
    }))
}

/// `GET /{version}/{waba_id}/message_templates`: that account's templates only.
pub(crate) async fn list_templates(
    sim: web::Data<Sim>,
    req: HttpRequest,
    path: web::Path<NodeId>,
    query: web::Query<HashMap<String, String>>,
) -> HttpResponse {
    if let Some(resp) = reject_unauthorized(&sim, &req) {
        return resp;
    }
    let Some(registry) = sim.registry(&path.id) else {
        return unknown_object(&path.id, "get");
    };
    if let Some(resp) = reject_unless_waba(&sim, &req, &path.id) {
        return resp;
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
        let reg = registry.read().unwrap_or_else(|p| p.into_inner());
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

#[derive(Deserialize)]
struct DecisionReq {
    status: String,
    #[serde(default)]
    reason: Option<String>,
    /// The account whose template it is (default: the account of `phone_number_id`, else
    /// the first number's).
    #[serde(default, deserialize_with = "lenient::opt_string")]
    waba_id: Option<String>,
    #[serde(default, deserialize_with = "lenient::opt_string")]
    phone_number_id: Option<String>,
}

/// `POST /sim/templates/{name}/{language}/decision`.
pub(crate) async fn sim_decision(
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
    let waba_id = match waba_for(&sim, r.waba_id.as_deref(), r.phone_number_id.as_deref()) {
        Ok(w) => w,
        Err(e) => return bad_request(e),
    };
    let (name, language) = path.into_inner();
    match sim.decide_in(&waba_id, &name, &language, &status, r.reason) {
        Some(t) => HttpResponse::Ok().json(t.info()),
        None => HttpResponse::NotFound()
            .json(json!({ "error": format!("no template {name}/{language}") })),
    }
}
