//! `GET /templates`: every stored template, its status, category, quality and why it was
//! rejected.

use actix_web::{HttpResponse, web};
use chrono::Utc;
use minijinja::context;
use warden_core::templates::list::{self as templates, TemplateFilters};

use super::{Flash, failed, frame};
use crate::auth::Signed;
use crate::render::ser;
use crate::state::AppState;

pub async fn list(
    state: web::Data<AppState>,
    signed: Signed,
    flash: web::Query<Flash>,
) -> HttpResponse {
    match templates::list(&state.core, &TemplateFilters::default(), 500, 0).await {
        Ok(page) => {
            let now = Utc::now();
            let rows: Vec<_> = page
                .templates
                .iter()
                .map(|t| {
                    context! {
                        t => ser(&t.template),
                        category => t.effective_category(now),
                        upcoming => t.upcoming_category(now).map(|(c, at)| format!("{c} from {}", at.format("%Y-%m-%d"))),
                        quality => &t.quality_score,
                    }
                })
                .collect();
            state.templates.page(
                "templates.html",
                context! {
                    ..frame(&signed.0, "templates", &flash),
                    ..context! { templates => rows, total => page.total }
                },
            )
        }
        Err(e) => failed(&state, &e),
    }
}
