//! Published schemas: [`input`] of a tool's parameter struct (beside its handler, read by
//! [`crate::input::parse`]) and [`output`] of the structs the tools serialise into
//! `structuredContent`, which live here.

mod cost;
pub use cost::{CostLineOut, CostReport, SpendOut};

use std::sync::Arc;

use rmcp::model::JsonObject;
use schemars::JsonSchema;
use serde::Serialize;

/// inputSchema of `T` (object root, title/description stripped), standard JSON Schema only.
pub fn input<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    let schema = rmcp::handler::server::tool::schema_for_input::<T>()
        .unwrap_or_else(|e| panic!("input schema of {}: {e}", std::any::type_name::<T>()));
    standard(schema)
}

/// outputSchema of `T` (what its Serialize writes), standard JSON Schema only.
pub fn output<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    standard(rmcp::handler::server::tool::schema_for_output::<T>())
}

/// The `format`s JSON Schema 2020-12 defines; validators (the MCP Inspector's among them)
/// warn about any other.
pub const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Every schema goes through here: schemars writes Rust-flavoured formats (`uint32`,
/// `int64`, `double`, ...) that are not JSON Schema. They are dropped; an unsigned one
/// becomes `minimum: 0` when no minimum is set, so the bound is kept in standard terms.
fn standard(schema: Arc<JsonObject>) -> Arc<JsonObject> {
    let mut obj = Arc::unwrap_or_clone(schema);
    strip_formats(&mut obj);
    Arc::new(obj)
}

fn strip_formats(obj: &mut JsonObject) {
    let format = obj
        .get("format")
        .and_then(|f| f.as_str())
        .map(str::to_owned);
    if let Some(f) = format
        && !STANDARD_FORMATS.contains(&f.as_str())
    {
        obj.remove("format");
        if f.starts_with("uint") && !obj.contains_key("minimum") {
            obj.insert("minimum".into(), serde_json::json!(0));
        }
    }
    for v in obj.values_mut() {
        strip_value(v);
    }
}

fn strip_value(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(o) => strip_formats(o),
        serde_json::Value::Array(a) => a.iter_mut().for_each(strip_value),
        _ => {}
    }
}

/// The input of a tool that takes no parameters.
#[derive(JsonSchema)]
pub struct NoParams {}

// ------------------------------------------------------------------------------ outputs

#[derive(Serialize, JsonSchema)]
pub struct ComplianceOut {
    pub customer_id: String,
    /// The sender (business number) the decision is for.
    pub from: String,
    pub channel: String,
    pub message_type: String,
    pub allowed: bool,
    /// OK when allowed, else TEMPLATE_REQUIRED, USER_OPTED_OUT, FREQUENCY_CAP_EXCEEDED or POLICY_RESTRICTION.
    pub reason_code: String,
    pub human_explanation: String,
    pub suggested_action: String,
    /// The policy that refused, when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy_id: Option<String>,
}

#[derive(Serialize, JsonSchema)]
pub struct SendOut {
    /// "queued": accepted and handed to delivery.
    pub status: String,
    pub message_id: String,
    pub customer_id: String,
    /// The customer's phone digits; null when it is known by BSUID only.
    pub phone: Option<String>,
    /// The BSUID when the customer is known by it only (see get_customer_context).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bsuid: Option<String>,
    pub channel: String,
    /// The sender (business number) it goes out from.
    pub from: String,
    /// True when an earlier call with the same idempotency_key created this message and
    /// nothing new was sent.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub replayed: bool,
}

impl SendOut {
    /// The answer to an accepted send.
    pub fn queued(
        accepted: &warden_core::Accepted,
        phone: &warden_rules::phone::PhoneNumber,
        channel: &str,
    ) -> Self {
        SendOut {
            status: accepted.status.to_string(),
            message_id: accepted.message_id.to_string(),
            customer_id: phone.digits().to_string(),
            phone: phone.phone_digits().map(str::to_owned),
            bsuid: phone.bsuid().map(str::to_owned),
            channel: channel.to_string(),
            from: accepted.from.clone(),
            replayed: accepted.replayed,
        }
    }
}

