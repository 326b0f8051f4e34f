//! The token bucket of a channel's sender (phone number).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use chrono::{SecondsFormat, TimeZone, Utc};
use serde::Serialize;

use crate::health::{Health, RedisCallError, timed};
use crate::metrics::WAIT_SECONDS;
use crate::{RateLimitError, RedisPool, sender_bucket_key};

/// An idle bucket's key expires after a day (it would be full again anyway; only the
/// `tokens_used` counter starts over).
const KEY_TTL_MS: u64 = 24 * 3600 * 1000;

/// Take up to ARGV[3] tokens (at least one, or none). Clock: Redis `TIME` (microseconds),
/// so every replica sees one clock.
/// KEYS[1] bucket; ARGV[1] capacity = refill per second; ARGV[2] key TTL in ms;
/// ARGV[3] tokens wanted. Returns {granted (0..wanted), wait_us until one token is there,
/// tokens_used}.
const TAKE_LUA: &str = r#"
local key = KEYS[1]
local cap = tonumber(ARGV[1])
local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local h = redis.call('HMGET', key, 'tokens', 'last_update_us', 'tokens_used')
local tokens = tonumber(h[1])
local last_us = tonumber(h[2])
local used = tonumber(h[3]) or 0
if tokens == nil or last_us == nil then
  tokens = cap
  last_us = now_us
end
if now_us > last_us then
  tokens = tokens + (now_us - last_us) * cap / 1000000
  last_us = now_us
end
if tokens > cap then tokens = cap end
local want = tonumber(ARGV[3]) or 1
local granted = 0
local wait_us = 0
if tokens >= 1 then
  granted = math.min(want, math.floor(tokens))
  tokens = tokens - granted
  used = used + granted
else
  wait_us = math.ceil((1 - tokens) * 1000000 / cap)
end
redis.call('HSET', key,
  'tokens', string.format('%.6f', tokens),
  'last_update_us', string.format('%.0f', last_us),
  'last_update_ms', string.format('%.0f', math.floor(last_us / 1000)),
  'tokens_used', string.format('%.0f', used),
  'capacity_mps', ARGV[1])
redis.call('PEXPIRE', key, ARGV[2])
return {granted, wait_us, used}
"#;

/// Read a bucket without changing it. KEYS[1] bucket; ARGV[1] capacity.
/// Returns {exists 0|1, tokens * 1000 (refilled to now), tokens_used, last_update_ms, now_ms}.
const PEEK_LUA: &str = r#"
local cap = tonumber(ARGV[1])
local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local h = redis.call('HMGET', KEYS[1], 'tokens', 'last_update_us', 'tokens_used', 'last_update_ms')
local tokens = tonumber(h[1])
local last_us = tonumber(h[2])
if tokens == nil or last_us == nil then
  return {0, cap * 1000, 0, math.floor(now_us / 1000), math.floor(now_us / 1000)}
end
if now_us > last_us then
  tokens = tokens + (now_us - last_us) * cap / 1000000
end
if tokens > cap then tokens = cap end
local last_ms = tonumber(h[4]) or math.floor(last_us / 1000)
return {1, math.floor(tokens * 1000), tonumber(h[3]) or 0, last_ms, math.floor(now_us / 1000)}
"#;

static TAKE: LazyLock<redis::Script> = LazyLock::new(|| redis::Script::new(TAKE_LUA));
static PEEK: LazyLock<redis::Script> = LazyLock::new(|| redis::Script::new(PEEK_LUA));

/// What `get_rate_limit` reports about a channel's bucket.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BucketState {
    /// Capacity and refill per second (RATE_LIMIT_MPS).
    pub capacity_mps: u32,
    /// Tokens available now (refilled up to the moment of the read), 3 decimals.
    pub tokens_remaining: f64,
    /// Tokens granted since the bucket was created (it expires after a day idle).
    pub tokens_used: u64,
    /// When a token was last taken (or the bucket first seen), epoch milliseconds.
    pub last_update_ms: i64,
    /// `last_update_ms` as RFC 3339 UTC.
    pub last_update_at: String,
}

