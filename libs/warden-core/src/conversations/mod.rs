//! Care-window state. Postgres is the truth; Redis holds a copy per customer and channel
//! whose TTL is the time left in the window. Cache writes go through a script that never
//! replaces a newer window with an older one, so the cache cannot fall behind Postgres.
//!
//! In this folder: which inbound messages open the window ([`inbound`]) and a webhook
//! batch of them recorded at once ([`inbound_batch`]), what an agent reads (history and
//! inbox, [`view`]; a channel's conversations by window state, [`list`]; one stored message
//! normalised, [`message_view`], and a customer's cart or product question in it,
//! [`order_view`]; the messages a rich message refers to, [`quote`]),
//! [`archive`] and [`read_receipts`]. On a shared number: who holds the conversation
//! ([`holder`]) and what a person sent from the WhatsApp Business app ([`echoes`]).

pub mod archive;
pub mod echoes;
pub mod holder;
pub mod inbound;
pub mod inbound_batch;
pub mod list;
pub mod message_view;
pub mod order_view;
pub mod quote;
pub mod read_receipts;
pub mod view;

use std::sync::Arc;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use chrono::{DateTime, TimeDelta, TimeZone, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde::Serialize;
use uuid::Uuid;
use warden_rules::phone::PhoneNumber;
use warden_rules::window;
use warden_store::models::Conversation;
use warden_store::schema::conversations;

use crate::deps::RedisPool;
use crate::{Core, CoreError};

/// What check_conversation and the compliance engine see.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ConversationView {
    pub id: Option<Uuid>,
    pub customer_id: String,
    pub channel: String,
    pub window_open: bool,
    pub time_remaining_secs: i64,
    pub conversation_type: String,
    pub last_inbound_at: Option<DateTime<Utc>>,
    pub last_outbound_at: Option<DateTime<Utc>>,
    pub window_expires_at: Option<DateTime<Utc>>,
    pub archived: bool,
}

impl ConversationView {
    pub fn from_row(
        row: Option<&Conversation>,
        phone: &str,
        channel: &str,
        now: DateTime<Utc>,
    ) -> Self {
        let last_inbound_at = row.and_then(|c| c.last_inbound_at);
        let state = window::WindowState::at(last_inbound_at, now);
        ConversationView {
            id: row.map(|c| c.id),
            customer_id: phone.to_string(),
            channel: channel.to_string(),
            window_open: state.open,
            time_remaining_secs: state.time_remaining_secs,
            conversation_type: row
                .map(|c| c.conversation_type.clone())
                .unwrap_or_else(|| "service".into()),
            last_inbound_at,
            last_outbound_at: row.and_then(|c| c.last_outbound_at),
            window_expires_at: state.expires_at,
            archived: row.is_some_and(|c| c.archived_at.is_some()),
        }
    }
}

/// The conversation of a customer with one sender (its stored key) on a channel.
pub async fn find(
    mut conn: &AsyncPgConnection,
    phone: &str,
    channel: &str,
    sender: &str,
) -> QueryResult<Option<Conversation>> {
    conversations::table
        .filter(conversations::customer_phone.eq(phone))
        .filter(conversations::channel.eq(channel))
        .filter(conversations::sender_id.eq(sender))
        .select(Conversation::as_select())
        .first(&mut conn)
        .await
        .optional()
}

/// An inbound customer message opens or extends the window from its own timestamp. A late
/// (older) message never shortens it; a new message un-archives the conversation.
/// The customer row must exist (conversations reference it). `sender` is the stored key of
/// the number written to.
pub async fn record_inbound(
    conn: &mut AsyncPgConnection,
    phone: &PhoneNumber,
    channel: &str,
    sender: &str,
    at: DateTime<Utc>,
) -> QueryResult<Conversation> {
    use diesel::upsert::excluded;
    let expires = at + window::CARE_WINDOW;
    diesel::insert_into(conversations::table)
        .values((
            conversations::customer_phone.eq(phone.digits()),
            conversations::channel.eq(channel),
            conversations::sender_id.eq(sender),
            conversations::last_inbound_at.eq(at),
            conversations::window_expires_at.eq(expires),
        ))
        .on_conflict((
            conversations::customer_phone,
            conversations::channel,
            conversations::sender_id,
        ))
        .do_update()
        .set((
            conversations::last_inbound_at.eq(diesel::dsl::sql::<diesel::sql_types::Nullable<diesel::sql_types::Timestamptz>>(
                "GREATEST(conversations.last_inbound_at, excluded.last_inbound_at)",
            )),
            conversations::window_expires_at.eq(diesel::dsl::sql::<diesel::sql_types::Nullable<diesel::sql_types::Timestamptz>>(
                "GREATEST(conversations.window_expires_at, excluded.window_expires_at)",
            )),
            // Only a message newer than the archive re-opens the conversation.
            conversations::archived_at.eq(diesel::dsl::sql::<diesel::sql_types::Nullable<diesel::sql_types::Timestamptz>>(
                "CASE WHEN conversations.archived_at IS NOT NULL AND excluded.last_inbound_at > conversations.archived_at THEN NULL ELSE conversations.archived_at END",
            )),
            conversations::updated_at.eq(excluded(conversations::updated_at)),
        ))
        .returning(Conversation::as_returning())
        .get_result(conn)
        .await
}

