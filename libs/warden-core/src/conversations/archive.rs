//! archive_chat: a conversation whose care window is closed leaves the conversation list
//! until the customer writes again.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use futures::FutureExt;
use serde_json::json;
use uuid::Uuid;
use warden_rules::window::WindowState;
use warden_store::DbError;
use warden_store::models::Conversation;
use warden_store::schema::conversations;
use warden_store::tx::{Abort, TxError, transact};

use crate::Core;

/// Why a conversation was not archived. Nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("no conversation with id {0}")]
    NotFound(Uuid),
    /// The care window is still open: archiving would hide a live conversation.
    #[error("the care window is open for {remaining_secs} more seconds")]
    WindowOpen {
        remaining_secs: i64,
        expires_at: Option<DateTime<Utc>>,
    },
    #[error(transparent)]
    Db(#[from] DbError),
}

impl From<TxError<ArchiveError>> for ArchiveError {
    fn from(e: TxError<ArchiveError>) -> Self {
        match e {
            TxError::App(e) => e,
            TxError::Db(e) => e.into(),
        }
    }
}

/// A conversation archived by this call, or found archived already.
#[derive(Debug, Clone)]
pub struct Archived {
    pub conversation: Conversation,
    /// It was archived before this call (nothing changed).
    pub already: bool,
}

impl Core {
    /// archive_chat: archive a conversation whose care window is closed (or never opened),
    /// with its audit row; archiving twice changes nothing. The cached window goes, so the
    /// next read comes from Postgres.
    pub async fn archive_conversation(&self, id: Uuid) -> Result<Archived, ArchiveError> {
        let actor = self.actor();
        let reach = self.reach().clone();
        let archived = transact(self.pg(), "archive_chat", move |c| {
            let reach = reach.clone();
            async move {
                let Some(current) = conversations::table
                    .find(id)
                    .select(Conversation::as_select())
                    .for_update()
                    .first(c)
                    .await
                    .optional()?
                else {
                    return Err(Abort::App(ArchiveError::NotFound(id)));
                };
                // Another business's conversation answers as one that does not exist.
                if !reach.covers(&current.sender_id) {
                    return Err(Abort::App(ArchiveError::NotFound(id)));
                }
                let now = Utc::now();
                let window = WindowState::at(current.last_inbound_at, now);
                if window.open {
                    return Err(Abort::App(ArchiveError::WindowOpen {
                        remaining_secs: window.time_remaining_secs,
                        expires_at: window.expires_at,
                    }));
                }
                if current.archived_at.is_some() {
                    return Ok(Archived {
                        conversation: current,
                        already: true,
                    });
                }
                let row = diesel::update(conversations::table.find(id))
                    .set((
                        conversations::archived_at.eq(now),
                        conversations::updated_at.eq(now),
                    ))
                    .returning(Conversation::as_returning())
                    .get_result(c)
                    .await?;
                warden_store::audit::record(
                    c,
                    actor,
                    "conversation_archived",
                    "conversation",
                    &id.to_string(),
                    json!({"customer": row.customer_phone, "from_type": row.conversation_type, "channel": row.channel}),
                )
                .await?;
                Ok(Archived {
                    conversation: row,
                    already: false,
                })
            }
            .boxed()
        })
        .await?;
        if !archived.already {
            let c = &archived.conversation;
            self.windows()
                .forget(&c.customer_phone, &c.channel, &c.sender_id)
                .await;
        }
        Ok(archived)
    }
}
