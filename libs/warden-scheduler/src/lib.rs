//! The scheduler: dispatches due scheduled messages, runs campaigns, and relays queued
//! messages whose publish to the delivery stream was lost.
//!
//! This crate keeps the loop, the timing, the batching and the metrics; every state change
//! is a `warden_core` use case: `warden_core::scheduling::due` (claim due rows, dispatch, fail),
//! `warden_core::campaigns::fanout` (campaign start, lease, cursor, counters, finish, close, settle)
//! and `warden_core::delivery::outbox` (what to publish, batch publish).
//!
//! Every poll ([`Scheduler::tick`]) does, in order:
//!
//! 1. **Campaign starts** — `scheduled` campaigns whose `deliver_at` has come move to
//!    `running` (audited).
//! 2. **Scheduled messages** — due rows are claimed in batches (`FOR UPDATE SKIP LOCKED`
//!    plus a lease: `lease_owner` = this process, `lease_until` = now + lease) and each one
//!    goes through [`warden_core::Core::send`] with `existing_message_id` and
//!    `RefusalMode::RecordFailed`: allowed -> `queued` and published; refused -> `failed`
//!    with a `compliance` error. A claim left by a crashed scheduler is taken over once its
//!    lease has expired; a row is never dispatched twice because `Core::send` only advances
//!    a row that is still `scheduled`.
//! 3. **Campaign control** — queued-but-unsent messages of cancelled campaigns end `failed`
//!    ("campaign cancelled"); resumed campaigns get their held (queued) messages republished.
//! 4. **Campaign fan-out** — a running campaign is claimed with a lease; its audience is read
//!    in keyset pages (`customers.phone > audience_cursor`, filtered in SQL) and every
//!    recipient goes through the batched send path (`Core::send_batch`), in chunks of
//!    `warden_core::campaigns::FANOUT_CHUNK` (256), two at once; the campaign's status is
//!    read before each chunk, and pause / cancel wait for the chunks in flight (the
//!    campaign's gate), so nothing more is queued once they answer. A
//!    cancelled campaign's never-queued recipients are then counted as cancelled. The cursor advances after
//!    each complete page; recipients that already have a message of this campaign are
//!    excluded by the page query itself, so a resumed or taken-over campaign never gives
//!    anyone a second message.
//! 5. **Settling** — running campaigns whose audience is done are settled
//!    (`warden_core::campaigns::settle_if_done`).
//! 6. **Relay** — queued rows never published (NATS was down), and published rows that
//!    are no longer in the stream but still queued (a lost stream message), are published
//!    again (`warden_core::delivery::outbox::publish`: the batch form of `Core::publish`, same
//!    de-duplication ids).
//!
//! Campaign recipients are recorded chunk by chunk by `Core::send_batch` and published page by page
//! ([`Config::batch_publish`], `warden_core::delivery::outbox::publish_accepted`); scheduled
//! messages are published by `Core::send` itself.

mod campaigns;
mod cancelled;
mod error;
mod messages;
pub mod metrics;
mod relay;

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use tokio::sync::Notify;
use uuid::Uuid;
use warden_core::scheduling::gauges;
use warden_core::{Core, CoreError};
use warden_service::{Dependencies, StartError, admin};
use warden_settings::Settings;

pub use error::{PhaseError, TickError};

/// ADMIN_HTTP_PORT default (docs/configuration.md).
pub const DEFAULT_ADMIN_PORT: u16 = 9091;

/// The actor named in audit rows and send requests.
pub const ACTOR: &str = "scheduler";

/// Postgres connections of the scheduler process: the sends in flight plus the
/// scheduler's own queries (status watcher, claims, relay).
pub const POOL_SIZE: u32 = 40;

/// Tunables of one scheduler process.
#[derive(Clone, Debug)]
pub struct Config {
    /// Time between polls when there is nothing left to do (SCHEDULER_POLL_INTERVAL).
    pub poll_interval: Duration,
    /// This process's lease owner id (unique per process).
    pub owner: String,
    /// How long a claim holds before another scheduler may take it over.
    pub lease: Duration,
    /// Scheduled messages claimed per batch.
    pub message_batch: i64,
    /// At most this many message batches per poll (the rest waits for the next poll).
    pub max_message_batches: usize,
    /// Audience page size (customers read per query).
    pub page_size: i64,
    /// `Core::send` calls in flight at once (campaign recipients, scheduled messages).
    pub concurrency: usize,
    /// How long one poll may spend on one campaign before moving on.
    pub campaign_budget: Duration,
    /// Rows the relay publishes per poll (each of its two kinds).
    pub relay_batch: i64,
    /// A queued, never-published row is relayed once it is this old (the accepting call
    /// publishes it itself right after its commit).
    pub relay_min_age: Duration,
    /// A queued row published this long ago and no longer in the stream is republished
    /// (about twice the dispatcher's ack wait).
    pub relay_stale_after: Duration,
    /// Campaign recipients: `Core::send` records each one (compliance, policy, frequency
    /// count, message row) without publishing, and the page's accepted messages are then
    /// published together (`warden_core::delivery::outbox`). False: `Core::send` publishes each one
    /// itself.
    pub batch_publish: bool,
    /// Message content older than this is redacted (MESSAGE_CONTENT_RETENTION).
    pub content_retention: Duration,
    /// How often the retention job runs (at once again while a batch came back full).
    pub retention_every: Duration,
    /// Messages redacted per run.
    pub retention_batch: i64,
}

