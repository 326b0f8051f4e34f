//! list_conversations: a channel's conversations page by page, archived ones left out,
//! filtered by the state of their care window. Never writes.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use warden_rules::window::{EXPIRING_SOON, WindowState};
use warden_store::models::Conversation;
use warden_store::schema::conversations;

use super::ConversationView;
use crate::{Core, CoreError};

/// Which conversations a page lists, by their stored window (`window_expires_at`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WindowFilter {
    #[default]
    All,
    /// The window is open.
    Open,
    /// The window is closed, or never opened.
    Closed,
    /// Open and closing within [`EXPIRING_SOON`]: reply before it closes.
    ExpiringSoon,
}

/// A listed conversation and the stored key of the sender (number) it is with.
#[derive(Clone, Debug, PartialEq)]
pub struct Listed {
    pub view: ConversationView,
    pub sender: String,
}

/// One page of conversations and how many match in all.
#[derive(Clone, Debug, PartialEq)]
pub struct ConversationsPage {
    pub conversations: Vec<Listed>,
    /// Every conversation the filter matches, not only this page's.
    pub total: i64,
}

/// At most `limit` conversations on `channel` (with the sender stored as `sender`, or
/// every sender's in the core's reach) from `offset`, oldest first (created_at,
/// then id, so pages never overlap), not archived, matching `filter` at `now`. Each row's
/// window state is computed at `now` from its last inbound message; `window_expires_at`
/// falls back to the stored one when the customer never wrote.
pub async fn list(
    core: &Core,
    channel: &str,
    sender: Option<&str>,
    filter: WindowFilter,
    limit: i64,
    offset: i64,
    now: DateTime<Utc>,
) -> Result<ConversationsPage, CoreError> {
    let soon = now + EXPIRING_SOON;
    let only = core.keys_to_read(sender);
    let query = || {
        let mut q = conversations::table
            .filter(conversations::channel.eq(channel))
            .filter(conversations::archived_at.is_null())
            .into_boxed();
        if let Some(keys) = &only {
            q = q.filter(conversations::sender_id.eq_any(keys.clone()));
        }
        match filter {
            WindowFilter::All => q,
            WindowFilter::Open => q.filter(conversations::window_expires_at.gt(now)),
            WindowFilter::Closed => q.filter(
                conversations::window_expires_at
                    .is_null()
                    .or(conversations::window_expires_at.le(now)),
            ),
            WindowFilter::ExpiringSoon => q
                .filter(conversations::window_expires_at.gt(now))
                .filter(conversations::window_expires_at.le(soon)),
        }
    };
    let mut conn = core.pg().get().await?;
    let total: i64 = query().count().get_result(&mut conn).await?;
    let rows: Vec<Conversation> = query()
        .order((conversations::created_at.asc(), conversations::id.asc()))
        .limit(limit)
        .offset(offset)
        .select(Conversation::as_select())
        .load(&mut conn)
        .await?;
    let conversations = rows
        .into_iter()
        .map(|c| {
            let state = WindowState::at(c.last_inbound_at, now);
            let view = ConversationView {
                id: Some(c.id),
                customer_id: c.customer_phone,
                channel: c.channel,
                window_open: state.open,
                time_remaining_secs: state.time_remaining_secs,
                conversation_type: c.conversation_type,
                last_inbound_at: c.last_inbound_at,
                last_outbound_at: c.last_outbound_at,
                window_expires_at: state.expires_at.or(c.window_expires_at),
                archived: false,
            };
            Listed {
                view,
                sender: c.sender_id,
            }
        })
        .collect();
    Ok(ConversationsPage {
        conversations,
        total,
    })
}
