//! The values a carousel or limited-time offer template takes at send time, shared by
//! send_template, schedule_campaign and preview_campaign: each becomes the platform's
//! component (`carousel`, `limited_time_offer`), checked against the template by the core.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use warden_rules::template_params::formats::{carousel_component, code_component, offer_component};

use crate::error::{ToolError, ToolResult};
use crate::input::fields::{Json, Text, Timestamp};
use crate::quoting::detail;

/// A carousel's cards and an offer's expiry.
#[derive(Deserialize, JsonSchema)]
pub struct FormatValuesIn {
    /// For a carousel template (required there, refused otherwise): JSON array (as a string) with one entry per card, in card order: {"header": {"link": "https://..."} or {"id": "<media id>"} (the card's IMAGE or VIDEO), "variables": ["..."] (the card body's {{1}}, ... if it has any), "buttons": [{"payload": "..."} for a QUICK_REPLY or {"text": "..."} for a URL ending in {{1}}, by button index; null for a button that takes nothing]}.
    pub cards: Option<Json>,
    /// For a limited-time offer template created with has_expiration (required there, refused otherwise): when the offer ends, RFC 3339 in the future, e.g. "2030-01-31T23:59:00Z".
    pub offer_expires_at: Option<Timestamp>,
}

impl FormatValuesIn {
    /// The components these values make (none when none is given); `now` judges the expiry.
    pub fn components(&self, now: DateTime<Utc>) -> ToolResult<Vec<Value>> {
        let mut out = Vec::new();
        if let Some(Json(cards)) = &self.cards {
            if !cards.is_array() {
                return Err(ToolError::invalid(
                    "The parameter `cards` must be a JSON array with one entry per card of the template.",
                    "Pass cards like [{\"header\": {\"link\": \"https://...\"}}, {\"header\": {\"link\": \"https://...\"}}].",
                ));
            }
            out.push(carousel_component(cards));
        }
        if let Some(Timestamp(at)) = self.offer_expires_at {
            if at <= now {
                return Err(ToolError::invalid(
                    format!(
                        "The parameter `offer_expires_at` ({}) is not in the future; an offer's countdown runs to a time still to come.",
                        at.to_rfc3339()
                    ),
                    "Pass offer_expires_at as an RFC 3339 time in the future, e.g. 2030-01-31T23:59:00Z.",
                ));
            }
            out.push(offer_component(at.timestamp_millis()));
        }
        Ok(out)
    }
}

/// send_template's `code`: the authentication code (1 to 15 characters).
pub fn code_components(code: &Option<Text>) -> ToolResult<Vec<Value>> {
    let Some(Text(code)) = code else {
        return Ok(Vec::new());
    };
    warden_rules::template_params::formats::check_code(code).map_err(|e| {
        ToolError::invalid(
            format!("The parameter `code` is not usable: {}.", detail(e)),
            "Pass code as the one-time code itself, 1 to 15 characters, e.g. \"493021\".",
        )
    })?;
    Ok(vec![code_component(code)])
}
