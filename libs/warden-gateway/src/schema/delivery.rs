//! What the delivery tools answer: a message's status and pricing, retries, error explanations, the rate limit.

use schemars::JsonSchema;
use serde::Serialize;

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
    /// The category the platform charged: marketing, marketing_lite (a marketing template sent through the Marketing Messages API), utility, authentication, service, ...
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
