//! The outbox: recorded `queued` messages that still have to reach the delivery stream —
//! never published (NATS was down when they were accepted), lost (still queued, no
//! longer in the stream), held while their campaign was paused, or accepted by a campaign
//! page that publishes its messages together — and the publishing of many at once.
//!
//! [`Core::send`] answers once its commit is done and the message is handed to NATS; the
//! stream's acknowledgement and the published mark come behind the answer ([`Marks`]: the
//! marks of many sends in one statement), so a send costs one commit. [`publish`] is the
//! batch form of `Core::publish`, nothing more: the same job, the same de-duplication id
//! ([`crate::send::dedupe_id`]) and the trace context the send stored, then published_at
//! set for all of them in one statement.
//!
//! The de-duplication id is computed from the row as it was read ([`Pending`]: retry
//! count, previous published_at), not re-read at publish time: two schedulers that read
//! the same row state publish under the same id and the stream keeps one copy, even when
//! one of them has already marked the row published by the time the other publishes. A
//! message that fails to publish stays queued and unpublished; the relay publishes it
//! later, exactly as after a failed `Core::send` publish — and so does one whose mark was
//! lost with its process: the relay's republish carries the same id, which the stream's
//! duplicate window drops.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::sql_types::{
    Array, BigInt, Double, Int4, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid,
};
use diesel_async::RunQueryDsl;
use futures::StreamExt;
use tokio::sync::{Notify, mpsc};
use uuid::Uuid;
use warden_rules::campaign_status::CampaignStatus;
use warden_store::PgPool;
use warden_stream::DeliveryJob;

use crate::{Core, CoreError, db};

/// Publishes awaiting their ack at once (JetStream pipelines them on one connection).
const IN_FLIGHT: usize = 256;

/// A queued message as read for its publish.
#[derive(diesel::QueryableByName, Debug, Clone)]
pub struct Pending {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = Text)]
    pub customer_phone: String,
    #[diesel(sql_type = Text)]
    pub channel: String,
    #[diesel(sql_type = Nullable<Jsonb>)]
    pub trace_context: Option<serde_json::Value>,
    #[diesel(sql_type = Int4)]
    pub retry_count: i32,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub published_at: Option<DateTime<Utc>>,
}

/// The select list for [`Pending`] rows of `messages m`.
const PENDING_COLUMNS: &str =
    "m.id, m.customer_phone, m.channel, m.trace_context, m.retry_count, m.published_at";

/// Which queued rows the relay publishes (never those of a paused or cancelled campaign).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backlog {
    /// Never published, and not touched for `min_age` (the accepting call publishes
    /// right after its commit).
    NeverPublished { min_age: Duration },
    /// Published more than `stale_after` ago and before `cutoff` (the oldest message the
    /// stream still holds), so no longer in the stream; not waiting for a retry.
    Lost {
        stale_after: Duration,
        cutoff: DateTime<Utc>,
    },
}

/// Up to `limit` rows of the `backlog`, oldest first. Never writes.
pub async fn backlog(pg: &PgPool, which: Backlog, limit: i64) -> Result<Vec<Pending>, CoreError> {
    // The two differ only in the publish condition; the paused/cancelled exclusion and
    // the order column follow from it.
    let (age, cutoff, condition, order) = match which {
        Backlog::NeverPublished { min_age } => (
            min_age,
            None,
            "m.published_at IS NULL AND m.updated_at < now() - make_interval(secs => $1)",
            "m.created_at",
        ),
        Backlog::Lost {
            stale_after,
            cutoff,
        } => (
            stale_after,
            Some(cutoff),
            concat!(
                "m.published_at IS NOT NULL
                   AND m.published_at < now() - make_interval(secs => $1)
                   AND m.published_at < $2
                   AND (m.next_attempt_at IS NULL OR m.next_attempt_at <= now())
                   AND NOT ",
                in_open_publish_batch!()
            ),
            "m.published_at",
        ),
    };
    let mut conn = pg.get().await?;
    Ok(diesel::sql_query(format!(
        "SELECT {PENDING_COLUMNS} FROM messages m LEFT JOIN campaigns c ON c.id = m.campaign_id
         WHERE m.status = 'queued' AND {condition}
           AND (c.id IS NULL OR NOT {holds})
         ORDER BY {order}
         LIMIT $3",
        holds = campaign_holds_queued!(),
    ))
    .bind::<Double, _>(age.as_secs_f64())
    .bind::<Nullable<Timestamptz>, _>(cutoff)
    .bind::<BigInt, _>(limit)
    .load(&mut conn)
    .await?)
}

