//! Scheduling and campaigns: schedule_message, schedule_campaign, cancel_campaign,
//! pause_campaign, resume_campaign (Pro+), get_campaign.

use chrono::{DateTime, TimeDelta, Utc};
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::{tool, tool_router};
use serde_json::{Map, Value, json};
use uuid::Uuid;
use warden_core::campaigns::CampaignError;
use warden_core::campaigns::create::{
    Approval, CampaignSenders, CampaignType, NewCampaign, ScheduleCampaignError,
};
use warden_core::scheduling::schedule::{ScheduleMessage, ScheduleMessageError};
use warden_core::{SendKind, TemplateSend};
use warden_rules::audience::AudienceFilter;
use warden_rules::campaign_status::CampaignStatus;
use warden_rules::kinds::MessageType;

use schemars::JsonSchema;
use serde::Deserialize;
use warden_rules::template_params::Variables;

use crate::error::{ToolError, ToolResult, code};
use crate::gateway::Gateway;
use crate::input::fields::{Customer, Id, Json, Text, Timestamp, opt_string};
use crate::input::parsers::check_language;
use crate::input::shared::{Keyed, OnChannel, SenderName, check_sender_name, template_locale};
use crate::input::{Input, parse};
use crate::schema::{self, *};
use crate::text::{detail, echo, no_template_message};
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
use crate::util::{check_len, finish, opt_ts, ts};

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
        name = "schedule_message",
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
    async fn schedule_message(&self, args: JsonObject) -> CallToolResult {
        finish("schedule_message", self.schedule_message_impl(args).await)
    }

    #[tool(
        name = "schedule_campaign",
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
    async fn schedule_campaign(&self, args: JsonObject) -> CallToolResult {
        finish("schedule_campaign", self.schedule_campaign_impl(args).await)
    }

    #[tool(
        name = "cancel_campaign",
        description = "Pro tier. Cancel a scheduled, running, sending or paused campaign for good: no further recipients are \
sent; messages already dispatched are not recalled. The optional reason is kept in the audit trail. Returns campaign_id, \
status \"cancelled\", from_status. Errors: CAMPAIGN_TERMINAL_STATE (already completed, failed or cancelled: nothing to \
do), NOT_FOUND (unknown campaign_id), FEATURE_NOT_AVAILABLE (tier oss), INVALID_ARGUMENT (not a UUID), UNAVAILABLE.",
        input_schema = schema::input::<CancelCampaignIn>(),
        output_schema = schema::output::<CancelCampaignOut>(),
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = false)
    )]
    async fn cancel_campaign(&self, args: JsonObject) -> CallToolResult {
        finish("cancel_campaign", self.cancel_campaign_impl(args).await)
    }

    #[tool(
        name = "pause_campaign",
        description = "Pro tier. Pause a scheduled, running or sending campaign: the answer waits for the recipients being \
recorded at that moment, then nothing more is queued until resume_campaign; progress counters are kept and messages already queued may still be delivered. Returns campaign_id, status \"paused\", \
from_status and a note with the progress so far. Errors: INVALID_STATE_TRANSITION (the campaign is paused already or \
finished: check get_campaign), NOT_FOUND, FEATURE_NOT_AVAILABLE (tier oss), INVALID_ARGUMENT (not a UUID), UNAVAILABLE.",
        input_schema = schema::input::<CampaignIdIn>(),
        output_schema = schema::output::<CampaignMoveOut>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false)
    )]
    async fn pause_campaign(&self, args: JsonObject) -> CallToolResult {
        finish("pause_campaign", self.pause_campaign_impl(args).await)
    }

    #[tool(
        name = "resume_campaign",
        description = "Pro tier. Resume a paused campaign where it left off (status becomes running; recipients already sent \
are not sent again). Returns campaign_id, status \"running\", from_status \"paused\" and a note. Errors: \
INVALID_STATE_TRANSITION (the campaign is not paused: check get_campaign), NOT_FOUND, FEATURE_NOT_AVAILABLE (tier oss), \
INVALID_ARGUMENT (not a UUID), UNAVAILABLE.",
        input_schema = schema::input::<CampaignIdIn>(),
        output_schema = schema::output::<CampaignMoveOut>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false)
    )]
    async fn resume_campaign(&self, args: JsonObject) -> CallToolResult {
        finish("resume_campaign", self.resume_campaign_impl(args).await)
    }

    #[tool(
        name = "get_campaign",
        description = "Read a campaign: name, type, status (scheduled, running, sending, paused, cancelled, completed, failed), \
deliver_at, template, locale, variables, audience_filter, from (and senders: the numbers it spreads over), progress counters (each recipient counted once, in its latest \
state: sent_count, failed_count, cancelled_count, pending_count add up to total_recipients; delivered_count is the part of \
sent_count delivered or read) and paused_at. Errors: NOT_FOUND (unknown campaign_id), INVALID_ARGUMENT (not a UUID), UNAVAILABLE.",
        input_schema = schema::input::<CampaignIdIn>(),
        output_schema = schema::output::<CampaignOut>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn get_campaign(&self, args: JsonObject) -> CallToolResult {
        finish("get_campaign", self.get_campaign_impl(args).await)
    }
}

