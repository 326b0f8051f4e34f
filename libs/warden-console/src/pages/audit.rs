//! `GET /audit?actor=&action=&customer=`: the audit log, newest first.

use actix_web::{HttpResponse, web};
use minijinja::context;
use serde::Deserialize;
use warden_core::reports::audit::{self, AuditFilter};

use super::{Flash, failed, frame};
use crate::auth::Signed;
use crate::state::AppState;

const PAGE: i64 = 100;

#[derive(Deserialize)]
pub struct Filter {
    #[serde(default)]
    actor: String,
    #[serde(default)]
    action: String,
    #[serde(default)]
    customer: String,
    #[serde(default)]
    before: Option<i64>,
}

fn given(s: &str) -> Option<String> {
    Some(s.trim().to_string()).filter(|s| !s.is_empty())
}

pub async fn page(
    state: web::Data<AppState>,
    signed: Signed,
    flash: web::Query<Flash>,
    f: web::Query<Filter>,
) -> HttpResponse {
    // A customer given as a phone or BSUID is looked for under its key.
    let customer = match given(&f.customer) {
        Some(c) => match warden_rules::bsuid::customer_key(&c) {
            Ok(id) => match state.core.customer(&id).await {
                Ok(key) => Some(key.digits().to_string()),
                Err(_) => Some(c),
            },
            Err(_) => Some(c),
        },
        None => None,
    };
    let filter = AuditFilter {
        actor: given(&f.actor),
        action: given(&f.action),
        customer,
        before_id: f.before,
    };
    match audit::search(&state.core, &filter, PAGE).await {
        Ok(rows) => {
            let next = (rows.len() as i64 == PAGE)
                .then(|| rows.last().map(|r| r.id))
                .flatten();
            let rows: Vec<_> = rows
                .iter()
                .map(|r| {
                    context! {
                        at => r.occurred_at.format("%Y-%m-%d %H:%M:%S").to_string(),
                        actor => &r.actor,
                        action => &r.action,
                        entity_type => &r.entity_type,
                        entity_id => &r.entity_id,
                        details => r.details.to_string(),
                        business => &r.business,
                    }
                })
                .collect();
            state.templates.page(
                "audit.html",
                context! {
                    ..frame(&signed.0, "audit", &flash),
                    ..context! {
                        rows => rows,
                        actor => &f.actor,
                        action => &f.action,
                        customer => &f.customer,
                        next => next,
                    }
                },
            )
        }
        Err(e) => failed(&state, &e),
    }
}
