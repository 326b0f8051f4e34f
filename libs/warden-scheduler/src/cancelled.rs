//! Cancelled campaigns: their queued-but-unsent messages end `failed` ("campaign
//! cancelled", error category `campaign`), which the counter triggers count in the
//! campaign's cancelled_count (not failed_count: they were never tried).
//!
//! warden-core has no bulk outcome: `outcomes::apply_status` moves one message (with
//! several statements each). A cancelled 100k campaign can leave tens of thousands of
//! queued rows, so this module does the same move in bulk, in one statement per batch:
//! status `failed`, failed_at, the error fields, lease cleared. Only rows still `queued`
//! are touched (`sending` ones are at the platform already and settle through the
//! webhook), and `FOR UPDATE SKIP LOCKED` keeps it off rows a dispatcher is claiming now.

use std::convert::Infallible;

use diesel::sql_types::{BigInt, Text, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use futures::FutureExt;
use serde_json::json;
use uuid::Uuid;
use warden_store::tx::transact_on;

use crate::{ACTOR, Scheduler, TickReport, metrics};

/// The error a message of a cancelled campaign carries.
pub const CANCELLED_CATEGORY: &str = "campaign";
pub const CANCELLED_EXPLANATION: &str = "campaign cancelled: the campaign was cancelled before this message was sent, so it was not sent.";
pub const CANCELLED_ACTION: &str =
    "Nothing to do for this message; schedule a new campaign to reach this customer.";

/// Batches per poll (the rest waits for the next poll).
const MAX_BATCHES: usize = 20;
const BATCH: i64 = 5000;

#[derive(diesel::QueryableByName)]
struct Moved {
    #[diesel(sql_type = SqlUuid)]
    campaign_id: Uuid,
    #[diesel(sql_type = BigInt)]
    n: i64,
}

pub(crate) async fn fail_unsent(s: &Scheduler, report: &mut TickReport) -> anyhow::Result<()> {
    let mut conn = s.core().pg().get().await?;
    for _ in 0..MAX_BATCHES {
        let moved: Vec<Moved> = transact_on::<_, Infallible, _>(&mut conn, "campaign_cancel_queued", |c| {
            async move {
                let moved: Vec<Moved> = diesel::sql_query(
                    "WITH doomed AS (
                         SELECT m.id FROM messages m JOIN campaigns c ON c.id = m.campaign_id
                         WHERE c.status = 'cancelled' AND m.status = 'queued'
                         LIMIT $1
                         FOR UPDATE OF m SKIP LOCKED),
                     failed AS (
                         UPDATE messages m SET status = 'failed', failed_at = now(), updated_at = now(),
                                lease_until = NULL, lease_owner = NULL,
                                error_code = 0, error_category = $2, error_can_retry = false,
                                error_explanation = $3, error_suggested_action = $4
                         FROM doomed WHERE m.id = doomed.id AND m.status = 'queued'
                         RETURNING m.campaign_id)
                     SELECT campaign_id, count(*) AS n FROM failed GROUP BY campaign_id ORDER BY campaign_id",
                )
                .bind::<BigInt, _>(BATCH)
                .bind::<Text, _>(CANCELLED_CATEGORY)
                .bind::<Text, _>(CANCELLED_EXPLANATION)
                .bind::<Text, _>(CANCELLED_ACTION)
                .load(c)
                .await?;
                for m in &moved {
                    warden_store::audit::record(
                        c,
                        ACTOR,
                        "campaign_messages_cancelled",
                        "campaign",
                        &m.campaign_id.to_string(),
                        json!({"messages_failed": m.n, "reason": "campaign cancelled"}),
                    )
                    .await?;
                }
                Ok(moved)
            }
            .boxed()
        })
        .await?;
        let total: i64 = moved.iter().map(|m| m.n).sum();
        if total == 0 {
            return Ok(());
        }
        for m in &moved {
            tracing::info!(campaign_id = %m.campaign_id, messages = m.n, "queued messages of a cancelled campaign marked failed");
        }
        report.cancelled_messages_failed += total as usize;
        metrics::CANCELLED_MESSAGES.inc_by(total as u64);
        if total < BATCH {
            return Ok(());
        }
    }
    report.more_work = true;
    Ok(())
}
