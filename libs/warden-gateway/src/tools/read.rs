//! Group A, read-only intelligence: check_conversation, check_frequency_cap,
//! get_customer_context, get_delivery_status, get_rate_limit, list_conversations,
//! list_templates. None of these writes anything.

use chrono::Utc;
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::{tool, tool_router};
use warden_rules::compliance::Decision;
use warden_rules::kinds::MessageType;
use warden_rules::window::{EXPIRING_SOON, WindowState};
use warden_store::models::{Conversation, Message, Template};
use warden_store::schema::{conversations, messages, templates};

use crate::args::Args;
use crate::args::MAX_LANGUAGE_CHARS;
use crate::error::{ToolError, ToolResult, code};
use crate::gateway::Gateway;
use crate::schema::{self, *};
use crate::text::echo;
use crate::util::{bounded, check_len, finish, lower, opt_ts, ts};

/// The longest status or category filter taken (the longest real value has 14 letters).
const MAX_FILTER_CHARS: usize = 32;

diesel::define_sql_function! {
    #[sql_name = "lower"]
    fn sql_lower(x: diesel::sql_types::Text) -> diesel::sql_types::Text;
}
diesel::define_sql_function! {
    #[sql_name = "upper"]
    fn sql_upper(x: diesel::sql_types::Text) -> diesel::sql_types::Text;
}

#[tool_router(router = read_tools, vis = "pub(crate)")]
impl Gateway {
    #[tool(
        name = "check_conversation",
        description = "Read a customer's conversation state: whether the 24-hour care window is open, seconds left, when it \
closes, last inbound/outbound times, and whether marketing and utility templates could be sent now (\"eligible\" or the \
reason, e.g. user_opted_out). A customer who never wrote is a normal answer (window_open false, time_remaining_secs 0, \
timestamps null). Reads the cache and falls back to the database. Errors: INVALID_ARGUMENT (bad phone or channel), \
UNAVAILABLE (retry shortly).",
        input_schema = schema::input::<CustomerIn>(),
        output_schema = schema::output::<ConversationOut>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn check_conversation(&self, args: JsonObject) -> CallToolResult {
        finish(
            "check_conversation",
            self.check_conversation_impl(Args::new(args)).await,
        )
    }

    #[tool(
        name = "check_frequency_cap",
        description = "Tell whether the customer has reached the marketing frequency cap (messages per rolling window set by \
policy). Returns is_capped; when capped also reason, suggested_action and reset_hint (when the next marketing message can \
go); reason and suggested_action are empty when not capped. Use it before send_template with a marketing template or after \
FREQUENCY_CAP_EXCEEDED. Errors: INVALID_ARGUMENT (bad phone or channel), UNAVAILABLE (retry shortly).",
        input_schema = schema::input::<CustomerIn>(),
        output_schema = schema::output::<FrequencyOut>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn check_frequency_cap(&self, args: JsonObject) -> CallToolResult {
        finish(
            "check_frequency_cap",
            self.check_frequency_cap_impl(Args::new(args)).await,
        )
    }

