//! The messages a rich message refers to: the one it quotes (`reply_to`, sent as
//! `context.message_id`) and the inbound one a reaction is for. Agents name them by our
//! message_id; the platform wants their wamid. Read-only.

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use uuid::Uuid;
use warden_rules::phone::PhoneNumber;
use warden_store::schema::messages;

use crate::{Core, CoreError};

/// (customer, direction, wamid) of a message row, and the stored key of its number.
async fn lookup(
    core: &Core,
    id: Uuid,
) -> Result<((String, String, Option<String>), String), CoreError> {
    let mut conn = core.pg().get().await?;
    let sender = core.admit_message(&mut conn, id).await?;
    let row = messages::table
        .find(id)
        .select((
            messages::customer_phone,
            messages::direction,
            messages::wamid,
        ))
        .first(&mut conn)
        .await
        .optional()?
        .ok_or_else(|| CoreError::NotFound(format!("there is no message with id {id}")))?;
    Ok((row, sender))
}

impl Core {
    /// The wamid of message `id` (ours or the customer's) in the conversation with
    /// `phone`, to quote it. A message of another customer, or one the platform has not
    /// numbered yet (still queued), cannot be quoted.
    pub async fn quoted_wamid(&self, id: Uuid, phone: &PhoneNumber) -> Result<String, CoreError> {
        let ((customer, _, wamid), _) = lookup(self, id).await?;
        if customer != phone.digits() {
            return Err(CoreError::InvalidArgument(format!(
                "reply_to: message {id} belongs to another customer's conversation"
            )));
        }
        wamid.ok_or_else(|| {
            CoreError::InvalidArgument(format!(
                "reply_to: message {id} has no platform id yet (not sent); quote it once it is sent"
            ))
        })
    }

    /// The customer and wamid of inbound message `id`, to react to it, and the stored key
    /// of the number it arrived at (the reaction goes out from it).
    pub async fn reaction_target(
        &self,
        id: Uuid,
    ) -> Result<(PhoneNumber, String, String), CoreError> {
        let ((customer, direction, wamid), sender) = lookup(self, id).await?;
        if direction != "inbound" {
            return Err(CoreError::InvalidArgument(format!(
                "message_id: {id} is a message we sent; reactions go to the customer's (inbound) messages"
            )));
        }
        let phone = warden_rules::bsuid::customer_key(&customer)
            .map_err(|e| CoreError::InvalidArgument(e.to_string()))?;
        let wamid = wamid.ok_or_else(|| {
            CoreError::InvalidArgument(format!("message_id: {id} has no platform id"))
        })?;
        Ok((phone, wamid, sender))
    }
}
