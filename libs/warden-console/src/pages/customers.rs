//! `GET /customers?q=` (search by phone, BSUID or name), `GET /customers/{id}` (profile,
//! consent timeline from the audit log, tags, forget), `POST /customers/{id}/forget`.

use actix_web::{HttpResponse, web};
use minijinja::context;
use serde::Deserialize;
use warden_core::reports::{audit, customers};

use super::{Flash, actor, customer, done, failed, frame};
use crate::auth::{ActionForm, Signed};
use crate::render::encode;
use crate::render::ser;
use crate::state::AppState;

#[derive(Deserialize)]
pub struct Search {
    #[serde(default)]
    q: String,
}

pub async fn search(
    state: web::Data<AppState>,
    signed: Signed,
    flash: web::Query<Flash>,
    q: web::Query<Search>,
) -> HttpResponse {
    match customers::search(state.core.pg(), &q.q, 50).await {
        Ok(found) => state.templates.page(
            "customers.html",
            context! {
                ..frame(&signed.0, "customers", &flash),
                ..context! { q => &q.q, customers => ser(&found) }
            },
        ),
        Err(e) => failed(&state, &e),
    }
}

pub async fn page(
    state: web::Data<AppState>,
    signed: Signed,
    path: web::Path<String>,
    flash: web::Query<Flash>,
) -> HttpResponse {
    let phone = match customer(&state, &path).await {
        Ok(p) => p,
        Err(res) => return res,
    };
    let pg = state.core.pg();
    let read = async {
        let profile = customers::profile(pg, phone.digits()).await?;
        let timeline = audit::consent_timeline(pg, phone.digits()).await?;
        Ok::<_, warden_core::CoreError>((profile, timeline))
    };
    match read.await {
        Ok((profile, timeline)) => state.templates.page(
            "customer.html",
            context! {
                ..frame(&signed.0, "customers", &flash),
                ..context! {
                    key => phone.digits(),
                    profile => ser(&profile),
                    timeline => ser(&timeline),
                }
            },
        ),
        Err(e) => failed(&state, &e),
    }
}

/// `POST /customers/{id}/forget` (field `confirm`: the customer's key typed again).
pub async fn forget(
    state: web::Data<AppState>,
    signed: Signed,
    path: web::Path<String>,
    form: web::Form<ActionForm>,
) -> HttpResponse {
    let who = match signed.act(&state, &form.csrf_token) {
        Ok(a) => a,
        Err(res) => return res,
    };
    let phone = match customer(&state, &path).await {
        Ok(p) => p,
        Err(res) => return res,
    };
    let back = format!("/customers/{}", encode(phone.digits()));
    if form.confirm.trim() != phone.digits() {
        return done(
            &back,
            "Not forgotten: type the customer's number exactly as shown to confirm.",
            true,
        );
    }
    match warden_core::customers::privacy::forget(state.core.pg(), &phone, actor(&who)).await {
        Ok(f) => {
            state
                .core
                .hint([(phone.digits(), None)], warden_core::HintKind::Redacted)
                .await;
            done(
                &back,
                &format!(
                    "Forgotten: content of {} messages erased, profile cleared, number suppressed.",
                    f.messages_redacted
                ),
                false,
            )
        }
        Err(e) => failed(&state, &e.into()),
    }
}
