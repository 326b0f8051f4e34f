//! The audit log: one row per effect an operator may need to trace later.

use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use crate::schema::audit_logs;

/// Append an audit row inside the caller's connection (and so its transaction, if any).
pub async fn record(
    conn: &mut AsyncPgConnection,
    actor: &str,
    action: &str,
    entity_type: &str,
    entity_id: &str,
    details: serde_json::Value,
) -> QueryResult<()> {
    diesel::insert_into(audit_logs::table)
        .values((
            audit_logs::actor.eq(actor),
            audit_logs::action.eq(action),
            audit_logs::entity_type.eq(entity_type),
            audit_logs::entity_id.eq(entity_id),
            audit_logs::details.eq(details),
        ))
        .execute(conn)
        .await
        .map(|_| ())
}