/// Read a channel's bucket, the default sender's (read-only; see [`state_for`]).
pub async fn state(
    redis: &RedisPool,
    channel: &str,
    mps: u32,
) -> Result<BucketState, RateLimitError> {
    state_for(redis, channel, None, mps).await
}

/// Read one sender's bucket on a channel (read-only; `None`: the default sender). A bucket
/// that does not exist yet is reported full, with `tokens_used` 0 and last update now
/// (Redis clock).
pub async fn state_for(
    redis: &RedisPool,
    channel: &str,
    sender: Option<&str>,
    mps: u32,
) -> Result<BucketState, RateLimitError> {
    if mps == 0 {
        return Err(RateLimitError::Config(
            "RATE_LIMIT_MPS must be at least 1".into(),
        ));
    }
    let key = sender_bucket_key(channel, sender);
    let reply = timed(async {
        let mut conn = redis.get().await?;
        Ok(PEEK
            .key(&key)
            .arg(mps)
            .invoke_async::<Vec<i64>>(&mut *conn)
            .await?)
    })
    .await
    .map_err(|e| RateLimitError::Unavailable(e.to_string()))?;
    let [_exists, tokens_milli, used, last_ms, _now_ms] = reply[..] else {
        return Err(RateLimitError::Unavailable(format!(
            "unexpected script reply {reply:?}"
        )));
    };
    Ok(BucketState {
        capacity_mps: mps,
        tokens_remaining: (tokens_milli.max(0) as f64) / 1000.0,
        tokens_used: used.max(0) as u64,
        last_update_ms: last_ms,
        last_update_at: rfc3339_ms(last_ms),
    })
}

fn rfc3339_ms(ms: i64) -> String {
    Utc.timestamp_millis_opt(ms)
        .single()
        .unwrap_or_else(Utc::now)
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// The answer of one take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Take {
    Granted,
    /// Not now: one token will be there after this long.
    Wait(Duration),
}

/// The in-process bucket used while Redis is down: `MPS / replicas` per second.
struct LocalBucket {
    rate: f64,
    capacity: f64,
    tokens: f64,
    last: Instant,
    /// The outage this state belongs to (see `Health::outages`).
    outage: u64,
}

impl LocalBucket {
    fn new(mps: u32, replicas: u32) -> Self {
        let rate = (f64::from(mps) / f64::from(replicas.max(1))).max(0.001);
        let capacity = rate.max(1.0);
        Self {
            rate,
            capacity,
            tokens: capacity,
            last: Instant::now(),
            outage: 0,
        }
    }

    fn take(&mut self, now: Instant) -> Take {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.rate).min(self.capacity);
        self.last = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Take::Granted
        } else {
            Take::Wait(Duration::from_secs_f64((1.0 - self.tokens) / self.rate))
        }
    }
}

struct Inner {
    health: Arc<Health>,
    channel: String,
    key: String,
    /// Capacity = refill per second; the dispatcher changes it when the platform changes
    /// the number's throughput ([`TokenBucket::set_mps`]).
    mps: AtomicU32,
    replicas: u32,
    local: Mutex<LocalBucket>,
    /// Callers of this process queue here (FIFO) so only the head polls Redis while
    /// waiting: Redis sees about one call per token, however many tasks wait. The head
    /// asks for as many tokens as there are callers waiting (up to [`MAX_BATCH`]) and
    /// leaves the extra ones in `prefetched` for the callers right behind it.
    turn: tokio::sync::Mutex<()>,
    /// Tokens Redis granted to this process and not handed out yet, and when (only
    /// touched while holding `turn`). They are dropped when not used within
    /// [`PREFETCH_TTL`], so unused grants cannot pile up into a later burst.
    prefetched: Mutex<(u32, Instant)>,
    /// Callers inside `acquire` now.
    waiting: AtomicU32,
}

/// Most tokens one Redis call takes for the callers queued in this process.
const MAX_BATCH: u32 = 32;
/// How long tokens taken for queued callers stay usable.
const PREFETCH_TTL: Duration = Duration::from_millis(100);

/// Counts a caller in `waiting` for as long as it is inside `acquire` (also when its
/// future is dropped half way).
struct Waiting<'a>(&'a AtomicU32);

