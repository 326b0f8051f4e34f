//! `scheduler`: Dispatches due scheduled messages and campaigns and republishes queued rows whose publish was lost (/health, /metrics on ADMIN_HTTP_PORT, default 9091).

use std::path::PathBuf;

use clap::Parser;
use warden_service::{Needs, StartError};

const BINARY: &str = "scheduler";

/// Dispatches due scheduled messages and campaigns and republishes queued rows whose publish was lost (/health, /metrics on ADMIN_HTTP_PORT, default 9091).
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
    let deps = warden_service::start(
        settings,
        Needs {
            redis: true,
            nats: true,
            // Start-up checks only: the scheduler opens its own, larger pool.
            pool_size: 2,
        },
    )
    .await?;
    warden_scheduler::run(deps).await
}
