//! Read receipts (`mark_as_read`): which inbound message the platform is told about, and
//! its status once told. The platform call itself is the caller's (the gateway holds the
//! platform client): [`Core::read_target`], then the call, then [`Core::record_read`], so a
//! message is `read` only after the platform accepted the receipt.

use chrono::Utc;
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use futures::FutureExt;
use uuid::Uuid;
use warden_store::schema::messages;
use warden_store::tx::{Abort, transact};

use crate::{Core, CoreError};

/// The inbound message a receipt is for.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadTarget {
    pub message_id: Uuid,
    /// What the platform knows the message by.
    pub wamid: String,
    pub customer_phone: String,
    /// The stored key of the number it arrived at (the receipt goes out from it).
    pub sender: String,
}

impl Core {
    /// The inbound message `id`: `NotFound` when there is none, `InvalidArgument` when it
    /// is one of ours (only a customer's message can be marked read).
    pub async fn read_target(&self, id: Uuid) -> Result<ReadTarget, CoreError> {
        let mut c = self.pg().get().await?;
        let sender = self.admit_message(&mut c, id).await?;
        let row: Option<(String, Option<String>, String)> = messages::table
            .filter(messages::id.eq(id))
            .select((
                messages::direction,
                messages::wamid,
                messages::customer_phone,
            ))
            .first(&mut c)
            .await
            .optional()?;
        match row {
            None => Err(CoreError::NotFound(format!(
                "there is no message with id {id}"
            ))),
            Some((direction, _, _)) if direction != "inbound" => {
                Err(CoreError::InvalidArgument(format!(
                    "message_id {id} is an outbound message; only a customer's (inbound) message can be marked read"
                )))
            }
            Some((_, None, _)) => Err(CoreError::InvalidArgument(format!(
                "message_id {id} has no platform id to mark read"
            ))),
            Some((_, Some(wamid), customer_phone)) => Ok(ReadTarget {
                sender,
                message_id: id,
                wamid,
                customer_phone,
            }),
        }
    }

    /// The platform accepted the receipt: the message's status becomes `read` (once;
    /// `read_at` keeps the first time).
    pub async fn record_read(&self, id: Uuid) -> Result<(), CoreError> {
        transact(self.pg(), "mark_as_read", move |c| {
            async move {
                let now = Utc::now();
                diesel::update(
                    messages::table
                        .filter(messages::id.eq(id))
                        .filter(messages::direction.eq("inbound")),
                )
                .set((
                    messages::status.eq("read"),
                    messages::read_at.eq(diesel::dsl::sql::<
                        diesel::sql_types::Nullable<diesel::sql_types::Timestamptz>,
                    >("COALESCE(read_at, now())")),
                    messages::updated_at.eq(now),
                ))
                .execute(c)
                .await?;
                Ok::<_, Abort<CoreError>>(())
            }
            .boxed()
        })
        .await?;
        Ok(())
    }
}
