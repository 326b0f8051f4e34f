//! The last send refused for a customer and why (get_customer_context): the newest of the
//! `send_refused` audit row every refused tool send writes (`Core::send`) and the
//! `message_refused_at_dispatch` row of a scheduled or campaign message refused when it
//! came due, or by the dispatcher's last check before the platform call.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::Text;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use warden_store::schema::{audit_logs, messages};

/// One refusal: when, the code, the policy (if one refused) and the explanation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LastRefusal {
    pub at: DateTime<Utc>,
    pub reason_code: String,
    pub policy_id: Option<String>,
    pub explanation: String,
}

/// The customer's (canonical digits) most recent refused send to them by `business` (its
/// stored key), if any. Refusals recorded before they named their business count for every
/// business.
pub async fn last_refusal(
    conn: &mut AsyncPgConnection,
    phone: &str,
    business: &str,
) -> QueryResult<Option<LastRefusal>> {
    let of_business =
        diesel::dsl::sql::<diesel::sql_types::Bool>("COALESCE(details ->> 'business', ")
            .bind::<Text, _>(business)
            .sql(") = ")
            .bind::<Text, _>(business);
    let tool: Option<(DateTime<Utc>, Value)> = audit_logs::table
        .filter(audit_logs::entity_type.eq("customer"))
        .filter(audit_logs::entity_id.eq(phone))
        .filter(audit_logs::action.eq("send_refused"))
        .filter(of_business)
        .order(audit_logs::occurred_at.desc())
        .select((audit_logs::occurred_at, audit_logs::details))
        .first(conn)
        .await
        .optional()?;
    // The default business's messages have no message_senders row.
    let customer_messages = messages::table
        .filter(messages::customer_phone.eq(phone))
        .filter(
            diesel::dsl::sql::<diesel::sql_types::Bool>(
                "COALESCE((SELECT ms.business FROM message_senders ms WHERE ms.message_id = messages.id), 'default') = ",
            )
            .bind::<Text, _>(business),
        )
        .select(diesel::dsl::sql::<Text>("id::text"));
    let queued: Option<(DateTime<Utc>, Value)> = audit_logs::table
        .filter(audit_logs::entity_type.eq("message"))
        .filter(audit_logs::action.eq("message_refused_at_dispatch"))
        .filter(audit_logs::entity_id.eq_any(customer_messages))
        .order(audit_logs::occurred_at.desc())
        .select((audit_logs::occurred_at, audit_logs::details))
        .first(conn)
        .await
        .optional()?;
    let row = match (tool, queued) {
        (Some(a), Some(b)) => Some(if b.0 > a.0 { b } else { a }),
        (a, b) => a.or(b),
    };
    Ok(row.map(|(at, d)| {
        let text = |k: &str| d.get(k).and_then(Value::as_str).map(str::to_string);
        LastRefusal {
            at,
            reason_code: text("reason_code").unwrap_or_default(),
            policy_id: text("policy_id"),
            explanation: text("explanation").unwrap_or_default(),
        }
    }))
}
