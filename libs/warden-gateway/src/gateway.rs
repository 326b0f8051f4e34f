//! The gateway's state: what every tool handler reaches through `self`. Built in
//! [`crate::server`], which combines the tool routers.

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use warden_core::Core;
use warden_platform::PlatformClient;
use warden_stream::Hints;

use crate::subscriptions::Subscriptions;

/// Who the gateway's audit rows and sends are attributed to.
pub const ACTOR: &str = "mcp-gateway";

pub(crate) struct Inner {
    pub core: Core,
    pub platform: PlatformClient,
    /// Where conversation hints arrive (NATS), for each session's subscriptions.
    pub hints: Option<Hints>,
}

/// The MCP server. Cheap to clone; one per session ([`Gateway::for_session`]).
#[derive(Clone)]
pub struct Gateway {
    pub(crate) inner: Arc<Inner>,
    /// Resource subscriptions of this gateway's session (live updates).
    pub(crate) subscriptions: Arc<Subscriptions>,
    pub(crate) tool_router: ToolRouter<Gateway>,
}

impl Gateway {
    /// A gateway for another session (an HTTP session or stateless request): the same
    /// core and tools, its own resource subscriptions.
    pub fn for_session(&self) -> Gateway {
        Gateway {
            inner: self.inner.clone(),
            subscriptions: Subscriptions::new(self.inner.hints.clone()),
            tool_router: self.tool_router.clone(),
        }
    }

    pub(crate) fn core(&self) -> &Core {
        &self.inner.core
    }

    pub(crate) fn platform(&self) -> &PlatformClient {
        &self.inner.platform
    }

    /// How many resource subscriptions are active (tests).
    pub fn subscription_count(&self) -> usize {
        self.subscriptions.len()
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
