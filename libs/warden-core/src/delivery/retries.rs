//! retry_failed_messages' audit trail. The retry itself is the one send path's
//! (`SendRequest::existing_message_id`); this records that it happened.

use serde_json::json;
use uuid::Uuid;
use warden_store::{DbError, PgPool};

/// A failed message the send path accepted again.
#[derive(Debug, Clone)]
pub struct Retried {
    pub message_id: Uuid,
    pub previous_error_code: Option<i32>,
    pub previous_error_category: Option<String>,
    /// The retry count now (the failed attempt's plus one).
    pub retry_count: i32,
    /// Handed to delivery at once (else the relay publishes it).
    pub published: bool,
}

/// The `message_retried` audit row of a retry already committed.
pub async fn record_retried(pg: &PgPool, retried: &Retried, actor: &str) -> Result<(), DbError> {
    let mut conn = pg.get().await?;
    warden_store::audit::record(
        &mut conn,
        actor,
        "message_retried",
        "message",
        &retried.message_id.to_string(),
        json!({
            "previous_error_code": retried.previous_error_code,
            "previous_error_category": retried.previous_error_category,
            "retry_count": retried.retry_count,
            "published": retried.published,
        }),
    )
    .await?;
    Ok(())
}
