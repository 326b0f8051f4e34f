//! Scheduled messages: claim the due rows, send each through the one send path.

use std::time::Instant;

use chrono::Utc;
use diesel::sql_types::{Double, Jsonb, Nullable, Text, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use futures::StreamExt;
use serde_json::json;
use uuid::Uuid;
use warden_core::knowledge::ErrorInfo;
use warden_core::{RefusalMode, SendError, SendKind, SendRequest};
use warden_rules::kinds::MessageType;

use crate::{ACTOR, Scheduler, TickReport, metrics};

#[derive(diesel::QueryableByName, Debug)]
struct DueRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Text)]
    customer_phone: String,
    #[diesel(sql_type = Text)]
    channel: String,
    #[diesel(sql_type = Text)]
    message_type: String,
    #[diesel(sql_type = Jsonb)]
    content: serde_json::Value,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    campaign_id: Option<Uuid>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Queued,
    Refused,
    Invalid,
    /// Not sent now (database trouble, stopping, lease nearly over): lease released, the
    /// next poll tries again.
    Retry(Uuid),
    /// Someone else moved the row on (not ours any more).
    Gone,
}

/// Claim up to `message_batch` due rows: still `scheduled`, `deliver_at` reached, lease
/// free or expired. `SKIP LOCKED` keeps concurrent schedulers off each other's rows, the
/// lease keeps them off rows being dispatched after the claim committed.
async fn claim(s: &Scheduler) -> anyhow::Result<Vec<DueRow>> {
    let mut conn = s.core().pg().get().await?;
    let rows: Vec<DueRow> = diesel::sql_query(
        "UPDATE messages SET lease_owner = $1, lease_until = now() + make_interval(secs => $2)
         WHERE id IN (
             SELECT id FROM messages
             WHERE status = 'scheduled' AND deliver_at <= now()
               AND (lease_until IS NULL OR lease_until < now())
             ORDER BY deliver_at
             LIMIT $3
             FOR UPDATE SKIP LOCKED)
         RETURNING id, customer_phone, channel, message_type, content, campaign_id",
    )
    .bind::<Text, _>(s.owner())
    .bind::<Double, _>(s.config().lease.as_secs_f64())
    .bind::<diesel::sql_types::BigInt, _>(s.config().message_batch)
    .load(&mut conn)
    .await?;
    Ok(rows)
}

/// Dispatch the due scheduled messages (several batches per poll, bounded).
pub(crate) async fn dispatch_due(s: &Scheduler, report: &mut TickReport) -> anyhow::Result<()> {
    for _ in 0..s.config().max_message_batches {
        if s.is_stopping() {
            return Ok(());
        }
        let rows = claim(s).await?;
        if rows.is_empty() {
            return Ok(());
        }
        let claimed_at = Instant::now();
        let n = rows.len();
        report.messages_claimed += n;
        metrics::CLAIMED
            .with_label_values(&["message"])
            .inc_by(n as u64);
        let outcomes: Vec<Outcome> = futures::stream::iter(rows)
            .map(|row| dispatch_one(s, row, claimed_at))
            .buffer_unordered(s.config().concurrency.max(1))
            .collect()
            .await;
        let mut retry = Vec::new();
        for o in outcomes {
            match o {
                Outcome::Queued => {
                    report.messages_queued += 1;
                    metrics::DISPATCHED.with_label_values(&["queued"]).inc();
                }
                Outcome::Refused => {
                    report.messages_refused += 1;
                    metrics::DISPATCHED.with_label_values(&["refused"]).inc();
                }
                Outcome::Invalid => {
                    report.messages_invalid += 1;
                    metrics::DISPATCHED.with_label_values(&["invalid"]).inc();
                }
                Outcome::Retry(id) => {
                    metrics::DISPATCHED.with_label_values(&["retry"]).inc();
                    retry.push(id);
                }
                Outcome::Gone => {}
            }
        }
        if !retry.is_empty() {
            release(s, &retry).await?;
            // Database trouble or stopping: leave the rest for the next poll.
            return Ok(());
        }
        if (n as i64) < s.config().message_batch {
            return Ok(());
        }
    }
    report.more_work = true;
    Ok(())
}

/// Give back the lease of rows not dispatched now.
async fn release(s: &Scheduler, ids: &[Uuid]) -> anyhow::Result<()> {
    let mut conn = s.core().pg().get().await?;
    diesel::sql_query(
        "UPDATE messages SET lease_until = NULL, lease_owner = NULL
         WHERE id = ANY($1) AND lease_owner = $2 AND status = 'scheduled'",
    )
    .bind::<diesel::sql_types::Array<SqlUuid>, _>(ids)
    .bind::<Text, _>(s.owner())
    .execute(&mut conn)
    .await?;
    Ok(())
}

