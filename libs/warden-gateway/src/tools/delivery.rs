//! Following a message after it was accepted: get_delivery_status, retry_failed_messages,
//! explain_error (the platform's error codes) and get_rate_limit (the pace of delivery).

use rmcp::handler::server::tool::ToolName;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::answer::finish;
use crate::error::{ToolError, ToolResult, code};
use crate::gateway::Gateway;
use crate::input::{Input, parse};
use crate::schema::{self, *};
use serde_json::Value;
use uuid::Uuid;
use warden_core::delivery::retries::RetryOutcome;

use crate::answer::{opt_ts, ts};
use crate::input::fields::{Id, Json, Text};
use crate::input::shared::OnChannel;
use crate::quoting::{ECHO_CHARS, echo, shorten};

#[derive(Deserialize, JsonSchema)]
pub struct MessageIdIn {
    /// The message_id a send, reply or schedule call returned (a UUID).
    pub message_id: Id,
}

#[derive(Deserialize, JsonSchema)]
pub struct RetryIn {
    /// JSON array (as a string) of message ids to retry, e.g. "[\"0192f3c4-...\"]"; at most 100.
    pub message_ids: Json,
}

#[derive(Deserialize, JsonSchema)]
pub struct ExplainErrorIn {
    /// The platform's numeric error code, as a string, e.g. "131047".
    pub code: Text,
}

/// The most ids one retry call takes.
const MAX_RETRY_IDS: usize = 100;

#[tool_router(router = delivery_tools, vis = "pub(crate)")]
impl Gateway {
    #[tool(
        description = "Track a message by the message_id a send returned: status (scheduled, queued, sent, delivered, read or \
failed), retry_count, timestamps; when failed an error object with the platform code, category, can_retry, explanation and \
suggested_action (retry_failed_messages re-queues retryable failures). Errors: INVALID_ARGUMENT (not a UUID), NOT_FOUND \
(no such message: check the id), UNAVAILABLE (retry shortly).",
        input_schema = schema::input::<MessageIdIn>(),
        output_schema = schema::output::<DeliveryOut>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn get_delivery_status(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.get_delivery_status_impl(args).await)
    }

    #[tool(
        description = "Re-queue failed messages. For each id: only failed messages are considered; failures the error \
knowledge base marks as not retryable (e.g. the number is not on the platform) are skipped with a reason naming the \
error code; compliance is re-run now (opt-outs, window, cap, policies) and a refusal skips the message; the rest are \
re-queued with retry_count + 1. Returns {\"results\": [{message_id, status: \"retried\" or \"skipped\", reason when \
skipped}]}; skipped is not an error. Errors: INVALID_ARGUMENT (message_ids is not a JSON array of ids), UNAVAILABLE.",
        input_schema = schema::input::<RetryIn>(),
        output_schema = schema::output::<RetryOut>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = true)
    )]
    async fn retry_failed_messages(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.retry_failed_messages_impl(args).await)
    }

    #[tool(
        description = "Explain a platform error code (for example from get_delivery_status): its category, whether a retry can \
succeed (can_retry), a plain explanation and what to do. Codes Warden does not know get a cautious fallback (known false). \
Errors: INVALID_ARGUMENT (code is not a number).",
        input_schema = schema::input::<ExplainErrorIn>(),
        output_schema = schema::output::<ExplainOut>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn explain_error(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.explain_error_impl(args).await)
    }

    #[tool(
        description = "Read the channel's shared send rate limiter (a token bucket in messages per second): capacity_mps, \
tokens_remaining, tokens_used and when it last changed. Useful before a burst of sends; sends are never refused by it, \
only paced. Errors: INVALID_ARGUMENT (bad channel), UNAVAILABLE (the cache is down; sending still works).",
        input_schema = schema::input::<OnChannel>(),
        output_schema = schema::output::<RateLimitOut>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn get_rate_limit(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.get_rate_limit_impl(args).await)
    }
}

