//! Campaign state: the control transitions (pause, resume, cancel), the read with its
//! counters, and the changes more than one process makes (halt-class pause, settling).
//! Creating a campaign is [`create`], what it would do now [`preview`]; the scheduler's writes (start, claim, cursor, finish,
//! close) are the [`fanout`]'s; the states themselves are [`CampaignStatus`].
//!
//! **Lock order.** A transition locks only the campaign row, with `FOR NO KEY UPDATE`,
//! and nothing else; it never waits on message rows. Every other writer locks message
//! rows first and the campaign row after (status outcomes, refusals and the counter
//! triggers), and inserting a campaign message takes only the foreign key's `KEY SHARE`
//! on the campaign, which `NO KEY UPDATE` does not conflict with. The old transition's
//! `SELECT ... FOR UPDATE` did conflict with it: a fan-out transaction holding
//! `KEY SHARE` that then updated the campaign's counters queued behind the waiting
//! transition, which waited on it — Postgres's `deadlock detected`. Pause and cancel first
//! close the fan-out's [`gate`] (an advisory lock every chunk transaction holds shared
//! before anything else), so they wait for the chunks in flight and no chunk commits
//! after them; the gate comes before the campaign row on both sides.
//!
//! **Counters.** Each recipient is counted once, in its message's latest state:
//! `sent_count` (sent, delivered, read), `delivered_count` (delivered, read; part of
//! sent), `failed_count`, `cancelled_count` (never sent because the campaign was
//! cancelled), and pending (accepted, not final). A deferred trigger on `messages`
//! (migration `2026-11-23-280001_campaign_counters`) moves a recipient from one bucket to
//! another when the transaction that changed its row commits, whoever wrote it, so the
//! committed counters always add up to the recipients reached. Being deferred, it locks
//! the campaign row last, after every message row of that transaction: one lock order.

pub mod create;
pub mod fanout;
pub(crate) mod gate;
pub mod preview;
mod reached;

use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures::FutureExt;
use serde_json::{Value, json};
use uuid::Uuid;
use warden_rules::campaign_status::CampaignStatus;
use warden_store::DbError;
use warden_store::PgPool;
use warden_store::models::Campaign;
use warden_store::schema::{campaigns, messages};
use warden_store::tx::{Abort, TxError, transact};

/// The stored spellings of [`CampaignStatus::ACTIVE`], for callers that still compare
/// strings; prefer [`CampaignStatus::is_active`].
pub const ACTIVE: &[&str] = &[
    CampaignStatus::ACTIVE[0].as_str(),
    CampaignStatus::ACTIVE[1].as_str(),
    CampaignStatus::ACTIVE[2].as_str(),
];
/// The stored spellings of [`CampaignStatus::TERMINAL`]; prefer
/// [`CampaignStatus::is_terminal`].
pub const TERMINAL: &[&str] = &[
    CampaignStatus::TERMINAL[0].as_str(),
    CampaignStatus::TERMINAL[1].as_str(),
    CampaignStatus::TERMINAL[2].as_str(),
    CampaignStatus::TERMINAL[3].as_str(),
];
/// Recipients one fan-out transaction judges and records together (a chunk). Its size
/// bounds nothing a person sees: pause_campaign and cancel_campaign wait for the chunks in
/// flight ([`gate`]), and nothing more is queued after they answer. Larger chunks spread
/// each transaction's fixed cost (about twenty statements) over more recipients; 256
/// customers locked for one chunk's few milliseconds is what single sends to them wait.
pub const FANOUT_CHUNK: usize = 256;

/// Why a campaign use case did not happen. Nothing was changed in any case.
#[derive(Debug, thiserror::Error)]
pub enum CampaignError {
    #[error("no campaign with id {0}")]
    NotFound(Uuid),
    /// cancel_campaign on a completed, failed or cancelled campaign.
    #[error("campaign {id} is already {status}")]
    Terminal { id: Uuid, status: CampaignStatus },
    /// pause of a campaign that is not active, resume of one that is not paused.
    #[error("campaign {id} is {status}; it cannot move to {to}")]
    InvalidTransition {
        id: Uuid,
        status: CampaignStatus,
        to: CampaignStatus,
    },
    /// Conflicts persisted after the store's retries (rolled back).
    #[error("database conflict: {0}")]
    Busy(String, u64),
    #[error("{0}")]
    Unavailable(String),
}

