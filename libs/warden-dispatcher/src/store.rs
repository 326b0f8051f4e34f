//! The dispatcher's reads and writes of `messages`. Postgres is the truth: a message is
//! sent only after this replica's conditional claim (`queued -> sending`) succeeded, and a
//! row only goes back to `queued` after a failure that is known not to have delivered
//! (or an unknown outcome after a settle period), so redeliveries and crashes never
//! produce a second send.

use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::QueryableByName;
use diesel::pg::Pg;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::result::QueryResult;
use diesel::sql_types::{BigInt, Bool, Int4, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;
use warden_core::knowledge::ErrorInfo;
use warden_store::PgPool;

/// What the dispatcher reads of a message before deciding.
#[derive(Clone, Debug, QueryableByName)]
pub struct Row {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = Text)]
    pub customer_phone: String,
    #[diesel(sql_type = Text)]
    pub channel: String,
    #[diesel(sql_type = Text)]
    pub direction: String,
    #[diesel(sql_type = Text)]
    pub status: String,
    #[diesel(sql_type = Jsonb)]
    pub content: serde_json::Value,
    #[diesel(sql_type = Nullable<Text>)]
    pub template_name: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub template_locale: Option<String>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    pub campaign_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<Text>)]
    pub campaign_status: Option<String>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub deliver_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub next_attempt_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub lease_until: Option<DateTime<Utc>>,
    #[diesel(sql_type = Int4)]
    pub retry_count: i32,
    #[diesel(sql_type = Bool)]
    pub has_error: bool,
    /// When the row last changed: for a `sending` row, when it was claimed.
    #[diesel(sql_type = Timestamptz)]
    pub claimed_at: DateTime<Utc>,
    /// `webhook_progress.status_through` (read for `sending` rows only).
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub webhooks_through: Option<DateTime<Utc>>,
    /// `webhook_progress.advanced_at`: when status webhooks last moved it forward (read
    /// for `sending` rows only).
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub webhooks_advanced_at: Option<DateTime<Utc>>,
    /// When its outcome became unknown, while that is being settled (see the migration
    /// `delivery_unknown_since`).
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub unknown_since: Option<DateTime<Utc>>,
    /// The database's clock, so every replica compares times against one clock.
    #[diesel(sql_type = Timestamptz)]
    pub db_now: DateTime<Utc>,
}

/// The select list of [`Row`] over `messages m LEFT JOIN campaigns c`.
pub const ROW_COLUMNS: &str = "m.id, m.customer_phone, m.channel, m.direction, m.status, m.content,
                m.template_name, m.template_locale, m.campaign_id, c.status AS campaign_status,
                m.deliver_at, m.next_attempt_at, m.lease_until,
                m.retry_count, (m.error_code IS NOT NULL) AS has_error, m.updated_at AS claimed_at,
                CASE WHEN m.status = 'sending'
                     THEN (SELECT status_through FROM webhook_progress WHERE id = 1) END AS webhooks_through,
                CASE WHEN m.status = 'sending'
                     THEN (SELECT advanced_at FROM webhook_progress WHERE id = 1) END AS webhooks_advanced_at,
                m.unknown_since, now() AS db_now";

pub async fn load(pg: &PgPool, id: Uuid) -> anyhow::Result<Option<Row>> {
    let mut conn = pg.get().await?;
    Ok(Cached(
        diesel::sql_query(format!(
            "SELECT {ROW_COLUMNS}
               FROM messages m LEFT JOIN campaigns c ON c.id = m.campaign_id
              WHERE m.id = $1"
        ))
        .bind::<SqlUuid, _>(id),
    )
    .get_result::<Row>(&mut conn)
    .await
    .optional_row()?)
}

#[derive(QueryableByName)]
struct Claimed {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Int4)]
    attempt: i32,
}

/// `queued -> sending` for this replica, for each row still queued, due, and not in a
/// paused or cancelled campaign; one statement, one commit. Rows another transaction holds
/// locked right now are skipped (no waiting, no deadlock): their callers look again.
/// Returns (id, attempt number) of the rows claimed.
pub async fn claim_many(
    pg: &PgPool,
    ids: &[Uuid],
    owner: &str,
    lease: Duration,
) -> anyhow::Result<Vec<(Uuid, i32)>> {
    let mut conn = pg.get().await?;
    let rows: Vec<Claimed> = Cached(
        diesel::sql_query(
            "WITH picked AS (
           SELECT m.id FROM messages m
            WHERE m.id = ANY($1) AND m.status = 'queued' AND m.direction = 'outbound'
              AND (m.next_attempt_at IS NULL OR m.next_attempt_at <= now())
              AND (m.deliver_at IS NULL OR m.deliver_at <= now())
              AND NOT EXISTS (SELECT 1 FROM campaigns c
                               WHERE c.id = m.campaign_id AND c.status IN ('paused', 'cancelled'))
            ORDER BY m.id
            FOR UPDATE OF m SKIP LOCKED)
         UPDATE messages m
            SET status = 'sending', attempt = m.attempt + 1, lease_owner = $2,
                lease_until = now() + $3 * interval '1 millisecond', updated_at = now(),
                unknown_since = NULL
           FROM picked WHERE m.id = picked.id
         RETURNING m.id, m.attempt",
        )
        .bind::<diesel::sql_types::Array<SqlUuid>, _>(ids)
        .bind::<Text, _>(owner)
        .bind::<BigInt, _>(millis(lease)),
    )
    .get_results(&mut conn)
    .await?;
    Ok(rows.into_iter().map(|r| (r.id, r.attempt)).collect())
}

