//! Storing a POST's events: one Postgres transaction per POST, each event applied once.
//!
//! ```text
//! BEGIN
//!   INSERT INTO webhook_events SELECT * FROM unnest(keys sorted) ON CONFLICT DO NOTHING
//!       RETURNING event_key             -> only these (new) events are applied
//!   inbound:  `warden_core::conversations::inbound_batch`: per customer, not per message, every message
//!             row in one statement; only plausible customer messages open a window
//!             (`warden_core::conversations::inbound`)
//!   statuses: `warden_core::delivery::statuses`: one SELECT for every message they mention, then
//!             each applied; a failure is decided by `warden_core::delivery::platform_errors` exactly
//!             as the dispatcher decides the same error answered to its call (retryable:
//!             back to the queue, published after commit)
//!   templates: applied by the event's own time (`warden_core::templates`)
//!   in the order the platform sent them: keywords, statuses, templates, preferences
//!   quality:  one INSERT ... SELECT FROM unnest(...) (`warden_core::delivery::platform_events`)
//! COMMIT -> window cache write-through -> 200 (retried messages published meanwhile)
//! ```
//!
//! Replicas: the key insert is the arbiter (`warden_core::delivery::platform_events::claim_keys`).
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

use std::collections::{BTreeMap, HashMap, HashSet};
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use diesel::QueryResult;
use diesel_async::{AsyncConnection, AsyncPgConnection};
use futures::{FutureExt, StreamExt};
use serde_json::Value;
use uuid::Uuid;
use warden_core::Core;
use warden_core::HintKind;
use warden_core::account::number_facts;
use warden_core::conversations::inbound::NoWindow;
use warden_core::conversations::inbound_batch::{self, Inbound};
use warden_core::customers::identity;
use warden_core::customers::{self, OptScope};
use warden_core::delivery::platform_errors::RetryPolicy;
use warden_core::delivery::platform_events::{self, QualityUpdate};
use warden_core::delivery::statuses::{self, StatusApplied, StatusTargets, StatusUpdate};
use warden_platform::webhook::StatusKind;
use warden_rules::message_status::MessageStatus;
use warden_rules::phone::PhoneNumber;
use warden_settings::{Sender, Senders, StoreKeys};
use warden_store::DbError;
use warden_store::error::is_transient;
use warden_store::models::Conversation;
use warden_store::tx::{Abort, TxError, transact};

use crate::events::{Event, EventBody, EventKind, InboundEvent, PreferenceEvent, StatusEvent};
use crate::metrics;
use template::apply_template;

mod holder;
mod template;
/// Who the audit log names for the webhook's effects.
pub const ACTOR: &str = "webhook";
const CHANNEL: &str = warden_settings::DEFAULT_CHANNEL;
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
    outcome: Outcome,
    /// The newest conversation row per customer, for the window cache.
    /// By (customer, sender key).
    windows: HashMap<(String, String), Conversation>,
    /// The newest platform timestamp among the batch's new status events.
    status_through: Option<DateTime<Utc>>,
    /// Messages put back in the queue by a failed status: published after the commit.
    requeued: Vec<Uuid>,
    /// Customers with a new inbound message / an outbound message that moved: gateways
    /// get a conversation hint for each after the commit.
    /// Each as (customer, sender key).
    hint_inbound: HashSet<(String, String)>,
    hint_status: HashSet<(String, String)>,
    /// Conversations whose holder (or history, by an echo) changed.
    hint_holder: holder::Hints,
    /// Business accounts with quality updates kept until the platform says whose number
    /// they are, and senders whose rating to read again: asked after the commit.
    ask_accounts: HashSet<String>,
    ask_senders: HashSet<String>,
}

