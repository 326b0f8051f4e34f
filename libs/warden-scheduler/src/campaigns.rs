//! Campaigns: start at deliver_at, fan the audience out through the send path, notice
//! resumes, settle.

use std::collections::HashSet;
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use chrono::{DateTime, Utc};
use diesel::sql_types::{
    Array, BigInt, Double, Int4, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid,
};
use diesel_async::RunQueryDsl;
use futures::FutureExt;
use futures::StreamExt;
use serde_json::json;
use uuid::Uuid;
use warden_core::campaigns::FANOUT_BATCH;
use warden_core::{RefusalMode, SendError, SendKind, SendRequest};
use warden_rules::audience::AudienceFilter;
use warden_rules::kinds::MessageType;
use warden_rules::phone::PhoneNumber;
use warden_store::tx::transact_on;

use crate::{ACTOR, Scheduler, TickReport, audience, metrics};

/// States in which a campaign sends.
const SENDING_STATES: [&str; 2] = ["running", "sending"];

fn is_sending_state(status: &str) -> bool {
    SENDING_STATES.contains(&status)
}

#[derive(diesel::QueryableByName)]
struct IdRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
}

#[derive(diesel::QueryableByName)]
struct StatusRow {
    #[diesel(sql_type = Text)]
    status: String,
}

/// `scheduled` campaigns whose deliver_at has come move to `running` (audited).
pub(crate) async fn start_due(s: &Scheduler, report: &mut TickReport) -> anyhow::Result<()> {
    let mut conn = s.core().pg().get().await?;
    let started: Vec<Uuid> = transact_on::<_, Infallible, _>(&mut conn, "campaigns_start", |c| {
        async move {
            let rows: Vec<IdRow> = diesel::sql_query(
                "UPDATE campaigns SET status = 'running', updated_at = now()
                 WHERE id IN (SELECT id FROM campaigns
                              WHERE status = 'scheduled' AND deliver_at <= now()
                              FOR UPDATE SKIP LOCKED)
                 RETURNING id",
            )
            .load(c)
            .await?;
            for r in &rows {
                warden_store::audit::record(
                    c,
                    ACTOR,
                    "campaign_started",
                    "campaign",
                    &r.id.to_string(),
                    json!({"from_status": "scheduled", "to_status": "running"}),
                )
                .await?;
            }
            Ok(rows.into_iter().map(|r| r.id).collect())
        }
        .boxed()
    })
    .await?;
    for id in &started {
        tracing::info!(campaign_id = %id, "campaign started");
    }
    report.campaigns_started += started.len();
    Ok(())
}

#[derive(diesel::QueryableByName, Debug, Clone)]
struct ClaimedCampaign {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Text)]
    name: String,
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = Text)]
    template_name: String,
    #[diesel(sql_type = Text)]
    locale: String,
    #[diesel(sql_type = Jsonb)]
    variables: serde_json::Value,
    #[diesel(sql_type = Jsonb)]
    audience_filter: serde_json::Value,
    #[diesel(sql_type = Nullable<Text>)]
    audience_cursor: Option<String>,
}

/// Claim one running campaign whose audience is not done, or a cancelled one whose
/// never-queued recipients are not counted yet (lease free, expired or ours), skipping
/// those already handled in this poll.
async fn claim(s: &Scheduler, skip: &[Uuid]) -> anyhow::Result<Option<ClaimedCampaign>> {
    let mut conn = s.core().pg().get().await?;
    let rows: Vec<ClaimedCampaign> = diesel::sql_query(
        "UPDATE campaigns SET lease_owner = $1, lease_until = now() + make_interval(secs => $2)
         WHERE id = (SELECT id FROM campaigns
                     WHERE status IN ('running', 'sending', 'cancelled') AND NOT audience_done
                       AND (lease_until IS NULL OR lease_until < now() OR lease_owner = $1)
                       AND NOT (id = ANY($3))
                     ORDER BY deliver_at, id
                     LIMIT 1
                     FOR UPDATE SKIP LOCKED)
         RETURNING id, name, status, template_name, locale, variables, audience_filter, audience_cursor",
    )
    .bind::<Text, _>(s.owner())
    .bind::<Double, _>(s.config().lease.as_secs_f64())
    .bind::<Array<SqlUuid>, _>(skip)
    .load(&mut conn)
    .await?;
    Ok(rows.into_iter().next())
}

