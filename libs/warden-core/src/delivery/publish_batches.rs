//! Campaign chunks' publish batches: a chunk's accepted messages published to the delivery
//! stream and not yet all acknowledged.
//!
//! A chunk's accepted messages are written `queued` with their published mark already set
//! (writing every row a second time after the stream's ack was a third of a fan-out's
//! database work), and their ids go into one publish batch row in the chunk's transaction
//! (table `message_handoffs`: the table kept its first name, the schema is unchanged).
//! After the commit the messages are published to NATS under their own ids (the first
//! publish's de-duplication id); once the stream has acknowledged every one of them the
//! batch row is deleted. A row still open after the relay's minimum age (the process died
//! between commit and publish, NATS refused, an ack never came) is the relay's: it
//! publishes the row's still-queued messages under the same ids (the stream's duplicate
//! window drops any it already has) and deletes it.
//!
//! So "never published" is a NULL published mark or an open publish batch, and a message of
//! an open publish batch is not "lost" whatever its mark says.

use std::time::Duration;

use diesel::QueryResult;
use diesel::sql_types::{Array, BigInt, Double, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;
use warden_store::PgPool;

use super::outbox::Pending;
use crate::{CoreError, db};

/// Open the publish batch of `ids` (inside the transaction that writes them).
pub(crate) async fn open(c: &mut AsyncPgConnection, ids: &[Uuid]) -> QueryResult<()> {
    if ids.is_empty() {
        return Ok(());
    }
    diesel::sql_query("INSERT INTO message_handoffs (message_ids) VALUES ($1)")
        .bind::<Array<SqlUuid>, _>(ids)
        .execute(c)
        .await
        .map(|_| ())
}

#[derive(diesel::QueryableByName)]
struct Due {
    #[diesel(sql_type = BigInt)]
    id: i64,
}

/// Publish batches open for at least `min_age`, oldest first, about `limit` messages'
/// worth (at least one batch): their ids and their messages still to publish (queued, not
/// held by a paused or cancelled campaign), as never published. Never writes.
pub async fn overdue(
    pg: &PgPool,
    min_age: Duration,
    limit: i64,
) -> Result<(Vec<i64>, Vec<Pending>), CoreError> {
    let mut conn = pg.get().await?;
    let due: Vec<Due> = diesel::sql_query(
        "SELECT id FROM (
             SELECT id, sum(cardinality(message_ids)) OVER (ORDER BY id)
                        - cardinality(message_ids) AS before
               FROM message_handoffs
              WHERE created_at < now() - make_interval(secs => $1)) d
          WHERE before < $2
          ORDER BY id",
    )
    .bind::<Double, _>(min_age.as_secs_f64())
    .bind::<BigInt, _>(limit.max(1))
    .load(&mut conn)
    .await?;
    let ids: Vec<i64> = due.into_iter().map(|d| d.id).collect();
    if ids.is_empty() {
        return Ok((ids, Vec::new()));
    }
    let rows: Vec<Pending> = diesel::sql_query(format!(
        "SELECT m.id, m.customer_phone, m.channel, m.trace_context, m.retry_count,
                NULL::timestamptz AS published_at
           FROM message_handoffs h
           CROSS JOIN LATERAL unnest(h.message_ids) AS x(id)
           JOIN messages m ON m.id = x.id
           LEFT JOIN campaigns c ON c.id = m.campaign_id
          WHERE h.id = ANY($1) AND m.status = 'queued' AND m.retry_count = 0
            AND (c.id IS NULL OR NOT {holds})
          ORDER BY h.id, m.id",
        holds = campaign_holds_queued!(),
    ))
    .bind::<Array<BigInt>, _>(&ids)
    .load(&mut conn)
    .await?;
    Ok((ids, rows))
}

/// Delete the publish batches `ids` (their messages are published, or no longer the stream's
/// business).
pub async fn close(pg: &PgPool, ids: &[i64]) -> Result<usize, CoreError> {
    db::execute(pg, "publish_batches_close", || {
        diesel::sql_query("DELETE FROM message_handoffs WHERE id = ANY($1)")
            .into_boxed()
            .bind::<Array<BigInt>, _>(ids.to_vec())
    })
    .await
}
