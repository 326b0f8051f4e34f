//! The tools, one module per domain (each an rmcp router, combined in
//! [`crate::server`]); each tool's parameters are a struct beside its handler
//! ([`crate::input`]):
//! - [`send`]: check_compliance, send_message, send_template, reply_customer
//! - [`rich`]: send_media, send_interactive, send_location, react_to_message
//! - [`contacts`]: send_contacts, contact cards
//! - [`media`]: upload_media, get_media
//! - [`conversations`]: check_conversation, list_conversations, list_inbox,
//!   get_conversation_history, mark_as_read, archive_chat
//! - [`customers`]: get_customer_context, check_frequency_cap
//! - [`delivery`]: get_delivery_status, retry_failed_messages, explain_error, get_rate_limit
//! - [`templates`]: list_templates, create_template, sync_template_status
//! - [`campaigns`]: schedule_message, schedule_campaign, pause/resume/cancel_campaign,
//!   get_campaign
//! - [`account`]: get_account_quality, estimate_cost, estimate_pricing, get_spend,
//!   sync_webhooks
//! - [`senders`]: list_senders, and the senders an agent may use
//! - [`holders`]: hand_off_conversation, release_conversation (who holds a conversation)
//! - [`preview`]: preview_campaign, what a campaign would do now with nothing written
//! - [`flows`]: get_flow_responses, list_flows, and the flow parameters of the send tools
//!
//! Adding a parameter: a field on the tool's input struct (its doc comment is the schema's
//! description), read in the handler, listed under the tool in docs/tools.md.

pub(crate) mod account;
pub(crate) mod campaigns;
pub(crate) mod contacts;
pub(crate) mod conversations;
pub(crate) mod customers;
pub(crate) mod delivery;
pub(crate) mod flows;
pub(crate) mod holders;
pub(crate) mod media;
pub(crate) mod preview;
pub(crate) mod rich;
pub(crate) mod scopes;
pub(crate) mod send;
pub(crate) mod senders;
pub(crate) mod templates;

use diesel_async::AsyncPgConnection;
use diesel_async::pooled_connection::bb8::PooledConnection;
use warden_core::{SendKind, SendRequest};
use warden_rules::kinds::MessageType;
use warden_rules::phone::PhoneNumber;
use warden_rules::templates::MAX_NAME_CHARS;

use warden_core::templates::PlatformTemplate;
use warden_platform::{PlatformError, TemplateInfo};

use crate::error::upstream;
use crate::error::{ToolError, ToolResult};
use crate::gateway::Gateway;
use crate::input::checks::bounded;
use crate::input::fields::{Customer, Json, Text, Whole, opt_whole};
use crate::input::shared::OnChannel;
use crate::quoting::kind_message;
use crate::schema::SendOut;

impl Gateway {
    /// A free-form (service) message from a tool through the one send path
    /// ([`warden_core::Core::send`]), answered as send_message answers.
    pub(crate) async fn send_free_form(
        &self,
        phone: PhoneNumber,
        on: &OnChannel,
        kind: SendKind,
        actor: &'static str,
        key: Option<warden_core::send::idempotency::IdempotencyKey>,
    ) -> ToolResult<SendOut> {
        let accepted = self
            .core()
            .send_keyed(
                SendRequest::from_tool(
                    phone.clone(),
                    on.channel(),
                    kind,
                    MessageType::Service,
                    actor,
                )
                .from_sender(on.from()),
                key,
            )
            .await?;
        Ok(SendOut::queued(&accepted, &phone, on.channel()))
    }

    /// The customer a tool parameter names (a phone number or a BSUID), as its key. A BSUID
    /// of a customer known by phone resolves to that customer, so every rule applies
    /// whatever identifier was used.
    pub(crate) async fn resolve(&self, customer: &Customer) -> ToolResult<PhoneNumber> {
        Ok(self.core().customer(&customer.0).await?)
    }

    /// A pooled Postgres connection, or UNAVAILABLE.
    pub(crate) async fn conn(&self) -> ToolResult<PooledConnection<'_, AsyncPgConnection>> {
        self.inner.core.pg().get().await.map_err(ToolError::from)
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
pub(crate) fn template_name_arg(key: &str, name: &Text) -> ToolResult<String> {
    let name = name.0.clone();
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
pub(crate) fn components_of(components: &Option<Json>) -> ToolResult<Vec<serde_json::Value>> {
    let hint = "a JSON array of components such as [{\"type\": \"header\", \"parameters\": [{\"type\": \"image\", \"image\": {\"link\": \"https://...\"}}]}]";
    match components {
        None => Ok(Vec::new()),
        Some(Json(serde_json::Value::Array(items))) => Ok(items.clone()),
        Some(_) => Err(ToolError::invalid(
            "The parameter `components` must be a JSON array of header, body and button components.",
            format!("Pass components as {hint}."),
        )),
    }
}

/// limit (1..500, default 50) and offset (>= 0, default 0).
pub(crate) fn page(
    limit: &Option<Whole<u32>>,
    offset: &Option<Whole<u32>>,
) -> ToolResult<(i64, i64)> {
    let limit = match opt_whole(limit) {
        Some(l) => bounded("limit", l, 1, 500, "between 1 and 500 (default 50)")?,
        None => 50,
    };
    let offset = match opt_whole(offset) {
        Some(o) => bounded(
            "offset",
            o,
            0,
            i64::from(i32::MAX),
            "as 0 or more (default 0)",
        )?,
        None => 0,
    };
    Ok((limit, offset))
}

/// A template as the platform described it, in the core's terms.
pub(crate) fn platform_template(info: &TemplateInfo) -> PlatformTemplate {
    PlatformTemplate {
        name: info.name.clone(),
        language: info.language.clone(),
        status: info.status.clone(),
        category: info.category.clone(),
        rejected_reason: info.rejected_reason.clone(),
        id: info.id.clone(),
        body_text: info.body_text().map(str::to_string),
        components: serde_json::to_value(&info.components).ok(),
        parameter_format: info.parameter_format.clone(),
    }
}

impl Gateway {
    /// An upstream failure, explained by the knowledge base when the platform gave a code.
    pub(crate) async fn upstream_error(&self, what: &str, err: &PlatformError) -> ToolError {
        let explained = match err.code().and_then(|c| i32::try_from(c).ok()) {
            Some(code) => match self.conn().await {
                Ok(mut conn) => warden_core::delivery::knowledge::explain(&mut conn, code)
                    .await
                    .ok(),
                Err(_) => None,
            },
            None => None,
        };
        upstream(what, err, explained.as_ref())
    }
}