/// A business message was sent: last_outbound_at moves (the window does not). Returns the
/// row (None when the customer never wrote) so the caller can refresh the cache.
pub async fn record_outbound(
    conn: &mut AsyncPgConnection,
    phone: &str,
    channel: &str,
    sender: &str,
    at: DateTime<Utc>,
) -> QueryResult<Option<Conversation>> {
    diesel::update(
        conversations::table
            .filter(conversations::customer_phone.eq(phone))
            .filter(conversations::channel.eq(channel))
            .filter(conversations::sender_id.eq(sender)),
    )
    .set((
        conversations::last_outbound_at.eq(diesel::dsl::sql::<
            diesel::sql_types::Nullable<diesel::sql_types::Timestamptz>,
        >("GREATEST(last_outbound_at, ")
        .bind::<diesel::sql_types::Timestamptz, _>(at)
        .sql(")")),
        conversations::updated_at.eq(diesel::dsl::now),
    ))
    .returning(Conversation::as_returning())
    .get_result(conn)
    .await
    .optional()
}

/// The cached part of a conversation.
#[derive(Clone, Debug)]
pub struct CachedWindow {
    pub id: Uuid,
    pub conversation_type: String,
    pub last_inbound_at: DateTime<Utc>,
    pub last_outbound_at: Option<DateTime<Utc>>,
    pub archived: bool,
}

impl CachedWindow {
    pub fn view(&self, phone: &str, channel: &str, now: DateTime<Utc>) -> ConversationView {
        let state = window::WindowState::at(Some(self.last_inbound_at), now);
        ConversationView {
            id: Some(self.id),
            customer_id: phone.to_string(),
            channel: channel.to_string(),
            window_open: state.open,
            time_remaining_secs: state.time_remaining_secs,
            conversation_type: self.conversation_type.clone(),
            last_inbound_at: Some(self.last_inbound_at),
            last_outbound_at: self.last_outbound_at,
            window_expires_at: state.expires_at,
            archived: self.archived,
        }
    }
}

/// Sets the hash only when the stored inbound time is not newer; TTL in milliseconds.
const PUT_SCRIPT: &str = r#"
local current = redis.call('HGET', KEYS[1], 'in')
if current and tonumber(current) > tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'in', ARGV[1], 'out', ARGV[2], 'id', ARGV[3], 'type', ARGV[4], 'arch', ARGV[5])
redis.call('PEXPIRE', KEYS[1], ARGV[6])
return 1
"#;

/// Redis copy of open care windows. Every error degrades to "miss" (fall back to Postgres).
#[derive(Clone)]
pub struct WindowCache {
    redis: Option<RedisPool>,
    script: redis::Script,
    /// Milliseconds since [`EPOCH`] until which Redis is not tried (0: healthy).
    skip_until: Arc<AtomicU64>,
}

/// Redis calls on the request path give up quickly: Postgres is always there to answer.
const CACHE_TIMEOUT: Duration = Duration::from_millis(250);
/// After a failed call Redis is left alone this long, so an outage costs one timeout per
/// second per process instead of one per request.
const SKIP_AFTER_FAILURE: Duration = Duration::from_secs(1);
static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);

fn clock_ms() -> u64 {
    EPOCH.elapsed().as_millis() as u64 + 1
}

