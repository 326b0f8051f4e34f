//! `dispatcher`: Consumes the delivery stream, rate-limits with the shared token bucket and calls the platform (/health, /metrics on ADMIN_HTTP_PORT, default 9090).

use std::path::PathBuf;

use clap::Parser;
use warden_service::Needs;

const BINARY: &str = "dispatcher";

/// Consumes the delivery stream, rate-limits with the shared token bucket and calls the platform (/health, /metrics on ADMIN_HTTP_PORT, default 9090).
///
/// Configuration comes from the environment (see README "Configuration"), optionally
/// layered over a TOML file whose keys are the variable names in lower case.
#[derive(Parser)]
#[command(name = BINARY, version, after_help = dispatcher_variables())]
struct Args {
    /// Optional TOML config file; environment variables override it.
    #[arg(long, env = "WARDEN_CONFIG")]
    config: Option<PathBuf>,
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
    let args = Args::parse();
    let (settings, _telemetry) = warden_service::bootstrap(BINARY, args.config.as_deref());
    // The dispatcher's own variables are checked before any dependency is reached.
    if let Err(e) = warden_dispatcher::DispatcherConfig::from_env(&settings) {
        warden_service::die(BINARY, warden_service::exit::CONFIG, e);
    }
    let deps = warden_service::start(
        BINARY,
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
    .await;
    if let Err(e) = warden_dispatcher::run(BINARY, deps).await {
        warden_service::die(BINARY, warden_service::exit::DEPENDENCY, format!("{e:#}"));
    }
}
