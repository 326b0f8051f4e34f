//! One stream message, start to finish:
//!
//! ```text
//! parse job -> read row -> plan (send / hold / done / cancelled campaign)
//!   -> a place among its sender's waiters (held: nak with delay)
//!   -> pair-rate slot (held: nak with delay) -> its sender's bucket token (wait; not an attempt)
//!   -> compliance recheck (refused: failed, compliance)
//!   -> claim queued->sending (lease) -> build body -> platform.send
//!   -> sent: wamid + status sent + last outbound   | error: by handling class
//! -> ack (or nak with delay: the same stream message comes back)
//! ```

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream::{self, AckKind};
use chrono::Utc;
use serde::Deserialize;
use tracing::{Instrument, field};
use uuid::Uuid;
use warden_core::WindowCache;
use warden_core::delivery::knowledge::{self, ErrorInfo, Explanation};
use warden_core::delivery::platform_errors::{RetryPolicy, SideEffect};
use warden_core::delivery::{self, DeliveryError, DeliveryRow, Plan, Why};
use warden_platform::{PlatformClient, PlatformError};
use warden_ratelimit::PairLimiter;
use warden_rules::message_status::MessageStatus;
use warden_store::PgPool;
use warden_stream::{DeliveryStream, HintKind, Hints};

use crate::body::{self, Stored};
use crate::claimer::Claimer;
use crate::config::DispatcherConfig;
use crate::failures::{self, Failure};
use crate::metrics::{FAILED, HALTS, HELD, IN_FLIGHT, PLATFORM_LATENCY, RETRIES, SENT, SKIPPED};
use crate::pacing::Pacing;
use crate::unknown_events::{self, Event};

/// Written as the actor of audit rows.
pub const ACTOR: &str = "dispatcher";

/// Counters of one dispatcher instance (tests and benchmarks read them).
#[derive(Debug, Default)]
pub struct Stats {
    pub sent: AtomicU64,
    pub failed: AtomicU64,
    pub retried: AtomicU64,
    pub held: AtomicU64,
    pub skipped: AtomicU64,
}

/// A copy of [`Stats`] at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatsSnapshot {
    pub sent: u64,
    pub failed: u64,
    pub retried: u64,
    pub held: u64,
    pub skipped: u64,
}

impl Stats {
    pub fn snapshot(&self) -> StatsSnapshot {
        StatsSnapshot {
            sent: self.sent.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            retried: self.retried.load(Ordering::Relaxed),
            held: self.held.load(Ordering::Relaxed),
            skipped: self.skipped.load(Ordering::Relaxed),
        }
    }
}

pub(crate) struct Ctx {
    pub pg: PgPool,
    /// Group claims (one commit for the claims queued at the same moment).
    pub claimer: Claimer,
    /// Asynchronous-commit sessions, for recording `sent` only (see `relaxed_pool`).
    pub outcomes_pg: PgPool,
    pub platform: PlatformClient,
    /// The other senders' clients, by the stored key of their messages.
    pub other_senders: HashMap<String, PlatformClient>,
    /// The stored key of each sender's portfolio (a BSUID belongs to one), by sender key;
    /// a sender not listed is of the default portfolio.
    pub portfolios: HashMap<String, String>,
    /// The Marketing Messages API's product policy of each sender that uses it, by stored
    /// key (`crate::marketing`).
    pub marketing: HashMap<String, warden_settings::ProductPolicy>,
    /// Each sender's bucket.
    pub pacing: Arc<Pacing>,
    pub pair: PairLimiter,
    pub windows: WindowCache,
    pub cfg: DispatcherConfig,
    pub stats: Arc<Stats>,
    /// Conversation hints for gateways' resource subscribers (none without NATS).
    pub hints: Option<Hints>,
    /// Explanations of error codes already looked up (the knowledge base rarely changes).
    explanations: Mutex<HashMap<i32, Explanation>>,
}

