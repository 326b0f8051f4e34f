//! The pages (GET) and their actions (POST), one module per part of the console. Every
//! handler reads through a core use case, and every action writes through one as the
//! operator (`operator:NAME`), after [`crate::auth::Signed::act`].

pub mod agents;
pub mod audit;
pub mod campaigns;
pub mod conversations;
pub mod customers;
pub mod live;
pub mod overview;
pub mod policies;
pub mod templates;

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use actix_web::web;
use minijinja::{Value, context};
use serde::Deserialize;
use warden_core::CoreError;
use warden_core::operators::Session;
use warden_rules::phone::PhoneNumber;

use crate::render::{encode, see_other};
use crate::state::AppState;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/", web::get().to(overview::page))
        .route("/conversations", web::get().to(conversations::inbox))
        .route(
            "/conversations/{customer}",
            web::get().to(conversations::page),
        )
        .route(
            "/conversations/{customer}/reply",
            web::post().to(conversations::reply),
        )
        .route("/customers", web::get().to(customers::search))
        .route("/customers/{id}", web::get().to(customers::page))
        .route("/customers/{id}/forget", web::post().to(customers::forget))
        .route("/campaigns", web::get().to(campaigns::list))
        .route("/campaigns/{id}", web::get().to(campaigns::page))
        .route("/campaigns/{id}/{action}", web::post().to(campaigns::act))
        .route("/templates", web::get().to(templates::list))
        .route("/agents", web::get().to(agents::list))
        .route("/agents/{name}/{action}", web::post().to(agents::act))
        .route("/policies", web::get().to(policies::page))
        .route("/audit", web::get().to(audit::page))
        .route("/live/overview", web::get().to(live::overview_json))
        .route("/live/inbox", web::get().to(live::inbox_fragment));
    conversations::holder_routes(cfg);
}

/// What every page's frame shows: who is logged in, the token its forms carry, which part
/// of the console it is, and the outcome of the action that led here.
pub fn frame(s: &Session, nav: &str, flash: &Flash) -> Value {
    context! {
        me => context! { name => &s.operator, role => s.role.as_str(), may_act => s.role.may_act() },
        csrf_token => &s.csrf_token,
        nav => nav,
        flash => &flash.msg,
        flash_error => flash.error.is_some(),
    }
}

/// The outcome of an action, carried to the page it redirects to.
#[derive(Debug, Default, Deserialize)]
pub struct Flash {
    #[serde(default)]
    pub msg: Option<String>,
    #[serde(default)]
    pub error: Option<String>,
}

/// 303 to `to` with `msg` shown there (as an error when `error`).
pub fn done(to: &str, msg: &str, error: bool) -> HttpResponse {
    let sep = if to.contains('?') { '&' } else { '?' };
    see_other(&format!(
        "{to}{sep}msg={}{}",
        encode(msg),
        if error { "&error=1" } else { "" }
    ))
}

/// A core error as a page: 404, 400, 409 or 503.
pub fn failed(state: &AppState, e: &CoreError) -> HttpResponse {
    let status = match e {
        CoreError::NotFound(_) => StatusCode::NOT_FOUND,
        CoreError::InvalidArgument(_) => StatusCode::BAD_REQUEST,
        CoreError::Conflict(_) => StatusCode::CONFLICT,
        CoreError::Busy { .. } | CoreError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
    };
    state
        .templates
        .error(status, "Something went wrong", &e.to_string())
}

/// A customer named in a path or form (phone, BSUID or parent BSUID), resolved to the
/// customer's key. 400 when it is neither.
pub async fn customer(state: &AppState, raw: &str) -> Result<PhoneNumber, HttpResponse> {
    let id = warden_rules::bsuid::customer_key(raw).map_err(|e| {
        state.templates.error(
            StatusCode::BAD_REQUEST,
            "Not a customer",
            &format!("`{raw}` is not a phone number or a BSUID: {e}"),
        )
    })?;
    state
        .core
        .customer(&id)
        .await
        .map_err(|e| failed(state, &e))
}

/// The actor's `&'static str` (audit rows and message actors take one).
pub fn actor(actor: &str) -> &'static str {
    warden_core::agents::intern(actor)
}
