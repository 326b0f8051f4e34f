//! The pair rate: at most one message per recipient per interval (the platform allows
//! about one per 6 s to the same user), shared through Redis by every replica.
//!
//! A slot is the key `warden:pair:<channel>:<recipient>` holding the message id that took
//! it, expiring after the interval. The same message may take its own slot again (a retry
//! of a message the platform refused is not a second message to that user).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use crate::health::{Health, RedisCallError, timed};
use crate::{RedisPool, TokenBucket, pair_key};

/// KEYS[1] slot; ARGV[1] holder; ARGV[2] interval ms. Returns 0 when taken, else the ms
/// until the slot frees.
const TAKE_LUA: &str = r#"
local cur = redis.call('GET', KEYS[1])
if (not cur) or cur == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 0
end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 1 then ttl = 1 end
return ttl
"#;

/// KEYS[1] slot; ARGV[1] holder. Frees the slot only if that holder has it.
const RELEASE_LUA: &str = r#"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"#;

/// KEYS[1] slot; ARGV[1] holder; ARGV[2] ms. Holds the slot at least that long.
const BACK_OFF_LUA: &str = r#"
local ttl = redis.call('PTTL', KEYS[1])
if ttl < tonumber(ARGV[2]) then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
end
return 1
"#;

static TAKE: LazyLock<redis::Script> = LazyLock::new(|| redis::Script::new(TAKE_LUA));
static RELEASE: LazyLock<redis::Script> = LazyLock::new(|| redis::Script::new(RELEASE_LUA));
static BACK_OFF: LazyLock<redis::Script> = LazyLock::new(|| redis::Script::new(BACK_OFF_LUA));

/// Local slots grow with recipients; expired ones are swept past this many.
const LOCAL_SWEEP_AT: usize = 10_000;

struct Inner {
    health: Arc<Health>,
    channel: String,
    interval: Duration,
    local: Mutex<HashMap<String, (String, Instant)>>,
}

/// Per-recipient pacing. Cheap to clone.
#[derive(Clone)]
pub struct PairLimiter {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for PairLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PairLimiter")
            .field("channel", &self.inner.channel)
            .field("interval", &self.inner.interval)
            .finish()
    }
}

impl PairLimiter {
    /// Its own Redis health tracking; `interval` zero disables pacing (back-offs still hold).
    pub fn new(redis: Option<RedisPool>, channel: impl Into<String>, interval: Duration) -> Self {
        let channel = channel.into();
        let health = Health::new(redis, format!("pair rate {channel}"));
        Self::build(health, channel, interval)
    }

    /// Same Redis, channel and fallback state as `bucket` (one outage, one log line).
    pub fn sharing(bucket: &TokenBucket, interval: Duration) -> Self {
        Self::build(bucket.health(), bucket.channel().to_owned(), interval)
    }

    fn build(health: Arc<Health>, channel: String, interval: Duration) -> Self {
        Self {
            inner: Arc::new(Inner {
                health,
                channel,
                interval,
                local: Mutex::new(HashMap::new()),
            }),
        }
    }

    pub fn interval(&self) -> Duration {
        self.inner.interval
    }

    /// Take `recipient`'s slot for `holder` (a message id). `Err(wait)`: another message
    /// holds it; it frees after `wait`.
    pub async fn take(&self, recipient: &str, holder: &str) -> Result<(), Duration> {
        // A zero interval still honours back-offs (131056); slots then last 1 ms.
        let ms = duration_ms(self.inner.interval);
        if let Some(pool) = self.inner.health.redis() {
            let key = pair_key(&self.inner.channel, recipient);
            match call(pool, &TAKE, &key, holder, ms).await {
                Ok(0) => return Ok(()),
                Ok(wait) => return Err(Duration::from_millis(wait.max(1) as u64)),
                Err(reason) => {
                    self.inner.health.failed(&reason.to_string());
                }
            }
        }
        self.take_local(recipient, holder, Duration::from_millis(ms))
    }

