//! A campaign recipient's send: a template message through the one send path
//! ([`Core::send`]), refusals recorded on the recipient's message; a chunk of recipients
//! through the batched path ([`Core::send_batch`], the same decisions, one transaction per
//! chunk), which the scheduler's fan-out uses.

use uuid::Uuid;
use warden_rules::kinds::MessageType;
use warden_rules::phone::PhoneNumber;

use crate::send::batch::{Batch, BatchOutcome};
use crate::{Core, RefusalMode, SendError, SendKind, SendRequest, TemplateSend};

/// What every recipient's send of one campaign shares.
#[derive(Debug, Clone)]
pub struct RecipientPlan {
    pub campaign_id: Uuid,
    pub template_name: String,
    pub locale: String,
    pub variables: Vec<String>,
    /// Header, named body and button parameters (platform shape).
    pub components: Vec<serde_json::Value>,
    /// The senders (stored keys) it goes out from: one, or several numbers of one business
    /// among which each customer always gets the same ([`sender_for`]). Empty: the default.
    pub senders: Vec<String>,
}

/// Which of `senders` a customer gets: the same one every time for the same list (FNV-1a
/// of the customer's key, stable across processes and releases).
pub fn sender_for<'a>(senders: &'a [String], phone: &PhoneNumber) -> Option<&'a str> {
    if senders.is_empty() {
        return None;
    }
    let hash = phone
        .digits()
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        });
    let index = usize::try_from(hash % senders.len() as u64).unwrap_or(0);
    Some(senders[index].as_str())
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
    /// Not attempted: after the campaign paused in the same chunk, or given a message of
    /// the campaign already by another run of the page (the page is read again).
    NotAttempted,
}

impl RecipientPlan {
    /// The template every recipient is sent.
    // Every field is set today; the update keeps this literal as it is when a field is added.
    #[allow(clippy::needless_update)]
    fn template(&self) -> TemplateSend {
        TemplateSend {
            name: self.template_name.clone(),
            locale: self.locale.clone(),
            variables: self.variables.clone(),
            components: self.components.clone(),
            ..Default::default()
        }
    }

    /// The send request of one recipient.
    pub fn request(&self, phone: PhoneNumber, actor: &'static str) -> SendRequest {
        let sender = sender_for(&self.senders, &phone).map(str::to_string);
        SendRequest {
            phone,
            channel: warden_settings::DEFAULT_CHANNEL.to_string(),
            kind: SendKind::Template(self.template()),
            message_type: MessageType::Template,
            campaign_id: Some(self.campaign_id),
            existing_message_id: None,
            refusal: RefusalMode::RecordFailed,
            actor,
            sender,
        }
    }
}

impl RecipientPlan {
    /// The batch of a chunk of recipients, each from its sender ([`sender_for`]).
    pub fn batch(&self, phones: Vec<PhoneNumber>, actor: &'static str) -> Batch {
        let recipients = phones
            .into_iter()
            .map(|phone| {
                let sender = sender_for(&self.senders, &phone).map(str::to_string);
                (phone, sender)
            })
            .collect();
        Batch {
            channel: warden_settings::DEFAULT_CHANNEL.to_string(),
            kind: SendKind::Template(self.template()),
            message_type: MessageType::Template,
            campaign_id: Some(self.campaign_id),
            actor,
            recipients,
        }
    }
}

/// Send a chunk of recipients (distinct customers) through the batched send path
/// ([`Core::send_batch`]): one outcome per recipient, in order.
pub async fn send_chunk(
    core: &Core,
    plan: &RecipientPlan,
    phones: Vec<PhoneNumber>,
) -> Vec<RecipientOutcome> {
    let outcomes = core.send_batch(plan.batch(phones, core.actor())).await;
    outcomes
        .into_iter()
        .map(|o| match o {
            BatchOutcome::Enqueued {
                message_id,
                published,
            } => RecipientOutcome::Enqueued {
                message_id,
                published,
            },
            BatchOutcome::Refused { .. } => RecipientOutcome::Refused,
            BatchOutcome::Held { message_id, .. } => RecipientOutcome::Held { message_id },
            BatchOutcome::CampaignPaused(_) => RecipientOutcome::CampaignPaused,
            BatchOutcome::NotAttempted => RecipientOutcome::NotAttempted,
            BatchOutcome::Error {
                code: "UNAVAILABLE",
                message,
            } => {
                tracing::warn!(campaign_id = %plan.campaign_id, reason = message, "campaign send not possible now");
                RecipientOutcome::Unavailable
            }
            BatchOutcome::Error { code, message } => {
                tracing::warn!(campaign_id = %plan.campaign_id, error = message, code, "campaign recipient not sent");
                RecipientOutcome::Error
            }
        })
        .collect()
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
