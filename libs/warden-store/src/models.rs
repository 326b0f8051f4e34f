//! Row types shared by every process.

use chrono::{DateTime, NaiveDate, Utc};
use diesel::prelude::*;
use serde::Serialize;
use uuid::Uuid;

use crate::schema::*;

/// What to do about a platform error code (the error knowledge base's handling class).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Handling {
    /// Transient: back off and try again.
    Retry,
    /// The request itself is wrong: never resend it as is.
    FixRequest,
    /// Take another path or record the fact (opt-out, undeliverable, window closed).
    RecordState,
    /// Stop sending from the account and alert an operator.
    Halt,
}

impl Handling {
    pub fn as_str(self) -> &'static str {
        match self {
            Handling::Retry => "retry",
            Handling::FixRequest => "fix_request",
            Handling::RecordState => "record_state",
            Handling::Halt => "halt",
        }
    }
    pub fn parse(raw: &str) -> Option<Self> {
        Some(match raw {
            "retry" => Handling::Retry,
            "fix_request" => Handling::FixRequest,
            "record_state" => Handling::RecordState,
            "halt" => Handling::Halt,
            _ => return None,
        })
    }
}

/// Message states, ranked so status updates only move forward.
pub mod message_status {
    pub const SCHEDULED: &str = "scheduled";
    pub const QUEUED: &str = "queued";
    pub const SENDING: &str = "sending";
    pub const SENT: &str = "sent";
    pub const DELIVERED: &str = "delivered";
    pub const READ: &str = "read";
    pub const FAILED: &str = "failed";
    pub const RECEIVED: &str = "received";

    /// Progress rank of a delivery status; `failed` may follow `sent` (DESIGN.md) but not
    /// `delivered`/`read`.
    pub fn rank(status: &str) -> u8 {
        match status {
            SCHEDULED => 0,
            QUEUED => 1,
            SENDING => 2,
            SENT => 3,
            FAILED => 4,
            DELIVERED => 5,
            READ => 6,
            _ => 0,
        }
    }

    /// Whether moving from `from` to `to` is forward progress.
    pub fn advances(from: &str, to: &str) -> bool {
        rank(to) > rank(from)
    }
}