    #[tool(
        name = "get_customer_context",
        description = "Everything needed to decide how to contact a customer, in one read: consent (opt_in marketing/utility), \
tags, engagement_score, last_interaction, the conversation window, and eligibility for marketing, utility and service \
(free-form) messages, each {eligible, reason_code when not}. A dry run: nothing is written, not even an audit row. Unknown \
customers get the defaults (opted in, no tags). Errors: INVALID_ARGUMENT (bad phone or channel), UNAVAILABLE (retry).",
        input_schema = schema::input::<CustomerIn>(),
        output_schema = schema::output::<CustomerContextOut>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn get_customer_context(&self, args: JsonObject) -> CallToolResult {
        finish(
            "get_customer_context",
            self.get_customer_context_impl(Args::new(args)).await,
        )
    }

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
            self.get_delivery_status_impl(Args::new(args)).await,
        )
    }

    #[tool(
        name = "get_rate_limit",
        description = "Read the channel's shared send rate limiter (a token bucket in messages per second): capacity_mps, \
tokens_remaining, tokens_used and when it last changed. Useful before a burst of sends; sends are never refused by it, \
only paced. Errors: INVALID_ARGUMENT (bad channel), UNAVAILABLE (the cache is down; sending still works).",
        input_schema = schema::input::<ChannelIn>(),
        output_schema = schema::output::<RateLimitOut>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn get_rate_limit(&self, args: JsonObject) -> CallToolResult {
        finish(
            "get_rate_limit",
            self.get_rate_limit_impl(Args::new(args)).await,
        )
    }

    #[tool(
        name = "list_conversations",
        description = "List conversations page by page (archived ones are left out). status_filter: open (care window open), \
closed, expiring_soon (open and closing within 2 hours: reply before it closes), or empty for all. Returns conversations \
(id, customer_id, window state, timestamps), total (all matches), limit and offset; page with offset += limit while \
offset < total. Errors: INVALID_ARGUMENT (unknown status_filter, limit outside 1..500, negative offset), UNAVAILABLE.",
        input_schema = schema::input::<ListConversationsIn>(),
        output_schema = schema::output::<ConversationsPage>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn list_conversations(&self, args: JsonObject) -> CallToolResult {
        finish(
            "list_conversations",
            self.list_conversations_impl(Args::new(args)).await,
        )
    }

    #[tool(
        name = "list_templates",
        description = "List the locally stored message templates page by page, optionally filtered by status (APPROVED, \
PENDING, REJECTED), category (marketing, utility, authentication) and locale; filters are case-insensitive. Use it to find \
an APPROVED template for send_template or schedule_campaign. Returns templates (name, locale, category, status, body_text \
with {{n}} placeholders), total, limit, offset. Errors: INVALID_ARGUMENT (limit outside 1..500, negative offset), \
UNAVAILABLE.",
        input_schema = schema::input::<ListTemplatesIn>(),
        output_schema = schema::output::<TemplatesPage>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn list_templates(&self, args: JsonObject) -> CallToolResult {
        finish(
            "list_templates",
            self.list_templates_impl(Args::new(args)).await,
        )
    }
}

/// "eligible", or the refusal's reason code in lower case.
fn eligibility_word(d: &Decision) -> String {
    if d.allowed {
        "eligible".into()
    } else {
        d.reason_code.as_str().to_ascii_lowercase()
    }
}

fn eligible(d: Decision) -> Eligible {
    Eligible {
        eligible: d.allowed,
        reason_code: (!d.allowed).then(|| d.reason_code.as_str().to_string()),
        human_explanation: d.human_explanation,
    }
}

