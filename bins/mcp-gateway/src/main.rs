//! `mcp-gateway`: the agent tools (docs/tools.md)
//! over MCP stdio (an agent host spawns it; stdout carries only the protocol, logs go to
//! stderr) or Streamable HTTP (`--http`, docs/remote-agents.md).

use std::path::PathBuf;

use clap::Parser;
use warden_service::{Needs, StartError};

const BINARY: &str = "mcp-gateway";

/// One agent host's calls mostly come one at a time.
const STDIO_POOL: u32 = 8;
/// Many agents at once: with fewer connections than concurrent calls, a call's wait for
/// a connection made the p99 of 32 concurrent check_compliance calls twice its p50 (16:
/// 1.6 times; 32 connections did no better, more Postgres backends on the same cores).
const HTTP_POOL: u32 = 16;

/// mimalloc: the HTTP transport allocates per request (JSON, futures, headers), and
/// glibc's allocator was a tenth of the gateway's time under concurrent calls.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Serves Warden's agent tools over MCP on stdin/stdout until stdin closes or SIGTERM
/// (or over Streamable HTTP with --http).
///
/// Configuration comes from the environment (see docs/configuration.md), optionally
/// layered over a TOML file whose keys are the variable names in lower case. Postgres,
/// Redis and NATS must be reachable at start; if NATS goes away later, accepted messages
/// stay queued and are published by the scheduler's relay.
#[derive(Parser)]
#[command(name = BINARY, version)]
struct Args {
    /// Optional TOML config file; environment variables override it.
    #[arg(long, env = "WARDEN_CONFIG")]
    config: Option<PathBuf>,
    /// Serve Streamable HTTP at /mcp on MCP_HTTP_ADDR instead of stdio (same as
    /// MCP_TRANSPORT=http); /health and /metrics beside it.
    #[arg(long)]
    http: bool,
    /// Print the effective settings (secrets redacted) on stdout and exit (no MCP session).
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
        // The gateway's stdout carries only MCP messages, even in this mode: an agent host
        // that passes the flag by mistake must not read settings as protocol.
        eprint!("{}", settings.print_config());
        return Ok(());
    }
    let _telemetry = warden_service::telemetry(BINARY, &settings)?;
    let http = args.http || settings.mcp_http.transport == warden_settings::McpTransport::Http;
    let deps = warden_service::start(
        settings,
        Needs {
            redis: true,
            nats: true,
            pool_size: if http { HTTP_POOL } else { STDIO_POOL },
        },
    )
    .await?;
    Ok(warden_gateway::run(deps, http).await?)
}
