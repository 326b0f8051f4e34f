//! The publish relay: queued messages whose publish never happened (NATS was down when
//! they were accepted) or was lost (still queued, but no longer in the stream).
//!
//! Both publish through [`crate::publish`] (the batch form of `Core::publish`, with the
//! de-duplication id taken from the row as read here): a never-published row goes out
//! under its message id, so a relay racing the accepting call's own publish leaves one
//! stream message; a republished row gets a new id per previous publish (else JetStream
//! would drop it inside its duplicate window), shared by schedulers racing on it. In any
//! case the dispatcher only sends a row it can claim from `queued`.
//!
//! "Lost" needs care: a large campaign legitimately stays queued in the stream for many
//! minutes while the dispatcher works through it at the platform's rate. A queued row is
//! only taken as lost when it was published before the oldest message the stream still
//! holds (or the stream is empty): with work-queue retention nothing older than that is
//! in the stream any more.

use std::time::{Duration, Instant};

use chrono::{DateTime, TimeDelta, Utc};
use diesel::sql_types::{BigInt, Double, Timestamptz};
use diesel_async::RunQueryDsl;

use crate::publish::{PENDING_COLUMNS, Pending, publish_rows};
use crate::{Scheduler, TickReport, metrics};

/// Margin between the stream server's clock and Postgres's.
const CLOCK_MARGIN: TimeDelta = TimeDelta::seconds(5);

pub(crate) async fn run(s: &Scheduler, report: &mut TickReport) -> anyhow::Result<()> {
    let Some(stream) = s.core().stream() else {
        return Ok(());
    };
    if stream.client.connection_state() != async_nats::connection::State::Connected {
        tracing::debug!("NATS not connected; relay waits");
        return Ok(());
    }
    // 1. Never published.
    let rows: Vec<Pending> = {
        let mut conn = s.core().pg().get().await?;
        diesel::sql_query(format!(
            "SELECT {PENDING_COLUMNS} FROM messages m LEFT JOIN campaigns c ON c.id = m.campaign_id
             WHERE m.status = 'queued' AND m.published_at IS NULL
               AND m.updated_at < now() - make_interval(secs => $1)
               AND (c.id IS NULL OR c.status NOT IN ('paused', 'cancelled'))
             ORDER BY m.created_at
             LIMIT $2"
        ))
        .bind::<Double, _>(s.config().relay_min_age.as_secs_f64())
        .bind::<BigInt, _>(s.config().relay_batch)
        .load(&mut conn)
        .await?
    };
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
        if n as i64 >= s.config().relay_batch {
            report.more_work = true;
        }
    }
    // 2. Published but lost. This scans queued rows (no index on published_at), so it runs
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
    let rows: Vec<Pending> = {
        let mut conn = s.core().pg().get().await?;
        diesel::sql_query(format!(
            "SELECT {PENDING_COLUMNS} FROM messages m LEFT JOIN campaigns c ON c.id = m.campaign_id
             WHERE m.status = 'queued' AND m.published_at IS NOT NULL
               AND m.published_at < now() - make_interval(secs => $1)
               AND m.published_at < $2
               AND (m.next_attempt_at IS NULL OR m.next_attempt_at <= now())
               AND (c.id IS NULL OR c.status NOT IN ('paused', 'cancelled'))
             ORDER BY m.published_at
             LIMIT $3"
        ))
        .bind::<Double, _>(s.config().relay_stale_after.as_secs_f64())
        .bind::<Timestamptz, _>(cutoff)
        .bind::<BigInt, _>(s.config().relay_batch)
        .load(&mut conn)
        .await?
    };
    let n = rows.len();
    if n > 0 {
        let published = publish(s, rows).await;
        report.relay_published += published;
        tracing::warn!(
            candidates = n,
            published,
            "relay republished queued messages missing from the stream"
        );
        if n as i64 >= s.config().relay_batch && published == n {
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

/// Publish rows through [`crate::publish`]; errors are logged (the rows stay queued for
/// the next poll). Returns how many were published.
pub(crate) async fn publish(s: &Scheduler, rows: Vec<Pending>) -> usize {
    if s.is_stopping() {
        return 0;
    }
    match publish_rows(s.core(), rows).await {
        Ok(n) => {
            metrics::RELAY_PUBLISHED.inc_by(n as u64);
            n
        }
        Err(e) => {
            tracing::warn!(error = %format!("{e:#}"), "relay publish failed; retrying at the next poll");
            0
        }
    }
}
