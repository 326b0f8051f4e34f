//! Storing a POST's events: one Postgres transaction per POST, each event applied once.
//!
//! ```text
//! BEGIN
//!   INSERT INTO webhook_events SELECT * FROM unnest(keys sorted) ON CONFLICT DO NOTHING
//!       RETURNING event_key             -> only these (new) events are applied
//!   inbound:  per customer, not per message: ensure + record_inbound + touch_interaction;
//!             every message row in one INSERT ... SELECT FROM unnest(...); only plausible
//!             customer messages open a window (`warden_core::inbound`)
//!   statuses: one SELECT for every message they mention, then outcomes::apply_status each;
//!             a failure is decided by `warden_core::platform_errors` exactly as the
//!             dispatcher decides the same error answered to its call (retryable: back to
//!             the queue, published after commit)
//!   templates: applied by the event's own time (`warden_core::templates`)
//!   in the order the platform sent them: keywords, statuses, templates, preferences
//!   quality:  one INSERT ... SELECT FROM unnest(...)
//! COMMIT -> window cache write-through -> 200 (retried messages published meanwhile)
//! ```
//!
//! Replicas: the key insert is the arbiter. Two replicas handed the same event block on
//! the key's unique index until the first commits; the second then sees a conflict and
//! skips it. Keys go in sorted, so overlapping batches take those locks in one order; a
//! deadlock elsewhere (customer rows) or a unique race is retried.
//!
//! Poison events: if a batch keeps failing for a reason other than a lost connection, it
//! is replayed in "careful" mode, one savepoint per event; events that still fail are
//! logged, counted (`kind="failed"`), and their key recorded as `failed:<kind>` so
//! replays do not retry them forever. One bad event never holds a batch hostage.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::result::{DatabaseErrorKind, Error as DbError};
use diesel::sql_types::Text;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use futures::StreamExt;
use uuid::Uuid;
use warden_core::Core;
use warden_core::customers::{self, OptScope};
use warden_core::inbound::NoWindow;
use warden_core::platform_errors::RetryPolicy;
use warden_rules::phone::PhoneNumber;
use warden_store::models::Conversation;

use crate::core_batch;
use crate::events::{
    Event, EventBody, EventKind, InboundEvent, PreferenceEvent, QualityEvent, StatusEvent,
};
use crate::metrics;
use crate::sql::{Bind, Stmt};
use status::{StatusTargets, apply_status};
use template::apply_template;

mod status;
mod template;

/// Who the audit log names for the webhook's effects.
pub const ACTOR: &str = "webhook";
const CHANNEL: &str = warden_settings::DEFAULT_CHANNEL;
/// Attempts of a whole batch on deadlocks, serialization failures and unique races.
const ATTEMPTS: usize = 3;
/// A POST that cannot be stored within this time is answered 503 (the platform retries).
const DEADLINE: Duration = Duration::from_secs(20);
/// Concurrent Redis writes when refreshing the window cache after a commit.
const CACHE_WRITES_IN_FLIGHT: usize = 4;
/// A cache write this slow means Redis is struggling (the core gives up at 250 ms).
const CACHE_SLOW: Duration = Duration::from_millis(200);

/// What a stored POST did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// New events applied, by kind.
    pub applied: HashMap<EventKind, u64>,
    /// Events applied before (by this or another replica): not applied again.
    pub replays: u64,
    /// Events set aside because they could not be applied (careful mode).
    pub failed: u64,
    /// New events acknowledged without effect (status of an unknown message, ...).
    pub ignored: u64,
    /// Inbound messages stored without opening or extending a window, by reason.
    pub no_window: HashMap<NoWindow, u64>,
    /// Failed statuses with a retryable error: their messages went back to the queue.
    pub retried: u64,
}

impl Outcome {
    pub fn applied_total(&self) -> u64 {
        self.applied.values().sum()
    }

    fn merge(&mut self, other: Outcome) {
        for (kind, n) in other.applied {
            *self.applied.entry(kind).or_default() += n;
        }
        self.replays += other.replays;
        self.failed += other.failed;
        self.ignored += other.ignored;
        for (reason, n) in other.no_window {
            *self.no_window.entry(reason).or_default() += n;
        }
        self.retried += other.retried;
    }
}

