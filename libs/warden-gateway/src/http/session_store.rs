//! Legacy (2025-11-25) sessions shared by every replica: rmcp keeps a session's
//! `initialize` parameters here, so a request carrying `Mcp-Session-Id` that lands on a
//! replica which never saw the session is served there (rmcp replays the handshake
//! locally). 2026-07-28 requests are stateless and never touch it.

use std::time::Duration;

use rmcp::transport::streamable_http_server::session::{
    SessionState, SessionStore, SessionStoreError,
};
use warden_core::RedisPool;

/// How long an idle session's state is kept (each use renews it).
pub const SESSION_TTL: Duration = Duration::from_secs(24 * 3600);

const PREFIX: &str = "warden:mcp:session:";
const SUBSCRIPTIONS_PREFIX: &str = "warden:mcp:session-subscriptions:";

pub struct RedisSessionStore {
    pool: RedisPool,
}

impl RedisSessionStore {
    pub fn new(pool: RedisPool) -> RedisSessionStore {
        RedisSessionStore { pool }
    }
}

fn key(id: &str) -> String {
    format!("{PREFIX}{id}")
}

/// Where the session's `resources/subscribe` URIs are kept ([`super::session_subscriptions`]):
/// they live as long as the session.
pub(crate) fn subscriptions_key(id: &str) -> String {
    format!("{SUBSCRIPTIONS_PREFIX}{id}")
}

#[async_trait::async_trait]
impl SessionStore for RedisSessionStore {
    async fn load(&self, id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let mut c = self.pool.get().await?;
        let raw: Option<String> = redis::cmd("GETEX")
            .arg(key(id))
            .arg("EX")
            .arg(SESSION_TTL.as_secs())
            .query_async(&mut *c)
            .await?;
        if raw.is_some() {
            // The session's subscriptions live as long as the session.
            let _: i64 = redis::cmd("EXPIRE")
                .arg(subscriptions_key(id))
                .arg(SESSION_TTL.as_secs())
                .query_async(&mut *c)
                .await?;
        }
        Ok(match raw {
            Some(raw) => Some(serde_json::from_str(&raw)?),
            None => None,
        })
    }

    async fn store(&self, id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let raw = serde_json::to_string(state)?;
        let mut c = self.pool.get().await?;
        let () = redis::cmd("SET")
            .arg(key(id))
            .arg(raw)
            .arg("EX")
            .arg(SESSION_TTL.as_secs())
            .query_async(&mut *c)
            .await?;
        Ok(())
    }

    async fn delete(&self, id: &str) -> Result<(), SessionStoreError> {
        let mut c = self.pool.get().await?;
        let _: i64 = redis::cmd("DEL")
            .arg(key(id))
            .arg(subscriptions_key(id))
            .query_async(&mut *c)
            .await?;
        Ok(())
    }
}