/// Fan out every claimable running campaign (each bounded by `campaign_budget` per poll).
pub(crate) async fn fan_out(s: &Scheduler, report: &mut TickReport) -> anyhow::Result<()> {
    let mut handled: Vec<Uuid> = Vec::new();
    while !s.is_stopping() {
        let Some(campaign) = claim(s, &handled).await? else {
            return Ok(());
        };
        handled.push(campaign.id);
        report.campaigns_claimed += 1;
        metrics::CLAIMED.with_label_values(&["campaign"]).inc();
        if let Err(e) = run_campaign(s, &campaign, report).await {
            let _ = release(s, campaign.id).await;
            return Err(e.context(format!("campaign {}", campaign.id)));
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
    /// The campaign's status when a batch check stopped the page (paused, cancelled), or
    /// "lease lost".
    stopped_by: Option<String>,
}

enum Recipient {
    /// Accepted (`queued`); the id, and whether `Core::send` published it already.
    Enqueued(Uuid, bool),
    Refused,
    Error,
    Skipped,
    Unavailable,
}

/// The parts of a campaign every recipient's send shares.
struct Plan {
    id: Uuid,
    template_name: String,
    locale: String,
    variables: Vec<String>,
}

async fn run_campaign(
    s: &Scheduler,
    c: &ClaimedCampaign,
    report: &mut TickReport,
) -> anyhow::Result<()> {
    let filter = match AudienceFilter::from_value(&c.audience_filter) {
        Ok(f) => f,
        Err(e) if c.status == "cancelled" => {
            tracing::warn!(campaign_id = %c.id, error = %e, "cancelled campaign with an unreadable audience_filter: no never-queued recipients counted");
            return close_cancelled(s, c.id, None).await;
        }
        Err(e) => return fail_campaign(s, c.id, &format!("audience_filter: {e}")).await,
    };
    if c.status == "cancelled" {
        return close_cancelled(s, c.id, Some(&filter)).await;
    }
    let variables = match warden_rules::templates::parse_variables(&c.variables) {
        Ok(v) => v,
        Err(e) => return fail_campaign(s, c.id, &format!("variables: {e}")).await,
    };
    let plan = Plan {
        id: c.id,
        template_name: c.template_name.clone(),
        locale: c.locale.clone(),
        variables,
    };
    let deadline = Instant::now() + s.config().campaign_budget;
    let mut cursor = c.audience_cursor.clone();
    tracing::info!(campaign_id = %c.id, name = c.name, cursor = cursor.as_deref(), "campaign fan-out");
    loop {
        if s.is_stopping() {
            release(s, c.id).await?;
            return Ok(());
        }
        let page = {
            let mut conn = s.core().pg().get().await?;
            audience::load_page(
                &mut conn,
                c.id,
                cursor.as_deref(),
                &filter,
                Utc::now(),
                s.config().page_size,
            )
            .await?
        };
        let Some(last) = page.last.clone() else {
            finish(s, c.id, report).await?;
            return Ok(());
        };
        let exhausted = (page.fetched as i64) < s.config().page_size;
        let outcome = send_page(s, &plan, page.recipients).await;
        report.recipients_enqueued += outcome.enqueued;
        report.recipients_refused += outcome.refused;
        report.recipients_errors += outcome.errors;
        if outcome.stopped_by.as_deref() == Some("cancelled") && outcome.unavailable == 0 {
            // Nothing more is sent: count the rest of the audience as cancelled now.
            return close_cancelled(s, c.id, Some(&filter)).await;
        }
        if outcome.skipped > 0 || outcome.unavailable > 0 {
            // Interrupted: the cursor stays, the page is read again later (recipients
            // already given a message are not in it any more).
            release(s, c.id).await?;
            if outcome.unavailable > 0 {
                anyhow::bail!("database unavailable during the campaign's sends");
            }
            tracing::info!(campaign_id = %c.id, skipped = outcome.skipped, "campaign fan-out interrupted");
            return Ok(());
        }
        match advance(s, c.id, &last, outcome.enqueued).await? {
            Some(status) if is_sending_state(&status) => {}
            Some(status) if status == "cancelled" => {
                return close_cancelled(s, c.id, Some(&filter)).await;
            }
            Some(status) => {
                release(s, c.id).await?;
                tracing::info!(campaign_id = %c.id, status, "campaign no longer running; fan-out stops");
                return Ok(());
            }
            None => {
                tracing::warn!(campaign_id = %c.id, "campaign lease lost to another scheduler; fan-out stops");
                return Ok(());
            }
        }
        cursor = Some(last);
        if exhausted {
            finish(s, c.id, report).await?;
            return Ok(());
        }
        if Instant::now() >= deadline {
            release(s, c.id).await?;
            report.more_work = true;
            return Ok(());
        }
    }
}

/// Send one page through `Core::send` in batches of [`FANOUT_BATCH`] (each batch
/// concurrently, `concurrency` at a time). Before each batch the campaign's status is
/// read (and the lease renewed): a pause or cancel stops the page before the next batch,
/// so at most one batch is queued after pause_campaign / cancel_campaign answers.
async fn send_page(s: &Scheduler, plan: &Plan, recipients: Vec<PhoneNumber>) -> PageOutcome {
    let stop = AtomicBool::new(false);
    let mut results: Vec<Recipient> = Vec::with_capacity(recipients.len());
    let mut stopped_by = None;
    let mut rest = recipients.into_iter().peekable();
    while rest.peek().is_some() {
        let batch: Vec<PhoneNumber> = rest.by_ref().take(FANOUT_BATCH).collect();
        let go = if AtomicBool::load(&stop, Ordering::SeqCst) || s.is_stopping() {
            false
        } else {
            match check_status(s, plan.id).await {
                Ok(Some(st)) if is_sending_state(&st) => true,
                Ok(other) => {
                    let why = other.unwrap_or_else(|| "lease lost".into());
                    tracing::info!(campaign_id = %plan.id, status = why, "campaign paused, cancelled or taken over: its sends stop");
                    stopped_by = Some(why);
                    false
                }
                Err(e) => {
                    tracing::warn!(campaign_id = %plan.id, error = %format!("{e:#}"), "campaign status unreadable: its sends stop");
                    results.extend(batch.iter().map(|_| Recipient::Unavailable));
                    results.extend(rest.by_ref().map(|_| Recipient::Unavailable));
                    break;
                }
            }
        };
        if !go {
            results.extend(batch.iter().map(|_| Recipient::Skipped));
            results.extend(rest.by_ref().map(|_| Recipient::Skipped));
            break;
        }
        let sent: Vec<Recipient> = futures::stream::iter(batch)
            .map(|phone| send_recipient(s, plan, phone, &stop))
            .buffer_unordered(s.config().concurrency.clamp(1, FANOUT_BATCH))
            .collect()
            .await;
        results.extend(sent);
    }
    let mut out = PageOutcome {
        stopped_by,
        ..PageOutcome::default()
    };
    let mut unpublished = Vec::new();
    for r in results {
        match r {
            Recipient::Enqueued(id, published) => {
                out.enqueued += 1;
                if !published {
                    unpublished.push(id);
                }
            }
            Recipient::Refused => out.refused += 1,
            Recipient::Error => out.errors += 1,
            Recipient::Skipped => out.skipped += 1,
            Recipient::Unavailable => out.unavailable += 1,
        }
    }
    // Batch publish (see `publish`): also after an interrupted page, as `Core::send`
    // would have published each accepted message. Failures are left to the relay.
    if s.config().batch_publish
        && !unpublished.is_empty()
        && let Err(e) = crate::publish::publish_accepted(s.core(), &unpublished).await
    {
        tracing::warn!(campaign_id = %plan.id, error = %format!("{e:#}"), "page publish failed; the relay publishes later");
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

async fn send_recipient(
    s: &Scheduler,
    plan: &Plan,
    phone: PhoneNumber,
    stop: &AtomicBool,
) -> Recipient {
    if AtomicBool::load(stop, Ordering::SeqCst) || s.is_stopping() {
        return Recipient::Skipped;
    }
    let request = SendRequest {
        phone,
        channel: warden_settings::DEFAULT_CHANNEL.to_string(),
        kind: SendKind::Template {
            name: plan.template_name.clone(),
            locale: plan.locale.clone(),
            variables: plan.variables.clone(),
        },
        message_type: MessageType::Template,
        campaign_id: Some(plan.id),
        existing_message_id: None,
        refusal: RefusalMode::RecordFailed,
        actor: ACTOR,
    };
    let digits = request.phone.digits().to_string();
    match s.recipient_core().send(request).await {
        Ok(accepted) => Recipient::Enqueued(accepted.message_id, accepted.published),
        Err(SendError::RefusedRecorded { .. }) => Recipient::Refused,
        Err(
            SendError::Unavailable(reason)
            | SendError::Busy {
                message: reason, ..
            },
        ) => {
            stop.store(true, Ordering::SeqCst);
            tracing::warn!(campaign_id = %plan.id, customer = digits, %reason, "campaign send not possible now");
            Recipient::Unavailable
        }
        Err(e) => {
            tracing::warn!(campaign_id = %plan.id, customer = digits, error = %e, code = e.code(), "campaign recipient not sent");
            Recipient::Error
        }
    }
}

/// Renew the lease and read the campaign's status in one statement; None when the lease
/// is no longer ours.
async fn check_status(s: &Scheduler, id: Uuid) -> anyhow::Result<Option<String>> {
    let mut conn = s.core().pg().get().await?;
    let rows: Vec<StatusRow> = diesel::sql_query(
        "UPDATE campaigns SET lease_until = now() + make_interval(secs => $3)
         WHERE id = $1 AND lease_owner = $2 RETURNING status",
    )
    .bind::<SqlUuid, _>(id)
    .bind::<Text, _>(s.owner())
    .bind::<Double, _>(s.config().lease.as_secs_f64())
    .load(&mut conn)
    .await?;
    Ok(rows.into_iter().next().map(|r| r.status))
}

/// A cancelled campaign whose lease we hold: the recipients of its audience never given
/// a message count as cancelled (`warden_core::campaigns::close_cancelled`). Without a
/// readable filter none are counted.
async fn close_cancelled(
    s: &Scheduler,
    id: Uuid,
    filter: Option<&AudienceFilter>,
) -> anyhow::Result<()> {
    let mut conn = s.core().pg().get().await?;
    let remaining = match filter {
        Some(f) => audience::count_remaining(&mut conn, id, f, Utc::now()).await?,
        None => 0,
    };
    let closed =
        warden_core::campaigns::close_cancelled(&mut conn, id, s.owner(), remaining as i32, ACTOR)
            .await?;
    if closed {
        tracing::info!(campaign_id = %id, never_queued = remaining, "cancelled campaign closed: the rest of its audience counted as cancelled");
    } else {
        drop(conn);
        release(s, id).await?;
    }
    Ok(())
}

/// After a complete page: move the cursor, count the enqueued, renew the lease. Returns the
/// campaign's status, or None when the lease is no longer ours.
async fn advance(
    s: &Scheduler,
    id: Uuid,
    last: &str,
    enqueued: usize,
) -> anyhow::Result<Option<String>> {
    let mut conn = s.core().pg().get().await?;
    let rows: Vec<StatusRow> = diesel::sql_query(
        "UPDATE campaigns SET audience_cursor = $3, enqueued_count = enqueued_count + $4,
                lease_until = now() + make_interval(secs => $5), updated_at = now()
         WHERE id = $1 AND lease_owner = $2
         RETURNING status",
    )
    .bind::<SqlUuid, _>(id)
    .bind::<Text, _>(s.owner())
    .bind::<Text, _>(last)
    .bind::<Int4, _>(enqueued as i32)
    .bind::<Double, _>(s.config().lease.as_secs_f64())
    .load(&mut conn)
    .await?;
    Ok(rows.into_iter().next().map(|r| r.status))
}

async fn release(s: &Scheduler, id: Uuid) -> anyhow::Result<()> {
    let mut conn = s.core().pg().get().await?;
    diesel::sql_query(
        "UPDATE campaigns SET lease_until = NULL, lease_owner = NULL WHERE id = $1 AND lease_owner = $2",
    )
    .bind::<SqlUuid, _>(id)
    .bind::<Text, _>(s.owner())
    .execute(&mut conn)
    .await?;
    Ok(())
}

#[derive(diesel::QueryableByName)]
struct Totals {
    #[diesel(sql_type = Int4)]
    total_recipients: i32,
    #[diesel(sql_type = Int4)]
    enqueued_count: i32,
}

/// The audience is exhausted: audience_done, exact totals from the messages themselves
/// (crash-safe: a page cut short by a crash was not counted), lease released, then settle.
async fn finish(s: &Scheduler, id: Uuid, report: &mut TickReport) -> anyhow::Result<()> {
    let mut conn = s.core().pg().get().await?;
    let owner = s.owner().to_string();
    let totals: Option<Totals> = transact_on::<_, Infallible, _>(&mut conn, "campaign_finish", |c| {
        let owner = owner.clone();
        async move {
            let rows: Vec<Totals> = diesel::sql_query(
                "WITH counts AS (
                     SELECT count(*)::int4 AS total,
                            (count(*) FILTER (WHERE NOT (coalesce(m.error_category, '') = 'compliance'
                                                         AND coalesce(m.error_code, -1) = 0)))::int4 AS enqueued
                     FROM messages m WHERE m.campaign_id = $1)
                 UPDATE campaigns c SET audience_done = true,
                        total_recipients = counts.total, enqueued_count = counts.enqueued,
                        lease_until = NULL, lease_owner = NULL, updated_at = now()
                 FROM counts
                 WHERE c.id = $1 AND c.lease_owner = $2 AND NOT c.audience_done
                 RETURNING c.total_recipients, c.enqueued_count",
            )
            .bind::<SqlUuid, _>(id)
            .bind::<Text, _>(&owner)
            .load(c)
            .await?;
            let Some(t) = rows.into_iter().next() else {
                return Ok(None);
            };
            warden_store::audit::record(
                c,
                ACTOR,
                "campaign_audience_done",
                "campaign",
                &id.to_string(),
                json!({"total_recipients": t.total_recipients, "enqueued": t.enqueued_count}),
            )
            .await?;
            Ok(Some(t))
        }
        .boxed()
    })
    .await?;
    if let Some(t) = totals {
        report.campaigns_finished_fanout += 1;
        tracing::info!(campaign_id = %id, total_recipients = t.total_recipients, enqueued = t.enqueued_count, "campaign audience done");
        if let Some(status) = warden_core::campaigns::settle_if_done(&mut conn, id).await? {
            report.campaigns_settled += 1;
            tracing::info!(campaign_id = %id, status, "campaign settled");
        }
    }
    Ok(())
}

/// A campaign that cannot run at all (a bad audience filter or variables): `failed` with
/// the reason, audited.
async fn fail_campaign(s: &Scheduler, id: Uuid, reason: &str) -> anyhow::Result<()> {
    let mut conn = s.core().pg().get().await?;
    let reason = reason.to_string();
    transact_on::<_, Infallible, _>(&mut conn, "campaign_fail", |c| {
        let reason = reason.clone();
        async move {
            let n = diesel::sql_query(
                "UPDATE campaigns SET status = 'failed', status_reason = $2, lease_until = NULL,
                    lease_owner = NULL, updated_at = now()
             WHERE id = $1 AND status IN ('running', 'sending')",
            )
            .bind::<SqlUuid, _>(id)
            .bind::<Text, _>(&reason)
            .execute(c)
            .await?;
            if n > 0 {
                warden_store::audit::record(
                    c,
                    ACTOR,
                    "campaign_failed",
                    "campaign",
                    &id.to_string(),
                    json!({"reason": reason}),
                )
                .await?;
            }
            Ok(())
        }
        .boxed()
    })
    .await?;
    tracing::error!(campaign_id = %id, reason, "campaign cannot run; marked failed");
    Ok(())
}

/// Running campaigns whose audience is done: completed / failed once every recipient has a
/// final outcome (the dispatcher and webhook also settle as outcomes arrive).
pub(crate) async fn settle(s: &Scheduler, report: &mut TickReport) -> anyhow::Result<()> {
    let mut conn = s.core().pg().get().await?;
    let ids: Vec<IdRow> = diesel::sql_query(
        "SELECT id FROM campaigns WHERE status IN ('running', 'sending') AND audience_done",
    )
    .load(&mut conn)
    .await?;
    for IdRow { id } in ids {
        if let Some(status) = warden_core::campaigns::settle_if_done(&mut conn, id).await? {
            report.campaigns_settled += 1;
            tracing::info!(campaign_id = %id, status, "campaign settled");
        }
    }
    Ok(())
}

#[derive(diesel::QueryableByName)]
struct SeenRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = Timestamptz)]
    now: DateTime<Utc>,
}

