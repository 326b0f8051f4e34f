//! The last look before the platform call, and what a retry may not undo.
//!
//! A message accepted minutes ago may have lost its right to leave since: the customer
//! wrote STOP, the care window closed under a scheduled free-form text, the template was
//! paused. The dispatcher asks [`before_send`] right before it calls the platform; the rule
//! itself is pure (`warden_rules::recheck::recheck`), this gathers its facts in one
//! indexed query and, on a refusal, ends the message `failed` with a `compliance` error
//! (`can_retry: false`). [`retry_refusal`] is why retry_failed_messages leaves such a
//! message alone: resending it would only be refused again, or worse, slip past a rule.

use std::convert::Infallible;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use futures::FutureExt;
use serde_json::json;
use uuid::Uuid;
use warden_rules::compliance::Decision;
use warden_rules::kinds::{ContentKind, TemplateCategory};
use warden_rules::message_status::MessageStatus;
use warden_rules::recheck::RecheckInput;
use warden_store::PgPool;
use warden_store::models::Message;
use warden_store::tx::{Abort, transact_on};

use crate::CoreError;

/// The recheck's answer.
#[derive(Clone, Debug, PartialEq)]
pub enum Recheck {
    /// Nothing changed that forbids it: call the platform.
    Send,
    /// Refused; the message is now `failed` with a compliance error (or was settled by
    /// someone else meanwhile). Do not call the platform.
    Refused(Decision),
}

/// What the recheck reads of a message, its template, its customer and its conversation.
#[derive(diesel::QueryableByName)]
struct Facts {
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
    template_name: Option<String>,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
    category: Option<String>,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
    template_status: Option<String>,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Bool>)]
    opt_in_marketing: Option<bool>,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Bool>)]
    opt_in_utility: Option<bool>,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Timestamptz>)]
    last_inbound_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Timestamptz>)]
    marketing_limited_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
    holder: Option<String>,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Timestamptz>)]
    holder_since: Option<DateTime<Utc>>,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
    holder_by: Option<String>,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Timestamptz>)]
    holder_until: Option<DateTime<Utc>>,
    /// Who asked for the message (`message_actors`): an operator's is never held.
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
    sent_by: Option<String>,
}

/// Loads what the recheck needs in one query, for the number the message goes out from
/// (`message_senders`; no row: the default sender): its business's template (category and
/// status now) and consent (the default business's on the customer row, another's in
/// `business_consent`, where no row means opted in), and that number's conversation.
async fn facts(
    conn: &mut diesel_async::AsyncPgConnection,
    message_id: Uuid,
) -> QueryResult<Option<Facts>> {
    let query = format!(
        "SELECT m.template_name,
                {category} AS category,
                templates.status AS template_status,
                CASE WHEN ms.business IS NULL THEN c.opt_in_marketing
                     ELSE COALESCE(bc.opt_in_marketing, true) END AS opt_in_marketing,
                CASE WHEN ms.business IS NULL THEN c.opt_in_utility
                     ELSE COALESCE(bc.opt_in_utility, true) END AS opt_in_utility,
                cv.last_inbound_at,
                c.marketing_limited_at,
                cv.holder, cv.holder_since, cv.holder_by, cv.holder_until,
                ma.actor AS sent_by
         FROM messages m
         LEFT JOIN message_actors ma ON ma.message_id = m.id
         LEFT JOIN message_senders ms ON ms.message_id = m.id
         LEFT JOIN customers c ON c.phone = m.customer_phone
         LEFT JOIN business_consent bc
                ON bc.business = ms.business AND bc.customer_phone = m.customer_phone
         LEFT JOIN conversations cv
                ON cv.customer_phone = m.customer_phone AND cv.channel = m.channel
               AND cv.sender_id = COALESCE(ms.sender_id, '{default}')
         LEFT JOIN templates
                ON templates.business = COALESCE(ms.business, '{default}')
               AND templates.name = m.template_name AND templates.locale = m.template_locale
         WHERE m.id = $1",
        // A re-categorisation counts from its effective time (`templates::changes`).
        category = crate::templates::EFFECTIVE_CATEGORY_SQL,
        default = warden_settings::STORED_DEFAULT,
    );
    diesel::sql_query(query)
        .bind::<diesel::sql_types::Uuid, _>(message_id)
        .get_result::<Facts>(conn)
        .await
        .optional()
}