impl<'a> Waiting<'a> {
    fn enter(counter: &'a AtomicU32) -> Self {
        counter.fetch_add(1, Ordering::AcqRel);
        Self(counter)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The token bucket of a channel's sender, shared through Redis by every replica. Cheap
/// to clone.
#[derive(Clone)]
pub struct TokenBucket {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for TokenBucket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenBucket")
            .field("key", &self.inner.key)
            .field("mps", &self.mps())
            .field("replicas", &self.inner.replicas)
            .field("fallback", &self.is_fallback())
            .finish()
    }
}

impl TokenBucket {
    /// A bucket of `mps` tokens (capacity and refill per second) for `channel`'s default
    /// sender. `redis: None` limits in-process only (`mps / replicas_hint`). `mps` 0 is
    /// taken as 1.
    pub fn new(
        redis: Option<RedisPool>,
        channel: impl Into<String>,
        mps: u32,
        replicas_hint: u32,
    ) -> Self {
        let channel = channel.into();
        let key = sender_bucket_key(&channel, None);
        let health = Health::new(redis, format!("bucket {key}"));
        Self::build(health, channel, key, mps, replicas_hint)
    }

    /// Another sender's bucket on the same channel, with the same Redis and fallback state
    /// (one outage, one log line) and replicas: `None` is the default sender's key.
    pub fn sibling(&self, sender: Option<&str>, mps: u32) -> Self {
        let channel = self.inner.channel.clone();
        let key = sender_bucket_key(&channel, sender);
        Self::build(self.health(), channel, key, mps, self.inner.replicas)
    }

    fn build(health: Arc<Health>, channel: String, key: String, mps: u32, replicas: u32) -> Self {
        let mps = mps.max(1);
        let replicas = replicas.max(1);
        Self {
            inner: Arc::new(Inner {
                health,
                key,
                channel,
                mps: AtomicU32::new(mps),
                replicas,
                local: Mutex::new(LocalBucket::new(mps, replicas)),
                turn: tokio::sync::Mutex::new(()),
                prefetched: Mutex::new((0, Instant::now())),
                waiting: AtomicU32::new(0),
            }),
        }
    }

    pub fn channel(&self) -> &str {
        &self.inner.channel
    }

    pub fn key(&self) -> &str {
        &self.inner.key
    }

    pub fn mps(&self) -> u32 {
        self.inner.mps.load(Ordering::Acquire)
    }

    /// A new capacity (messages per second), used from the next take on, by Redis (the
    /// script reads it per call) and by the local fallback alike. Returns the old one.
    pub fn set_mps(&self, mps: u32) -> u32 {
        let mps = mps.max(1);
        let old = self.inner.mps.swap(mps, Ordering::AcqRel);
        if old != mps {
            let mut local = self.local();
            let fresh = LocalBucket::new(mps, self.inner.replicas);
            local.rate = fresh.rate;
            local.capacity = fresh.capacity;
            local.tokens = local.tokens.min(local.capacity);
        }
        old
    }

    /// True while the bucket runs on its local fallback (Redis unreachable or not given).
    pub fn is_fallback(&self) -> bool {
        self.inner.health.is_fallback()
    }

    pub(crate) fn health(&self) -> Arc<Health> {
        Arc::clone(&self.inner.health)
    }

    /// Wait until a token is granted. Never fails: when Redis is unreachable it falls back
    /// to the local bucket. The wait is observed in `warden_ratelimit_wait_seconds`.
    pub async fn acquire(&self) -> Result<(), RateLimitError> {
        let started = Instant::now();
        let inner = &self.inner;
        let waiting = Waiting::enter(&inner.waiting);
        {
            let _turn = inner.turn.lock().await;
            loop {
                {
                    let mut pre = self.prefetched();
                    if pre.0 > 0 && pre.1.elapsed() < PREFETCH_TTL {
                        pre.0 -= 1;
                        break;
                    }
                    pre.0 = 0;
                }
                let want = inner.waiting.load(Ordering::Acquire).clamp(1, MAX_BATCH);
                match self.take(want).await {
                    (0, wait) => tokio::time::sleep(wait).await,
                    (granted, _) => {
                        *self.prefetched() = (granted - 1, Instant::now());
                        break;
                    }
                }
            }
        }
        drop(waiting);
        WAIT_SECONDS.observe(started.elapsed().as_secs_f64());
        Ok(())
    }