#[derive(Serialize, JsonSchema)]
pub struct ExplainOut {
    pub code: i32,
    pub title: String,
    pub category: String,
    pub can_retry: bool,
    pub human_explanation: String,
    pub suggested_action: String,
    /// False when the code is not in the knowledge base (a cautious fallback explanation).
    pub known: bool,
}

#[derive(Serialize, JsonSchema)]
pub struct ConversationOut {
    pub customer_id: String,
    #[serde(flatten)]
    pub ids: CustomerIds,
    pub channel: String,
    /// The sender (business number) whose conversation this is.
    pub from: String,
    /// The conversation's id (null when the customer never wrote); archive_chat takes it.
    pub conversation_id: Option<String>,
    pub window_open: bool,
    pub time_remaining_secs: i64,
    pub conversation_type: String,
    pub last_inbound_at: Option<String>,
    pub last_outbound_at: Option<String>,
    pub window_expires_at: Option<String>,
    /// "eligible", or why not (user_opted_out, frequency_cap_exceeded, policy_restriction).
    pub marketing_eligibility: String,
    /// "eligible", or why not (user_opted_out, policy_restriction).
    pub utility_eligibility: String,
    pub archived: bool,
    /// Who holds the conversation now: agents, human, other_app or idle (do not reply
    /// while a person or another app holds it).
    pub holder: warden_core::conversations::holder::HolderView,
}

#[derive(Serialize, JsonSchema)]
pub struct FrequencyOut {
    pub customer_id: String,
    /// The sender (business number) it is about.
    pub from: String,
    pub channel: String,
    pub is_capped: bool,
    /// Why it is capped; empty when not capped.
    pub reason: String,
    /// What to do instead; empty when not capped.
    pub suggested_action: String,
    /// When the cap resets; present only when capped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reset_hint: Option<String>,
    /// Marketing messages still allowed in the rolling window (absent when no cap applies).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remaining: Option<u32>,
    /// When the next marketing message may go, when capped and known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_slot_at: Option<String>,
}

#[derive(Serialize, JsonSchema)]
pub struct OptIn {
    pub marketing: bool,
    pub utility: bool,
}

#[derive(Serialize, JsonSchema)]
pub struct ContextConversation {
    pub window_open: bool,
    pub time_remaining_secs: i64,
    pub conversation_type: String,
    pub last_inbound: Option<String>,
    pub last_outbound: Option<String>,
    pub window_expires: Option<String>,
}

#[derive(Serialize, JsonSchema)]
pub struct Eligible {
    pub eligible: bool,
    /// Present when not eligible: the refusal a send would get.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason_code: Option<String>,
    pub human_explanation: String,
}

#[derive(Serialize, JsonSchema)]
pub struct Eligibility {
    pub marketing: Eligible,
    pub utility: Eligible,
    pub service: Eligible,
}

/// A customer's identifiers: `customer_id` is its key (the phone digits when known, else
/// the BSUID); `username` is display only.
#[derive(Serialize, JsonSchema, Default)]
pub struct CustomerIds {
    /// Canonical phone digits; null for a customer known by BSUID only.
    pub phone: Option<String>,
    /// Business-scoped user ID, e.g. US.13491208655302741918.
    pub bsuid: Option<String>,
    /// Parent BSUID (CC.ENT.…) when the business's portfolios are linked.
    pub parent_bsuid: Option<String>,
    pub username: Option<String>,
}

impl From<warden_core::customers::identity::Identifiers> for CustomerIds {
    fn from(i: warden_core::customers::identity::Identifiers) -> Self {
        CustomerIds {
            phone: i.phone,
            bsuid: i.bsuid,
            parent_bsuid: i.parent_bsuid,
            username: i.username,
        }
    }
}

