//! What get_flow_responses and list_flows answer.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

#[derive(Serialize, JsonSchema)]
pub struct FlowResponsesOut {
    /// Newest first.
    pub responses: Vec<FlowResponseOut>,
}

#[derive(Serialize, JsonSchema)]
pub struct FlowResponseOut {
    /// The token of the flow message answered (from the answers, else from that message); null when unknown.
    pub flow_token: Option<String>,
    pub customer_id: String,
    /// The business number it was sent to (sender id).
    pub from: String,
    /// When the submission arrived (RFC 3339).
    pub received_at: String,
    /// The answers: the flow's response_json parsed; {"raw": "..."} when it was not a JSON object.
    pub response: Map<String, Value>,
    /// True when the answers were not a JSON object (kept raw in response.raw).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub parse_error: bool,
    /// Our message_id of the flow message answered (send_interactive kind flow or send_template); null when unknown.
    pub flow_message_id: Option<String>,
    /// The submission's own message_id (an inbound message, also in get_conversation_history).
    pub message_id: String,
}

#[derive(Serialize, JsonSchema)]
pub struct FlowsOut {
    /// The sender (business number) whose account was read.
    pub from: String,
    pub flows: Vec<FlowOut>,
}

#[derive(Serialize, JsonSchema)]
pub struct FlowOut {
    /// The flow_id send_interactive (kind flow) and create_template's FLOW buttons take.
    pub id: String,
    pub name: String,
    /// DRAFT (send it with mode draft), PUBLISHED, DEPRECATED, BLOCKED or THROTTLED.
    pub status: String,
    /// The platform's categories (SIGN_UP, APPOINTMENT_BOOKING, ...).
    pub categories: Vec<String>,
}
