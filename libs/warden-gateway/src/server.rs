//! The MCP server: building the gateway with its combined tool router, and server info.

use std::sync::Arc;

use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, tool_handler};
use warden_core::Core;
use warden_platform::PlatformError;
use warden_service::Dependencies;

use crate::gateway::{ACTOR, Gateway, Inner};

const INSTRUCTIONS: &str = "Warden checks, sends, schedules and monitors WhatsApp business messages while enforcing \
the platform's rules (24-hour care window, opt-outs, frequency caps, approved templates) and the business's policies. \
Customers are identified by phone number with country code. Before messaging, call check_compliance (or \
get_customer_context for the full picture). Inside an open care window use reply_customer or send_message; outside \
it use send_template with an APPROVED template. Every failure is a result with isError and \
{\"error\": {\"code\", \"message\", \"suggested_action\"}}: follow suggested_action.";

/// Why the gateway could not be built from the process's dependencies.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// The platform client refused its settings.
    #[error("PLATFORM_API_URL: {0}")]
    Platform(PlatformError),
}

impl Gateway {
    /// Build from the process's dependencies (Postgres required; Redis and NATS optional:
    /// without NATS accepted messages stay queued for the scheduler's relay).
    pub fn new(deps: Dependencies) -> Result<Self, GatewayError> {
        let p = &deps.settings.platform;
        let platform = warden_service::platform::client(p, None).map_err(GatewayError::Platform)?;
        let core = Core::new(deps, ACTOR);
        Ok(Gateway {
            inner: Arc::new(Inner { core, platform }),
            tool_router: Self::v1_tools()
                + Self::read_tools()
                + Self::action_tools()
                + Self::campaign_tools()
                + Self::account_tools()
                + Self::ops_tools()
                + Self::rich_tools()
                + Self::media_tools(),
        })
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
