//! The tools, one module per group of the spec (each an rmcp router, combined in
//! [`crate::gateway::Gateway::new`]):
//! - [`v1`]: check_compliance, send_message, send_template, explain_error
//! - [`read`] (A): check_conversation, check_frequency_cap, get_customer_context,
//!   get_delivery_status, get_rate_limit, list_conversations, list_templates
//! - [`actions`] (B): reply_customer, retry_failed_messages, sync_template_status
//! - [`campaigns`] (C): schedule_message, schedule_campaign, cancel_campaign,
//!   pause_campaign, resume_campaign, get_campaign
//! - [`account`] (D): get_account_quality, estimate_cost, estimate_pricing
//! - [`ops`] (E): create_template, sync_webhooks, archive_chat
//! - [`listen`]: get_conversation_history, list_inbox, mark_as_read
//! - [`rich`]: send_media, send_interactive, send_location, react_to_message
//! - [`media`]: upload_media, get_media

pub(crate) mod account;
pub(crate) mod actions;
pub(crate) mod campaigns;
pub(crate) mod listen;
pub(crate) mod media;
pub(crate) mod ops;
pub(crate) mod read;
pub(crate) mod rich;
pub(crate) mod scopes;
pub(crate) mod v1;

use diesel_async::AsyncPgConnection;
use diesel_async::pooled_connection::bb8::PooledConnection;
use warden_core::{SendKind, SendRequest};
use warden_rules::kinds::MessageType;
use warden_rules::phone::PhoneNumber;
use warden_rules::templates::MAX_NAME_CHARS;

use crate::args::Args;
use crate::error::{ToolError, ToolResult};
use crate::gateway::Gateway;
use crate::schema::SendOut;
use crate::text::kind_message;

impl Gateway {
    /// A free-form (service) message from a tool through the one send path
    /// ([`warden_core::Core::send`]), answered as send_message answers.
    pub(crate) async fn send_free_form(
        &self,
        phone: PhoneNumber,
        channel: &str,
        kind: SendKind,
        actor: &'static str,
        key: Option<warden_core::send::idempotency::IdempotencyKey>,
    ) -> ToolResult<SendOut> {
        let accepted = self
            .core()
            .send_keyed(
                SendRequest::from_tool(phone.clone(), channel, kind, MessageType::Service, actor),
                key,
            )
            .await?;
        Ok(SendOut::queued(&accepted, &phone, channel))
    }

    /// The customer a tool parameter names (a phone number or a BSUID), as its key:
    /// INVALID_ARGUMENT naming `key` when malformed. A BSUID of a customer known by phone
    /// resolves to that customer, so every rule applies whatever identifier was used.
    pub(crate) async fn customer(&self, a: &Args, key: &str) -> ToolResult<PhoneNumber> {
        let id = a.phone(key)?;
        Ok(self.core().customer(&id).await?)
    }

    /// A pooled Postgres connection, or UNAVAILABLE.
    pub(crate) async fn conn(&self) -> ToolResult<PooledConnection<'_, AsyncPgConnection>> {
        self.core().pg().get().await.map_err(ToolError::from)
    }
}

/// `message_type` of check_compliance and schedule_message.
pub(crate) fn parse_message_type(raw: &str) -> ToolResult<MessageType> {
    raw.parse::<MessageType>().map_err(|e| {
        ToolError::invalid(
            format!("{}.", kind_message(&e)),
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

/// The longest template variable value taken (a template body's own limit).
pub(crate) const MAX_VARIABLE_CHARS: usize = warden_rules::templates::MAX_BODY_CHARS;

/// Every variable value has at most [`MAX_VARIABLE_CHARS`] characters and is text the
/// platform takes in a template parameter (no newline, tab or control character, at most
/// four spaces in a row).
pub(crate) fn check_variables(key: &str, variables: &[String]) -> ToolResult<()> {
    warden_rules::templates::check_parameters(variables).map_err(|e| {
        ToolError::invalid(
            format!("The parameter `{key}`: {e}."),
            "Give each value on one line, without tabs or runs of more than four spaces.",
        )
    })?;
    for (i, v) in variables.iter().enumerate() {
        let n = v.chars().count();
        if n > MAX_VARIABLE_CHARS {
            return Err(ToolError::invalid(
                format!(
                    "The parameter `{key}`: variable {{{{{}}}}} has {n} characters; at most {MAX_VARIABLE_CHARS} are allowed.",
                    i + 1
                ),
                "Shorten the value; the whole template body is limited to 1024 characters.",
            ));
        }
    }
    Ok(())
}

/// A required template name to send to the platform: at most [`MAX_NAME_CHARS`]
/// characters, as create_template enforces (same wording).
pub(crate) fn template_name_arg(a: &Args, key: &str, hint: &str) -> ToolResult<String> {
    let name = a.string(key, hint)?;
    let n = name.chars().count();
    if n > MAX_NAME_CHARS {
        return Err(ToolError::invalid(
            format!(
                "The template name is not valid: template name has {n} characters; at most {MAX_NAME_CHARS} are allowed."
            ),
            format!(
                "Fix `{key}` and call again: template names have at most {MAX_NAME_CHARS} characters."
            ),
        ));
    }
    Ok(name)
}

/// The optional `components` parameter of send_template and schedule_campaign: a JSON array
/// of template components in the platform's shape (checked against the template later).
pub(crate) fn parse_components(a: &Args) -> ToolResult<Vec<serde_json::Value>> {
    let hint = "a JSON array of components such as [{\"type\": \"header\", \"parameters\": [{\"type\": \"image\", \"image\": {\"link\": \"https://...\"}}]}]";
    match a.opt_json("components", hint)? {
        None => Ok(Vec::new()),
        Some(serde_json::Value::Array(items)) => Ok(items),
        Some(_) => Err(ToolError::invalid(
            "The parameter `components` must be a JSON array of header, body and button components.",
            format!("Pass components as {hint}."),
        )),
    }
}