    /// Give the slot back when `holder` did not send after all.
    pub async fn release(&self, recipient: &str, holder: &str) {
        if let Some(pool) = self.inner.health.redis() {
            let key = pair_key(&self.inner.channel, recipient);
            if let Err(reason) = call(pool, &RELEASE, &key, holder, 0).await {
                self.inner.health.failed(&reason.to_string());
            } else {
                return;
            }
        }
        let mut local = self.local();
        if local.get(recipient).is_some_and(|(h, _)| h == holder) {
            local.remove(recipient);
        }
    }

    /// The platform said 131056 (pair rate hit): hold this recipient's slot for at least
    /// `for_at_least`, whatever the configured interval.
    pub async fn back_off(&self, recipient: &str, holder: &str, for_at_least: Duration) {
        if let Some(pool) = self.inner.health.redis() {
            let key = pair_key(&self.inner.channel, recipient);
            match call(pool, &BACK_OFF, &key, holder, duration_ms(for_at_least)).await {
                Ok(_) => return,
                Err(reason) => {
                    self.inner.health.failed(&reason.to_string());
                }
            }
        }
        let until = Instant::now() + for_at_least;
        let mut local = self.local();
        let entry = local
            .entry(recipient.to_owned())
            .or_insert_with(|| (holder.to_owned(), until));
        if entry.1 < until {
            *entry = (holder.to_owned(), until);
        }
    }

    fn take_local(
        &self,
        recipient: &str,
        holder: &str,
        interval: Duration,
    ) -> Result<(), Duration> {
        let now = Instant::now();
        let mut local = self.local();
        if local.len() > LOCAL_SWEEP_AT {
            local.retain(|_, (_, until)| *until > now);
        }
        match local.get(recipient) {
            Some((h, until)) if *until > now && h != holder => Err(*until - now),
            _ => {
                local.insert(recipient.to_owned(), (holder.to_owned(), now + interval));
                Ok(())
            }
        }
    }

    fn local(&self) -> std::sync::MutexGuard<'_, HashMap<String, (String, Instant)>> {
        self.inner.local.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

async fn call(
    pool: &RedisPool,
    script: &redis::Script,
    key: &str,
    holder: &str,
    ms: u64,
) -> Result<i64, RedisCallError> {
    timed(async {
        let mut conn = pool.get().await?;
        Ok(script
            .key(key)
            .arg(holder)
            .arg(ms)
            .invoke_async::<i64>(&mut *conn)
            .await?)
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn local_slots_pace_each_recipient() {
        let p = PairLimiter::new(None, "t", Duration::from_millis(300));
        assert!(p.take("1", "a").await.is_ok());
        assert!(
            p.take("1", "a").await.is_ok(),
            "the holder may take it again"
        );
        let wait = p.take("1", "b").await.unwrap_err();
        assert!(wait <= Duration::from_millis(300) && wait > Duration::from_millis(200));
        assert!(
            p.take("2", "b").await.is_ok(),
            "other recipients are not held"
        );
        p.release("1", "b").await; // not the holder: nothing happens
        assert!(p.take("1", "b").await.is_err());
        p.release("1", "a").await;
        assert!(p.take("1", "b").await.is_ok());
        p.back_off("1", "b", Duration::from_secs(5)).await;
        assert!(p.take("1", "c").await.unwrap_err() > Duration::from_secs(4));
    }

    #[tokio::test]
    async fn zero_interval_only_honours_back_offs() {
        let p = PairLimiter::new(None, "t", Duration::ZERO);
        assert!(p.take("1", "a").await.is_ok());
        tokio::time::sleep(Duration::from_millis(2)).await;
        assert!(p.take("1", "b").await.is_ok());
        p.back_off("1", "b", Duration::from_secs(5)).await;
        assert!(p.take("1", "c").await.is_err());
    }
}
