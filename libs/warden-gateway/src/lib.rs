//! `mcp-gateway`'s tools: the spec's 24 plus `get_campaign` and `resume_campaign`, served
//! over MCP stdio with rmcp.
//!
//! Every tool reads its arguments leniently ([`args`]), answers with `structuredContent`
//! plus the same JSON as one text block, and reports failures in the contract's envelope
//! ([`error`]). Sends go through the one send path, `warden_core::Core::send`; upstream
//! calls through `warden_platform::PlatformClient`. Nothing here writes to stdout: it
//! belongs to the protocol (logs go to stderr through `warden_telemetry`).

pub mod args;
pub mod auth;
pub mod caller;
pub mod error;
mod gateway;
mod resources;
pub mod schema;
mod server;
mod subscriptions;
mod text;
mod tools;
mod util;

pub use gateway::Gateway;

/// The scope a tool needs (README "Remote agents"); unknown tools need `admin`.
pub fn tool_scope(tool: &str) -> caller::Scope {
    tools::scopes::required(tool)
}

/// Whether the scope table names `tool` (a test keeps every tool in it).
pub fn tool_scope_listed(tool: &str) -> bool {
    tools::scopes::listed(tool).is_some()
}
pub use server::GatewayError;

use anyhow::Context;
use rmcp::ServiceExt;
use warden_service::Dependencies;

/// Serve the tools on stdin/stdout until the agent host closes stdin or SIGTERM/SIGINT.
pub async fn run(deps: Dependencies) -> anyhow::Result<()> {
    let gateway = Gateway::new(deps)?;
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
    tokio::select! {
        result = serving => result,
        _ = warden_service::shutdown_signal() => {
            tracing::info!("stopping on signal");
            Ok(())
        }
    }
}
