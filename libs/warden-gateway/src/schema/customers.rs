//! What the customer tools answer: a customer's context, consent and frequency cap.

use schemars::JsonSchema;
use serde::Serialize;

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
    /// Whether the customer lets the number `from` call them: status granted, rejected or
    /// none (no answer, or a temporary grant that ended), from their answer to a
    /// call_permission_request.
    pub call_permission: warden_core::calls::CallPermissionView,
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
