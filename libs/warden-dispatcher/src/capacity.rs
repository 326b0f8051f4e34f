//! Each sender's bucket follows its own number: at start the dispatcher reads every
//! sender's number from the platform with that sender's client (throughput level,
//! coexistence) and records it through warden-core; then it reads the recorded capacities
//! every [`REFRESH`] (one query for all senders) and gives each bucket its own, so a
//! `THROUGHPUT_UPGRADE` webhook (recorded by the webhook server) applies without a
//! restart. A sender the platform said nothing about keeps its starting rate (its `mps`,
//! else `RATE_LIMIT_MPS`).

use std::time::Duration;

use warden_core::account::throughput::{self, Capacity};
use warden_platform::PlatformClient;
use warden_store::PgPool;

use crate::pacing::{Pacing, SenderPace};

/// How often the capacities are read again (small rows; one query per period).
pub const REFRESH: Duration = Duration::from_secs(2);
/// The longest the start-up read of the numbers may take (they are read at once).
pub const READ_LIMIT: Duration = Duration::from_secs(3);

/// Record what the platform says about each sender's number, `(stored key, its client)`,
/// all at once (best effort: the dispatcher starts whatever the platform answers).
pub(crate) async fn read_numbers(pg: &PgPool, numbers: &[(&str, &PlatformClient)]) {
    futures::future::join_all(
        numbers
            .iter()
            .map(|(sender, platform)| read_number(pg, sender, platform)),
    )
    .await;
}

async fn read_number(pg: &PgPool, sender: &str, platform: &PlatformClient) {
    match platform.phone_number_quality().await {
        Ok(n) => {
            let high = n
                .throughput
                .as_ref()
                .is_some_and(|t| warden_rules::throughput::is_high_level(&t.level));
            let coexistence = n.is_on_biz_app.unwrap_or(false);
            if let Err(e) = throughput::record_number(
                pg,
                sender,
                high,
                coexistence,
                n.display_phone_number.as_deref(),
            )
            .await
            {
                tracing::warn!(sender, error = %e, "cannot record the number's throughput");
            }
        }
        Err(e) => {
            tracing::warn!(sender, error = %e, "cannot read the number's throughput from the platform; keeping the recorded one")
        }
    }
}

/// Apply the recorded capacities to every sender's bucket once. False when they could not
/// be read (the buckets keep their rates).
pub(crate) async fn refresh(pg: &PgPool, pacing: &Pacing) -> bool {
    match throughput::recorded(pg).await {
        Ok(recorded) => {
            for pace in pacing.all() {
                apply(
                    pace,
                    &Capacity::of(recorded.get(&pace.key), pace.setting_mps),
                );
            }
            true
        }
        Err(e) => {
            tracing::debug!(error = %e, "cannot read the numbers' capacities; keeping the current ones");
            false
        }
    }
}

fn apply(pace: &SenderPace, capacity: &Capacity) {
    let old = pace.bucket.set_mps(capacity.mps);
    if old != capacity.mps {
        tracing::info!(
            sender = %pace.key,
            old_mps = old,
            mps = capacity.mps,
            source = capacity.source.as_str(),
            "bucket capacity follows the number"
        );
    }
}

/// Refresh forever (the caller aborts the task at shutdown).
pub(crate) async fn run(pg: PgPool, pacing: std::sync::Arc<Pacing>) {
    let mut tick = tokio::time::interval(REFRESH);
    loop {
        tick.tick().await;
        refresh(&pg, &pacing).await;
    }
}
