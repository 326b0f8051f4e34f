//! The unknown-outcome sweep's steps over stale claims (`sending` rows whose lease ran out):
//! nothing stays `sending` without an owner. Each step
//! locks the rows it takes (`FOR UPDATE SKIP LOCKED`), so several replicas sweeping at
//! once never take the same row; each takes at most `batch` rows (the next run takes the
//! rest). The dispatcher runs them every DISPATCH_SWEEP_INTERVAL, counts and publishes.

use std::convert::Infallible;
use std::time::Duration;

use chrono::TimeDelta;
use diesel::sql_types::{BigInt, Int4, Text, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use futures::FutureExt;
use uuid::Uuid;
use warden_rules::message_status::MessageStatus;
use warden_store::PgPool;
use warden_store::tx::{Abort, transact};
use warden_stream::DeliveryJob;

use super::next_step::{self, Plan, UnknownOutcome, Why};
use super::{DeliveryError, DeliveryRow, ROW_COLUMNS};
use crate::sql::{Cached, millis};

#[derive(diesel::QueryableByName)]
struct Attempt {
    #[diesel(sql_type = Int4)]
    attempt: i32,
}

#[derive(diesel::QueryableByName)]
struct Moved {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Text)]
    status: String,
}

/// Step 1: `sending` rows whose lease ended become held unknown outcomes. Returns them.
pub async fn adopt_expired(pg: &PgPool, batch: i64) -> Result<Vec<Uuid>, DeliveryError> {
    let mut conn = pg.get().await?;
    let rows: Vec<Moved> = diesel::sql_query(
        "UPDATE messages m
            SET unknown_since = COALESCE(m.lease_until, m.updated_at), lease_owner = NULL
          WHERE m.id IN (
                SELECT id FROM messages
                 WHERE status = 'sending' AND unknown_since IS NULL
                   AND COALESCE(lease_until, updated_at) <= now()
                 ORDER BY lease_until
                 LIMIT $1
                 FOR UPDATE SKIP LOCKED)
            AND m.status = 'sending' AND m.unknown_since IS NULL
         RETURNING m.id, m.status",
    )
    .bind::<BigInt, _>(batch)
    .load(&mut conn)
    .await?;
    Ok(rows.into_iter().map(|r| r.id).collect())
}

/// Step 2: marked rows that moved on (their status webhook came): cleared, each counted
/// once. Returns them with the status they moved to (`None`: a spelling this version does
/// not know).
pub async fn resolve_moved(
    pg: &PgPool,
    batch: i64,
) -> Result<Vec<(Uuid, Option<MessageStatus>)>, DeliveryError> {
    let mut conn = pg.get().await?;
    let rows: Vec<Moved> = diesel::sql_query(
        "UPDATE messages m SET unknown_since = NULL
          WHERE m.id IN (
                SELECT id FROM messages
                 WHERE unknown_since IS NOT NULL AND status <> 'sending'
                 LIMIT $1
                 FOR UPDATE SKIP LOCKED)
            AND m.unknown_since IS NOT NULL AND m.status <> 'sending'
         RETURNING m.id, m.status",
    )
    .bind::<BigInt, _>(batch)
    .load(&mut conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.id, r.status.parse().ok()))
        .collect())
}

/// Step 3: marked rows whose settle period passed, judged by [`next_step::plan`]; those it
/// resends go back to `queued` (audited as `actor`, `published_at` set: the caller
/// publishes them under a new de-duplication id), in one transaction. Webhook evidence
/// counts only once it is `grace` old: by then a live stream message for the row would
/// have come back and been resent by its dispatcher. Returns the jobs to publish.
pub async fn release_settled(
    pg: &PgPool,
    unknown: UnknownOutcome,
    grace: Duration,
    batch: i64,
    actor: &'static str,
) -> Result<Vec<(DeliveryJob, Why)>, DeliveryError> {
    let settle = unknown.settle;
    let grace = TimeDelta::from_std(grace).unwrap_or(TimeDelta::MAX);
    let released = transact(pg, "release_settled_unknown_outcomes", move |c| {
        async move {
            let rows: Vec<DeliveryRow> = Cached(
                diesel::sql_query(format!(
                    "SELECT {ROW_COLUMNS}
                       FROM messages m LEFT JOIN campaigns c ON c.id = m.campaign_id
                      WHERE m.status = 'sending' AND m.unknown_since IS NOT NULL
                        AND COALESCE(m.lease_until, m.updated_at)
                            + $1 * interval '1 millisecond' <= now()
                      ORDER BY m.unknown_since
                      LIMIT $2
                      FOR UPDATE OF m SKIP LOCKED"
                ))
                .bind::<BigInt, _>(millis(settle))
                .bind::<BigInt, _>(batch),
            )
            .load(c)
            .await?;
            let mut out = Vec::new();
            for mut row in rows {
                row.webhooks_through = row.webhooks_through.map(|w| w - grace);
                let Plan::Resend(why) = next_step::plan(&row, unknown) else {
                    continue;
                };
                let attempt: Attempt = diesel::sql_query(
                    "UPDATE messages
                        SET status = 'queued', lease_owner = NULL, lease_until = NULL,
                            next_attempt_at = NULL, unknown_since = NULL,
                            published_at = now(), updated_at = now()
                      WHERE id = $1
                     RETURNING attempt",
                )
                .bind::<SqlUuid, _>(row.id)
                .get_result(c)
                .await?;
                super::unknown_outcome::audit_resend(c, row.id, settle, why, actor).await?;
                out.push((
                    DeliveryJob {
                        message_id: row.id,
                        customer_id: row.customer_phone,
                        channel: row.channel,
                        attempt: attempt.attempt + 1,
                    },
                    why,
                ));
            }
            Ok::<_, Abort<Infallible>>(out)
        }
        .boxed()
    })
    .await?;
    Ok(released)
}

/// Unknown outcomes held `sending` now, and the oldest one's age in seconds.
pub async fn held_now(pg: &PgPool) -> Result<(i64, i64), DeliveryError> {
    #[derive(diesel::QueryableByName)]
    struct Held {
        #[diesel(sql_type = BigInt)]
        n: i64,
        #[diesel(sql_type = BigInt)]
        oldest: i64,
    }
    let mut conn = pg.get().await?;
    let h: Held = diesel::sql_query(
        "SELECT count(*) AS n,
                COALESCE(extract(epoch FROM now() - min(unknown_since)), 0)::bigint AS oldest
           FROM messages WHERE unknown_since IS NOT NULL AND status = 'sending'",
    )
    .get_result(&mut conn)
    .await?;
    Ok((h.n, h.oldest))
}
