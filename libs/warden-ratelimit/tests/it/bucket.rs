//! Against a real Redis (REDIS_ADDR, default 127.0.0.1:6379): accuracy of the shared bucket,
//! two replicas sharing it, the read-only state, the pair rate, and the fallback when Redis
//! goes away (a private redis-server started and killed by the test).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use warden_ratelimit::{
    PairLimiter, RedisPool, Take, TokenBucket, bucket_key, lazy_pool, sender_bucket_key, state,
    state_for,
};
use warden_test_support::redis::PrivateRedis;
use warden_test_support::{free_port, wait};

fn redis_url() -> String {
    let addr = std::env::var("REDIS_ADDR").unwrap_or_else(|_| "127.0.0.1:6379".into());
    let db = std::env::var("REDIS_DB").unwrap_or_else(|_| "0".into());
    match std::env::var("REDIS_PASSWORD")
        .ok()
        .filter(|p| !p.is_empty())
    {
        Some(p) => format!("redis://:{p}@{addr}/{db}"),
        None => format!("redis://{addr}/{db}"),
    }
}

fn pool() -> RedisPool {
    lazy_pool(&redis_url()).unwrap()
}

fn unique_channel() -> String {
    format!("t-{}", uuid::Uuid::new_v4().simple())
}

async fn del(pool: &RedisPool, keys: &[String]) {
    let mut c = pool.get().await.unwrap();
    let _: i64 = redis::cmd("DEL")
        .arg(keys)
        .query_async(&mut *c)
        .await
        .unwrap();
}

/// Take tokens until the bucket makes us wait: from here on only the refill counts.
async fn drain(bucket: &TokenBucket) -> u64 {
    let mut n = 0;
    while bucket.try_acquire().await == Take::Granted {
        n += 1;
    }
    n
}