#[derive(Serialize, JsonSchema)]
pub struct CustomerContextOut {
    pub customer_id: String,
    #[serde(flatten)]
    pub ids: CustomerIds,
    pub channel: String,
    /// The sender (business number) the conversation, eligibility and consent are about.
    pub from: String,
    /// False when Warden has never seen this customer (defaults are shown).
    pub known_customer: bool,
    /// The consent given to the business of `from`.
    pub opt_in: OptIn,
    pub tags: Vec<String>,
    pub engagement_score: f64,
    pub last_interaction: Option<String>,
    pub conversation: ContextConversation,
    /// Who holds the conversation now: agents, human, other_app or idle.
    pub holder: warden_core::conversations::holder::HolderView,
    pub eligibility: Eligibility,
    /// The most recent send refused for this customer (any policy, opt-out, window or
    /// cap), or null when none was.
    pub last_refusal: Option<LastRefusalOut>,
}

#[derive(Serialize, JsonSchema)]
pub struct LastRefusalOut {
    /// When it was refused (RFC 3339).
    pub at: String,
    pub reason_code: String,
    /// The policy that refused, when one did.
    pub policy_id: Option<String>,
    /// Why (names the policy and the pattern, domain or earlier message_id; never the message).
    pub human_explanation: String,
}

#[derive(Serialize, JsonSchema)]
pub struct ErrorObj {
    pub code: i32,
    pub category: String,
    pub can_retry: bool,
    pub human_explanation: String,
    pub suggested_action: String,
}

#[derive(Serialize, JsonSchema)]
pub struct DeliveryOut {
    pub message_id: String,
    /// The sender (business number) it was sent from, or an inbound message's number.
    pub from: String,
    pub customer_id: String,
    pub channel: String,
    pub direction: String,
    pub message_type: String,
    /// queued, scheduled, sent, delivered, read or failed.
    pub status: String,
    pub retry_count: i32,
    pub created_at: String,
    pub updated_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deliver_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub campaign_id: Option<String>,
    /// Present when status is failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObj>,
    /// The agent (or Warden service) that asked for the message; null for inbound
    /// messages and for messages sent before attribution was recorded.
    pub sent_by: Option<String>,
    /// What the platform reported the message cost (from its status webhooks); null until
    /// it reported pricing.
    pub pricing: Option<MessagePricingOut>,
}

/// A message's pricing as the platform reported it.
#[derive(Serialize, JsonSchema)]
pub struct MessagePricingOut {
    /// The category the platform charged: marketing, utility, authentication, service, ...
    pub category: Option<String>,
    /// Whether the platform charges for it.
    pub billable: Option<bool>,
    /// regular, free_customer_service or free_entry_point.
    #[serde(rename = "type")]
    pub pricing_type: Option<String>,
    /// The platform's pricing model, e.g. PMP (per message).
    pub pricing_model: Option<String>,
    /// What it cost (decimal string, 4 places): the rate of the charged category for the
    /// customer's country on the day it was sent when billable, else "0.0000".
    pub actual_cost: String,
    /// The rate card's currency.
    pub currency: String,
}

#[derive(Serialize, JsonSchema)]
pub struct RateLimitOut {
    /// The sender (business number) whose bucket this is: each number has its own.
    pub from: String,
    pub channel: String,
    /// Bucket capacity and refill, messages per second.
    pub capacity_mps: u32,
    /// Where the capacity came from: `setting` (RATE_LIMIT_MPS, nothing known from the
    /// platform), `platform_default` (80), `throughput_upgrade` (1,000), `coexistence` (20).
    pub capacity_source: String,
    /// What set it: the webhook or platform read, the default sender's `mps` in the senders
    /// file, or `RATE_LIMIT_MPS=<n>`.
    pub capacity_detail: String,
    /// When the platform last changed it (absent: never).
    pub capacity_updated_at: Option<String>,
    /// Tokens available now (a send takes one).
    pub tokens_remaining: f64,
    /// Tokens granted since the bucket was created.
    pub tokens_used: u64,
    /// Epoch milliseconds of the bucket's last update.
    pub last_update_ms: i64,
    pub last_update_at: String,
}

