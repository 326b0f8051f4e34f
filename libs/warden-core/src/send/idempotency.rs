//! Idempotency keys (docs/tools.md, Conventions): the same key with the same arguments
//! within 24 h replays the first call's result and creates nothing; with other arguments
//! it is an `INVALID_ARGUMENT` naming `idempotency_key`.
//!
//! Enforced by the `idempotency_keys` primary key, inside the transaction that records
//! what the call creates: [`claim`] inserts the key first. A concurrent call with the same
//! key blocks on that insert until the first commits (then reads and replays its result)
//! or rolls back (then goes on as the first). A call refused by compliance [`release`]s its
//! key in its own transaction, so a later retry is judged afresh.

use chrono::{DateTime, TimeDelta, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use warden_rules::safety::idempotency::KEY_TTL_HOURS;
use warden_store::schema::idempotency_keys as k;

/// A call's key: who called, the key, the tool and the fingerprint of its arguments
/// (`warden_rules::safety::idempotency::fingerprint`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdempotencyKey {
    pub actor: String,
    pub key: String,
    pub tool: String,
    pub args_hash: String,
}

/// What [`claim`] found.
#[derive(Clone, Debug, PartialEq)]
pub enum Claim {
    /// The key is this call's now: go on and create.
    New,
    /// An earlier call with the same arguments created this result: answer it again.
    Replay(Value),
    /// The key was used with other arguments.
    Mismatch { tool: String },
}

/// The message for [`Claim::Mismatch`] (tools answer `INVALID_ARGUMENT`).
pub fn mismatch_message(key: &IdempotencyKey, earlier_tool: &str) -> String {
    let tool = if earlier_tool == key.tool {
        String::new()
    } else {
        format!(" (by {earlier_tool})")
    };
    format!(
        "The parameter `idempotency_key` was already used in the last 24 hours{tool} with other arguments; a key names one call. Use a new key for a new message, or repeat the first call's arguments exactly to get its result."
    )
}

/// Claim `key` for a call whose result will be `result`, inside the caller's transaction.
pub async fn claim(
    conn: &mut AsyncPgConnection,
    key: &IdempotencyKey,
    result: &Value,
    now: DateTime<Utc>,
) -> QueryResult<Claim> {
    // Twice at most: a row purged between our insert and our read is claimed again.
    for _ in 0..2 {
        let inserted = diesel::insert_into(k::table)
            .values((
                k::actor.eq(&key.actor),
                k::key.eq(&key.key),
                k::tool.eq(&key.tool),
                k::args_hash.eq(&key.args_hash),
                k::result.eq(result),
                k::created_at.eq(now),
            ))
            .on_conflict((k::actor, k::key))
            .do_nothing()
            .execute(conn)
            .await?;
        if inserted == 1 {
            return Ok(Claim::New);
        }
        let existing: Option<(String, String, Value, DateTime<Utc>)> = k::table
            .find((&key.actor, &key.key))
            .select((k::tool, k::args_hash, k::result, k::created_at))
            .for_update()
            .first(conn)
            .await
            .optional()?;
        let Some((tool, args_hash, stored, created_at)) = existing else {
            continue;
        };
        if created_at <= now - TimeDelta::hours(KEY_TTL_HOURS) {
            // Expired: the key starts over as this call's.
            diesel::update(k::table.find((&key.actor, &key.key)))
                .set((
                    k::tool.eq(&key.tool),
                    k::args_hash.eq(&key.args_hash),
                    k::result.eq(result),
                    k::created_at.eq(now),
                ))
                .execute(conn)
                .await?;
            return Ok(Claim::New);
        }
        if tool != key.tool || args_hash != key.args_hash {
            return Ok(Claim::Mismatch { tool });
        }
        return Ok(Claim::Replay(stored));
    }
    Err(diesel::result::Error::RollbackTransaction)
}

/// Give the key back (the call created nothing), inside the same transaction as [`claim`].
pub async fn release(conn: &mut AsyncPgConnection, key: &IdempotencyKey) -> QueryResult<()> {
    diesel::delete(k::table.find((&key.actor, &key.key)))
        .execute(conn)
        .await
        .map(|_| ())
}

/// Delete up to `batch` keys older than 24 h (the scheduler's retention pass); returns how
/// many went. Expired keys are already ignored by [`claim`]; this only keeps the table small.
pub async fn purge_expired(
    pg: &warden_store::PgPool,
    now: DateTime<Utc>,
    batch: i64,
) -> Result<usize, crate::CoreError> {
    let mut conn = pg.get().await?;
    let cutoff = now - TimeDelta::hours(KEY_TTL_HOURS);
    let n = diesel::sql_query(
        "DELETE FROM idempotency_keys WHERE ctid IN \
         (SELECT ctid FROM idempotency_keys WHERE created_at <= $1 LIMIT $2)",
    )
    .bind::<diesel::sql_types::Timestamptz, _>(cutoff)
    .bind::<diesel::sql_types::Int8, _>(batch)
    .execute(&mut conn)
    .await?;
    Ok(n)
}

/// What a keyed create answered: the id, and whether an earlier call created it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Created {
    pub id: uuid::Uuid,
    pub replayed: bool,
}

/// [`claim`] for a use case that creates one row named by `id` (stored as `{field: id}`),
/// inside its transaction: `None` to go on creating, `Some(earlier id)` to answer that
/// instead; a key used with other arguments aborts with the message tools show.
pub async fn claim_id(
    conn: &mut AsyncPgConnection,
    key: Option<&IdempotencyKey>,
    field: &str,
    id: uuid::Uuid,
) -> Result<Option<uuid::Uuid>, warden_store::tx::Abort<String>> {
    let Some(key) = key else {
        return Ok(None);
    };
    let result = serde_json::json!({ field: id });
    match claim(conn, key, &result, Utc::now()).await? {
        Claim::New => Ok(None),
        Claim::Mismatch { tool } => Err(warden_store::tx::Abort::App(mismatch_message(key, &tool))),
        Claim::Replay(v) => v
            .get(field)
            .and_then(Value::as_str)
            .and_then(|s| s.parse().ok())
            .map(Some)
            .ok_or_else(|| {
                warden_store::tx::Abort::App(
                    "The parameter `idempotency_key` was used by another kind of call; use a new key.".into(),
                )
            }),
    }
}
