//! Campaign fan-out: the writes of the scheduler's campaign phases — start at
//! `deliver_at`, claim a campaign under a lease, send each recipient through
//! [`Core::send`], move the cursor and the counters, finish, close a cancelled campaign,
//! settle — each one use case here, each write through `warden_store::tx::transact`.
//! The scheduler keeps the loop, the batching and the timing (`warden_scheduler`).
//!
//! **Several schedulers.** A campaign is claimed with `FOR UPDATE SKIP LOCKED` and a lease
//! (`lease_owner`, `lease_until`); every later write of the fan-out names its owner and
//! does nothing (answers None) once the lease is someone else's. Recipients that already
//! have a message of the campaign are left out by the page query ([`audience`]), so a
//! page read again after a crash, pause or take-over gives nobody a second message.
//!
//! **Pause and cancel.** [`renew`] reads the campaign's status (and renews the lease)
//! before each chunk of [`crate::campaigns::FANOUT_CHUNK`] recipients, and each chunk's
//! transaction passes the campaign's gate (`crate::campaigns::gate`), which pause and
//! cancel close: after pause_campaign or cancel_campaign answers, nothing more is queued.

pub mod audience;
pub mod cancelled;
pub mod recipients;

use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::sql_types::{Array, Double, Int4, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use futures::FutureExt;
use serde_json::json;
use uuid::Uuid;
use warden_rules::audience::AudienceFilter;
use warden_rules::campaign_status::CampaignStatus;
use warden_store::PgPool;
use warden_store::tx::transact;

use crate::{CoreError, db};

pub use audience::{AudiencePage, count_remaining, load_page};
pub use recipients::{RecipientOutcome, RecipientPlan, send_chunk, send_recipient};

/// A stored status read back; an unknown spelling is a broken row, not a state.
fn status(s: &str) -> Result<CampaignStatus, CoreError> {
    s.parse()
        .map_err(|e: warden_rules::campaign_status::UnknownCampaignStatus| {
            CoreError::Unavailable(e.to_string())
        })
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

/// `scheduled` campaigns whose deliver_at has come move to `running` (audited). Returns
/// their ids.
pub async fn start_due(pg: &PgPool, actor: &'static str) -> Result<Vec<Uuid>, CoreError> {
    let started = transact::<_, CoreError, _>(pg, "campaigns_start", |c| {
        async move {
            let rows: Vec<IdRow> = diesel::sql_query(
                "UPDATE campaigns SET status = $1, updated_at = now()
                 WHERE id IN (SELECT id FROM campaigns
                              WHERE status = $2 AND deliver_at <= now()
                              FOR UPDATE SKIP LOCKED)
                 RETURNING id",
            )
            .bind::<Text, _>(CampaignStatus::Running.as_str())
            .bind::<Text, _>(CampaignStatus::Scheduled.as_str())
            .load(c)
            .await?;
            for r in &rows {
                warden_store::audit::record(
                    c,
                    actor,
                    "campaign_started",
                    "campaign",
                    &r.id.to_string(),
                    json!({"from_status": CampaignStatus::Scheduled.as_str(), "to_status": CampaignStatus::Running.as_str()}),
                )
                .await?;
            }
            Ok(rows.into_iter().map(|r| r.id).collect::<Vec<_>>())
        }
        .boxed()
    })
    .await?;
    for id in &started {
        tracing::info!(campaign_id = %id, "campaign started");
    }
    Ok(started)
}

/// Who holds a campaign's claim, and for how long each renewal holds.
#[derive(Debug, Clone)]
pub struct Lease {
    /// The scheduler process (unique per process).
    pub owner: String,
    /// How long a claim holds before another scheduler may take it over.
    pub duration: Duration,
}

impl Lease {
    fn secs(&self) -> f64 {
        self.duration.as_secs_f64()
    }
}

#[derive(diesel::QueryableByName, Debug)]
struct ClaimedRow {
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
    #[diesel(sql_type = Nullable<Jsonb>)]
    components: Option<serde_json::Value>,
    #[diesel(sql_type = Text)]
    sender_id: String,
    #[diesel(sql_type = Nullable<Array<Text>>)]
    senders: Option<Vec<String>>,
}

/// A campaign this scheduler holds the lease of.
#[derive(Debug, Clone)]
pub struct ClaimedCampaign {
    pub id: Uuid,
    pub name: String,
    /// Running / sending (fan out), or cancelled (count the never-queued recipients).
    pub status: CampaignStatus,
    pub template_name: String,
    pub locale: String,
    pub variables: serde_json::Value,
    pub audience_filter: serde_json::Value,
    /// The last phone of the last complete page (None: from the start).
    pub audience_cursor: Option<String>,
    /// Template header/button parameters (platform shape), None when the campaign has none.
    pub components: Option<serde_json::Value>,
    /// The stored keys of the numbers it goes out from (one, or several of one business).
    pub senders: Vec<String>,
}

/// Why a claimed campaign cannot run at all (it then ends `failed` with this reason).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unrunnable {
    #[error("audience_filter: {0}")]
    AudienceFilter(String),
    #[error("variables: {0}")]
    Variables(String),
}

impl ClaimedCampaign {
    /// The stored audience filter.
    pub fn audience(&self) -> Result<AudienceFilter, Unrunnable> {
        AudienceFilter::from_value(&self.audience_filter)
            .map_err(|e| Unrunnable::AudienceFilter(e.to_string()))
    }

    /// What every recipient's send shares.
    pub fn plan(&self) -> Result<RecipientPlan, Unrunnable> {
        use warden_rules::template_params::{Variables, named_body_component, parse_any_variables};
        let mut components = match &self.components {
            Some(serde_json::Value::Array(c)) => c.clone(),
            _ => Vec::new(),
        };
        let variables = match parse_any_variables(&self.variables)
            .map_err(|e| Unrunnable::Variables(e.to_string()))?
        {
            Variables::Positional(v) => v,
            Variables::Named(named) => {
                components.push(named_body_component(&named));
                Vec::new()
            }
        };
        Ok(RecipientPlan {
            campaign_id: self.id,
            template_name: self.template_name.clone(),
            locale: self.locale.clone(),
            variables,
            components,
            senders: self.senders.clone(),
        })
    }
}

/// Claim one running campaign whose audience is not done, or a cancelled one whose
/// never-queued recipients are not counted yet (lease free, expired or ours), skipping
/// `skip` (those already handled in this poll).
pub async fn claim(
    pg: &PgPool,
    lease: &Lease,
    skip: &[Uuid],
) -> Result<Option<ClaimedCampaign>, CoreError> {
    let claimable = CampaignStatus::names(&[
        CampaignStatus::Running,
        CampaignStatus::Sending,
        CampaignStatus::Cancelled,
    ]);
    let rows: Vec<ClaimedRow> = db::load(pg, "campaign_claim", || {
        diesel::sql_query(
            "UPDATE campaigns SET lease_owner = $1, lease_until = now() + make_interval(secs => $2)
             WHERE id = (SELECT id FROM campaigns
                         WHERE status = ANY($4) AND NOT audience_done
                           AND (lease_until IS NULL OR lease_until < now() OR lease_owner = $1)
                           AND NOT (id = ANY($3))
                         ORDER BY deliver_at, id
                         LIMIT 1
                         FOR UPDATE SKIP LOCKED)
             RETURNING id, name, status, template_name, locale, variables, audience_filter, audience_cursor, components, sender_id, senders",
        )
        .into_boxed()
        .bind::<Text, _>(lease.owner.clone())
        .bind::<Double, _>(lease.secs())
        .bind::<Array<SqlUuid>, _>(skip.to_vec())
        .bind::<Array<Text>, _>(claimable.clone())
    })
    .await?;
    let Some(r) = rows.into_iter().next() else {
        return Ok(None);
    };
    Ok(Some(ClaimedCampaign {
        id: r.id,
        name: r.name,
        status: status(&r.status)?,
        template_name: r.template_name,
        locale: r.locale,
        variables: r.variables,
        audience_filter: r.audience_filter,
        audience_cursor: r.audience_cursor,
        components: r.components,
        senders: r.senders.unwrap_or_else(|| vec![r.sender_id]),
    }))
}

/// Renew the lease and read the campaign's status in one statement (before each batch);
/// None when the lease is no longer `lease.owner`'s.
pub async fn renew(
    pg: &PgPool,
    id: Uuid,
    lease: &Lease,
) -> Result<Option<CampaignStatus>, CoreError> {
    progress(pg, "campaign_lease_renew", id, lease, None, 0).await
}

/// After a complete page: move the cursor to `last`, count the `enqueued`, renew the lease.
/// Returns the campaign's status, or None when the lease is no longer ours.
pub async fn advance(
    pg: &PgPool,
    id: Uuid,
    lease: &Lease,
    last: &str,
    enqueued: usize,
) -> Result<Option<CampaignStatus>, CoreError> {
    progress(pg, "campaign_advance", id, lease, Some(last), enqueued).await
}

/// [`renew`] and [`advance`]: one statement, the cursor moved only when `last` is given.
async fn progress(
    pg: &PgPool,
    what: &str,
    id: Uuid,
    lease: &Lease,
    last: Option<&str>,
    enqueued: usize,
) -> Result<Option<CampaignStatus>, CoreError> {
    let rows: Vec<StatusRow> = db::load(pg, what, || {
        diesel::sql_query(
            "UPDATE campaigns SET lease_until = now() + make_interval(secs => $3),
                    audience_cursor = coalesce($4, audience_cursor),
                    enqueued_count = enqueued_count + $5,
                    updated_at = CASE WHEN $4 IS NULL THEN updated_at ELSE now() END
             WHERE id = $1 AND lease_owner = $2
             RETURNING status",
        )
        .into_boxed()
        .bind::<SqlUuid, _>(id)
        .bind::<Text, _>(lease.owner.clone())
        .bind::<Double, _>(lease.secs())
        .bind::<Nullable<Text>, _>(last.map(str::to_string))
        .bind::<Int4, _>(enqueued as i32)
    })
    .await?;
    rows.into_iter()
        .next()
        .map(|r| status(&r.status))
        .transpose()
}

/// Give the campaign's lease back (another scheduler may take it at once).
pub async fn release(pg: &PgPool, id: Uuid, owner: &str) -> Result<(), CoreError> {
    db::execute(pg, "campaign_release", || {
        diesel::sql_query(
            "UPDATE campaigns SET lease_until = NULL, lease_owner = NULL WHERE id = $1 AND lease_owner = $2",
        )
        .into_boxed()
        .bind::<SqlUuid, _>(id)
        .bind::<Text, _>(owner.to_string())
    })
    .await?;
    Ok(())
}

/// Give back every campaign lease `owner` holds (shutdown). Returns how many.
pub async fn release_owned(pg: &PgPool, owner: &str) -> Result<usize, CoreError> {
    db::execute(pg, "campaign_release_all", || {
        diesel::sql_query(
            "UPDATE campaigns SET lease_until = NULL, lease_owner = NULL WHERE lease_owner = $1",
        )
        .into_boxed()
        .bind::<Text, _>(owner.to_string())
    })
    .await
}

/// What a campaign's first finished fan-out recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Finished {
    /// Every recipient given a message (accepted or refused).
    pub total_recipients: i32,
    /// Those accepted (not refused by compliance).
    pub enqueued: i32,
    /// Completed / failed when every recipient already has a final outcome.
    pub settled: Option<CampaignStatus>,
}