/// Up to `limit` queued messages of a running campaign published before `since` (or
/// never): held by the dispatcher while the campaign was paused. Never writes.
pub async fn held(
    pg: &PgPool,
    campaign_id: Uuid,
    since: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<Pending>, CoreError> {
    let mut conn = pg.get().await?;
    Ok(diesel::sql_query(format!(
        "SELECT {PENDING_COLUMNS} FROM messages m JOIN campaigns c ON c.id = m.campaign_id
         WHERE m.campaign_id = $1 AND m.status = 'queued' AND c.status = ANY($4)
           AND (m.published_at IS NULL OR m.published_at < $2)
         ORDER BY m.id
         LIMIT $3"
    ))
    .bind::<SqlUuid, _>(campaign_id)
    .bind::<Timestamptz, _>(since)
    .bind::<BigInt, _>(limit)
    .bind::<Array<Text>, _>(CampaignStatus::names(&CampaignStatus::SENDING))
    .load(&mut conn)
    .await?)
}

/// Hand the given accepted messages (those still `queued`: never published, or recorded
/// with their mark in a chunk's open publish batch, [`super::publish_batches`]) to the stream under
/// their first publish's de-duplication id, as [`Core::send`] hands its one: the call
/// returns once NATS has them all (in order), and a task reads their acknowledgements,
/// then writes the published marks ([`Marks`]) or closes the publish batches. Stops at the first
/// message NATS does not take (the rest waits for the relay). Returns how many were
/// handed over.
pub async fn publish_accepted(core: &Core, ids: &[Uuid]) -> Result<usize, CoreError> {
    let Some(stream) = core.stream() else {
        return Ok(0);
    };
    if ids.is_empty() {
        return Ok(0);
    }
    let rows: Vec<Pending> = {
        let mut conn = core.pg().get().await?;
        diesel::sql_query(format!(
            // By primary key only (OFFSET 0 keeps the status test out of the index choice:
            // a partial index on queued rows would read all of them).
            "SELECT {PENDING_COLUMNS}
               FROM (SELECT * FROM messages WHERE id = ANY($1) OFFSET 0) m
              WHERE m.status = 'queued' AND m.retry_count = 0"
        ))
        .bind::<Array<SqlUuid>, _>(ids)
        .load(&mut conn)
        .await?
    };
    if stream.client.connection_state() != async_nats::connection::State::Connected {
        tracing::warn!(
            messages = rows.len(),
            "NATS is not connected; messages stay queued for the relay"
        );
        return Ok(0);
    }
    let mut handed = Vec::with_capacity(rows.len());
    for mut row in rows {
        // A mark written with the row: its publish batch is open, this is its first publish.
        let in_batch = row.published_at.take().is_some();
        let (id, retry_count) = (row.id, row.retry_count);
        let (job, dedupe_id, trace) = job_of(row);
        match stream.publish_pending(&job, &dedupe_id, &trace).await {
            Ok(pending) => {
                core.marks().add_pending();
                handed.push((id, retry_count, in_batch, pending));
            }
            Err(err) => {
                tracing::warn!(message_id = %id, error = %err, "publish failed; message stays queued for the relay");
                break;
            }
        }
    }
    let count = handed.len();
    let core = core.clone();
    tokio::spawn(async move {
        let acknowledged: Vec<Uuid> = futures::stream::iter(handed)
            .map(|(id, retry_count, in_batch, pending)| {
                let core = &core;
                async move {
                    match pending.acknowledged().await {
                        Ok(_) if in_batch => Some(id),
                        Ok(_) => {
                            core.marks().mark(core.pg(), id, retry_count);
                            None
                        }
                        Err(err) => {
                            core.marks().no_mark(1);
                            tracing::warn!(message_id = %id, error = %err, "publish not acknowledged; message stays queued for the relay");
                            None
                        }
                    }
                }
            })
            .buffer_unordered(IN_FLIGHT)
            .filter_map(futures::future::ready)
            .collect()
            .await;
        if !acknowledged.is_empty() {
            if let Err(err) = close_publish_batches(core.pg(), &acknowledged).await {
                tracing::warn!(messages = acknowledged.len(), error = %err, "publish batches not closed; the relay publishes their messages again");
            }
            core.marks().no_mark(acknowledged.len());
        }
    });
    Ok(count)
}

/// Delete the publish batches ([`super::publish_batches`]) whose every message is among `acknowledged`.
async fn close_publish_batches(pg: &PgPool, acknowledged: &[Uuid]) -> Result<usize, CoreError> {
    db::execute(pg, "publish_batches_close_acknowledged", || {
        diesel::sql_query(
            "DELETE FROM message_handoffs
              WHERE message_ids && $1::uuid[] AND message_ids <@ $1::uuid[]",
        )
        .into_boxed()
        .bind::<Array<SqlUuid>, _>(acknowledged.to_vec())
    })
    .await
}

/// The stream job of a pending row, its de-duplication id and its trace context.
fn job_of(row: Pending) -> (DeliveryJob, String, HashMap<String, String>) {
    let dedupe_id = crate::send::dedupe_id(row.id, row.retry_count, row.published_at);
    let trace: HashMap<String, String> = row
        .trace_context
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default();
    let job = DeliveryJob {
        message_id: row.id,
        customer_id: row.customer_phone,
        channel: row.channel,
        attempt: 1,
    };
    (job, dedupe_id, trace)
}

/// Publish rows read by the caller and mark them published. Stops starting new publishes
/// at the first failure (NATS trouble: the rest waits for the relay). Returns how many
/// were published; 0 without a stream or while NATS is disconnected.
pub async fn publish(core: &Core, rows: Vec<Pending>) -> Result<usize, CoreError> {
    let Some(stream) = core.stream() else {
        return Ok(0);
    };
    if rows.is_empty() {
        return Ok(0);
    }
    if stream.client.connection_state() != async_nats::connection::State::Connected {
        tracing::warn!(
            messages = rows.len(),
            "NATS is not connected; messages stay queued for the relay"
        );
        return Ok(0);
    }
    let failed = AtomicBool::new(false);
    let published: Vec<Uuid> = futures::stream::iter(rows)
        .map(|row| {
            let failed = &failed;
            async move {
                if AtomicBool::load(failed, Ordering::Relaxed) {
                    return None;
                }
                let id = row.id;
                let (job, dedupe_id, trace) = job_of(row);
                match stream.publish_as(&job, &dedupe_id, &trace).await {
                    Ok(_) => Some(id),
                    Err(err) => {
                        failed.store(true, Ordering::Relaxed);
                        tracing::warn!(message_id = %id, error = %err, "publish failed; message stays queued for the relay");
                        None
                    }
                }
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .filter_map(futures::future::ready)
        .collect()
        .await;
    if !published.is_empty() {
        mark_published(core.pg(), &published).await?;
    }
    Ok(published.len())
}

async fn mark_published(pg: &PgPool, ids: &[Uuid]) -> Result<usize, CoreError> {
    db::execute(pg, "outbox_mark_published", || {
        diesel::sql_query("UPDATE messages SET published_at = now() WHERE id = ANY($1)")
            .into_boxed()
            .bind::<Array<SqlUuid>, _>(ids.to_vec())
    })
    .await
}

/// At most this many published marks in one statement.
const MARKS_PER_STATEMENT: usize = 1_000;

/// The published marks of single sends and campaign chunks, written behind their answers:
/// acknowledged messages queue here and one task marks all that are waiting in one
/// statement. A mark applies only to the row as it was published (still unmarked, same
/// retry count): a row sent back to `queued` for a retry in the meantime keeps its NULL for
/// the relay. [`Core::flush_publishes`] waits until every message handed over so far is
/// acknowledged and marked (or known not to be).
#[derive(Default)]
pub(crate) struct Marks {
    queue: OnceLock<mpsc::UnboundedSender<(Uuid, i32)>>,
    /// Handed to NATS, not yet marked (nor known to have failed).
    in_flight: Arc<AtomicUsize>,
    settled: Arc<Notify>,
}

impl Marks {
    /// A message was handed to NATS: its mark (or its failure) is still to come.
    pub(crate) fn add_pending(&self) {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
    }

    /// Mark `message_id` (published with `retry_count`) published, soon.
    pub(crate) fn mark(&self, pg: &PgPool, message_id: Uuid, retry_count: i32) {
        let queue = self.queue.get_or_init(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            let done = Settle {
                in_flight: Arc::clone(&self.in_flight),
                settled: Arc::clone(&self.settled),
            };
            tokio::spawn(write_marks(pg.clone(), rx, done));
            tx
        });
        if queue.send((message_id, retry_count)).is_err() {
            // The runtime is going away; the relay publishes the row again.
            self.no_mark(1);
        }
    }

    /// `n` handed-over messages with no mark to write: not acknowledged by the stream,
    /// or their publish batch is settled otherwise ([`super::publish_batches`]).
    pub(crate) fn no_mark(&self, n: usize) {
        Settle {
            in_flight: Arc::clone(&self.in_flight),
            settled: Arc::clone(&self.settled),
        }
        .done(n);
    }

    /// Until nothing handed over is waiting for its acknowledgement or mark.
    pub(crate) async fn flushed(&self) {
        loop {
            let notified = self.settled.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if AtomicUsize::load(&self.in_flight, Ordering::Acquire) == 0 {
                return;
            }
            notified.await;
        }
    }
}

/// The count of marks still to come, and who waits for it to reach zero.
struct Settle {
    in_flight: Arc<AtomicUsize>,
    settled: Arc<Notify>,
}

impl Settle {
    fn done(&self, n: usize) {
        if self.in_flight.fetch_sub(n, Ordering::AcqRel) == n {
            self.settled.notify_waiters();
        }
    }
}

async fn write_marks(pg: PgPool, mut rx: mpsc::UnboundedReceiver<(Uuid, i32)>, done: Settle) {
    let mut batch = Vec::with_capacity(MARKS_PER_STATEMENT);
    while rx.recv_many(&mut batch, MARKS_PER_STATEMENT).await > 0 {
        let (ids, retries): (Vec<Uuid>, Vec<i32>) = batch.drain(..).unzip();
        let marked = db::execute(&pg, "outbox_mark_acknowledged", || {
            diesel::sql_query(
                "UPDATE messages m SET published_at = now()
                   FROM unnest($1::uuid[], $2::int[]) AS p(id, retry_count)
                  WHERE m.id = p.id AND m.retry_count = p.retry_count
                    AND m.published_at IS NULL",
            )
            .into_boxed()
            .bind::<Array<SqlUuid>, _>(ids.clone())
            .bind::<Array<Int4>, _>(retries.clone())
        })
        .await;
        if let Err(err) = marked {
            // Unmarked rows are the relay's: it republishes them under the same id.
            tracing::warn!(messages = ids.len(), error = %err, "published marks not written; the relay republishes those messages");
        }
        done.done(ids.len());
    }
}
