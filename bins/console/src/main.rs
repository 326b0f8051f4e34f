//! `console`: the operator console (server-rendered pages on CONSOLE_HTTP_ADDR).

use std::path::PathBuf;

use clap::Parser;
use warden_service::{Needs, StartError};

const BINARY: &str = "console";

/// The operator console: overview, conversations, customers, campaigns, templates, agents,
/// policies and the audit log, for operators created with `warden-admin operators create`.
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
            // The window cache and conversation hints; an operator's reply is published
            // to the delivery stream like any send.
            redis: true,
            nats: true,
            // Pages read a few statements each; two workers share the pool.
            pool_size: 6,
        },
    )
    .await?;
    warden_console::run(deps).await
}