impl Ctx {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        pg: PgPool,
        outcomes_pg: PgPool,
        platform: PlatformClient,
        pacing: Arc<Pacing>,
        pair: PairLimiter,
        windows: WindowCache,
        cfg: DispatcherConfig,
        stats: Arc<Stats>,
        hints: Option<Hints>,
    ) -> Self {
        let claimer = Claimer::start(pg.clone(), cfg.owner.clone(), cfg.claim_lease());
        Self {
            pg,
            claimer,
            outcomes_pg,
            platform,
            other_senders: HashMap::new(),
            portfolios: HashMap::new(),
            marketing: HashMap::new(),
            pacing,
            pair,
            windows,
            cfg,
            stats,
            hints,
            explanations: Mutex::new(HashMap::new()),
        }
    }

    /// The same context sending each other sender's messages with its own client.
    pub fn with_other_senders(mut self, clients: HashMap<String, PlatformClient>) -> Self {
        self.other_senders = clients;
        self
    }

    /// The same context knowing each sender's portfolio (stored keys).
    pub fn with_portfolios(mut self, portfolios: HashMap<String, String>) -> Self {
        self.portfolios = portfolios;
        self
    }

    /// The same context sending these senders' marketing templates through the Marketing
    /// Messages API (product policy by stored key).
    pub fn with_marketing_messages(
        mut self,
        marketing: HashMap<String, warden_settings::ProductPolicy>,
    ) -> Self {
        self.marketing = marketing;
        self
    }

    /// The stored key of the portfolio of the sender stored as `sender`.
    fn portfolio_of(&self, sender: &str) -> &str {
        self.portfolios
            .get(sender)
            .map_or(warden_settings::STORED_DEFAULT, String::as_str)
    }

    /// The client of the sender stored as `sender`: its number and token.
    fn platform_for(&self, sender: &str) -> &PlatformClient {
        if warden_settings::STORED_DEFAULT == sender {
            return &self.platform;
        }
        self.other_senders.get(sender).unwrap_or_else(|| {
            tracing::error!(
                sender,
                "a message of a sender no longer in the senders file goes out as the default sender"
            );
            &self.platform
        })
    }

    /// Tell gateways the customer's conversation changed (after the change committed).
    async fn hint(&self, customer: &str, sender: &str) {
        if let Some(h) = &self.hints {
            h.publish(customer, Some(sender), HintKind::Status).await;
        }
    }

    fn held(&self, reason: &'static str, delay: Duration) -> Verdict {
        HELD.with_label_values(&[reason]).inc();
        self.stats.held.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(
            reason,
            delay_ms = delay.as_millis() as u64,
            "held for later"
        );
        Verdict::Nak(delay)
    }

    fn skipped(&self, reason: &'static str) -> Verdict {
        SKIPPED.with_label_values(&[reason]).inc();
        self.stats.skipped.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(reason, "acknowledged without a platform call");
        Verdict::Ack
    }

    async fn explain(&self, code: i64) -> Option<Explanation> {
        let code = i32::try_from(code).ok()?;
        if let Some(e) = self.lock_explanations().get(&code) {
            return Some(e.clone());
        }
        let mut conn = self.pg.get().await.ok()?;
        match knowledge::explain(&mut conn, code).await {
            Ok(e) => {
                self.lock_explanations().insert(code, e.clone());
                Some(e)
            }
            Err(err) => {
                tracing::warn!(code, error = %err, "error knowledge base lookup failed");
                None
            }
        }
    }

    fn lock_explanations(&self) -> std::sync::MutexGuard<'_, HashMap<i32, Explanation>> {
        self.explanations.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// What happens to the stream message.
#[derive(Debug, PartialEq)]
pub(crate) enum Verdict {
    Ack,
    /// Put it back; JetStream redelivers it after the delay.
    Nak(Duration),
}

/// The stream payload: only the id matters (the row is the truth).
#[derive(Deserialize)]
struct Job {
    message_id: Uuid,
}

/// Process one stream message and acknowledge it.
pub(crate) async fn handle(ctx: Arc<Ctx>, msg: jetstream::Message) {
    IN_FLIGHT.inc();
    let headers = DeliveryStream::trace_headers(msg.headers.as_ref());
    let span = tracing::info_span!(
        "dispatcher.deliver",
        otel.kind = "consumer",
        message_id = field::Empty,
        attempt = field::Empty,
        outcome = field::Empty,
    );
    warden_telemetry::set_parent_from(&span, &headers);
    let verdict = with_heartbeat(
        process(&ctx, &msg).instrument(span.clone()),
        &msg,
        ctx.cfg.dispatch.ack_wait,
    )
    .await;
    let acked = match verdict {
        Verdict::Ack => msg.ack().await,
        Verdict::Nak(delay) => msg.ack_with(AckKind::Nak(Some(delay))).await,
    };
    if let Err(e) = acked {
        tracing::warn!(parent: &span, error = %e,
            "acknowledging to JetStream failed; the message comes back and is decided again from its row");
    }
    IN_FLIGHT.dec();
}