#[derive(Clone, Debug, Queryable, Selectable, Serialize)]
#[diesel(table_name = customers)]
pub struct Customer {
    pub phone: String,
    pub country: String,
    pub opt_in_marketing: bool,
    pub opt_in_utility: bool,
    pub opt_changed_at: Option<DateTime<Utc>>,
    pub opt_change_reason: Option<String>,
    pub tags: Vec<String>,
    pub engagement_score: f64,
    pub last_interaction_at: Option<DateTime<Utc>>,
    pub undeliverable_at: Option<DateTime<Utc>>,
    pub marketing_limited_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

#[derive(Clone, Debug, Queryable, Selectable, Serialize)]
#[diesel(table_name = conversations)]
pub struct Conversation {
    pub id: Uuid,
    pub customer_phone: String,
    pub channel: String,
    pub conversation_type: String,
    pub last_inbound_at: Option<DateTime<Utc>>,
    pub last_outbound_at: Option<DateTime<Utc>>,
    pub window_expires_at: Option<DateTime<Utc>>,
    pub archived_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// The stored key of the sender (the default sender's is `default`).
    pub sender_id: String,
    /// Who the last change of holder made hold it (`agents`, `human`, `other_app`,
    /// `idle`; None: never changed), since when, by whom and until when
    /// (`warden_rules::holder`).
    pub holder: Option<String>,
    pub holder_since: Option<DateTime<Utc>>,
    pub holder_by: Option<String>,
    pub holder_until: Option<DateTime<Utc>>,
}

#[derive(Clone, Debug, Queryable, Selectable, Serialize)]
#[diesel(table_name = templates)]
pub struct Template {
    pub id: Uuid,
    pub name: String,
    pub locale: String,
    pub category: String,
    pub status: String,
    pub body_text: String,
    pub platform_id: Option<String>,
    pub rejection_reason: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// Platform-shape components as created (HEADER, BODY, FOOTER, BUTTONS); None: body only.
    pub components: Option<serde_json::Value>,
    /// `positional` or `named`; None: positional.
    pub parameter_format: Option<String>,
    /// The stored key of the business the template belongs to (`default`: the default
    /// sender's).
    pub business: String,
}

#[derive(Clone, Debug, Queryable, Selectable, Serialize)]
#[diesel(table_name = campaigns)]
pub struct Campaign {
    pub id: Uuid,
    pub name: String,
    pub campaign_type: String,
    pub status: String,
    pub deliver_at: DateTime<Utc>,
    pub template_name: String,
    pub locale: String,
    pub variables: serde_json::Value,
    pub audience_filter: serde_json::Value,
    pub sent_count: i32,
    pub delivered_count: i32,
    pub failed_count: i32,
    pub total_recipients: i32,
    pub enqueued_count: i32,
    pub audience_cursor: Option<String>,
    pub audience_done: bool,
    pub status_reason: Option<String>,
    pub paused_at: Option<DateTime<Utc>>,
    pub lease_until: Option<DateTime<Utc>>,
    pub lease_owner: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// Recipients not sent because the campaign was cancelled (queued or never queued).
    pub cancelled_count: i32,
}

#[derive(Clone, Debug, Queryable, Selectable, Serialize)]
#[diesel(table_name = messages)]
pub struct Message {
    pub id: Uuid,
    pub customer_phone: String,
    pub channel: String,
    pub direction: String,
    pub message_type: String,
    pub category: String,
    pub status: String,
    pub content: serde_json::Value,
    pub template_name: Option<String>,
    pub template_locale: Option<String>,
    pub campaign_id: Option<Uuid>,
    pub deliver_at: Option<DateTime<Utc>>,
    pub wamid: Option<String>,
    pub retry_count: i32,
    pub attempt: i32,
    pub published_at: Option<DateTime<Utc>>,
    pub lease_until: Option<DateTime<Utc>>,
    pub lease_owner: Option<String>,
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub error_code: Option<i32>,
    pub error_category: Option<String>,
    pub error_can_retry: Option<bool>,
    pub error_explanation: Option<String>,
    pub error_suggested_action: Option<String>,
    pub trace_context: Option<serde_json::Value>,
    pub sent_at: Option<DateTime<Utc>>,
    pub delivered_at: Option<DateTime<Utc>>,
    pub read_at: Option<DateTime<Utc>>,
    pub failed_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// When its content was erased (retention or a forgotten customer).
    pub redacted_at: Option<DateTime<Utc>>,
}

impl Message {
    /// The message with id `id`, if any.
    pub async fn find(
        conn: &mut diesel_async::AsyncPgConnection,
        id: Uuid,
    ) -> QueryResult<Option<Message>> {
        let query = messages::table.find(id).select(Message::as_select());
        diesel_async::RunQueryDsl::first(query, conn)
            .await
            .optional()
    }
}

#[derive(Clone, Debug, Queryable, Selectable, Serialize)]
#[diesel(table_name = error_knowledge_base)]
pub struct ErrorKnowledge {
    pub code: i32,
    pub title: String,
    pub category: String,
    pub can_retry: bool,
    pub handling: String,
    pub human_explanation: String,
    pub suggested_action: String,
    pub updated_at: DateTime<Utc>,
}

#[derive(Clone, Debug, Queryable, Selectable, Serialize)]
#[diesel(table_name = conversation_pricing)]
pub struct PricingEntry {
    pub id: i32,
    pub country: String,
    pub conversation_type: String,
    pub cost_e4: i64,
    pub currency: String,
    pub pricing_category: String,
    pub pricing_model_version: String,
    pub effective_date: NaiveDate,
}

#[cfg(test)]
mod tests {
    use super::message_status::*;

    #[test]
    fn statuses_only_move_forward() {
        assert!(advances(QUEUED, SENT));
        assert!(advances(SENT, DELIVERED));
        assert!(advances(DELIVERED, READ));
        assert!(advances(SENT, FAILED));
        assert!(!advances(READ, DELIVERED));
        assert!(!advances(DELIVERED, SENT));
        assert!(!advances(DELIVERED, FAILED));
        assert!(advances(SENDING, READ));
    }
}