/// Storing failed: the POST must not be acknowledged.
#[derive(Debug, Clone, thiserror::Error)]
pub enum IngestError {
    /// Postgres is unreachable or went away (503: the platform retries).
    #[error("database unavailable: {0}")]
    Unavailable(String),
}

/// Effects of one transaction, acted on after it committed.
#[derive(Default)]
struct BatchState {
    outcome: Outcome,
    /// The newest conversation row per customer, for the window cache.
    windows: HashMap<String, Conversation>,
    /// The newest platform timestamp among the batch's new status events.
    status_through: Option<DateTime<Utc>>,
    /// Messages put back in the queue by a failed status: published after the commit.
    requeued: Vec<Uuid>,
}

impl BatchState {
    fn merge(&mut self, other: BatchState) {
        self.outcome.merge(other.outcome);
        self.windows.extend(other.windows);
        self.status_through = self.status_through.max(other.status_through);
        self.requeued.extend(other.requeued);
    }
}

static RETRY_POLICY: OnceLock<RetryPolicy> = OnceLock::new();

/// The dispatcher's retry bound and backoff, from the process's settings (the first
/// [`use_retry_policy`] wins; defaults before any).
fn retry_policy() -> &'static RetryPolicy {
    RETRY_POLICY.get_or_init(RetryPolicy::default)
}

/// Take the retry bound from the settings (`AppState::new` does, once per process).
pub fn use_retry_policy(policy: RetryPolicy) {
    let _ = RETRY_POLICY.set(policy);
}

/// Store `events` (distinct keys, in the order the platform sent them) in one transaction.
pub async fn ingest(core: &Core, events: &[Event]) -> Result<Outcome, IngestError> {
    if events.is_empty() {
        return Ok(Outcome::default());
    }
    let started = Instant::now();
    match tokio::time::timeout(DEADLINE, ingest_inner(core, events)).await {
        Ok(Ok(state)) => {
            observe(started, "committed");
            Ok(after_commit(core, state).await)
        }
        Ok(Err(e)) => {
            observe(started, "unavailable");
            Err(e)
        }
        Err(_) => {
            observe(started, "timeout");
            Err(IngestError::Unavailable(format!(
                "storing {} events took longer than {}s",
                events.len(),
                DEADLINE.as_secs()
            )))
        }
    }
}

async fn ingest_inner(core: &Core, events: &[Event]) -> Result<BatchState, IngestError> {
    let mut last_error = None;
    let mut fresh_connection_tried = false;
    let mut attempt = 0;
    while attempt < ATTEMPTS {
        attempt += 1;
        let mut conn = core.pg().get().await.map_err(unavailable)?;
        let mut state = BatchState::default();
        let result = conn
            .transaction::<_, DbError, _>(async |c| apply_batch(c, events, &mut state).await)
            .await;
        let e = match result {
            Ok(()) => return Ok(state),
            Err(e) => e,
        };
        match classify(&e) {
            Class::Transient => {
                tracing::warn!(error = %e, attempt, "webhook batch conflicted; retrying");
            }
            Class::Unavailable if !fresh_connection_tried => {
                // A pooled connection may have died with a Postgres restart: one more go
                // on a fresh one before answering 503.
                fresh_connection_tried = true;
                attempt -= 1;
                tracing::warn!(error = %e, "webhook batch lost its connection; retrying once");
            }
            Class::Unavailable => return Err(IngestError::Unavailable(e.to_string())),
            Class::Data => {
                last_error = Some(e);
                break;
            }
        }
        last_error = Some(e);
    }
    let reason = last_error.map(|e| e.to_string()).unwrap_or_default();
    tracing::warn!(%reason, events = events.len(), "webhook batch failed; applying event by event");
    careful(core, events).await
}

/// The newest status timestamp this process has written to `webhook_progress` (seconds).
static PROGRESS_WRITTEN: AtomicI64 = AtomicI64::new(i64::MIN);