/// Tell JetStream the work goes on (so a long token wait does not trigger a redelivery).
async fn with_heartbeat<F: Future<Output = Verdict>>(
    work: F,
    msg: &jetstream::Message,
    ack_wait: Duration,
) -> Verdict {
    let every = (ack_wait / 3).max(Duration::from_millis(300));
    tokio::pin!(work);
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    loop {
        tokio::select! {
            v = &mut work => return v,
            _ = tick.tick() => {
                let _ = msg.ack_with(AckKind::Progress).await;
            }
        }
    }
}

async fn process(ctx: &Ctx, msg: &jetstream::Message) -> Verdict {
    let job: Job = match serde_json::from_slice(&msg.payload) {
        Ok(job) => job,
        Err(e) => {
            let shown: String = String::from_utf8_lossy(&msg.payload)
                .chars()
                .take(200)
                .collect();
            tracing::error!(error = %e, payload = %shown,
                "stream message is not a delivery job (no message_id); dropping it, there is nothing to deliver");
            return ctx.skipped("bad_payload");
        }
    };
    tracing::Span::current().record("message_id", field::display(job.message_id));
    let row = match delivery::load(&ctx.pg, job.message_id).await {
        Ok(Some(row)) => row,
        Ok(None) => {
            let delivered = msg.info().map(|i| i.delivered).unwrap_or(1);
            if delivered < 5 {
                tracing::warn!(
                    delivered,
                    "no message row for this stream message yet; looking again shortly"
                );
                return ctx.held("row_missing", Duration::from_secs(2));
            }
            tracing::error!(
                delivered,
                "no message row for this stream message after 5 deliveries; dropping it"
            );
            return ctx.skipped("row_missing");
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the message row; trying again shortly");
            return ctx.held("database", Duration::from_secs(2));
        }
    };
    decide(ctx, row).await
}

async fn decide(ctx: &Ctx, row: DeliveryRow) -> Verdict {
    let planned = delivery::plan(&row, ctx.cfg.unknown_outcome());
    note_unknown(ctx, &row, &planned).await;
    match planned {
        Plan::Send => send(ctx, row).await,
        Plan::Resend(why) => resend_dead_claim(ctx, row, why).await,
        Plan::Hold(delay, reason) => ctx.held(reason, delay),
        Plan::Done(reason) => ctx.skipped(reason),
        Plan::CancelledCampaign => {
            fail(
                ctx,
                &row,
                &failures::cancelled_campaign(),
                &SideEffect::None,
                0,
            )
            .await
        }
    }
}

/// The unknown-outcome bookkeeping a decision implies: a dead claim seen for the first
/// time becomes a held unknown outcome; one that moved on without a resend was settled by
/// its webhook. Both are conditional updates, so each is counted once across replicas.
async fn note_unknown(ctx: &Ctx, row: &DeliveryRow, planned: &Plan) {
    let id = row.id;
    let result = match planned {
        Plan::Hold(_, "outcome_unknown" | "awaiting_webhooks") | Plan::Resend(_)
            if row.unknown_since.is_none() =>
        {
            delivery::adopt_dead_claim(&ctx.pg, id)
                .await
                .map(|adopted| {
                    if adopted {
                        unknown_events::record(
                            Event::Held,
                            id,
                            ACTOR,
                            "its dispatcher stopped holding the claim (the lease ended)",
                        );
                    }
                })
        }
        Plan::Done(_)
            if row.unknown_since.is_some() && row.status != Some(MessageStatus::Sending) =>
        {
            delivery::clear_resolved(&ctx.pg, id).await.map(|cleared| {
                if cleared {
                    unknown_events::record(Event::ResolvedByWebhook, id, ACTOR, row.status_str());
                }
            })
        }
        _ => Ok(()),
    };
    if let Err(e) = result {
        // Only bookkeeping: the sweep marks or clears it on its next run.
        tracing::debug!(error = %e, message_id = %id, "unknown-outcome mark not written");
    }
}