#[derive(Serialize, JsonSchema)]
pub struct ConversationItem {
    pub id: String,
    pub customer_id: String,
    pub channel: String,
    pub window_open: bool,
    pub time_remaining_secs: i64,
    /// The sender (business number) whose conversation this is.
    pub from: String,
    pub conversation_type: String,
    pub last_inbound_at: Option<String>,
    pub last_outbound_at: Option<String>,
    pub window_expires_at: Option<String>,
}

#[derive(Serialize, JsonSchema)]
pub struct ConversationsPage {
    pub conversations: Vec<ConversationItem>,
    /// All matching conversations (not just this page).
    pub total: i64,
    pub limit: i64,
    pub offset: i64,
}

#[derive(Serialize, JsonSchema)]
pub struct TemplateItem {
    pub name: String,
    pub locale: String,
    pub category: String,
    pub status: String,
    pub body_text: String,
    /// "positional" or "named".
    pub parameter_format: String,
    /// The template's components as created (HEADER, BODY, FOOTER, BUTTONS), in the platform's shape.
    pub components: Vec<serde_json::Value>,
    /// The platform's reason for the last rejection, pause or disable (e.g. `INCORRECT_CATEGORY`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The platform's quality score of the template (GREEN, YELLOW, RED, UNKNOWN).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quality_score: Option<String>,
    /// A re-categorisation the platform announced and that has not taken effect yet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category_change: Option<CategoryChangeItem>,
}

#[derive(Serialize, JsonSchema)]
pub struct CategoryChangeItem {
    /// The category the template gets (lower case).
    pub to: String,
    /// When (RFC 3339); from then on sends obey that category's rules.
    pub at: String,
}

#[derive(Serialize, JsonSchema)]
pub struct TemplatesPage {
    /// The sender whose business's templates these are.
    pub from: String,
    pub templates: Vec<TemplateItem>,
    /// All matching templates (not just this page).
    pub total: i64,
    pub limit: i64,
    pub offset: i64,
}

