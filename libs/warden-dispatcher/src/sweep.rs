//! The unknown-outcome sweep: nothing stays `sending` without an owner.
//!
//! The dispatcher settles an unknown outcome from the stream message it holds for the
//! row; if that message is gone (acknowledged by a stale delivery, or lost with its
//! stream), or nobody ever comes back to it, the row would stay `sending` for good. Every
//! replica runs this sweep every DISPATCH_SWEEP_INTERVAL; each step locks the rows it
//! takes (`FOR UPDATE SKIP LOCKED`), so several replicas never take the same row. It:
//!
//! 1. marks `sending` rows whose lease ended as unknown outcomes (`held`, counted once);
//! 2. clears the mark of rows that moved on meanwhile (`resolved_by_webhook`);
//! 3. applies the dispatcher's own rule ([`crate::plan::plan`]) to marked rows, and for
//!    those it resends: back to `queued` (audited) and published again under a new
//!    de-duplication id, so a dispatcher claims and sends it like any queued message. A
//!    publish that fails leaves a queued row the scheduler's relay republishes.
//!
//! Webhook evidence counts for the sweep only once it is [`Sweep::grace`] old: by then a
//! live stream message for the row would have come back and been resent by the
//! dispatcher. The max-wait bound is the rule's own: the dispatcher and the sweep may
//! both act at once, and the conditional release lets one of them win.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::TimeDelta;
use diesel::sql_types::{BigInt, Int4, Text, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, RunQueryDsl};
use uuid::Uuid;
use warden_store::PgPool;
use warden_stream::{DeliveryJob, DeliveryStream};

use crate::config::DispatcherConfig;
use crate::metrics::{SWEEPS, UNKNOWN_HELD, UNKNOWN_OLDEST};
use crate::plan::{self, Plan, Why};
use crate::store::{self, Cached, ROW_COLUMNS, Row, millis};
use crate::unknown::{self, Event};

/// Rows each step takes per run (the next run takes the rest).
const BATCH: i64 = 500;
/// Written as the actor of the sweep's audit rows.
const ACTOR: &str = "dispatcher-sweep";

/// What one run did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SweepReport {
    pub held: usize,
    pub resolved: usize,
    pub resent_on_evidence: usize,
    pub resent_on_max_wait: usize,
    /// Resent rows published again (the rest wait for the relay).
    pub published: usize,
}

/// The sweep's view of the dispatcher's configuration.
#[derive(Clone, Debug)]
pub struct Sweep {
    pub unknown: plan::UnknownOutcome,
    /// How long webhook evidence must be there before the sweep acts on it: one ack wait
    /// (a dead holder's delivery comes back) plus one settle period (a held one does).
    pub grace: Duration,
}

impl Sweep {
    pub fn new(cfg: &DispatcherConfig) -> Sweep {
        Sweep {
            unknown: cfg.unknown_outcome(),
            grace: cfg.ack_wait + cfg.unknown_settle,
        }
    }

    /// One run against the database and stream.
    pub async fn run_once(
        &self,
        pg: &PgPool,
        stream: &DeliveryStream,
    ) -> anyhow::Result<SweepReport> {
        let mut report = SweepReport::default();
        for id in adopt(pg).await? {
            unknown::record(
                Event::Held,
                id,
                ACTOR,
                "its lease ended with the row `sending`",
            );
            report.held += 1;
        }
        for (id, status) in resolve(pg).await? {
            unknown::record(Event::ResolvedByWebhook, id, ACTOR, &status);
            report.resolved += 1;
        }
        let released = self.release(pg).await?;
        for (job, why) in &released {
            unknown::record(
                Event::Resent(*why),
                job.message_id,
                ACTOR,
                "no stream message drives it",
            );
            match why {
                Why::Evidence => report.resent_on_evidence += 1,
                Why::MaxWait => report.resent_on_max_wait += 1,
            }
        }
        for (job, _) in released {
            let dedupe = format!("{}.resend.{}", job.message_id, job.attempt);
            match stream.publish_as(&job, &dedupe, &HashMap::new()).await {
                Ok(_) => report.published += 1,
                Err(e) => tracing::warn!(message_id = %job.message_id, error = %e,
                    "resent unknown outcome not published; it stays queued for the relay"),
            }
        }
        let (held, oldest) = held_now(pg).await?;
        UNKNOWN_HELD.set(held);
        UNKNOWN_OLDEST.set(oldest);
        Ok(report)
    }

    /// Step 3: rows the rule resends, released in one transaction.
    async fn release(&self, pg: &PgPool) -> anyhow::Result<Vec<(DeliveryJob, Why)>> {
        let mut conn = pg.get().await?;
        let settle = self.unknown.settle;
        let grace = TimeDelta::from_std(self.grace).unwrap_or(TimeDelta::MAX);
        let unknown = self.unknown;
        let released = conn
            .transaction::<_, diesel::result::Error, _>(async |c| {
                let rows: Vec<Row> = Cached(
                    diesel::sql_query(format!(
                        "SELECT {ROW_COLUMNS}
                           FROM messages m LEFT JOIN campaigns c ON c.id = m.campaign_id
                          WHERE m.status = 'sending' AND m.unknown_since IS NOT NULL
                            AND COALESCE(m.lease_until, m.updated_at)
                                + $1 * interval '1 millisecond' <= now()
                          ORDER BY m.unknown_since
                          LIMIT $2
                          FOR UPDATE OF m SKIP LOCKED"
                    ))
                    .bind::<BigInt, _>(millis(settle))
                    .bind::<BigInt, _>(BATCH),
                )
                .load(c)
                .await?;
                let mut out = Vec::new();
                for mut row in rows {
                    row.webhooks_through = row.webhooks_through.map(|w| w - grace);
                    let Plan::Resend(why) = plan::plan(&row, unknown) else {
                        continue;
                    };
                    let attempt: Attempt = diesel::sql_query(
                        "UPDATE messages
                            SET status = 'queued', lease_owner = NULL, lease_until = NULL,
                                next_attempt_at = NULL, unknown_since = NULL,
                                published_at = now(), updated_at = now()
                          WHERE id = $1
                         RETURNING attempt",
                    )
                    .bind::<SqlUuid, _>(row.id)
                    .get_result(c)
                    .await?;
                    store::audit_resend(c, row.id, settle, why, ACTOR).await?;
                    out.push((
                        DeliveryJob {
                            message_id: row.id,
                            customer_id: row.customer_phone,
                            channel: row.channel,
                            attempt: attempt.attempt + 1,
                        },
                        why,
                    ));
                }
                Ok(out)
            })
            .await?;
        Ok(released)
    }
}

