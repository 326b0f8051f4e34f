//! Following a message after it was accepted: get_delivery_status, retry_failed_messages,
//! explain_error (the platform's error codes) and get_rate_limit (the pace of delivery).

use rmcp::model::{CallToolResult, JsonObject};
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::error::{ToolError, ToolResult, code};
use crate::gateway::Gateway;
use crate::input::{Input, parse};
use crate::schema::{self, *};
use crate::util::finish;
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use serde_json::Value;
use uuid::Uuid;
use warden_core::{RefusalMode, SendError, SendKind, SendRequest};
use warden_rules::kinds::MessageType;
use warden_store::models::Message;
use warden_store::schema::messages;

use crate::input::fields::{Id, Json, Text};
use crate::input::shared::OnChannel;
use crate::text::{ECHO_CHARS, detail, echo, shorten};
use crate::util::{opt_ts, ts};

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
        name = "get_delivery_status",
        description = "Track a message by the message_id a send returned: status (scheduled, queued, sent, delivered, read or \
failed), retry_count, timestamps; when failed an error object with the platform code, category, can_retry, explanation and \
suggested_action (retry_failed_messages re-queues retryable failures). Errors: INVALID_ARGUMENT (not a UUID), NOT_FOUND \
(no such message: check the id), UNAVAILABLE (retry shortly).",
        input_schema = schema::input::<MessageIdIn>(),
        output_schema = schema::output::<DeliveryOut>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn get_delivery_status(&self, args: JsonObject) -> CallToolResult {
        finish(
            "get_delivery_status",
            self.get_delivery_status_impl(args).await,
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
            self.retry_failed_messages_impl(args).await,
        )
    }

    #[tool(
        name = "explain_error",
        description = "Explain a platform error code (for example from get_delivery_status): its category, whether a retry can \
succeed (can_retry), a plain explanation and what to do. Codes Warden does not know get a cautious fallback (known false). \
Errors: INVALID_ARGUMENT (code is not a number).",
        input_schema = schema::input::<ExplainErrorIn>(),
        output_schema = schema::output::<ExplainOut>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn explain_error(&self, args: JsonObject) -> CallToolResult {
        finish("explain_error", self.explain_error_impl(args).await)
    }

    #[tool(
        name = "get_rate_limit",
        description = "Read the channel's shared send rate limiter (a token bucket in messages per second): capacity_mps, \
tokens_remaining, tokens_used and when it last changed. Useful before a burst of sends; sends are never refused by it, \
only paced. Errors: INVALID_ARGUMENT (bad channel), UNAVAILABLE (the cache is down; sending still works).",
        input_schema = schema::input::<OnChannel>(),
        output_schema = schema::output::<RateLimitOut>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn get_rate_limit(&self, args: JsonObject) -> CallToolResult {
        finish("get_rate_limit", self.get_rate_limit_impl(args).await)
    }
}

impl Gateway {
    async fn get_delivery_status_impl(&self, args: JsonObject) -> ToolResult<DeliveryOut> {
        let a: Input<MessageIdIn> = parse(args)?;
        let id = a.message_id.0;
        let mut conn = self.conn().await?;
        let Some(m) = messages::table
            .find(id)
            .select(Message::as_select())
            .first(&mut conn)
            .await
            .optional()?
        else {
            return Err(ToolError::not_found(
                format!("There is no message with id {id}."),
                "Check the message_id: it is the id send_message, send_template, reply_customer or schedule_message returned.",
            ));
        };
        let error = if m.status == warden_store::models::message_status::FAILED {
            Some(self.error_of(&mut conn, &m).await?)
        } else {
            None
        };
        let sent_by = warden_core::send::attribution::sent_by(&mut conn, &[m.id])
            .await?
            .remove(&m.id);
        let charge = warden_core::account::pricing::charge_of(&mut conn, m.id)
            .await
            .map_err(warden_core::CoreError::from)?;
        drop(conn);
        let pricing = match charge {
            Some(p) => Some(MessagePricingOut {
                category: p.category,
                billable: p.billable,
                pricing_type: p.pricing_type,
                pricing_model: p.pricing_model,
                actual_cost: crate::tools::account::decimal_e4(i128::from(p.actual_e4)),
                currency: self.currency().await,
            }),
            None => None,
        };
        Ok(DeliveryOut {
            message_id: m.id.to_string(),
            customer_id: m.customer_phone,
            channel: m.channel,
            direction: m.direction,
            message_type: m.message_type,
            status: public_status(&m.status).to_string(),
            retry_count: m.retry_count,
            created_at: ts(m.created_at),
            updated_at: ts(m.updated_at),
            deliver_at: opt_ts(m.deliver_at),
            template_name: m.template_name,
            campaign_id: m.campaign_id.map(|c| c.to_string()),
            error,
            sent_by,
            pricing,
        })
    }

    /// The explained error of a failed message (the stored explanation, completed from the
    /// knowledge base when only the code was stored).
    async fn error_of(
        &self,
        conn: &mut diesel_async::AsyncPgConnection,
        m: &Message,
    ) -> ToolResult<ErrorObj> {
        let code = m.error_code.unwrap_or(0);
        if let (Some(category), Some(explanation)) = (&m.error_category, &m.error_explanation) {
            return Ok(ErrorObj {
                code,
                category: category.clone(),
                can_retry: m.error_can_retry.unwrap_or(false),
                human_explanation: explanation.clone(),
                suggested_action: m.error_suggested_action.clone().unwrap_or_else(|| {
                    "Use explain_error with the code for what to do next.".into()
                }),
            });
        }
        let e = warden_core::delivery::knowledge::explain(conn, code).await?;
        Ok(ErrorObj {
            code,
            category: m.error_category.clone().unwrap_or(e.category),
            can_retry: m.error_can_retry.unwrap_or(e.can_retry),
            human_explanation: e.human_explanation,
            suggested_action: e.suggested_action,
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
                    public_status(&m.status)
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
        let Some(redis) = self.core().redis() else {
            return Err(unavailable("no Redis configured".into()));
        };
        // The capacity the dispatcher's bucket uses: the number's, as the platform set it.
        let setting = self.core().settings().rate_limit_mps;
        let capacity = warden_core::account::throughput::current(self.core().pg(), setting)
            .await
            .map_err(|e| unavailable(e.to_string()))?;
        let st = warden_ratelimit::state(redis, channel, capacity.mps)
            .await
            .map_err(|e| unavailable(e.to_string()))?;
        Ok(RateLimitOut {
            channel: channel.to_string(),
            capacity_mps: st.capacity_mps,
            capacity_source: capacity.source.as_str().to_owned(),
            capacity_detail: capacity
                .detail
                .unwrap_or_else(|| format!("RATE_LIMIT_MPS={setting}")),
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

/// Statuses agents see: the dispatcher's internal `sending` claim is still `queued` to them.
pub(crate) fn public_status(status: &str) -> &str {
    match status {
        "sending" => "queued",
        other => other,
    }
}
