//! A customer's answer to a number's call permission request: stored per (sender,
//! customer), newest answer wins whatever order the webhooks arrive in
//! (`warden_rules::call_permission::replaces`), read as a status at a moment
//! (`warden_rules::call_permission::status`).

use chrono::{DateTime, SecondsFormat, Utc};
use diesel::QueryableByName;
use diesel::sql_types::{Bool, Nullable, Text, Timestamptz};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use warden_rules::call_permission::{Answer, Response, status};
use warden_rules::phone::PhoneNumber;

use crate::{Core, CoreError};

/// A customer's `call_permission_reply`, as the webhook parsed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub response: Response,
    pub permanent: bool,
    /// When a temporary grant ends.
    pub expires_at: Option<DateTime<Utc>>,
    /// `user_action` or `automatic`, as the platform said.
    pub source: Option<String>,
}

/// The stored answer of one (sender, customer).
#[derive(QueryableByName, Debug)]
pub struct Stored {
    #[diesel(sql_type = Text)]
    pub response: String,
    #[diesel(sql_type = Bool)]
    pub permanent: bool,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub expires_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = Nullable<Text>)]
    pub source: Option<String>,
    #[diesel(sql_type = Timestamptz)]
    pub updated_at: DateTime<Utc>,
}

impl Stored {
    /// The answer the rules read.
    pub fn answer(&self) -> Answer {
        Answer {
            response: Response::parse(&self.response).unwrap_or(Response::Reject),
            permanent: self.permanent,
            expires_at: self.expires_at,
        }
    }
}

/// The stored answer of `customer` to the number stored as `sender` (its key).
pub async fn stored(
    c: &AsyncPgConnection,
    sender: &str,
    customer: &str,
) -> diesel::QueryResult<Option<Stored>> {
    let mut c = c;
    diesel::sql_query(
        "SELECT response, permanent, expires_at, source, updated_at
           FROM call_permissions WHERE sender_id = $1 AND customer_phone = $2",
    )
    .bind::<Text, _>(sender)
    .bind::<Text, _>(customer)
    .get_result(&mut c)
    .await
    .map(Some)
    .or_else(|e| match e {
        diesel::result::Error::NotFound => Ok(None),
        e => Err(e),
    })
}

/// Stores `reply`, given at `at` (its platform time), as the answer of `customer` to the
/// number stored as `sender`, unless a newer answer is stored already. Returns whether it
/// was stored; audited when it was.
pub async fn record(
    c: &mut AsyncPgConnection,
    sender: &str,
    customer: &PhoneNumber,
    reply: &Reply,
    at: DateTime<Utc>,
    wamid: &str,
    actor: &str,
) -> diesel::QueryResult<bool> {
    // The condition is `warden_rules::call_permission::replaces`, written in SQL so the
    // check and the write are one statement (two webhooks of one customer never interleave).
    let written = diesel::sql_query(
        "INSERT INTO call_permissions
                (sender_id, customer_phone, response, permanent, expires_at, source, replied_at, wamid)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (sender_id, customer_phone) DO UPDATE
            SET response = EXCLUDED.response, permanent = EXCLUDED.permanent,
                expires_at = EXCLUDED.expires_at, source = EXCLUDED.source,
                replied_at = EXCLUDED.replied_at, wamid = EXCLUDED.wamid, updated_at = now()
          WHERE call_permissions.replied_at <= EXCLUDED.replied_at",
    )
    .bind::<Text, _>(sender)
    .bind::<Text, _>(customer.digits())
    .bind::<Text, _>(reply.response.as_str())
    .bind::<Bool, _>(reply.permanent)
    .bind::<Nullable<Timestamptz>, _>(reply.expires_at)
    .bind::<Nullable<Text>, _>(reply.source.as_deref())
    .bind::<Timestamptz, _>(at)
    .bind::<Text, _>(wamid)
    .execute(c)
    .await?;
    if written > 0 {
        warden_store::audit::record(
            c,
            actor,
            "call_permission_changed",
            "customer",
            customer.digits(),
            json!({
                "sender": sender,
                "response": reply.response.as_str(),
                "permanent": reply.permanent,
                "expires_at": reply.expires_at.map(rfc3339),
                "source": reply.source,
            }),
        )
        .await?;
    }
    Ok(written > 0)
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// A customer's call permission as tools show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CallPermissionView {
    /// `granted` (the number may call), `rejected` (the customer said no) or `none` (no
    /// answer, or a temporary grant that ended).
    pub status: String,
    /// The customer's answer was permanent.
    pub permanent: bool,
    /// When the temporary grant ends or ended (RFC 3339); null when permanent or none.
    pub expires_at: Option<String>,
    /// `user_action` (the customer tapped) or `automatic`, as the platform said; null
    /// when there is no answer.
    pub source: Option<String>,
    /// When Warden stored the answer (RFC 3339); null when there is none.
    pub updated_at: Option<String>,
}

impl CallPermissionView {
    /// What `stored` means at `now`.
    pub fn of(stored: Option<&Stored>, now: DateTime<Utc>) -> Self {
        let answer = stored.map(Stored::answer);
        CallPermissionView {
            status: status(answer.as_ref(), now).as_str().to_string(),
            permanent: stored.is_some_and(|s| s.permanent),
            expires_at: stored.and_then(|s| s.expires_at).map(rfc3339),
            source: stored.and_then(|s| s.source.clone()),
            updated_at: stored.map(|s| rfc3339(s.updated_at)),
        }
    }
}

impl Core {
    /// The call permission `phone` gave the sender `from` names (`None`: the default), now.
    pub async fn call_permission(
        &self,
        phone: &PhoneNumber,
        from: Option<&str>,
    ) -> Result<CallPermissionView, CoreError> {
        let keys = self.sender_keys(from)?;
        let phone = self.customer(phone).await?;
        let conn = self.pg().get().await?;
        let row = stored(&conn, &keys.sender, phone.digits()).await?;
        Ok(CallPermissionView::of(row.as_ref(), self.now()))
    }
}
