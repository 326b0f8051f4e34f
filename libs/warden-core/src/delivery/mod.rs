//! The delivery life of an outbound message, as the dispatcher drives it. Postgres is the
//! truth: a message is sent only after one replica's conditional claim
//! (`queued -> sending`, with a lease) succeeded, and a row only goes back to `queued`
//! after a failure that is known not to have delivered (or an unknown outcome after a
//! settle period), so redeliveries and crashes never produce a second send.
//!
//! - [`next_step`]: the pure rule — what a stream message for this row calls for (send,
//!   hold, done, resend an unknown outcome).
//! - [`claim`]: `queued -> sending` for many rows in one statement (`SKIP LOCKED`).
//! - [`record`]: the platform's answer — sent, requeued for a retry, failed (with the
//!   consequence `crate::delivery::platform_errors` decides).
//! - [`unknown_outcome`]: one row's unknown outcome (a timeout, a dead claim): held,
//!   resolved, released.
//! - [`stale_claims`]: the same rule applied, in bulk, to `sending` rows whose claim's lease
//!   ran out and that no stream message drives any more (the dispatcher's sweep).
//!
//! Around that life, in this folder: the [`outbox`] (accepted rows still to reach the
//! stream, for the relay), campaign chunks' [`publish_batches`] (published, not yet
//! acknowledged), status webhooks ([`statuses`]) and the one forward-only status
//! move ([`outcomes`]), what a platform error does ([`platform_errors`]) and means
//! ([`knowledge`], the error knowledge base), sync_webhooks' repairs ([`reconcile`]), retry_failed_messages
//! and its audit ([`retries`]) and get_delivery_status ([`tracking`]).
//!
//! The dispatcher crate keeps the stream, the rate limits, the platform call and the
//! metrics; every state change of a message row it causes is one of these functions.

/// SQL over a campaign row `c`: true while the campaign holds back the messages it already
/// queued (cancelled, or paused by hand). A pause by a rule (`paused_by_rule`: the
/// messaging limit) stops new recipients but lets what it had accepted go out. The claim
/// and the outbox relay both read it, so they never disagree.
macro_rules! campaign_holds_queued {
    () => {
        "(c.status = 'cancelled' OR (c.status = 'paused' AND c.paused_by_rule IS NULL))"
    };
}

/// SQL: the message `m` is in a campaign chunk's open publish batch (`publish_batches`).
macro_rules! in_open_publish_batch {
    () => {
        "EXISTS (SELECT 1 FROM message_handoffs h WHERE m.id = ANY (h.message_ids))"
    };
}

pub mod claim;
pub mod knowledge;
pub mod next_step;
pub mod outbox;
pub mod outcomes;
pub mod platform_errors;
pub mod publish_batches;
pub mod reconcile;
pub mod record;
pub mod retries;
pub mod stale_claims;
pub mod statuses;
pub mod tracking;
pub mod unknown_outcome;

use std::convert::Infallible;