/// Run `workers` tasks calling `acquire` on `bucket` for `window`; total grants.
async fn hammer(bucket: &TokenBucket, workers: usize, window: Duration) -> u64 {
    let granted = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + window;
    let mut tasks = Vec::new();
    for _ in 0..workers {
        let b = bucket.clone();
        let g = Arc::clone(&granted);
        tasks.push(tokio::spawn(async move {
            loop {
                b.acquire().await.unwrap();
                if Instant::now() >= deadline {
                    break;
                }
                g.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    granted.load(Ordering::Relaxed)
}

/// The limit's correctness: never more than `expected` (+`tolerance`). Fewer is judged
/// loosely (at least half): a loaded machine may not keep up with the rate, and tests judge
/// correctness, not the speed of the box. The measured figure is printed either way.
fn assert_within(got: u64, expected: f64, tolerance: f64, what: &str) {
    let err = (got as f64 - expected) / expected;
    eprintln!(
        "{what}: {got} (expected {expected:.0}, {:+.2}%)",
        err * 100.0
    );
    assert!(
        err <= tolerance,
        "{what}: got {got}, more than {expected:.0} +{:.0}% (off by {:+.1}%)",
        tolerance * 100.0,
        err * 100.0
    );
    assert!(
        got as f64 >= expected / 2.0,
        "{what}: got {got}, less than half of {expected:.0}: the bucket stopped granting"
    );
}

#[tokio::test]
async fn a_new_bucket_reads_full_and_unused() {
    let pool = pool();
    let channel = unique_channel();
    let before = chrono::Utc::now().timestamp_millis();
    let s = state(&pool, &channel, 50).await.unwrap();
    assert_eq!(s.capacity_mps, 50);
    assert_eq!(s.tokens_remaining, 50.0);
    assert_eq!(s.tokens_used, 0);
    assert!((s.last_update_ms - before).abs() < 5_000, "{s:?}");
    assert!(s.last_update_at.ends_with('Z'), "{}", s.last_update_at);
    // Reading does not create the key.
    let mut c = pool.get().await.unwrap();
    let exists: i64 = redis::cmd("EXISTS")
        .arg(bucket_key(&channel))
        .query_async(&mut *c)
        .await
        .unwrap();
    assert_eq!(exists, 0);
}

#[tokio::test]
async fn state_follows_the_takes() {
    let pool = pool();
    let channel = unique_channel();
    let bucket = TokenBucket::new(Some(pool.clone()), &channel, 10, 1);
    for _ in 0..4 {
        bucket.acquire().await.unwrap();
    }
    let s = state(&pool, &channel, 10).await.unwrap();
    assert_eq!(s.tokens_used, 4);
    assert!(
        s.tokens_remaining >= 6.0 && s.tokens_remaining < 7.0,
        "{s:?}"
    );
    let age = chrono::Utc::now().timestamp_millis() - s.last_update_ms;
    assert!((0..5_000).contains(&age), "{s:?}");
    assert!(!bucket.is_fallback());
    del(&pool, &[bucket_key(&channel)]).await;
}

#[tokio::test]
async fn each_sender_has_its_own_bucket_on_the_channel() {
    let pool = pool();
    let channel = unique_channel();
    let default = TokenBucket::new(Some(pool.clone()), &channel, 5, 1);
    let slow = default.sibling(Some("a2"), 2);
    let fast = default.sibling(Some("b1"), 20);
    assert_eq!(slow.key(), sender_bucket_key(&channel, Some("a2")));
    assert_eq!(
        default.key(),
        bucket_key(&channel),
        "the default keeps the channel's key"
    );
    assert_eq!(slow.channel(), channel);
    // Emptying one sender's bucket leaves the others' full (at least their capacity
    // each; a slow machine may see a refill on top).
    let slow_taken = drain(&slow).await;
    let fast_taken = drain(&fast).await;
    let default_taken = drain(&default).await;
    assert!(slow_taken >= 2, "{slow_taken}");
    assert!(fast_taken >= 20, "{fast_taken}");
    assert!(default_taken >= 5, "{default_taken}");
    let used = |sender: Option<&'static str>, mps| {
        let pool = pool.clone();
        let channel = channel.clone();
        async move {
            state_for(&pool, &channel, sender, mps)
                .await
                .unwrap()
                .tokens_used
        }
    };
    assert_eq!(used(Some("a2"), 2).await, slow_taken);
    assert_eq!(used(Some("b1"), 20).await, fast_taken);
    assert_eq!(used(None, 5).await, default_taken);
    assert_eq!(
        state(&pool, &channel, 5).await.unwrap().tokens_used,
        default_taken
    );
    del(
        &pool,
        &[
            bucket_key(&channel),
            sender_bucket_key(&channel, Some("a2")),
            sender_bucket_key(&channel, Some("b1")),
        ],
    )
    .await;
}

#[tokio::test]
async fn bucket_grants_its_rate_within_five_percent() {
    let pool = pool();
    let channel = unique_channel();
    let bucket = TokenBucket::new(Some(pool.clone()), &channel, 50, 1);
    let burst = drain(&bucket).await;
    // A new bucket starts full (capacity = MPS), plus what refilled while draining.
    assert!((50..=60).contains(&burst), "burst {burst}");
    let window = Duration::from_secs(5);
    let got = hammer(&bucket, 8, window).await;
    assert_within(got, 50.0 * 5.0, 0.05, "MPS 50 over 5 s");
    assert!(!bucket.is_fallback());
    del(&pool, &[bucket_key(&channel)]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_waiters_at_a_high_rate_stay_on_the_rate() {
    // Callers queued in one process share Redis calls (one call takes tokens for several):
    // the total must still follow the bucket.
    let pool = pool();
    let channel = unique_channel();
    let bucket = TokenBucket::new(Some(pool.clone()), &channel, 2000, 1);
    drain(&bucket).await;
    let got = hammer(&bucket, 64, Duration::from_secs(3)).await;
    assert_within(got, 2000.0 * 3.0, 0.05, "MPS 2000 over 3 s with 64 waiters");
    let s = state(&pool, &channel, 2000).await.unwrap();
    assert!(
        s.tokens_used >= got,
        "every grant went through the bucket: {s:?}"
    );
    del(&pool, &[bucket_key(&channel)]).await;
}

#[tokio::test]
async fn two_replicas_share_one_bucket() {
    let channel = unique_channel();
    // Two processes' worth: separate pools, separate in-process queues.
    let a = TokenBucket::new(Some(pool()), &channel, 40, 2);
    let b = TokenBucket::new(Some(pool()), &channel, 40, 2);
    drain(&a).await;
    // The other replica sees the drained bucket: it gets only what refilled since (a loaded
    // machine may take a while between the two drains), not a bucket of its own.
    let drained_at = Instant::now();
    let extra = drain(&b).await;
    let refilled = drained_at.elapsed().as_secs_f64() * 40.0;
    assert!(
        extra as f64 <= refilled + 2.0,
        "the other replica sees the drained bucket: it took {extra}, only {refilled:.1} refilled"
    );
    let window = Duration::from_secs(4);
    let (ga, gb) = tokio::join!(hammer(&a, 4, window), hammer(&b, 4, window));
    assert_within(ga + gb, 40.0 * 4.0, 0.05, "two replicas at MPS 40 over 4 s");
    assert!(ga > 0 && gb > 0, "both replicas got a share: {ga} / {gb}");
    del(&pool(), &[bucket_key(&channel)]).await;
}

#[tokio::test]
async fn unreachable_redis_limits_locally_at_mps_over_replicas() {
    // Nothing listens on port 1: every Redis call fails at once.
    let dead = lazy_pool("redis://127.0.0.1:1/0").unwrap();
    let bucket = TokenBucket::new(Some(dead), unique_channel(), 40, 2);
    let burst = drain(&bucket).await;
    assert!(bucket.is_fallback());
    assert!(
        burst <= 20,
        "fallback burst is at most MPS / replicas: {burst}"
    );
    let got = hammer(&bucket, 4, Duration::from_secs(3)).await;
    assert_within(
        got,
        20.0 * 3.0,
        0.10,
        "fallback at MPS 40 / 2 replicas over 3 s",
    );
    let scrape = prometheus::gather()
        .into_iter()
        .find(|f| f.name() == "warden_ratelimit_fallback")
        .expect("fallback gauge registered");
    assert!(scrape.get_metric()[0].get_gauge().get_value() >= 1.0);
}

#[tokio::test]
async fn pair_slots_pace_each_recipient_across_replicas() {
    let pool = pool();
    let channel = unique_channel();
    let a = PairLimiter::new(Some(pool.clone()), &channel, Duration::from_millis(800));
    let b = PairLimiter::new(Some(pool.clone()), &channel, Duration::from_millis(800));
    assert!(a.take("628100", "m1").await.is_ok());
    assert!(
        a.take("628100", "m1").await.is_ok(),
        "same message may retake its slot"
    );
    let wait = b.take("628100", "m2").await.unwrap_err();
    assert!(
        wait <= Duration::from_millis(800) && wait > Duration::from_millis(500),
        "{wait:?}"
    );
    assert!(
        b.take("628101", "m3").await.is_ok(),
        "other recipients are free"
    );
    tokio::time::sleep(wait + Duration::from_millis(20)).await;
    assert!(
        b.take("628100", "m2").await.is_ok(),
        "the slot frees after the interval"
    );
    b.release("628100", "m2").await;
    assert!(
        a.take("628100", "m4").await.is_ok(),
        "a released slot is free at once"
    );
    a.back_off("628100", "m4", Duration::from_secs(10)).await;
    assert!(b.take("628100", "m5").await.unwrap_err() > Duration::from_secs(9));
    del(
        &pool,
        &[
            warden_ratelimit::pair_key(&channel, "628100"),
            warden_ratelimit::pair_key(&channel, "628101"),
        ],
    )
    .await;
}

#[tokio::test]
async fn redis_outage_falls_back_and_switches_back() {
    let port = free_port();
    let mut redis = PrivateRedis::start(port);
    let pool = lazy_pool(&redis.url()).unwrap();
    let channel = unique_channel();
    let bucket = TokenBucket::new(Some(pool.clone()), &channel, 30, 3);
    drain(&bucket).await;
    assert!(!bucket.is_fallback());

    redis.stop();
    // Still grants, at MPS / replicas = 10 per second, and says so.
    let got = hammer(&bucket, 4, Duration::from_secs(3)).await;
    assert!(bucket.is_fallback());
    assert!(
        got <= 10 * 3 + 2,
        "no flood while Redis is down: {got} in 3 s"
    );
    assert!(got >= 5, "still sending while Redis is down: {got} in 3 s");

    let mut redis = PrivateRedis::start(port);
    wait::until(
        Duration::from_secs(30),
        "the bucket to switch back to Redis once it answered",
        || async { !bucket.is_fallback() },
    )
    .await;
    bucket.acquire().await.unwrap();
    let s = state(&pool, &channel, 30).await.unwrap();
    assert!(
        s.tokens_used >= 1,
        "the take went through Redis again: {s:?}"
    );
    redis.stop();
}
