//! Storing a POST's events: one Postgres transaction per POST, each event applied once.
//!
//! ```text
//! BEGIN
//!   INSERT INTO webhook_events SELECT * FROM unnest(keys sorted) ON CONFLICT DO NOTHING
//!       RETURNING event_key             -> only these (new) events are applied
//!   warden_core::platform_events::apply (what each kind of event does, one module per family):
//!   display numbers learnt, inbound senders' identities linked, inbound messages stored
//!   per number, forward-only statuses applied together; then every event in the order the
//!   platform sent it; pricing and quality rows last
//! COMMIT -> window cache write-through -> 200 (retried messages published meanwhile)
//! ```
//!
//! This crate keeps the HTTP side of it: which events are new, the transaction and its
//! retries, the per-event fallback, and what follows the commit (the window cache, hints,
//! publishing retried messages, asking the platform about numbers, metrics).
//!
//! Replicas: the key insert is the arbiter (`warden_core::platform_events::claim_keys`).
//! Two replicas handed the same event block on the key's unique index until the first
//! commits; the second then sees a conflict and skips it. Keys go in sorted, so
//! overlapping batches take those locks in one order. The transaction runs through
//! `warden_store::tx::transact`, which retries a deadlock elsewhere (customer rows) or a
//! serialization failure; a unique race is retried here.
//!
//! Poison events: if a batch keeps failing for a reason other than a lost connection, it
//! is replayed in "careful" mode, one savepoint per event; events that still fail are
//! logged, counted (`kind="failed"`), and their key recorded as `failed:<kind>` so
//! replays do not retry them forever. One bad event never holds a batch hostage.

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use diesel::QueryResult;
use diesel_async::{AsyncConnection, AsyncPgConnection};
use futures::{FutureExt, StreamExt};
use warden_core::Core;
use warden_core::HintKind;
use warden_core::conversations::inbound::NoWindow;
use warden_core::delivery::platform_errors::RetryPolicy;
use warden_core::platform_events::{self, Effects};
use warden_store::DbError;
use warden_store::error::is_transient;
use warden_store::tx::{Abort, TxError, transact};

use crate::events::{Event, EventKind};
use crate::metrics;

mod for_core;

/// Who the audit log names for the webhook's effects.
pub const ACTOR: &str = "webhook";
/// Attempts of a whole batch on unique races (deadlocks and serialization failures are
/// retried by `warden_store::tx` within each).
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
    /// Counted here: applied, replays, failed, ignored (the rest is filled from `effects`
    /// after the commit).
    outcome: Outcome,
    /// What the core's use cases ask for once the batch is committed.
    effects: Effects,
}

impl BatchState {
    fn merge(&mut self, other: BatchState) {
        self.outcome.merge(other.outcome);
        self.effects.merge(other.effects);
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
pub async fn ingest(core: &Core, events: Vec<Event>) -> Result<Outcome, IngestError> {
    if events.is_empty() {
        return Ok(Outcome::default());
    }
    let started = Instant::now();
    let count = events.len();
    // Shared, so each attempt of the transaction borrows nothing but its connection.
    let events: Arc<[Event]> = events.into();
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
                "storing {count} events took longer than {}s",
                DEADLINE.as_secs()
            )))
        }
    }
}

