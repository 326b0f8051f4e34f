//! `GET /`: the last 24 hours at a glance.

use actix_web::{HttpResponse, web};
use chrono::{Duration, Utc};
use minijinja::context;
use warden_core::reports::overview;

use super::{Flash, failed, frame};
use crate::auth::Signed;
use crate::render::ser;
use crate::state::AppState;

pub async fn page(
    state: web::Data<AppState>,
    signed: Signed,
    flash: web::Query<Flash>,
) -> HttpResponse {
    let since = Utc::now() - Duration::hours(24);
    match overview::overview(state.core.pg(), since).await {
        Ok(o) => {
            // Bars are drawn as widths relative to the largest number shown.
            let top = o.funnel.recorded.max(1);
            let pct = |n: i64| (n * 100 / top).clamp(0, 100);
            let funnel = vec![
                context! { label => "Recorded", n => o.funnel.recorded, pct => pct(o.funnel.recorded) },
                context! { label => "Waiting", n => o.funnel.waiting, pct => pct(o.funnel.waiting) },
                context! { label => "Sent", n => o.funnel.sent, pct => pct(o.funnel.sent) },
                context! { label => "Delivered", n => o.funnel.delivered, pct => pct(o.funnel.delivered) },
                context! { label => "Read", n => o.funnel.read, pct => pct(o.funnel.read) },
                context! { label => "Failed", n => o.funnel.failed, pct => pct(o.funnel.failed) },
            ];
            state.templates.page(
                "overview.html",
                context! {
                    ..frame(&signed.0, "overview", &flash),
                    ..context! { o => ser(&o), funnel => funnel, since => o.since.format("%Y-%m-%d %H:%M UTC").to_string() }
                },
            )
        }
        Err(e) => failed(&state, &e),
    }
}
