//! `scheduler`: Dispatches due scheduled messages and campaigns and republishes queued rows whose publish was lost (/health, /metrics on ADMIN_HTTP_PORT, default 9091).

use std::path::PathBuf;

use clap::Parser;
use warden_service::Needs;

const BINARY: &str = "scheduler";

/// Dispatches due scheduled messages and campaigns and republishes queued rows whose publish was lost (/health, /metrics on ADMIN_HTTP_PORT, default 9091).
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
    let deps = warden_service::start(
        BINARY,
        settings,
        Needs {
            redis: true,
            nats: true,
            // Start-up checks only: the scheduler builds its own, larger pool (see
            // warden_scheduler::pool).
            pool_size: 2,
        },
    )
    .await;
    if let Err(e) = warden_scheduler::run(BINARY, deps).await {
        warden_service::die(BINARY, warden_service::exit::DEPENDENCY, format!("{e:#}"));
    }
}
