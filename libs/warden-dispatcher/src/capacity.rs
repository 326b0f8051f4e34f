//! The bucket's capacity follows the number: at start the dispatcher reads the number from
//! the platform (throughput level, coexistence) and records it through warden-core; then
//! it reads the current capacity every [`REFRESH`] and gives it to the bucket, so a
//! `THROUGHPUT_UPGRADE` webhook (recorded by the webhook server) applies without a restart.

use std::time::Duration;

use warden_platform::PlatformClient;
use warden_ratelimit::TokenBucket;
use warden_store::PgPool;

/// How often the capacity is read again (a small row; one query per period).
pub const REFRESH: Duration = Duration::from_secs(2);
/// The longest the start-up read of the number may take.
pub const READ_LIMIT: Duration = Duration::from_secs(3);

/// Record what the platform says about the number (best effort: the dispatcher starts
/// whatever the platform answers).
pub async fn read_number(pg: &PgPool, platform: &PlatformClient) {
    match platform.phone_number_quality().await {
        Ok(n) => {
            let high = n
                .throughput
                .as_ref()
                .is_some_and(|t| warden_rules::throughput::is_high_level(&t.level));
            let coexistence = n.is_on_biz_app.unwrap_or(false);
            if let Err(e) = warden_core::account::throughput::record_number(
                pg,
                high,
                coexistence,
                n.display_phone_number.as_deref(),
            )
            .await
            {
                tracing::warn!(error = %e, "cannot record the number's throughput");
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the number's throughput from the platform; keeping the recorded one")
        }
    }
}

/// Apply the current capacity to `bucket` once; returns it.
pub async fn refresh(pg: &PgPool, bucket: &TokenBucket, setting_mps: u32) -> Option<u32> {
    match warden_core::account::throughput::current(pg, setting_mps).await {
        Ok(c) => {
            let old = bucket.set_mps(c.mps);
            if old != c.mps {
                tracing::info!(
                    old_mps = old,
                    mps = c.mps,
                    source = c.source.as_str(),
                    "bucket capacity follows the number"
                );
            }
            Some(c.mps)
        }
        Err(e) => {
            tracing::debug!(error = %e, "cannot read the number's capacity; keeping the current one");
            None
        }
    }
}

/// Refresh forever (the caller aborts the task at shutdown).
pub async fn run(pg: PgPool, bucket: TokenBucket, setting_mps: u32) {
    let mut tick = tokio::time::interval(REFRESH);
    loop {
        tick.tick().await;
        refresh(&pg, &bucket, setting_mps).await;
    }
}
