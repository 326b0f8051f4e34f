//! The platform's answer to a call, recorded: sent, put back for a retry, or failed with
//! the consequence [`crate::delivery::platform_errors::consequence`] decided.

use std::convert::Infallible;
use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Bool, Int4, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures::FutureExt;
use uuid::Uuid;
use warden_rules::message_status::MessageStatus;
use warden_store::PgPool;
use warden_store::models::Conversation;
use warden_store::tx::{Abort, transact};

use super::DeliveryError;
use crate::delivery::knowledge::ErrorInfo;
use crate::delivery::platform_errors::SideEffect;
use crate::sql::{Cached, OptionalRow, millis};

#[derive(QueryableByName)]
struct RetryCount {
    #[diesel(sql_type = Int4)]
    retry_count: i32,
}

/// A retryable failure: back to `queued` with `next_attempt_at = now + delay` and the last
/// error kept, if `owner` still holds the claim. Returns the row's retry count; `None`:
/// the row moved on meanwhile (a status webhook settled it).
pub async fn requeue(
    pg: &PgPool,
    id: Uuid,
    owner: &str,
    delay: Duration,
    error: &ErrorInfo,
) -> Result<Option<i32>, DeliveryError> {
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

/// What the platform's acceptance of a message records.
#[derive(Clone, Copy, Debug)]
pub struct Sent<'a> {
    pub id: Uuid,
    pub wamid: Option<&'a str>,
    pub phone: &'a str,
    pub channel: &'a str,
    /// The stored key of the sender it went out from.
    pub sender: &'a str,
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
) -> Result<Option<Conversation>, DeliveryError> {
    let Sent {
        id,
        wamid,
        phone,
        channel,
        sender,
        in_campaign,
        clear_error,
        at,
    } = *sent;
    if !in_campaign {
        let mut conn = pg.get().await?;
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
                  AND cv.sender_id = $4
               RETURNING cv.last_inbound_at)
             SELECT (SELECT count(*) FROM m) AS moved,
                    (SELECT max(last_inbound_at) FROM c) AS last_inbound_at"
            ))
            .bind::<SqlUuid, _>(id)
            .bind::<Nullable<Text>, _>(wamid)
            .bind::<Timestamptz, _>(at)
            .bind::<Text, _>(sender),
        )
        .get_result::<FastSent>(&mut conn)
        .await?;
        if fast.moved > 0 {
            let open = fast
                .last_inbound_at
                .is_some_and(|t| t + warden_rules::window::CARE_WINDOW > Utc::now());
            return Ok(if open {
                crate::conversations::find(&conn, phone, channel, sender).await?
            } else {
                None
            });
        }
    }
    // Owned: each attempt of the transaction borrows nothing but its connection.
    let (wamid, phone, channel, sender) = (
        wamid.map(str::to_owned),
        phone.to_owned(),
        channel.to_owned(),
        sender.to_owned(),
    );
    let conv = transact(pg, "record_sent", move |c| {
        let (wamid, phone, channel, sender) = (
            wamid.clone(),
            phone.clone(),
            channel.clone(),
            sender.clone(),
        );
        async move {
            // Clears the lease too (also when a status webhook got there first).
            crate::delivery::outcomes::apply_status(
                c,
                id,
                MessageStatus::Sent,
                at,
                wamid.as_deref(),
                None,
            )
            .await?;
            if clear_error {
                // The errors of earlier attempts no longer describe this message.
                clear_lease(c, id, true).await?;
            }
            Ok::<_, Abort<Infallible>>(
                crate::conversations::record_outbound(c, &phone, &channel, &sender, at).await?,
            )
        }
        .boxed()
    })
    .await?;
    Ok(conv)
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

/// What [`record_failed`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Failed {
    /// The row moved to `failed` (false: it had already moved past it).
    pub changed: bool,
    /// Campaigns the side effect paused (halt-class errors).
    pub campaigns_paused: usize,
}

/// The message ends `failed` with `error` (forward only), and the failure's side effect
/// (opt-out, undeliverable, marketing limit, pause campaigns) happens in the same
/// transaction, audited as `actor`.
pub async fn record_failed(
    pg: &PgPool,
    id: Uuid,
    phone: &str,
    error: &ErrorInfo,
    effect: &SideEffect,
    actor: &'static str,
    at: DateTime<Utc>,
) -> Result<Failed, DeliveryError> {
    let phone = warden_rules::bsuid::customer_key(phone).ok();
    let (error, effect) = (error.clone(), effect.clone());
    Ok(transact(pg, "record_failed", move |c| {
        let (phone, error, effect) = (phone.clone(), error.clone(), effect.clone());
        async move {
            let changed = crate::delivery::outcomes::apply_status(
                c,
                id,
                MessageStatus::Failed,
                at,
                None,
                Some(&error),
            )
            .await?;
            clear_lease(c, id, false).await?;
            let campaigns_paused = crate::delivery::platform_errors::apply_effect(
                c,
                id,
                &effect,
                phone.as_ref(),
                at,
                actor,
            )
            .await?;
            Ok::<_, Abort<Infallible>>(Failed {
                changed,
                campaigns_paused,
            })
        }
        .boxed()
    })
    .await?)
}
