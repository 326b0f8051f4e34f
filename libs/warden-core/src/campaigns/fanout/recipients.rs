//! A campaign recipient's send: a template message through the one send path
//! ([`Core::send`]), refusals recorded on the recipient's message.

use uuid::Uuid;
use warden_rules::kinds::MessageType;
use warden_rules::phone::PhoneNumber;

use crate::{Core, RefusalMode, SendError, SendKind, SendRequest};

/// What every recipient's send of one campaign shares.
#[derive(Debug, Clone)]
pub struct RecipientPlan {
    pub campaign_id: Uuid,
    pub template_name: String,
    pub locale: String,
    pub variables: Vec<String>,
    /// Header, named body and button parameters (platform shape).
    pub components: Vec<serde_json::Value>,
}

/// What one recipient's send came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecipientOutcome {
    /// Accepted (`queued`), and whether `Core::send` published it already.
    Enqueued { message_id: Uuid, published: bool },
    /// Refused by compliance or policy (recorded `failed` with the reason).
    Refused,
    /// Refused by a rule that lifts by itself: recorded `scheduled` until it lifts.
    Held { message_id: Uuid },
    /// The portfolio messaging limit is reached: nothing recorded, the campaign is paused.
    CampaignPaused,
    /// Not sendable for another reason (logged; nothing recorded).
    Error,
    /// The database could not take it now: the fan-out should stop and retry later.
    Unavailable,
}

impl RecipientPlan {
    /// The send request of one recipient.
    pub fn request(&self, phone: PhoneNumber, actor: &'static str) -> SendRequest {
        SendRequest {
            phone,
            channel: warden_settings::DEFAULT_CHANNEL.to_string(),
            kind: SendKind::Template {
                name: self.template_name.clone(),
                locale: self.locale.clone(),
                variables: self.variables.clone(),
                components: self.components.clone(),
            },
            message_type: MessageType::Template,
            campaign_id: Some(self.campaign_id),
            existing_message_id: None,
            refusal: RefusalMode::RecordFailed,
            actor,
        }
    }
}

/// Send one recipient through the one send path ([`Core::send`], which records it and,
/// when `core` has a stream, publishes it).
pub async fn send_recipient(
    core: &Core,
    plan: &RecipientPlan,
    phone: PhoneNumber,
) -> RecipientOutcome {
    let digits = phone.digits().to_string();
    match core.send(plan.request(phone, core.actor())).await {
        Ok(accepted) => RecipientOutcome::Enqueued {
            message_id: accepted.message_id,
            published: accepted.published,
        },
        Err(SendError::RefusedRecorded { .. }) => RecipientOutcome::Refused,
        Err(SendError::Held { message_id, .. }) => RecipientOutcome::Held { message_id },
        Err(SendError::CampaignPaused(_)) => RecipientOutcome::CampaignPaused,
        Err(
            SendError::Unavailable(reason)
            | SendError::Busy {
                message: reason, ..
            },
        ) => {
            tracing::warn!(campaign_id = %plan.campaign_id, customer = digits, %reason, "campaign send not possible now");
            RecipientOutcome::Unavailable
        }
        Err(e) => {
            tracing::warn!(campaign_id = %plan.campaign_id, customer = digits, error = %e, code = e.code(), "campaign recipient not sent");
            RecipientOutcome::Error
        }
    }
}