/// A campaign's arguments, checked (`Gateway::checked_campaign`).
pub(crate) struct CheckedCampaign {
    pub(crate) new: NewCampaign,
    /// The sender id it goes out from (the first of several).
    pub(crate) from: String,
    /// Every sender id when several.
    pub(crate) senders: Option<Vec<String>>,
    pub(crate) stored: CampaignSenders,
}

/// deliver_at must be in the future (and within a year).
fn future_time(key: &str, at: DateTime<Utc>, now: DateTime<Utc>) -> ToolResult<DateTime<Utc>> {
    if at <= now {
        return Err(ToolError::invalid(
            format!(
                "The parameter `{key}` ({}) is not in the future (it is now {}).",
                ts(at),
                ts(now)
            ),
            format!(
                "Pass `{key}` as a future RFC 3339 time, e.g. {}.",
                ts(now + TimeDelta::hours(1))
                    .split('.')
                    .next()
                    .unwrap_or_default()
            ),
        ));
    }
    if at > now + MAX_AHEAD {
        return Err(ToolError::invalid(
            format!(
                "The parameter `{key}` ({}) is more than a year ahead.",
                ts(at)
            ),
            format!("Pass `{key}` within the next 12 months."),
        ));
    }
    Ok(at)
}

/// A campaign use case's refusal as the tool's error (docs/tools.md, "Errors").
fn campaign_error(e: CampaignError) -> ToolError {
    match e {
        CampaignError::NotFound(id) => campaign_not_found(id),
        CampaignError::Terminal { id, status } => ToolError::new(
            code::CAMPAIGN_TERMINAL_STATE,
            format!("Campaign {id} is already {status}, a final state, so it cannot be cancelled."),
            "Nothing to do: the campaign sends nothing more. get_campaign shows its final counters.",
        ),
        CampaignError::InvalidTransition {
            id,
            status,
            to: CampaignStatus::Running,
        } => ToolError::new(
            code::INVALID_STATE_TRANSITION,
            format!("Campaign {id} is {status}; only a paused campaign can be resumed."),
            "Check get_campaign: a scheduled, running or sending campaign is already going; a finished one cannot restart.",
        ),
        CampaignError::InvalidTransition { id, status, .. } => ToolError::new(
            code::INVALID_STATE_TRANSITION,
            format!(
                "Campaign {id} is {status}; only scheduled, running or sending campaigns can be paused."
            ),
            if status == CampaignStatus::Paused {
                "It is paused already; call resume_campaign to continue it."
            } else {
                "It has finished; nothing is being sent. get_campaign shows its counters."
            },
        ),
        CampaignError::Busy(detail, retry_after_secs) => ToolError::busy(detail, retry_after_secs),
        CampaignError::Unavailable(detail) => ToolError::unavailable(detail),
    }
}

/// schedule_message's refusals as the tool's errors (docs/tools.md, "Errors").
fn schedule_message_error(e: ScheduleMessageError) -> ToolError {
    match e {
        ScheduleMessageError::TemplateNotFound { name, locale } => ToolError::not_found(
            no_template_message(&name, &locale),
            "Pick a template from list_templates (by name and locale), or create one with create_template.",
        ),
        ScheduleMessageError::Variables { name, reason } => ToolError::invalid(
            format!(
                "The content's variables do not match template {}: {}.",
                echo(&name),
                detail(reason)
            ),
            "Give template.variables as a JSON array with one value per {{n}} placeholder.",
        ),
        ScheduleMessageError::OptedOut(refusal) => ToolError::refusal(&refusal),
        ScheduleMessageError::Idempotency(m) => ToolError::invalid(
            m,
            "Use a new idempotency_key for a new message, or repeat the first call exactly.",
        ),
        ScheduleMessageError::Db(e) => e.into(),
    }
}

