//! Campaign state changes that more than one process makes.

use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::json;
use uuid::Uuid;
use warden_store::schema::campaigns;

/// States in which a campaign still sends (or will).
pub const ACTIVE: &[&str] = &["scheduled", "running", "sending"];
/// States a campaign never leaves.
pub const TERMINAL: &[&str] = &["completed", "failed", "cancelled"];

/// Halt-class platform errors: pause every active campaign with the reason. Audited.
pub async fn pause_active(
    conn: &mut AsyncPgConnection,
    reason: &str,
    actor: &str,
) -> QueryResult<usize> {
    let paused: Vec<Uuid> =
        diesel::update(campaigns::table.filter(campaigns::status.eq_any(ACTIVE)))
            .set((
                campaigns::status.eq("paused"),
                campaigns::paused_at.eq(diesel::dsl::now),
                campaigns::status_reason.eq(reason),
                campaigns::updated_at.eq(diesel::dsl::now),
            ))
            .returning(campaigns::id)
            .get_results(conn)
            .await?;
    for id in &paused {
        warden_store::audit::record(
            conn,
            actor,
            "campaign_paused",
            "campaign",
            &id.to_string(),
            json!({"reason": reason, "automatic": true}),
        )
        .await?;
    }
    if !paused.is_empty() {
        tracing::error!(
            count = paused.len(),
            reason,
            "paused active campaigns after a halt-class platform error"
        );
    }
    Ok(paused.len())
}

/// Mark a running campaign `completed` (or `failed` when nothing could be sent) once its
/// audience is fully fanned out and no recipient message is still on its way.
pub async fn settle_if_done(
    conn: &mut AsyncPgConnection,
    campaign_id: Uuid,
) -> QueryResult<Option<&'static str>> {
    // One statement so concurrent outcome updates cannot both miss the last message.
    let status: Option<String> = diesel::sql_query(
        "UPDATE campaigns c SET status = CASE WHEN c.sent_count = 0 THEN 'failed' ELSE 'completed' END,
                status_reason = CASE WHEN c.sent_count = 0 THEN 'no recipient could be sent' ELSE c.status_reason END,
                updated_at = now()
         WHERE c.id = $1 AND c.status IN ('running', 'sending') AND c.audience_done
           AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.campaign_id = c.id
                           AND m.status IN ('scheduled', 'queued', 'sending'))
         RETURNING c.status",
    )
    .bind::<diesel::sql_types::Uuid, _>(campaign_id)
    .get_result::<StatusRow>(conn)
    .await
    .optional()?
    .map(|r| r.status);
    Ok(match status.as_deref() {
        Some("completed") => Some("completed"),
        Some("failed") => Some("failed"),
        _ => None,
    })
}

#[derive(QueryableByName)]
struct StatusRow {
    #[diesel(sql_type = diesel::sql_types::Text)]
    status: String,
}
