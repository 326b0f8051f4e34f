//! The publish relay: queued messages whose publish never happened (NATS was down when
//! they were accepted, or a campaign chunk's publish batch never completed) or was lost (still
//! queued, but no longer in the stream), published again through
//! `warden_core::delivery::outbox`.
//!
//! A never-published row goes out under its message id, so a relay racing the accepting
//! call's own publish leaves one stream message; a republished row gets a new id per
//! previous publish (else JetStream would drop it inside its duplicate window), shared by
//! schedulers racing on it. In any case the dispatcher only sends a row it can claim from
//! `queued`.
//!
//! "Lost" needs care: a large campaign legitimately stays queued in the stream for many
//! minutes while the dispatcher works through it at the platform's rate. A queued row is
//! only taken as lost when it was published before the oldest message the stream still
//! holds (or the stream is empty): with work-queue retention nothing older than that is
//! in the stream any more.

use std::time::{Duration, Instant};

use chrono::{DateTime, TimeDelta, Utc};
use warden_core::delivery::outbox::{self, Backlog, Pending};
use warden_core::delivery::publish_batches;

use crate::error::PhaseError;
use crate::{Scheduler, TickReport, metrics};

/// Margin between the stream server's clock and Postgres's.
const CLOCK_MARGIN: TimeDelta = TimeDelta::seconds(5);

pub(crate) async fn run(s: &Scheduler, report: &mut TickReport) -> Result<(), PhaseError> {
    let Some(stream) = s.core().stream() else {
        return Ok(());
    };
    if stream.client.connection_state() != async_nats::connection::State::Connected {
        tracing::debug!("NATS not connected; relay waits");
        return Ok(());
    }
    let pg = s.core().pg();
    let limit = s.config().relay_batch;
    // 1. Never published.
    let min_age = s.config().relay_min_age;
    let rows = outbox::backlog(pg, Backlog::NeverPublished { min_age }, limit).await?;
    let n = rows.len();
    if n > 0 {
        let published = publish(s, rows).await;
        report.relay_published += published;
        tracing::info!(
            candidates = n,
            published,
            "relay published queued messages that were never published"
        );
        if published < n {
            return Ok(());
        }
        if n as i64 >= limit {
            report.more_work = true;
        }
    }
    // 2. Campaign chunks whose publish batch never completed: their still-queued messages go
    //    out under their first ids (the stream drops what it already has), then the batches
    //    close.
    let (batches, rows) = publish_batches::overdue(pg, min_age, limit).await?;
    if !batches.is_empty() {
        let n = rows.len();
        let published = publish(s, rows).await;
        report.relay_published += published;
        if published < n {
            return Ok(());
        }
        publish_batches::close(pg, &batches).await?;
        tracing::info!(
            publish_batches = batches.len(),
            published,
            "relay published the messages of campaign publish batches the stream never acknowledged"
        );
        if n as i64 >= limit {
            report.more_work = true;
        }
    }
    // 3. Published but lost. This scans queued rows (no index on published_at), so it runs
    // at most every half `relay_stale_after`.
    let every = s.config().relay_stale_after / 2;
    {
        let mut last = s.last_lost_check.lock().expect("lock");
        if last.is_some_and(|t| t.elapsed() < every) {
            return Ok(());
        }
        *last = Some(Instant::now());
    }
    let Some(cutoff) = stream_cutoff(stream).await else {
        return Ok(());
    };
    let lost = Backlog::Lost {
        stale_after: s.config().relay_stale_after,
        cutoff,
    };
    let rows = outbox::backlog(pg, lost, limit).await?;
    let n = rows.len();
    if n > 0 {
        let published = publish(s, rows).await;
        report.relay_published += published;
        tracing::warn!(
            candidates = n,
            published,
            "relay republished queued messages missing from the stream"
        );
        if n as i64 >= limit && published == n {
            // Run the check again at the next poll.
            *s.last_lost_check.lock().expect("lock") = None;
            report.more_work = true;
        }
    }
    Ok(())
}

/// Rows published before this instant are no longer in the stream: the first message's
/// time (minus a clock margin), or far in the future when the stream is empty.
async fn stream_cutoff(stream: &warden_stream::DeliveryStream) -> Option<DateTime<Utc>> {
    let info = tokio::time::timeout(Duration::from_secs(5), async {
        let mut st = stream
            .jetstream
            .get_stream(&stream.stream_name)
            .await
            .ok()?;
        st.info().await.ok().map(|i| i.state.clone())
    })
    .await
    .ok()
    .flatten()?;
    if info.messages == 0 {
        return Some(Utc::now() + TimeDelta::days(3650));
    }
    let first = info.first_timestamp;
    let first = DateTime::<Utc>::from_timestamp(first.unix_timestamp(), first.nanosecond())?;
    Some(first - CLOCK_MARGIN)
}

/// Publish rows through `warden_core::delivery::outbox`; errors are logged (the rows stay queued for
/// the next poll). Returns how many were published.
pub(crate) async fn publish(s: &Scheduler, rows: Vec<Pending>) -> usize {
    if s.is_stopping() {
        return 0;
    }
    match outbox::publish(s.core(), rows).await {
        Ok(n) => {
            metrics::RELAY_PUBLISHED.inc_by(n as u64);
            n
        }
        Err(e) => {
            tracing::warn!(error = %e, "relay publish failed; retrying at the next poll");
            0
        }
    }
}