/// schedule_campaign's refusals as the tool's errors (docs/tools.md, "Errors").
fn schedule_campaign_error(e: ScheduleCampaignError) -> ToolError {
    match e {
        ScheduleCampaignError::TemplateNotFound { name, locale } => ToolError::not_found(
            no_template_message(&name, &locale),
            "Pick an APPROVED template from list_templates, or create one with create_template and wait for approval.",
        ),
        ScheduleCampaignError::TemplateNotApproved {
            name,
            locale,
            status,
        } => ToolError::template_not_approved(
            &name,
            &locale,
            &status,
            "a campaign cannot use it",
            "Wait for the platform's approval (sync_template_status shows the latest status) or use an APPROVED template from list_templates.",
        ),
        ScheduleCampaignError::Variables { name, reason } => ToolError::invalid(
            format!(
                "The variables do not match template {}: {}.",
                echo(&name),
                detail(reason)
            ),
            "Pass variables as a JSON object with one value per {{n}} placeholder, e.g. {\"1\": \"friend\"}.",
        ),
        ScheduleCampaignError::Idempotency(m) => ToolError::invalid(
            m,
            "Use a new idempotency_key for a new campaign, or repeat the first call exactly.",
        ),
        ScheduleCampaignError::Db(e) => e.into(),
    }
}

fn campaign_not_found(id: Uuid) -> ToolError {
    ToolError::not_found(
        format!("There is no campaign with id {id}."),
        "Check the campaign_id: it is the id schedule_campaign returned.",
    )
}

impl Gateway {
    /// FEATURE_NOT_AVAILABLE below tier pro (spec: names the required and current tier and
    /// asks to upgrade).
    pub(crate) fn require_pro(&self, tool: &str) -> ToolResult<()> {
        let tier = self.core().settings().tier;
        if tier.is_pro_or_higher() {
            return Ok(());
        }
        Err(ToolError::new(
            code::FEATURE_NOT_AVAILABLE,
            format!(
                "{tool} needs tier pro or higher, but this deployment runs tier {}; please upgrade to pro to use campaigns.",
                tier.as_str()
            ),
            "Upgrade the deployment to tier pro (TIER=pro) to use campaign tools; until then send messages one by one with send_template or schedule_message.",
        ))
    }

    async fn schedule_message_impl(&self, args: JsonObject) -> ToolResult<ScheduleMessageOut> {
        let a: Input<ScheduleMessageIn> = parse(args)?;
        let key = a.idempotency(&a.keyed, "schedule_message", self.actor())?;
        let phone = self.resolve(&a.customer_id).await?;
        let message_type = parse_message_type(a.message_type.as_str())?;
        let content_hint = "JSON such as {\"type\":\"text\",\"text\":{\"body\":\"Hello\"}}, {\"type\":\"template\",\"template\":{\"name\":\"order_update\",\"language\":\"en\",\"variables\":[\"#1234\"]}} or the platform's own body of any kind (template with components, image, interactive, location, ...)";
        let content = &a.content.0;
        let at = a.deliver_at.0;
        let channel = a.on.channel();
        // Checked first: an unknown `from` is named before anything else is judged.
        let core = self.core();
        let sender = core.sender(a.on.from())?;
        let (from, keys) = (sender.id.clone(), core.senders().key_of(sender));
        let now = Utc::now();
        let deliver_at = future_time("deliver_at", at, now)?;
        let kind = SendKind::from_content(content).map_err(|e| {
            ToolError::invalid(
                format!("The parameter `content` is not a message: {}.", detail(e)),
                format!("Pass content as {content_hint}."),
            )
        })?;
        match &kind {
            SendKind::Template(TemplateSend {
                locale,
                variables,
                components,
                ..
            }) => {
                check_len(
                    "content.template.components",
                    &Value::Array(components.clone()).to_string(),
                    MAX_COMPONENTS_CHARS,
                    "Give only the header, body and button parameters the template takes.",
                )?;
                check_language("content.template.language", locale)?;
                check_variables("content.template.variables", variables)?;
            }
            SendKind::Text { body } => {
                check_text("content.text.body", body)?;
                if message_type == MessageType::Template {
                    return Err(ToolError::invalid(
                        "message_type template needs template content, but content is text.",
                        "Use message_type service for free-form text, or give content {\"type\":\"template\",\"template\":{...}}.",
                    ));
                }
            } // Validated against the platform's limits when read; free-form like text.
            SendKind::Rich(m) => {
                if message_type == MessageType::Template {
                    return Err(ToolError::invalid(
                        format!(
                            "message_type template needs template content, but content is {}.",
                            m.kind()
                        ),
                        "Use message_type service for free-form content, or give content {\"type\":\"template\",\"template\":{...}}.",
                    ));
                }
            }
        }
        let created = warden_core::scheduling::schedule::schedule_message_keyed(
            core.pg(),
            ScheduleMessage {
                phone: phone.clone(),
                channel: channel.to_string(),
                kind,
                message_type,
                deliver_at,
                sender: keys,
            },
            self.actor(),
            key,
        )
        .await
        .map_err(schedule_message_error)?;
        Ok(ScheduleMessageOut {
            message_id: created.id.to_string(),
            replayed: created.replayed,
            status: "scheduled".into(),
            deliver_at: ts(deliver_at),
            customer_id: phone.digits().to_string(),
            message_type: message_type.as_str().to_string(),
            channel: channel.to_string(),
            from,
        })
    }