/// A call whose outcome is unknown (timeout, connection cut mid-request): end this
/// replica's lease now, keeping the row `sending`, so it is settled like a dead claim
/// (`unknown_since` set). No error is stored: the status webhook may yet say `sent`.
/// False: the row moved on meanwhile (its status webhook came first, or another replica
/// took the claim over).
pub async fn end_lease(pg: &PgPool, id: Uuid, owner: &str) -> anyhow::Result<bool> {
    let mut conn = pg.get().await?;
    let n = diesel::sql_query(
        "UPDATE messages SET lease_until = now(), lease_owner = NULL, updated_at = now(),
                unknown_since = now()
          WHERE id = $1 AND status = 'sending' AND lease_owner = $2",
    )
    .bind::<SqlUuid, _>(id)
    .bind::<Text, _>(owner)
    .execute(&mut conn)
    .await?;
    Ok(n == 1)
}

/// A claim whose lease ended while its row is still `sending` (its dispatcher died, or
/// stalled past the lease): from now on an unknown outcome, settled by the resend rule.
/// Marks it once (`unknown_since` = when the lease ended; `updated_at`, the claim time the
/// evidence rule measures from, is kept). True: this call marked it.
pub async fn adopt_dead_claim(pg: &PgPool, id: Uuid) -> anyhow::Result<bool> {
    let mut conn = pg.get().await?;
    let n = diesel::sql_query(
        "UPDATE messages SET unknown_since = COALESCE(lease_until, updated_at), lease_owner = NULL
          WHERE id = $1 AND status = 'sending' AND unknown_since IS NULL
            AND COALESCE(lease_until, updated_at) <= now()",
    )
    .bind::<SqlUuid, _>(id)
    .execute(&mut conn)
    .await?;
    Ok(n == 1)
}

/// An unknown outcome that moved on without a resend (its status webhook came): clear the
/// mark. True: this call cleared it (so the resolution is counted once).
pub async fn clear_resolved(pg: &PgPool, id: Uuid) -> anyhow::Result<bool> {
    let mut conn = pg.get().await?;
    let n = diesel::sql_query(
        "UPDATE messages SET unknown_since = NULL
          WHERE id = $1 AND unknown_since IS NOT NULL AND status <> 'sending'",
    )
    .bind::<SqlUuid, _>(id)
    .execute(&mut conn)
    .await?;
    Ok(n == 1)
}

/// An unknown outcome whose settle period passed with no status webhook: back to `queued`
/// (due now), with an audit row naming `why`, if it is still `sending` with its lease
/// ended that long ago. False: the row moved on meanwhile (its webhook came, or another
/// replica or the sweep took it).
pub async fn release_dead_claim(
    pg: &PgPool,
    id: Uuid,
    settle: Duration,
    why: crate::plan::Why,
) -> anyhow::Result<bool> {
    let mut conn = pg.get().await?;
    let released = conn
        .transaction::<_, diesel::result::Error, _>(async |c| {
            let n = diesel::sql_query(
                "UPDATE messages
                    SET status = 'queued', lease_owner = NULL, lease_until = NULL,
                        next_attempt_at = NULL, unknown_since = NULL, updated_at = now()
                  WHERE id = $1 AND status = 'sending'
                    AND COALESCE(lease_until, updated_at) + $2 * interval '1 millisecond' <= now()",
            )
            .bind::<SqlUuid, _>(id)
            .bind::<BigInt, _>(millis(settle))
            .execute(c)
            .await?;
            if n == 1 {
                audit_resend(c, id, settle, why, crate::deliver::ACTOR).await?;
            }
            Ok(n == 1)
        })
        .await?;
    Ok(released)
}