/// Move `webhook_progress` forward (never back). Platform timestamps have whole seconds,
/// so each process writes about once a second; outside the batch's transaction, so the
/// one row is never a point of contention. A lost write only makes the dispatcher wait
/// longer before resending an unknown outcome.
async fn record_progress(core: &Core, at: DateTime<Utc>) {
    let secs = at.timestamp();
    if AtomicI64::fetch_max(&PROGRESS_WRITTEN, secs, Ordering::Relaxed) >= secs {
        return;
    }
    let written = async {
        let mut conn = core.pg().get().await.map_err(|e| e.to_string())?;
        diesel::sql_query(
            "INSERT INTO webhook_progress (id, status_through) VALUES (1, $1)
             ON CONFLICT (id) DO UPDATE
                SET status_through = GREATEST(webhook_progress.status_through, EXCLUDED.status_through)",
        )
        .bind::<diesel::sql_types::Timestamptz, _>(at)
        .execute(&mut conn)
        .await
        .map_err(|e| e.to_string())
    };
    if let Err(e) = written.await {
        // Let the next batch try again.
        AtomicI64::fetch_min(&PROGRESS_WRITTEN, secs - 1, Ordering::Relaxed);
        tracing::warn!(error = %e, "could not record webhook progress");
    }
}

/// Every event in its own savepoint; the ones that fail are set aside.
async fn careful(core: &Core, events: &[Event]) -> Result<BatchState, IngestError> {
    let mut conn = core.pg().get().await.map_err(unavailable)?;
    let mut state = BatchState::default();
    let result = conn
        .transaction::<_, DbError, _>(async |c| {
            for event in events {
                let mut one = BatchState::default();
                let applied = c
                    .transaction::<_, DbError, _>(async |sp| {
                        apply_batch(sp, std::slice::from_ref(event), &mut one).await
                    })
                    .await;
                match applied {
                    Ok(()) => state.merge(one),
                    // Contention or a lost connection is no fault of the event: give up on
                    // the POST (503) and let the platform's retry find a calmer moment.
                    Err(e) if classify(&e) != Class::Data => return Err(e),
                    Err(e) => {
                        tracing::error!(
                            event_key = %event.key,
                            kind = event.kind().as_str(),
                            error = %e,
                            "webhook event could not be applied; set aside"
                        );
                        state.outcome.failed += 1;
                        let kind = format!("failed:{}", event.kind().as_str());
                        insert_keys(c, &[(event.key.as_str(), kind.as_str())]).await?;
                    }
                }
            }
            Ok(())
        })
        .await;
    match result {
        Ok(()) => Ok(state),
        Err(e) => Err(IngestError::Unavailable(e.to_string())),
    }
}

async fn after_commit(core: &Core, state: BatchState) -> Outcome {
    let BatchState {
        outcome,
        windows,
        status_through,
        requeued,
    } = state;
    if let Some(at) = status_through {
        record_progress(core, at).await;
    }
    // A retried message needs a stream message of its own (the one that carried the
    // failed attempt was acknowledged). Off the answer's path: the events are stored, and a
    // slow NATS must not hold the platform's POST. When NATS cannot take it, the row stays
    // queued and unpublished and the scheduler's relay publishes it.
    if !requeued.is_empty() {
        let core = core.clone();
        tokio::spawn(async move {
            for id in requeued {
                match core.publish(id).await {
                    Ok(true) => {}
                    Ok(false) => tracing::warn!(message_id = %id,
                        "retry not published now; the relay publishes it"),
                    Err(e) => tracing::warn!(message_id = %id, error = %e,
                        "retry not published now; the relay publishes it"),
                }
            }
        });
    }
    // Write-through of the committed windows. When Redis is slow or down a write waits
    // out the core's timeout; after one such write the rest of the batch is skipped
    // rather than holding the answer for seconds. That is safe: a cached window lives
    // only as long as it is open (TTL = time left), so a copy we failed to refresh can
    // under-report the time remaining but never call an open window closed.
    let redis_slow = AtomicBool::new(false);
    futures::stream::iter(windows.values())
        .for_each_concurrent(CACHE_WRITES_IN_FLIGHT, |conv| {
            let redis_slow = &redis_slow;
            async move {
                if AtomicBool::load(redis_slow, Ordering::Relaxed) {
                    return;
                }
                let started = Instant::now();
                core.refresh_window_cache(conv).await;
                if started.elapsed() >= CACHE_SLOW {
                    redis_slow.store(true, Ordering::Relaxed);
                }
            }
        })
        .await;
    if AtomicBool::load(&redis_slow, Ordering::Relaxed) {
        tracing::warn!(
            windows = windows.len(),
            "window cache slow or down; write-through cut short"
        );
    }
    for (kind, n) in &outcome.applied {
        metrics::applied(*kind, *n);
    }
    metrics::ignored(outcome.ignored);
    for (reason, n) in &outcome.no_window {
        metrics::no_window(*reason, *n);
    }
    metrics::RETRIED.inc_by(outcome.retried);
    metrics::failed(outcome.failed);
    metrics::REPLAYS.inc_by(outcome.replays);
    outcome
}

