//! `queued -> sending`: the claim that must succeed before a platform call.

use std::time::Duration;

use diesel::QueryableByName;
use diesel::sql_types::{Array, BigInt, Int4, Text, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use uuid::Uuid;
use warden_store::PgPool;

use super::DeliveryError;
use crate::sql::{Cached, millis};

/// A row this replica now holds `sending`, and the attempt number the claim gave it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, QueryableByName)]
pub struct Claimed {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = Int4)]
    pub attempt: i32,
}

/// `queued -> sending` for `owner`, with a lease, for each row still queued, due, and not
/// in a paused or cancelled campaign; one statement, one commit (durable before any
/// platform call). Rows another transaction holds locked right now are skipped (no
/// waiting, no deadlock): their callers look again. Returns the rows claimed.
pub async fn claim_many(
    pg: &PgPool,
    ids: &[Uuid],
    owner: &str,
    lease: Duration,
) -> Result<Vec<Claimed>, DeliveryError> {
    let mut conn = pg.get().await?;
    Ok(Cached(
        diesel::sql_query(concat!(
            "WITH picked AS (
           SELECT m.id FROM messages m
            WHERE m.id = ANY($1) AND m.status = 'queued' AND m.direction = 'outbound'
              AND (m.next_attempt_at IS NULL OR m.next_attempt_at <= now())
              AND (m.deliver_at IS NULL OR m.deliver_at <= now())
              AND NOT EXISTS (SELECT 1 FROM campaigns c
                               WHERE c.id = m.campaign_id AND ",
            campaign_holds_queued!(),
            ")
            ORDER BY m.id
            FOR UPDATE OF m SKIP LOCKED)
         UPDATE messages m
            SET status = 'sending', attempt = m.attempt + 1, lease_owner = $2,
                lease_until = now() + $3 * interval '1 millisecond', updated_at = now(),
                unknown_since = NULL
           FROM picked WHERE m.id = picked.id
         RETURNING m.id, m.attempt",
        ))
        .bind::<Array<SqlUuid>, _>(ids)
        .bind::<Text, _>(owner)
        .bind::<BigInt, _>(millis(lease)),
    )
    .get_results(&mut conn)
    .await?)
}