#[derive(diesel::QueryableByName)]
struct Totals {
    #[diesel(sql_type = Int4)]
    total_recipients: i32,
    #[diesel(sql_type = Int4)]
    enqueued_count: i32,
}

/// The audience is exhausted: audience_done, exact totals from the messages themselves
/// (crash-safe: a page cut short by a crash was not counted), lease released (audited),
/// then settled if every outcome is in. None when the lease is not `owner`'s or the
/// campaign was finished already.
pub async fn finish(
    pg: &PgPool,
    id: Uuid,
    owner: &str,
    actor: &'static str,
) -> Result<Option<Finished>, CoreError> {
    let totals: Option<Totals> = transact::<_, CoreError, _>(pg, "campaign_finish", |c| {
        let owner = owner.to_string();
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
            .bind::<Text, _>(owner)
            .load(c)
            .await?;
            let Some(t) = rows.into_iter().next() else {
                return Ok(None);
            };
            warden_store::audit::record(
                c,
                actor,
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
    let Some(t) = totals else {
        return Ok(None);
    };
    tracing::info!(campaign_id = %id, total_recipients = t.total_recipients, enqueued = t.enqueued_count, "campaign audience done");
    let settled = settle(pg, id).await?;
    Ok(Some(Finished {
        total_recipients: t.total_recipients,
        enqueued: t.enqueued_count,
        settled,
    }))
}

/// A campaign that cannot run at all (a bad audience filter or variables): `failed` with
/// the reason, lease released, audited. False when it was no longer running.
pub async fn fail(
    pg: &PgPool,
    id: Uuid,
    why: &Unrunnable,
    actor: &'static str,
) -> Result<bool, CoreError> {
    let reason = why.to_string();
    let failed = transact::<_, CoreError, _>(pg, "campaign_fail", |c| {
        let reason = reason.clone();
        async move {
            let n = diesel::sql_query(
                "UPDATE campaigns SET status = $3, status_reason = $2, lease_until = NULL,
                    lease_owner = NULL, updated_at = now()
                 WHERE id = $1 AND status = ANY($4)",
            )
            .bind::<SqlUuid, _>(id)
            .bind::<Text, _>(&reason)
            .bind::<Text, _>(CampaignStatus::Failed.as_str())
            .bind::<Array<Text>, _>(CampaignStatus::names(&CampaignStatus::SENDING))
            .execute(c)
            .await?;
            if n > 0 {
                warden_store::audit::record(
                    c,
                    actor,
                    "campaign_failed",
                    "campaign",
                    &id.to_string(),
                    json!({"reason": reason}),
                )
                .await?;
            }
            Ok(n > 0)
        }
        .boxed()
    })
    .await?;
    tracing::error!(campaign_id = %id, reason, "campaign cannot run; marked failed");
    Ok(failed)
}

/// A cancelled campaign whose lease `owner` holds: the recipients of its audience never
/// given a message count as cancelled, total_recipients becomes every recipient reached,
/// the lease goes (audited). Without a readable `filter` none are counted. Returns the
/// never-queued count, or None when the lease is not `owner`'s or it was closed already
/// (the caller then releases its claim).
pub async fn close_cancelled(
    pg: &PgPool,
    id: Uuid,
    owner: &str,
    filter: Option<&AudienceFilter>,
    actor: &'static str,
) -> Result<Option<i64>, CoreError> {
    let remaining = match filter {
        Some(f) => count_remaining(pg, id, f, Utc::now()).await?,
        None => 0,
    };
    let closed = transact::<_, CoreError, _>(pg, "campaign_close_cancelled", |c| {
        let owner = owner.to_string();
        async move {
            let n = diesel::sql_query(
                "UPDATE campaigns c SET audience_done = true,
                        cancelled_count = c.cancelled_count + $3,
                        total_recipients = (SELECT count(*)::int4 FROM messages m WHERE m.campaign_id = c.id) + $3,
                        lease_until = NULL, lease_owner = NULL, updated_at = now()
                 WHERE c.id = $1 AND c.lease_owner = $2 AND c.status = $4 AND NOT c.audience_done",
            )
            .bind::<SqlUuid, _>(id)
            .bind::<Text, _>(owner)
            .bind::<Int4, _>(remaining as i32)
            .bind::<Text, _>(CampaignStatus::Cancelled.as_str())
            .execute(c)
            .await?;
            if n > 0 {
                warden_store::audit::record(
                    c,
                    actor,
                    "campaign_recipients_cancelled",
                    "campaign",
                    &id.to_string(),
                    json!({"never_queued": remaining as i32}),
                )
                .await?;
            }
            Ok(n > 0)
        }
        .boxed()
    })
    .await?;
    if closed {
        tracing::info!(campaign_id = %id, never_queued = remaining, "cancelled campaign closed: the rest of its audience counted as cancelled");
        Ok(Some(remaining))
    } else {
        Ok(None)
    }
}

/// [`crate::campaigns::settle_if_done`] in a transaction of its own.
async fn settle(pg: &PgPool, id: Uuid) -> Result<Option<CampaignStatus>, CoreError> {
    let settled = transact::<_, CoreError, _>(pg, "campaign_settle", |c| {
        async move { Ok(crate::campaigns::settle_if_done(c, id).await?) }.boxed()
    })
    .await?;
    if let Some(status) = settled {
        tracing::info!(campaign_id = %id, %status, "campaign settled");
    }
    Ok(settled)
}

/// Running campaigns whose audience is done: completed / failed once every recipient has a
/// final outcome (the dispatcher and webhook also settle as outcomes arrive). Returns those
/// settled now.
pub async fn settle_done(pg: &PgPool) -> Result<Vec<(Uuid, CampaignStatus)>, CoreError> {
    let ids: Vec<IdRow> = {
        let mut conn = pg.get().await?;
        diesel::sql_query("SELECT id FROM campaigns WHERE status = ANY($1) AND audience_done")
            .bind::<Array<Text>, _>(CampaignStatus::names(&CampaignStatus::SENDING))
            .load(&mut conn)
            .await?
    };
    let mut settled = Vec::new();
    for IdRow { id } in ids {
        if let Some(status) = settle(pg, id).await? {
            settled.push((id, status));
        }
    }
    Ok(settled)
}

/// A campaign's status as read now, with the database's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeenStatus {
    pub id: Uuid,
    pub status: CampaignStatus,
    pub now: DateTime<Utc>,
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

/// The paused campaigns and the campaigns `also` (to notice resumes). Never writes.
pub async fn paused_and(pg: &PgPool, also: &[Uuid]) -> Result<Vec<SeenStatus>, CoreError> {
    let rows: Vec<SeenRow> = {
        let mut conn = pg.get().await?;
        diesel::sql_query(
            "SELECT id, status, now() AS now FROM campaigns WHERE status = $2 OR id = ANY($1)",
        )
        .bind::<Array<SqlUuid>, _>(also)
        .bind::<Text, _>(CampaignStatus::Paused.as_str())
        .load(&mut conn)
        .await?
    };
    rows.into_iter()
        .map(|r| {
            Ok(SeenStatus {
                id: r.id,
                status: status(&r.status)?,
                now: r.now,
            })
        })
        .collect()
}