/// The audit row of a resent unknown outcome.
pub async fn audit_resend(
    c: &mut AsyncPgConnection,
    id: Uuid,
    settle: Duration,
    why: crate::plan::Why,
    actor: &str,
) -> diesel::QueryResult<()> {
    let reason = match why {
        crate::plan::Why::Evidence => {
            "outcome unknown (the dispatcher stopped, or the call timed out) and no status webhook came while later ones did"
        }
        crate::plan::Why::MaxWait => {
            "outcome unknown (the dispatcher stopped, or the call timed out) and no status webhook came within DISPATCH_UNKNOWN_MAX_WAIT"
        }
    };
    warden_store::audit::record(
        c,
        actor,
        "resend_after_unknown_outcome",
        "message",
        &id.to_string(),
        serde_json::json!({
            "reason": reason,
            "rule": why.label(),
            "settle_ms": millis(settle),
        }),
    )
    .await
}

#[derive(QueryableByName)]
struct RetryCount {
    #[diesel(sql_type = Int4)]
    retry_count: i32,
}

/// A retryable failure: back to `queued` with `next_attempt_at = now + delay` and the last
/// error kept, if this replica still holds the claim. `None`: the row moved on meanwhile
/// (a status webhook settled it).
pub async fn requeue(
    pg: &PgPool,
    id: Uuid,
    owner: &str,
    delay: Duration,
    error: &ErrorInfo,
) -> anyhow::Result<Option<i32>> {
    let mut conn = pg.get().await?;
    let row = diesel::sql_query(
        "UPDATE messages
            SET status = 'queued', retry_count = retry_count + 1,
                next_attempt_at = now() + $3 * interval '1 millisecond',
                lease_owner = NULL, lease_until = NULL,
                error_code = $4, error_category = $5, error_can_retry = $6,
                error_explanation = $7, error_suggested_action = $8, updated_at = now()
          WHERE id = $1 AND status = 'sending' AND lease_owner = $2
         RETURNING retry_count",
    )
    .bind::<SqlUuid, _>(id)
    .bind::<Text, _>(owner)
    .bind::<BigInt, _>(millis(delay))
    .bind::<Int4, _>(error.code)
    .bind::<Text, _>(&error.category)
    .bind::<Bool, _>(error.can_retry)
    .bind::<Text, _>(&error.human_explanation)
    .bind::<Text, _>(&error.suggested_action)
    .get_result::<RetryCount>(&mut conn)
    .await
    .optional_row()?;
    Ok(row.map(|r| r.retry_count))
}

/// The platform accepted the message: wamid beside the id, status `sent` (forward only,
/// campaign counters), lease cleared, the conversation's last outbound moved. Returns the
/// conversation row when its care window is open (for the window cache).
///
/// A message outside a campaign that is still `queued`/`sending` takes a one-statement
/// path with exactly `outcomes::apply_status`'s effect for that move (status, this
/// attempt's wamid, lease cleared, sent_at) plus the conversation update: one round trip
/// instead of five, which is what lets a replica keep up with 1,000 msg/s. Everything else
/// (campaign counters, a status webhook that got there first) goes through
/// `outcomes::apply_status` in a transaction.
pub async fn record_sent(
    pg: &PgPool,
    sent: &Sent<'_>,
) -> anyhow::Result<Option<warden_store::models::Conversation>> {
    let Sent {
        id,
        wamid,
        phone,
        channel,
        in_campaign,
        clear_error,
        at,
    } = *sent;
    let mut conn = pg.get().await?;
    if !in_campaign {
        let clear = if clear_error {
            ", next_attempt_at = NULL, error_code = NULL, error_category = NULL,
               error_can_retry = NULL, error_explanation = NULL, error_suggested_action = NULL"
        } else {
            ""
        };
        let fast = Cached(
            diesel::sql_query(format!(
                "WITH m AS (
               UPDATE messages
                  SET status = 'sent', updated_at = now(), wamid = COALESCE($2, wamid),
                      lease_until = NULL, lease_owner = NULL, sent_at = COALESCE(sent_at, $3){clear}
                WHERE id = $1 AND direction = 'outbound' AND campaign_id IS NULL
                  AND status IN ('queued', 'sending')
                  -- not the record of an attempt a status webhook already failed and requeued
                  AND ($2::text IS NULL OR wamid IS DISTINCT FROM $2 OR error_code IS NULL)
               RETURNING customer_phone, channel),
             c AS (
               UPDATE conversations cv
                  SET last_outbound_at = GREATEST(cv.last_outbound_at, $3), updated_at = now()
                 FROM m WHERE cv.customer_phone = m.customer_phone AND cv.channel = m.channel
               RETURNING cv.last_inbound_at)
             SELECT (SELECT count(*) FROM m) AS moved,
                    (SELECT max(last_inbound_at) FROM c) AS last_inbound_at"
            ))
            .bind::<SqlUuid, _>(id)
            .bind::<Nullable<Text>, _>(wamid)
            .bind::<Timestamptz, _>(at),
        )
        .get_result::<FastSent>(&mut conn)
        .await?;
        if fast.moved > 0 {
            let open = fast
                .last_inbound_at
                .is_some_and(|t| t + warden_rules::window::CARE_WINDOW > Utc::now());
            return Ok(if open {
                warden_core::conversations::find(&mut conn, phone, channel).await?
            } else {
                None
            });
        }
    }
    let conv = conn
        .transaction::<_, diesel::result::Error, _>(async |c| {
            // Clears the lease too (also when a status webhook got there first).
            warden_core::outcomes::apply_status(c, id, "sent", at, wamid, None).await?;
            if clear_error {
                // The errors of earlier attempts no longer describe this message.
                clear_lease(c, id, true).await?;
            }
            warden_core::conversations::record_outbound(c, phone, channel, at).await
        })
        .await?;
    Ok(conv)
}