use chrono::{DateTime, Utc};
use diesel::QueryableByName;
use diesel::sql_types::{Bool, Int4, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use uuid::Uuid;
use warden_rules::message_status::MessageStatus;
use warden_store::tx::TxError;
use warden_store::{DbError, PgPool};

use crate::sql::{Cached, OptionalRow};

pub use claim::{Claimed, claim_many};
pub use next_step::{Plan, UnknownOutcome, Why, plan};
pub use record::{Failed, Sent, record_failed, record_sent, requeue};
pub use unknown_outcome::{adopt_dead_claim, clear_resolved, end_lease, release_dead_claim};

/// A delivery write or read failed; classified once by the store.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(transparent)]
pub struct DeliveryError(#[from] pub DbError);

impl DeliveryError {
    /// Worth trying again later (busy or unavailable; nothing was written).
    pub fn is_retryable(&self) -> bool {
        self.0.is_retryable()
    }
}

impl From<diesel::result::Error> for DeliveryError {
    fn from(e: diesel::result::Error) -> Self {
        DeliveryError(DbError::from(e))
    }
}

impl<E: std::error::Error + 'static> From<bb8::RunError<E>> for DeliveryError {
    fn from(e: bb8::RunError<E>) -> Self {
        DeliveryError(DbError::from(e))
    }
}

impl From<TxError<Infallible>> for DeliveryError {
    fn from(e: TxError<Infallible>) -> Self {
        match e {
            TxError::Db(e) => DeliveryError(e),
            TxError::App(never) => match never {},
        }
    }
}

/// What the dispatcher reads of a message before deciding.
#[derive(Clone, Debug, QueryableByName)]
pub struct DeliveryRow {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = Text)]
    pub customer_phone: String,
    #[diesel(sql_type = Text)]
    pub channel: String,
    #[diesel(sql_type = Text)]
    pub direction: String,
    /// `None`: a stored spelling this version does not know (nothing is sent for it).
    #[diesel(sql_type = Text, deserialize_as = StoredStatus)]
    pub status: Option<MessageStatus>,
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
    /// The stored key of the sender it goes out from (`default`: the default sender).
    #[diesel(sql_type = Text)]
    pub sender_id: String,
    /// Its category as sent (`marketing`, `utility`, `service`, ...): a marketing template
    /// of a sender with the Marketing Messages API goes out through it.
    #[diesel(sql_type = Text)]
    pub category: String,
}

impl DeliveryRow {
    /// Its status spelled as stored (`unknown` for a spelling this version does not know).
    pub fn status_str(&self) -> &'static str {
        self.status.map_or("unknown", MessageStatus::as_str)
    }
}

/// `messages.status` as read: a known status, or `None`.
struct StoredStatus(Option<MessageStatus>);

impl diesel::deserialize::FromSql<Text, diesel::pg::Pg> for StoredStatus {
    fn from_sql(bytes: diesel::pg::PgValue<'_>) -> diesel::deserialize::Result<Self> {
        let s = <String as diesel::deserialize::FromSql<Text, diesel::pg::Pg>>::from_sql(bytes)?;
        Ok(StoredStatus(s.parse().ok()))
    }
}

impl From<StoredStatus> for Option<MessageStatus> {
    fn from(s: StoredStatus) -> Self {
        s.0
    }
}

/// The select list of [`DeliveryRow`] over `messages m LEFT JOIN campaigns c`.
pub(crate) const ROW_COLUMNS: &str = "m.id, m.customer_phone, m.channel, m.direction, m.status, m.content,
                m.template_name, m.template_locale, m.campaign_id,
                CASE WHEN c.status = 'paused' AND c.paused_by_rule IS NOT NULL
                     THEN 'paused_by_rule' ELSE c.status END AS campaign_status,
                m.deliver_at, m.next_attempt_at, m.lease_until,
                m.retry_count, (m.error_code IS NOT NULL) AS has_error, m.updated_at AS claimed_at,
                CASE WHEN m.status = 'sending'
                     THEN (SELECT status_through FROM webhook_progress WHERE id = 1) END AS webhooks_through,
                CASE WHEN m.status = 'sending'
                     THEN (SELECT advanced_at FROM webhook_progress WHERE id = 1) END AS webhooks_advanced_at,
                m.unknown_since, now() AS db_now,
                COALESCE((SELECT sender_id FROM message_senders s WHERE s.message_id = m.id),
                         'default') AS sender_id, m.category";

/// The row a stream message is about, with its campaign's status and the webhooks'
/// progress; `None` when there is no such message.
pub async fn load(pg: &PgPool, id: Uuid) -> Result<Option<DeliveryRow>, DeliveryError> {
    let mut conn = pg.get().await?;
    Ok(Cached(
        diesel::sql_query(format!(
            "SELECT {ROW_COLUMNS}
               FROM messages m LEFT JOIN campaigns c ON c.id = m.campaign_id
              WHERE m.id = $1"
        ))
        .bind::<SqlUuid, _>(id),
    )
    .get_result::<DeliveryRow>(&mut conn)
    .await
    .optional_row()?)
}
