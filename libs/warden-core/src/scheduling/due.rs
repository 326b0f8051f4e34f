//! Scheduled messages (the rows schedule_message writes, `scheduled` until `deliver_at`):
//! claimed when due by one scheduler at a time, then sent through the one send path
//! ([`Core::send`] with the row's id) or, when the stored request cannot be sent at all,
//! ended `failed`. The scheduler keeps the loop and the timing (`warden_scheduler`).
//!
//! A claim is `FOR UPDATE SKIP LOCKED` plus a lease (`lease_owner`, `lease_until`): several
//! schedulers never claim the same row, and a claim left by a crashed one is taken over
//! once its lease has expired. A row is never dispatched twice because `Core::send` only
//! advances a row that is still `scheduled`.

use std::time::Duration;

use chrono::Utc;
use diesel::sql_types::{Array, BigInt, Double, Jsonb, Nullable, Text, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use futures::FutureExt;
use serde_json::json;
use uuid::Uuid;
use warden_rules::bsuid::CustomerIdError;
use warden_rules::kinds::{KindError, MessageType};
use warden_store::PgPool;
use warden_store::models::message_status::FAILED;
use warden_store::tx::transact;

use crate::delivery::knowledge::ErrorInfo;
use crate::{Core, CoreError, RefusalMode, SendError, SendKind, SendRequest, db};

/// A claimed due row, as stored.
#[derive(diesel::QueryableByName, Debug, Clone)]
pub struct DueMessage {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = Text)]
    pub customer_phone: String,
    #[diesel(sql_type = Text)]
    pub channel: String,
    #[diesel(sql_type = Text)]
    pub message_type: String,
    #[diesel(sql_type = Jsonb)]
    pub content: serde_json::Value,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    pub campaign_id: Option<Uuid>,
}

/// Why a stored scheduled message cannot be turned into a send at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unsendable {
    #[error("customer_id {phone:?}: {error}")]
    Phone {
        phone: String,
        error: CustomerIdError,
    },
    #[error("message_type: {0}")]
    MessageType(KindError),
    #[error("content: {0}")]
    Content(String),
}

impl DueMessage {
    /// The send request of this row (refusals recorded on it).
    pub fn request(&self, actor: &'static str) -> Result<SendRequest, Unsendable> {
        let phone = warden_rules::bsuid::customer_key(&self.customer_phone).map_err(|error| {
            Unsendable::Phone {
                phone: self.customer_phone.clone(),
                error,
            }
        })?;
        let message_type: MessageType =
            self.message_type.parse().map_err(Unsendable::MessageType)?;
        let kind = SendKind::from_content(&self.content)
            .map_err(|e| Unsendable::Content(e.to_string()))?;
        Ok(SendRequest {
            phone,
            channel: self.channel.clone(),
            kind,
            message_type,
            campaign_id: self.campaign_id,
            existing_message_id: Some(self.id),
            refusal: RefusalMode::RecordFailed,
            actor,
            // As recorded on the message.
            sender: None,
        })
    }
}

/// Claim up to `limit` due rows for `owner` for `lease`: still `scheduled`, `deliver_at`
/// reached, lease free or expired. `SKIP LOCKED` keeps concurrent schedulers off each
/// other's rows, the lease keeps them off rows being dispatched after the claim committed.
pub async fn claim_due(
    pg: &PgPool,
    owner: &str,
    lease: Duration,
    limit: i64,
) -> Result<Vec<DueMessage>, CoreError> {
    db::load(pg, "scheduled_claim", || {
        diesel::sql_query(
            "UPDATE messages SET lease_owner = $1, lease_until = now() + make_interval(secs => $2)
             WHERE id IN (
                 SELECT id FROM messages
                 WHERE status = 'scheduled' AND deliver_at <= now()
                   AND (lease_until IS NULL OR lease_until < now())
                   -- A held message of a paused campaign waits for resume_campaign.
                   AND (campaign_id IS NULL OR NOT EXISTS (
                        SELECT 1 FROM campaigns c WHERE c.id = messages.campaign_id AND c.status = 'paused'))
                 ORDER BY deliver_at
                 LIMIT $3
                 FOR UPDATE SKIP LOCKED)
             RETURNING id, customer_phone, channel, message_type, content, campaign_id",
        )
        .into_boxed()
        .bind::<Text, _>(owner.to_string())
        .bind::<Double, _>(lease.as_secs_f64())
        .bind::<BigInt, _>(limit)
    })
    .await
}

/// Give back `owner`'s lease of the rows `ids` that are still scheduled (not dispatched
/// now: the next poll tries them again).
pub async fn release(pg: &PgPool, owner: &str, ids: &[Uuid]) -> Result<usize, CoreError> {
    release_where(pg, owner, Some(ids)).await
}

