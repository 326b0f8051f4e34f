//! Scheduling and campaigns: schedule_message, schedule_campaign, cancel_campaign,
//! pause_campaign, resume_campaign (Pro+), get_campaign. The tools and their parameters are
//! here; what they do in [`scheduling`] (the two schedule tools), [`checks`] (a campaign's
//! arguments, shared with preview_campaign), [`control`] (a stored campaign), [`errors`] and
//! [`cost`].

mod checks;
mod control;
mod cost;
mod errors;
mod scheduling;

pub(crate) use checks::CheckedCampaign;

use chrono::TimeDelta;
use rmcp::handler::server::tool::ToolName;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::{tool, tool_router};

use schemars::JsonSchema;
use serde::Deserialize;

use crate::answer::finish;
use crate::gateway::Gateway;
use crate::input::fields::{Customer, Id, Json, Text, Timestamp};
use crate::input::shared::{Keyed, OnChannel, SenderName};
use crate::input::template_values::FormatValuesIn;
use crate::schema::{self, *};
use crate::tools::{check_text, check_variables, components_of, parse_message_type};

#[derive(Deserialize, JsonSchema)]
pub struct ScheduleMessageIn {
    /// The customer: phone number with country code (e.g. "+6281234567890") or BSUID (e.g. "US.13491208655302741918").
    pub customer_id: Customer,
    /// "marketing", "utility", "service" (free-form text) or "template" (judged by the template's category). Case-insensitive.
    pub message_type: Text,
    /// JSON (as a string) with a `type` and a typed body: {"type":"text","text":{"body":"Hello"}} or {"type":"template","template":{"name":"order_update","language":"en","variables":["#1234"]}}.
    pub content: Json,
    /// When to send, RFC 3339 in the future, e.g. "2030-01-31T09:00:00Z".
    pub deliver_at: Timestamp,
    #[serde(flatten)]
    pub on: OnChannel,
    #[serde(flatten)]
    pub keyed: Keyed,
}

#[derive(Deserialize, JsonSchema)]
pub struct ScheduleCampaignIn {
    /// A name for the campaign (shown back in get_campaign).
    pub name: Text,
    /// "broadcast", "marketing" or "utility".
    #[serde(rename = "type")]
    pub campaign_type: Text,
    /// Name of an APPROVED template (see list_templates); at most 512 characters.
    #[schemars(length(max = 512))]
    pub template_name: Text,
    /// When to start, RFC 3339 in the future, e.g. "2030-01-31T09:00:00Z".
    pub deliver_at: Timestamp,
    /// The template's language code such as "en", "id" or "pt_BR"; default "en".
    #[schemars(extend("default" = "en"))]
    pub locale: Option<Text>,
    /// Accepted for `locale`, as the platform calls it.
    #[schemars(skip)]
    pub language: Option<Text>,
    /// JSON object (as a string) keyed by placeholder number, e.g. "{\"1\": \"friend\"}", filling the template's {{1}}, {{2}}, ... for every recipient; for a named template keyed by parameter name, e.g. "{\"first_name\": \"friend\"}".
    pub variables: Option<Json>,
    /// JSON array (as a string) of template components in the platform's shape, for a template with a media or variable header or with URL/copy-code/OTP buttons, e.g. "[{\"type\": \"header\", \"parameters\": [{\"type\": \"image\", \"image\": {\"link\": \"https://...\"}}]}, {\"type\": \"button\", \"sub_type\": \"url\", \"index\": \"0\", \"parameters\": [{\"type\": \"text\", \"text\": \"A1\"}]}]". Body values may be given here instead of in variables. Checked against the template's components (list_templates shows them).
    pub components: Option<Json>,
    #[serde(flatten)]
    pub formats: FormatValuesIn,
    /// JSON object (as a string) choosing recipients; every key optional: include_tags (any of), exclude_tags, customer_ids, opt_in ("marketing" or "utility"), active_within_days. "{}" or omitted means every known customer.
    pub audience_filter: Option<Json>,
    /// The business number the campaign goes out from: a sender id or its phone_number_id (list_senders lists them). Default: the default sender. Give `from` or `senders`, not both.
    pub from: Option<SenderName>,
    /// JSON array (as a string) of sender ids (or phone_number_ids) of ONE business to spread the campaign over, e.g. "[\"a1\", \"a2\"]": each recipient always gets the same one of them. Numbers of different businesses are refused.
    pub senders: Option<Json>,
    #[serde(flatten)]
    pub keyed: Keyed,
}