/// Re-checks opt-out, the care window (free-form) and the template's status of a message
/// about to be handed to the platform. On a refusal the message ends `failed` (category
/// `compliance`, the reason code in its explanation, `can_retry: false`), audited as
/// `actor`. A message whose row is gone is left to the caller (`Send`: it finds out).
pub async fn before_send(
    pg: &PgPool,
    message_id: Uuid,
    actor: &'static str,
) -> Result<Recheck, CoreError> {
    let mut conn = pg.get().await?;
    let Some(Facts {
        template_name,
        category,
        template_status: status,
        opt_in_marketing,
        opt_in_utility,
        last_inbound_at: last_inbound,
        marketing_limited_at,
        holder,
        holder_since,
        holder_by,
        holder_until,
        sent_by,
    }) = facts(&mut conn, message_id).await?
    else {
        return Ok(Recheck::Send);
    };
    let content = match &template_name {
        None => ContentKind::FreeForm,
        // A template whose row is gone is refused for its status; its category then
        // does not matter.
        Some(_) => ContentKind::Template(
            category
                .and_then(|c| c.parse::<TemplateCategory>().ok())
                .unwrap_or(TemplateCategory::Utility),
        ),
    };
    let now = Utc::now();
    // A customer without a row has never opted out (new customers start opted in).
    let input = RecheckInput {
        content,
        template_status: status,
        opted_out_marketing: opt_in_marketing == Some(false),
        opted_out_utility: opt_in_utility == Some(false),
        last_inbound_at: last_inbound,
        now,
    };
    // Who holds the conversation now (`send::conversation_holder`), read with the window.
    let holder = super::conversation_holder::from_columns(
        holder.as_deref(),
        holder_since,
        holder_by,
        holder_until,
        last_inbound,
        now,
    );
    let sent_by = sent_by.unwrap_or_default();
    let category = content.category();
    let decision = match warden_rules::recheck::recheck(&input) {
        Some(d) => Some(super::conversation_holder::judge(
            d, &holder, category, &sent_by,
        )),
        None => warden_rules::holder::refusal(&holder, category, &sent_by),
    };
    let Some(decision) = decision else {
        // A marketing message queued before the platform answered 131049 for its customer
        // waits out the 24 h instead of drawing another 131049 (`platform_limits`).
        if let Some(refusal) = warden_rules::platform_limits::marketing_limit_refusal(
            category,
            marketing_limited_at,
            now,
        ) {
            hold_queued(&mut conn, message_id, &refusal, actor).await?;
            return Ok(Recheck::Refused(refusal));
        }
        return Ok(Recheck::Send);
    };
    let error = crate::delivery::knowledge::compliance_error(
        decision.reason_code.as_str(),
        &decision.human_explanation,
        &decision.suggested_action,
    );
    let details = json!({
        "reason_code": decision.reason_code.as_str(),
        "policy_id": decision.policy_id,
        "explanation": decision.human_explanation,
        "stage": "before_platform_call",
    });
    transact_on(&mut conn, "refuse_before_send", move |c| {
        let (error, details) = (error.clone(), details.clone());
        async move {
            let changed = crate::delivery::outcomes::apply_status(
                c,
                message_id,
                MessageStatus::Failed,
                now,
                None,
                Some(&error),
            )
            .await?;
            if changed {
                warden_store::audit::record(
                    c,
                    actor,
                    "message_refused_at_dispatch",
                    "message",
                    &message_id.to_string(),
                    details,
                )
                .await?;
            }
            Ok::<_, Abort<Infallible>>(())
        }
        .boxed()
    })
    .await?;
    tracing::info!(%message_id, reason_code = decision.reason_code.as_str(),
        "refused right before the platform call");
    Ok(Recheck::Refused(decision))
}

/// Why retry_failed_messages must not resend this failed message, if it must not: it
/// failed a compliance check (or carries an error marked not retryable by whoever
/// recorded it). Platform errors without that mark are judged by the error catalogue.
pub fn retry_refusal(message: &Message) -> Option<String> {
    if message.error_category.as_deref() == Some("compliance") {
        let why = message
            .error_explanation
            .as_deref()
            .unwrap_or("a compliance check refused it");
        return Some(format!(
            "not retried: it failed a compliance check ({why}), which a retry cannot change; send a new message once check_compliance allows it"
        ));
    }
    None
}

/// A `queued` message goes back to `scheduled` until `hold.retry_at` (the scheduler sends
/// it through `Core::send` then, checked again), with the reason in `message_holds`.
async fn hold_queued(
    conn: &mut diesel_async::AsyncPgConnection,
    message_id: Uuid,
    hold: &Decision,
    actor: &'static str,
) -> Result<(), CoreError> {
    use diesel::sql_types::{Timestamptz, Uuid as SqlUuid};
    let Some(until) = hold.retry_at else {
        return Ok(());
    };
    let reason = hold.policy_id.clone().unwrap_or_default();
    transact_on(conn, "hold_before_send", move |c| {
        let reason = reason.clone();
        async move {
            let moved = diesel::sql_query(
                "UPDATE messages SET status = 'scheduled', deliver_at = $2, published_at = NULL,
                        lease_owner = NULL, lease_until = NULL, next_attempt_at = NULL, updated_at = now()
                 WHERE id = $1 AND status = 'queued'",
            )
            .bind::<SqlUuid, _>(message_id)
            .bind::<Timestamptz, _>(until)
            .execute(c)
            .await?;
            if moved > 0 {
                crate::send::message_holds::note_hold(
                    c,
                    message_id,
                    &reason,
                    until,
                    actor,
                    json!({"stage": "before_platform_call"}),
                )
                .await?;
            }
            Ok::<_, Abort<Infallible>>(())
        }
        .boxed()
    })
    .await?;
    tracing::info!(%message_id, %until, "marketing message held: the platform's per-user limit (131049) holds for 24 h");
    Ok(())
}
