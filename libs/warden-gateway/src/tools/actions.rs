//! Group B, actions: reply_customer, retry_failed_messages, sync_template_status.

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::{tool, tool_router};
use serde_json::Value;
use uuid::Uuid;
use warden_core::templates::{PlatformTemplate, SyncSource};
use warden_core::{RefusalMode, SendError, SendKind, SendRequest};
use warden_platform::{PlatformError, TemplateInfo};
use warden_rules::compliance::ReasonCode;
use warden_rules::kinds::MessageType;
use warden_store::models::Message;
use warden_store::schema::messages;

use crate::args::Args;
use crate::error::{ToolError, ToolResult, code, upstream};
use crate::gateway::Gateway;
use crate::schema::{self, *};
use crate::text::{ECHO_CHARS, detail, echo, shorten};
use crate::tools::{check_text, template_name_arg};
use crate::util::{finish, lower};

/// The most ids one retry call takes.
const MAX_RETRY_IDS: usize = 100;

#[tool_router(router = action_tools, vis = "pub(crate)")]
impl Gateway {
    #[tool(
        name = "reply_customer",
        description = "Reply to a customer with free-form text inside their open 24-hour care window (they wrote within the \
last 24 hours). Goes through the same compliance, policy and send chain as every send. Returns status \"queued\" and \
message_id. Errors: WINDOW_CLOSED (the window is closed: use send_template with an approved template instead), \
USER_OPTED_OUT (do not message them), POLICY_RESTRICTION (the message names the policy), INVALID_ARGUMENT (fix the \
parameter), UNAVAILABLE (nothing was written; retry shortly).",
        input_schema = schema::input::<ReplyCustomerIn>(),
        output_schema = schema::output::<SendOut>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = true)
    )]
    async fn reply_customer(&self, args: JsonObject) -> CallToolResult {
        finish(
            "reply_customer",
            self.reply_customer_impl(Args::new(args)).await,
        )
    }

    #[tool(
        name = "retry_failed_messages",
        description = "Re-queue failed messages. For each id: only failed messages are considered; failures the error \
knowledge base marks as not retryable (e.g. the number is not on the platform) are skipped with a reason naming the \
error code; compliance is re-run now (opt-outs, window, cap, policies) and a refusal skips the message; the rest are \
re-queued with retry_count + 1. Returns {\"results\": [{message_id, status: \"retried\" or \"skipped\", reason when \
skipped}]}; skipped is not an error. Errors: INVALID_ARGUMENT (message_ids is not a JSON array of ids), UNAVAILABLE.",
        input_schema = schema::input::<RetryIn>(),
        output_schema = schema::output::<RetryOut>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = true)
    )]
    async fn retry_failed_messages(&self, args: JsonObject) -> CallToolResult {
        finish(
            "retry_failed_messages",
            self.retry_failed_messages_impl(Args::new(args)).await,
        )
    }

    #[tool(
        name = "sync_template_status",
        description = "Ask the platform, live, for a template's current status and update the local record (the recovery \
path when an approval webhook was missed). Returns template_name, locale, status (APPROVED, PENDING, REJECTED, ...), \
category and previous_status; when REJECTED also the platform's reason and a suggested_action. Also imports a template \
that exists on the platform but not locally. Errors: INVALID_ARGUMENT (template_name over 512 characters, locale not a \
language code), NOT_FOUND (the platform has no such template: check name and locale), UPSTREAM_ERROR (the platform \
refused; the message explains its code), UNAVAILABLE (platform or database unreachable).",
        input_schema = schema::input::<SyncTemplateIn>(),
        output_schema = schema::output::<SyncTemplateOut>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = true)
    )]
    async fn sync_template_status(&self, args: JsonObject) -> CallToolResult {
        finish(
            "sync_template_status",
            self.sync_template_status_impl(Args::new(args)).await,
        )
    }
}

fn skipped(id: impl ToString, reason: impl Into<String>) -> RetryItem {
    RetryItem {
        message_id: id.to_string(),
        status: "skipped".into(),
        reason: Some(reason.into()),
    }
}

