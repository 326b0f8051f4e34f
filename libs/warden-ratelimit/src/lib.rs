//! Warden's rate limits, shared by every dispatcher replica and read by the gateway's
//! `get_rate_limit` tool.
//!
//! - [`TokenBucket`]: one bucket per channel and sender (phone number) in Redis (hash
//!   `warden:bucket:<channel>` for the default sender, `warden:bucket:<channel>:<sender>`
//!   for another, with `tokens`, `last_update_ms`, `tokens_used`), capacity = refill per
//!   second = the number's rate. Every take is one atomic Lua script that reads the clock with Redis
//!   `TIME`, so replicas on different hosts agree on it. [`TokenBucket::acquire`] waits
//!   (sleeps for the wait the script computed) until a token is granted.
//! - [`PairLimiter`]: at most one message per recipient per interval (the platform's pair
//!   rate, about one per 6 s), and a longer back-off for one recipient after 131056.
//! - [`state`]: a read-only look at a bucket (what `get_rate_limit` reports).
//!
//! Redis holds copies, never the truth: when it is unreachable both limiters fall back to
//! in-process state (the bucket to `MPS / replicas`), log once, probe Redis every second
//! and switch back when it answers. Losing Redis loses precision, never stops sending and
//! never floods the platform.

mod bucket;
mod health;
mod metrics;
mod pair;

use std::time::Duration;

pub use bucket::{BucketState, Take, TokenBucket, state, state_for};
pub use pair::PairLimiter;

/// The Redis pool type Warden's processes share (same as `warden_core::RedisPool`).
pub type RedisPool = bb8::Pool<bb8_redis::RedisConnectionManager>;

/// The Redis key of a channel's bucket (the default sender's).
pub fn bucket_key(channel: &str) -> String {
    format!("warden:bucket:{channel}")
}

/// The Redis key of one sender's bucket on a channel; `None`, the default sender, keeps
/// the channel's key ([`bucket_key`]), so a deployment of one number paces as before.
pub fn sender_bucket_key(channel: &str, sender: Option<&str>) -> String {
    match sender {
        None => bucket_key(channel),
        Some(sender) => format!("warden:bucket:{channel}:{sender}"),
    }
}

/// The Redis key of one recipient's pair-rate slot on a channel.
pub fn pair_key(channel: &str, recipient: &str) -> String {
    format!("warden:pair:{channel}:{recipient}")
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RateLimitError {
    /// Redis did not answer (or answered with an error); callers of [`state`] report the
    /// limiter as unavailable. [`TokenBucket::acquire`] never returns it: it falls back.
    #[error("rate limiter state unavailable: Redis: {0}")]
    Unavailable(String),
    /// The configuration cannot work (e.g. 0 messages per second).
    #[error("rate limiter misconfigured: {0}")]
    Config(String),
}

/// A pool that does not connect until first used: a process can start while Redis is down
/// and use the local fallback until it returns. Short timeouts, so a dead Redis costs
/// little before the fallback takes over.
pub fn lazy_pool(redis_url: &str) -> Result<RedisPool, RateLimitError> {
    let manager = bb8_redis::RedisConnectionManager::new(redis_url)
        .map_err(|e| RateLimitError::Config(format!("Redis URL: {e}")))?;
    Ok(bb8::Pool::builder()
        .max_size(16)
        .connection_timeout(Duration::from_millis(500))
        .build_unchecked(manager))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_the_documented_names() {
        assert_eq!(bucket_key("whatsapp"), "warden:bucket:whatsapp");
        assert_eq!(
            sender_bucket_key("whatsapp", None),
            "warden:bucket:whatsapp"
        );
        assert_eq!(
            sender_bucket_key("whatsapp", Some("a2")),
            "warden:bucket:whatsapp:a2"
        );
        assert_eq!(
            pair_key("whatsapp", "628123"),
            "warden:pair:whatsapp:628123"
        );
    }
}
