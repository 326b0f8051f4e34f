//! preview_campaign (scope campaigns, read-only): what schedule_campaign's campaign would
//! do if it ran now — the same checks of its arguments (`Gateway::checked_campaign`) and
//! the same decisions (`warden_core::campaigns::preview`, the batched send path with
//! nothing written). schedule_campaign answers the same numbers as `preview`.

use chrono::{TimeDelta, Utc};
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use uuid::Uuid;
use warden_core::campaigns::fanout::RecipientPlan;
use warden_rules::audience::AudienceFilter;

use crate::error::{ToolError, ToolResult};
use crate::gateway::Gateway;
use crate::input::fields::{Json, Text};
use crate::input::shared::SenderName;
use crate::input::{Input, parse};
use crate::schema::{self, CampaignPreviewOut};
use crate::tools::campaigns::{CheckedCampaign, ScheduleCampaignIn};
use crate::util::finish;

/// The arguments of schedule_campaign except deliver_at (the preview is of now). The
/// published schema; the handler reads them as [`ScheduleCampaignIn`], checked the same way.
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)] // read through ScheduleCampaignIn
pub struct PreviewCampaignIn {
    /// A name for the campaign.
    pub name: Text,
    /// "broadcast", "marketing" or "utility".
    #[serde(rename = "type")]
    pub campaign_type: Text,
    /// Name of an APPROVED template (see list_templates); at most 512 characters.
    #[schemars(length(max = 512))]
    pub template_name: Text,
    /// The template's language code such as "en", "id" or "pt_BR"; default "en".
    #[schemars(extend("default" = "en"))]
    pub locale: Option<Text>,
    /// JSON object (as a string) keyed by placeholder number, e.g. "{\"1\": \"friend\"}", or by parameter name for a named template.
    pub variables: Option<Json>,
    /// JSON array (as a string) of template components in the platform's shape (media header, buttons), as schedule_campaign takes them.
    pub components: Option<Json>,
    /// JSON object (as a string) choosing recipients: include_tags, exclude_tags, customer_ids, opt_in, active_within_days; "{}" or omitted means every known customer.
    pub audience_filter: Option<Json>,
    /// The business number it would go out from (a sender id or phone_number_id). Give `from` or `senders`, not both.
    pub from: Option<SenderName>,
    /// JSON array (as a string) of sender ids of ONE business to spread it over.
    pub senders: Option<Json>,
}

#[tool_router(router = preview_tools, vis = "pub(crate)")]
impl Gateway {
    #[tool(
        name = "preview_campaign",
        description = "Pro tier. What a campaign would do if it ran now, with nothing written: the arguments of \
schedule_campaign except deliver_at, judged by the same rules the real run applies to each recipient (opt-outs, the \
care window, frequency caps, quiet hours, tags, countries, who holds the conversation, the portfolio messaging limit). \
Returns audience (customers the filter selects), would_send, refused_by {CODE: n}, refused_by_policy {policy_id: n}, \
by_country {CC: {recipients, estimated_cost}} (the recipients that would be sent), estimated_cost and currency (the \
installed rate card; null currency when none), estimated_duration_secs (would_send at the senders' throughput). \
Errors: INVALID_ARGUMENT (as schedule_campaign; deliver_at is not taken), TEMPLATE_NOT_APPROVED, NOT_FOUND (no such \
template), FEATURE_NOT_AVAILABLE (tier oss), FORBIDDEN, UNAVAILABLE.",
        input_schema = schema::input::<PreviewCampaignIn>(),
        output_schema = schema::output::<CampaignPreviewOut>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn preview_campaign(&self, args: JsonObject) -> CallToolResult {
        finish("preview_campaign", self.preview_campaign_impl(args).await)
    }
}

impl Gateway {
    async fn preview_campaign_impl(&self, mut args: JsonObject) -> ToolResult<CampaignPreviewOut> {
        self.require_pro("preview_campaign")?;
        for key in ["deliver_at", "idempotency_key"] {
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