/// See [`Plan::Resend`]: release the dead claim, then send it from the released row.
async fn resend_dead_claim(ctx: &Ctx, mut row: DeliveryRow, why: Why) -> Verdict {
    match delivery::release_dead_claim(&ctx.pg, row.id, ctx.cfg.dispatch.unknown_settle, why, ACTOR)
        .await
    {
        Ok(true) => {
            unknown_events::record(Event::Resent(why), row.id, ACTOR, "stream message");
            // What the release wrote; no need to read the row back.
            row.status = Some(MessageStatus::Queued);
            row.lease_until = None;
            row.next_attempt_at = None;
            row.unknown_since = None;
            send(ctx, row).await
        }
        // Moved on meanwhile (its webhook came, or another replica or the sweep took it).
        Ok(false) => match delivery::load(&ctx.pg, row.id).await {
            Ok(Some(fresh)) => Box::pin(decide(ctx, fresh)).await,
            Ok(None) => ctx.skipped("row_missing"),
            Err(_) => ctx.held("database", Duration::from_secs(2)),
        },
        Err(e) => {
            tracing::warn!(error = %e, "cannot release a dead claim; trying again shortly");
            ctx.held("database", Duration::from_secs(2))
        }
    }
}

/// This delivery lost the row (another replica claimed it, or a webhook moved it): decide
/// from the fresh row without calling the platform. The stream message is acknowledged
/// only when the row needs nothing more; while it is `queued` or `sending` it is put back,
/// because another delivery of the same stream message may be the one driving the row,
/// and an ack here would take the message from under it (a row left `sending` for good).
async fn redecide_without_sending(ctx: &Ctx, id: Uuid) -> Verdict {
    match delivery::load(&ctx.pg, id).await {
        Ok(Some(fresh)) => {
            let planned = delivery::plan(&fresh, ctx.cfg.unknown_outcome());
            note_unknown(ctx, &fresh, &planned).await;
            match planned {
                Plan::Send | Plan::Resend(_) => ctx.held("claim_race", Duration::from_secs(1)),
                Plan::Hold(delay, reason) => ctx.held(reason, delay),
                Plan::Done(reason) => ctx.skipped(reason),
                Plan::CancelledCampaign => {
                    fail(
                        ctx,
                        &fresh,
                        &failures::cancelled_campaign(),
                        &SideEffect::None,
                        0,
                    )
                    .await
                }
            }
        }
        Ok(None) => ctx.skipped("row_missing"),
        Err(_) => ctx.held("database", Duration::from_secs(2)),
    }
}

