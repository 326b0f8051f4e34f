//! The last send refused for a customer and why (get_customer_context): read from the
//! `send_refused` audit row every refused tool send writes (`Core::send`).

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use warden_store::schema::audit_logs;

/// One refusal: when, the code, the policy (if one refused) and the explanation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LastRefusal {
    pub at: DateTime<Utc>,
    pub reason_code: String,
    pub policy_id: Option<String>,
    pub explanation: String,
}

/// The customer's (canonical digits) most recent refused send, if any.
pub async fn last_refusal(
    conn: &mut AsyncPgConnection,
    phone: &str,
) -> QueryResult<Option<LastRefusal>> {
    let row: Option<(DateTime<Utc>, Value)> = audit_logs::table
        .filter(audit_logs::entity_type.eq("customer"))
        .filter(audit_logs::entity_id.eq(phone))
        .filter(audit_logs::action.eq("send_refused"))
        .order(audit_logs::occurred_at.desc())
        .select((audit_logs::occurred_at, audit_logs::details))
        .first(conn)
        .await
        .optional()?;
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
