//! What the account tools answer: quality, messaging limit, senders, cost and pricing, webhooks.

use schemars::JsonSchema;
use serde::Serialize;

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
