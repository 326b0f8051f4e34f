//! What every request shares: the core, the templates, the cookie settings.

use std::sync::Arc;

use actix_web::{HttpResponse, web};
use warden_core::Core;
use warden_service::admin;

use crate::render::Templates;

/// Cheap to clone (one per worker).
#[derive(Clone)]
pub struct AppState {
    pub core: Core,
    pub templates: Arc<Templates>,
    /// Mark cookies Secure (`CONSOLE_SECURE_COOKIES`).
    pub secure_cookies: bool,
    health: admin::HealthCheck,
}

impl AppState {
    pub fn new(core: Core) -> AppState {
        AppState {
            secure_cookies: core.settings().console.secure_cookies,
            health: admin::postgres_check(core.pg().clone()),
            templates: Arc::new(Templates::load()),
            core,
        }
    }

    /// The core acting as `actor` (an operator's `operator:NAME`).
    pub fn core_as(&self, actor: &str) -> Core {
        self.core.as_actor(warden_core::agents::intern(actor))
    }
}

/// `GET /health`: Postgres answers.
pub async fn health(state: web::Data<AppState>) -> HttpResponse {
    match (state.health)().await {
        Ok(()) => HttpResponse::Ok().content_type("text/plain").body("OK"),
        Err(reason) => HttpResponse::ServiceUnavailable()
            .content_type("text/plain")
            .body(reason.0),
    }
}
