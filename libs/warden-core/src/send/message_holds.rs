//! Refusals that wait instead of failing. A scheduled or campaign message
//! refused by a rule that lifts by itself — quiet hours with `action: hold`, a customer
//! held after 131049, the portfolio messaging limit — stays `scheduled` with `deliver_at`
//! moved to when it lifts (`message_holds` says why); the scheduler sends it through
//! [`Core::send`] again then, so it is checked again. A new campaign recipient refused by
//! the portfolio limit pauses its campaign instead (reason `messaging_limit`), to go on
//! with resume_campaign.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use diesel::sql_types::{Array, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures::FutureExt;
use serde_json::json;
use uuid::Uuid;
use warden_rules::campaign_status::CampaignStatus;
use warden_rules::compliance::Decision;
use warden_rules::kinds::Category;
use warden_rules::message_status::MessageStatus;
use warden_store::tx::{Abort, transact_on};

use super::error::SendError;
use crate::send::{SendRequest, insert_message};
use crate::{Core, customers};

/// The `message_holds.reason` of a decision: the rule that held it.
/// Why `message_id` waits until `until` (one row per message; each hold counts), audited
/// as `message_held` with `detail` added to the reason and the time.
pub(crate) async fn note_hold(
    c: &mut AsyncPgConnection,
    message_id: Uuid,
    reason: &str,
    until: DateTime<Utc>,
    actor: &str,
    mut detail: serde_json::Value,
) -> diesel::QueryResult<()> {
    diesel::sql_query(
        "INSERT INTO message_holds (message_id, reason, held_until) VALUES ($1, $2, $3)
         ON CONFLICT (message_id) DO UPDATE SET reason = EXCLUDED.reason,
                held_until = EXCLUDED.held_until, holds = message_holds.holds + 1,
                updated_at = now()",
    )
    .bind::<SqlUuid, _>(message_id)
    .bind::<Text, _>(reason)
    .bind::<Timestamptz, _>(until)
    .execute(c)
    .await?;
    detail["reason"] = json!(reason);
    detail["until"] = json!(until);
    warden_store::audit::record(
        c,
        actor,
        "message_held",
        "message",
        &message_id.to_string(),
        detail,
    )
    .await
}

pub(super) fn hold_reason(d: &Decision) -> String {
    d.policy_id
        .clone()
        .unwrap_or_else(|| d.reason_code.as_str().to_string())
}

impl Core {
    /// Hold the message of `req` until `until`: an existing `scheduled` row moves its
    /// `deliver_at`; a new campaign recipient gets a `scheduled` row. `None` when the
    /// existing row is no longer `scheduled` (the caller records the refusal instead).
    pub(crate) async fn record_hold(
        &self,
        conn: &mut AsyncPgConnection,
        req: &SendRequest,
        category: Category,
        decision: &Decision,
        until: DateTime<Utc>,
    ) -> Result<Option<Uuid>, SendError> {
        let message_id = req.existing_message_id.unwrap_or_else(Uuid::now_v7);
        let (shared_req, reason) = (Arc::new(req.clone()), hold_reason(decision));
        let keys = self.keys_for(req);
        let actor = req.actor;
        let held = transact_on(conn, "record_hold", move |c| {
            let (req, reason, keys) = (Arc::clone(&shared_req), reason.clone(), keys.clone());
            async move {
                if req.existing_message_id.is_some() {
                    let moved = diesel::sql_query(
                        "UPDATE messages SET deliver_at = $2, lease_owner = NULL, lease_until = NULL,
                                updated_at = now()
                         WHERE id = $1 AND status = 'scheduled'",
                    )
                    .bind::<SqlUuid, _>(message_id)
                    .bind::<Timestamptz, _>(until)
                    .execute(c)
                    .await?;
                    if moved == 0 {
                        return Ok(false);
                    }
                } else {
                    customers::ensure(c, &req.phone).await?;
                    insert_message(
                        c,
                        &req,
                        &keys,
                        message_id,
                        category.as_str(),
                        MessageStatus::Scheduled,
                        None,
                    )
                    .await?;
                    diesel::sql_query("UPDATE messages SET deliver_at = $2 WHERE id = $1")
                        .bind::<SqlUuid, _>(message_id)
                        .bind::<Timestamptz, _>(until)
                        .execute(c)
                        .await?;
                }
                note_hold(c, message_id, &reason, until, actor, json!({})).await?;
                Ok::<_, Abort<SendError>>(true)
            }
            .boxed()
        })
        .await?;
        if held {
            tracing::info!(%message_id, %until, rule = hold_reason(decision), "message held until the rule lifts");
        }
        Ok(held.then_some(message_id))
    }

    /// The portfolio limit stopped a new recipient of `campaign_id`: the campaign pauses
    /// with reason `messaging_limit` (audited). False when it was no longer active.
    pub(crate) async fn pause_for_limit(
        &self,
        conn: &mut AsyncPgConnection,
        campaign_id: Uuid,
        decision: &Decision,
        actor: &'static str,
    ) -> Result<bool, SendError> {
        let reason = decision.human_explanation.clone();
        let paused = transact_on(conn, "campaign_pause_messaging_limit", move |c| {
            let reason = reason.clone();
            async move {
                let n = diesel::sql_query(
                    "UPDATE campaigns SET status = $2, paused_at = now(), status_reason = $3,
                            paused_by_rule = $5, updated_at = now()
                     WHERE id = $1 AND status = ANY($4)",
                )
                .bind::<SqlUuid, _>(campaign_id)
                .bind::<Text, _>(CampaignStatus::Paused.as_str())
                .bind::<Text, _>(&reason)
                .bind::<Array<Text>, _>(CampaignStatus::names(&CampaignStatus::ACTIVE))
                .bind::<Text, _>(warden_rules::platform_limits::MESSAGING_LIMIT)
                .execute(c)
                .await?;
                if n > 0 {
                    warden_store::audit::record(
                        c,
                        actor,
                        "campaign_paused",
                        "campaign",
                        &campaign_id.to_string(),
                        json!({"reason": reason, "rule": warden_rules::platform_limits::MESSAGING_LIMIT}),
                    )
                    .await?;
                }
                Ok::<_, Abort<SendError>>(n > 0)
            }
            .boxed()
        })
        .await?;
        if paused {
            tracing::warn!(%campaign_id, "portfolio messaging limit reached: campaign paused");
        }
        Ok(paused)
    }
}
