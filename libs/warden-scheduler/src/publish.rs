//! Publishing recorded messages to the delivery stream, many at a time.
//!
//! warden-core publishes one message per call (`Core::send` right after its commit, or
//! `Core::publish`: read the row, publish and wait for the ack, then one UPDATE of
//! published_at — a second commit per message). For a campaign page that costs about as
//! much as the send itself, and warden-core has no batch form. This module is that batch
//! form of `Core::publish`, nothing more: it publishes rows that `Core::send` already
//! accepted (`queued`), with the same job, the same de-duplication id
//! (`warden_core::send::dedupe_id`) and the trace context the send stored, then sets
//! published_at for all of them in one statement. Compliance and recording stay in
//! `Core::send`.
//!
//! The de-duplication id is computed from the row as this module read it (retry count,
//! previous published_at), not re-read at publish time: two schedulers that read the same
//! row state publish under the same id and the stream keeps one copy, even when one of
//! them has already marked the row published by the time the other publishes.
//!
//! A message that fails to publish (NATS down) stays queued and unpublished; the relay
//! publishes it later, exactly as after a failed `Core::send` publish.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

use chrono::{DateTime, Utc};
use diesel::sql_types::{Array, Int4, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use futures::StreamExt;
use uuid::Uuid;
use warden_core::Core;
use warden_stream::DeliveryJob;

/// Publishes awaiting their ack at once (JetStream pipelines them on one connection).
const IN_FLIGHT: usize = 256;

/// The columns a publish needs, as read by the caller's query (select them under these
/// names: `id, customer_phone, channel, trace_context, retry_count, published_at`).
#[derive(diesel::QueryableByName, Debug, Clone)]
pub(crate) struct Pending {
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
pub(crate) const PENDING_COLUMNS: &str =
    "m.id, m.customer_phone, m.channel, m.trace_context, m.retry_count, m.published_at";

/// Publish the given accepted messages (those still `queued` and never published) and
/// mark them published. Returns how many were published.
pub async fn publish_accepted(core: &Core, ids: &[Uuid]) -> anyhow::Result<usize> {
    if ids.is_empty() || core.stream().is_none() {
        return Ok(0);
    }
    let rows: Vec<Pending> = {
        let mut conn = core.pg().get().await?;
        diesel::sql_query(format!(
            "SELECT {PENDING_COLUMNS} FROM messages m
             WHERE m.id = ANY($1) AND m.status = 'queued' AND m.published_at IS NULL"
        ))
        .bind::<Array<SqlUuid>, _>(ids)
        .load(&mut conn)
        .await?
    };
    publish_rows(core, rows).await
}

/// Publish rows read by the caller. Stops starting new publishes at the first failure
/// (NATS trouble: the rest waits for the relay). Returns how many were published.
pub(crate) async fn publish_rows(core: &Core, rows: Vec<Pending>) -> anyhow::Result<usize> {
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
                let dedupe_id = warden_core::send::dedupe_id(row.id, row.retry_count, row.published_at);
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
                match stream.publish_as(&job, &dedupe_id, &trace).await {
                    Ok(_) => Some(row.id),
                    Err(err) => {
                        failed.store(true, Ordering::Relaxed);
                        tracing::warn!(message_id = %row.id, error = %err, "publish failed; message stays queued for the relay");
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
        let mut conn = core.pg().get().await?;
        diesel::sql_query("UPDATE messages SET published_at = now() WHERE id = ANY($1)")
            .bind::<Array<SqlUuid>, _>(&published)
            .execute(&mut conn)
            .await?;
    }
    Ok(published.len())
}
