//! Who created each outbound message: the agent (or service) recorded beside the message
//! in `message_actors` (the `messages` table has no room for another column), shown as
//! `sent_by` in the history and `get_delivery_status`.

use std::collections::HashMap;

use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;
use warden_store::schema::message_actors;

/// Record `actor` as the creator of `message_id`, in the caller's transaction. The first
/// writer stays: a retry or a scheduled row coming due keeps who asked for it.
pub(crate) async fn record(
    mut conn: &AsyncPgConnection,
    message_id: Uuid,
    actor: &str,
) -> QueryResult<()> {
    diesel::insert_into(message_actors::table)
        .values((
            message_actors::message_id.eq(message_id),
            message_actors::actor.eq(actor),
        ))
        .on_conflict_do_nothing()
        .execute(&mut conn)
        .await
        .map(|_| ())
}

/// `sent_by` of these messages (absent: inbound, or written before attribution existed).
pub async fn sent_by(
    conn: &mut AsyncPgConnection,
    ids: &[Uuid],
) -> QueryResult<HashMap<Uuid, String>> {
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    let rows: Vec<(Uuid, String)> = message_actors::table
        .filter(message_actors::message_id.eq_any(ids))
        .select((message_actors::message_id, message_actors::actor))
        .load(conn)
        .await?;
    Ok(rows.into_iter().collect())
}