#[derive(diesel::QueryableByName)]
struct Attempt {
    #[diesel(sql_type = Int4)]
    attempt: i32,
}

#[derive(diesel::QueryableByName)]
struct Moved {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Text)]
    status: String,
}

/// Unknown outcomes held `sending` now, and the oldest one's age in seconds.
async fn held_now(pg: &PgPool) -> anyhow::Result<(i64, i64)> {
    #[derive(diesel::QueryableByName)]
    struct Held {
        #[diesel(sql_type = BigInt)]
        n: i64,
        #[diesel(sql_type = BigInt)]
        oldest: i64,
    }
    let mut conn = pg.get().await?;
    let h: Held = diesel::sql_query(
        "SELECT count(*) AS n,
                COALESCE(extract(epoch FROM now() - min(unknown_since)), 0)::bigint AS oldest
           FROM messages WHERE unknown_since IS NOT NULL AND status = 'sending'",
    )
    .get_result(&mut conn)
    .await?;
    Ok((h.n, h.oldest))
}

/// Step 1: `sending` rows whose lease ended become held unknown outcomes.
async fn adopt(pg: &PgPool) -> anyhow::Result<Vec<Uuid>> {
    let mut conn = pg.get().await?;
    let rows: Vec<Moved> = diesel::sql_query(
        "UPDATE messages m
            SET unknown_since = COALESCE(m.lease_until, m.updated_at), lease_owner = NULL
          WHERE m.id IN (
                SELECT id FROM messages
                 WHERE status = 'sending' AND unknown_since IS NULL
                   AND COALESCE(lease_until, updated_at) <= now()
                 ORDER BY lease_until
                 LIMIT $1
                 FOR UPDATE SKIP LOCKED)
            AND m.status = 'sending' AND m.unknown_since IS NULL
         RETURNING m.id, m.status",
    )
    .bind::<BigInt, _>(BATCH)
    .load(&mut conn)
    .await?;
    Ok(rows.into_iter().map(|r| r.id).collect())
}

/// Step 2: marked rows that moved on (their status webhook came): cleared, counted once.
async fn resolve(pg: &PgPool) -> anyhow::Result<Vec<(Uuid, String)>> {
    let mut conn = pg.get().await?;
    let rows: Vec<Moved> = diesel::sql_query(
        "UPDATE messages m SET unknown_since = NULL
          WHERE m.id IN (
                SELECT id FROM messages
                 WHERE unknown_since IS NOT NULL AND status <> 'sending'
                 LIMIT $1
                 FOR UPDATE SKIP LOCKED)
            AND m.unknown_since IS NOT NULL AND m.status <> 'sending'
         RETURNING m.id, m.status",
    )
    .bind::<BigInt, _>(BATCH)
    .load(&mut conn)
    .await?;
    Ok(rows.into_iter().map(|r| (r.id, r.status)).collect())
}

/// Sweep every `cfg.sweep_interval` until the task is aborted (the dispatcher stops it).
pub(crate) async fn run(pg: PgPool, stream: DeliveryStream, cfg: Arc<DispatcherConfig>) {
    let sweep = Sweep::new(&cfg);
    let mut tick = tokio::time::interval(cfg.sweep_interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        match sweep.run_once(&pg, &stream).await {
            Ok(report) => {
                SWEEPS.with_label_values(&["ok"]).inc();
                if report != SweepReport::default() {
                    tracing::info!(?report, "unknown-outcome sweep");
                }
            }
            Err(e) => {
                SWEEPS.with_label_values(&["error"]).inc();
                tracing::warn!(error = %format!("{e:#}"), "unknown-outcome sweep failed; trying again next interval");
            }
        }
    }
}

/// How long after its claim an unknown outcome is released for its resend at the latest,
/// when no status webhook comes: the lease, the max wait (never less than the settle
/// period), plus one sweep interval to notice it. The drills derive their bounds from it.
pub fn settle_bound(cfg: &DispatcherConfig) -> Duration {
    cfg.claim_lease() + cfg.unknown_max_wait.max(cfg.unknown_settle) + cfg.sweep_interval
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_follows_the_rule() {
        let settings =
            warden_settings::Settings::from_sources(None, &HashMap::new()).expect("defaults");
        let mut cfg = DispatcherConfig::defaults(&settings);
        cfg.lease = Duration::from_secs(5);
        cfg.platform_timeout = Duration::from_secs(10);
        cfg.unknown_settle = Duration::from_secs(5);
        cfg.unknown_max_wait = Duration::from_secs(20);
        cfg.sweep_interval = Duration::from_secs(2);
        assert_eq!(settle_bound(&cfg), Duration::from_secs(15 + 20 + 2));
        let s = Sweep::new(&cfg);
        assert_eq!(s.grace, cfg.ack_wait + cfg.unknown_settle);
    }
}