async fn send(ctx: &Ctx, row: DeliveryRow) -> Verdict {
    let holder = row.id.to_string();
    // 1. A place among its sender's waiters: with several senders, a slow number's
    //    backlog waits on the stream, not in the slots every number shares.
    let pace = ctx.pacing.of(&row.sender_id);
    let turn = match ctx.pacing.enter(pace) {
        Ok(turn) => turn,
        Err(later) => return ctx.held("sender_rate", later),
    };
    // 1b. Pair rate: one message per recipient per interval; a later one waits its turn.
    if let Err(wait) = ctx.pair.take(&row.customer_phone, &holder).await {
        let jitter = Duration::from_millis(rand::random::<u64>() % 250);
        return ctx.held("pair_rate", wait + jitter);
    }
    // 2. A token of its sender's shared bucket. Waiting here is not a delivery attempt.
    let _ = pace.bucket.acquire().await;
    drop(turn);
    // 2b. Compliance once more, right before the call: a STOP, a closed window or a paused
    //     template since acceptance refuses it (warden-core ends it `failed`, compliance).
    match warden_core::send::recheck::before_send(&ctx.pg, row.id, ACTOR).await {
        Ok(warden_core::Recheck::Send) => {}
        Ok(warden_core::Recheck::Refused(_)) => {
            ctx.pair.release(&row.customer_phone, &holder).await;
            ctx.hint(&row.customer_phone, &row.sender_id).await;
            return ctx.skipped("compliance_recheck");
        }
        Err(e) => {
            ctx.pair.release(&row.customer_phone, &holder).await;
            tracing::warn!(error = %e, "cannot re-check compliance; trying again shortly");
            return ctx.held("database", Duration::from_secs(2));
        }
    }
    // 2c. Addressed to the phone when known, else to the parent BSUID or the BSUID of the
    //     sender's portfolio.
    let recipient = match warden_core::customers::identity::send_address_on(
        &ctx.pg,
        ctx.portfolio_of(&row.sender_id),
        &row.customer_phone,
    )
    .await
    {
        Ok(warden_core::customers::identity::Address::Phone(_)) => None,
        Ok(warden_core::customers::identity::Address::Recipient(r)) => Some(r),
        Err(e) => {
            ctx.pair.release(&row.customer_phone, &holder).await;
            tracing::warn!(error = %e, "cannot read the recipient's BSUID; trying again shortly");
            return ctx.held("database", Duration::from_secs(2));
        }
    };
    // 3. Claim: only the replica whose conditional update wins may call the platform.
    // Measured from before the claim: the lease can only be longer than this count.
    let claim_started = Instant::now();
    let attempt = match ctx.claimer.claim(row.id).await {
        Ok(Some(attempt)) => attempt,
        Ok(None) => {
            ctx.pair.release(&row.customer_phone, &holder).await;
            // Something moved the row meanwhile: decide again from the fresh row.
            return redecide_without_sending(ctx, row.id).await;
        }
        Err(e) => {
            ctx.pair.release(&row.customer_phone, &holder).await;
            tracing::warn!(error = %e, "cannot claim the message; trying again shortly");
            return ctx.held("database", Duration::from_secs(2));
        }
    };
    tracing::Span::current().record("attempt", attempt);
    // 4. The platform body from the stored content.
    let request = match body::build(&Stored {
        message_id: &holder,
        to: &row.customer_phone,
        recipient: recipient.as_deref(),
        content: &row.content,
        template_name: row.template_name.as_deref(),
        template_locale: row.template_locale.as_deref(),
    }) {
        Ok(request) => request,
        Err(reason) => {
            ctx.pair.release(&row.customer_phone, &holder).await;
            return fail(
                ctx,
                &row,
                &failures::bad_content(&reason.to_string()),
                &SideEffect::None,
                0,
            )
            .await;
        }
    };
    // 5. The call, at `/messages` or the Marketing Messages API: the same call either way.
    let (endpoint, request) = crate::marketing::route(
        ctx.marketing.get(&row.sender_id).copied(),
        &row.category,
        request,
    );
    let call_span = tracing::info_span!(
        "platform.send",
        otel.kind = "client",
        message_type = %request.kind,
        http.status_code = field::Empty,
        platform.code = field::Empty,
    );
    let started = Instant::now();
    // Never let a call outlive its claim's lease (a slow start on a loaded machine eats into
    // it): past that, the row may be taken for a dead claim and resent beside this call.
    // Giving up early is an unknown outcome like any timeout.
    let budget = lease_budget(ctx.cfg.claim_lease(), claim_started.elapsed());
    let result = match tokio::time::timeout(
        budget,
        ctx.platform_for(&row.sender_id)
            .send_at(endpoint, &request)
            .instrument(call_span.clone()),
    )
    .await
    {
        Ok(result) => result,
        Err(_) => Err(PlatformError::Timeout),
    };
    PLATFORM_LATENCY
        .with_label_values(&["send_message", outcome_label(&result)])
        .observe(started.elapsed().as_secs_f64());
    match result {
        Ok(answer) => {
            call_span.record("http.status_code", 200);
            sent(ctx, &row, answer.wamid(), attempt).await
        }
        Err(err) => {
            if let Some(status) = err.http_status() {
                call_span.record("http.status_code", status);
            }
            if let Some(code) = err.code() {
                call_span.record("platform.code", code);
            }
            failed_call(ctx, &row, attempt, err).await
        }
    }
}

/// How long a call may still take: what is left of the lease, minus a second for
/// recording the outcome (at least 100 ms, so a late call still gets its chance).
fn lease_budget(lease: Duration, since_claim: Duration) -> Duration {
    lease
        .saturating_sub(since_claim + Duration::from_secs(1))
        .max(Duration::from_millis(100))
}

fn outcome_label<T>(r: &Result<T, PlatformError>) -> &'static str {
    match r {
        Ok(_) => "ok",
        Err(PlatformError::Api { .. }) => "api_error",
        Err(PlatformError::Http { .. }) => "http_error",
        Err(PlatformError::Timeout) => "timeout",
        Err(PlatformError::Connect(_)) => "connect",
        Err(PlatformError::Io(_)) => "io",
        Err(PlatformError::Config(_)) => "config",
    }
}

