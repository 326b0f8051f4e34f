//! `mcp-gateway`: the agent tools (the spec's 24 plus get_campaign and resume_campaign)
//! over MCP stdio. An agent host spawns it; stdout carries only the protocol, logs go to
//! stderr.

use std::path::PathBuf;

use clap::Parser;
use warden_service::Needs;

const BINARY: &str = "mcp-gateway";

/// Serves Warden's agent tools over MCP on stdin/stdout until stdin closes or SIGTERM.
///
/// Configuration comes from the environment (see README "Configuration"), optionally
/// layered over a TOML file whose keys are the variable names in lower case. Postgres,
/// Redis and NATS must be reachable at start; if NATS goes away later, accepted messages
/// stay queued and are published by the scheduler's relay.
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
            pool_size: 8,
        },
    )
    .await;
    if let Err(e) = warden_gateway::run(deps).await {
        warden_service::die(BINARY, warden_service::exit::DEPENDENCY, format!("{e:#}"));
    }
}