async fn ingest_inner(core: &Core, events: Arc<[Event]>) -> Result<BatchState, IngestError> {
    let mut last_error = None;
    let mut fresh_connection_tried = false;
    let mut attempt = 0;
    while attempt < ATTEMPTS {
        attempt += 1;
        let batch = Arc::clone(&events);
        let shared_core = core.clone();
        let result = transact(core.pg(), "webhook batch", move |c| {
            let (events, core) = (Arc::clone(&batch), shared_core.clone());
            async move {
                let mut state = BatchState::default();
                apply_batch(c, &core, &events, &mut state).await?;
                Ok::<_, Abort<Infallible>>(state)
            }
            .boxed()
        })
        .await;
        let e = match result {
            Ok(state) => return Ok(state),
            Err(TxError::App(never)) => match never {},
            Err(TxError::Db(e)) => e,
        };
        match e {
            DbError::Conflict { .. } => {
                tracing::warn!(error = %e, attempt, "webhook batch raced another; retrying");
            }
            DbError::Unavailable(_) if !fresh_connection_tried => {
                // A pooled connection may have died with a Postgres restart: one more go
                // on a fresh one before answering 503.
                fresh_connection_tried = true;
                attempt -= 1;
                tracing::warn!(error = %e, "webhook batch lost its connection; retrying once");
            }
            DbError::Unavailable(_) => return Err(IngestError::Unavailable(e.to_string())),
            // A conflict that outlived the store's retries, or something in the data.
            DbError::Busy { .. } | DbError::Rejected(_) | DbError::NotFound => {
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
    if let Err(e) = platform_events::record_status_progress(core.pg(), at).await {
        // Let the next batch try again.
        AtomicI64::fetch_min(&PROGRESS_WRITTEN, secs - 1, Ordering::Relaxed);
        tracing::warn!(error = %e, "could not record webhook progress");
    }
}

/// Why careful mode gave up on the whole POST.
enum CarefulAbort {
    /// Contention or a lost connection is no fault of the event: answer 503 and let the
    /// platform's retry find a calmer moment.
    GiveUp(DbError),
}

/// Every event in its own savepoint; the ones that fail are set aside.
async fn careful(core: &Core, events: Arc<[Event]>) -> Result<BatchState, IngestError> {
    let shared_core = core.clone();
    let result = transact(core.pg(), "webhook batch, event by event", move |c| {
        let (events, core) = (Arc::clone(&events), shared_core.clone());
        async move {
            let mut state = BatchState::default();
            for event in events.iter() {
                let mut one = BatchState::default();
                let applied = c
                    .transaction::<_, diesel::result::Error, _>(async |sp| {
                        apply_batch(sp, &core, std::slice::from_ref(event), &mut one).await
                    })
                    .await;
                match applied {
                    Ok(()) => state.merge(one),
                    // The store retries the whole transaction.
                    Err(e) if is_transient(&e) => return Err(Abort::Db(e)),
                    Err(e) => match DbError::from(e) {
                        e @ (DbError::Unavailable(_) | DbError::Conflict { .. }) => {
                            return Err(Abort::App(CarefulAbort::GiveUp(e)));
                        }
                        e => {
                            tracing::error!(
                                event_key = %event.key,
                                kind = event.kind().as_str(),
                                error = %e,
                                "webhook event could not be applied; set aside"
                            );
                            state.outcome.failed += 1;
                            let kind = format!("failed:{}", event.kind().as_str());
                            platform_events::claim_keys(c, &[(event.key.as_str(), kind.as_str())])
                                .await?;
                        }
                    },
                }
            }
            Ok(state)
        }
        .boxed()
    })
    .await;
    match result {
        Ok(state) => Ok(state),
        Err(TxError::App(CarefulAbort::GiveUp(e)) | TxError::Db(e)) => {
            Err(IngestError::Unavailable(e.to_string()))
        }
    }
}

async fn after_commit(core: &Core, state: BatchState) -> Outcome {
    let BatchState {
        mut outcome,
        effects:
            Effects {
                windows,
                no_window,
                status_through,
                requeued,
                hint_inbound,
                hint_status,
                hint_holder,
                ask_accounts,
                ask_senders,
            },
    } = state;
    outcome.no_window = no_window;
    outcome.retried = requeued.len() as u64;
    if let Some(at) = status_through {
        record_progress(core, at).await;
    }
    // Off the answer's path: the platform is asked, then what waited is applied.
    crate::numbers::ask_later(core, ask_accounts, ask_senders);
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
    // Before the 200, after the cache: a gateway woken by the hint reads what is stored.
    fn pairs(set: &HashSet<(String, String)>) -> Vec<(&str, Option<&str>)> {
        set.iter()
            .map(|(customer, sender)| (customer.as_str(), Some(sender.as_str())))
            .collect()
    }
    core.hint(pairs(&hint_inbound), HintKind::Inbound).await;
    core.hint(pairs(&hint_status), HintKind::Status).await;
    core.hint(pairs(&hint_holder), HintKind::Holder).await;
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

/// One batch inside one transaction: which events are new (the rest are replays), then
/// the core applies them.
async fn apply_batch(
    c: &mut AsyncPgConnection,
    core: &Core,
    events: &[Event],
    state: &mut BatchState,
) -> QueryResult<()> {
    let mut keys: Vec<(&str, &str)> = events
        .iter()
        .map(|e| (e.key.as_str(), e.kind().as_str()))
        .collect();
    keys.sort_unstable();
    let inserted = platform_events::claim_keys(c, &keys).await?;
    let new: HashSet<&str> = inserted.iter().map(String::as_str).collect();
    let fresh: Vec<&Event> = events
        .iter()
        .filter(|e| new.contains(e.key.as_str()))
        .collect();
    state.outcome.replays += (events.len() - fresh.len()) as u64;
    if fresh.is_empty() {
        return Ok(());
    }
    let views: Vec<platform_events::Event> = fresh.iter().map(|e| e.for_core()).collect();
    let ctx = platform_events::Context::new(core, retry_policy(), ACTOR);
    let applied = platform_events::apply(c, &ctx, &views, &mut state.effects).await?;
    for (event, applied) in fresh.iter().zip(applied) {
        if applied {
            *state.outcome.applied.entry(event.kind()).or_default() += 1;
        } else {
            state.outcome.ignored += 1;
        }
    }
    Ok(())
}