    async fn schedule_campaign_impl(&self, args: JsonObject) -> ToolResult<ScheduleCampaignOut> {
        self.require_pro("schedule_campaign")?;
        let a: Input<ScheduleCampaignIn> = parse(args)?;
        let key = a.idempotency(&a.keyed, "schedule_campaign", self.actor())?;
        let deliver_at = future_time("deliver_at", a.deliver_at.0, Utc::now())?;
        let checked = self.checked_campaign(&a, deliver_at)?;
        let preview_of = CheckedCampaign {
            new: checked.new.clone(),
            from: checked.from.clone(),
            senders: checked.senders.clone(),
            stored: checked.stored.clone(),
        };
        let CheckedCampaign {
            new,
            from,
            senders,
            stored,
        } = checked;
        let (name, campaign_type, template_name, locale) = (
            new.name.clone(),
            new.campaign_type,
            new.template_name.clone(),
            new.locale.clone(),
        );
        // CAMPAIGN_APPROVAL=required: an agent's campaign waits for an operator (console).
        let approval = match self.core().settings().console.campaign_approval {
            warden_settings::CampaignApproval::Required => Approval::Required,
            warden_settings::CampaignApproval::Off => Approval::NotNeeded,
        };
        let created = warden_core::campaigns::create::schedule_campaign_gated(
            self.core().pg(),
            new,
            stored,
            self.actor(),
            key,
            approval,
        )
        .await
        .map_err(schedule_campaign_error)?;
        // The same numbers as preview_campaign, as of now (after the checks above, so its
        // errors stay schedule_campaign's); a preview that cannot be worked out is null.
        let preview = match self.preview_of(&preview_of, created.id).await {
            Ok(p) => Some(p),
            Err(e) => {
                tracing::warn!(campaign_id = %created.id, error = ?e.code, "campaign preview not available");
                None
            }
        };
        Ok(ScheduleCampaignOut {
            campaign_id: created.id.to_string(),
            replayed: created.replayed,
            status: approval.initial_status().as_str().into(),
            name,
            campaign_type: campaign_type.as_str().to_string(),
            deliver_at: ts(deliver_at),
            template_name,
            locale,
            from,
            senders,
            preview,
        })
    }

