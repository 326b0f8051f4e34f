//! Thread control under conversation routing: `POST /{phone-number-id}/thread_control`
//! with `action` `pass` (to the escalation partner, or with `control_pass.target_role:
//! "ai_agent"` to the platform's AI agent), `release` (back to routing by entry point) or
//! `take` (the escalation partner only; else error 2494191).

use reqwest::Method;
use serde::{Deserialize, Serialize};

use crate::client::PlatformClient;
use crate::error::PlatformError;

/// What to do with the thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ThreadAction {
    Pass,
    Release,
    Take,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ControlPass {
    pub target_role: String,
}

/// The request body.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ThreadControlRequest {
    pub messaging_product: &'static str,
    /// The customer's phone number; a BSUID goes in `recipient`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recipient: Option<String>,
    pub action: ThreadAction,
    /// Handed to the new owner (at most 2,000 characters).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control_pass: Option<ControlPass>,
}

impl ThreadControlRequest {
    /// `action` on the thread with the customer `to` (phone digits) or `recipient` (BSUID).
    pub fn new(action: ThreadAction, to: Option<String>, recipient: Option<String>) -> Self {
        ThreadControlRequest {
            messaging_product: "whatsapp",
            to,
            recipient,
            action,
            metadata: None,
            control_pass: None,
        }
    }
}

/// The platform's answer (only that it took the call matters).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct ThreadControlResponse {
    #[serde(default)]
    pub messaging_product: Option<String>,
}

impl PlatformClient {
    /// `POST /{phone-number-id}/thread_control`.
    pub async fn thread_control(
        &self,
        req: &ThreadControlRequest,
    ) -> Result<ThreadControlResponse, PlatformError> {
        let url = self.url(&[&self.config().phone_number_id, "thread_control"], &[])?;
        self.call(Method::POST, url, Some(req)).await
    }
}
