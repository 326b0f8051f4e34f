//! What is known of a customer before writing to them: get_customer_context (consent, tags,
//! window, eligibility) and check_frequency_cap.

use rmcp::handler::server::tool::ToolName;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::answer::finish;
use crate::error::ToolResult;
use crate::gateway::Gateway;
use crate::input::{Input, parse};
use crate::schema::{self, *};
use chrono::Utc;
use warden_rules::compliance::Decision;
use warden_rules::kinds::MessageType;

use crate::answer::{opt_ts, ts};
use crate::input::fields::Customer;
use crate::input::shared::OnChannel;

#[derive(Deserialize, JsonSchema)]
pub struct CustomerIn {
    /// The customer: phone number with country code (e.g. "+6281234567890") or BSUID (e.g. "US.13491208655302741918").
    pub customer_id: Customer,
    #[serde(flatten)]
    pub on: OnChannel,
}

#[tool_router(router = customer_tools, vis = "pub(crate)")]
impl Gateway {
    #[tool(
        description = "Everything needed to decide how to contact a customer, in one read: consent (opt_in marketing/utility), \
tags, engagement_score, last_interaction, the conversation window, and eligibility for marketing, utility and service \
(free-form) messages, each {eligible, reason_code when not}. A dry run: nothing is written, not even an audit row. Unknown \
customers get the defaults (opted in, no tags). All of it is about the number `from` (default: the default sender), which \
the answer names: its conversation, its business's consent. Errors: INVALID_ARGUMENT (bad phone or channel, unknown from), UNAVAILABLE (retry).",
        input_schema = schema::input::<CustomerIn>(),
        output_schema = schema::output::<CustomerContextOut>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn get_customer_context(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.get_customer_context_impl(args).await)
    }

    #[tool(
        description = "Tell whether the customer has reached the marketing frequency cap (messages per rolling window set by \
policy). Returns is_capped; when capped also reason, suggested_action and reset_hint (when the next marketing message can \
go); reason and suggested_action are empty when not capped. Use it before send_template with a marketing template or after \
FREQUENCY_CAP_EXCEEDED. Errors: INVALID_ARGUMENT (bad phone or channel), UNAVAILABLE (retry shortly).",
        input_schema = schema::input::<CustomerIn>(),
        output_schema = schema::output::<FrequencyOut>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn check_frequency_cap(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.check_frequency_cap_impl(args).await)
    }
}

impl Gateway {
    async fn get_customer_context_impl(&self, args: JsonObject) -> ToolResult<CustomerContextOut> {
        let a: Input<CustomerIn> = parse(args)?;
        let phone = self.resolve(&a.customer_id).await?;
        let channel = a.on.channel();
        let from = a.on.from();
        let core = self.core();
        let sender = core.sender(from)?;
        let (from_id, keys) = (sender.id.clone(), core.senders().key_of(sender));
        let (customer, consent, last_refusal, known) = {
            let mut conn = self.conn().await?;
            let customer = warden_core::customers::find(&mut conn, &phone).await?;
            let known = core.customer_in_reach(&mut conn, phone.digits()).await?;
            // Consent belongs to the business of the number asked about.
            let consent = match &customer {
                Some(c) => Some(
                    warden_core::customers::consent::of(&conn, &keys.business, c)
                        .await
                        .map_err(warden_core::CoreError::from)?,
                ),
                None => None,
            };
            let refusal = warden_core::send::refusals::last_refusal(
                &mut conn,
                phone.digits(),
                &keys.business,
            )
            .await
            .map_err(warden_core::CoreError::from)?;
            (customer, consent, refusal, known)
        };
        // What the customer row holds of other businesses stays theirs.
        let shown = customer.as_ref().filter(|_| known);
        let view = self
            .core()
            .conversation(&phone, channel, &keys.sender)
            .await?;
        let now = Utc::now();
        let marketing = core
            .check(
                &phone,
                from,
                MessageType::Marketing.described_content(),
                now,
            )
            .await?;
        let utility = core
            .check(&phone, from, MessageType::Utility.described_content(), now)
            .await?;
        let service = core
            .check(&phone, from, MessageType::Service.described_content(), now)
            .await?;
        let ids = core.customer_identifiers(&phone).await?.into();
        let holder = core.holder(&phone, from).await?;
        let call_permission = core.call_permission(&phone, from).await?;
        Ok(CustomerContextOut {
            customer_id: phone.digits().to_string(),
            ids,
            channel: channel.to_string(),
            known_customer: shown.is_some(),
            from: from_id,
            opt_in: OptIn {
                marketing: consent.as_ref().is_none_or(|c| c.marketing),
                utility: consent.as_ref().is_none_or(|c| c.utility),
            },
            tags: shown.map(|c| c.tags.clone()).unwrap_or_default(),
            engagement_score: shown.map_or(0.0, |c| c.engagement_score),
            last_interaction: opt_ts(shown.and_then(|c| c.last_interaction_at)),
            conversation: ContextConversation {
                window_open: view.window_open,
                time_remaining_secs: view.time_remaining_secs,
                conversation_type: view.conversation_type,
                last_inbound: opt_ts(view.last_inbound_at),
                last_outbound: opt_ts(view.last_outbound_at),
                window_expires: opt_ts(view.window_expires_at),
            },
            holder,
            call_permission,
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

    async fn check_frequency_cap_impl(&self, args: JsonObject) -> ToolResult<FrequencyOut> {
        let a: Input<CustomerIn> = parse(args)?;
        let phone = self.resolve(&a.customer_id).await?;
        let channel = a.on.channel();
        let st = self
            .core()
            .frequency(&phone, a.on.from(), Utc::now())
            .await?;
        Ok(FrequencyOut {
            customer_id: phone.digits().to_string(),
            from: self.core().sender(a.on.from())?.id.clone(),
            channel: channel.to_string(),
            is_capped: st.is_capped,
            reason: st.reason,
            suggested_action: st.suggested_action,
            reset_hint: st.reset_hint,
            remaining: st.remaining,
            next_slot_at: opt_ts(st.next_slot_at),
        })
    }
}

fn eligible(d: Decision) -> Eligible {
    Eligible {
        eligible: d.allowed,
        reason_code: (!d.allowed).then(|| d.reason_code.as_str().to_string()),
        human_explanation: d.human_explanation,
    }
}
