//! Which scope each tool needs (docs/remote-agents.md, Scopes). `tools/list` shows a caller only
//! the tools its scopes allow; calling any other answers `FORBIDDEN` naming the scope.

use crate::caller::Scope;

/// The scope `tool` needs. A tool missing from this table needs `admin`, so a new tool is
/// never open to every agent by mistake (a test checks every tool is listed).
pub(crate) fn required(tool: &str) -> Scope {
    listed(tool).unwrap_or(Scope::Admin)
}

pub(crate) fn listed(tool: &str) -> Option<Scope> {
    Some(match tool {
        "check_compliance"
        | "check_conversation"
        | "check_frequency_cap"
        | "estimate_cost"
        | "estimate_pricing"
        | "explain_error"
        | "get_account_quality"
        | "get_campaign"
        | "get_conversation_history"
        | "get_customer_context"
        | "get_delivery_status"
        | "get_media"
        | "get_rate_limit"
        | "get_spend"
        | "list_conversations"
        | "list_inbox"
        | "list_senders"
        | "list_templates" => Scope::Read,
        "send_message"
        | "send_template"
        | "send_media"
        | "send_interactive"
        | "send_location"
        | "reply_customer"
        | "react_to_message"
        | "mark_as_read"
        | "retry_failed_messages"
        // A hand-off only steps the agents aside; giving it back is an operator's call.
        | "hand_off_conversation"
        // Uploading is the first half of sending media.
        | "upload_media" => Scope::Send,
        "schedule_message" => Scope::Schedule,
        "schedule_campaign" | "cancel_campaign" | "pause_campaign" | "resume_campaign"
        | "preview_campaign" => Scope::Campaigns,
        "create_template" | "sync_template_status" => Scope::Templates,
        "archive_chat" | "sync_webhooks" | "resume_sender" | "release_conversation" => {
            Scope::Admin
        }
        _ => return None,
    })
}
