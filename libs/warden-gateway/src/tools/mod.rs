//! The tools, one module per group of the spec (each an rmcp router, combined in
//! [`crate::server::Gateway::new`]):
//! - [`v1`]: check_compliance, send_message, send_template, explain_error
//! - [`read`] (A): check_conversation, check_frequency_cap, get_customer_context,
//!   get_delivery_status, get_rate_limit, list_conversations, list_templates
//! - [`actions`] (B): reply_customer, retry_failed_messages, sync_template_status
//! - [`campaigns`] (C): schedule_message, schedule_campaign, cancel_campaign,
//!   pause_campaign, resume_campaign, get_campaign
//! - [`account`] (D): get_account_quality, estimate_cost, estimate_pricing
//! - [`ops`] (E): create_template, sync_webhooks, archive_chat

pub(crate) mod account;
pub(crate) mod actions;
pub(crate) mod campaigns;
pub(crate) mod ops;
pub(crate) mod read;
pub(crate) mod v1;

use diesel_async::AsyncPgConnection;
use diesel_async::pooled_connection::bb8::PooledConnection;
use warden_rules::kinds::MessageType;

use crate::error::{ToolError, ToolResult};
use crate::server::Gateway;

impl Gateway {
    /// A pooled Postgres connection, or UNAVAILABLE.
    pub(crate) async fn conn(&self) -> ToolResult<PooledConnection<'_, AsyncPgConnection>> {
        self.core().pg().get().await.map_err(ToolError::from)
    }
}

/// `message_type` of check_compliance and schedule_message.
pub(crate) fn parse_message_type(raw: &str) -> ToolResult<MessageType> {
    raw.parse::<MessageType>().map_err(|e| {
        ToolError::invalid(
            format!("{e}."),
            "Pass message_type as marketing, utility, template or service.",
        )
    })
}

/// The longest free-form text the platform accepts.
pub(crate) const MAX_TEXT_CHARS: usize = 4096;

pub(crate) fn check_text(key: &str, text: &str) -> ToolResult<()> {
    let n = text.chars().count();
    if n > MAX_TEXT_CHARS {
        return Err(ToolError::invalid(
            format!(
                "The parameter `{key}` has {n} characters; at most {MAX_TEXT_CHARS} are allowed."
            ),
            "Shorten the text or split it into several messages.",
        ));
    }
    Ok(())
}