impl WindowCache {
    pub fn new(redis: Option<RedisPool>) -> Self {
        WindowCache {
            redis,
            script: redis::Script::new(PUT_SCRIPT),
            skip_until: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The pool, unless a recent failure says Redis is away.
    fn pool(&self) -> Option<&RedisPool> {
        let until = AtomicU64::load(&self.skip_until, Ordering::Relaxed);
        if until != 0 && clock_ms() < until {
            return None;
        }
        self.redis.as_ref()
    }

    fn note(&self, ok: bool) {
        if ok {
            if self.skip_until.swap(0, Ordering::Relaxed) != 0 {
                tracing::info!("window cache: Redis answers again");
            }
        } else {
            let until = clock_ms() + SKIP_AFTER_FAILURE.as_millis() as u64;
            if self.skip_until.swap(until, Ordering::Relaxed) == 0 {
                tracing::warn!("window cache: Redis unavailable; answering from Postgres");
            }
        }
    }

    /// The default sender's windows keep the key they had before there were several.
    pub fn key(phone: &str, channel: &str, sender: &str) -> String {
        if crate::senders::is_default_key(sender) {
            format!("warden:window:{channel}:{phone}")
        } else {
            format!("warden:window:{channel}:{sender}:{phone}")
        }
    }

    pub async fn get(&self, phone: &str, channel: &str, sender: &str) -> Option<CachedWindow> {
        let redis = self.pool()?;
        let key = Self::key(phone, channel, sender);
        let fetch = async {
            let mut conn = redis.get().await.ok()?;
            let fields: Vec<Option<String>> = redis::cmd("HMGET")
                .arg(&key)
                .arg(&["in", "out", "id", "type", "arch"])
                .query_async(&mut *conn)
                .await
                .ok()?;
            Some(fields)
        };
        let fields = match tokio::time::timeout(CACHE_TIMEOUT, fetch).await {
            Ok(Some(f)) => {
                self.note(true);
                f
            }
            _ => {
                self.note(false);
                return None;
            }
        };
        let millis = |v: &Option<String>| v.as_deref().and_then(|s| s.parse::<i64>().ok());
        let last_inbound_at = Utc.timestamp_millis_opt(millis(&fields[0])?).single()?;
        Some(CachedWindow {
            id: fields[2].as_deref().and_then(|s| s.parse().ok())?,
            conversation_type: fields[3].clone().unwrap_or_else(|| "service".into()),
            last_inbound_at,
            last_outbound_at: millis(&fields[1])
                .filter(|m| *m > 0)
                .and_then(|m| Utc.timestamp_millis_opt(m).single()),
            archived: fields[4].as_deref() == Some("1"),
        })
    }

    /// Cache a committed row while its window is open (TTL = time left). Never replaces a
    /// newer window with an older one.
    pub async fn put(&self, conv: &Conversation) {
        let (Some(redis), Some(last_in)) = (self.pool(), conv.last_inbound_at) else {
            return;
        };
        let left = (last_in + window::CARE_WINDOW) - Utc::now();
        if left <= TimeDelta::zero() {
            return;
        }
        let key = Self::key(&conv.customer_phone, &conv.channel, &conv.sender_id);
        let write = async {
            let mut c = redis.get().await.ok()?;
            self.script
                .key(&key)
                .arg(last_in.timestamp_millis())
                .arg(
                    conv.last_outbound_at
                        .map(|t| t.timestamp_millis())
                        .unwrap_or(0),
                )
                .arg(conv.id.to_string())
                .arg(&conv.conversation_type)
                .arg(if conv.archived_at.is_some() { "1" } else { "0" })
                .arg(left.num_milliseconds().max(1))
                .invoke_async::<i64>(&mut *c)
                .await
                .ok()
        };
        let written = tokio::time::timeout(CACHE_TIMEOUT, write)
            .await
            .ok()
            .flatten()
            .is_some();
        self.note(written);
        if !written {
            tracing::debug!(key, "window cache write skipped (Redis unavailable)");
        }
    }

    /// Drop a cached window (archive, tests).
    pub async fn forget(&self, phone: &str, channel: &str, sender: &str) {
        if let Some(redis) = self.pool() {
            let key = Self::key(phone, channel, sender);
            let _ = tokio::time::timeout(CACHE_TIMEOUT, async {
                if let Ok(mut c) = redis.get().await {
                    let _: Result<i64, _> = redis::cmd("DEL").arg(&key).query_async(&mut *c).await;
                }
            })
            .await;
        }
    }
}

impl Core {
    /// The conversation of a customer with a sender (its stored key) on a channel: Redis
    /// first, Postgres when Redis misses or fails (a Redis outage never turns into an error
    /// here).
    pub async fn conversation(
        &self,
        phone: &PhoneNumber,
        channel: &str,
        sender: &str,
    ) -> Result<ConversationView, CoreError> {
        let now = Utc::now();
        if let Some(cached) = self.windows().get(phone.digits(), channel, sender).await {
            return Ok(cached.view(phone.digits(), channel, now));
        }
        let conn = self.pg().get().await?;
        let row = find(&conn, phone.digits(), channel, sender).await?;
        if let Some(conv) = &row {
            self.windows().put(conv).await;
        }
        Ok(ConversationView::from_row(
            row.as_ref(),
            phone.digits(),
            channel,
            now,
        ))
    }

    /// Write a committed conversation row through to the cache (never older than Postgres).
    pub async fn refresh_window_cache(&self, conv: &Conversation) {
        self.windows().put(conv).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pool whose server never answers: nothing listens on the port.
    fn dead_pool() -> RedisPool {
        let port = warden_test_support::free_port();
        let manager =
            bb8_redis::RedisConnectionManager::new(format!("redis://127.0.0.1:{port}")).unwrap();
        bb8::Pool::builder()
            .connection_timeout(Duration::from_millis(100))
            .build_unchecked(manager)
    }

    #[tokio::test]
    async fn after_a_failure_redis_is_left_alone_for_a_while() {
        let cache = WindowCache::new(Some(dead_pool()));
        assert!(cache.pool().is_some(), "healthy at first");
        assert!(
            cache
                .get("6281234567890", "whatsapp", "default")
                .await
                .is_none()
        );
        assert!(cache.pool().is_none(), "skipped right after the failure");
        assert!(cache.clone().pool().is_none(), "clones share the state");
        tokio::time::sleep(SKIP_AFTER_FAILURE + Duration::from_millis(50)).await;
        assert!(cache.pool().is_some(), "tried again after the pause");
        cache.note(true);
        assert_eq!(AtomicU64::load(&cache.skip_until, Ordering::Relaxed), 0);
    }
}
