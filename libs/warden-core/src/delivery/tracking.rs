//! get_delivery_status: one message as its sender tracks it — where it is
//! ([`public_status`]), why it failed ([`ErrorInfo`], explained even when only the code was
//! stored), who asked for it and what the platform charged. Never writes.

use chrono::{DateTime, Utc};
use diesel_async::AsyncPgConnection;
use uuid::Uuid;
use warden_store::models::{Message, message_status};

use super::knowledge::{self, ErrorInfo};
use crate::account::pricing::{self, MessageCharge};
use crate::account::rate_card;
use crate::send::attribution;
use crate::{Core, CoreError};

/// The suggested action of a failure stored with its explanation but without one.
const NO_STORED_ACTION: &str = "Use explain_error with the code for what to do next.";
/// The currency reported when no rate card is installed.
const FALLBACK_CURRENCY: &str = "USD";

/// Statuses agents see: the dispatcher's internal `sending` claim is still `queued` to them.
pub fn public_status(status: &str) -> &str {
    match status {
        "sending" => "queued",
        other => other,
    }
}

/// One message's delivery as get_delivery_status reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct DeliveryStatus {
    pub message_id: Uuid,
    /// The customer key (`messages.customer_phone`).
    pub customer_id: String,
    pub channel: String,
    /// `inbound` or `outbound`.
    pub direction: String,
    pub message_type: String,
    /// As agents see it ([`public_status`]): scheduled, queued, sent, delivered, read,
    /// failed (or received).
    pub status: String,
    pub retry_count: i32,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub deliver_at: Option<DateTime<Utc>>,
    pub template_name: Option<String>,
    pub campaign_id: Option<Uuid>,
    /// Present when the message failed.
    pub error: Option<ErrorInfo>,
    /// Who asked for it; `None` for inbound messages and those older than attribution.
    pub sent_by: Option<String>,
    /// What the platform reported it cost; `None` until it reported pricing.
    pub pricing: Option<MessagePricing>,
    /// The stored key of the number it was sent from (or, inbound, to).
    pub sender: String,
}

/// The platform's reported pricing of one message, with the currency of its amount.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MessagePricing {
    pub charge: MessageCharge,
    /// The installed rate card's currency (USD when none is installed).
    pub currency: String,
}

/// The delivery status of `message_id`; `None` when there is no such message (the caller
/// words that answer).
pub async fn message_status(
    core: &Core,
    message_id: Uuid,
) -> Result<Option<DeliveryStatus>, CoreError> {
    let mut conn = core.pg().get().await?;
    let Some(m) = Message::find(&mut conn, message_id).await? else {
        return Ok(None);
    };
    // The number it was sent from or to: named in the answer, and in the caller's reach.
    let sender = crate::customers::consent::sender_of_message(&mut conn, m.id).await?;
    if core
        .admit(format_args!("message {}", m.id), [sender.as_str()])
        .is_err()
    {
        return Ok(None);
    }
    let error = if m.status == message_status::FAILED {
        Some(error_of(&mut conn, &m).await?)
    } else {
        None
    };
    let sent_by = attribution::sent_by(&mut conn, &[m.id])
        .await?
        .remove(&m.id);
    let charge = pricing::charge_of(&mut conn, m.id).await?;
    drop(conn);
    let pricing = match charge {
        Some(charge) => Some(MessagePricing {
            charge,
            currency: rate_card::installed_currency(core.pg())
                .await
                .unwrap_or_else(|| FALLBACK_CURRENCY.to_owned()),
        }),
        None => None,
    };
    Ok(Some(DeliveryStatus {
        message_id: m.id,
        customer_id: m.customer_phone,
        channel: m.channel,
        direction: m.direction,
        message_type: m.message_type,
        status: public_status(&m.status).to_string(),
        retry_count: m.retry_count,
        created_at: m.created_at,
        updated_at: m.updated_at,
        deliver_at: m.deliver_at,
        template_name: m.template_name,
        campaign_id: m.campaign_id,
        error,
        sent_by,
        pricing,
        sender,
    }))
}

/// The explained error of a failed message: the stored explanation, completed from the
/// knowledge base when only the code was stored (code 0 when none was).
async fn error_of(conn: &mut AsyncPgConnection, m: &Message) -> Result<ErrorInfo, CoreError> {
    let code = m.error_code.unwrap_or(0);
    if let (Some(category), Some(explanation)) = (&m.error_category, &m.error_explanation) {
        return Ok(ErrorInfo {
            code,
            category: category.clone(),
            can_retry: m.error_can_retry.unwrap_or(false),
            human_explanation: explanation.clone(),
            suggested_action: m
                .error_suggested_action
                .clone()
                .unwrap_or_else(|| NO_STORED_ACTION.into()),
        });
    }
    let e = knowledge::explain(conn, code).await?;
    Ok(ErrorInfo {
        code,
        category: m.error_category.clone().unwrap_or(e.category),
        can_retry: m.error_can_retry.unwrap_or(e.can_retry),
        human_explanation: e.human_explanation,
        suggested_action: e.suggested_action,
    })
}
