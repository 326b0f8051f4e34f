//! The dispatcher: consumes the delivery stream, rate-limits each message with its
//! sender's shared token bucket ([`pacing`]), calls the platform with its sender's client
//! and records outcomes (docs/operations.md, Delivery).
//!
//! Every replica shares one durable pull consumer (`dispatcher`, explicit ack). A message
//! is sent only after its row was claimed in Postgres (`queued -> sending`, with a lease),
//! so a redelivery or a crash never sends it twice; an outcome left unknown by a crash is
//! settled by the status webhooks (`biz_opaque_callback_data` = message id). Outcomes
//! follow the error knowledge base's handling class: retry with backoff, fail with an
//! explanation, record state (opt-out, undeliverable, marketing limit) or halt (pause
//! campaigns, alert). A send whose outcome is unknown (timeout, or a claim whose
//! dispatcher died) is held for its status webhook and resent only on evidence that it
//! never arrived, or after DISPATCH_UNKNOWN_MAX_WAIT; [`sweep`] applies that rule also to
//! rows no stream message drives any more, so nothing stays `sending` without an owner.
//!
//! [`run`] is the binary's whole life; [`start`] runs one in-process (tests, benchmarks).

mod body;
pub mod capacity;
mod claimer;
mod config;
mod deliver;
mod failures;
pub mod marketing;
mod metrics;
mod pacing;
pub mod sweep;
mod unknown_events;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use async_nats::jetstream::consumer::{self, AckPolicy, DeliverPolicy, PullConsumer};
use futures::StreamExt;
use tokio::sync::Semaphore;
use tokio::task::{JoinHandle, JoinSet};
use warden_ratelimit::{PairLimiter, TokenBucket};
use warden_service::{Dependencies, StartError, admin};
use warden_stream::DeliveryStream;

pub use config::{CONSUMER_NAME, DispatcherConfig, VARIABLES};
pub use deliver::{ACTOR, Stats, StatsSnapshot};

/// ADMIN_HTTP_PORT default (docs/configuration.md).
pub const DEFAULT_ADMIN_PORT: u16 = 9090;

/// A running in-process dispatcher.
pub struct Dispatcher {
    handle: JoinHandle<anyhow::Result<()>>,
    stats: Arc<Stats>,
    pacing: Arc<pacing::Pacing>,
}

impl Dispatcher {
    /// Counters of this instance.
    pub fn stats(&self) -> StatsSnapshot {
        self.stats.snapshot()
    }

    /// The default sender's shared bucket.
    pub fn bucket(&self) -> &TokenBucket {
        self.pacing.default_bucket()
    }

    /// The shared bucket of the sender whose messages are stored under `sender`
    /// (`default`: the default sender's).
    pub fn bucket_of(&self, sender: &str) -> &TokenBucket {
        &self.pacing.of(sender).bucket
    }

    /// Wait until it stopped (after the shutdown future resolved and in-flight work ended).
    pub async fn join(self) -> anyhow::Result<()> {
        self.handle.await.context("dispatcher task")?
    }

    /// The task itself (e.g. to abort it in a test that simulates a crash).
    pub fn into_handle(self) -> JoinHandle<anyhow::Result<()>> {
        self.handle
    }
}

