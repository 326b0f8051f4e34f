//! `webhook`: Ingests the platform's signed webhook events (GET/POST /webhook, /health, /metrics on SERVER_HTTP_PORT).

use std::path::PathBuf;

use clap::Parser;
use warden_service::{Needs, StartError};

const BINARY: &str = "webhook";

/// Ingests the platform's signed webhook events (GET/POST /webhook, /health, /metrics on SERVER_HTTP_PORT).
///
/// Configuration comes from the environment (see docs/configuration.md), optionally
/// layered over a TOML file whose keys are the variable names in lower case.
#[derive(Parser)]
#[command(name = BINARY, version)]
struct Args {
    /// Optional TOML config file; environment variables override it.
    #[arg(long, env = "WARDEN_CONFIG")]
    config: Option<PathBuf>,
    /// Print the effective settings (secrets redacted) and exit.
    #[arg(long)]
    print_config: bool,
}

#[tokio::main]
async fn main() {
    if let Err(e) = run(Args::parse()).await {
        let code = e.failure().exit_code();
        warden_service::report(BINARY, code, &e);
        std::process::exit(code);
    }
}

async fn run(args: Args) -> Result<(), StartError> {
    let settings = warden_service::load_settings(args.config.as_deref())?;
    if args.print_config {
        print!("{}", settings.print_config());
        return Ok(());
    }
    let _telemetry = warden_service::telemetry(BINARY, &settings)?;
    // A configuration error (exit 2) is reported before any dependency is dialled.
    warden_webhook::require_secret(&settings).map_err(StartError::config)?;
    let deps = warden_service::start(
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
    .await?;
    warden_webhook::run(deps).await
}