#[derive(Deserialize, JsonSchema)]
pub struct CampaignIdIn {
    /// The campaign_id schedule_campaign returned (a UUID).
    pub campaign_id: Id,
}

#[derive(Deserialize, JsonSchema)]
pub struct CancelCampaignIn {
    /// The campaign_id schedule_campaign returned (a UUID).
    pub campaign_id: Id,
    /// Why it is cancelled (at most 1024 characters); kept in the audit trail.
    #[schemars(length(max = 1024))]
    pub reason: Option<Text>,
}

/// Longest `content.template.components` schedule_message stores (JSON characters).
const MAX_COMPONENTS_CHARS: usize = 16 * 1024;

/// How far ahead a message or campaign may be scheduled.
const MAX_AHEAD: TimeDelta = TimeDelta::days(366);
const MAX_CAMPAIGN_NAME: usize = 200;
/// The longest cancel reason kept for the audit trail.
const MAX_REASON_CHARS: usize = 1024;
/// The longest audience_filter taken, as compact JSON (it is stored with the campaign).
const MAX_AUDIENCE_CHARS: usize = 65_536;

#[tool_router(router = campaign_tools, vis = "pub(crate)")]
impl Gateway {
    #[tool(
        description = "Schedule one message for later. content is JSON with a type and a typed body: \
{\"type\":\"text\",\"text\":{\"body\":\"...\"}} (free-form; message_type service) or \
{\"type\":\"template\",\"template\":{\"name\":\"...\",\"language\":\"en\",\"variables\":[\"...\"]}} (message_type template, \
marketing or utility), or the platform's own template body {\"type\":\"template\",\"template\":{\"name\":\"...\",\"language\":{\"code\":\"en\"},\"components\":[...]}} \
(header, body and button parameters, checked against the template's components). The rules follow the content, not message_type: text always needs the care window, a template \
counts as its stored category. Only opt-out is checked now; the full compliance check (care window, cap, policies) runs again at \
delivery, and a message refused then ends failed with the reason. Returns message_id (track it with get_delivery_status), \
status \"scheduled\", deliver_at, customer_id and from (the number it goes out from: `from`, else the default sender). Errors: USER_OPTED_OUT (do not message them), INVALID_ARGUMENT (bad or \
past deliver_at, malformed content, variables not matching the template), NOT_FOUND (no such template), UNAVAILABLE.",
        input_schema = schema::input::<ScheduleMessageIn>(),
        output_schema = schema::output::<ScheduleMessageOut>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false)
    )]
    async fn schedule_message(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.schedule_message_impl(args).await)
    }

    #[tool(
        description = "Pro tier. Schedule a template campaign to an audience at a future time. The template must exist and be \
APPROVED; variables is a JSON object keyed by placeholder number ({\"1\": \"friend\"}) used for every recipient (a named template: keyed by name); components (the platform's header/body/button \
parameters) for a template with a media or variable header or with URL/copy-code buttons; \
audience_filter is a JSON object (include_tags, exclude_tags, customer_ids, opt_in, active_within_days; {} or no filter = \
every known customer; an empty list or null selects nobody and is refused: leave the key out). from names the number it goes out \
from (default: the default sender); senders instead spreads it over several numbers of ONE business, each recipient always \
getting the same one. At deliver_at each recipient goes through the same compliance checks as send_template; refused recipients count \
as failed. Returns campaign_id (follow it with get_campaign), status \"scheduled\", name, type, deliver_at, from (and senders). Errors: \
FEATURE_NOT_AVAILABLE (tier oss: upgrade to pro), TEMPLATE_NOT_APPROVED (wait for approval or pick an APPROVED template), \
NOT_FOUND (no such template), INVALID_ARGUMENT (past deliver_at, unknown type, bad variables or audience_filter, an unknown \
sender, senders of different businesses, both from and senders), UNAVAILABLE.",
        input_schema = schema::input::<ScheduleCampaignIn>(),
        output_schema = schema::output::<ScheduleCampaignOut>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false)
    )]
    async fn schedule_campaign(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.schedule_campaign_impl(&tool.0, args).await)
    }

    #[tool(
        description = "Pro tier. Cancel a scheduled, running, sending or paused campaign for good: no further recipients are \
sent; messages already dispatched are not recalled. The optional reason is kept in the audit trail. Returns campaign_id, \
status \"cancelled\", from_status. Errors: CAMPAIGN_TERMINAL_STATE (already completed, failed or cancelled: nothing to \
do), NOT_FOUND (unknown campaign_id), FEATURE_NOT_AVAILABLE (tier oss), INVALID_ARGUMENT (not a UUID), UNAVAILABLE.",
        input_schema = schema::input::<CancelCampaignIn>(),
        output_schema = schema::output::<CancelCampaignOut>(),
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = false)
    )]
    async fn cancel_campaign(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.cancel_campaign_impl(&tool.0, args).await)
    }

    #[tool(
        description = "Pro tier. Pause a scheduled, running or sending campaign: the answer waits for the recipients being \
recorded at that moment, then nothing more is queued until resume_campaign; progress counters are kept and messages already queued may still be delivered. Returns campaign_id, status \"paused\", \
from_status and a note with the progress so far. Errors: INVALID_STATE_TRANSITION (the campaign is paused already or \
finished: check get_campaign), NOT_FOUND, FEATURE_NOT_AVAILABLE (tier oss), INVALID_ARGUMENT (not a UUID), UNAVAILABLE.",
        input_schema = schema::input::<CampaignIdIn>(),
        output_schema = schema::output::<CampaignMoveOut>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false)
    )]
    async fn pause_campaign(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.pause_campaign_impl(&tool.0, args).await)
    }

    #[tool(
        description = "Pro tier. Resume a paused campaign where it left off (status becomes running; recipients already sent \
are not sent again). Returns campaign_id, status \"running\", from_status \"paused\" and a note. Errors: \
INVALID_STATE_TRANSITION (the campaign is not paused: check get_campaign), NOT_FOUND, FEATURE_NOT_AVAILABLE (tier oss), \
INVALID_ARGUMENT (not a UUID), UNAVAILABLE.",
        input_schema = schema::input::<CampaignIdIn>(),
        output_schema = schema::output::<CampaignMoveOut>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false)
    )]
    async fn resume_campaign(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.resume_campaign_impl(&tool.0, args).await)
    }

    #[tool(
        description = "Read a campaign: name, type, status (scheduled, running, sending, paused, cancelled, completed, failed), \
deliver_at, template, locale, variables, audience_filter, from (and senders: the numbers it spreads over), progress counters (each recipient counted once, in its latest \
state: sent_count, failed_count, cancelled_count, pending_count add up to total_recipients; delivered_count is the part of \
sent_count delivered or read) and paused_at. Errors: NOT_FOUND (unknown campaign_id), INVALID_ARGUMENT (not a UUID), UNAVAILABLE.",
        input_schema = schema::input::<CampaignIdIn>(),
        output_schema = schema::output::<CampaignOut>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn get_campaign(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.get_campaign_impl(args).await)
    }
}