/// Start consuming: ensures the stream (done by `DeliveryStream::connect`) and the durable
/// consumer, then pulls until `shutdown` resolves; then it stops pulling, lets in-flight
/// sends finish (bounded by `drain_timeout`) and ends.
pub async fn start(
    deps: Dependencies,
    config: DispatcherConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<Dispatcher> {
    metrics::touch();
    unknown_events::touch();
    let stream = deps
        .stream
        .clone()
        .context("the dispatcher needs NATS (delivery stream)")?;
    let consumer = ensure_consumer(&stream, &config).await?;
    // Redis is optional at start: the bucket falls back to a local limit until it answers.
    let redis = match deps.redis.clone() {
        Some(pool) => Some(pool),
        None => Some(
            warden_ratelimit::lazy_pool(&deps.settings.redis.url())
                .map_err(|e| anyhow::anyhow!("REDIS_ADDR: {e}"))?,
        ),
    };
    let bucket = TokenBucket::new(
        redis.clone(),
        config.bucket_channel(),
        config.mps,
        config.dispatch.replicas,
    );
    // The pair rate stays per recipient, whichever number writes to them.
    let pair = PairLimiter::sharing(&bucket, config.dispatch.pair_interval);
    let pacing = Arc::new(pacing::Pacing::new(bucket, &config));
    let platform =
        warden_service::platform::client(&deps.settings, Some(config.dispatch.platform_timeout))
            .map_err(|e| anyhow::anyhow!("PLATFORM_API_URL: {e}"))?;
    let portfolios: std::collections::HashMap<String, String> = {
        let senders = deps.settings.senders();
        senders
            .all()
            .iter()
            .map(|s| {
                let keys = senders.key_of(s);
                (keys.sender, keys.portfolio)
            })
            .collect()
    };
    let other_senders = warden_service::platform::other_senders(
        &deps.settings,
        Some(config.dispatch.platform_timeout),
    )
    .map_err(|e| anyhow::anyhow!("PLATFORM_API_URL: {e}"))?;
    let stats = Arc::new(Stats::default());
    let outcomes_pg = relaxed_pool(&deps).await;
    tracing::info!(
        stream = %stream.stream_name,
        consumer = %config.consumer,
        owner = %config.owner,
        mps = config.mps,
        senders = config.sender_mps.len() + 1,
        replicas = config.dispatch.replicas,
        concurrency = config.dispatch.concurrency,
        pair_interval_ms = config.dispatch.pair_interval.as_millis() as u64,
        max_attempts = config.dispatch.max_attempts,
        lease_ms = config.claim_lease().as_millis() as u64,
        sweep_interval_ms = config.dispatch.sweep_interval.as_millis() as u64,
        bucket = %pacing.default_bucket().key(),
        "dispatcher consuming"
    );
    // Each sender's throughput: its number read from the platform with its own client
    // before consuming (bounded, so a slow platform does not hold the start), then the
    // recorded capacities every few s.
    let numbers: Vec<(&str, &warden_platform::PlatformClient)> =
        std::iter::once((warden_settings::STORED_DEFAULT, &platform))
            .chain(other_senders.iter().map(|(k, c)| (k.as_str(), c)))
            .collect();
    let _ = tokio::time::timeout(
        capacity::READ_LIMIT,
        capacity::read_numbers(&deps.pg, &numbers),
    )
    .await;
    capacity::refresh(&deps.pg, &pacing).await;
    let follower = tokio::spawn(capacity::run(deps.pg.clone(), Arc::clone(&pacing)));
    let ctx = Arc::new(
        deliver::Ctx::new(
            deps.pg.clone(),
            outcomes_pg,
            platform,
            Arc::clone(&pacing),
            pair,
            warden_core::WindowCache::new(redis),
            config,
            Arc::clone(&stats),
            deps.stream.as_ref().map(|s| s.hints.clone()),
        )
        .with_other_senders(other_senders)
        .with_portfolios(portfolios)
        .with_marketing_messages(marketing::policies(&deps.settings.senders())),
    );
    let sweeper = (!ctx.cfg.dispatch.sweep_interval.is_zero()).then(|| {
        tokio::spawn(sweep::run(
            deps.pg.clone(),
            stream.clone(),
            Arc::new(ctx.cfg.clone()),
        ))
    });
    let handle = tokio::spawn(async move {
        let result = pull_loop(ctx, consumer, shutdown).await;
        if let Some(sweeper) = sweeper {
            sweeper.abort();
        }
        follower.abort();
        result
    });
    Ok(Dispatcher {
        handle,
        stats,
        pacing,
    })
}

/// A pool whose sessions commit without waiting for the WAL flush
/// (`synchronous_commit = off`), used only to record `sent` after the platform accepted a
/// message. The claim before the call stays fully durable; if Postgres itself crashed and
/// lost such a record, the row would be back at `sending` (the claim was flushed), which
/// is never resent and is settled by the status webhook. Halves the WAL flushes per
/// message, the dispatcher's bottleneck on a slow disk. Falls back to the main pool.
async fn relaxed_pool(deps: &Dependencies) -> warden_store::PgPool {
    let url = format!(
        "{}&options=-c%20synchronous_commit%3Doff",
        deps.settings.database.url()
    );
    let manager = warden_store::pool::manager(url);
    match warden_store::PgPool::builder()
        // Asynchronous commits are quick: a few sessions serve every task.
        .max_size(8)
        .connection_timeout(Duration::from_secs(5))
        .build(manager)
        .await
    {
        Ok(pool) => match relaxed_setting(&pool).await {
            Ok(setting) if setting == "off" => pool,
            Ok(other) => {
                tracing::warn!(setting = %other, "synchronous_commit option not applied; recording outcomes with the main pool");
                deps.pg.clone()
            }
            Err(e) => {
                tracing::warn!(error = %e, "no relaxed-commit pool; recording outcomes with the main pool");
                deps.pg.clone()
            }
        },
        Err(e) => {
            tracing::warn!(error = %e, "no relaxed-commit pool; recording outcomes with the main pool");
            deps.pg.clone()
        }
    }
}

/// `SHOW synchronous_commit` on one of the pool's sessions.
async fn relaxed_setting(pool: &warden_store::PgPool) -> anyhow::Result<String> {
    use diesel_async::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct Setting {
        #[diesel(sql_type = diesel::sql_types::Text)]
        synchronous_commit: String,
    }
    let mut conn = pool.get().await?;
    let row: Setting = diesel::sql_query("SHOW synchronous_commit")
        .get_result(&mut conn)
        .await?;
    Ok(row.synchronous_commit)
}

/// The durable pull consumer every replica shares (created or brought up to date).
/// nats-server 2.9: one filter subject, the stream's own wildcard.
pub async fn ensure_consumer(
    stream: &DeliveryStream,
    config: &DispatcherConfig,
) -> anyhow::Result<PullConsumer> {
    let js_stream = stream
        .jetstream
        .get_stream(&stream.stream_name)
        .await
        .with_context(|| format!("JetStream stream {}", stream.stream_name))?;
    let wanted = consumer::pull::Config {
        durable_name: Some(config.consumer.clone()),
        name: Some(config.consumer.clone()),
        description: Some("Warden dispatchers: rate-limited delivery to the platform".into()),
        deliver_policy: DeliverPolicy::All,
        ack_policy: AckPolicy::Explicit,
        ack_wait: config.dispatch.ack_wait,
        max_deliver: -1,
        filter_subject: stream.subjects(),
        max_ack_pending: config.dispatch.max_ack_pending,
        ..Default::default()
    };
    let mut existing: PullConsumer = js_stream
        .get_or_create_consumer(&config.consumer, wanted.clone())
        .await
        .with_context(|| format!("JetStream consumer {}", config.consumer))?;
    let info = existing
        .info()
        .await
        .context("JetStream consumer info")?
        .clone();
    let current = &info.config;
    if current.ack_wait != wanted.ack_wait
        || current.max_ack_pending != wanted.max_ack_pending
        || current.max_deliver != wanted.max_deliver
        || current.filter_subject != wanted.filter_subject
    {
        match js_stream.create_consumer(wanted).await {
            Ok(updated) => {
                tracing::info!(consumer = %config.consumer, "consumer configuration updated");
                existing = updated;
            }
            Err(e) => tracing::warn!(consumer = %config.consumer, error = %e,
                "could not update the consumer's configuration; using it as it is"),
        }
    }
    Ok(existing)
}

async fn pull_loop(
    ctx: Arc<deliver::Ctx>,
    consumer: PullConsumer,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let concurrency = ctx.cfg.dispatch.concurrency;
    let permits = Arc::new(Semaphore::new(concurrency));
    let mut tasks = JoinSet::new();
    tokio::pin!(shutdown);
    'pulling: loop {
        let messages = consumer
            .stream()
            .max_messages_per_batch(concurrency)
            .heartbeat(Duration::from_secs(5))
            .expires(Duration::from_secs(30))
            .messages()
            .await;
        let mut messages = match messages {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(error = %e, "cannot pull from the consumer; trying again");
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(1)) => continue 'pulling,
                    _ = &mut shutdown => break 'pulling,
                }
            }
        };
        loop {
            // Bounded in flight: take a permit before taking a message.
            let permit = tokio::select! {
                p = Arc::clone(&permits).acquire_owned() => p.context("permits closed")?,
                _ = &mut shutdown => break 'pulling,
            };
            let next = tokio::select! {
                m = messages.next() => m,
                _ = &mut shutdown => break 'pulling,
            };
            match next {
                Some(Ok(msg)) => {
                    let ctx = Arc::clone(&ctx);
                    tasks.spawn(async move {
                        deliver::handle(ctx, msg).await;
                        drop(permit);
                    });
                }
                Some(Err(e)) => {
                    drop(permit);
                    tracing::warn!(error = %e, "pull stream error");
                    if matches!(
                        e.kind(),
                        consumer::pull::MessagesErrorKind::ConsumerDeleted
                            | consumer::pull::MessagesErrorKind::NoResponders
                    ) {
                        tokio::select! {
                            _ = tokio::time::sleep(Duration::from_secs(1)) => continue 'pulling,
                            _ = &mut shutdown => break 'pulling,
                        }
                    }
                }
                None => continue 'pulling,
            }
            while tasks.try_join_next().is_some() {}
        }
    }
    let in_flight = tasks.len();
    tracing::info!(
        in_flight,
        "stopping: no more pulls, finishing in-flight sends"
    );
    let drained = tokio::time::timeout(ctx.cfg.dispatch.drain_timeout, async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            left = tasks.len(),
            "in-flight sends did not finish in time; abandoning them (their rows keep their leases, nothing is resent)"
        );
        tasks.abort_all();
    }
    tracing::info!(stats = ?ctx.stats.snapshot(), "dispatcher stopped");
    Ok(())
}