#[derive(Serialize, JsonSchema)]
pub struct RetryItem {
    pub message_id: String,
    /// "retried" (re-queued) or "skipped".
    pub status: String,
    /// Why it was skipped (names the error code when the error is not retryable).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Serialize, JsonSchema)]
pub struct RetryOut {
    pub results: Vec<RetryItem>,
}

#[derive(Serialize, JsonSchema)]
pub struct SyncTemplateOut {
    pub template_name: String,
    pub locale: String,
    pub status: String,
    pub category: String,
    pub platform_id: Option<String>,
    /// The local status before this sync (null when the template was not stored locally).
    pub previous_status: Option<String>,
    /// Present when REJECTED: the platform's reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Present when REJECTED: what to do next.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggested_action: Option<String>,
}

#[derive(Serialize, JsonSchema)]
pub struct ScheduleMessageOut {
    pub message_id: String,
    /// "scheduled".
    pub status: String,
    pub deliver_at: String,
    pub customer_id: String,
    pub message_type: String,
    pub channel: String,
    /// The sender (business number) it goes out from.
    pub from: String,
    /// True when an earlier call with the same idempotency_key created this and nothing
    /// new was.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub replayed: bool,
}

#[derive(Serialize, JsonSchema)]
pub struct ScheduleCampaignOut {
    pub campaign_id: String,
    /// "scheduled"; "pending_approval" when the deployment requires an operator's approval
    /// (CAMPAIGN_APPROVAL=required): it sends nothing until approved in the console.
    pub status: String,
    pub name: String,
    #[serde(rename = "type")]
    pub campaign_type: String,
    pub deliver_at: String,
    pub template_name: String,
    pub locale: String,
    /// True when an earlier call with the same idempotency_key created this and nothing
    /// new was.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub replayed: bool,
    /// The sender (business number) it goes out from; the first of `senders` when several.
    pub from: String,
    /// The numbers of one business it spreads over, each recipient always getting the
    /// same one; absent when it goes out from one number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub senders: Option<Vec<String>>,
    /// What it would do if it ran now (preview_campaign's answer, as of scheduling);
    /// null when it could not be worked out then.
    pub preview: Option<CampaignPreviewOut>,
}

/// One country's share of a campaign preview.
#[derive(Serialize, JsonSchema)]
pub struct CountryPreviewOut {
    /// Recipients of that country who would be sent the message.
    pub recipients: u64,
    /// What sending them would cost (the rate card's rate for the template's category).
    pub estimated_cost: f64,
}

/// What a campaign would do if it ran now (preview_campaign).
#[derive(Serialize, JsonSchema)]
pub struct CampaignPreviewOut {
    /// The sender it would go out from (the first of several).
    pub from: String,
    /// Every sender when it spreads over several; absent for one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub senders: Option<Vec<String>>,
    /// Customers the audience filter selects.
    pub audience: u64,
    /// Those the send path would accept now.
    pub would_send: u64,
    /// Refusals (and holds until a rule lifts) by reason code.
    pub refused_by: std::collections::BTreeMap<String, u64>,
    /// Refusals by the policy that refused.
    pub refused_by_policy: std::collections::BTreeMap<String, u64>,
    /// The recipients that would be sent, by country, with their cost.
    pub by_country: std::collections::BTreeMap<String, CountryPreviewOut>,
    pub estimated_cost: f64,
    /// The rate card's currency; null when none is installed (costs are then 0).
    pub currency: Option<String>,
    /// would_send at the senders' throughput together.
    pub estimated_duration_secs: f64,
}

impl CampaignPreviewOut {
    /// The preview of a campaign from `from` (and `senders` when several).
    pub fn of(
        p: warden_core::campaigns::preview::CampaignPreview,
        from: String,
        senders: Option<Vec<String>>,
    ) -> Self {
        CampaignPreviewOut {
            from,
            senders,
            audience: p.audience,
            would_send: p.would_send,
            refused_by: p.refused_by,
            refused_by_policy: p.refused_by_policy,
            by_country: p
                .by_country
                .into_iter()
                .map(|(cc, c)| {
                    (
                        cc,
                        CountryPreviewOut {
                            recipients: c.recipients,
                            estimated_cost: c.estimated_cost,
                        },
                    )
                })
                .collect(),
            estimated_cost: p.estimated_cost,
            currency: p.currency,
            estimated_duration_secs: p.estimated_duration_secs,
        }
    }
}

#[derive(Serialize, JsonSchema)]
pub struct CancelCampaignOut {
    pub campaign_id: String,
    /// "cancelled".
    pub status: String,
    pub from_status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Serialize, JsonSchema)]
pub struct CampaignMoveOut {
    pub campaign_id: String,
    /// "paused" (pause_campaign) or "running" (resume_campaign).
    pub status: String,
    pub from_status: String,
    pub note: String,
}

#[derive(Serialize, JsonSchema)]
pub struct CampaignOut {
    pub campaign_id: String,
    pub name: String,
    #[serde(rename = "type")]
    pub campaign_type: String,
    /// scheduled, running, sending, paused, cancelled, completed, failed, pending_approval
    /// (waiting for an operator) or rejected (an operator refused it: see rejection_reason).
    pub status: String,
    pub deliver_at: String,
    pub template_name: String,
    pub locale: String,
    pub variables: serde_json::Map<String, serde_json::Value>,
    pub audience_filter: serde_json::Map<String, serde_json::Value>,
    /// Recipients whose message reached the platform (sent, delivered or read) and has
    /// not failed since; each recipient is counted once, in its latest state.
    pub sent_count: i32,
    /// The part of sent_count delivered or read.
    pub delivered_count: i32,
    /// Recipients refused by compliance or whose message failed.
    pub failed_count: i32,
    /// Recipients not sent because the campaign was cancelled.
    pub cancelled_count: i32,
    /// Recipients given a message with no final outcome yet.
    pub pending_count: i32,
    pub paused_at: Option<String>,
    /// sent + failed + cancelled + pending: the whole audience once it has been read to
    /// its end, the recipients reached so far before.
    pub total_recipients: i32,
    pub status_reason: Option<String>,
    /// Why an operator rejected it (status rejected); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rejection_reason: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    /// What the campaign cost: estimated from the rate card beside the platform's reports.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<CostReport>,
    /// The sender (business number) it goes out from; the first of `senders` when several.
    pub from: String,
    /// The numbers of one business it spreads over, each recipient always getting the
    /// same one; absent when it goes out from one number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub senders: Option<Vec<String>>,
    /// The real run's refusals so far by reason code (recipients whose message a
    /// compliance or policy rule refused), as preview_campaign counts them.
    pub refused_by: std::collections::BTreeMap<String, u64>,
}

