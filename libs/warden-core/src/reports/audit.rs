//! The audit log as the console shows it: filtered by actor, action and customer, newest
//! first; and a customer's consent timeline (every opt-in and opt-out, its source and time).

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use serde::Serialize;
use warden_store::PgPool;
use warden_store::schema::audit_logs;

use crate::CoreError;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditEntry {
    pub id: i64,
    pub occurred_at: DateTime<Utc>,
    pub actor: String,
    pub action: String,
    pub entity_type: String,
    pub entity_id: String,
    pub details: serde_json::Value,
    /// The business (WhatsApp Business Account id) the action touched: the business of the
    /// message, campaign, conversation or number it is about, or the one its details name;
    /// `None` for actions of no business (operators, agents, the deployment's webhooks).
    pub business: Option<String>,
}

/// The business and sender keys an audit row's entity belongs to, read beside it: a
/// message's (its `message_senders` row; none: the default sender's), a campaign's or a
/// conversation's number, a number itself, else what the details say.
const ENTITY_KEYS: &str = "CASE WHEN entity_type = 'message' AND entity_id ~ '^[0-9a-f-]{36}$' \
      THEN COALESCE((SELECT ms.business FROM message_senders ms \
                     WHERE ms.message_id = entity_id::uuid), 'default') \
    ELSE details ->> 'business' END";
const ENTITY_SENDER: &str = "CASE WHEN entity_id !~ '^[0-9a-f-]{36}$' THEN \
      CASE WHEN entity_type = 'sender' THEN entity_id ELSE details ->> 'from' END \
    WHEN entity_type = 'campaign' THEN (SELECT c.sender_id FROM campaigns c WHERE c.id = entity_id::uuid) \
    WHEN entity_type = 'conversation' THEN (SELECT cv.sender_id FROM conversations cv WHERE cv.id = entity_id::uuid) \
    ELSE details ->> 'from' END";

type Row = (
    i64,
    DateTime<Utc>,
    String,
    String,
    String,
    String,
    serde_json::Value,
    Option<String>,
    Option<String>,
);

/// What the audit page filters on; empty fields do not filter.
#[derive(Debug, Clone, Default)]
pub struct AuditFilter {
    pub actor: Option<String>,
    pub action: Option<String>,
    /// A customer's key: rows about the customer (entity `customer`).
    pub customer: Option<String>,
    /// Only rows before this one (the next page), newest first.
    pub before_id: Option<i64>,
}

/// At most `limit` rows matching `filter`, newest first, each naming its business.
pub async fn search(
    core: &crate::Core,
    filter: &AuditFilter,
    limit: i64,
) -> Result<Vec<AuditEntry>, CoreError> {
    use diesel::sql_types::{Nullable, Text};
    let mut conn = core.pg().get().await?;
    let mut q = audit_logs::table.into_boxed();
    if let Some(actor) = &filter.actor {
        q = q.filter(audit_logs::actor.eq(actor));
    }
    if let Some(action) = &filter.action {
        q = q.filter(audit_logs::action.eq(action));
    }
    if let Some(customer) = &filter.customer {
        q = q
            .filter(audit_logs::entity_type.eq("customer"))
            .filter(audit_logs::entity_id.eq(customer));
    }
    if let Some(before) = filter.before_id {
        q = q.filter(audit_logs::id.lt(before));
    }
    let rows: Vec<Row> = q
        .order(audit_logs::id.desc())
        .limit(limit)
        .select((
            audit_logs::id,
            audit_logs::occurred_at,
            audit_logs::actor,
            audit_logs::action,
            audit_logs::entity_type,
            audit_logs::entity_id,
            audit_logs::details,
            diesel::dsl::sql::<Nullable<Text>>(ENTITY_KEYS),
            diesel::dsl::sql::<Nullable<Text>>(ENTITY_SENDER),
        ))
        .load(&mut conn)
        .await?;
    let senders = core.senders();
    // A stored business key (`default`: the default sender's) or a sender, as its account id.
    let waba_of_business = |key: &str| {
        if warden_settings::is_stored_default(key) {
            senders.default().waba_id.clone()
        } else {
            key.to_string()
        }
    };
    Ok(rows
        .into_iter()
        .map(
            |(
                id,
                occurred_at,
                actor,
                action,
                entity_type,
                entity_id,
                details,
                business,
                sender,
            )| {
                let business = business.map(|b| waba_of_business(&b)).or_else(|| {
                    let sender = sender?;
                    senders
                        .by_key(&sender)
                        .or_else(|| senders.get(&sender))
                        .map(|s| s.waba_id.clone())
                });
                AuditEntry {
                    id,
                    occurred_at,
                    actor,
                    action,
                    entity_type,
                    entity_id,
                    details,
                    business,
                }
            },
        )
        .collect())
}

/// One change of a customer's consent.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConsentChange {
    pub occurred_at: DateTime<Utc>,
    /// `opted_in` or `opted_out`.
    pub change: String,
    /// What made it: a keyword, the platform's preference, an import, an operator...
    pub source: String,
    /// marketing, or marketing+utility.
    pub scope: String,
    /// The business whose consent changed.
    pub business: String,
    pub actor: String,
}

/// Every opt-in and opt-out of `customer` (its key), oldest first, from the audit log.
pub async fn consent_timeline(
    pg: &PgPool,
    customer: &str,
) -> Result<Vec<ConsentChange>, CoreError> {
    let mut conn = pg.get().await?;
    let rows: Vec<(DateTime<Utc>, String, String, serde_json::Value)> = audit_logs::table
        .filter(audit_logs::entity_type.eq("customer"))
        .filter(audit_logs::entity_id.eq(customer))
        .filter(audit_logs::action.eq_any(["customer_opted_in", "customer_opted_out"]))
        .order((audit_logs::occurred_at.asc(), audit_logs::id.asc()))
        .select((
            audit_logs::occurred_at,
            audit_logs::action,
            audit_logs::actor,
            audit_logs::details,
        ))
        .load(&mut conn)
        .await?;
    let text = |v: &serde_json::Value, k: &str| {
        v.get(k)
            .and_then(|s| s.as_str())
            .unwrap_or_default()
            .to_string()
    };
    Ok(rows
        .into_iter()
        .map(|(at, action, actor, details)| ConsentChange {
            occurred_at: at,
            change: action.trim_start_matches("customer_").to_string(),
            source: text(&details, "source"),
            scope: text(&details, "scope"),
            business: text(&details, "business"),
            actor,
        })
        .collect())
}