impl BatchState {
    fn merge(&mut self, other: BatchState) {
        self.outcome.merge(other.outcome);
        self.windows.extend(other.windows);
        self.status_through = self.status_through.max(other.status_through);
        self.requeued.extend(other.requeued);
        self.hint_inbound.extend(other.hint_inbound);
        self.hint_status.extend(other.hint_status);
        self.hint_holder.extend(other.hint_holder);
        self.ask_accounts.extend(other.ask_accounts);
        self.ask_senders.extend(other.ask_senders);
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
        outcome,
        windows,
        status_through,
        requeued,
        hint_inbound,
        hint_status,
        hint_holder,
        ask_accounts,
        ask_senders,
    } = state;
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

// ---------------------------------------------------------------------------------------
// One batch inside one transaction: parse-level grouping here, every write a core use case.

/// The stored keys of the sender an event is about: its number's, else (events that name no
/// number) the first sender of its business account, else the default's.
fn keys_of(senders: &Senders, e: &Event) -> StoreKeys {
    senders.key_of(sender_of(senders, e))
}

fn sender_of<'a>(senders: &'a Senders, e: &'a Event) -> &'a Sender {
    e.number
        .as_deref()
        .and_then(|n| senders.by_phone_number_id(n))
        .or_else(|| senders.of_business(&e.account).next())
        .unwrap_or(senders.default())
}

async fn apply_batch(
    c: &mut AsyncPgConnection,
    core: &Core,
    events: &[Event],
    state: &mut BatchState,
) -> QueryResult<()> {
    let senders = core.senders();
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
    // Every event naming one of our numbers shows its display number: learnt first, so a
    // quality update later in this POST can already be matched by it.
    let mut displays: Vec<(String, String)> = fresh
        .iter()
        .filter_map(|e| {
            let sender = senders.by_phone_number_id(e.number.as_deref()?)?;
            Some((senders.key_of(sender).sender, e.display.clone()?))
        })
        .collect();
    displays.sort_unstable();
    displays.dedup_by(|a, b| a.0 == b.0);
    number_facts::learn_displays(c, &displays).await?;

    // Each sender's identifiers are linked first (a phone and a BSUID seen together name
    // one customer, merging two records when both exist), so everything below is keyed by
    // the customer's key whatever identifier this webhook carried.
    let mut keys: HashMap<&str, PhoneNumber> = HashMap::new();
    for e in &fresh {
        if let EventBody::Inbound(i) = &e.body
            && let Some(key) =
                identity::link(c, portfolio_of(senders, e), &i.identity, i.at, ACTOR).await?
        {
            keys.insert(e.key.as_str(), key);
        }
    }
    let key_of = |e: &Event, i: &InboundEvent| -> PhoneNumber {
        keys.get(e.key.as_str())
            .cloned()
            .unwrap_or_else(|| i.phone.clone())
    };
    let resolved: Vec<(&Event, &InboundEvent, PhoneNumber)> = fresh
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Inbound(i) => Some((*e, i, key_of(e, i))),
            _ => None,
        })
        .collect();
    // One statement per number written to (the window is the number's).
    let mut by_sender: BTreeMap<String, (StoreKeys, Vec<Inbound>)> = BTreeMap::new();
    for (e, i, key) in &resolved {
        let keys = keys_of(senders, e);
        by_sender
            .entry(keys.sender.clone())
            .or_insert_with(|| (keys, Vec::new()))
            .1
            .push(Inbound {
                phone: key,
                wamid: &i.wamid,
                message_type: &i.message_type,
                content: &i.content,
                window: i.window,
            });
    }
    for (keys, inbound) in by_sender.values() {
        let recorded = inbound_batch::record(c, CHANNEL, keys, inbound).await?;
        // On a routed number a message that reached us means the thread is ours.
        let phones: Vec<&str> = inbound.iter().map(|i| i.phone.digits()).collect();
        let moved = warden_core::conversations::holder::routed_inbound(
            c,
            CHANNEL,
            &keys.sender,
            &phones,
            ACTOR,
            chrono::Utc::now(),
        )
        .await?;
        state
            .hint_holder
            .extend(moved.into_iter().map(|phone| (phone, keys.sender.clone())));
        for (reason, n) in recorded.no_window {
            *state.outcome.no_window.entry(reason).or_default() += n;
        }
        for conv in recorded.windows {
            state
                .windows
                .insert((conv.customer_phone.clone(), conv.sender_id.clone()), conv);
        }
    }

    let updates: Vec<StatusUpdate> = fresh
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Status(s) => Some(status_update(s)),
            _ => None,
        })
        .collect();
    state.status_through = state.status_through.max(updates.iter().map(|s| s.at).max());
    let mut targets = StatusTargets::load(c, &updates).await?;
    // The statuses that only move messages forward through sent/delivered/read, applied
    // together now; the others (and every status of their messages) in their place below.
    let mut planned = statuses::apply_all(c, &updates, &mut targets)
        .await?
        .into_iter();

    let mut quality: Vec<QualityUpdate> = Vec::new();
    let mut pricing = Vec::new();
    for event in &fresh {
        let applied = match &event.body {
            EventBody::Inbound(i) => {
                let key = key_of(event, i);
                state
                    .hint_inbound
                    .insert((key.digits().to_string(), keys_of(senders, event).sender));
                if i.message_type == "system" {
                    changed_number(c, portfolio_of(senders, event), i, &key).await?;
                }
                if let Some(change) = i.keyword {
                    // A STOP to one number of a business stops all its numbers.
                    customers::apply_opt_change(
                        c,
                        &keys_of(senders, event).business,
                        &key,
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
            EventBody::Status(s) => {
                let update = status_update(s);
                let plan = planned.next().expect("one plan per status");
                let message = plan.resolved.map(|r| targets.message_at(&r));
                // What the platform charged for it (stored beside the message, every
                // report of the POST in one statement after the loop).
                if let (Some(p), Some((id, _))) = (&s.pricing, message) {
                    pricing.push((
                        id,
                        warden_core::account::pricing::ReportedPricing {
                            billable: p.billable,
                            pricing_model: p.pricing_model.as_deref(),
                            category: p.category.as_deref(),
                            pricing_type: p.pricing_type.as_deref(),
                        },
                    ));
                }
                let applied = match (plan.done, plan.resolved) {
                    (Some(done), _) => done,
                    (None, Some(resolved)) => {
                        statuses::apply_resolved(
                            c,
                            &update,
                            resolved,
                            &targets,
                            retry_policy(),
                            ACTOR,
                        )
                        .await?
                    }
                    (None, None) => StatusApplied::Ignored,
                };
                if !matches!(applied, StatusApplied::Ignored)
                    && let Some((_, customer)) = message
                {
                    state
                        .hint_status
                        .insert((customer.to_string(), keys_of(senders, event).sender));
                }
                match applied {
                    StatusApplied::Ignored => false,
                    StatusApplied::Applied => true,
                    StatusApplied::Requeued { message_id } => {
                        state.requeued.push(message_id);
                        state.outcome.retried += 1;
                        true
                    }
                }
            }
            EventBody::Template(t) => {
                apply_template(c, &keys_of(senders, event).business, t).await?
            }
            EventBody::Preference(p) => {
                apply_preference(c, &keys_of(senders, event).business, p).await?
            }
            EventBody::TemplateChange(t) => {
                template::apply_template_change(c, &keys_of(senders, event).business, t).await?
            }
            // A shared number: echoes, handovers and standby copies (`ingest::holder`).
            EventBody::Echo(e) => {
                let ttl = chrono::TimeDelta::from_std(core.settings().human_takeover_ttl)
                    .unwrap_or(chrono::TimeDelta::minutes(30));
                let keys = keys_of(senders, event);
                holder::echo(c, &keys, e, ttl, Utc::now(), &mut state.hint_holder).await?
            }
            EventBody::Handover(h) => {
                let keys = keys_of(senders, event);
                holder::handover(c, &keys, h, Utc::now(), &mut state.hint_holder).await?
            }
            EventBody::Standby(s) => {
                let keys = keys_of(senders, event);
                holder::standby(c, &keys, s, Utc::now(), &mut state.hint_holder).await?
            }
            EventBody::Quality(q) => {
                // Its throughput part (THROUGHPUT_UPGRADE) and its flag belong to one
                // number; tiers are read apart. Only those two look the number up.
                let upgrade =
                    warden_core::account::throughput::throughput_change(&q.event).is_some();
                let flag = matches!(q.event.as_str(), "FLAGGED" | "UNFLAGGED");
                if upgrade || flag {
                    apply_number_quality(c, senders, event, q, state).await?;
                }
                quality.push(QualityUpdate {
                    event: &q.event,
                    current_limit: q.current_limit.as_deref(),
                    display_phone_number: q.display_phone_number.as_deref(),
                    portfolio: portfolio_of(senders, event),
                    payload: &q.payload,
                });
                true
            }
        };
        if applied {
            *state.outcome.applied.entry(event.kind()).or_default() += 1;
        } else {
            state.outcome.ignored += 1;
        }
    }
    warden_core::account::pricing::record_many(c, &pricing).await?;
    platform_events::record_quality(c, &quality).await?;
    Ok(())
}

/// A "user changed number" system message (sent from the old number, naming the new
/// one): the new number inherits the old one's opt-outs and continues its history.
/// A "user changed BSUID" system message (`user_changed_user_id`, naming the new BSUID
/// in `system.user_id`): the customer keeps its key and every opt-out, and takes the new
/// BSUID.
async fn changed_number(
    c: &mut AsyncPgConnection,
    portfolio: &str,
    i: &InboundEvent,
    key: &PhoneNumber,
) -> QueryResult<()> {
    let system = i.content.get("system");
    if system.and_then(|s| s.get("type")).and_then(Value::as_str) == Some("user_changed_user_id") {
        let new = system
            .and_then(|s| s.get("user_id").or_else(|| s.get("new_user_id")))
            .and_then(Value::as_str)
            .and_then(|u| warden_rules::bsuid::parse(u).ok());
        match new {
            Some(new) => identity::change_bsuid(c, portfolio, key, &new, i.at, ACTOR).await?,
            None => tracing::info!(wamid = %i.wamid, "BSUID change names no valid new BSUID"),
        }
        return Ok(());
    }
    let Some(new) = warden_core::conversations::message_view::normalise(&i.content).new_number
    else {
        return Ok(());
    };
    match warden_rules::phone::canonicalize(&new) {
        Ok(new) => {
            warden_core::customers::number_change::link(c, key, &new, i.at, ACTOR).await?;
        }
        Err(_) => tracing::info!(wamid = %i.wamid, "number change names no valid new number"),
    }
    Ok(())
}

/// A status event as the core takes it: the platform's status as a message status
/// (`None` for those without delivery meaning: deleted, warning, played, unknown).
fn status_update(s: &StatusEvent) -> StatusUpdate<'_> {
    let status = match s.status {
        StatusKind::Sent => Some(MessageStatus::Sent),
        StatusKind::Delivered => Some(MessageStatus::Delivered),
        StatusKind::Read => Some(MessageStatus::Read),
        StatusKind::Failed => Some(MessageStatus::Failed),
        StatusKind::Deleted | StatusKind::Warning | StatusKind::Played | StatusKind::Unknown => {
            None
        }
    };
    StatusUpdate {
        wamid: &s.wamid,
        callback: s.callback.as_deref(),
        status,
        reported: s.status.as_str(),
        at: s.at,
        error_code: s.error.as_ref().map(|e| e.code),
    }
}

/// A `phone_number_quality_update`'s flag or throughput upgrade, on exactly the number it
/// names by display number (`number_facts::match_display`) among its business account's
/// senders (an account of no sender is the default sender's). When Warden cannot tell which
/// (or updates of the account already wait), it is kept and the platform asked after the
/// commit; one about a number that is no sender is not applied.
async fn apply_number_quality(
    c: &mut AsyncPgConnection,
    senders: &Senders,
    e: &Event,
    q: &crate::events::QualityEvent,
    state: &mut BatchState,
) -> QueryResult<()> {
    let mut candidates: Vec<String> = senders
        .of_business(&e.account)
        .map(|s| senders.key_of(s).sender)
        .collect();
    if candidates.is_empty() {
        candidates.push(senders.key_of(sender_of(senders, e)).sender);
    }
    let Some(display) = q.display_phone_number.as_deref() else {
        if let [only] = candidates.as_slice() {
            return number_facts::apply_quality_event(c, only, &q.event, None, ACTOR).await;
        }
        tracing::warn!(account = %e.account, event = %q.event,
            "quality update names no display number; not applied");
        return Ok(());
    };
    let waiting = number_facts::has_deferred(c, &e.account).await?;
    let found = if waiting {
        number_facts::Match::Unknown
    } else {
        number_facts::match_display(c, &candidates, display).await?
    };
    match found {
        number_facts::Match::One(key) => {
            number_facts::apply_quality_event(c, &key, &q.event, Some(display), ACTOR).await?;
            if q.event == "UNFLAGGED" {
                state.ask_senders.insert(key);
            }
        }
        number_facts::Match::NotOurs => {
            tracing::info!(account = %e.account, display_phone_number = %q.display_phone_number.as_deref().unwrap_or_default(), event = %q.event,
                "quality update for a number of the account that is no sender of this deployment");
        }
        number_facts::Match::Unknown => {
            number_facts::defer(c, &e.account, display, &q.event).await?;
            state.ask_accounts.insert(e.account.clone());
        }
    }
    Ok(())
}

/// The stored key of the portfolio an event's number belongs to (quality updates name
/// their business account, not a number).
fn portfolio_of<'a>(senders: &'a Senders, e: &'a Event) -> &'a str {
    senders.portfolio_key(sender_of(senders, e))
}

async fn apply_preference(
    c: &mut AsyncPgConnection,
    business: &str,
    p: &PreferenceEvent,
) -> QueryResult<bool> {
    let key = identity::resolve(c, &p.phone).await?;
    customers::apply_opt_change(
        c,
        business,
        &key,
        p.change,
        OptScope::Marketing,
        "user_preferences",
        ACTOR,
        p.at,
    )
    .await?;
    Ok(true)
}
