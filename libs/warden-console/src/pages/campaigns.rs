//! `GET /campaigns`, `GET /campaigns/{id}` (counters, refusals by code, failures by error
//! code), and `POST /campaigns/{id}/{approve|reject|pause|resume|cancel}` (`reject` takes
//! `reason`, which the agent reads in get_campaign's `rejection_reason`).

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use minijinja::context;
use uuid::Uuid;
use warden_core::campaigns::{self, CampaignError};
use warden_core::reports;

use super::{Flash, actor, done, failed, frame};
use crate::auth::{ActionForm, Signed};
use crate::render::ser;
use crate::state::AppState;

pub async fn list(
    state: web::Data<AppState>,
    signed: Signed,
    flash: web::Query<Flash>,
) -> HttpResponse {
    match reports::campaigns::list(state.core.pg(), 100).await {
        Ok(all) => state.templates.page(
            "campaigns.html",
            context! {
                ..frame(&signed.0, "campaigns", &flash),
                ..context! { campaigns => ser(&all) }
            },
        ),
        Err(e) => failed(&state, &e),
    }
}

fn not_found(state: &AppState, id: &str) -> HttpResponse {
    state.templates.error(
        StatusCode::NOT_FOUND,
        "No such campaign",
        &format!("There is no campaign with id {id}."),
    )
}

fn campaign_error(state: &AppState, e: &CampaignError) -> HttpResponse {
    let status = match e {
        CampaignError::NotFound(_) => StatusCode::NOT_FOUND,
        CampaignError::Terminal { .. } | CampaignError::InvalidTransition { .. } => {
            StatusCode::CONFLICT
        }
        CampaignError::Busy(..) | CampaignError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
    };
    state
        .templates
        .error(status, "Campaign not changed", &e.to_string())
}

pub async fn page(
    state: web::Data<AppState>,
    signed: Signed,
    path: web::Path<String>,
    flash: web::Query<Flash>,
) -> HttpResponse {
    let Ok(id) = path.parse::<Uuid>() else {
        return not_found(&state, &path);
    };
    let view = match campaigns::get(state.core.pg(), id).await {
        Ok(v) => v,
        Err(e) => return campaign_error(&state, &e),
    };
    let outcomes = match reports::campaigns::outcomes(state.core.pg(), id).await {
        Ok(o) => o,
        Err(e) => return failed(&state, &e),
    };
    let c = &view.campaign;
    state.templates.page(
        "campaign.html",
        context! {
            ..frame(&signed.0, "campaigns", &flash),
            ..context! {
                c => ser(c),
                pending => view.pending_count,
                recipients => view.recipients(),
                sender => &view.sender,
                outcomes => ser(&outcomes),
            }
        },
    )
}

/// `POST /campaigns/{id}/{action}`: approve, reject (`reason` required), pause, resume,
/// cancel (`reason` optional).
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
    let (id, action) = path.into_inner();
    let Ok(id) = id.parse::<Uuid>() else {
        return not_found(&state, &id);
    };
    let pg = state.core.pg();
    let actor = actor(&who);
    let reason = Some(form.reason.trim()).filter(|r| !r.is_empty());
    let moved = match action.as_str() {
        "approve" => campaigns::approve(pg, id, actor).await,
        "reject" => match reason {
            Some(r) => campaigns::reject(pg, id, r, actor).await,
            None => {
                return done(
                    &format!("/campaigns/{id}"),
                    "Not rejected: say why (the agent reads the reason).",
                    true,
                );
            }
        },
        "pause" => campaigns::pause(pg, id, actor).await,
        "resume" => campaigns::resume(pg, id, actor).await,
        "cancel" => campaigns::cancel(pg, id, reason, actor).await,
        other => {
            return state.templates.error(
                StatusCode::NOT_FOUND,
                "No such action",
                &format!("`{other}` is not an action on a campaign."),
            );
        }
    };
    match moved {
        Ok(m) => done(
            &format!("/campaigns/{id}"),
            &format!(
                "Campaign {} (it was {}).",
                match action.as_str() {
                    "approve" => "approved",
                    "reject" => "rejected",
                    "pause" => "paused",
                    "resume" => "resumed",
                    _ => "cancelled",
                },
                m.before.status
            ),
            false,
        ),
        Err(e) => campaign_error(&state, &e),
    }
}
