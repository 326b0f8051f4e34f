//! What the conversation tools answer: one conversation's window, pages of them, archiving.

use schemars::JsonSchema;
use serde::Serialize;

use super::CustomerIds;

#[derive(Serialize, JsonSchema)]
pub struct ConversationOut {
    pub customer_id: String,
    #[serde(flatten)]
    pub ids: CustomerIds,
    pub channel: String,
    /// The sender (business number) whose conversation this is.
    pub from: String,
    /// The conversation's id (null when the customer never wrote); archive_chat takes it.
    pub conversation_id: Option<String>,
    pub window_open: bool,
    pub time_remaining_secs: i64,
    pub conversation_type: String,
    pub last_inbound_at: Option<String>,
    pub last_outbound_at: Option<String>,
    pub window_expires_at: Option<String>,
    /// "eligible", or why not (user_opted_out, frequency_cap_exceeded, policy_restriction).
    pub marketing_eligibility: String,
    /// "eligible", or why not (user_opted_out, policy_restriction).
    pub utility_eligibility: String,
    pub archived: bool,
    /// Who holds the conversation now: agents, human, other_app or idle (do not reply
    /// while a person or another app holds it).
    pub holder: warden_core::conversations::holder::HolderView,
    /// Whether the customer lets this number call them: status granted, rejected or none
    /// (no answer, or a temporary grant that ended), from their answer to a
    /// call_permission_request.
    pub call_permission: warden_core::calls::CallPermissionView,
}

#[derive(Serialize, JsonSchema)]
pub struct ConversationItem {
    pub id: String,
    pub customer_id: String,
    pub channel: String,
    pub window_open: bool,
    pub time_remaining_secs: i64,
    /// The sender (business number) whose conversation this is.
    pub from: String,
    pub conversation_type: String,
    pub last_inbound_at: Option<String>,
    pub last_outbound_at: Option<String>,
    pub window_expires_at: Option<String>,
}

#[derive(Serialize, JsonSchema)]
pub struct ConversationsPage {
    pub conversations: Vec<ConversationItem>,
    /// All matching conversations (not just this page).
    pub total: i64,
    pub limit: i64,
    pub offset: i64,
}

#[derive(Serialize, JsonSchema)]
pub struct ArchiveOut {
    pub conversation_id: String,
    /// The sender (business number) the conversation is with.
    pub from: String,
    /// "archived".
    pub status: String,
    pub from_type: String,
    pub customer_id: String,
    pub archived_at: String,
}
