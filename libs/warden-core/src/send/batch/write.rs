//! The batch's writes, set-based, inside the chunk's transaction: every message row of
//! the chunk in one `INSERT ... SELECT FROM unnest(...)` (accepted `queued`, refused
//! `failed` with its compliance error, held `scheduled` until the rule lifts), then who
//! asked for them, the numbers they go out from, the frequency counts, the portfolio
//! reach, the holds and the audit rows — the same rows the single path writes one message
//! at a time (`send::record`, `Core::record_refusal`, `Core::record_hold`). The accepted
//! messages are written with their published mark, in an open publish batch
//! (`delivery::publish_batches`). The campaign's counters follow the rows (the counter trigger,
//! at commit).

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, Bool, Int4, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::{Value, json};
use uuid::Uuid;
use warden_rules::compliance::Decision;
use warden_rules::message_status::MessageStatus;
use warden_store::schema::audit_logs;

use crate::delivery::knowledge;

/// What is written for one recipient.
pub(super) enum Row {
    /// Accepted: `queued`, counted; `reach`: it counts against the portfolio's limit.
    Accepted { reach: bool },
    /// Refused: `failed` with a compliance error (recorded as utility, as the single path
    /// records a refused campaign recipient).
    Refused(Decision),
    /// Held `scheduled` until `until` (`message_holds` says why).
    Held(Decision, DateTime<Utc>),
}

/// One message of the chunk to write.
pub(super) struct Write<'a> {
    pub(super) id: Uuid,
    pub(super) phone: &'a str,
    pub(super) sender: &'a str,
    pub(super) business: &'a str,
    pub(super) portfolio: &'a str,
    pub(super) row: Row,
}

/// What every message of the chunk shares.
pub(super) struct Shared<'a> {
    pub(super) channel: &'a str,
    pub(super) message_type: &'a str,
    pub(super) category: &'a str,
    pub(super) content: &'a Value,
    pub(super) template: Option<(&'a str, &'a str)>,
    pub(super) campaign_id: Option<Uuid>,
    pub(super) actor: &'a str,
    pub(super) trace: Option<Value>,
}

