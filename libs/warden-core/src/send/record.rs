//! Step 4, record: the accepted message written `queued` and counted, and a refusal the
//! scheduler or a campaign records (the row ends `failed` with a compliance error).

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures::FutureExt;
use serde_json::{Value, json};
use uuid::Uuid;
use warden_rules::compliance::Decision;
use warden_rules::kinds::Category;
use warden_rules::message_status::MessageStatus;
use warden_settings::StoreKeys;
use warden_store::schema::messages;
use warden_store::tx::{Abort, transact_on};

use super::decide::count_accepted;
use super::error::SendError;
use super::kind::{SendKind, TemplateSend};
use super::{SendRequest, attribution};
use crate::delivery::knowledge;
use crate::{Core, customers};

impl Core {
    /// RecordFailed mode: the refusal ends the message `failed` with a compliance error
    /// (inserting the row for campaign recipients), and counts it on the campaign.
    pub(super) async fn record_refusal(
        &self,
        conn: &mut AsyncPgConnection,
        req: &SendRequest,
        decision: &Decision,
    ) -> Result<Uuid, SendError> {
        let error = knowledge::compliance_error(
            decision.reason_code.as_str(),
            &decision.human_explanation,
            &decision.suggested_action,
        );
        let message_id = req.existing_message_id.unwrap_or_else(Uuid::now_v7);
        // Only rows inserted here (campaign recipients refused before their template was
        // judged) need it; a template of unknown category is recorded as utility.
        let category = match req.kind {
            SendKind::Text { .. } | SendKind::Rich(_) => Category::Service,
            SendKind::Template(_) => Category::Utility,
        };
        let actor = req.actor;
        let details = json!({
            "reason_code": decision.reason_code.as_str(),
            "policy_id": decision.policy_id,
            "explanation": decision.human_explanation,
        });
        // Owned, so each attempt of the transaction borrows nothing but its connection.
        let keys = self.keys_for(req);
        let (shared_req, shared_error) = (Arc::new(req.clone()), Arc::new(error));
        let failed = MessageStatus::Failed.as_str();
        transact_on(conn, "record_refusal", move |c| {
            let (req_ref, error_ref) = (Arc::clone(&shared_req), Arc::clone(&shared_error));
            let keys = keys.clone();
            let details = details.clone();
            async move {
                customers::ensure(c, &req_ref.phone).await?;
                let now = Utc::now();
                if req_ref.existing_message_id.is_some() {
                    diesel::update(
                        messages::table
                            .find(message_id)
                            .filter(messages::status.ne(failed)),
                    )
                    .set((
                        messages::status.eq(failed),
                        messages::failed_at.eq(now),
                        messages::updated_at.eq(now),
                    ))
                    .execute(c)
                    .await?;
                } else {
                    insert_message(
                        c,
                        &req_ref,
                        &keys,
                        message_id,
                        category.as_str(),
                        MessageStatus::Failed,
                        None,
                    )
                    .await?;
                    diesel::update(messages::table.find(message_id))
                        .set(messages::failed_at.eq(now))
                        .execute(c)
                        .await?;
                }
                // The campaign's failed_count follows the row (counter triggers).
                crate::delivery::outcomes::record_error(c, message_id, &error_ref).await?;
                warden_store::audit::record(
                    c,
                    actor,
                    "message_refused_at_dispatch",
                    "message",
                    &message_id.to_string(),
                    details,
                )
                .await?;
                Ok::<_, Abort<SendError>>(())
            }
            .boxed()
        })
        .await?;
        Ok(message_id)
    }
}

/// Step 4, record: the accepted row `queued` (inserted, or an existing scheduled or failed
/// row advanced) and counted against the frequency cap. Returns the row's retry count.
pub(super) async fn record(
    c: &mut AsyncPgConnection,
    req: &SendRequest,
    keys: &StoreKeys,
    message_id: Uuid,
    category: Category,
    trace: &HashMap<String, String>,
) -> Result<i32, Abort<SendError>> {
    let shared: &AsyncPgConnection = c;
    let count = count_accepted(
        shared,
        &keys.business,
        req.phone.digits(),
        category,
        message_id,
    );
    // A new row and its count go out together (pipelined); an existing row must still be
    // scheduled or failed before it is counted.
    let retry_count = if req.existing_message_id.is_none() {
        futures::try_join!(
            write_queued(shared, req, keys, message_id, category, trace),
            count
        )?
        .0
    } else {
        let written = write_queued(shared, req, keys, message_id, category, trace).await?;
        if written.is_some() {
            count.await?;
        }
        written
    };
    let Some(retry_count) = retry_count else {
        return Err(Abort::App(SendError::InvalidArgument(format!(
            "message {message_id} is no longer scheduled or failed"
        ))));
    };
    Ok(retry_count)
}

