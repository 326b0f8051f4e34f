//! The webhook server: the door the platform knocks on.
//!
//! - `GET /webhook`: subscription handshake (echo `hub.challenge`, else 403 `Forbidden`).
//! - `POST /webhook`: verify `X-Hub-Signature-256` over the raw body, parse, store every
//!   event of the POST in one Postgres transaction (each applied once, by its key in
//!   `webhook_events`), then answer 200 `EVENT_RECEIVED`. See [`ingest`] for the
//!   transaction, [`events`] for the keys, and [`coalesce`] for how concurrent POSTs
//!   share a transaction.
//! - `/health` (Postgres), `/metrics`.
//! - In the background, what the platform says of each sender's number ([`numbers`]).
//!
//! Stateless: all state is in Postgres (and the Redis window cache, written through after
//! each commit), so any number of replicas can serve one Service. NATS carries the
//! messages a failed status puts back in the queue (published after the commit).

pub mod coalesce;
pub mod events;
mod http;
pub mod ingest;
pub mod metrics;
pub mod numbers;

use std::net::TcpListener;

use actix_web::middleware::from_fn;
use actix_web::{App, HttpServer};
use warden_core::Core;
use warden_service::{Dependencies, StartError, admin};
use warden_settings::Settings;

pub use http::{ACK, AppState, MAX_BODY_BYTES, MissingSecret, app_config};

/// `PLATFORM_APP_SECRET` must be set (a configuration error, exit code 2). Check it before
/// connecting to anything, so the operator sees the configuration error first.
pub fn require_secret(settings: &Settings) -> Result<(), MissingSecret> {
    match settings.platform.app_secret {
        Some(_) => Ok(()),
        None => Err(MissingSecret),
    }
}

/// Start the HTTP server on `listener` (already bound; port 0 works) and return it running.
/// The caller awaits it, or stops it through `server.handle()`.
/// Also reads every sender's number from the platform in the background ([`numbers`]).
pub fn server(listener: TcpListener, state: AppState) -> std::io::Result<actix_web::dev::Server> {
    metrics::init();
    numbers::start(state.core().clone());
    Ok(HttpServer::new(move || {
        // Runs on each worker's thread: its pools open connections on that thread.
        App::new()
            .wrap(from_fn(admin::track_requests))
            .configure(app_config(state.for_worker()))
    })
    .disable_signals()
    .listen(listener)?
    .run())
}

/// Serve on `listener` until SIGTERM/SIGINT, then drain in-flight requests.
pub async fn serve(listener: TcpListener, deps: Dependencies) -> anyhow::Result<()> {
    let state = AppState::new(Core::new(deps, ingest::ACTOR))?;
    tracing::info!(addr = %listener.local_addr()?, "webhook HTTP listening");
    let server = server(listener, state)?;
    let handle = server.handle();
    let served = tokio::spawn(server);
    warden_service::shutdown_signal().await;
    handle.stop(true).await;
    served.await??;
    tracing::info!("stopped");
    Ok(())
}

/// Serve the webhook endpoints on SERVER_HTTP_PORT until SIGTERM/SIGINT. Refuses to start
/// without `PLATFORM_APP_SECRET` (a configuration error).
pub async fn run(deps: Dependencies) -> Result<(), StartError> {
    require_secret(&deps.settings).map_err(StartError::config)?;
    let listener = admin::bind("SERVER_HTTP_PORT", deps.settings.http_port)?;
    serve(listener, deps).await.map_err(StartError::Failed)
}
