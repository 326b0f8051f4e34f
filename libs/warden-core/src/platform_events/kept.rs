//! The platform's webhook events as Warden keeps them: each applied once (its key in
//! `webhook_events`), phone-number quality updates stored as they came, and how far
//! status webhooks have got (`webhook_progress`, which the dispatcher's unknown-outcome
//! rule reads).

use chrono::{DateTime, Utc};
use diesel::QueryResult;
use diesel::sql_types::{Text, Timestamptz};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use warden_store::PgPool;
use warden_store::error::DbError;

use crate::sql::{Bind, Stmt};

/// Record event keys (`(key, kind)`, one statement, any number of them); returns the keys
/// that were new — only those events are applied. Two transactions handed the same key
/// block on its unique index until the first commits; the second then skips it, so give
/// keys sorted and overlapping batches take those locks in one order. An event set aside
/// as unusable is recorded with kind `failed:<kind>`, so replays never try it again.
pub async fn claim_keys(
    c: &mut AsyncPgConnection,
    keys: &[(&str, &str)],
) -> QueryResult<Vec<String>> {
    let (k, kinds): (Vec<&str>, Vec<&str>) = keys.iter().copied().unzip();
    Stmt::<Text>::new(
        &[
            "INSERT INTO webhook_events (event_key, kind) SELECT * FROM unnest(",
            "::text[], ",
            "::text[]) ON CONFLICT (event_key) DO NOTHING RETURNING event_key",
        ],
        vec![Bind::Texts(k), Bind::Texts(kinds)],
    )
    .load(c)
    .await
}

/// The `event` a `business_capability_update` is stored under (its `current_limit` is
/// `max_daily_conversations_per_business`).
pub const CAPABILITY_EVENT: &str = "BUSINESS_CAPABILITY_UPDATE";

/// A phone-number quality or messaging-limit update.
#[derive(Clone, Copy, Debug)]
pub struct QualityUpdate<'a> {
    pub event: &'a str,
    pub current_limit: Option<&'a str>,
    pub display_phone_number: Option<&'a str>,
    /// The stored key of the portfolio of the number it is about.
    pub portfolio: &'a str,
    /// The update as received.
    pub payload: &'a Value,
}

/// Store quality updates (one statement).
pub async fn record_quality(
    c: &mut AsyncPgConnection,
    quality: &[QualityUpdate<'_>],
) -> QueryResult<()> {
    if quality.is_empty() {
        return Ok(());
    }
    Stmt::<()>::new(
        &[
            "INSERT INTO account_quality_events (event, current_limit, display_phone_number, payload) \
             SELECT * FROM unnest(",
            "::text[], ",
            "::text[], ",
            "::text[], ",
            "::jsonb[])",
        ],
        vec![
            Bind::Texts(quality.iter().map(|q| q.event).collect()),
            Bind::OptTexts(quality.iter().map(|q| q.current_limit).collect()),
            Bind::OptTexts(quality.iter().map(|q| q.display_phone_number).collect()),
            Bind::Jsons(quality.iter().map(|q| q.payload).collect()),
        ],
    )
    .execute(c)
    .await?;
    for q in quality {
        tracing::warn!(event = %q.event, current_limit = q.current_limit.unwrap_or(""),
                       "phone number quality update");
        // The portfolio's messaging limit, as the platform reports it now (`account::portfolio`).
        if let Some(limit) = q.current_limit {
            let source = if q.event == CAPABILITY_EVENT {
                "business_capability_update"
            } else {
                "phone_number_quality_update"
            };
            crate::account::portfolio::learn(c, q.portfolio, limit, source, "webhook").await?;
        }
    }
    Ok(())
}

/// Move `webhook_progress.status_through` forward to `at` (never back). One row, written
/// outside any batch's transaction so it is never a point of contention.
pub async fn record_status_progress(pg: &PgPool, at: DateTime<Utc>) -> Result<(), DbError> {
    let mut conn = pg.get().await?;
    diesel::sql_query(
        "INSERT INTO webhook_progress (id, status_through) VALUES (1, $1)
         ON CONFLICT (id) DO UPDATE
            SET status_through = GREATEST(webhook_progress.status_through, EXCLUDED.status_through)",
    )
    .bind::<Timestamptz, _>(at)
    .execute(&mut conn)
    .await?;
    Ok(())
}