/// Retry a write that must not be lost (the platform call already happened).
async fn persist<T, F, Fut>(what: &str, mut write: F) -> Result<T, DeliveryError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, DeliveryError>>,
{
    let mut delay = Duration::from_millis(100);
    let mut tries = 0;
    loop {
        match write().await {
            Ok(v) => return Ok(v),
            Err(e) if tries >= 7 => return Err(e),
            Err(e) => {
                tries += 1;
                tracing::warn!(error = %e, tries, "{what}: write failed; trying again");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(5));
            }
        }
    }
}

async fn sent(ctx: &Ctx, row: &DeliveryRow, wamid: Option<&str>, attempt: i32) -> Verdict {
    if wamid.is_none() {
        tracing::warn!(
            "the platform accepted the message without a wamid; status webhooks will match it by message id"
        );
    }
    let at = Utc::now();
    let clear_error = row.has_error || row.retry_count > 0;
    let record = delivery::Sent {
        id: row.id,
        wamid,
        phone: &row.customer_phone,
        channel: &row.channel,
        sender: &row.sender_id,
        in_campaign: row.campaign_id.is_some(),
        clear_error,
        at,
    };
    let recorded = persist("record sent", || {
        delivery::record_sent(&ctx.outcomes_pg, &record)
    })
    .await;
    SENT.inc();
    ctx.stats.sent.fetch_add(1, Ordering::Relaxed);
    tracing::Span::current().record("outcome", "sent");
    match recorded {
        Ok(conv) => {
            if let Some(conv) = conv {
                ctx.windows.put(&conv).await;
            }
            ctx.hint(&row.customer_phone, &row.sender_id).await;
            tracing::debug!(wamid, attempt, "sent");
        }
        Err(e) => tracing::error!(error = %e, wamid,
            "sent, but recording it failed; the row stays `sending` (never resent) and the status webhook settles it"),
    }
    Verdict::Ack
}

async fn failed_call(ctx: &Ctx, row: &DeliveryRow, attempt: i32, err: PlatformError) -> Verdict {
    let explained = match err.code() {
        Some(code) => ctx.explain(code).await,
        None => None,
    };
    let failure = failures::classify(&err, explained.as_ref());
    // What happens next is the consequence's (warden_core::delivery::platform_errors), the same as
    // for a status webhook reporting this error.
    if failure.consequence.retry {
        return retry(ctx, row, attempt, failure, &err).await;
    }
    // Definitely not delivered: the recipient's slot is free for the next message.
    ctx.pair
        .release(&row.customer_phone, &row.id.to_string())
        .await;
    if failure.consequence.halts() {
        HALTS.with_label_values(&[&failure.code.to_string()]).inc();
        tracing::error!(code = failure.code, error = %err,
            "halt-class platform error: pausing active campaigns; an operator must check the account");
    }
    fail(
        ctx,
        row,
        &failure.info,
        &failure.consequence.effect,
        failure.code,
    )
    .await
}

