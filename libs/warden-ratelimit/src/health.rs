//! Whether a limiter currently talks to Redis or runs on its local fallback.
//!
//! The first failed Redis call switches to the fallback (logged once per outage) and starts
//! one probe task that PINGs Redis every second; when Redis answers, the limiter switches
//! back (logged too). While on the fallback no caller waits for Redis timeouts.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::RedisPool;
use crate::metrics::FALLBACK;

/// How long one Redis call may take before the limiter gives up on it.
pub(crate) const CALL_TIMEOUT: Duration = Duration::from_secs(1);
const PROBE_EVERY: Duration = Duration::from_secs(1);

pub(crate) struct Health {
    pool: Option<RedisPool>,
    fallback: AtomicBool,
    /// How many outages began (local state starts afresh at each).
    outages: AtomicU64,
    /// What this limiter is, for log lines.
    what: String,
}

impl Health {
    pub(crate) fn new(pool: Option<RedisPool>, what: String) -> Arc<Self> {
        crate::metrics::touch();
        Arc::new(Self {
            pool,
            fallback: AtomicBool::new(false),
            outages: AtomicU64::new(0),
            what,
        })
    }

    /// The pool to use now; `None` while on the fallback (or when there is no Redis).
    pub(crate) fn redis(&self) -> Option<&RedisPool> {
        if self.fallback.load(Ordering::Acquire) {
            None
        } else {
            self.pool.as_ref()
        }
    }

    pub(crate) fn is_fallback(&self) -> bool {
        self.pool.is_none() || self.fallback.load(Ordering::Acquire)
    }

    /// The number of outages so far: local state made before the current one is stale.
    pub(crate) fn outages(&self) -> u64 {
        self.outages.load(Ordering::Acquire)
    }

    /// A Redis call failed: switch to the fallback (once) and start probing. Returns true
    /// when this call made the switch.
    pub(crate) fn failed(self: &Arc<Self>, reason: &str) -> bool {
        if self.fallback.swap(true, Ordering::AcqRel) {
            return false;
        }
        self.outages.fetch_add(1, Ordering::AcqRel);
        FALLBACK.inc();
        tracing::warn!(
            limiter = %self.what,
            %reason,
            "Redis unreachable: rate limiting falls back to a local in-process limit until it returns"
        );
        let weak = Arc::downgrade(self);
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn(probe(weak));
            }
            Err(_) => {
                // No runtime to probe from: come back to Redis on the next call instead.
                self.recovered();
            }
        }
        true
    }

    fn recovered(&self) {
        if self.fallback.swap(false, Ordering::AcqRel) {
            FALLBACK.dec();
            tracing::info!(limiter = %self.what, "Redis answers again: rate limiting is shared through Redis again");
        }
    }
}

impl Drop for Health {
    fn drop(&mut self) {
        if *self.fallback.get_mut() {
            FALLBACK.dec();
        }
    }
}

async fn probe(health: Weak<Health>) {
    loop {
        tokio::time::sleep(PROBE_EVERY).await;
        let Some(h) = health.upgrade() else { return };
        let Some(pool) = h.pool.clone() else { return };
        if ping(&pool).await.is_ok() {
            h.recovered();
            return;
        }
    }
}

/// Why a call to Redis failed (the limiters then fall back).
#[derive(Debug, thiserror::Error)]
pub(crate) enum RedisCallError {
    #[error("{0}")]
    Pool(#[from] bb8::RunError<redis::RedisError>),
    #[error("{0}")]
    Redis(#[from] redis::RedisError),
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error("unexpected script reply {0:?}")]
    Reply(Vec<i64>),
}

/// Run `call` with the limiters' [`CALL_TIMEOUT`].
pub(crate) async fn timed<T>(
    call: impl std::future::Future<Output = Result<T, RedisCallError>>,
) -> Result<T, RedisCallError> {
    tokio::time::timeout(CALL_TIMEOUT, call)
        .await
        .map_err(|_| RedisCallError::Timeout(CALL_TIMEOUT))?
}

pub(crate) async fn ping(pool: &RedisPool) -> Result<(), RedisCallError> {
    timed(async {
        let mut conn = pool.get().await?;
        redis::cmd("PING").query_async::<String>(&mut *conn).await?;
        Ok(())
    })
    .await
}
