//! Privacy: content retention and forgetting a customer (docs/compliance.md, Privacy).
//!
//! - [`redact_older_than`]: the content of messages older than `MESSAGE_CONTENT_RETENTION`
//!   is erased (`content` keeps only `type` and the platform `timestamp`; `redacted_at` set); type, status, timestamps, ids and
//!   error fields stay. Messages still on their way (scheduled, queued, sending) keep their
//!   content until they settle: the dispatcher needs it.
//! - [`forget`]: `warden-admin customers forget PHONE` erases every message's content and
//!   the customer's profile (tags, engagement, last interaction), opts them out of
//!   everything and records a suppression, so every later send to the number is
//!   `USER_OPTED_OUT` on every path (they all read the customer's consents) and nothing —
//!   not even the customer's own START — lifts it. One audit row says it happened.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text, Timestamptz};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures::FutureExt;
use serde_json::json;
use warden_rules::message_status::MessageStatus;
use warden_rules::phone::PhoneNumber;
use warden_store::schema::{customers, suppressions};
use warden_store::tx::{Abort, TxError, transact};
use warden_store::{DbError, PgPool};

/// The opt-change reason of a forgotten customer. It reads as the customer's own opt-out
/// (`stop via ...`), so imports never lift it either.
pub const FORGOTTEN_REASON: &str = "stop via forget";

/// What erased content keeps: the message's type and the platform's timestamp (no
/// content), so the normalised view still says what kind of message it was.
const REDACTED_CONTENT: &str = "jsonb_strip_nulls(jsonb_build_object('type', content->'type', 'timestamp', content->'timestamp'))";

/// Statuses whose messages are settled: their content is no longer needed to send them.
const SETTLED: [MessageStatus; 5] = [
    MessageStatus::Sent,
    MessageStatus::Delivered,
    MessageStatus::Read,
    MessageStatus::Failed,
    MessageStatus::Received,
];

fn settled() -> Vec<&'static str> {
    SETTLED.iter().map(|s| s.as_str()).collect()
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// Redact at most `batch` settled messages created before `cutoff` (oldest first) and
/// audit the run. Returns how many were redacted: `batch` means there may be more.
pub async fn redact_older_than(
    pg: &PgPool,
    cutoff: DateTime<Utc>,
    batch: i64,
    actor: &'static str,
) -> Result<u64, DbError> {
    let result = transact(pg, "redact old content", move |c| {
        async move {
            // SKIP LOCKED: two schedulers split the work instead of waiting on each other.
            let n = diesel::sql_query(format!(
                "WITH doomed AS (
                     SELECT id FROM messages
                      WHERE redacted_at IS NULL AND created_at < $1 AND status = ANY($2)
                      ORDER BY created_at
                      LIMIT $3
                      FOR UPDATE SKIP LOCKED)
                 , done AS (
                     UPDATE messages m SET content = {REDACTED_CONTENT}, redacted_at = now()
                       FROM doomed WHERE m.id = doomed.id
                     RETURNING 1)
                 SELECT count(*) AS n FROM done"
            ))
            .bind::<Timestamptz, _>(cutoff)
            .bind::<diesel::sql_types::Array<Text>, _>(settled())
            .bind::<BigInt, _>(batch)
            .get_result::<Count>(c)
            .await?
            .n;
            if n > 0 {
                warden_store::audit::record(
                    c,
                    actor,
                    "message_content_redacted",
                    "messages",
                    "retention",
                    json!({"messages": n, "created_before": cutoff}),
                )
                .await?;
            }
            Ok::<_, Abort<std::convert::Infallible>>(n as u64)
        }
        .boxed()
    })
    .await;
    match result {
        Ok(n) => Ok(n),
        Err(TxError::App(never)) => match never {},
        Err(TxError::Db(e)) => Err(e),
    }
}

/// What [`forget`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Forgotten {
    /// Messages whose content was erased now.
    pub messages_redacted: u64,
    /// The number was suppressed before (forgetting again changes nothing more).
    pub already_suppressed: bool,
}

/// Forget a customer (see the module docs). Works for a number never seen too: the
/// suppression holds from now on.
pub async fn forget(
    pg: &PgPool,
    phone: &PhoneNumber,
    actor: &'static str,
) -> Result<Forgotten, DbError> {
    let phone = phone.clone();
    let result = transact(pg, "forget customer", move |c| {
        let phone = phone.clone();
        async move {
            let out = forget_in(c, &phone, actor).await?;
            Ok::<_, Abort<std::convert::Infallible>>(out)
        }
        .boxed()
    })
    .await;
    match result {
        Ok(f) => Ok(f),
        Err(TxError::App(never)) => match never {},
        Err(TxError::Db(e)) => Err(e),
    }
}

async fn forget_in(
    c: &mut AsyncPgConnection,
    phone: &PhoneNumber,
    actor: &str,
) -> QueryResult<Forgotten> {
    let digits = phone.digits();
    // The row stays (locked, so a concurrent send waits and then sees the opt-outs): a
    // deleted customer would come back opted in at the next send.
    crate::customers::ensure_locked(c, phone).await?;
    let now = Utc::now();
    diesel::update(customers::table.find(digits))
        .set((
            customers::opt_in_marketing.eq(false),
            customers::opt_in_utility.eq(false),
            customers::opt_changed_at.eq(now),
            customers::opt_change_reason.eq(FORGOTTEN_REASON),
            customers::tags.eq(Vec::<String>::new()),
            customers::engagement_score.eq(0.0),
            customers::last_interaction_at.eq(None::<DateTime<Utc>>),
            customers::updated_at.eq(now),
        ))
        .execute(c)
        .await?;
    let inserted = diesel::insert_into(suppressions::table)
        .values((
            suppressions::phone.eq(digits),
            suppressions::reason.eq("forgotten"),
        ))
        .on_conflict(suppressions::phone)
        .do_nothing()
        .execute(c)
        .await?;
    let redacted = diesel::sql_query(format!(
        "UPDATE messages SET content = {REDACTED_CONTENT}, redacted_at = $2
          WHERE customer_phone = $1 AND redacted_at IS NULL"
    ))
    .bind::<Text, _>(digits)
    .bind::<Timestamptz, _>(now)
    .execute(c)
    .await? as u64;
    warden_store::audit::record(
        c,
        actor,
        "customer_forgotten",
        "customer",
        digits,
        json!({"messages_redacted": redacted, "suppressed": true, "already_suppressed": inserted == 0}),
    )
    .await?;
    tracing::info!(messages_redacted = redacted, "customer forgotten");
    Ok(Forgotten {
        messages_redacted: redacted,
        already_suppressed: inserted == 0,
    })
}