async fn retry(
    ctx: &Ctx,
    row: &DeliveryRow,
    attempt: i32,
    f: Failure,
    err: &PlatformError,
) -> Verdict {
    let holder = row.id.to_string();
    if attempt >= ctx.cfg.dispatch.max_attempts {
        tracing::warn!(attempt, error = %err, "retryable failure, but the attempts are spent");
        let info = warden_core::delivery::platform_errors::exhausted(&f.info, attempt);
        return fail(ctx, row, &info, &SideEffect::None, f.code).await;
    }
    let cfg = &ctx.cfg;
    // The one backoff formula, shared with retries decided by status webhook.
    let policy = RetryPolicy {
        max_attempts: cfg.dispatch.max_attempts,
        backoff_base: cfg.dispatch.backoff_base,
        backoff_cap: cfg.dispatch.backoff_cap,
    };
    let mut delay = policy.backoff(row.retry_count + 1, rand::random::<f64>());
    if f.outcome_unknown {
        // The platform may have it (a timeout, a connection cut mid-request): settle it as
        // a dead claim, held for its status webhook and resent only on evidence that it
        // never arrived (warden_core::delivery::next_step).
        let ended = persist("end lease", || {
            delivery::end_lease(&ctx.pg, row.id, &cfg.owner)
        })
        .await;
        return match ended {
            Ok(true) => {
                RETRIES.inc();
                ctx.stats.retried.fetch_add(1, Ordering::Relaxed);
                tracing::Span::current().record("outcome", "unknown");
                tracing::info!(code = f.code, error = %err, attempt, "platform call without a complete answer");
                unknown_events::record(
                    Event::Held,
                    row.id,
                    ACTOR,
                    "the platform call timed out or was cut",
                );
                Verdict::Nak(cfg.dispatch.unknown_settle)
            }
            // Settled meanwhile, or another replica took the claim over: never ack blindly.
            Ok(false) => redecide_without_sending(ctx, row.id).await,
            Err(e) => {
                tracing::error!(error = %e, "could not end the lease; the message stays `sending` until it ends");
                Verdict::Nak(cfg.dispatch.unknown_settle)
            }
        };
    }
    if f.consequence.pair_rate {
        // Only this pair waits, with its own jitter; every other recipient keeps flowing.
        delay = warden_core::delivery::platform_errors::pair_backoff(
            delay,
            cfg.dispatch.pair_interval,
            rand::random::<f64>(),
        );
        ctx.pair.back_off(&row.customer_phone, &holder, delay).await;
    }
    let requeued = persist("requeue", || {
        delivery::requeue(&ctx.pg, row.id, &cfg.owner, delay, &f.info)
    })
    .await;
    match requeued {
        Ok(Some(retries)) => {
            RETRIES.inc();
            ctx.stats.retried.fetch_add(1, Ordering::Relaxed);
            tracing::Span::current().record("outcome", "retry");
            tracing::info!(code = f.code, error = %err, attempt, retries, delay_ms = delay.as_millis() as u64,
                "retryable platform failure; trying again after backoff");
            Verdict::Nak(delay)
        }
        // Settled meanwhile, or another replica took the claim over: never ack blindly.
        Ok(None) => redecide_without_sending(ctx, row.id).await,
        Err(e) => {
            tracing::error!(error = %e,
                "could not put the message back in the queue; it stays `sending` and is not resent");
            Verdict::Nak(delay)
        }
    }
}

/// End the message `failed` with `info` (and the class's side effect), then ack.
async fn fail(
    ctx: &Ctx,
    row: &DeliveryRow,
    info: &ErrorInfo,
    effect: &SideEffect,
    code: i32,
) -> Verdict {
    let at = Utc::now();
    let recorded = persist("record failed", || {
        delivery::record_failed(
            &ctx.pg,
            row.id,
            &row.customer_phone,
            info,
            effect,
            ACTOR,
            at,
        )
    })
    .await;
    match recorded {
        Ok(delivery::Failed {
            changed,
            campaigns_paused: paused,
        }) => {
            if changed {
                FAILED.with_label_values(&[&code.to_string()]).inc();
                ctx.stats.failed.fetch_add(1, Ordering::Relaxed);
                ctx.hint(&row.customer_phone, &row.sender_id).await;
            }
            tracing::Span::current().record("outcome", "failed");
            tracing::warn!(code, category = %info.category, can_retry = info.can_retry,
                explanation = %info.human_explanation, campaign = ?row.campaign_id,
                campaigns_paused = paused, "message failed");
            Verdict::Ack
        }
        Err(e) => {
            tracing::error!(error = %e, code, "could not record the failure; the message comes back later");
            Verdict::Nak(Duration::from_secs(5))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_ends_before_its_lease() {
        let lease = Duration::from_secs(15);
        assert_eq!(
            lease_budget(lease, Duration::from_secs(2)),
            Duration::from_secs(12)
        );
        assert_eq!(
            lease_budget(lease, Duration::from_secs(20)),
            Duration::from_millis(100)
        );
    }

    #[test]
    fn platform_outcomes_have_bounded_labels() {
        let ok: Result<(), PlatformError> = Ok(());
        assert_eq!(outcome_label(&ok), "ok");
        assert_eq!(outcome_label::<()>(&Err(PlatformError::Timeout)), "timeout");
        assert_eq!(
            outcome_label::<()>(&Err(PlatformError::Connect("x".into()))),
            "connect"
        );
    }
}