/// Write the chunk's messages and everything that goes with them.
pub(super) async fn write(
    c: &mut AsyncPgConnection,
    shared: &Shared<'_>,
    rows: &[Write<'_>],
    now: DateTime<Utc>,
) -> QueryResult<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let mut ids = Vec::with_capacity(rows.len());
    let mut phones = Vec::with_capacity(rows.len());
    let mut statuses = Vec::with_capacity(rows.len());
    let mut categories = Vec::with_capacity(rows.len());
    let mut deliver_at: Vec<Option<DateTime<Utc>>> = Vec::with_capacity(rows.len());
    let mut failed_at: Vec<Option<DateTime<Utc>>> = Vec::with_capacity(rows.len());
    let mut codes: Vec<Option<i32>> = Vec::with_capacity(rows.len());
    let mut error_categories: Vec<Option<String>> = Vec::with_capacity(rows.len());
    let mut can_retry: Vec<Option<bool>> = Vec::with_capacity(rows.len());
    let mut explanations: Vec<Option<String>> = Vec::with_capacity(rows.len());
    let mut actions: Vec<Option<String>> = Vec::with_capacity(rows.len());
    let mut traces: Vec<Option<Value>> = Vec::with_capacity(rows.len());
    for w in rows {
        ids.push(w.id);
        phones.push(w.phone);
        let (status, category, at, failed, error, trace) = match &w.row {
            Row::Accepted { .. } => (
                MessageStatus::Queued,
                shared.category,
                None,
                None,
                None,
                shared.trace.clone(),
            ),
            Row::Refused(d) => (
                MessageStatus::Failed,
                warden_rules::kinds::Category::Utility.as_str(),
                None,
                Some(now),
                Some(knowledge::compliance_error(
                    d.reason_code.as_str(),
                    &d.human_explanation,
                    &d.suggested_action,
                )),
                None,
            ),
            Row::Held(_, until) => (
                MessageStatus::Scheduled,
                shared.category,
                Some(*until),
                None,
                None,
                None,
            ),
        };
        statuses.push(status.as_str());
        categories.push(category);
        deliver_at.push(at);
        failed_at.push(failed);
        codes.push(error.as_ref().map(|e| e.code));
        error_categories.push(error.as_ref().map(|e| e.category.clone()));
        can_retry.push(error.as_ref().map(|e| e.can_retry));
        explanations.push(error.as_ref().map(|e| e.human_explanation.clone()));
        actions.push(error.map(|e| e.suggested_action));
        traces.push(trace);
    }
    let (template_name, template_locale) = shared.template.unzip();
    diesel::sql_query(
        "INSERT INTO messages (id, customer_phone, channel, direction, message_type, category,
                               status, content, template_name, template_locale, campaign_id,
                               deliver_at, failed_at, error_code, error_category,
                               error_can_retry, error_explanation, error_suggested_action,
                               trace_context, published_at)
         SELECT t.id, t.phone, $3, 'outbound', $4, t.category, t.status, $5, $6, $7, $8,
                t.deliver_at, t.failed_at, t.code, t.error_category, t.can_retry,
                t.explanation, t.action, t.trace,
                CASE WHEN t.status = 'queued' THEN now() END
         FROM unnest($1::uuid[], $2::text[], $9::text[], $10::text[], $11::timestamptz[],
                     $12::timestamptz[], $13::int4[], $14::text[], $15::bool[], $16::text[],
                     $17::text[], $18::jsonb[])
              AS t(id, phone, category, status, deliver_at, failed_at, code, error_category,
                   can_retry, explanation, action, trace)",
    )
    .bind::<Array<SqlUuid>, _>(&ids)
    .bind::<Array<Text>, _>(&phones)
    .bind::<Text, _>(shared.channel)
    .bind::<Text, _>(shared.message_type)
    .bind::<Jsonb, _>(shared.content)
    .bind::<Nullable<Text>, _>(template_name)
    .bind::<Nullable<Text>, _>(template_locale)
    .bind::<Nullable<SqlUuid>, _>(shared.campaign_id)
    .bind::<Array<Text>, _>(&categories)
    .bind::<Array<Text>, _>(&statuses)
    .bind::<Array<Nullable<Timestamptz>>, _>(&deliver_at)
    .bind::<Array<Nullable<Timestamptz>>, _>(&failed_at)
    .bind::<Array<Nullable<Int4>>, _>(&codes)
    .bind::<Array<Nullable<Text>>, _>(&error_categories)
    .bind::<Array<Nullable<Bool>>, _>(&can_retry)
    .bind::<Array<Nullable<Text>>, _>(&explanations)
    .bind::<Array<Nullable<Text>>, _>(&actions)
    .bind::<Array<Nullable<Jsonb>>, _>(&traces)
    .execute(c)
    .await?;
    // Who asked for them (`send::attribution`).
    diesel::sql_query(
        "INSERT INTO message_actors (message_id, actor) SELECT unnest($1::uuid[]), $2
         ON CONFLICT DO NOTHING",
    )
    .bind::<Array<SqlUuid>, _>(&ids)
    .bind::<Text, _>(shared.actor)
    .execute(c)
    .await?;
    // The number each goes out from, unless the default's.
    let from: Vec<&Write<'_>> = rows
        .iter()
        .filter(|w| !crate::senders::is_default_key(w.sender))
        .collect();
    if !from.is_empty() {
        diesel::sql_query(
            "INSERT INTO message_senders (message_id, sender_id, business)
             SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[])",
        )
        .bind::<Array<SqlUuid>, _>(from.iter().map(|w| w.id).collect::<Vec<_>>())
        .bind::<Array<Text>, _>(from.iter().map(|w| w.sender).collect::<Vec<_>>())
        .bind::<Array<Text>, _>(from.iter().map(|w| w.business).collect::<Vec<_>>())
        .execute(c)
        .await?;
    }
    accepted(c, shared, rows, now).await?;
    // The accepted ones' marks are written above; the stream's acks close the publish batch.
    let handed: Vec<Uuid> = rows
        .iter()
        .filter(|w| matches!(w.row, Row::Accepted { .. }))
        .map(|w| w.id)
        .collect();
    crate::delivery::publish_batches::open(c, &handed).await?;
    held(c, shared.actor, rows).await?;
    refused(c, shared.actor, rows).await
}

