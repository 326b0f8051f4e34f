//! Campaigns: start at deliver_at, fan the audience out through the send path in batches,
//! notice resumes, settle. The writes are `warden_core::campaigns::fanout`'s; this module keeps the
//! loop, the batching, the budget and the metrics.

use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Instant;

use futures::StreamExt;

use chrono::{DateTime, Utc};
use uuid::Uuid;
use warden_core::campaigns::FANOUT_CHUNK;
use warden_core::campaigns::fanout::{
    self, ClaimedCampaign, Lease, RecipientOutcome, RecipientPlan,
};
use warden_core::delivery::outbox;
use warden_rules::audience::AudienceFilter;
use warden_rules::campaign_status::CampaignStatus;
use warden_rules::phone::PhoneNumber;

use crate::error::PhaseError;
use crate::{ACTOR, Scheduler, TickReport, metrics};

/// `scheduled` campaigns whose deliver_at has come move to `running` (audited).
pub(crate) async fn start_due(s: &Scheduler, report: &mut TickReport) -> Result<(), PhaseError> {
    report.campaigns_started += fanout::start_due(s.core().pg(), ACTOR).await?.len();
    Ok(())
}

fn lease(s: &Scheduler) -> Lease {
    Lease {
        owner: s.owner().to_string(),
        duration: s.config().lease,
    }
}

/// Fan out every claimable running campaign (each bounded by `campaign_budget` per poll).
pub(crate) async fn fan_out(s: &Scheduler, report: &mut TickReport) -> Result<(), PhaseError> {
    let lease = lease(s);
    let mut handled: Vec<Uuid> = Vec::new();
    while !s.is_stopping() {
        let Some(campaign) = fanout::claim(s.core().pg(), &lease, &handled).await? else {
            return Ok(());
        };
        handled.push(campaign.id);
        report.campaigns_claimed += 1;
        metrics::CLAIMED.with_label_values(&["campaign"]).inc();
        if let Err(e) = run_campaign(s, &lease, &campaign, report).await {
            let _ = fanout::release(s.core().pg(), campaign.id, s.owner()).await;
            return Err(e);
        }
    }
    Ok(())
}

