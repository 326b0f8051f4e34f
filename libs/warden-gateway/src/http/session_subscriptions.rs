//! The `resources/subscribe` URIs of each legacy (2025-11-25) HTTP session, kept in Redis
//! beside the session's state ([`super::session_store`]). When a session moves to another
//! replica (its `GET /mcp` stream or a request lands there), rmcp replays the handshake
//! and the gateway subscribes that session again to every URI recorded here, so its
//! notifications keep coming on whichever replica holds the stream.

use rmcp::RoleServer;
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::transport::streamable_http_server::SessionRestoreMarker;
use warden_core::RedisPool;

use super::session_store::{SESSION_TTL, subscriptions_key};

/// The legacy session a request belongs to (`Mcp-Session-Id`), when it came over HTTP.
pub(crate) fn session_of(context: &RequestContext<RoleServer>) -> Option<String> {
    context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.headers.get("mcp-session-id"))
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// The session being restored on this replica, when `context` is its replayed handshake.
pub(crate) fn restored_session(context: &NotificationContext<RoleServer>) -> Option<String> {
    context
        .extensions
        .get::<SessionRestoreMarker>()
        .map(|m| m.id.to_string())
}

/// Record that `session` is subscribed to `uri`.
pub(crate) async fn remember(redis: &RedisPool, session: &str, uri: &str) -> anyhow::Result<()> {
    let mut c = redis.get().await?;
    let () = redis::pipe()
        .atomic()
        .cmd("SADD")
        .arg(subscriptions_key(session))
        .arg(uri)
        .ignore()
        .cmd("EXPIRE")
        .arg(subscriptions_key(session))
        .arg(SESSION_TTL.as_secs())
        .ignore()
        .query_async(&mut *c)
        .await?;
    Ok(())
}

/// `session` is no longer subscribed to `uri`.
pub(crate) async fn forget(redis: &RedisPool, session: &str, uri: &str) -> anyhow::Result<()> {
    let mut c = redis.get().await?;
    let _: i64 = redis::cmd("SREM")
        .arg(subscriptions_key(session))
        .arg(uri)
        .query_async(&mut *c)
        .await?;
    Ok(())
}

/// Every URI `session` is subscribed to.
pub(crate) async fn recall(redis: &RedisPool, session: &str) -> anyhow::Result<Vec<String>> {
    let mut c = redis.get().await?;
    Ok(redis::cmd("SMEMBERS")
        .arg(subscriptions_key(session))
        .query_async(&mut *c)
        .await?)
}