#[derive(Serialize, JsonSchema)]
pub struct AccountQualityOut {
    /// The sender (business number) read.
    pub from: String,
    pub waba_id: String,
    pub name: String,
    /// HIGH, MEDIUM, LOW or UNKNOWN (from the quality rating).
    pub quality_tier: String,
    /// The platform's rating: GREEN, YELLOW, RED, NA or UNKNOWN.
    pub quality_rating: String,
    /// Business-initiated conversations allowed per 24 hours, e.g. "1000" or "UNLIMITED".
    pub current_limit: String,
    /// The platform's messaging limit tier, e.g. TIER_1K.
    pub limit_tier: String,
    pub phone_number_id: String,
    pub display_phone_number: Option<String>,
    pub throughput_level: Option<String>,
    /// The business portfolio's messaging limit as Warden enforces it, and its use.
    pub messaging_limit: MessagingLimitOut,
}

/// Unique customers reached by business-initiated messages (templates sent while the
/// customer's care window was closed) in the rolling 24 hours, shared by every number.
#[derive(Serialize, JsonSchema)]
pub struct MessagingLimitOut {
    /// Customers reached in the rolling 24 hours (counted when Warden accepts the message).
    pub used: i64,
    /// Unique customers allowed per rolling 24 hours (250, 2000, 10000, 100000, ...); null
    /// when unlimited or not learnt yet (then `unlimited` tells which).
    pub limit: Option<i64>,
    /// True when the portfolio's limit is unlimited; false when it is a number or unknown.
    pub unlimited: bool,
    /// False until the platform told Warden the limit (nothing is enforced until then).
    pub known: bool,
    /// Where the limit was learnt: get_account_quality, phone_number_quality_update, business_capability_update or unknown.
    pub source: String,
    /// When `used` next goes down: the oldest counted customer leaves the rolling window
    /// (RFC 3339); null when nobody is counted.
    pub resets_at: Option<String>,
    /// Customers held from marketing for 24 hours after the platform's per-user marketing limit (error 131049).
    pub marketing_limited_customers_24h: i64,
}

impl MessagingLimitOut {
    /// The portfolio's limit and use as the core reads them.
    pub fn of(usage: &warden_core::account::portfolio::Usage) -> MessagingLimitOut {
        MessagingLimitOut {
            used: usage.used,
            limit: usage.limit.and_then(|l| l.users()).map(i64::from),
            unlimited: usage.limit.is_some_and(|l| l.users().is_none()),
            known: usage.limit.is_some(),
            source: usage.source.clone(),
            resets_at: usage
                .frees_at
                .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
            marketing_limited_customers_24h: usage.marketing_limited,
        }
    }
}

#[derive(Serialize, JsonSchema)]
pub struct SendersOut {
    /// The numbers, in the senders file's order (for an agent limited to some senders,
    /// only those).
    pub senders: Vec<SenderOut>,
    /// The id of the default sender: the one used when a call gives no `from`.
    pub default: String,
}

