//! `webhook`: Ingests the platform's signed webhook events (GET/POST /webhook, /health, /metrics on SERVER_HTTP_PORT).

use std::path::PathBuf;

use clap::Parser;
use warden_service::Needs;

const BINARY: &str = "webhook";

/// Ingests the platform's signed webhook events (GET/POST /webhook, /health, /metrics on SERVER_HTTP_PORT).
///
/// Configuration comes from the environment (see README "Configuration"), optionally
/// layered over a TOML file whose keys are the variable names in lower case.
#[derive(Parser)]
#[command(name = BINARY, version)]
struct Args {
    /// Optional TOML config file; environment variables override it.
    #[arg(long, env = "WARDEN_CONFIG")]
    config: Option<PathBuf>,
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    let (settings, _telemetry) = warden_service::bootstrap(BINARY, args.config.as_deref());
    // A configuration error (exit 2) is reported before any dependency is dialled.
    warden_webhook::require_secret(BINARY, &settings);
    let deps = warden_service::start(
        BINARY,
        settings,
        Needs {
            redis: true,
            // A retryable failure reported by a status webhook puts its message back in the
            // queue and publishes it (the scheduler's relay covers a publish NATS refuses).
            nats: true,
            // Requests use per-worker pools (warden_webhook::AppState::for_worker);
            // this one only proves Postgres is reachable at start-up.
            pool_size: 2,
        },
    )
    .await;
    if let Err(e) = warden_webhook::run(BINARY, deps).await {
        warden_service::die(BINARY, warden_service::exit::DEPENDENCY, format!("{e:#}"));
    }
}