/// What the platform's acceptance of a message records.
#[derive(Clone, Copy, Debug)]
pub struct Sent<'a> {
    pub id: Uuid,
    pub wamid: Option<&'a str>,
    pub phone: &'a str,
    pub channel: &'a str,
    /// Campaign messages move campaign counters: always through `apply_status`.
    pub in_campaign: bool,
    /// Earlier attempts left an error on the row: clear it.
    pub clear_error: bool,
    pub at: DateTime<Utc>,
}

#[derive(QueryableByName)]
struct FastSent {
    #[diesel(sql_type = BigInt)]
    moved: i64,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    last_inbound_at: Option<DateTime<Utc>>,
}

async fn clear_lease(
    c: &mut AsyncPgConnection,
    id: Uuid,
    clear_error: bool,
) -> diesel::QueryResult<()> {
    let sql = if clear_error {
        "UPDATE messages SET lease_owner = NULL, lease_until = NULL, next_attempt_at = NULL,
                error_code = NULL, error_category = NULL, error_can_retry = NULL,
                error_explanation = NULL, error_suggested_action = NULL
          WHERE id = $1 AND status <> 'failed'"
    } else {
        "UPDATE messages SET lease_owner = NULL, lease_until = NULL
          WHERE id = $1 AND lease_owner IS NOT NULL"
    };
    diesel::sql_query(sql)
        .bind::<SqlUuid, _>(id)
        .execute(c)
        .await
        .map(|_| ())
}

/// What else a failure records beside the message: decided and applied by
/// `warden_core::platform_errors`, the same for a status webhook reporting the error.
pub use warden_core::platform_errors::SideEffect;

/// The message ends `failed` with `error` (forward only), and the side effect happens in
/// the same transaction. Returns (status changed, campaigns paused).
pub async fn record_failed(
    pg: &PgPool,
    id: Uuid,
    phone: &str,
    error: &ErrorInfo,
    effect: &SideEffect,
    actor: &str,
    at: DateTime<Utc>,
) -> anyhow::Result<(bool, usize)> {
    let parsed_phone = phone.parse::<warden_rules::phone::PhoneNumber>().ok();
    let mut conn = pg.get().await?;
    let out = conn
        .transaction::<_, diesel::result::Error, _>(async |c| {
            let changed =
                warden_core::outcomes::apply_status(c, id, "failed", at, None, Some(error)).await?;
            clear_lease(c, id, false).await?;
            let paused = warden_core::platform_errors::apply_effect(
                c,
                effect,
                parsed_phone.as_ref(),
                at,
                actor,
            )
            .await?;
            Ok((changed, paused))
        })
        .await?;
    Ok(out)
}

/// A raw SQL statement whose text never changes between calls (binds vary, text does
/// not), marked safe for diesel's prepared-statement cache. diesel treats every
/// `sql_query` as uncacheable, so Postgres would parse and plan each of these hot
/// statements on every message; cached, it does so once per connection.
pub struct Cached<Q>(pub Q);

impl<Q: QueryFragment<Pg>> QueryFragment<Pg> for Cached<Q> {
    fn walk_ast<'b>(&'b self, pass: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        self.0.walk_ast(pass)
    }

    fn is_safe_to_cache_prepared(&self, _backend: &Pg) -> QueryResult<bool> {
        Ok(true)
    }
}

impl<Q> QueryId for Cached<Q> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<Q: Query> Query for Cached<Q> {
    type SqlType = Q::SqlType;
}

pub fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// `.optional()` for `sql_query` results.
pub trait OptionalRow<T> {
    fn optional_row(self) -> Result<Option<T>, diesel::result::Error>;
}

impl<T> OptionalRow<T> for Result<T, diesel::result::Error> {
    fn optional_row(self) -> Result<Option<T>, diesel::result::Error> {
        match self {
            Ok(v) => Ok(Some(v)),
            Err(diesel::result::Error::NotFound) => Ok(None),
            Err(e) => Err(e),
        }
    }
}
