//! The unknown-outcome sweep: nothing stays `sending` without an owner.
//!
//! The dispatcher settles an unknown outcome from the stream message it holds for the
//! row; if that message is gone (acknowledged by a stale delivery, or lost with its
//! stream), or nobody ever comes back to it, the row would stay `sending` for good. Every
//! replica runs this sweep every DISPATCH_SWEEP_INTERVAL; each step
//! (`warden_core::delivery::stale_claims`) locks the rows it takes (`FOR UPDATE SKIP LOCKED`),
//! so several replicas never take the same row. It:
//!
//! 1. marks `sending` rows whose lease ended as unknown outcomes (`held`, counted once);
//! 2. clears the mark of rows that moved on meanwhile (`resolved_by_webhook`);
//! 3. applies the dispatcher's own rule (`warden_core::delivery::next_step`) to marked rows,
//!    and for those it resends: back to `queued` (audited) and published again under a
//!    new de-duplication id, so a dispatcher claims and sends it like any queued message.
//!    A publish that fails leaves a queued row the scheduler's relay republishes.
//!
//! Webhook evidence counts for the sweep only once it is [`Sweep::grace`] old: by then a
//! live stream message for the row would have come back and been resent by the
//! dispatcher. The max-wait bound is the rule's own: the dispatcher and the sweep may
//! both act at once, and the conditional release lets one of them win.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use warden_core::delivery::stale_claims::{
    adopt_expired, held_now, release_settled, resolve_moved,
};
use warden_core::delivery::{DeliveryError, UnknownOutcome, Why};
use warden_store::PgPool;
use warden_stream::DeliveryStream;

use crate::config::DispatcherConfig;
use crate::metrics::{SWEEPS, UNKNOWN_HELD, UNKNOWN_OLDEST};
use crate::unknown_events::{self, Event};

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
    pub unknown: UnknownOutcome,
    /// How long webhook evidence must be there before the sweep acts on it: one ack wait
    /// (a dead holder's delivery comes back) plus one settle period (a held one does).
    pub grace: Duration,
}

impl Sweep {
    pub fn new(cfg: &DispatcherConfig) -> Sweep {
        Sweep {
            unknown: cfg.unknown_outcome(),
            grace: cfg.dispatch.ack_wait + cfg.dispatch.unknown_settle,
        }
    }

    /// One run against the database and stream.
    pub async fn run_once(
        &self,
        pg: &PgPool,
        stream: &DeliveryStream,
    ) -> Result<SweepReport, DeliveryError> {
        let mut report = SweepReport::default();
        for id in adopt_expired(pg, BATCH).await? {
            unknown_events::record(
                Event::Held,
                id,
                ACTOR,
                "its lease ended with the row `sending`",
            );
            report.held += 1;
        }
        for (id, status) in resolve_moved(pg, BATCH).await? {
            let status = status.map_or("unknown", |s| s.as_str());
            unknown_events::record(Event::ResolvedByWebhook, id, ACTOR, status);
            report.resolved += 1;
        }
        let released = release_settled(pg, self.unknown, self.grace, BATCH, ACTOR).await?;
        for (job, why) in &released {
            unknown_events::record(
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
}

/// Sweep every `cfg.dispatch.sweep_interval` until the task is aborted (the dispatcher stops it).
pub(crate) async fn run(pg: PgPool, stream: DeliveryStream, cfg: Arc<DispatcherConfig>) {
    let sweep = Sweep::new(&cfg);
    let mut tick = tokio::time::interval(cfg.dispatch.sweep_interval);
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
    cfg.claim_lease()
        + cfg
            .dispatch
            .unknown_max_wait
            .max(cfg.dispatch.unknown_settle)
        + cfg.dispatch.sweep_interval
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_follows_the_rule() {
        let settings =
            warden_settings::Settings::from_sources(None, &HashMap::new()).expect("defaults");
        let mut cfg = DispatcherConfig::defaults(&settings);
        cfg.dispatch.lease = Duration::from_secs(5);
        cfg.dispatch.platform_timeout = Duration::from_secs(10);
        cfg.dispatch.unknown_settle = Duration::from_secs(5);
        cfg.dispatch.unknown_max_wait = Duration::from_secs(20);
        cfg.dispatch.sweep_interval = Duration::from_secs(2);
        assert_eq!(settle_bound(&cfg), Duration::from_secs(15 + 20 + 2));
        let s = Sweep::new(&cfg);
        assert_eq!(s.grace, cfg.dispatch.ack_wait + cfg.dispatch.unknown_settle);
    }
}
