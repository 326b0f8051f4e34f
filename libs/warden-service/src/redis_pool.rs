//! The Redis pool. Redis holds copies (conversation windows, the token bucket): callers
//! treat its errors as "fall back", never as failures of the request.

use std::time::{Duration, Instant};

use bb8_redis::RedisConnectionManager;
use warden_settings::Redis;

pub type RedisPool = bb8::Pool<RedisConnectionManager>;

/// Build the pool and prove Redis answers PING, retrying for up to `wait`.
pub async fn connect(settings: &Redis, wait: Duration) -> Result<RedisPool, String> {
    let unreachable = |reason: String| format!("cannot reach Redis at {}: {reason}", settings.addr);
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
        let attempt = async {
            let mut conn = pool.get().await.map_err(|e| e.to_string())?;
            redis::cmd("PING")
                .query_async::<String>(&mut *conn)
                .await
                .map_err(|e| e.to_string())
        };
        match attempt.await {
            Ok(_) => return Ok(pool),
            Err(reason) if Instant::now() >= deadline => return Err(unreachable(reason)),
            Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    }
}
