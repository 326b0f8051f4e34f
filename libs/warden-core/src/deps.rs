//! The connected dependencies a [`crate::Core`] works with, and the Redis pool type.
//! Connecting them at start-up (exit codes, the policy file, migrations) is
//! `warden-service`'s job; benches and tests build them here directly.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bb8_redis::RedisConnectionManager;
use warden_rules::policy::PolicySet;
use warden_settings::{Redis, Settings};
use warden_store::PgPool;
use warden_stream::DeliveryStream;

/// Redis holds copies (care windows, the token bucket): callers treat its errors as
/// "fall back", never as failures of the request.
pub type RedisPool = bb8::Pool<RedisConnectionManager>;

/// The connected dependencies of a process (the app state's raw parts).
#[derive(Clone)]
pub struct Dependencies {
    pub settings: Arc<Settings>,
    pub pg: PgPool,
    pub redis: Option<RedisPool>,
    pub stream: Option<DeliveryStream>,
    pub policies: Arc<PolicySet>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot reach Redis at {addr}: {reason}")]
pub struct RedisConnectError {
    pub addr: String,
    pub reason: String,
}

/// Build the pool and prove Redis answers PING, retrying for up to `wait`.
pub async fn connect_redis(
    settings: &Redis,
    wait: Duration,
) -> Result<RedisPool, RedisConnectError> {
    let unreachable = |reason: String| RedisConnectError {
        addr: settings.addr.clone(),
        reason,
    };
    let manager =
        RedisConnectionManager::new(settings.url()).map_err(|e| unreachable(e.to_string()))?;
    let pool = bb8::Pool::builder()
        .max_size(16)
        // Short: a slow Redis must fall back quickly rather than stall a tool call.
        .connection_timeout(Duration::from_millis(500))
        .build(manager)
        .await
        .map_err(|e| unreachable(e.to_string()))?;
    let deadline = Instant::now() + wait;
    loop {
        match ping(&pool).await {
            Ok(()) => return Ok(pool),
            Err(e) if Instant::now() >= deadline => return Err(unreachable(e.to_string())),
            Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    }
}

/// Why one PING failed.
#[derive(Debug, thiserror::Error)]
enum PingError {
    #[error("{0}")]
    Pool(#[from] bb8::RunError<redis::RedisError>),
    #[error("{0}")]
    Redis(#[from] redis::RedisError),
}

async fn ping(pool: &RedisPool) -> Result<(), PingError> {
    let mut conn = pool.get().await?;
    redis::cmd("PING").query_async::<String>(&mut *conn).await?;
    Ok(())
}
