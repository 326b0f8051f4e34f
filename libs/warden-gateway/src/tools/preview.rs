//! preview_campaign (scope campaigns, read-only): what schedule_campaign's campaign would
//! do if it ran now — the same checks of its arguments (`Gateway::checked_campaign`) and
//! the same decisions (`warden_core::campaigns::preview`, the batched send path with
//! nothing written). schedule_campaign answers the same numbers as `preview`.

use std::sync::Arc;

use chrono::{TimeDelta, Utc};
use rmcp::handler::server::tool::ToolName;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::{tool, tool_router};
use serde_json::Value;
use uuid::Uuid;
use warden_core::campaigns::fanout::RecipientPlan;
use warden_rules::audience::AudienceFilter;

use crate::answer::finish;
use crate::error::{ToolError, ToolResult};
use crate::gateway::Gateway;
use crate::input::{Input, parse};
use crate::schema::{self, CampaignPreviewOut};
use crate::tools::campaigns::{CheckedCampaign, ScheduleCampaignIn};

/// preview_campaign's inputSchema, made from schedule_campaign's (whose struct,
/// [`ScheduleCampaignIn`], the handler reads): the same parameters but `deliver_at` (a
/// preview is of now) and `idempotency_key` (it writes nothing), with [`PREVIEW_WORDING`].
fn preview_input() -> Arc<JsonObject> {
    let mut input = Arc::unwrap_or_clone(schema::input::<ScheduleCampaignIn>());
    for key in NOT_TAKEN {
        if let Some(Value::Object(properties)) = input.get_mut("properties") {
            properties.remove(key);
        }
        if let Some(Value::Array(required)) = input.get_mut("required") {
            required.retain(|r| r != key);
        }
    }
    for (key, description) in PREVIEW_WORDING {
        let property = input
            .get_mut("properties")
            .and_then(|p| p.get_mut(*key))
            .and_then(Value::as_object_mut)
            .unwrap_or_else(|| panic!("schedule_campaign has no parameter `{key}`"));
        property.insert("description".into(), Value::from(*description));
    }
    Arc::new(input)
}

/// schedule_campaign's parameters a preview refuses.
const NOT_TAKEN: [&str; 2] = ["deliver_at", "idempotency_key"];

/// The parameters preview_campaign describes in its own words (what the campaign *would*
/// do, without schedule_campaign's details); the others read as schedule_campaign's.
const PREVIEW_WORDING: &[(&str, &str)] = &[
    ("name", "A name for the campaign."),
    (
        "variables",
        "JSON object (as a string) keyed by placeholder number, e.g. \"{\\\"1\\\": \\\"friend\\\"}\", or by parameter name for a named template.",
    ),
    (
        "components",
        "JSON array (as a string) of template components in the platform's shape (media header, buttons), as schedule_campaign takes them.",
    ),
    (
        "audience_filter",
        "JSON object (as a string) choosing recipients: include_tags, exclude_tags, customer_ids, opt_in, active_within_days; \"{}\" or omitted means every known customer.",
    ),
    (
        "from",
        "The business number it would go out from (a sender id or phone_number_id). Give `from` or `senders`, not both.",
    ),
    (
        "senders",
        "JSON array (as a string) of sender ids of ONE business to spread it over.",
    ),
];

#[tool_router(router = preview_tools, vis = "pub(crate)")]
impl Gateway {
    #[tool(
        description = "Pro tier. What a campaign would do if it ran now, with nothing written: the arguments of \
schedule_campaign except deliver_at, judged by the same rules the real run applies to each recipient (opt-outs, the \
care window, frequency caps, quiet hours, tags, countries, who holds the conversation, the portfolio messaging limit). \
Returns audience (customers the filter selects), would_send, refused_by {CODE: n}, refused_by_policy {policy_id: n}, \
by_country {CC: {recipients, estimated_cost}} (the recipients that would be sent), estimated_cost and currency (the \
installed rate card; null currency when none), estimated_duration_secs (would_send at the senders' throughput). \
Errors: INVALID_ARGUMENT (as schedule_campaign; deliver_at is not taken), TEMPLATE_NOT_APPROVED, NOT_FOUND (no such \
template), FEATURE_NOT_AVAILABLE (tier oss), FORBIDDEN, UNAVAILABLE.",
        input_schema = preview_input(),
        output_schema = schema::output::<CampaignPreviewOut>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn preview_campaign(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.preview_campaign_impl(&tool.0, args).await)
    }
}

impl Gateway {
    async fn preview_campaign_impl(
        &self,
        tool: &str,
        mut args: JsonObject,
    ) -> ToolResult<CampaignPreviewOut> {
        self.require_pro(tool)?;
        for key in NOT_TAKEN {
            if args.contains_key(key) {
                return Err(ToolError::invalid(
                    format!("preview_campaign takes no `{key}`: it judges the campaign as of now."),
                    format!("Leave `{key}` out; pass it to schedule_campaign."),
                ));
            }
        }
        // Checked as schedule_campaign checks its arguments; the time is not one of them.
        let now = Utc::now();
        args.insert(
            "deliver_at".into(),
            Value::String((now + TimeDelta::hours(1)).to_rfc3339()),
        );
        let a: Input<ScheduleCampaignIn> = parse(args)?;
        let checked = self.checked_campaign(&a, now + TimeDelta::hours(1))?;
        self.preview_of(&checked, Uuid::now_v7()).await
    }

    /// The preview of a checked campaign (`campaign_id`: a stored campaign's, whose
    /// recipients already given a message are left out, or a new id).
    pub(crate) async fn preview_of(
        &self,
        c: &CheckedCampaign,
        campaign_id: Uuid,
    ) -> ToolResult<CampaignPreviewOut> {
        let filter = AudienceFilter::from_value(&c.new.audience_filter)
            .map_err(|e| ToolError::invalid(e.to_string(), "Fix audience_filter."))?;
        let mut components = c.new.components.clone();
        let variables = if c.new.named_variables.is_empty() {
            c.new.variables.clone()
        } else {
            components.push(warden_rules::template_params::named_body_component(
                &c.new.named_variables,
            ));
            Vec::new()
        };
        let plan = RecipientPlan {
            campaign_id,
            template_name: c.new.template_name.clone(),
            locale: c.new.locale.clone(),
            variables,
            components,
            senders: c
                .stored
                .several
                .clone()
                .unwrap_or_else(|| vec![c.stored.sender.clone()]),
        };
        let p = warden_core::campaigns::preview::preview(&self.core(), &plan, &filter).await?;
        Ok(CampaignPreviewOut::of(p, c.from.clone(), c.senders.clone()))
    }
}