/// limit (1..500, default 50) and offset (>= 0, default 0).
pub(crate) fn page(a: &Args) -> ToolResult<(i64, i64)> {
    let limit = match a.opt_int("limit")? {
        Some(l) => bounded("limit", l, 1, 500, "between 1 and 500 (default 50)")?,
        None => 50,
    };
    let offset = match a.opt_int("offset")? {
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

#[derive(Clone, Copy, PartialEq, Eq)]
enum WindowFilter {
    All,
    Open,
    Closed,
    ExpiringSoon,
}

impl Gateway {
    async fn check_conversation_impl(&self, a: Args) -> ToolResult<ConversationOut> {
        let phone = self.customer(&a, "customer_id").await?;
        let channel = a.channel()?;
        let view = self.core().conversation(&phone, channel).await?;
        let now = Utc::now();
        let marketing = self
            .core()
            .check(&phone, MessageType::Marketing.described_content(), now)
            .await?;
        let utility = self
            .core()
            .check(&phone, MessageType::Utility.described_content(), now)
            .await?;
        let ids = self.core().customer_identifiers(&phone).await?.into();
        Ok(ConversationOut {
            customer_id: phone.digits().to_string(),
            ids,
            channel: channel.to_string(),
            conversation_id: view.id.map(|id| id.to_string()),
            window_open: view.window_open,
            time_remaining_secs: view.time_remaining_secs,
            conversation_type: view.conversation_type,
            last_inbound_at: opt_ts(view.last_inbound_at),
            last_outbound_at: opt_ts(view.last_outbound_at),
            window_expires_at: opt_ts(view.window_expires_at),
            marketing_eligibility: eligibility_word(&marketing),
            utility_eligibility: eligibility_word(&utility),
            archived: view.archived,
        })
    }

    async fn check_frequency_cap_impl(&self, a: Args) -> ToolResult<FrequencyOut> {
        let phone = self.customer(&a, "customer_id").await?;
        let channel = a.channel()?;
        let st = self.core().frequency(&phone, Utc::now()).await?;
        Ok(FrequencyOut {
            customer_id: phone.digits().to_string(),
            channel: channel.to_string(),
            is_capped: st.is_capped,
            reason: st.reason,
            suggested_action: st.suggested_action,
            reset_hint: st.reset_hint,
            remaining: st.remaining,
            next_slot_at: opt_ts(st.next_slot_at),
        })
    }

    async fn get_customer_context_impl(&self, a: Args) -> ToolResult<CustomerContextOut> {
        let phone = self.customer(&a, "customer_id").await?;
        let channel = a.channel()?;
        let (customer, last_refusal) = {
            let mut conn = self.conn().await?;
            let customer = warden_core::customers::find(&mut conn, &phone).await?;
            let refusal = warden_core::send::refusals::last_refusal(&mut conn, phone.digits())
                .await
                .map_err(warden_core::CoreError::from)?;
            (customer, refusal)
        };
        let view = self.core().conversation(&phone, channel).await?;
        let now = Utc::now();
        let core = self.core();
        let marketing = core
            .check(&phone, MessageType::Marketing.described_content(), now)
            .await?;
        let utility = core
            .check(&phone, MessageType::Utility.described_content(), now)
            .await?;
        let service = core
            .check(&phone, MessageType::Service.described_content(), now)
            .await?;
        let ids = core.customer_identifiers(&phone).await?.into();
        Ok(CustomerContextOut {
            customer_id: phone.digits().to_string(),
            ids,
            channel: channel.to_string(),
            known_customer: customer.is_some(),
            opt_in: OptIn {
                marketing: customer.as_ref().is_none_or(|c| c.opt_in_marketing),
                utility: customer.as_ref().is_none_or(|c| c.opt_in_utility),
            },
            tags: customer
                .as_ref()
                .map(|c| c.tags.clone())
                .unwrap_or_default(),
            engagement_score: customer.as_ref().map_or(0.0, |c| c.engagement_score),
            last_interaction: opt_ts(customer.as_ref().and_then(|c| c.last_interaction_at)),
            conversation: ContextConversation {
                window_open: view.window_open,
                time_remaining_secs: view.time_remaining_secs,
                conversation_type: view.conversation_type,
                last_inbound: opt_ts(view.last_inbound_at),
                last_outbound: opt_ts(view.last_outbound_at),
                window_expires: opt_ts(view.window_expires_at),
            },
            eligibility: Eligibility {
                marketing: eligible(marketing),
                utility: eligible(utility),
                service: eligible(service),
            },
            last_refusal: last_refusal.map(|r| LastRefusalOut {
                at: ts(r.at),
                reason_code: r.reason_code,
                policy_id: r.policy_id,
                human_explanation: r.explanation,
            }),
        })
    }

    async fn get_delivery_status_impl(&self, a: Args) -> ToolResult<DeliveryOut> {
        let id = a.uuid("message_id", "message_id a send returned")?;
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

    async fn get_rate_limit_impl(&self, a: Args) -> ToolResult<RateLimitOut> {
        let channel = a.channel()?;
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

    async fn list_conversations_impl(&self, a: Args) -> ToolResult<ConversationsPage> {
        let channel = a.channel()?;
        let filter = match a.opt_string("status_filter")?.map(|s| lower(&s)).as_deref() {
            None | Some("all") => WindowFilter::All,
            Some("open") => WindowFilter::Open,
            Some("closed") => WindowFilter::Closed,
            Some("expiring_soon") | Some("expiring-soon") => WindowFilter::ExpiringSoon,
            Some(other) => {
                return Err(ToolError::invalid(
                    format!(
                        "status_filter {} is not one of open, closed, expiring_soon.",
                        echo(other)
                    ),
                    "Pass status_filter as open, closed or expiring_soon, or leave it out for all conversations.",
                ));
            }
        };
        let (limit, offset) = page(&a)?;
        let now = Utc::now();
        let soon = now + EXPIRING_SOON;
        let query = || {
            let q = conversations::table
                .filter(conversations::channel.eq(channel))
                .filter(conversations::archived_at.is_null())
                .into_boxed();
            match filter {
                WindowFilter::All => q,
                WindowFilter::Open => q.filter(conversations::window_expires_at.gt(now)),
                WindowFilter::Closed => q.filter(
                    conversations::window_expires_at
                        .is_null()
                        .or(conversations::window_expires_at.le(now)),
                ),
                WindowFilter::ExpiringSoon => q
                    .filter(conversations::window_expires_at.gt(now))
                    .filter(conversations::window_expires_at.le(soon)),
            }
        };
        let mut conn = self.conn().await?;
        let total: i64 = query().count().get_result(&mut conn).await?;
        let rows: Vec<Conversation> = query()
            .order((conversations::created_at.asc(), conversations::id.asc()))
            .limit(limit)
            .offset(offset)
            .select(Conversation::as_select())
            .load(&mut conn)
            .await?;
        let conversations = rows
            .into_iter()
            .map(|c| {
                let state = WindowState::at(c.last_inbound_at, now);
                ConversationItem {
                    id: c.id.to_string(),
                    customer_id: c.customer_phone,
                    channel: c.channel,
                    window_open: state.open,
                    time_remaining_secs: state.time_remaining_secs,
                    conversation_type: c.conversation_type,
                    last_inbound_at: opt_ts(c.last_inbound_at),
                    last_outbound_at: opt_ts(c.last_outbound_at),
                    window_expires_at: opt_ts(state.expires_at.or(c.window_expires_at)),
                }
            })
            .collect();
        Ok(ConversationsPage {
            conversations,
            total,
            limit,
            offset,
        })
    }

    async fn list_templates_impl(&self, a: Args) -> ToolResult<TemplatesPage> {
        let status = a
            .opt_string("status_filter")?
            .map(|s| s.to_ascii_uppercase());
        let category = a.opt_string("category_filter")?.map(|s| lower(&s));
        let locale = a.opt_string("locale_filter")?.map(|s| lower(&s));
        // Filters reach the database: bounded (no stored value is longer).
        for (key, value, max, action) in [
            (
                "status_filter",
                &status,
                MAX_FILTER_CHARS,
                "Pass status_filter as APPROVED, PENDING or REJECTED, or leave it out.",
            ),
            (
                "category_filter",
                &category,
                MAX_FILTER_CHARS,
                "Pass category_filter as marketing, utility or authentication, or leave it out.",
            ),
            (
                "locale_filter",
                &locale,
                MAX_LANGUAGE_CHARS,
                "Pass locale_filter as a language code such as en or id, or leave it out.",
            ),
        ] {
            if let Some(v) = value {
                check_len(key, v, max, action)?;
            }
        }
        let (limit, offset) = page(&a)?;
        let query = || {
            let mut q = templates::table.into_boxed();
            if let Some(s) = &status {
                q = q.filter(sql_upper(templates::status).eq(s.clone()));
            }
            if let Some(c) = &category {
                q = q.filter(sql_lower(templates::category).eq(c.clone()));
            }
            if let Some(l) = &locale {
                q = q.filter(sql_lower(templates::locale).eq(l.clone()));
            }
            q
        };
        let mut conn = self.conn().await?;
        let total: i64 = query().count().get_result(&mut conn).await?;
        type Row = (
            Template,
            Option<String>,
            Option<chrono::DateTime<Utc>>,
            Option<String>,
        );
        let rows: Vec<Row> = query()
            .order((templates::name.asc(), templates::locale.asc()))
            .limit(limit)
            .offset(offset)
            .select((
                Template::as_select(),
                templates::pending_category,
                templates::pending_category_at,
                templates::quality_score,
            ))
            .load(&mut conn)
            .await?;
        let now = Utc::now();
        Ok(TemplatesPage {
            templates: rows
                .into_iter()
                .map(|(t, pending, pending_at, quality)| TemplateItem {
                    // The category sends obey now (a re-categorisation counts from its time).
                    category: lower(warden_core::templates::effective(
                        &t.category,
                        pending.as_deref(),
                        pending_at,
                        now,
                    )),
                    category_change: pending
                        .filter(|_| pending_at.is_some_and(|at| at > now))
                        .map(|to| CategoryChangeItem {
                            to: lower(&to),
                            at: pending_at.map(|at| at.to_rfc3339()).unwrap_or_default(),
                        }),
                    reason: t.rejection_reason.clone().filter(|r| !r.is_empty()),
                    quality_score: quality,
                    parameter_format: t
                        .parameter_format
                        .clone()
                        .unwrap_or_else(|| "positional".into()),
                    components: match &t.components {
                        Some(serde_json::Value::Array(c)) => c.clone(),
                        _ => vec![serde_json::json!({"type": "BODY", "text": t.body_text})],
                    },
                    name: t.name,
                    locale: t.locale,
                    status: t.status.to_ascii_uppercase(),
                    body_text: t.body_text,
                })
                .collect(),
            total,
            limit,
            offset,
        })
    }
}

/// Statuses agents see: the dispatcher's internal `sending` claim is still `queued` to them.
pub(crate) fn public_status(status: &str) -> &str {
    match status {
        "sending" => "queued",
        other => other,
    }
}
