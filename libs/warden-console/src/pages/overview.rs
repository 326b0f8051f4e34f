//! `GET /`: the last 24 hours at a glance: the delivery funnel, sends and refusals per hour
//! (inline SVG charts with a table of the same numbers), refusals by code and by policy.
//! The counters refresh from `/live/overview` ([`super::live`]) when JavaScript runs.

use actix_web::{HttpResponse, web};
use chrono::{DateTime, Duration, Utc};
use minijinja::{Value, context};
use warden_core::reports::overview::{self, Overview};

use super::{Flash, failed, frame};
use crate::auth::Signed;
use crate::chart;
use crate::render::ser;
use crate::state::AppState;

/// The period every overview number covers.
pub fn since() -> DateTime<Utc> {
    Utc::now() - Duration::hours(24)
}

/// The funnel's stages: a key (the page's `data-stage`, the live JSON's), a label, the
/// number, and its share of the messages recorded (the bar's width).
pub fn stages(o: &Overview) -> Vec<(&'static str, &'static str, i64, i64)> {
    let f = &o.funnel;
    let top = f.recorded.max(1);
    [
        ("recorded", "Recorded", f.recorded),
        ("waiting", "Waiting", f.waiting),
        ("sent", "Sent", f.sent),
        ("delivered", "Delivered", f.delivered),
        ("read", "Read", f.read),
        ("failed", "Failed", f.failed),
    ]
    .into_iter()
    .map(|(key, label, n)| (key, label, n, (n * 100 / top).clamp(0, 100)))
    .collect()
}

pub async fn page(
    state: web::Data<AppState>,
    signed: Signed,
    flash: web::Query<Flash>,
) -> HttpResponse {
    let since = since();
    let pg = state.core.pg();
    let (o, hours) =
        match tokio::try_join!(overview::overview(pg, since), overview::hourly(pg, since)) {
            Ok(both) => both,
            Err(e) => return failed(&state, &e),
        };
    let stages = stages(&o);
    let funnel: Vec<_> = stages
        .iter()
        .map(|(key, label, n, pct)| context! { key => *key, label => *label, n => *n, pct => *pct })
        .collect();
    let funnel_svg = chart::funnel(
        "funnel-chart",
        &stages
            .iter()
            .map(|(_, label, n, _)| chart::Stage { label, n: *n })
            .collect::<Vec<_>>(),
    );
    let hours_rows: Vec<_> = hours
        .iter()
        .map(|h| {
            context! { hour => h.hour.format("%Y-%m-%d %H:00").to_string(), sends => h.sends, refusals => h.refusals }
        })
        .collect();
    state.templates.page(
        "overview.html",
        context! {
            ..frame(&signed.0, "overview", &flash),
            ..context! {
                o => ser(&o),
                funnel => funnel,
                funnel_svg => Value::from_safe_string(funnel_svg),
                hours_svg => Value::from_safe_string(chart::hourly("hours-chart", &hours)),
                hours => hours_rows,
                since => o.since.to_rfc3339(),
            }
        },
    )
}
