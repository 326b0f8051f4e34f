//! Message echoes: what a person sent, edited or revoked from the WhatsApp Business app on
//! a number Warden shares with it (coexistence, the platform's `smb_message_echoes`).
//!
//! An echo is stored in the history as an outbound message `sent_by: "business_app"`
//! (an edit or a revoke as a row of its own that the history applies to the message it
//! names, as for the customer's own edits). It is the business speaking, not the customer:
//! it never opens or extends the care window, is never read for STOP keywords, is not
//! counted against caps or the messaging limit and costs nothing (the platform bills
//! none). What it does change is the holder: the person holds the conversation until
//! `HUMAN_TAKEOVER_TTL` after their last echo ([`super::holder`]).

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;
use warden_rules::holder::HolderKind;
use warden_rules::phone::PhoneNumber;
use warden_settings::StoreKeys;
use warden_store::schema::{message_actors, message_senders, messages};

use super::holder::{self, Change, Changed};

/// Who the history names as the author of an echo.
pub const BUSINESS_APP: &str = "business_app";

/// One echo of a webhook batch.
pub struct Echo<'a> {
    /// The customer it went to (their key).
    pub phone: &'a PhoneNumber,
    pub wamid: &'a str,
    /// `text`, `image`, ..., or `edit` / `revoke` of an earlier echo.
    pub message_type: &'a str,
    /// The echo as received (NUL-free).
    pub content: &'a Value,
    /// The echo's own platform time (plausible), else when it arrived.
    pub at: DateTime<Utc>,
}

/// Store one echo sent from the number stored as `keys.sender` on `channel`, and make the
/// person its conversation's holder until `at + ttl` (a later echo holds it for longer).
/// A replayed echo (its wamid already stored) stores nothing again but still holds the
/// conversation. Returns the holder change.
pub async fn record(
    c: &mut AsyncPgConnection,
    channel: &str,
    keys: &StoreKeys,
    echo: &Echo<'_>,
    ttl: chrono::TimeDelta,
    actor: &str,
    now: DateTime<Utc>,
) -> QueryResult<Changed> {
    crate::customers::ensure(c, echo.phone).await?;
    let id = Uuid::now_v7();
    let stored: Option<Uuid> = diesel::insert_into(messages::table)
        .values((
            messages::id.eq(id),
            messages::customer_phone.eq(echo.phone.digits()),
            messages::channel.eq(channel),
            messages::direction.eq("outbound"),
            messages::message_type.eq(echo.message_type),
            // Not a message of ours to count or bill: `service` never meets a cap.
            messages::category.eq("service"),
            messages::status.eq("sent"),
            messages::content.eq(echo.content),
            messages::wamid.eq(echo.wamid),
            messages::sent_at.eq(echo.at),
        ))
        .on_conflict_do_nothing()
        .returning(messages::id)
        .get_result(c)
        .await
        .optional()?;
    if let Some(id) = stored {
        diesel::insert_into(message_actors::table)
            .values((
                message_actors::message_id.eq(id),
                message_actors::actor.eq(BUSINESS_APP),
            ))
            .on_conflict_do_nothing()
            .execute(c)
            .await?;
        if !crate::senders::is_default_key(&keys.sender) {
            diesel::insert_into(message_senders::table)
                .values((
                    message_senders::message_id.eq(id),
                    message_senders::sender_id.eq(&keys.sender),
                    message_senders::business.eq(&keys.business),
                ))
                .on_conflict_do_nothing()
                .execute(c)
                .await?;
        }
    }
    // An old echo (a replay from the platform's retries) holds nothing past its own end.
    let until = echo.at + ttl;
    let change = Change {
        to: HolderKind::Human,
        until: Some(until),
        by: BUSINESS_APP,
        reason: "a reply from the WhatsApp Business app (message echo)",
        actor,
    };
    if until <= now {
        // Already over: record nothing that would say a person holds it now.
        let now_held = holder_now(c, channel, &keys.sender, echo.phone, now).await?;
        return Ok(Changed {
            from: now_held.clone(),
            to: now_held,
        });
    }
    holder::set(c, echo.phone, channel, &keys.sender, &change, now).await
}

async fn holder_now(
    c: &mut AsyncPgConnection,
    channel: &str,
    sender: &str,
    phone: &PhoneNumber,
    now: DateTime<Utc>,
) -> QueryResult<warden_rules::holder::Holder> {
    let conv = super::find(c, phone.digits(), channel, sender).await?;
    Ok(holder::of(conv.as_ref(), now))
}