fn observe(started: Instant, outcome: &str) {
    metrics::INGEST_SECONDS
        .with_label_values(&[outcome])
        .observe(started.elapsed().as_secs_f64());
}

fn unavailable(e: impl std::fmt::Display) -> IngestError {
    IngestError::Unavailable(e.to_string())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// Another transaction got in the way: try the batch again.
    Transient,
    /// The connection or the server is gone.
    Unavailable,
    /// Something in the data: retrying the same way will fail the same way.
    Data,
}

fn classify(e: &DbError) -> Class {
    match e {
        DbError::DatabaseError(kind, info) => match kind {
            DatabaseErrorKind::SerializationFailure | DatabaseErrorKind::UniqueViolation => {
                Class::Transient
            }
            DatabaseErrorKind::UnableToSendCommand | DatabaseErrorKind::ClosedConnection => {
                Class::Unavailable
            }
            _ => {
                let msg = info.message();
                if msg.contains("deadlock detected") {
                    Class::Transient
                } else if msg.contains("terminating connection")
                    || msg.contains("database system is")
                    || msg.contains("server closed the connection")
                    || msg.contains("connection closed")
                {
                    Class::Unavailable
                } else {
                    Class::Data
                }
            }
        },
        DbError::BrokenTransactionManager | DbError::AlreadyInTransaction => Class::Unavailable,
        _ => Class::Data,
    }
}

// ---------------------------------------------------------------------------------------
// One batch inside one transaction.

async fn apply_batch(
    c: &mut AsyncPgConnection,
    events: &[Event],
    state: &mut BatchState,
) -> QueryResult<()> {
    let mut keys: Vec<(&str, &str)> = events
        .iter()
        .map(|e| (e.key.as_str(), e.kind().as_str()))
        .collect();
    keys.sort_unstable();
    let inserted = insert_keys(c, &keys).await?;
    let new: HashSet<&str> = inserted.iter().map(String::as_str).collect();
    let fresh: Vec<&Event> = events
        .iter()
        .filter(|e| new.contains(e.key.as_str()))
        .collect();
    state.outcome.replays += (events.len() - fresh.len()) as u64;
    if fresh.is_empty() {
        return Ok(());
    }

    let inbound: Vec<&InboundEvent> = fresh
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Inbound(i) => Some(i),
            _ => None,
        })
        .collect();
    record_inbound(c, &inbound, state).await?;

    let statuses: Vec<&StatusEvent> = fresh
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Status(s) => Some(s),
            _ => None,
        })
        .collect();
    state.status_through = state
        .status_through
        .max(statuses.iter().map(|s| s.at).max());
    let mut targets = StatusTargets::load(c, &statuses).await?;

    let mut quality: Vec<&QualityEvent> = Vec::new();
    for event in &fresh {
        let applied = match &event.body {
            EventBody::Inbound(i) => {
                if let Some(change) = i.keyword {
                    customers::apply_opt_change(
                        c,
                        &i.phone,
                        change,
                        OptScope::All,
                        "stop_keyword",
                        ACTOR,
                        i.at,
                    )
                    .await?;
                }
                true
            }
            EventBody::Status(s) => apply_status(c, s, &mut targets, state).await?,
            EventBody::Template(t) => apply_template(c, t).await?,
            EventBody::Preference(p) => apply_preference(c, p).await?,
            EventBody::Quality(q) => {
                quality.push(q);
                true
            }
        };
        if applied {
            *state.outcome.applied.entry(event.kind()).or_default() += 1;
        } else {
            state.outcome.ignored += 1;
        }
    }
    insert_quality(c, &quality).await?;
    Ok(())
}

