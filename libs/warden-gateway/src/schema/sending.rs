//! What check_compliance and the send tools answer.

use schemars::JsonSchema;
use serde::Serialize;

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
    /// A flow message (send_interactive kind flow, or a template with a FLOW button): the
    /// flow_token it carries (the one given, else a generated one); the customer's answers
    /// come back with it (get_flow_responses).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flow_token: Option<String>,
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
            flow_token: None,
        }
    }
}