impl From<TxError<CampaignError>> for CampaignError {
    fn from(e: TxError<CampaignError>) -> Self {
        match e {
            TxError::App(e) => e,
            TxError::Db(e) => e.into(),
        }
    }
}

impl From<DbError> for CampaignError {
    fn from(e: DbError) -> Self {
        match e {
            DbError::Busy {
                ref last,
                retry_after_secs,
                ..
            } => CampaignError::Busy(last.clone(), retry_after_secs),
            other => CampaignError::Unavailable(other.to_string()),
        }
    }
}

impl From<diesel::result::Error> for CampaignError {
    fn from(e: diesel::result::Error) -> Self {
        DbError::from(e).into()
    }
}

impl<E: std::error::Error + 'static> From<bb8::RunError<E>> for CampaignError {
    fn from(err: bb8::RunError<E>) -> Self {
        DbError::from(err).into()
    }
}

/// A transition that happened: the campaign as it was just before.
#[derive(Debug, Clone)]
pub struct Moved {
    pub before: Campaign,
}

#[derive(Clone, Copy)]
enum Action {
    Pause,
    Resume,
    Cancel,
    /// An operator lets a pending_approval campaign run: scheduled (it starts at deliver_at).
    Approve,
    /// An operator refuses a pending_approval campaign, with the reason.
    Reject,
}

impl Action {
    fn to(self) -> CampaignStatus {
        match self {
            Action::Pause => CampaignStatus::Paused,
            Action::Resume => CampaignStatus::Running,
            Action::Cancel => CampaignStatus::Cancelled,
            Action::Approve => CampaignStatus::Scheduled,
            Action::Reject => CampaignStatus::Rejected,
        }
    }
    fn audit(self) -> &'static str {
        match self {
            Action::Pause => "campaign_paused",
            Action::Resume => "campaign_resumed",
            Action::Cancel => "campaign_cancelled",
            Action::Approve => "campaign_approved",
            Action::Reject => "campaign_rejected",
        }
    }
    /// The rule of the state table (docs/operations.md, Scheduling and campaigns).
    fn check(self, c: &Campaign) -> Result<(), CampaignError> {
        // No state of the table: a broken row, moved by nobody.
        let status: CampaignStatus = c
            .status
            .parse()
            .map_err(|e| CampaignError::Unavailable(format!("campaign {}: {e}", c.id)))?;
        let ok = match self {
            Action::Pause => status.is_active(),
            Action::Resume => status == CampaignStatus::Paused,
            Action::Cancel => {
                if status.is_terminal() {
                    return Err(CampaignError::Terminal { id: c.id, status });
                }
                true
            }
            Action::Approve | Action::Reject => status == CampaignStatus::PendingApproval,
        };
        if ok {
            Ok(())
        } else {
            Err(CampaignError::InvalidTransition {
                id: c.id,
                status,
                to: self.to(),
            })
        }
    }
}

/// pause_campaign: scheduled, running or sending -> paused (paused_at set). Audited.
pub async fn pause(pg: &PgPool, id: Uuid, actor: &'static str) -> Result<Moved, CampaignError> {
    transition(pg, id, Action::Pause, None, actor).await
}

/// resume_campaign: paused -> running (the fan-out continues where it stopped). Audited.
pub async fn resume(pg: &PgPool, id: Uuid, actor: &'static str) -> Result<Moved, CampaignError> {
    transition(pg, id, Action::Resume, None, actor).await
}

/// cancel_campaign: any non-terminal state -> cancelled, with the reason. Audited. The
/// scheduler then fails the queued messages and counts the never-queued recipients as
/// cancelled.
pub async fn cancel(
    pg: &PgPool,
    id: Uuid,
    reason: Option<&str>,
    actor: &'static str,
) -> Result<Moved, CampaignError> {
    transition(pg, id, Action::Cancel, reason, actor).await
}

/// An operator approves a pending_approval campaign (`CAMPAIGN_APPROVAL=required`): it
/// becomes scheduled and runs from its deliver_at (at once when that has passed). Audited.
pub async fn approve(pg: &PgPool, id: Uuid, actor: &'static str) -> Result<Moved, CampaignError> {
    transition(pg, id, Action::Approve, None, actor).await
}