/// Insert keys (one statement, any number of them); returns the ones that were new.
async fn insert_keys(c: &mut AsyncPgConnection, keys: &[(&str, &str)]) -> QueryResult<Vec<String>> {
    let (k, kinds): (Vec<&str>, Vec<&str>) = keys.iter().copied().unzip();
    Stmt::<Text>::new(
        &[
            "INSERT INTO webhook_events (event_key, kind) SELECT * FROM unnest(",
            "::text[], ",
            "::text[]) ON CONFLICT (event_key) DO NOTHING RETURNING event_key",
        ],
        vec![Bind::Texts(k), Bind::Texts(kinds)],
    )
    .load(c)
    .await
}

/// Customers, care windows, last interaction and the inbound message rows: one
/// statement for the whole batch (see `core_batch`).
async fn record_inbound(
    c: &mut AsyncPgConnection,
    inbound: &[&InboundEvent],
    state: &mut BatchState,
) -> QueryResult<()> {
    if inbound.is_empty() {
        return Ok(());
    }
    // The window and last interaction only depend on each customer's newest message that
    // opens a window; a customer whose messages open none is still created.
    let mut newest: Vec<(&PhoneNumber, Option<DateTime<Utc>>)> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for i in inbound {
        let opens = match i.window {
            Ok(at) => Some(at),
            Err(reason) => {
                tracing::info!(wamid = %i.wamid, reason = reason.as_str(),
                    "inbound message stored; it opens no care window");
                *state.outcome.no_window.entry(reason).or_default() += 1;
                None
            }
        };
        match index.get(i.phone.digits()) {
            Some(&n) => newest[n].1 = newest[n].1.max(opens),
            None => {
                index.insert(i.phone.digits(), newest.len());
                newest.push((&i.phone, opens));
            }
        }
    }
    let rows: Vec<core_batch::InboundRow> = inbound
        .iter()
        .map(|i| core_batch::InboundRow {
            phone: i.phone.digits(),
            message_type: &i.message_type,
            content: &i.content,
            wamid: &i.wamid,
        })
        .collect();
    for conv in core_batch::record_inbound(c, CHANNEL, &newest, &rows).await? {
        state.windows.insert(conv.customer_phone.clone(), conv);
    }
    Ok(())
}

async fn apply_preference(c: &mut AsyncPgConnection, p: &PreferenceEvent) -> QueryResult<bool> {
    customers::apply_opt_change(
        c,
        &p.phone,
        p.change,
        OptScope::Marketing,
        "user_preferences",
        ACTOR,
        p.at,
    )
    .await?;
    Ok(true)
}

async fn insert_quality(c: &mut AsyncPgConnection, quality: &[&QualityEvent]) -> QueryResult<()> {
    if quality.is_empty() {
        return Ok(());
    }
    Stmt::<()>::new(
        &[
            "INSERT INTO account_quality_events (event, current_limit, display_phone_number, payload) \
             SELECT * FROM unnest(",
            "::text[], ",
            "::text[], ",
            "::text[], ",
            "::jsonb[])",
        ],
        vec![
            Bind::Texts(quality.iter().map(|q| q.event.as_str()).collect()),
            Bind::OptTexts(quality.iter().map(|q| q.current_limit.as_deref()).collect()),
            Bind::OptTexts(
                quality
                    .iter()
                    .map(|q| q.display_phone_number.as_deref())
                    .collect(),
            ),
            Bind::Jsons(quality.iter().map(|q| &q.payload).collect()),
        ],
    )
    .execute(c)
    .await?;
    for q in quality {
        tracing::warn!(event = %q.event, current_limit = q.current_limit.as_deref().unwrap_or(""),
                       "phone number quality update");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_contention_is_retried() {
        assert_eq!(classify(&DbError::NotFound), Class::Data);
        assert_eq!(
            classify(&DbError::DatabaseError(
                DatabaseErrorKind::SerializationFailure,
                Box::new(String::from("x"))
            )),
            Class::Transient
        );
        assert_eq!(
            classify(&DbError::DatabaseError(
                DatabaseErrorKind::Unknown,
                Box::new(String::from("deadlock detected"))
            )),
            Class::Transient
        );
        assert_eq!(
            classify(&DbError::DatabaseError(
                DatabaseErrorKind::ClosedConnection,
                Box::new(String::from("closed"))
            )),
            Class::Unavailable
        );
    }
}