/// Insert the accepted row, or advance an existing `scheduled`/`failed` row to `queued`.
/// Returns the row's retry count; `None` when the existing row is no longer scheduled or
/// failed.
async fn write_queued(
    mut conn: &AsyncPgConnection,
    req: &SendRequest,
    keys: &StoreKeys,
    message_id: Uuid,
    category: Category,
    trace: &HashMap<String, String>,
) -> QueryResult<Option<i32>> {
    let trace_json = serde_json::to_value(trace).ok();
    if req.existing_message_id.is_some() {
        return diesel::update(
            messages::table
                .find(message_id)
                .filter(messages::status.eq_any([
                    MessageStatus::Scheduled.as_str(),
                    MessageStatus::Failed.as_str(),
                ])),
        )
        .set((
            messages::status.eq(MessageStatus::Queued.as_str()),
            messages::category.eq(category.as_str()),
            messages::published_at.eq(None::<DateTime<Utc>>),
            messages::next_attempt_at.eq(None::<DateTime<Utc>>),
            messages::lease_until.eq(None::<DateTime<Utc>>),
            messages::lease_owner.eq(None::<String>),
            messages::error_code.eq(None::<i32>),
            messages::error_category.eq(None::<String>),
            messages::error_can_retry.eq(None::<bool>),
            messages::error_explanation.eq(None::<String>),
            messages::error_suggested_action.eq(None::<String>),
            messages::failed_at.eq(None::<DateTime<Utc>>),
            messages::retry_count.eq(diesel::dsl::sql::<diesel::sql_types::Int4>(
                "CASE WHEN status = 'failed' THEN retry_count + 1 ELSE retry_count END",
            )),
            messages::trace_context.eq(trace_json),
            messages::updated_at.eq(diesel::dsl::now),
        ))
        .returning(messages::retry_count)
        .get_result(&mut conn)
        .await
        .optional();
    }
    insert_message(
        conn,
        req,
        keys,
        message_id,
        category.as_str(),
        MessageStatus::Queued,
        trace_json,
    )
    .await?;
    Ok(Some(0))
}

pub(crate) async fn insert_message(
    mut conn: &AsyncPgConnection,
    req: &SendRequest,
    keys: &StoreKeys,
    message_id: Uuid,
    category: &str,
    status: MessageStatus,
    trace: Option<Value>,
) -> QueryResult<usize> {
    let (template_name, template_locale) = match &req.kind {
        SendKind::Template(TemplateSend { name, locale, .. }) => {
            (Some(name.as_str()), Some(locale.as_str()))
        }
        SendKind::Text { .. } | SendKind::Rich(_) => (None, None),
    };
    let content = req.kind.to_content();
    // The row, who asked for it, its number and its flow token, in one round trip
    // (pipelined, in order).
    let message = diesel::insert_into(messages::table)
        .values((
            messages::id.eq(message_id),
            messages::customer_phone.eq(req.phone.digits()),
            messages::channel.eq(&req.channel),
            messages::direction.eq("outbound"),
            messages::message_type.eq(req.message_type.as_str()),
            messages::category.eq(category),
            messages::status.eq(status.as_str()),
            messages::content.eq(&content),
            messages::template_name.eq(template_name),
            messages::template_locale.eq(template_locale),
            messages::campaign_id.eq(req.campaign_id),
            messages::trace_context.eq(trace),
        ))
        .execute(&mut conn);
    let actor = attribution::record(conn, message_id, req.actor);
    let sender = async {
        if crate::senders::is_default_key(&keys.sender) {
            return Ok(0);
        }
        diesel::insert_into(warden_store::schema::message_senders::table)
            .values((
                warden_store::schema::message_senders::message_id.eq(message_id),
                warden_store::schema::message_senders::sender_id.eq(&keys.sender),
                warden_store::schema::message_senders::business.eq(&keys.business),
            ))
            .execute(&mut { conn })
            .await
    };
    let flow = crate::flows::sends::record(conn, message_id, &content);
    futures::try_join!(message, actor, sender, flow)?;
    Ok(1)
}
