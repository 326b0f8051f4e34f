//! Cancelled campaigns: their queued-but-unsent messages end `failed` ("campaign
//! cancelled", error category `campaign`), which the counter triggers count in the
//! campaign's cancelled_count (not failed_count: they were never tried).
//!
//! `outcomes::apply_status` moves one message (with several statements each). A
//! cancelled 100k campaign can leave tens of thousands of queued rows, so this does the
//! same move in bulk, in one statement per batch: status `failed`, failed_at, the error
//! fields, lease cleared. Only rows still `queued` are touched (`sending` ones are at the
//! platform already and settle through the webhook), and `FOR UPDATE SKIP LOCKED` keeps it
//! off rows a dispatcher is claiming now.

use diesel::sql_types::{BigInt, Text, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use futures::FutureExt;
use serde_json::json;
use uuid::Uuid;
use warden_rules::campaign_status::CampaignStatus;
use warden_store::PgPool;
use warden_store::tx::transact;

use crate::CoreError;

/// The error a message of a cancelled campaign carries.
pub const CANCELLED_CATEGORY: &str = "campaign";
pub const CANCELLED_EXPLANATION: &str = "campaign cancelled: the campaign was cancelled before this message was sent, so it was not sent.";
pub const CANCELLED_ACTION: &str =
    "Nothing to do for this message; schedule a new campaign to reach this customer.";

/// Messages of one cancelled campaign just marked failed.
#[derive(diesel::QueryableByName, Debug, Clone, PartialEq, Eq)]
pub struct CancelledMessages {
    #[diesel(sql_type = SqlUuid)]
    pub campaign_id: Uuid,
    #[diesel(sql_type = BigInt)]
    pub messages: i64,
}

/// Up to `limit` queued messages of cancelled campaigns (and those held `scheduled` by a
/// quiet-hours or platform-limit hold) end `failed` (audited per
/// campaign). Returns what moved, per campaign; fewer than `limit` in all means none is
/// left (but for rows locked by a dispatcher right now).
pub async fn fail_queued(
    pg: &PgPool,
    limit: i64,
    actor: &'static str,
) -> Result<Vec<CancelledMessages>, CoreError> {
    let moved = transact::<_, CoreError, _>(pg, "campaign_cancel_queued", |c| {
        async move {
            let moved: Vec<CancelledMessages> = diesel::sql_query(
                "WITH doomed AS (
                     SELECT m.id FROM messages m JOIN campaigns c ON c.id = m.campaign_id
                     WHERE c.status = $5 AND m.status IN ('queued', 'scheduled')
                     LIMIT $1
                     FOR UPDATE OF m SKIP LOCKED),
                 failed AS (
                     UPDATE messages m SET status = 'failed', failed_at = now(), updated_at = now(),
                            lease_until = NULL, lease_owner = NULL,
                            error_code = 0, error_category = $2, error_can_retry = false,
                            error_explanation = $3, error_suggested_action = $4
                     FROM doomed WHERE m.id = doomed.id AND m.status IN ('queued', 'scheduled')
                     RETURNING m.campaign_id)
                 SELECT campaign_id, count(*) AS messages FROM failed GROUP BY campaign_id ORDER BY campaign_id",
            )
            .bind::<BigInt, _>(limit)
            .bind::<Text, _>(CANCELLED_CATEGORY)
            .bind::<Text, _>(CANCELLED_EXPLANATION)
            .bind::<Text, _>(CANCELLED_ACTION)
            .bind::<Text, _>(CampaignStatus::Cancelled.as_str())
            .load(c)
            .await?;
            for m in &moved {
                warden_store::audit::record(
                    c,
                    actor,
                    "campaign_messages_cancelled",
                    "campaign",
                    &m.campaign_id.to_string(),
                    json!({"messages_failed": m.messages, "reason": "campaign cancelled"}),
                )
                .await?;
            }
            Ok(moved)
        }
        .boxed()
    })
    .await?;
    for m in &moved {
        tracing::info!(campaign_id = %m.campaign_id, messages = m.messages, "queued messages of a cancelled campaign marked failed");
    }
    Ok(moved)
}