impl Gateway {
    async fn get_delivery_status_impl(&self, args: JsonObject) -> ToolResult<DeliveryOut> {
        let a: Input<MessageIdIn> = parse(args)?;
        let id = a.message_id.0;
        let core = self.core();
        let Some(m) = warden_core::delivery::tracking::message_status(&core, id).await? else {
            return Err(ToolError::not_found(
                format!("There is no message with id {id}."),
                "Check the message_id: it is the id send_message, send_template, reply_customer or schedule_message returned.",
            ));
        };
        Ok(DeliveryOut {
            message_id: m.message_id.to_string(),
            from: core.sender_id_of_key(&m.sender).to_string(),
            customer_id: m.customer_id,
            channel: m.channel,
            direction: m.direction,
            message_type: m.message_type,
            status: m.status,
            retry_count: m.retry_count,
            created_at: ts(m.created_at),
            updated_at: ts(m.updated_at),
            deliver_at: opt_ts(m.deliver_at),
            template_name: m.template_name,
            campaign_id: m.campaign_id.map(|c| c.to_string()),
            error: m.error.map(|e| ErrorObj {
                code: e.code,
                category: e.category,
                can_retry: e.can_retry,
                human_explanation: e.human_explanation,
                suggested_action: e.suggested_action,
            }),
            sent_by: m.sent_by,
            pricing: m.pricing.map(|p| MessagePricingOut {
                category: p.charge.category,
                billable: p.charge.billable,
                pricing_type: p.charge.pricing_type,
                pricing_model: p.charge.pricing_model,
                actual_cost: crate::tools::account::decimal_e4(i128::from(p.charge.actual_e4)),
                currency: p.currency,
            }),
        })
    }

    async fn retry_failed_messages_impl(&self, args: JsonObject) -> ToolResult<RetryOut> {
        let a: Input<RetryIn> = parse(args)?;
        let what = "a JSON array of message ids, e.g. [\"0192f3c4-5d6e-7f80-9a1b-2c3d4e5f6a7b\"]";
        let items: Vec<String> = match &a.message_ids.0 {
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
        Ok(
            match warden_core::delivery::retries::retry_failed(&self.core(), id, self.actor())
                .await?
            {
                RetryOutcome::Requeued { .. } => RetryItem {
                    message_id: id.to_string(),
                    status: "retried".into(),
                    reason: None,
                },
                RetryOutcome::Skipped(reason) => skipped(id, reason),
            },
        )
    }

    async fn explain_error_impl(&self, args: JsonObject) -> ToolResult<ExplainOut> {
        let a: Input<ExplainErrorIn> = parse(args)?;
        let raw = a.code.0.clone();
        let digits = raw.trim().trim_start_matches('#');
        let code: i32 = digits
            .parse()
            .ok()
            .filter(|c: &i32| *c >= 0)
            .ok_or_else(|| {
                ToolError::invalid(
                    format!(
                        "The parameter `code` must be a numeric platform error code, got {}.",
                        echo(&raw)
                    ),
                    "Pass the number only, e.g. \"131047\".",
                )
            })?;
        let mut conn = self.conn().await?;
        let e = warden_core::delivery::knowledge::explain(&mut conn, code).await?;
        Ok(ExplainOut {
            code: e.code,
            title: e.title,
            category: e.category,
            can_retry: e.can_retry,
            human_explanation: e.human_explanation,
            suggested_action: e.suggested_action,
            known: e.known,
        })
    }

    async fn get_rate_limit_impl(&self, args: JsonObject) -> ToolResult<RateLimitOut> {
        let a: Input<OnChannel> = parse(args)?;
        let channel = a.channel();
        let unavailable = |why: String| {
            tracing::warn!(why, "rate limiter state unavailable");
            ToolError::new(
                code::UNAVAILABLE,
                "The rate limiter's state cannot be read because the cache (Redis) is unavailable.",
                "Sending still works (dispatchers fall back to a local limit); try again later for the figures.",
            )
        };
        let core = self.core();
        let Some(redis) = core.redis() else {
            return Err(unavailable("no Redis configured".into()));
        };
        // The capacity the dispatcher's bucket of that number uses, as the platform set it.
        let sender = core.sender(a.from())?;
        let key = core.senders().sender_key(sender);
        let (setting, configured_by) = core.settings().configured_mps_of(sender);
        let capacity = warden_core::account::throughput::current_for(core.pg(), key, setting)
            .await
            .map_err(|e| unavailable(e.to_string()))?;
        // The default sender's bucket keeps the channel's key.
        let bucket = (!warden_core::senders::is_default_key(key)).then_some(key);
        let st = warden_ratelimit::state_for(redis, channel, bucket, capacity.mps)
            .await
            .map_err(|e| unavailable(e.to_string()))?;
        Ok(RateLimitOut {
            from: sender.id.clone(),
            channel: channel.to_string(),
            capacity_mps: st.capacity_mps,
            capacity_source: capacity.source.as_str().to_owned(),
            capacity_detail: capacity.detail.unwrap_or(configured_by),
            capacity_updated_at: capacity.updated_at.map(|t| t.to_rfc3339()),
            tokens_remaining: st.tokens_remaining,
            tokens_used: st.tokens_used,
            last_update_ms: st.last_update_ms,
            last_update_at: st.last_update_at,
        })
    }
}

fn skipped(id: impl ToString, reason: impl Into<String>) -> RetryItem {
    RetryItem {
        message_id: id.to_string(),
        status: "skipped".into(),
        reason: Some(reason.into()),
    }
}