/// The accepted messages' frequency counts (`send::decide::count_accepted`) and portfolio
/// reach (`account::portfolio::admit`).
async fn accepted(
    c: &mut AsyncPgConnection,
    shared: &Shared<'_>,
    rows: &[Write<'_>],
    now: DateTime<Utc>,
) -> QueryResult<()> {
    let counted: Vec<&Write<'_>> = rows
        .iter()
        .filter(|w| matches!(w.row, Row::Accepted { .. }))
        .collect();
    if counted.is_empty() {
        return Ok(());
    }
    diesel::sql_query(
        "INSERT INTO message_frequencies (customer_phone, business, category, message_id)
         SELECT t.phone, t.business, $4, t.id FROM unnest($1::text[], $2::text[], $3::uuid[])
              AS t(phone, business, id)
         ON CONFLICT (message_id) DO NOTHING",
    )
    .bind::<Array<Text>, _>(counted.iter().map(|w| w.phone).collect::<Vec<_>>())
    .bind::<Array<Text>, _>(counted.iter().map(|w| w.business).collect::<Vec<_>>())
    .bind::<Array<SqlUuid>, _>(counted.iter().map(|w| w.id).collect::<Vec<_>>())
    .bind::<Text, _>(shared.category)
    .execute(c)
    .await?;
    let reach: Vec<&&Write<'_>> = counted
        .iter()
        .filter(|w| matches!(w.row, Row::Accepted { reach: true }))
        .collect();
    if reach.is_empty() {
        return Ok(());
    }
    diesel::sql_query(
        "INSERT INTO portfolio_reach (customer_phone, reached_at, message_id, portfolio)
         SELECT t.phone, $4, t.id, t.portfolio FROM unnest($1::text[], $2::uuid[], $3::text[])
              AS t(phone, id, portfolio)
         ON CONFLICT (portfolio, customer_phone) DO UPDATE
            SET reached_at = EXCLUDED.reached_at, message_id = EXCLUDED.message_id
          WHERE portfolio_reach.reached_at <= EXCLUDED.reached_at",
    )
    .bind::<Array<Text>, _>(reach.iter().map(|w| w.phone).collect::<Vec<_>>())
    .bind::<Array<SqlUuid>, _>(reach.iter().map(|w| w.id).collect::<Vec<_>>())
    .bind::<Array<Text>, _>(reach.iter().map(|w| w.portfolio).collect::<Vec<_>>())
    .bind::<Timestamptz, _>(now)
    .execute(c)
    .await?;
    Ok(())
}

/// Why each held message waits (`send::message_holds::note_hold`), audited `message_held`.
async fn held(c: &mut AsyncPgConnection, actor: &str, rows: &[Write<'_>]) -> QueryResult<()> {
    let held: Vec<(Uuid, String, DateTime<Utc>)> = rows
        .iter()
        .filter_map(|w| match &w.row {
            Row::Held(d, until) => Some((w.id, crate::send::message_holds::hold_reason(d), *until)),
            _ => None,
        })
        .collect();
    if held.is_empty() {
        return Ok(());
    }
    diesel::sql_query(
        "INSERT INTO message_holds (message_id, reason, held_until)
         SELECT * FROM unnest($1::uuid[], $2::text[], $3::timestamptz[])",
    )
    .bind::<Array<SqlUuid>, _>(held.iter().map(|h| h.0).collect::<Vec<_>>())
    .bind::<Array<Text>, _>(held.iter().map(|h| h.1.clone()).collect::<Vec<_>>())
    .bind::<Array<Timestamptz>, _>(held.iter().map(|h| h.2).collect::<Vec<_>>())
    .execute(c)
    .await?;
    let audit: Vec<_> = held
        .iter()
        .map(|(id, reason, until)| {
            (
                audit_logs::actor.eq(actor),
                audit_logs::action.eq("message_held"),
                audit_logs::entity_type.eq("message"),
                audit_logs::entity_id.eq(id.to_string()),
                audit_logs::details.eq(json!({"reason": reason, "until": until})),
            )
        })
        .collect();
    diesel::insert_into(audit_logs::table)
        .values(audit)
        .execute(c)
        .await
        .map(|_| ())
}

/// The refusals' audit rows (`message_refused_at_dispatch`, as the single path writes).
async fn refused(c: &mut AsyncPgConnection, actor: &str, rows: &[Write<'_>]) -> QueryResult<()> {
    let audit: Vec<_> = rows
        .iter()
        .filter_map(|w| match &w.row {
            Row::Refused(d) => Some((
                audit_logs::actor.eq(actor),
                audit_logs::action.eq("message_refused_at_dispatch"),
                audit_logs::entity_type.eq("message"),
                audit_logs::entity_id.eq(w.id.to_string()),
                audit_logs::details.eq(json!({
                    "reason_code": d.reason_code.as_str(),
                    "policy_id": d.policy_id,
                    "explanation": d.human_explanation,
                })),
            )),
            _ => None,
        })
        .collect();
    if audit.is_empty() {
        return Ok(());
    }
    diesel::insert_into(audit_logs::table)
        .values(audit)
        .execute(c)
        .await
        .map(|_| ())
}