/// An operator rejects a pending_approval campaign: rejected for good, `reason` kept as its
/// status_reason (get_campaign's `rejection_reason`). Audited.
pub async fn reject(
    pg: &PgPool,
    id: Uuid,
    reason: &str,
    actor: &'static str,
) -> Result<Moved, CampaignError> {
    transition(pg, id, Action::Reject, Some(reason), actor).await
}

async fn transition(
    pg: &PgPool,
    id: Uuid,
    action: Action,
    reason: Option<&str>,
    actor: &'static str,
) -> Result<Moved, CampaignError> {
    // Owned, so each attempt's future borrows nothing but the connection.
    let reason: Option<String> = reason.map(str::to_string);
    let before = transact(pg, action.audit(), move |c| {
        let reason = reason.clone();
        async move {
            if matches!(action, Action::Pause | Action::Cancel) {
                // Wait for the fan-out's chunks in flight; later ones see the new status.
                gate::close(c, id).await?;
            }
            // Only the campaign row, and never FOR UPDATE (see the module doc).
            let Some(current) = campaigns::table
                .find(id)
                .select(Campaign::as_select())
                .for_no_key_update()
                .first(c)
                .await
                .optional()?
            else {
                return Err(Abort::App(CampaignError::NotFound(id)));
            };
            action.check(&current).map_err(Abort::App)?;
            let to = action.to();
            let now = chrono::Utc::now();
            let paused_at = match action {
                Action::Pause => Some(now),
                Action::Resume => None,
                Action::Cancel | Action::Approve | Action::Reject => current.paused_at,
            };
            let status_reason = match action {
                Action::Resume | Action::Approve => None,
                _ => reason.clone().or_else(|| current.status_reason.clone()),
            };
            diesel::update(campaigns::table.find(id))
                .set((
                    campaigns::status.eq(to.as_str()),
                    campaigns::paused_at.eq(paused_at),
                    campaigns::status_reason.eq(status_reason),
                    // A person's or agent's action: no rule holds it any more.
                    campaigns::paused_by_rule.eq(None::<String>),
                    campaigns::updated_at.eq(now),
                ))
                .execute(c)
                .await?;
            let mut details = json!({"from_status": current.status, "to_status": to.as_str()});
            if let (Some(r), Value::Object(m)) = (&reason, &mut details) {
                m.insert("reason".into(), json!(r));
            }
            warden_store::audit::record(
                c,
                actor,
                action.audit(),
                "campaign",
                &id.to_string(),
                details,
            )
            .await?;
            Ok(current)
        }
        .boxed()
    })
    .await?;
    tracing::info!(campaign_id = %id, from = before.status, to = %action.to(), "campaign state changed");
    Ok(Moved { before })
}

/// A campaign with its counters, read in one snapshot.
#[derive(Debug, Clone)]
pub struct CampaignView {
    pub campaign: Campaign,
    /// Recipients given a message that has no final outcome yet.
    pub pending_count: i32,
    /// The stored key of the number it goes out from (the first of several).
    pub sender: String,
    /// The stored keys of its numbers when it spreads over several; `None` for one.
    pub senders: Option<Vec<String>>,
}

impl CampaignView {
    /// Recipients reached so far: given a message, or counted as cancelled. Equals
    /// `total_recipients` once the audience has been read to the end.
    pub fn recipients(&self) -> i32 {
        let c = &self.campaign;
        c.sent_count + c.failed_count + c.cancelled_count + self.pending_count
    }
}

/// get_campaign: the row and its pending count, consistent with each other.
pub async fn get(pg: &PgPool, id: Uuid) -> Result<CampaignView, CampaignError> {
    let mut conn = pg.get().await?;
    let view = conn
        .build_transaction()
        .read_only()
        .repeatable_read()
        .run::<_, diesel::result::Error, _>(async |c| {
            let Some(campaign) = campaigns::table
                .find(id)
                .select(Campaign::as_select())
                .first(c)
                .await
                .optional()?
            else {
                return Ok(None);
            };
            let pending: i64 = messages::table
                .filter(messages::campaign_id.eq(id))
                .filter(messages::status.eq_any(["scheduled", "queued", "sending"]))
                .count()
                .get_result(c)
                .await?;
            // Not in the shared `Campaign` model: read beside it, in the same snapshot.
            let (sender, senders) = campaigns::table
                .find(id)
                .select((campaigns::sender_id, campaigns::senders))
                .first::<(String, Option<Vec<String>>)>(c)
                .await?;
            Ok(Some(CampaignView {
                campaign,
                pending_count: pending as i32,
                sender,
                senders,
            }))
        })
        .await?;
    view.ok_or(CampaignError::NotFound(id))
}