/// /health: Postgres answers and the NATS connection is up.
fn health_check(deps: &Dependencies) -> admin::HealthCheck {
    let pg = admin::postgres_check(deps.pg.clone());
    let nats = deps.stream.as_ref().map(|s| s.client.clone());
    Arc::new(move || {
        let pg = Arc::clone(&pg);
        let nats = nats.clone();
        Box::pin(async move {
            (pg.as_ref())().await?;
            match nats.as_ref().map(|c| c.connection_state()) {
                Some(async_nats::connection::State::Connected) => Ok(()),
                Some(state) => Err(format!("nats: {state:?}").into()),
                None => Err("nats: not configured".into()),
            }
        })
    })
}

/// Serve `/health` and `/metrics`, dispatch until SIGTERM/SIGINT, then stop cleanly.
pub async fn run(deps: Dependencies) -> Result<(), StartError> {
    let listener = admin::listener(&deps.settings, DEFAULT_ADMIN_PORT)?;
    serve(listener, deps).await.map_err(StartError::Failed)
}

async fn serve(listener: std::net::TcpListener, deps: Dependencies) -> anyhow::Result<()> {
    let config = DispatcherConfig::from_settings(&deps.settings);
    tracing::info!(addr = %listener.local_addr()?, "admin HTTP listening");
    let server = admin::serve(listener, health_check(&deps))?;
    let handle = server.handle();
    let served = tokio::spawn(server);
    let dispatcher = start(deps, config, warden_service::shutdown_signal()).await?;
    let result = dispatcher.join().await;
    handle.stop(true).await;
    served.await??;
    tracing::info!("stopped");
    result
}
