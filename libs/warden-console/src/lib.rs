//! The operator console (`console`, docs/console.md): server-rendered pages for the people
//! who answer for the agents. Every read goes through a core use case and every write
//! through one, audited as `operator:NAME`.
//!
//! - `GET/POST /login`, `POST /logout`: sessions ([`auth`]); any page without one is a
//!   303 to `/login`.
//! - Every POST carries the session's `csrf_token` (else 403, nothing changes); a viewer's
//!   POST is 403.
//! - Pages ([`pages`]): `/` overview, `/conversations`, `/conversations/{customer}`,
//!   `/customers`, `/customers/{id}`, `/campaigns`, `/campaigns/{id}`, `/templates`,
//!   `/agents`, `/policies`, `/audit`; and their actions.
//! - `/live/overview` (JSON) and `/live/inbox` (an HTML fragment): what the overview's and
//!   the inbox's small scripts poll; 401 without a session.
//! - `/health` (Postgres), `/metrics`.

// Handlers' helpers answer `Err(the response to send)`; an HttpResponse is 128 bytes and
// built once per request, so boxing it buys nothing.
#![allow(clippy::result_large_err)]

pub mod auth;
pub mod chart;
pub mod pages;
pub mod render;
pub mod state;

use std::net::TcpListener;

use actix_web::middleware::from_fn;
use actix_web::{App, HttpServer, web};
use warden_core::Core;
use warden_service::{Dependencies, StartError, admin};

pub use state::AppState;

/// What the console's own writes are attributed to before an operator is known.
pub const ACTOR: &str = "console";

/// The routes, for `App::configure` (tests build the real app with it).
pub fn app_config(state: AppState) -> impl FnOnce(&mut web::ServiceConfig) {
    move |cfg: &mut web::ServiceConfig| {
        cfg.app_data(web::Data::new(state))
            .app_data(web::FormConfig::default().limit(64 * 1024))
            .route("/login", web::get().to(auth::login_page))
            .route("/login", web::post().to(auth::login))
            .route("/logout", web::post().to(auth::logout))
            .route("/health", web::get().to(state::health))
            .route("/metrics", web::get().to(admin::metrics))
            .configure(pages::routes);
    }
}

/// Start the HTTP server on `listener` (already bound; port 0 works) and return it running.
pub fn server(listener: TcpListener, state: AppState) -> std::io::Result<actix_web::dev::Server> {
    Ok(HttpServer::new(move || {
        App::new()
            .wrap(from_fn(admin::track_requests))
            .configure(app_config(state.clone()))
    })
    .workers(2)
    .disable_signals()
    .listen(listener)?
    .run())
}

/// Serve on `listener` until SIGTERM/SIGINT, then drain in-flight requests.
pub async fn serve(listener: TcpListener, deps: Dependencies) -> anyhow::Result<()> {
    let state = AppState::new(Core::new(deps, ACTOR));
    tracing::info!(addr = %listener.local_addr()?, "console HTTP listening");
    let server = server(listener, state)?;
    let handle = server.handle();
    let served = tokio::spawn(server);
    warden_service::shutdown_signal().await;
    handle.stop(true).await;
    served.await??;
    tracing::info!("stopped");
    Ok(())
}

/// Serve the console on CONSOLE_HTTP_ADDR until SIGTERM/SIGINT.
pub async fn run(deps: Dependencies) -> Result<(), StartError> {
    let addr = deps.settings.console.addr;
    let listener = TcpListener::bind(addr).map_err(|source| StartError::Listen {
        variable: "CONSOLE_HTTP_ADDR",
        port: addr.port(),
        source,
    })?;
    serve(listener, deps).await.map_err(StartError::Failed)
}
