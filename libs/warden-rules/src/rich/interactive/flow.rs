//! `flow`: a button that opens one of the business's Flows (a form of screens) in the chat.
//!
//! The platform's action is `{"name": "flow", "parameters": {flow_message_version "3",
//! flow_token, flow_id | flow_name, flow_cta, mode, flow_action, flow_action_payload?}}`.
//! Every failure names the field as send_interactive calls it (`flow_cta`, `screen`, ...).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::rich::{RichError, err, shown, text};
use crate::text::TextKind;

/// The action `name` of a flow message.
pub(super) const NAME: &str = "flow";
/// The only message version the platform takes for flows sent this way.
pub const FLOW_MESSAGE_VERSION: &str = "3";
/// Longest button text that opens the flow.
pub const MAX_FLOW_CTA_CHARS: usize = 20;
/// Longest flow token.
pub const MAX_FLOW_TOKEN_CHARS: usize = 256;
/// Longest flow id, flow name or screen name kept (the platform's are far shorter).
pub const MAX_FLOW_REF_CHARS: usize = 200;

/// `flow_action`: open a screen (`navigate`) or ask the business's endpoint for the first
/// one (`data_exchange`).
pub const FLOW_ACTIONS: [&str; 2] = ["navigate", "data_exchange"];
/// `mode`: the published flow, or its draft (for testing).
pub const FLOW_MODES: [&str; 2] = ["published", "draft"];

/// `flow_action_payload`: the first screen and the data it starts with (navigate only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowActionPayload {
    /// The screen the flow opens on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screen: Option<String>,
    /// The screen's initial data, a non-empty object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// The platform's `parameters` of a flow action, in its order (also the stored JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowParameters {
    /// Always "3".
    pub flow_message_version: String,
    /// Opaque; comes back in the customer's submission.
    pub flow_token: String,
    /// The flow's id (exactly one of flow_id and flow_name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_id: Option<String>,
    /// The flow's name (exactly one of flow_id and flow_name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_name: Option<String>,
    /// The button text.
    pub flow_cta: String,
    /// `published` or `draft`.
    #[serde(default = "published")]
    pub mode: String,
    /// `navigate` or `data_exchange`.
    #[serde(default = "navigate")]
    pub flow_action: String,
    /// For navigate: the first screen and its data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_action_payload: Option<FlowActionPayload>,
}

fn published() -> String {
    "published".into()
}

fn navigate() -> String {
    "navigate".into()
}

/// The action of a `flow` message (the name is always `flow`, so it is not held).
#[derive(Debug, Clone, PartialEq)]
pub struct FlowAction {
    /// What opens which flow, and where.
    pub parameters: FlowParameters,
}

impl FlowAction {
    pub(super) fn validate(&self) -> Result<(), RichError> {
        let p = &self.parameters;
        if p.flow_message_version != FLOW_MESSAGE_VERSION {
            return Err(err(
                "flow_message_version",
                format!("must be \"{FLOW_MESSAGE_VERSION}\""),
            ));
        }
        match (&p.flow_id, &p.flow_name) {
            (Some(_), Some(_)) => {
                return Err(err(
                    "flow_name",
                    "and `flow_id` were both given; give exactly one",
                ));
            }
            (None, None) => return Err(err("flow_id", "or `flow_name` is required for a flow")),
            (Some(id), None) => text("flow_id", id, MAX_FLOW_REF_CHARS, TextKind::Plain)?,
            (None, Some(name)) => text("flow_name", name, MAX_FLOW_REF_CHARS, TextKind::Plain)?,
        }
        text("flow_cta", &p.flow_cta, MAX_FLOW_CTA_CHARS, TextKind::Plain)?;
        if let Some(c) = p.flow_cta.chars().find(|c| is_emoji(*c)) {
            return Err(err(
                "flow_cta",
                format!(
                    "contains the emoji {c} (U+{:04X}); the platform takes no emoji in a flow's button text",
                    c as u32
                ),
            ));
        }
        check_token("flow_token", &p.flow_token)?;
        if !FLOW_MODES.contains(&p.mode.as_str()) {
            return Err(err(
                "mode",
                format!("is {}; use published or draft", shown(&p.mode)),
            ));
        }
        let payload = p.flow_action_payload.as_ref();
        match p.flow_action.as_str() {
            "navigate" => {
                let screen = payload
                    .and_then(|x| x.screen.as_deref())
                    .ok_or_else(|| err("screen", "is required when flow_action is navigate"))?;
                text("screen", screen, MAX_FLOW_REF_CHARS, TextKind::Plain)?;
                if let Some(data) = payload.and_then(|x| x.data.as_ref()) {
                    check_data("data", data)?;
                }
            }
            "data_exchange" => {
                // The business's endpoint chooses the first screen and its data.
                if payload.is_some_and(|x| x.screen.is_some()) {
                    return Err(err(
                        "screen",
                        "belongs to flow_action navigate; with data_exchange the flow's endpoint chooses the first screen",
                    ));
                }
                if payload.is_some_and(|x| x.data.is_some()) {
                    return Err(err(
                        "data",
                        "belongs to flow_action navigate; with data_exchange the flow's endpoint supplies the data",
                    ));
                }
            }
            other => {
                return Err(err(
                    "flow_action",
                    format!("is {}; use navigate or data_exchange", shown(other)),
                ));
            }
        }
        Ok(())
    }
}

