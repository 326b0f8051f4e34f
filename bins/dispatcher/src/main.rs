//! `dispatcher`: Consumes the delivery stream, rate-limits with the shared token bucket and calls the platform (/health, /metrics on ADMIN_HTTP_PORT, default 9090).

use std::path::PathBuf;

use clap::Parser;
use warden_service::{Needs, StartError};

const BINARY: &str = "dispatcher";

/// Consumes the delivery stream, rate-limits with the shared token bucket and calls the platform (/health, /metrics on ADMIN_HTTP_PORT, default 9090).
///
/// Configuration comes from the environment (see docs/configuration.md), optionally
/// layered over a TOML file whose keys are the variable names in lower case.
#[derive(Parser)]
#[command(name = BINARY, version, after_help = dispatcher_variables())]
struct Args {
    /// Optional TOML config file; environment variables override it.
    #[arg(long, env = "WARDEN_CONFIG")]
    config: Option<PathBuf>,
    /// Print the effective settings (secrets redacted) and exit.
    #[arg(long)]
    print_config: bool,
}

fn dispatcher_variables() -> String {
    let mut out =
        String::from("Dispatcher variables (besides the shared ones, e.g. RATE_LIMIT_MPS):\n");
    for (name, meaning) in warden_dispatcher::VARIABLES {
        out.push_str(&format!("  {name}: {meaning}\n"));
    }
    out
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
    // The dispatcher's own variables are part of the settings: checked before any
    // dependency is reached.
    let settings = warden_service::load_settings(args.config.as_deref())?;
    if args.print_config {
        print!("{}", settings.print_config());
        return Ok(());
    }
    let _telemetry = warden_service::telemetry(BINARY, &settings)?;
    let deps = warden_service::start(
        settings,
        Needs {
            // Redis is optional: the bucket falls back to a local limit while it is down
            // (and the pool connects lazily, so the dispatcher can start without it).
            redis: false,
            nats: true,
            // Room for DISPATCH_CONCURRENCY (64) tasks doing short queries (claims go in
            // groups; `sent` records use 8 more sessions of their own).
            pool_size: 24,
        },
    )
    .await?;
    warden_dispatcher::run(deps).await
}