async fn dispatch_one(s: &Scheduler, row: DueRow, claimed_at: Instant) -> Outcome {
    // Don't start what might outlive the lease (another scheduler could take the row over).
    if s.is_stopping()
        || claimed_at.elapsed() + std::time::Duration::from_secs(10) > s.config().lease
    {
        return Outcome::Retry(row.id);
    }
    let request = match build_request(&row) {
        Ok(r) => r,
        Err(reason) => return fail_invalid(s, row.id, &reason).await,
    };
    match s.core().send(request).await {
        Ok(_) => Outcome::Queued,
        Err(SendError::RefusedRecorded { decision, .. }) => {
            tracing::info!(message_id = %row.id, reason = decision.reason_code.as_str(), "scheduled message refused at dispatch");
            Outcome::Refused
        }
        Err(
            SendError::Unavailable(reason)
            | SendError::Busy {
                message: reason, ..
            },
        ) => {
            tracing::warn!(message_id = %row.id, %reason, "scheduled message not dispatched; retrying next poll");
            Outcome::Retry(row.id)
        }
        // Not a compliance decision: the stored request itself cannot be sent (or the
        // row moved on meanwhile, which fail_invalid notices and leaves alone).
        Err(other) => fail_invalid(s, row.id, &other.to_string()).await,
    }
}

fn build_request(row: &DueRow) -> Result<SendRequest, String> {
    let phone = warden_rules::phone::canonicalize(&row.customer_phone)
        .map_err(|e| format!("customer_id {:?}: {e}", row.customer_phone))?;
    let message_type: MessageType = row
        .message_type
        .parse()
        .map_err(|e| format!("message_type: {e}"))?;
    let kind = SendKind::from_content(&row.content).map_err(|e| format!("content: {e}"))?;
    Ok(SendRequest {
        phone,
        channel: row.channel.clone(),
        kind,
        message_type,
        campaign_id: row.campaign_id,
        existing_message_id: Some(row.id),
        refusal: RefusalMode::RecordFailed,
        actor: ACTOR,
    })
}

/// A scheduled row that cannot be turned into a send at all (bad content, unknown type):
/// it ends `failed` with an `invalid_request` error saying why. Only a row that is still
/// `scheduled` is touched.
async fn fail_invalid(s: &Scheduler, id: Uuid, reason: &str) -> Outcome {
    let result = async {
        let mut conn = s.core().pg().get().await?;
        let reason = reason.to_string();
        let changed = conn
            .transaction::<bool, diesel::result::Error, _>(async |c| {
                fail_if_scheduled(c, id, &reason).await
            })
            .await?;
        anyhow::Ok(changed)
    }
    .await;
    match result {
        Ok(true) => {
            tracing::warn!(message_id = %id, reason, "scheduled message cannot be sent; marked failed");
            Outcome::Invalid
        }
        Ok(false) => Outcome::Gone,
        Err(e) => {
            tracing::warn!(message_id = %id, error = %format!("{e:#}"), "could not mark scheduled message failed; retrying next poll");
            Outcome::Retry(id)
        }
    }
}

async fn fail_if_scheduled(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    reason: &str,
) -> Result<bool, diesel::result::Error> {
    #[derive(diesel::QueryableByName)]
    struct Found {
        #[allow(dead_code)]
        #[diesel(sql_type = SqlUuid)]
        id: Uuid,
    }
    let found: Option<Found> = diesel::sql_query(
        "SELECT id FROM messages WHERE id = $1 AND status = 'scheduled' FOR UPDATE",
    )
    .bind::<SqlUuid, _>(id)
    .get_result(conn)
    .await
    .map(Some)
    .or_else(|e| match e {
        diesel::result::Error::NotFound => Ok(None),
        e => Err(e),
    })?;
    if found.is_none() {
        return Ok(false);
    }
    let error = ErrorInfo {
        code: 0,
        category: "invalid_request".into(),
        can_retry: false,
        human_explanation: format!(
            "INVALID_ARGUMENT: the scheduled message cannot be sent: {reason}"
        ),
        suggested_action:
            "Schedule it again with schedule_message and a valid message_type and content.".into(),
    };
    warden_core::outcomes::apply_status(conn, id, "failed", Utc::now(), None, Some(&error)).await?;
    warden_store::audit::record(
        conn,
        ACTOR,
        "scheduled_message_invalid",
        "message",
        &id.to_string(),
        json!({"reason": reason}),
    )
    .await?;
    Ok(true)
}