/// A flow token: 1 to 256 printable characters (no control character, not blank).
pub fn check_token(field: &str, token: &str) -> Result<(), RichError> {
    text(field, token, MAX_FLOW_TOKEN_CHARS, TextKind::Plain)?;
    if token.chars().any(char::is_control) {
        return Err(err(field, "must be printable characters only"));
    }
    Ok(())
}

/// Flow data: a non-empty JSON object.
pub fn check_data(field: &str, data: &Value) -> Result<(), RichError> {
    match data.as_object() {
        Some(o) if !o.is_empty() => Ok(()),
        _ => Err(err(field, "must be a non-empty JSON object")),
    }
}

/// Whether `c` is an emoji or a part of one (pictographs, symbols shown as emoji,
/// regional indicators, the variation selector and the joiner that build them).
pub fn is_emoji(c: char) -> bool {
    matches!(c as u32,
        0x1F000..=0x1FAFF
        | 0x2600..=0x27BF
        | 0x2300..=0x23FF
        | 0x2B00..=0x2BFF
        | 0x2190..=0x21FF
        | 0x3030 | 0x303D | 0x3297 | 0x3299
        | 0xFE0F | 0x200D | 0x20E3
        | 0xE0020..=0xE007F)
}

/// What a customer's flow submission says: its `response_json` read.
#[derive(Debug, Clone, PartialEq)]
pub struct Submission {
    /// The answers: the parsed object, or `{"raw": text}` when it was not a JSON object.
    pub response: Map<String, Value>,
    /// True when `response_json` was not a JSON object (kept raw, never dropped).
    pub parse_error: bool,
    /// The `flow_token` the response carries, when it is a non-empty string.
    pub flow_token: Option<String>,
}

/// Reads a submission's `response_json`. Pure and total: text that is not a JSON object is
/// kept as `{"raw": text}` with `parse_error`, so nothing a customer sends is lost.
pub fn read_submission(response_json: Option<&Value>) -> Submission {
    let raw = match response_json {
        Some(Value::String(s)) => s.clone(),
        // Already an object (a platform that sends it unquoted): taken as it is.
        Some(Value::Object(o)) => return submission_of(o.clone()),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    };
    match serde_json::from_str::<Value>(&raw) {
        Ok(Value::Object(o)) => submission_of(o),
        _ => {
            let mut response = Map::new();
            response.insert("raw".into(), Value::String(raw));
            Submission {
                response,
                parse_error: true,
                flow_token: None,
            }
        }
    }
}

fn submission_of(response: Map<String, Value>) -> Submission {
    let flow_token = response
        .get("flow_token")
        .and_then(Value::as_str)
        .filter(|t| !t.trim().is_empty())
        .map(|t| t.chars().take(MAX_FLOW_TOKEN_CHARS).collect());
    Submission {
        response,
        parse_error: false,
        flow_token,
    }
}

#[cfg(test)]
#[path = "flow_tests.rs"]
mod tests;