/// Notice resumed campaigns (paused at an earlier poll, running now) and republish their
/// queued messages published before the resume: the dispatcher acknowledged those without
/// sending while the campaign was paused. Bounded per poll; continues at the next.
pub(crate) async fn republish_resumed(
    s: &Scheduler,
    report: &mut TickReport,
) -> anyhow::Result<()> {
    let mut conn = s.core().pg().get().await?;
    let previously: Vec<Uuid> = s
        .paused_seen
        .lock()
        .expect("lock")
        .iter()
        .copied()
        .collect();
    let rows: Vec<SeenRow> = diesel::sql_query(
        "SELECT id, status, now() AS now FROM campaigns WHERE status = 'paused' OR id = ANY($1)",
    )
    .bind::<Array<SqlUuid>, _>(&previously)
    .load(&mut conn)
    .await?;
    {
        let mut seen = s.paused_seen.lock().expect("lock");
        let mut resumed = s.resumed.lock().expect("lock");
        let now_paused: HashSet<Uuid> = rows
            .iter()
            .filter(|r| r.status == "paused")
            .map(|r| r.id)
            .collect();
        for r in &rows {
            if seen.contains(&r.id) && is_sending_state(&r.status) {
                tracing::info!(campaign_id = %r.id, "campaign resumed: republishing its held messages");
                resumed.insert(r.id, r.now);
            }
            if !is_sending_state(&r.status) {
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
        let held: Vec<crate::publish::Pending> = diesel::sql_query(format!(
            "SELECT {} FROM messages m JOIN campaigns c ON c.id = m.campaign_id
             WHERE m.campaign_id = $1 AND m.status = 'queued' AND c.status IN ('running', 'sending')
               AND (m.published_at IS NULL OR m.published_at < $2)
             ORDER BY m.id
             LIMIT $3",
            crate::publish::PENDING_COLUMNS
        ))
        .bind::<SqlUuid, _>(campaign_id)
        .bind::<Timestamptz, _>(since)
        .bind::<BigInt, _>(s.config().relay_batch)
        .load(&mut conn)
        .await?;
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