    /// The arguments of schedule_campaign (and preview_campaign) checked: the campaign to
    /// store at `deliver_at`, the numbers it goes out from as tools name them and as
    /// stored.
    pub(crate) fn checked_campaign(
        &self,
        a: &Input<ScheduleCampaignIn>,
        deliver_at: DateTime<Utc>,
    ) -> ToolResult<CheckedCampaign> {
        let name = a.name.0.clone();
        if name.chars().count() > MAX_CAMPAIGN_NAME {
            return Err(ToolError::invalid(
                format!(
                    "The campaign name has {} characters; at most {MAX_CAMPAIGN_NAME} are allowed.",
                    name.chars().count()
                ),
                "Use a shorter name.",
            ));
        }
        let raw_type = a.campaign_type.0.clone();
        let campaign_type = raw_type.parse::<CampaignType>().map_err(|_| {
            ToolError::invalid(
                format!(
                    "type {} is not one of broadcast, marketing, utility.",
                    echo(&raw_type)
                ),
                "Pass type as broadcast, marketing or utility.",
            )
        })?;
        let template_name = a.template_name.0.clone();
        let (from, senders, stored) = self.campaign_senders(a)?;
        let locale = template_locale(&a.locale, &a.language)?;
        let components = components_of(&a.components)?;
        let variables = match a.variables.as_ref().map(|j| &j.0) {
            None => Variables::Positional(Vec::new()),
            Some(v @ (Value::Object(_) | Value::Array(_))) => {
                warden_rules::template_params::parse_any_variables(v).map_err(|e| {
                    ToolError::invalid(
                        format!("The parameter `variables` is not usable: {}.", detail(e)),
                        "Pass variables as a JSON object keyed by placeholder number, e.g. {\"1\": \"friend\", \"2\": \"20%\"}.",
                    )
                })?
            }
            Some(other) => {
                return Err(ToolError::invalid(
                    format!(
                        "The parameter `variables` must be a JSON object, got {}.",
                        echo(&other.to_string())
                    ),
                    "Pass variables as a JSON object keyed by placeholder number, e.g. {\"1\": \"friend\"}.",
                ));
            }
        };
        // Only `{}` or no audience_filter means everyone: a blank string is refused.
        let audience_hint = "Leave audience_filter out (or pass {}) for every customer, or give a JSON object such as {\"include_tags\": [\"vip\"]}.";
        if a.blank("audience_filter") {
            return Err(ToolError::invalid(
                "The parameter `audience_filter` is an empty string, which selects nobody.",
                audience_hint,
            ));
        }
        let audience = a
            .audience_filter
            .as_ref()
            .map_or_else(|| json!({}), |j| j.0.clone());
        let (variables, named_variables) = match variables {
            Variables::Positional(v) => (v, Vec::new()),
            Variables::Named(n) => (Vec::new(), n),
        };
        check_variables("variables", &variables)?;
        let named_values: Vec<String> = named_variables.iter().map(|(_, v)| v.clone()).collect();
        check_variables("variables", &named_values)?;
        check_len(
            "audience_filter",
            &audience.to_string(),
            MAX_AUDIENCE_CHARS,
            "Pass a shorter audience_filter: select by tags rather than long customer_ids lists, or split the campaign.",
        )?;
        AudienceFilter::from_value(&audience).map_err(|e| {
            ToolError::invalid(
                format!("{}.", detail(e)),
                "Pass audience_filter as a JSON object with only include_tags, exclude_tags, customer_ids, opt_in and active_within_days, or {} for every customer.",
            )
        })?;

        Ok(CheckedCampaign {
            new: NewCampaign {
                name,
                campaign_type,
                template_name,
                locale,
                variables,
                named_variables,
                components,
                audience_filter: audience,
                deliver_at,
            },
            from,
            senders,
            stored,
        })
    }

