//! `GET /agents` (keys, scopes, guardrails, status) and
//! `POST /agents/{name}/{suspend|resume|revoke}`.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use minijinja::context;
use warden_core::agents::{self, AgentError, AgentStatus};

use super::{Flash, done, frame};
use crate::auth::{ActionForm, Signed};
use crate::state::AppState;

pub async fn list(
    state: web::Data<AppState>,
    signed: Signed,
    flash: web::Query<Flash>,
) -> HttpResponse {
    match agents::list(state.core.pg()).await {
        Ok(all) => {
            let rows: Vec<_> = all
                .iter()
                .map(|a| {
                    let g = &a.guardrails;
                    context! {
                        name => &a.name,
                        key_id => &a.key_id,
                        status => a.status.as_str(),
                        scopes => a.scopes.join(", "),
                        sends_per_minute => g.max_sends_per_minute,
                        marketing_per_day => g.max_marketing_per_day,
                        types => g.allowed_message_types.as_ref().map(|t| t.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ")),
                        senders => g.senders.as_ref().map(|s| s.join(", ")),
                        updated_at => a.updated_at.format("%Y-%m-%d %H:%M").to_string(),
                    }
                })
                .collect();
            state.templates.page(
                "agents.html",
                context! {
                    ..frame(&signed.0, "agents", &flash),
                    ..context! { agents => rows }
                },
            )
        }
        Err(e) => agent_error(&state, &e),
    }
}

fn agent_error(state: &AppState, e: &AgentError) -> HttpResponse {
    let status = match e {
        AgentError::NotFound(_) => StatusCode::NOT_FOUND,
        AgentError::Revoked(_) | AgentError::Exists(_) => StatusCode::CONFLICT,
        AgentError::Invalid(_) => StatusCode::BAD_REQUEST,
        AgentError::Core(_) => StatusCode::SERVICE_UNAVAILABLE,
    };
    state
        .templates
        .error(status, "Agent not changed", &e.to_string())
}

pub async fn act(
    state: web::Data<AppState>,
    signed: Signed,
    path: web::Path<(String, String)>,
    form: web::Form<ActionForm>,
) -> HttpResponse {
    let who = match signed.act(&state, &form.csrf_token) {
        Ok(a) => a,
        Err(res) => return res,
    };
    let (name, action) = path.into_inner();
    let to = match action.as_str() {
        "suspend" => AgentStatus::Suspended,
        "resume" => AgentStatus::Active,
        "revoke" => AgentStatus::Revoked,
        other => {
            return state.templates.error(
                StatusCode::NOT_FOUND,
                "No such action",
                &format!("`{other}` is not an action on an agent."),
            );
        }
    };
    match agents::set_status(state.core.pg(), &name, to, &who).await {
        Ok(a) => done(
            "/agents",
            &format!("Agent {} is now {}.", a.name, a.status.as_str()),
            false,
        ),
        Err(e) => agent_error(&state, &e),
    }
}
