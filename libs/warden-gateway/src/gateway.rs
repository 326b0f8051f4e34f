//! The gateway's state: what every tool handler reaches through `self`. Built in
//! [`crate::server`], which combines the tool routers.

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use warden_core::Core;
use warden_platform::PlatformClient;
use warden_stream::Hints;

use crate::caller::Caller;
use crate::subscriptions::Subscriptions;

pub(crate) struct Inner {
    pub core: Core,
    /// The default sender's client.
    pub platform: PlatformClient,
    /// Every other sender's client, by the stored key of its rows.
    pub other_platforms: std::collections::HashMap<String, PlatformClient>,
    /// Where conversation hints arrive (NATS), for each session's subscriptions.
    pub hints: Option<Hints>,
}

/// The caller of the request being served, the name its writes are recorded as, and the
/// core as that caller: its writes attributed to it, its reads by id kept to its senders
/// (`warden_core::reach`).
#[derive(Clone)]
pub(crate) struct Acting {
    pub caller: Caller,
    pub actor: &'static str,
    pub core: Core,
}

impl Acting {
    pub fn new(core: &Core, caller: Caller) -> Acting {
        let actor = warden_core::agents::intern(&caller.agent);
        let reach = core.reach_of_ids(caller.senders.as_deref());
        let core = core.as_actor(actor).within(reach);
        Acting {
            caller,
            actor,
            core,
        }
    }
}

tokio::task_local! {
    /// Set around each tool call ([`crate::server`]) so handlers attribute their writes
    /// to the calling agent without threading it through every signature.
    static ACTING: Acting;
}

/// The MCP server. Cheap to clone; one per session ([`Gateway::for_session`]).
#[derive(Clone)]
pub struct Gateway {
    pub(crate) inner: Arc<Inner>,
    /// Resource subscriptions of this gateway's session (live updates).
    pub(crate) subscriptions: Arc<Subscriptions>,
    /// Shared: a stateless HTTP request builds a gateway, and cloning 35 tool routes
    /// (schemas, descriptions) per request was most of a cheap call's cost.
    pub(crate) tool_router: Arc<ToolRouter<Gateway>>,
    /// Who a request without a transport-attached caller is (stdio: every scope).
    pub(crate) local: Acting,
}

impl Gateway {
    /// A gateway for another session (an HTTP session or stateless request): the same
    /// core and tools, its own resource subscriptions.
    pub fn for_session(&self) -> Gateway {
        Gateway {
            inner: self.inner.clone(),
            subscriptions: Subscriptions::new(self.inner.hints.clone()),
            tool_router: self.tool_router.clone(),
            local: self.local.clone(),
        }
    }

    /// The core as the current call's caller (see [`Acting`]); every tool reads and
    /// writes through it.
    pub(crate) fn core(&self) -> Core {
        ACTING
            .try_with(|a| a.core.clone())
            .unwrap_or_else(|_| self.local.core.clone())
    }

    /// The platform client of the sender stored as `key` (the default sender's for its key
    /// or one this deployment no longer has).
    pub(crate) fn platform_of(&self, key: &str) -> &PlatformClient {
        self.inner
            .other_platforms
            .get(key)
            .unwrap_or(&self.inner.platform)
    }

    /// Act as `caller` when a request carries no caller of its own (stdio, tests).
    pub fn acting_as(mut self, caller: Caller) -> Gateway {
        self.local = Acting::new(&self.inner.core, caller);
        self
    }

    /// The caller a request without a transport-attached one acts as.
    pub fn local_caller(&self) -> &Caller {
        &self.local.caller
    }

    /// Run `fut` as `acting` (its writes attributed to that agent).
    pub(crate) async fn scoped<F: std::future::Future>(acting: Acting, fut: F) -> F::Output {
        ACTING.scope(acting, fut).await
    }

    /// The caller of the current call (the local one outside a call).
    pub(crate) fn caller(&self) -> Caller {
        ACTING
            .try_with(|a| a.caller.clone())
            .unwrap_or_else(|_| self.local.caller.clone())
    }

    /// The name the current call's writes are recorded as (audit rows, `sent_by`).
    pub(crate) fn actor(&self) -> &'static str {
        ACTING.try_with(|a| a.actor).unwrap_or(self.local.actor)
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