/// Give back every lease of a scheduled row `owner` holds (shutdown).
pub async fn release_owned(pg: &PgPool, owner: &str) -> Result<usize, CoreError> {
    release_where(pg, owner, None).await
}

async fn release_where(pg: &PgPool, owner: &str, ids: Option<&[Uuid]>) -> Result<usize, CoreError> {
    db::execute(pg, "scheduled_release", || {
        diesel::sql_query(
            "UPDATE messages SET lease_until = NULL, lease_owner = NULL
             WHERE lease_owner = $1 AND status = 'scheduled'
               AND ($2::uuid[] IS NULL OR id = ANY($2))",
        )
        .into_boxed()
        .bind::<Text, _>(owner.to_string())
        .bind::<Nullable<Array<SqlUuid>>, _>(ids.map(<[Uuid]>::to_vec))
    })
    .await
}

/// A scheduled row that cannot be turned into a send at all (bad content, unknown type):
/// it ends `failed` with an `invalid_request` error saying why (audited). Only a row that
/// is still `scheduled` is touched: false when it had moved on.
pub async fn fail_invalid(
    pg: &PgPool,
    id: Uuid,
    reason: &str,
    actor: &'static str,
) -> Result<bool, CoreError> {
    #[derive(diesel::QueryableByName)]
    struct Found {
        #[diesel(sql_type = SqlUuid)]
        id: Uuid,
    }
    let changed = transact::<_, CoreError, _>(pg, "scheduled_fail_invalid", |c| {
        let reason = reason.to_string();
        async move {
            let found: Vec<Found> = diesel::sql_query(
                "SELECT id FROM messages WHERE id = $1 AND status = 'scheduled' FOR UPDATE",
            )
            .bind::<SqlUuid, _>(id)
            .load(c)
            .await?;
            if !found.iter().any(|f| f.id == id) {
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
                    "Schedule it again with schedule_message and a valid message_type and content."
                        .into(),
            };
            crate::delivery::outcomes::apply_status(c, id, FAILED, Utc::now(), None, Some(&error))
                .await?;
            warden_store::audit::record(
                c,
                actor,
                "scheduled_message_invalid",
                "message",
                &id.to_string(),
                json!({"reason": reason}),
            )
            .await?;
            Ok(true)
        }
        .boxed()
    })
    .await?;
    Ok(changed)
}

/// What dispatching one claimed row came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dispatched {
    /// Accepted: `queued` (and published by `Core::send`).
    Queued,
    /// Refused by compliance or policy: `failed` with the reason.
    Refused,
    /// Refused by a rule that lifts by itself: still `scheduled`, due again when it lifts.
    Held,
    /// The stored request cannot be sent: `failed` with `invalid_request`.
    Invalid,
    /// Not sent now (database trouble): the caller releases its lease, the next poll
    /// tries again.
    Retry,
    /// Someone else moved the row on (not ours any more).
    Gone,
}

/// Send one claimed row through [`Core::send`] (`core`'s actor), or end it failed when it
/// cannot be sent at all.
pub async fn dispatch(core: &Core, row: &DueMessage) -> Dispatched {
    let request = match row.request(core.actor()) {
        Ok(r) => r,
        Err(why) => return fail_unsendable(core, row.id, &why.to_string()).await,
    };
    match core.send(request).await {
        Ok(_) => Dispatched::Queued,
        Err(SendError::Held { decision, .. }) => {
            tracing::info!(message_id = %row.id, reason = decision.reason_code.as_str(), until = ?decision.retry_at, "scheduled message held");
            Dispatched::Held
        }
        Err(SendError::RefusedRecorded { decision, .. }) => {
            tracing::info!(message_id = %row.id, reason = decision.reason_code.as_str(), "scheduled message refused at dispatch");
            Dispatched::Refused
        }
        Err(
            SendError::Unavailable(reason)
            | SendError::Busy {
                message: reason, ..
            },
        ) => {
            tracing::warn!(message_id = %row.id, %reason, "scheduled message not dispatched; retrying next poll");
            Dispatched::Retry
        }
        // Not a compliance decision: the stored request itself cannot be sent (or the
        // row moved on meanwhile, which fail_invalid notices and leaves alone).
        Err(other) => fail_unsendable(core, row.id, &other.to_string()).await,
    }
}

async fn fail_unsendable(core: &Core, id: Uuid, reason: &str) -> Dispatched {
    match fail_invalid(core.pg(), id, reason, core.actor()).await {
        Ok(true) => {
            tracing::warn!(message_id = %id, reason, "scheduled message cannot be sent; marked failed");
            Dispatched::Invalid
        }
        Ok(false) => Dispatched::Gone,
        Err(e) => {
            tracing::warn!(message_id = %id, error = %e, "could not mark scheduled message failed; retrying next poll");
            Dispatched::Retry
        }
    }
}