impl Config {
    /// Defaults, with the poll interval from the settings.
    pub fn from_settings(settings: &Settings) -> Config {
        Config {
            poll_interval: settings.scheduler_poll_interval,
            owner: default_owner(settings.hostname.as_deref()),
            content_retention: settings.message_content_retention,
            ..Config::default()
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            poll_interval: Duration::from_secs(2),
            owner: default_owner(None),
            lease: Duration::from_secs(60),
            message_batch: 200,
            max_message_batches: 50,
            page_size: 1000,
            concurrency: 32,
            campaign_budget: Duration::from_secs(30),
            relay_batch: 1000,
            relay_min_age: Duration::from_secs(5),
            relay_stale_after: Duration::from_secs(120),
            batch_publish: true,
            content_retention: warden_settings::DEFAULT_CONTENT_RETENTION,
            retention_every: Duration::from_secs(60),
            retention_batch: 1000,
        }
    }
}

/// `<host>-<pid>-<random>`: unique per process, readable in `lease_owner`. `hostname` is
/// the settings' `HOSTNAME`; without it, /etc/hostname.
pub fn default_owner(hostname: Option<&str>) -> String {
    let host = hostname
        .map(str::to_string)
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|h| h.trim().to_string())
        })
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "scheduler".into());
    let rand = Uuid::new_v4().simple().to_string();
    format!("{host}-{}-{}", std::process::id(), &rand[..8])
}

/// What one poll did (for tests, logs and the bench).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TickReport {
    pub campaigns_started: usize,
    pub messages_claimed: usize,
    pub messages_queued: usize,
    pub messages_refused: usize,
    /// Due messages held again (quiet hours with `action: hold`, a platform limit).
    pub messages_held: usize,
    pub messages_invalid: usize,
    pub campaigns_claimed: usize,
    pub recipients_enqueued: usize,
    pub recipients_refused: usize,
    /// Campaign recipients held `scheduled` until a rule lifts (also in `recipients_enqueued`).
    pub recipients_held: usize,
    /// Campaigns paused because the portfolio messaging limit was reached.
    pub campaigns_paused_by_limit: usize,
    pub recipients_errors: usize,
    pub campaigns_finished_fanout: usize,
    pub campaigns_settled: usize,
    pub cancelled_messages_failed: usize,
    pub resumed_republished: usize,
    pub relay_published: usize,
    /// Messages whose content the retention job redacted.
    pub content_redacted: usize,
    /// True when work was left for the next poll (it then runs without waiting).
    pub more_work: bool,
}

impl TickReport {
    fn busy(&self) -> bool {
        *self != TickReport::default()
    }
}

/// One scheduler process's state. Cheap to share (`Arc`).
pub struct Scheduler {
    core: Core,
    /// The Core campaign recipients are sent with: `core` itself, or (batch_publish) the
    /// same dependencies without the stream, so `Core::send` records and does not publish.
    recipient_core: Core,
    config: Config,
    stopping: AtomicBool,
    wake: Notify,
    /// Campaigns seen paused at an earlier poll (to notice a resume).
    paused_seen: Mutex<HashSet<Uuid>>,
    /// Resumed campaigns whose held messages are being republished, with the time the
    /// resume was noticed (rows published before it are republished).
    resumed: Mutex<HashMap<Uuid, DateTime<Utc>>>,
    /// When the relay's (table-scanning) lost-message check last ran.
    last_lost_check: Mutex<Option<Instant>>,
    /// When the content retention job last ran (None: run at the next poll).
    last_retention: Mutex<Option<Instant>>,
}

impl Scheduler {
    pub fn new(core: Core, config: Config) -> Scheduler {
        metrics::init();
        let recipient_core = if config.batch_publish && core.stream().is_some() {
            let mut deps = core.dependencies().clone();
            deps.stream = None;
            Core::new(deps, ACTOR)
        } else {
            core.clone()
        };
        Scheduler {
            core,
            recipient_core,
            config,
            stopping: AtomicBool::new(false),
            wake: Notify::new(),
            paused_seen: Mutex::new(HashSet::new()),
            resumed: Mutex::new(HashMap::new()),
            last_lost_check: Mutex::new(None),
            last_retention: Mutex::new(None),
        }
    }