/// What the page's sends came to.
#[derive(Default, Debug)]
struct PageOutcome {
    enqueued: usize,
    refused: usize,
    errors: usize,
    /// Recipients not attempted (pause, cancel, shutdown, database trouble).
    skipped: usize,
    unavailable: usize,
    /// Recipients held `scheduled` until a rule lifts (also in `enqueued`).
    held: usize,
    /// The portfolio messaging limit paused the campaign.
    paused_by_limit: bool,
    /// Why a batch check stopped the page.
    stopped_by: Option<StoppedBy>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StoppedBy {
    /// Paused, cancelled (or anything else but running).
    Status(CampaignStatus),
    /// Another scheduler holds the campaign now.
    LeaseLost,
}

/// One recipient of a page: sent (with its outcome) or not attempted.
enum Slot {
    Sent(RecipientOutcome),
    Skipped,
}

async fn run_campaign(
    s: &Scheduler,
    lease: &Lease,
    c: &ClaimedCampaign,
    report: &mut TickReport,
) -> Result<(), PhaseError> {
    let pg = s.core().pg();
    let in_campaign = |source| PhaseError::Campaign { id: c.id, source };
    let cancelled = c.status == CampaignStatus::Cancelled;
    let filter = match c.audience() {
        Ok(f) => f,
        Err(e) if cancelled => {
            tracing::warn!(campaign_id = %c.id, error = %e, "cancelled campaign with an unreadable audience_filter: no never-queued recipients counted");
            return close_cancelled(s, c.id, None).await.map_err(in_campaign);
        }
        Err(e) => {
            fanout::fail(pg, c.id, &e, ACTOR)
                .await
                .map_err(in_campaign)?;
            return Ok(());
        }
    };
    if cancelled {
        return close_cancelled(s, c.id, Some(&filter))
            .await
            .map_err(in_campaign);
    }
    let plan = match c.plan() {
        Ok(p) => p,
        Err(e) => {
            fanout::fail(pg, c.id, &e, ACTOR)
                .await
                .map_err(in_campaign)?;
            return Ok(());
        }
    };
    let deadline = Instant::now() + s.config().campaign_budget;
    let mut cursor = c.audience_cursor.clone();
    tracing::info!(campaign_id = %c.id, name = c.name, cursor = cursor.as_deref(), "campaign fan-out");
    loop {
        if s.is_stopping() {
            fanout::release(pg, c.id, s.owner())
                .await
                .map_err(in_campaign)?;
            return Ok(());
        }
        let page = fanout::load_page(
            pg,
            c.id,
            cursor.as_deref(),
            &filter,
            Utc::now(),
            s.config().page_size,
        )
        .await
        .map_err(in_campaign)?;
        let Some(last) = page.last.clone() else {
            return finish(s, c.id, report).await.map_err(in_campaign);
        };
        let exhausted = (page.fetched as i64) < s.config().page_size;
        let outcome = send_page(s, lease, &plan, page.recipients).await;
        report.recipients_enqueued += outcome.enqueued;
        report.recipients_refused += outcome.refused;
        report.recipients_errors += outcome.errors;
        report.recipients_held += outcome.held;
        report.campaigns_paused_by_limit += usize::from(outcome.paused_by_limit);
        if outcome.stopped_by == Some(StoppedBy::Status(CampaignStatus::Cancelled))
            && outcome.unavailable == 0
        {
            // Nothing more is sent: count the rest of the audience as cancelled now.
            return close_cancelled(s, c.id, Some(&filter))
                .await
                .map_err(in_campaign);
        }
        if outcome.skipped > 0 || outcome.unavailable > 0 {
            // Interrupted: the cursor stays, the page is read again later (recipients
            // already given a message are not in it any more).
            fanout::release(pg, c.id, s.owner())
                .await
                .map_err(in_campaign)?;
            if outcome.unavailable > 0 {
                return Err(PhaseError::CampaignSendsUnavailable { id: c.id });
            }
            tracing::info!(campaign_id = %c.id, skipped = outcome.skipped, "campaign fan-out interrupted");
            return Ok(());
        }
        match fanout::advance(pg, c.id, lease, &last, outcome.enqueued)
            .await
            .map_err(in_campaign)?
        {
            Some(status) if status.is_sending() => {}
            Some(CampaignStatus::Cancelled) => {
                return close_cancelled(s, c.id, Some(&filter))
                    .await
                    .map_err(in_campaign);
            }
            Some(status) => {
                fanout::release(pg, c.id, s.owner())
                    .await
                    .map_err(in_campaign)?;
                tracing::info!(campaign_id = %c.id, %status, "campaign no longer running; fan-out stops");
                return Ok(());
            }
            None => {
                tracing::warn!(campaign_id = %c.id, "campaign lease lost to another scheduler; fan-out stops");
                return Ok(());
            }
        }
        cursor = Some(last);
        if exhausted {
            return finish(s, c.id, report).await.map_err(in_campaign);
        }
        if Instant::now() >= deadline {
            fanout::release(pg, c.id, s.owner())
                .await
                .map_err(in_campaign)?;
            report.more_work = true;
            return Ok(());
        }
    }
}

/// Chunks of one page sent at once: one keeps the database busy while this process
/// prepares or finishes the other.
const CHUNKS_IN_FLIGHT: usize = 2;

/// Why a page's remaining chunks are not sent.
const GOING: u8 = 0;
const HALTED: u8 = 1;
const UNAVAILABLE: u8 = 2;

/// Send one page through the batched send path (`Core::send_batch`) in chunks of
/// [`FANOUT_CHUNK`], one transaction each, [`CHUNKS_IN_FLIGHT`] at once (their customers
/// differ, so they never wait on each other's locks). Before each chunk the campaign's
/// status is read (and the lease renewed): a pause or cancel stops the page before the next
/// chunk; the chunks in flight pass the campaign's gate, which pause and cancel close, so
/// nothing is queued after they answer.
async fn send_page(
    s: &Scheduler,
    lease: &Lease,
    plan: &RecipientPlan,
    recipients: Vec<PhoneNumber>,
) -> PageOutcome {
    let halt = AtomicU8::new(GOING);
    let stopped_by = Mutex::new(None);
    let chunk_results: Vec<Vec<Slot>> = futures::stream::iter(
        recipients
            .chunks(FANOUT_CHUNK)
            .map(<[PhoneNumber]>::to_vec),
    )
    .map(|batch| {
        let (halt, stopped_by) = (&halt, &stopped_by);
        async move {
            let not_sent = |slot: fn() -> Slot| batch.iter().map(|_| slot()).collect::<Vec<_>>();
            match halt.load(Ordering::Acquire) {
                UNAVAILABLE => return not_sent(|| Slot::Sent(RecipientOutcome::Unavailable)),
                HALTED => return not_sent(|| Slot::Skipped),
                _ if s.is_stopping() => return not_sent(|| Slot::Skipped),
                _ => {}
            }
            match fanout::renew(s.core().pg(), plan.campaign_id, lease).await {
                Ok(Some(st)) if st.is_sending() => {}
                Ok(other) => {
                    let why = other.map_or("lease lost", CampaignStatus::as_str);
                    tracing::info!(campaign_id = %plan.campaign_id, status = why, "campaign paused, cancelled or taken over: its sends stop");
                    let mut first = stopped_by.lock().expect("not poisoned");
                    first.get_or_insert(other.map_or(StoppedBy::LeaseLost, StoppedBy::Status));
                    let _ = halt.compare_exchange(GOING, HALTED, Ordering::AcqRel, Ordering::Acquire);
                    return not_sent(|| Slot::Skipped);
                }
                Err(e) => {
                    tracing::warn!(campaign_id = %plan.campaign_id, error = %e, "campaign status unreadable: its sends stop");
                    halt.store(UNAVAILABLE, Ordering::Release);
                    return not_sent(|| Slot::Sent(RecipientOutcome::Unavailable));
                }
            }
            let sent = fanout::send_chunk(s.recipient_core(), plan, batch).await;
            if sent.iter().any(|o| {
                matches!(
                    o,
                    RecipientOutcome::Unavailable | RecipientOutcome::CampaignPaused
                )
            }) {
                let _ = halt.compare_exchange(GOING, HALTED, Ordering::AcqRel, Ordering::Acquire);
            }
            sent.into_iter().map(Slot::Sent).collect()
        }
    })
    .buffered(CHUNKS_IN_FLIGHT)
    .collect()
    .await;
    let results = chunk_results.into_iter().flatten();
    let stopped_by = stopped_by.into_inner().expect("not poisoned");
    let mut out = PageOutcome {
        stopped_by,
        ..PageOutcome::default()
    };
    let mut unpublished = Vec::new();
    for r in results {
        match r {
            Slot::Sent(RecipientOutcome::Enqueued {
                message_id,
                published,
            }) => {
                out.enqueued += 1;
                if !published {
                    unpublished.push(message_id);
                }
            }
            Slot::Sent(RecipientOutcome::Held { .. }) => {
                out.enqueued += 1;
                out.held += 1;
            }
            Slot::Sent(RecipientOutcome::CampaignPaused) => {
                out.skipped += 1;
                out.paused_by_limit = true;
            }
            Slot::Sent(RecipientOutcome::Refused) => out.refused += 1,
            Slot::Sent(RecipientOutcome::Error) => out.errors += 1,
            Slot::Sent(RecipientOutcome::Unavailable) => out.unavailable += 1,
            Slot::Sent(RecipientOutcome::NotAttempted) | Slot::Skipped => out.skipped += 1,
        }
    }
    // Batch publish (`warden_core::delivery::outbox`): also after an interrupted page, as
    // `Core::send` would have published each accepted message; like it, without waiting
    // for the stream's acks (the marks follow). Failures are left to the relay.
    if s.config().batch_publish
        && !unpublished.is_empty()
        && let Err(e) = outbox::publish_accepted(s.core(), &unpublished).await
    {
        tracing::warn!(campaign_id = %plan.campaign_id, error = %e, "page publish failed; the relay publishes later");
    }
    metrics::RECIPIENTS
        .with_label_values(&["enqueued"])
        .inc_by(out.enqueued as u64);
    metrics::RECIPIENTS
        .with_label_values(&["refused"])
        .inc_by(out.refused as u64);
    metrics::RECIPIENTS
        .with_label_values(&["error"])
        .inc_by((out.errors + out.unavailable) as u64);
    out
}

/// A cancelled campaign whose lease we hold: its never-queued recipients count as
/// cancelled (`warden_core::campaigns::fanout::close_cancelled`), or the lease goes back when it was
/// closed already.
async fn close_cancelled(
    s: &Scheduler,
    id: Uuid,
    filter: Option<&AudienceFilter>,
) -> Result<(), warden_core::CoreError> {
    let pg = s.core().pg();
    if fanout::close_cancelled(pg, id, s.owner(), filter, ACTOR)
        .await?
        .is_none()
    {
        fanout::release(pg, id, s.owner()).await?;
    }
    Ok(())
}

/// The audience is exhausted: totals recorded, lease released, settled when it can be.
async fn finish(
    s: &Scheduler,
    id: Uuid,
    report: &mut TickReport,
) -> Result<(), warden_core::CoreError> {
    if let Some(done) = fanout::finish(s.core().pg(), id, s.owner(), ACTOR).await? {
        report.campaigns_finished_fanout += 1;
        report.campaigns_settled += usize::from(done.settled.is_some());
    }
    Ok(())
}

/// Running campaigns whose audience is done: completed / failed once every recipient has a
/// final outcome (the dispatcher and webhook also settle as outcomes arrive).
pub(crate) async fn settle(s: &Scheduler, report: &mut TickReport) -> Result<(), PhaseError> {
    report.campaigns_settled += fanout::settle_done(s.core().pg()).await?.len();
    Ok(())
}

/// Notice resumed campaigns (paused at an earlier poll, running now) and republish their
/// queued messages published before the resume: the dispatcher acknowledged those without
/// sending while the campaign was paused. Bounded per poll; continues at the next.
pub(crate) async fn republish_resumed(
    s: &Scheduler,
    report: &mut TickReport,
) -> Result<(), PhaseError> {
    let previously: Vec<Uuid> = s
        .paused_seen
        .lock()
        .expect("lock")
        .iter()
        .copied()
        .collect();
    let rows = fanout::paused_and(s.core().pg(), &previously).await?;
    {
        let mut seen = s.paused_seen.lock().expect("lock");
        let mut resumed = s.resumed.lock().expect("lock");
        let now_paused: HashSet<Uuid> = rows
            .iter()
            .filter(|r| r.status == CampaignStatus::Paused)
            .map(|r| r.id)
            .collect();
        for r in &rows {
            if seen.contains(&r.id) && r.status.is_sending() {
                tracing::info!(campaign_id = %r.id, "campaign resumed: republishing its held messages");
                resumed.insert(r.id, r.now);
            }
            if !r.status.is_sending() {
                resumed.remove(&r.id);
            }
        }
        *seen = now_paused;
    }
    let work: Vec<(Uuid, DateTime<Utc>)> = s
        .resumed
        .lock()
        .expect("lock")
        .iter()
        .map(|(k, v)| (*k, *v))
        .collect();
    if work.is_empty() || s.core().stream().is_none() {
        return Ok(());
    }
    for (campaign_id, since) in work {
        if s.is_stopping() {
            return Ok(());
        }
        let held = outbox::held(s.core().pg(), campaign_id, since, s.config().relay_batch).await?;
        let n = held.len();
        let published = crate::relay::publish(s, held).await;
        report.resumed_republished += published;
        if published < n {
            // NATS trouble: try again at the next poll.
            return Ok(());
        }
        if (n as i64) < s.config().relay_batch {
            s.resumed.lock().expect("lock").remove(&campaign_id);
        } else {
            report.more_work = true;
        }
    }
    Ok(())
}