#[derive(Serialize, JsonSchema)]
pub struct SenderOut {
    /// The sender's id: what `from` takes.
    pub id: String,
    /// The platform's id of the number (`from` takes it too).
    pub phone_number_id: String,
    /// The number as the platform shows it: read from the platform when Warden starts and kept from every webhook's metadata; null until the platform has said.
    pub display_phone_number: Option<String>,
    /// Its WhatsApp Business Account: numbers with the same waba_id are one business (consent, frequency caps and templates are shared).
    pub waba_id: String,
    /// Its business portfolio: numbers of one portfolio share its messaging limit.
    pub portfolio_id: String,
    /// True for the sender used when a call gives no `from`.
    pub default: bool,
    /// The latest quality rating Warden knows for the number (GREEN, YELLOW, RED, NA, UNKNOWN): read from the platform when Warden starts, after a quality update, and by get_account_quality; "RED" while it is protected because the platform flagged its quality; null when Warden knows none.
    pub quality_rating: Option<String>,
    /// The platform's review of the number's display name (APPROVED, PENDING_REVIEW, DECLINED, ...), as last read; null until read.
    pub name_status: Option<String>,
    /// Why the number sends no marketing now (sender protection: its quality was flagged, or a halt-class platform error); null when it is not protected.
    pub protection: Option<ProtectionOut>,
    /// The pace the dispatcher sends the number's messages at.
    pub throughput: ThroughputOut,
    /// Its business portfolio's messaging limit as Warden enforces it, and its use (shared by the portfolio's numbers).
    pub messaging_limit: MessagingLimitOut,
}

#[derive(Serialize, JsonSchema)]
pub struct ProtectionOut {
    pub reason: String,
    /// quality_flagged, platform_error, ...
    pub source: String,
    /// Since when (RFC 3339).
    pub since: String,
}

#[derive(Serialize, JsonSchema)]
pub struct ThroughputOut {
    /// Messages per second.
    pub mps: u32,
    /// setting (the senders file's mps or RATE_LIMIT_MPS), platform_default, throughput_upgrade or coexistence.
    pub source: String,
    /// What set it: the platform's last word on the number, else the setting.
    pub detail: String,
    /// When the platform's word was recorded (RFC 3339); null while the setting rules.
    pub updated_at: Option<String>,
}

#[derive(Serialize, JsonSchema)]
pub struct CostOut {
    pub message_type: String,
    pub recipient_country: String,
    pub quantity: i64,
    /// Decimal string with 4 places, e.g. "0.0411".
    pub cost_per_conversation: String,
    /// Decimal string with 4 places.
    pub total_estimated_cost: String,
    pub currency: String,
    pub pricing_category: String,
    pub pricing_model_version: String,
    /// The rate card row used: the country, or DEFAULT when the country has no rates of its own.
    pub rate_country: String,
    pub effective_date: String,
}

#[derive(Serialize, JsonSchema)]
pub struct PricingOut {
    /// The rate card's country: the requested one, or DEFAULT when it has no rates of its own.
    pub country: String,
    pub requested_country: String,
    pub conversation_type: String,
    pub cost_per_conversation: f64,
    pub currency: String,
    pub pricing_category: String,
    /// YYYY-MM-DD.
    pub effective_date: String,
    pub pricing_model_version: String,
}

#[derive(Serialize, JsonSchema)]
pub struct CreateTemplateOut {
    pub template_name: String,
    pub locale: String,
    pub category: String,
    /// "PENDING" until the platform decides.
    pub status: String,
    pub platform_id: String,
    pub note: String,
}

#[derive(Serialize, JsonSchema)]
pub struct SyncWebhooksOut {
    /// True when the template statuses were re-read from the platform.
    pub template_synced: bool,
    /// Messages actually settled by this call (stuck sends settled, lost publishes re-published).
    pub messages_reconciled: i64,
    pub templates_checked: i64,
    pub templates_updated: i64,
    /// Sends whose outcome is unknown; they settle when the platform's status webhook arrives.
    pub messages_awaiting_status: i64,
    pub note: String,
}

#[derive(Serialize, JsonSchema)]
pub struct ArchiveOut {
    pub conversation_id: String,
    /// The sender (business number) the conversation is with.
    pub from: String,
    /// "archived".
    pub status: String,
    pub from_type: String,
    pub customer_id: String,
    pub archived_at: String,
}