    pub fn core(&self) -> &Core {
        &self.core
    }
    pub(crate) fn recipient_core(&self) -> &Core {
        &self.recipient_core
    }
    pub fn config(&self) -> &Config {
        &self.config
    }
    pub fn owner(&self) -> &str {
        &self.config.owner
    }

    /// Ask the scheduler to stop: no new recipient or message is started; sends already
    /// in flight finish; the loop of [`start`] then releases its leases and ends.
    pub fn request_stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        self.wake.notify_waiters();
        self.wake.notify_one();
    }

    pub fn is_stopping(&self) -> bool {
        AtomicBool::load(&self.stopping, Ordering::SeqCst)
    }

    /// One poll cycle. Every phase runs even when an earlier one failed; the first error is
    /// returned after all ran (the report of what did happen is logged).
    pub async fn tick(&self) -> Result<TickReport, TickError> {
        let started = Instant::now();
        let mut report = TickReport::default();
        let mut first_err: Option<TickError> = None;
        let mut note = |phase: &'static str, r: Result<(), PhaseError>| {
            if let Err(source) = r {
                tracing::warn!(phase, error = %source, "scheduler phase failed");
                if first_err.is_none() {
                    first_err = Some(TickError { phase, source });
                }
            }
        };
        note("gauges", self.update_gauges().await);
        note(
            "campaign start",
            campaigns::start_due(self, &mut report).await,
        );
        note(
            "scheduled messages",
            messages::dispatch_due(self, &mut report).await,
        );
        note(
            "cancelled campaigns",
            cancelled::fail_unsent(self, &mut report).await,
        );
        note(
            "resumed campaigns",
            campaigns::republish_resumed(self, &mut report).await,
        );
        note(
            "campaign fan-out",
            campaigns::fan_out(self, &mut report).await,
        );
        note(
            "campaign settle",
            campaigns::settle(self, &mut report).await,
        );
        note("relay", relay::run(self, &mut report).await);
        note(
            "content retention",
            self.redact_old_content(&mut report).await,
        );
        let busy = report.busy();
        metrics::TICK_SECONDS
            .with_label_values(&[if busy { "true" } else { "false" }])
            .observe(started.elapsed().as_secs_f64());
        if busy {
            tracing::debug!(
                ?report,
                elapsed_ms = started.elapsed().as_millis() as u64,
                "poll"
            );
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(report),
        }
    }

    /// Release every lease this process holds (shutdown): another replica takes over at once
    /// instead of after the lease expires. Returns (messages, campaigns) released.
    pub async fn release_leases(&self) -> Result<(usize, usize), CoreError> {
        let pg = self.core.pg();
        let messages = warden_core::scheduling::due::release_owned(pg, self.owner()).await?;
        let campaigns = warden_core::campaigns::fanout::release_owned(pg, self.owner()).await?;
        Ok((messages, campaigns))
    }

    /// Redact the content of settled messages older than the retention, one batch per
    /// run, once per `retention_every` (warden_core::customers::privacy).
    async fn redact_old_content(&self, report: &mut TickReport) -> Result<(), PhaseError> {
        {
            let mut last = self.last_retention.lock().expect("retention lock");
            if last.is_some_and(|t| t.elapsed() < self.config.retention_every) {
                return Ok(());
            }
            *last = Some(Instant::now());
        }
        let retention = chrono::TimeDelta::from_std(self.config.content_retention)
            .unwrap_or(chrono::TimeDelta::MAX);
        let cutoff = Utc::now()
            .checked_sub_signed(retention)
            .unwrap_or(DateTime::<Utc>::MIN_UTC);
        let batch = self.config.retention_batch;
        let n = warden_core::customers::privacy::redact_older_than(
            self.core.pg(),
            cutoff,
            batch,
            ACTOR,
        )
        .await
        .map_err(CoreError::from)?;
        report.content_redacted = n as usize;
        if n as i64 >= batch {
            // More to do: the next poll runs the job again at once.
            *self.last_retention.lock().expect("retention lock") = None;
            report.more_work = true;
        }
        if n > 0 {
            tracing::info!(messages = n, "message content past its retention redacted");
        }
        // Idempotency keys live 24 h (docs/tools.md, Conventions); older ones are ignored
        // by the send path and removed here.
        let keys = warden_core::send::idempotency::purge_expired(self.core.pg(), Utc::now(), batch)
            .await?;
        if keys as i64 >= batch {
            *self.last_retention.lock().expect("retention lock") = None;
            report.more_work = true;
        }
        Ok(())
    }

    async fn update_gauges(&self) -> Result<(), PhaseError> {
        let pg = self.core.pg();
        metrics::DUE_ROWS.set(gauges::due_scheduled(pg).await?);
        metrics::RELAY_BACKLOG.set(gauges::unpublished(pg).await?);
        for (status, n) in gauges::open_campaigns(pg).await? {
            metrics::CAMPAIGNS
                .with_label_values(&[status.as_str()])
                .set(n);
        }
        let protected = self
            .core
            .protected_senders()
            .await
            .map_err(PhaseError::from)?;
        let senders = self.core.senders();
        for sender in senders.all() {
            let key = senders.key_of(sender).sender;
            let on = protected.iter().any(|p| p.sender_id == key);
            metrics::SENDER_PROTECTED
                .with_label_values(&[sender.id.as_str()])
                .set(i64::from(on));
        }
        Ok(())
    }

    /// Poll until stopped: a busy poll is followed at once by the next, an idle one waits
    /// `poll_interval`.
    async fn run_loop(self: Arc<Self>) {
        tracing::info!(
            owner = self.owner(),
            poll_ms = self.config.poll_interval.as_millis() as u64,
            "scheduler started"
        );
        while !self.is_stopping() {
            let more = match self.tick().await {
                Ok(report) => report.more_work,
                Err(_) => false,
            };
            if self.is_stopping() {
                break;
            }
            if !more {
                tokio::select! {
                    _ = tokio::time::sleep(self.config.poll_interval) => {}
                    _ = self.wake.notified() => {}
                }
            }
        }
        match self.release_leases().await {
            Ok((m, c)) => tracing::info!(
                messages = m,
                campaigns = c,
                "scheduler stopped; leases released"
            ),
            Err(e) => {
                tracing::warn!(error = %e, "scheduler stopped; leases not released (they expire)")
            }
        }
    }
}

