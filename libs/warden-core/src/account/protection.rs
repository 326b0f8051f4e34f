//! Sender protection: a number whose quality turned RED (the platform's `FLAGGED`
//! quality update) or that met a halt-class platform error (131048 spam rate limit, 131031
//! account locked, 368 policy block) sends no marketing until its quality recovers
//! (`UNFLAGGED`) or an operator resumes it (`resume_sender`). While it holds, marketing
//! sends from that number are refused (`POLICY_RESTRICTION`, policy `sender_protection`)
//! and its campaigns are paused with the reason `sender_protection`; lifting it resumes
//! the campaigns it paused. Other numbers, and service and utility messages, go on.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::Text;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::json;
use warden_rules::campaign_status::CampaignStatus;
use warden_rules::compliance::{Decision, ReasonCode};
use warden_store::schema::sender_protection;

use crate::{Core, CoreError};

/// The policy id of its refusals and the reason of the campaigns it pauses.
pub const SENDER_PROTECTION: &str = "sender_protection";

/// The protection source of a number flagged by its quality (the webhook's
/// `phone_number_quality_update` with `FLAGGED`): the platform rated it RED.
pub const QUALITY_FLAGGED: &str = "quality_flagged";

/// The platform errors that protect the number they came from.
pub const PROTECTING_ERRORS: [i32; 3] = [131048, 131031, 368];

/// Why a sender is protected, and since when.
#[derive(Clone, Debug, PartialEq, Eq, Queryable, Selectable)]
#[diesel(table_name = sender_protection)]
pub struct Protection {
    pub sender_id: String,
    pub reason: String,
    pub source: String,
    pub since: DateTime<Utc>,
}

/// The protection of the sender stored as `sender`, if any.
pub async fn of(mut conn: &AsyncPgConnection, sender: &str) -> QueryResult<Option<Protection>> {
    sender_protection::table
        .find(sender)
        .select(Protection::as_select())
        .first(&mut conn)
        .await
        .optional()
}

/// Every protected sender.
pub async fn all(conn: &mut AsyncPgConnection) -> QueryResult<Vec<Protection>> {
    sender_protection::table
        .select(Protection::as_select())
        .order(sender_protection::sender_id)
        .load(conn)
        .await
}

/// The refusal of a marketing message from a protected sender (`id` as callers name it).
pub fn refusal(id: &str, p: &Protection) -> Decision {
    Decision {
        allowed: false,
        reason_code: ReasonCode::PolicyRestriction,
        human_explanation: format!(
            "sender_protection: the number `{id}` sends no marketing since {} ({}).",
            p.since.to_rfc3339(),
            p.reason
        ),
        suggested_action: format!(
            "Do not retry marketing from `{id}`: send it from another number of the business (`from`), \
             or wait until its quality recovers or an operator calls resume_sender(from: \"{id}\"). \
             Service and utility messages still go out."
        ),
        policy_id: Some(SENDER_PROTECTION.to_string()),
        retry_at: None,
        hold: false,
    }
}

/// Protect the sender stored as `sender` (nothing changes when it already is): its row,
/// an audit row, and its active campaigns paused. Returns how many campaigns it paused.
pub async fn protect(
    conn: &mut AsyncPgConnection,
    sender: &str,
    reason: &str,
    source: &str,
    actor: &str,
) -> QueryResult<usize> {
    let inserted = diesel::insert_into(sender_protection::table)
        .values((
            sender_protection::sender_id.eq(sender),
            sender_protection::reason.eq(reason),
            sender_protection::source.eq(source),
        ))
        .on_conflict_do_nothing()
        .execute(conn)
        .await?;
    if inserted == 0 {
        return Ok(0);
    }
    tracing::error!(
        sender,
        source,
        reason,
        "sender protected: no marketing from it"
    );
    warden_store::audit::record(
        conn,
        actor,
        "sender_protected",
        "sender",
        sender,
        json!({"reason": reason, "source": source}),
    )
    .await?;
    let reason = format!("{SENDER_PROTECTION}: {reason}");
    crate::campaigns::pause_active(conn, &reason, Some(sender), actor).await
}

/// Lift the protection of the sender stored as `sender` (only one set by `only_from`, when
/// given: a recovered quality does not lift what a platform error set): the campaigns it
/// paused run again. False when nothing was lifted.
pub async fn lift(
    conn: &mut AsyncPgConnection,
    sender: &str,
    only_from: Option<&str>,
    source: &str,
    actor: &str,
) -> QueryResult<bool> {
    let removed: Option<Protection> = diesel::delete(
        sender_protection::table.find(sender).filter(
            sender_protection::source
                .eq(only_from.unwrap_or_default())
                .or(only_from.is_none().into_sql::<diesel::sql_types::Bool>()),
        ),
    )
    .returning(Protection::as_returning())
    .get_result(conn)
    .await
    .optional()?;
    let Some(was) = removed else {
        return Ok(false);
    };
    tracing::warn!(sender, source, "sender protection lifted");
    warden_store::audit::record(
        conn,
        actor,
        "sender_resumed",
        "sender",
        sender,
        json!({"source": source, "protected_since": was.since, "reason": was.reason}),
    )
    .await?;
    #[derive(QueryableByName)]
    struct IdRow {
        #[diesel(sql_type = diesel::sql_types::Uuid)]
        id: uuid::Uuid,
    }
    let resumed: Vec<IdRow> = diesel::sql_query(
        "UPDATE campaigns SET status = $2, paused_at = NULL, status_reason = NULL, updated_at = now()
         WHERE status = $3 AND status_reason LIKE $4 AND (sender_id = $1 OR $1 = ANY(senders))
         RETURNING id",
    )
    .bind::<Text, _>(sender)
    .bind::<Text, _>(CampaignStatus::Running.as_str())
    .bind::<Text, _>(CampaignStatus::Paused.as_str())
    .bind::<Text, _>(format!("{SENDER_PROTECTION}%"))
    .load(conn)
    .await?;
    for IdRow { id } in &resumed {
        warden_store::audit::record(
            conn,
            actor,
            "campaign_resumed",
            "campaign",
            &id.to_string(),
            json!({"reason": "sender protection lifted", "sender": sender, "automatic": true}),
        )
        .await?;
    }
    Ok(true)
}

impl Core {
    /// resume_sender: lift the protection of the sender `from` names. False when it was not
    /// protected.
    pub async fn resume_sender(&self, from: &str) -> Result<bool, CoreError> {
        let key = self.sender_keys(Some(from))?.sender;
        let actor = self.actor();
        Ok(
            warden_store::tx::transact::<_, CoreError, _>(self.pg(), "resume_sender", |c| {
                let key = key.clone();
                use futures::FutureExt;
                async move { Ok(lift(c, &key, None, "resume_sender", actor).await?) }.boxed()
            })
            .await?,
        )
    }

    /// The protected senders.
    pub async fn protected_senders(&self) -> Result<Vec<Protection>, CoreError> {
        let mut conn = self.pg().get().await?;
        Ok(all(&mut conn).await?)
    }
}
