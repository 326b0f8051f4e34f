//! The MCP server: state, the combined tool router, and server info.

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, tool_handler};
use warden_core::Core;
use warden_platform::PlatformClient;
use warden_service::Dependencies;

/// Who the gateway's audit rows and sends are attributed to.
pub const ACTOR: &str = "mcp-gateway";

const INSTRUCTIONS: &str = "Warden checks, sends, schedules and monitors WhatsApp business messages while enforcing \
the platform's rules (24-hour care window, opt-outs, frequency caps, approved templates) and the business's policies. \
Customers are identified by phone number with country code. Before messaging, call check_compliance (or \
get_customer_context for the full picture). Inside an open care window use reply_customer or send_message; outside \
it use send_template with an APPROVED template. Every failure is a result with isError and \
{\"error\": {\"code\", \"message\", \"suggested_action\"}}: follow suggested_action.";

pub(crate) struct Inner {
    pub core: Core,
    pub platform: PlatformClient,
}

/// The MCP server. Cheap to clone; one per session.
#[derive(Clone)]
pub struct Gateway {
    pub(crate) inner: Arc<Inner>,
    tool_router: ToolRouter<Gateway>,
}

impl Gateway {
    /// Build from the process's dependencies (Postgres required; Redis and NATS optional:
    /// without NATS accepted messages stay queued for the scheduler's relay).
    pub fn new(deps: Dependencies) -> Result<Self, String> {
        let p = &deps.settings.platform;
        let platform = warden_service::platform::client(p, None)
            .map_err(|e| format!("PLATFORM_API_URL: {e}"))?;
        let core = Core::new(deps, ACTOR);
        Ok(Gateway {
            inner: Arc::new(Inner { core, platform }),
            tool_router: Self::v1_tools()
                + Self::read_tools()
                + Self::action_tools()
                + Self::campaign_tools()
                + Self::account_tools()
                + Self::ops_tools(),
        })
    }

    pub(crate) fn core(&self) -> &Core {
        &self.inner.core
    }

    pub(crate) fn platform(&self) -> &PlatformClient {
        &self.inner.platform
    }

    /// The names of every tool, sorted (for tests and `--help`-style listings).
    pub fn tool_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .tool_router
            .list_all()
            .into_iter()
            .map(|t| t.name.to_string())
            .collect();
        names.sort();
        names
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Gateway {
    fn get_info(&self) -> ServerConfig {
        let settings = self.core().settings();
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                settings.mcp_name.clone(),
                settings.mcp_version.clone(),
            ))
            .with_instructions(INSTRUCTIONS)
    }
}