/// A running scheduler: its state and the task polling.
pub struct Running {
    pub scheduler: Arc<Scheduler>,
    pub task: tokio::task::JoinHandle<()>,
}

impl Running {
    /// Stop now (as if the shutdown future resolved) and wait for the loop to end.
    pub async fn stop(self) {
        self.scheduler.request_stop();
        let _ = self.task.await;
    }
}

/// Start polling in the background until `shutdown` resolves (then finish the sends in
/// flight, release leases and end). The in-process entry for tests and the bench.
pub fn start(
    core: Core,
    poll_interval: Duration,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Running {
    let config = Config {
        poll_interval,
        ..Config::default()
    };
    start_with(core, config, shutdown)
}

/// [`start`] with every tunable.
pub fn start_with(
    core: Core,
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Running {
    let scheduler = Arc::new(Scheduler::new(core, config));
    let watcher = scheduler.clone();
    tokio::spawn(async move {
        shutdown.await;
        watcher.request_stop();
    });
    let task = tokio::spawn(scheduler.clone().run_loop());
    Running { scheduler, task }
}

/// The `scheduler` binary: serve `/health` and `/metrics`, poll until SIGTERM/SIGINT,
/// then finish the sends in flight, release leases and exit.
pub async fn run(deps: Dependencies) -> Result<(), StartError> {
    let listener = admin::listener(&deps.settings, DEFAULT_ADMIN_PORT)?;
    serve(listener, deps).await.map_err(StartError::Failed)
}

async fn serve(listener: std::net::TcpListener, deps: Dependencies) -> anyhow::Result<()> {
    let settings = deps.settings.clone();
    tracing::info!(addr = %listener.local_addr()?, "admin HTTP listening");
    metrics::init();
    // The scheduler's own pool: larger than the one `Dependencies` opened.
    let pg = warden_store::connect(&settings.database, POOL_SIZE, Duration::from_secs(10)).await?;
    let deps = Dependencies { pg, ..deps };
    let server = admin::serve(listener, admin::postgres_check(deps.pg.clone()))?;
    let handle = server.handle();
    let served = tokio::spawn(server);
    let core = Core::new(deps, ACTOR);
    let running = start_with(
        core,
        Config::from_settings(&settings),
        warden_service::shutdown_signal(),
    );
    let _ = running.task.await;
    // The last chunks' published marks, so they are not left to the relay.
    if tokio::time::timeout(
        Duration::from_secs(5),
        running.scheduler.core().flush_publishes(),
    )
    .await
    .is_err()
    {
        tracing::warn!(
            "published marks still outstanding at exit; the relay publishes those messages again"
        );
    }
    handle.stop(true).await;
    served.await??;
    tracing::info!("stopped");
    Ok(())
}