impl Gateway {
    async fn reply_customer_impl(&self, a: Args) -> ToolResult<SendOut> {
        let key = a.idempotency("reply_customer", self.actor())?;
        let phone = self.customer(&a, "customer_id").await?;
        let text = a.string("message_text", "the reply text.")?;
        check_text("message_text", &text)?;
        let channel = a.channel()?;
        let result = self
            .core()
            .send_keyed(
                SendRequest::from_tool(
                    phone.clone(),
                    channel,
                    SendKind::Text { body: text },
                    MessageType::Service,
                    self.actor(),
                ),
                key,
            )
            .await;
        let accepted = match result {
            Ok(a) => a,
            Err(SendError::Refused(d)) if d.reason_code == ReasonCode::TemplateRequired => {
                return Err(ToolError::new(
                    code::WINDOW_CLOSED,
                    d.human_explanation,
                    "The care window is closed, so a free-form reply is not allowed: send an approved template with send_template instead (list_templates shows them); the window reopens when the customer writes again.",
                ));
            }
            Err(e) => return Err(e.into()),
        };
        Ok(SendOut::queued(&accepted, &phone, channel))
    }

    async fn retry_failed_messages_impl(&self, a: Args) -> ToolResult<RetryOut> {
        let what = "a JSON array of message ids, e.g. [\"0192f3c4-5d6e-7f80-9a1b-2c3d4e5f6a7b\"]";
        let value = a.json("message_ids", what)?;
        let items: Vec<String> = match &value {
            Value::Array(items) => items
                .iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s.trim().to_string()),
                    other => Err(ToolError::invalid(
                        format!(
                            "message_ids must hold strings, found {}.",
                            echo(&other.to_string())
                        ),
                        format!("Pass message_ids as {what}."),
                    )),
                })
                .collect::<ToolResult<_>>()?,
            Value::String(s) => vec![s.trim().to_string()],
            _ => {
                return Err(ToolError::invalid(
                    "The parameter `message_ids` must be a JSON array of message ids.",
                    format!("Pass message_ids as {what}."),
                ));
            }
        };
        if items.is_empty() {
            return Err(ToolError::invalid(
                "The parameter `message_ids` is an empty list.",
                format!("Pass at least one id: {what}."),
            ));
        }
        if items.len() > MAX_RETRY_IDS {
            return Err(ToolError::invalid(
                format!(
                    "message_ids has {} ids; at most {MAX_RETRY_IDS} are retried per call.",
                    items.len()
                ),
                "Split the ids over several calls.",
            ));
        }
        let mut results = Vec::with_capacity(items.len());
        let mut seen = std::collections::HashSet::new();
        for raw in items {
            if !seen.insert(raw.clone()) {
                results.push(skipped(
                    shorten(&raw, ECHO_CHARS),
                    "listed more than once; retried at most once per call",
                ));
                continue;
            }
            match self.retry_one(&raw).await {
                Ok(item) => results.push(item),
                Err(err) if results.iter().all(|r: &RetryItem| r.status != "retried") => {
                    return Err(err);
                }
                Err(err) => results.push(skipped(
                    shorten(&raw, ECHO_CHARS),
                    format!("not retried: {}", err.message),
                )),
            }
        }
        Ok(RetryOut { results })
    }

    /// One id of retry_failed_messages. `Err` only when a dependency is down.
    async fn retry_one(&self, raw: &str) -> ToolResult<RetryItem> {
        let Ok(id) = Uuid::parse_str(raw) else {
            // Shown back bounded: no message id is longer than a UUID.
            return Ok(skipped(
                shorten(raw, ECHO_CHARS),
                "not a message id (a UUID is expected)",
            ));
        };
        let message = {
            let mut conn = self.conn().await?;
            messages::table
                .find(id)
                .select(Message::as_select())
                .first(&mut conn)
                .await
                .optional()?
        };
        let Some(m) = message else {
            return Ok(skipped(id, "no message with this id"));
        };
        if m.direction != "outbound" {
            return Ok(skipped(id, "an inbound message cannot be retried"));
        }
        if m.status != warden_store::models::message_status::FAILED {
            return Ok(skipped(
                id,
                format!(
                    "the message is {}, not failed; only failed messages are retried",
                    crate::tools::read::public_status(&m.status)
                ),
            ));
        }
        // A compliance failure is never resent: the rule that refused it still stands.
        if let Some(reason) = warden_core::send::recheck::retry_refusal(&m) {
            return Ok(skipped(id, reason));
        }
        let code = m.error_code.unwrap_or(0);
        let explained = {
            let mut conn = self.conn().await?;
            warden_core::delivery::knowledge::explain(&mut conn, code).await?
        };
        if !explained.can_retry {
            let reason = if code == 0 {
                "the failure carries no platform error code, so the error knowledge base cannot call it retryable (error 0 is not retryable); send a new message instead".to_string()
            } else {
                format!(
                    "error {code} ({}) is not retryable: {} {}",
                    explained.title, explained.human_explanation, explained.suggested_action
                )
            };
            return Ok(skipped(id, reason));
        }
        let kind = match SendKind::from_content(&m.content) {
            Ok(k) => k,
            Err(e) => {
                return Ok(skipped(
                    id,
                    format!("the stored content cannot be re-sent: {}", detail(e)),
                ));
            }
        };
        let message_type = m.message_type.parse::<MessageType>().unwrap_or(match kind {
            SendKind::Text { .. } | SendKind::Rich(_) => MessageType::Service,
            SendKind::Template { .. } => MessageType::Template,
        });
        let phone = match warden_rules::bsuid::customer_key(&m.customer_phone) {
            Ok(p) => p,
            Err(e) => return Ok(skipped(id, format!("the stored recipient is invalid: {e}"))),
        };
        let result = self
            .core()
            .send(SendRequest {
                phone,
                channel: m.channel.clone(),
                kind,
                message_type,
                campaign_id: m.campaign_id,
                existing_message_id: Some(id),
                refusal: RefusalMode::Error,
                actor: self.actor(),
            })
            .await;
        match result {
            Ok(accepted) => {
                // The retry is committed: a lost audit row must not make the answer say
                // it was not (the message is queued either way).
                let retried = warden_core::delivery::retries::Retried {
                    message_id: id,
                    previous_error_code: m.error_code,
                    previous_error_category: m.error_category.clone(),
                    retry_count: m.retry_count + 1,
                    published: accepted.published,
                };
                let audited = warden_core::delivery::retries::record_retried(
                    self.core().pg(),
                    &retried,
                    self.actor(),
                )
                .await;
                if let Err(error) = audited {
                    tracing::warn!(message_id = %id, %error, "retried, but the audit row could not be written");
                }
                Ok(RetryItem {
                    message_id: id.to_string(),
                    status: "retried".into(),
                    reason: None,
                })
            }
            Err(e @ (SendError::Unavailable(_) | SendError::Busy { .. })) => Err(e.into()),
            Err(SendError::Refused(d)) | Err(SendError::RefusedRecorded { decision: d, .. }) => {
                Ok(skipped(
                    id,
                    format!(
                        "compliance refused the retry now ({}): {}",
                        d.reason_code.as_str(),
                        d.human_explanation
                    ),
                ))
            }
            Err(other) => {
                let code = other.code();
                Ok(skipped(
                    id,
                    format!("cannot be re-sent ({code}): {}", detail(&other)),
                ))
            }
        }
    }

    async fn sync_template_status_impl(&self, a: Args) -> ToolResult<SyncTemplateOut> {
        // Both go into the platform's request URL: bounded before the call.
        let name = template_name_arg(&a, "template_name", "the template's name.")?;
        let locale = a.locale()?;
        let info = match self.platform().get_template(&name, &locale).await {
            Ok(info) => info,
            Err(e) => return Err(self.upstream_error("read the template's status", &e).await),
        };
        let Some(info) = info else {
            return Err(ToolError::not_found(
                format!(
                    "The platform has no template named {} in locale {}.",
                    echo(&name),
                    echo(&locale)
                ),
                "Check the name and locale (list_templates shows the local ones), or create it with create_template.",
            ));
        };
        let synced = warden_core::templates::sync_from_platform(
            self.core().pg(),
            &platform_template(&info),
            &locale,
            SyncSource::SyncTemplateStatus,
            self.actor(),
        )
        .await?;
        let (previous, row) = (synced.previous_status, synced.template);
        let rejected = row.status == "REJECTED";
        Ok(SyncTemplateOut {
            template_name: row.name,
            locale: row.locale,
            status: row.status,
            category: lower(&row.category),
            platform_id: row.platform_id,
            previous_status: previous,
            reason: rejected.then(|| {
                row.rejection_reason
                    .unwrap_or_else(|| "The platform gave no reason.".into())
            }),
            suggested_action: rejected.then(|| {
                "Revise the body to address the reason (marketing wording in a utility template, missing examples, policy violations) and submit it again with create_template under a new name; use another APPROVED template meanwhile.".to_string()
            }),
        })
    }

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