/// Halt-class platform errors: pause every active campaign with the reason, or only those
/// sending from the sender stored as `sender` (alone or among several numbers). Audited.
/// Locks the campaign rows in id order (two such pauses never deadlock each other).
pub async fn pause_active(
    conn: &mut AsyncPgConnection,
    reason: &str,
    sender: Option<&str>,
    actor: &str,
) -> QueryResult<usize> {
    #[derive(QueryableByName)]
    struct IdRow {
        #[diesel(sql_type = diesel::sql_types::Uuid)]
        id: Uuid,
    }
    let paused: Vec<IdRow> = diesel::sql_query(
        "UPDATE campaigns SET status = $2, paused_at = now(), status_reason = $1, updated_at = now()
         WHERE id IN (SELECT id FROM campaigns WHERE status = ANY($3)
                        AND ($4::text IS NULL OR sender_id = $4 OR $4 = ANY(senders))
                      ORDER BY id FOR NO KEY UPDATE)
           AND status = ANY($3)
         RETURNING id",
    )
    .bind::<diesel::sql_types::Text, _>(reason)
    .bind::<diesel::sql_types::Text, _>(CampaignStatus::Paused.as_str())
    .bind::<diesel::sql_types::Array<diesel::sql_types::Text>, _>(CampaignStatus::names(
        &CampaignStatus::ACTIVE,
    ))
    .bind::<diesel::sql_types::Nullable<diesel::sql_types::Text>, _>(sender)
    .load(conn)
    .await?;
    for IdRow { id } in &paused {
        warden_store::audit::record(
            conn,
            actor,
            "campaign_paused",
            "campaign",
            &id.to_string(),
            json!({"reason": reason, "sender": sender, "automatic": true}),
        )
        .await?;
    }
    if !paused.is_empty() {
        tracing::error!(
            count = paused.len(),
            reason,
            "paused active campaigns (halt-class platform error or sender protection)"
        );
    }
    Ok(paused.len())
}

/// Mark a running campaign `completed` (or `failed` when nothing could be sent) once its
/// audience is fully fanned out and no recipient message is still on its way.
pub async fn settle_if_done(
    conn: &mut AsyncPgConnection,
    campaign_id: Uuid,
) -> QueryResult<Option<CampaignStatus>> {
    // One statement so concurrent outcome updates cannot both miss the last message. Reads
    // the rows, not sent_count: the counters move when the caller's transaction commits.
    let status: Option<String> = diesel::sql_query(
        "WITH any_sent AS (SELECT EXISTS (SELECT 1 FROM messages m WHERE m.campaign_id = $1
                                          AND m.status IN ('sent', 'delivered', 'read')) AS yes)
         UPDATE campaigns c SET status = CASE WHEN any_sent.yes THEN $2 ELSE $3 END,
                status_reason = CASE WHEN any_sent.yes THEN c.status_reason ELSE 'no recipient could be sent' END,
                updated_at = now()
         FROM any_sent
         WHERE c.id = $1 AND c.status = ANY($4) AND c.audience_done
           AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.campaign_id = c.id
                           AND m.status IN ('scheduled', 'queued', 'sending'))
         RETURNING c.status",
    )
    .bind::<diesel::sql_types::Uuid, _>(campaign_id)
    .bind::<diesel::sql_types::Text, _>(CampaignStatus::Completed.as_str())
    .bind::<diesel::sql_types::Text, _>(CampaignStatus::Failed.as_str())
    .bind::<diesel::sql_types::Array<diesel::sql_types::Text>, _>(CampaignStatus::names(
        &CampaignStatus::SENDING,
    ))
    .get_result::<StatusRow>(conn)
    .await
    .optional()?
    .map(|r| r.status);
    // Only completed or failed are written above.
    Ok(status.and_then(|s| s.parse().ok()))
}

#[derive(QueryableByName)]
struct StatusRow {
    #[diesel(sql_type = diesel::sql_types::Text)]
    status: String,
}
