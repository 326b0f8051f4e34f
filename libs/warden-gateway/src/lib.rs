//! `mcp-gateway`'s tools (the catalogue of docs/tools.md), served with rmcp over MCP stdio
//! or Streamable HTTP ([`http`]).
//!
//! Every tool reads its arguments leniently ([`args`]), answers with `structuredContent`
//! plus the same JSON as one text block, and reports failures in one error envelope
//! ([`error`]). Sends go through the one send path, `warden_core::Core::send`; upstream
//! calls through `warden_platform::PlatformClient`. Nothing here writes to stdout: it
//! belongs to the protocol (logs go to stderr through `warden_telemetry`).

mod answer;
pub mod auth;
pub mod caller;
pub mod error;
mod gateway;
pub mod http;
mod input;
mod quoting;
mod resources;
pub mod schema;
mod server;
mod subscriptions;
mod tools;

pub use gateway::Gateway;

/// The scope a tool needs (docs/remote-agents.md, Scopes); unknown tools need `admin`.
pub fn tool_scope(tool: &str) -> caller::Scope {
    tools::scopes::required(tool)
}

/// Whether the scope table names `tool` (a test keeps every tool in it).
pub fn tool_scope_listed(tool: &str) -> bool {
    tools::scopes::listed(tool).is_some()
}
pub use server::GatewayError;

use std::time::Duration;

use anyhow::Context;
use rmcp::ServiceExt;
use warden_service::Dependencies;
use warden_settings::{McpHttpAuth, McpTransport};

/// Serve the tools on the transport `MCP_TRANSPORT` names (`http` forced by `--http`)
/// until SIGTERM/SIGINT (or, over stdio, until the agent host closes stdin).
pub async fn run(deps: Dependencies, force_http: bool) -> anyhow::Result<()> {
    if force_http || deps.settings.mcp_http.transport == McpTransport::Http {
        run_http(deps).await
    } else {
        run_stdio(deps).await
    }
}

/// Streamable HTTP at `/mcp` on `MCP_HTTP_ADDR`, `/health` and `/metrics` beside it.
pub async fn run_http(deps: Dependencies) -> anyhow::Result<()> {
    let settings = deps.settings.mcp_http.clone();
    let redis = deps.redis.clone();
    let health = warden_service::admin::postgres_check(deps.pg.clone());
    let (deps_pg, identity) = (deps.pg.clone(), deps.settings.identity.clone());
    let gateway = Gateway::new(deps)?;
    if settings.auth == McpHttpAuth::None {
        tracing::warn!(
            addr = %settings.addr,
            "MCP_HTTP_AUTH=none: /mcp takes requests without credentials, every caller acting as agent `http` with every scope (loopback only; never in production)"
        );
    }
    let authenticator = http::authenticator_for(settings.auth, deps_pg, &identity);
    let server = http::HttpServer::bind(gateway, &settings, redis, authenticator, health).await?;
    tracing::info!(
        addr = %server.local_addr()?,
        auth = settings.auth.as_str(),
        allowed_origins = %settings.allowed_origins.join(","),
        "MCP Streamable HTTP listening at /mcp"
    );
    server.serve(warden_service::shutdown_signal()).await;
    tracing::info!("stopped on signal");
    Ok(())
}

/// Serve the tools on stdin/stdout until the agent host closes stdin or SIGTERM/SIGINT.
pub async fn run_stdio(deps: Dependencies) -> anyhow::Result<()> {
    let gateway = Gateway::new(deps)?
        .with_stored_agent_senders()
        .await
        .context("reading the agent MCP_AGENT names")?;
    let core = gateway.core().clone();
    let serving = async {
        let service = gateway
            .serve(rmcp::transport::stdio())
            .await
            .context("MCP session did not start")?;
        tracing::info!("MCP session started");
        let reason = service.waiting().await.context("MCP session failed")?;
        tracing::info!(?reason, "MCP session ended");
        anyhow::Ok(())
    };
    let result = tokio::select! {
        result = serving => result,
        _ = warden_service::shutdown_signal() => {
            tracing::info!("stopping on signal");
            Ok(())
        }
    };
    // The last answers' published marks, so they are not left to the relay.
    if tokio::time::timeout(Duration::from_secs(5), core.flush_publishes())
        .await
        .is_err()
    {
        tracing::warn!(
            "published marks still outstanding at exit; the relay publishes those messages again"
        );
    }
    result
}