    /// One attempt for one token, without waiting: granted, or how long until a token is
    /// there.
    pub async fn try_acquire(&self) -> Take {
        match self.take(1).await {
            (0, wait) => Take::Wait(wait),
            _ => Take::Granted,
        }
    }

    /// Up to `want` tokens (at least 1), or none and the wait for one.
    async fn take(&self, want: u32) -> (u32, Duration) {
        if let Some(pool) = self.inner.health.redis() {
            match self.take_redis(pool, want).await {
                Ok(take) => return take,
                Err(reason) => {
                    self.inner.health.failed(&reason.to_string());
                }
            }
        }
        let now = Instant::now();
        let outage = self.inner.health.outages();
        let mut local = self.local();
        if local.outage != outage {
            // A new outage: start the local bucket empty. Redis may just have handed out
            // a burst, and the fallback must not add another on top.
            local.outage = outage;
            local.tokens = 0.0;
            local.last = now;
        }
        match local.take(now) {
            Take::Granted => (1, Duration::ZERO),
            Take::Wait(wait) => (0, wait),
        }
    }

    fn prefetched(&self) -> std::sync::MutexGuard<'_, (u32, Instant)> {
        self.inner
            .prefetched
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    fn local(&self) -> std::sync::MutexGuard<'_, LocalBucket> {
        self.inner.local.lock().unwrap_or_else(|p| p.into_inner())
    }

    async fn take_redis(
        &self,
        pool: &RedisPool,
        want: u32,
    ) -> Result<(u32, Duration), RedisCallError> {
        let reply = timed(async {
            let mut conn = pool.get().await?;
            Ok(TAKE
                .key(&self.inner.key)
                .arg(self.mps())
                .arg(KEY_TTL_MS)
                .arg(want)
                .invoke_async::<Vec<i64>>(&mut *conn)
                .await?)
        })
        .await?;
        match reply[..] {
            [0, wait_us, ..] => Ok((0, Duration::from_micros(wait_us.max(1) as u64))),
            [granted, ..] if granted > 0 => Ok((
                u32::try_from(granted).unwrap_or(1).min(want),
                Duration::ZERO,
            )),
            _ => Err(RedisCallError::Reply(reply)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_bucket_refills_at_its_rate() {
        let mut b = LocalBucket::new(10, 2); // 5 per second, capacity 5
        let t0 = Instant::now();
        for _ in 0..5 {
            assert_eq!(b.take(t0), Take::Granted);
        }
        let Take::Wait(d) = b.take(t0) else {
            panic!("empty bucket must make the caller wait")
        };
        assert!((d.as_secs_f64() - 0.2).abs() < 1e-6, "{d:?}");
        assert_eq!(b.take(t0 + Duration::from_millis(200)), Take::Granted);
        // Never above capacity, however long it idles.
        let later = t0 + Duration::from_secs(3600);
        for _ in 0..5 {
            assert_eq!(b.take(later), Take::Granted);
        }
        assert!(matches!(b.take(later), Take::Wait(_)));
    }

    #[tokio::test]
    async fn a_new_capacity_applies_to_the_local_fallback() {
        let b = TokenBucket::new(None, "t", 2, 1);
        assert_eq!(b.set_mps(20), 2);
        assert_eq!(b.mps(), 20);
        // The local bucket now holds up to 20 tokens (it keeps the 2 it had).
        assert_eq!(b.local().capacity, 20.0);
        assert_eq!(b.set_mps(1), 20);
        assert!(b.local().tokens <= 1.0);
    }

    #[test]
    fn local_bucket_of_a_slow_rate_still_grants_one() {
        let mut b = LocalBucket::new(1, 4); // 0.25 per second
        let t0 = Instant::now();
        assert_eq!(b.take(t0), Take::Granted);
        let Take::Wait(d) = b.take(t0) else { panic!() };
        assert!((d.as_secs_f64() - 4.0).abs() < 1e-6);
    }

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_ms(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
    }
}