    /// The numbers `from` or `senders` name: (the one it goes out from or the first of
    /// several, every one when several, their stored keys). Several must be one business's
    /// (they share its templates, consent and limits).
    fn campaign_senders(
        &self,
        a: &ScheduleCampaignIn,
    ) -> ToolResult<(String, Option<Vec<String>>, CampaignSenders)> {
        let core = self.core();
        let hint = "Pass senders as a JSON array of sender ids of one business, e.g. [\"a1\", \"a2\"] (list_senders shows each one's waba_id).";
        let list: Vec<String> = match a.senders.as_ref().map(|j| &j.0) {
            None => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| match v {
                    Value::String(s) if !s.trim().is_empty() => Ok(s.trim().to_string()),
                    Value::Number(n) => Ok(n.to_string()),
                    other => Err(ToolError::invalid(
                        format!(
                            "The parameter `senders` must hold sender ids, found {}.",
                            echo(&other.to_string())
                        ),
                        hint,
                    )),
                })
                .collect::<ToolResult<_>>()?,
            Some(other) => {
                return Err(ToolError::invalid(
                    format!(
                        "The parameter `senders` must be a JSON array, got {}.",
                        echo(&other.to_string())
                    ),
                    hint,
                ));
            }
        };
        if a.senders.is_some() && list.is_empty() {
            return Err(ToolError::invalid(
                "The parameter `senders` is an empty list, which names no number.",
                "Leave senders out for the default sender, or list at least one sender id.",
            ));
        }
        if a.from.is_some() && !list.is_empty() {
            return Err(ToolError::invalid(
                "Both `from` and `senders` were given; a campaign takes one of them.",
                "Pass `from` for one number, or `senders` for several numbers of one business.",
            ));
        }
        for given in &list {
            check_sender_name("senders", given)?;
        }
        let named: Vec<&warden_settings::Sender> = if list.is_empty() {
            vec![core.sender(a.from.as_ref().map(|t| t.0.as_str()))?]
        } else {
            list.iter()
                .map(|given| core.sender(Some(given)))
                .collect::<Result<_, _>>()?
        };
        let first = named[0];
        let others: Vec<&&warden_settings::Sender> = named
            .iter()
            .filter(|s| s.waba_id != first.waba_id)
            .collect();
        if !others.is_empty() {
            let shown = |s: &warden_settings::Sender| format!("{} (business {})", s.id, s.waba_id);
            let mut all = vec![shown(first)];
            all.extend(others.iter().map(|s| shown(s)));
            return Err(ToolError::invalid(
                format!(
                    "The parameter `senders` names numbers of different businesses: {}. A campaign spreads over the numbers of one business only.",
                    all.join(", ")
                ),
                format!(
                    "Pass senders of one business (e.g. only those of business {}), or schedule one campaign per business.",
                    first.waba_id
                ),
            ));
        }
        let mut ids: Vec<String> = Vec::new();
        let mut keys: Vec<String> = Vec::new();
        for s in named {
            if !ids.contains(&s.id) {
                ids.push(s.id.clone());
                keys.push(core.senders().key_of(s).sender);
            }
        }
        let business = core.senders().key_of(first).business;
        let stored = CampaignSenders::of(business, keys).unwrap_or_default();
        let several = (ids.len() > 1).then(|| ids.clone());
        Ok((ids.swap_remove(0), several, stored))
    }

    async fn cancel_campaign_impl(&self, args: JsonObject) -> ToolResult<CancelCampaignOut> {
        self.require_pro("cancel_campaign")?;
        let a: Input<CancelCampaignIn> = parse(args)?;
        let id = a.campaign_id.0;
        let reason = opt_string(&a.reason);
        if let Some(r) = &reason {
            check_len(
                "reason",
                r,
                MAX_REASON_CHARS,
                "Shorten the reason; it is a note for the audit trail.",
            )?;
        }
        let moved = self
            .core()
            .cancel_campaign(id, reason.as_deref())
            .await
            .map_err(campaign_error)?;
        Ok(CancelCampaignOut {
            campaign_id: id.to_string(),
            status: "cancelled".into(),
            from_status: moved.before.status,
            reason,
        })
    }

    async fn pause_campaign_impl(&self, args: JsonObject) -> ToolResult<CampaignMoveOut> {
        self.require_pro("pause_campaign")?;
        let a: Input<CampaignIdIn> = parse(args)?;
        let id = a.campaign_id.0;
        let before = self
            .core()
            .pause_campaign(id)
            .await
            .map_err(campaign_error)?
            .before;
        let note = format!(
            "Paused: nothing more is queued until resume_campaign. Progress so far: {} sent, {} delivered, {} failed; messages already queued may still be delivered.",
            before.sent_count, before.delivered_count, before.failed_count
        );
        Ok(CampaignMoveOut {
            campaign_id: id.to_string(),
            status: "paused".into(),
            from_status: before.status,
            note,
        })
    }

    async fn resume_campaign_impl(&self, args: JsonObject) -> ToolResult<CampaignMoveOut> {
        self.require_pro("resume_campaign")?;
        let a: Input<CampaignIdIn> = parse(args)?;
        let id = a.campaign_id.0;
        let before = self
            .core()
            .resume_campaign(id)
            .await
            .map_err(campaign_error)?
            .before;
        let note = if before.deliver_at > Utc::now() && before.enqueued_count == 0 {
            format!(
                "Resumed: the campaign continues where it stopped; its delivery time is {}.",
                ts(before.deliver_at)
            )
        } else {
            format!(
                "Resumed: the campaign continues with the recipients not yet sent ({} sent so far).",
                before.sent_count
            )
        };
        Ok(CampaignMoveOut {
            campaign_id: id.to_string(),
            status: "running".into(),
            from_status: before.status,
            note,
        })
    }

    async fn get_campaign_impl(&self, args: JsonObject) -> ToolResult<CampaignOut> {
        let a: Input<CampaignIdIn> = parse(args)?;
        let id = a.campaign_id.0;
        let core = self.core();
        let view = core.campaign(id).await.map_err(campaign_error)?;
        let recipients = view.recipients();
        let pending_count = view.pending_count;
        let from = core.sender_id_of_key(&view.sender).to_string();
        let senders = view.senders.as_ref().map(|keys| {
            keys.iter()
                .map(|k| core.sender_id_of_key(k).to_string())
                .collect()
        });
        let c = view.campaign;
        let cost = self.campaign_cost(c.id).await;
        let object = |v: Value| match v {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        // A rejected campaign says why, as the operator wrote it.
        let rejection_reason = (c.status == CampaignStatus::Rejected.as_str())
            .then(|| c.status_reason.clone())
            .flatten();
        Ok(CampaignOut {
            campaign_id: c.id.to_string(),
            name: c.name,
            campaign_type: c.campaign_type,
            status: c.status,
            deliver_at: ts(c.deliver_at),
            template_name: c.template_name,
            locale: c.locale,
            variables: object(c.variables),
            audience_filter: object(c.audience_filter),
            sent_count: c.sent_count,
            delivered_count: c.delivered_count,
            failed_count: c.failed_count,
            cancelled_count: c.cancelled_count,
            pending_count,
            paused_at: opt_ts(c.paused_at),
            // Recipients reached so far until the audience has been read to its end.
            total_recipients: if c.audience_done {
                c.total_recipients
            } else {
                recipients
            },
            rejection_reason,
            refused_by: warden_core::campaigns::preview::refused_by(self.core().pg(), c.id)
                .await
                .map_err(ToolError::from)?,
            status_reason: c.status_reason,
            created_at: ts(c.created_at),
            updated_at: ts(c.updated_at),
            cost,
            from,
            senders,
        })
    }

    /// The campaign's cost report (None when it cannot be read: the rest still answers).
    async fn campaign_cost(&self, id: uuid::Uuid) -> Option<CostReport> {
        let scope = warden_core::account::pricing::ReportScope::Campaign(id);
        match self.cost_report(scope).await {
            Ok(report) => Some(report),
            Err(e) => {
                tracing::warn!(error = %e, "campaign cost report unavailable");
                None
            }
        }
    }

    /// Estimated beside actual cost of the messages of `scope`, by category.
    pub(crate) async fn cost_report(
        &self,
        scope: warden_core::account::pricing::ReportScope,
    ) -> Result<CostReport, warden_store::DbError> {
        // A limited caller's spend is its numbers' only.
        let lines = warden_core::account::pricing::report(&self.core(), scope).await?;
        let e4 = |n: i64| crate::tools::account::decimal_e4(i128::from(n));
        let currency = self.currency().await;
        Ok(CostReport {
            currency,
            estimated: e4(lines.iter().map(|l| l.estimated_e4).sum()),
            actual: e4(lines.iter().map(|l| l.actual_e4).sum()),
            by_category: lines
                .into_iter()
                .map(|l| CostLineOut {
                    estimated: e4(l.estimated_e4),
                    actual: e4(l.actual_e4),
                    category: l.category,
                    delivered: l.delivered,
                    estimated_billable: l.estimated_billable,
                    reported: l.reported,
                    actual_billable: l.actual_billable,
                    free_customer_service: l.free_customer_service,
                    free_entry_point: l.free_entry_point,
                })
                .collect(),
        })
    }

    /// The installed rate card's currency (USD when none says).
    pub(crate) async fn currency(&self) -> String {
        warden_core::account::rate_card::installed_currency(self.core().pg())
            .await
            .unwrap_or_else(|| "USD".to_owned())
    }
}
