//! The MCP server: building the gateway with its combined tool router, and server info.

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
#[allow(deprecated)]
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, ErrorData as McpError, Implementation,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ResultType,
    ServerCapabilities, ServerConfig, SetLevelRequestParams, SubscribeRequestParams,
    SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{RoleServer, ServerHandler, tool_handler};
use warden_core::Core;
use warden_platform::PlatformError;
use warden_service::Dependencies;

use crate::caller::{Caller, Scope};
use crate::error::ToolError;
use crate::gateway::{Acting, Gateway, Inner};
use crate::http::session_subscriptions::{self, restored_session, session_of};
use crate::resources::{self, ResourceUri};
use crate::subscriptions::Subscriptions;

const INSTRUCTIONS: &str = "Warden checks, sends, schedules and monitors WhatsApp business messages while enforcing \
the platform's rules (24-hour care window, opt-outs, frequency caps, approved templates) and the business's policies. \
Customers are identified by phone number with country code, or by business-scoped user ID (BSUID, e.g. US.13491208655302741918) when the phone is hidden. Before messaging, call check_compliance (or \
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
        let platform = warden_service::platform::client(&deps.settings, None)
            .map_err(GatewayError::Platform)?;
        let other_platforms = warden_service::platform::other_senders(&deps.settings, None)
            .map_err(GatewayError::Platform)?;
        let hints = deps.stream.as_ref().map(|s| s.hints.clone());
        let subscriptions = Subscriptions::new(hints.clone());
        // stdio is local and unauthenticated: it acts as MCP_AGENT (default `stdio`).
        let caller = Caller::local(deps.settings.identity.agent.clone());
        let core = Core::new(deps, warden_core::agents::intern(&caller.agent));
        let local = Acting::new(&core, caller);
        Ok(Gateway {
            inner: Arc::new(Inner {
                core,
                platform,
                other_platforms,
                hints,
            }),
            subscriptions,
            tool_router: Arc::new(Self::all_tools()),
            local,
        })
    }

    /// Every tool, each module's router combined: what `tools/list` serves (filtered by the
    /// caller's scopes) and what the scope table is checked against.
    pub(crate) fn all_tools() -> ToolRouter<Gateway> {
        Self::send_tools()
            + Self::rich_tools()
            + Self::contacts_tools()
            + Self::media_tools()
            + Self::conversation_tools()
            + Self::customer_tools()
            + Self::delivery_tools()
            + Self::template_tools()
            + Self::campaign_tools()
            + Self::account_tools()
            + Self::sender_tools()
            + Self::holder_tools()
            + Self::preview_tools()
            + Self::flow_tools()
    }

    /// The caller of this request: the one the HTTP transport attached, else the local one.
    fn acting(&self, context: &RequestContext<RoleServer>) -> Acting {
        match Caller::of_request(context) {
            Some(caller) => Acting::new(&self.inner.core, caller),
            None => self.local.clone(),
        }
    }
}

impl Gateway {
    /// Over stdio the gateway acts as `MCP_AGENT` with every scope; when an agent of that
    /// name exists and is limited to some senders, so is the stdio caller.
    pub async fn with_stored_agent_senders(
        self,
    ) -> Result<Gateway, warden_core::agents::AgentError> {
        let name = self.local.caller.agent.clone();
        let stored = warden_core::agents::find(self.core().pg(), &name).await?;
        let Some(senders) = stored.and_then(|a| a.guardrails.senders) else {
            return Ok(self);
        };
        tracing::info!(agent = %name, senders = %senders.join(","), "stdio agent limited to its senders");
        let caller = self.local.caller.clone().with_senders(Some(senders));
        Ok(self.acting_as(caller))
    }
}

/// A JSON-RPC error for a resource request outside the caller's scopes (resources are not
/// tools, so there is no tool envelope to answer in).
fn resource_forbidden(agent: &str, scope: Scope) -> McpError {
    McpError::invalid_request(
        format!("FORBIDDEN: agent `{agent}` needs the `{scope}` scope for resources"),
        Some(serde_json::json!({"code": "FORBIDDEN", "scope": scope.as_str()})),
    )
}

fn need_read(acting: &Acting) -> Result<(), McpError> {
    if acting.caller.may(Scope::Read) {
        Ok(())
    } else {
        Err(resource_forbidden(&acting.caller.agent, Scope::Read))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Gateway {
    #[allow(deprecated)] // logging/setLevel stays for 2025-11-25 clients
    fn get_info(&self) -> ServerConfig {
        let settings = self.inner.core.settings();
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_logging()
                // rmcp answers prompts/list (empty): say so, as 2026-07-28 discovery requires.
                .enable_prompts()
                .build(),
        )
        .with_server_info(Implementation::new(
            settings.mcp_name.clone(),
            settings.mcp_version.clone(),
        ))
        .with_instructions(INSTRUCTIONS)
    }

    /// Only the tools the caller's scopes allow.
    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let caller = self.acting(&context).caller;
        let everything = Scope::ALL.iter().all(|s| caller.may(*s));
        let tools = self
            .tool_router
            .list_all()
            .into_iter()
            .filter(|t| caller.may(crate::tools::scopes::required(&t.name)))
            .collect();
        let supports_cache_hints = context
            .protocol_version()
            .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
        Ok(ListToolsResult {
            result_type: Some(ResultType::COMPLETE),
            tools,
            meta: None,
            next_cursor: None,
            ttl_ms: supports_cache_hints.then_some(0),
            // A list filtered by the caller's scopes is that caller's own.
            cache_scope: supports_cache_hints.then_some(if everything {
                CacheScope::Public
            } else {
                CacheScope::Private
            }),
        })
    }

    /// A tool outside the caller's scopes answers FORBIDDEN; any other runs as the caller.
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let acting = self.acting(&context);
        let scope = crate::tools::scopes::required(&request.name);
        if self.tool_router.get(&request.name).is_some() && !acting.caller.may(scope) {
            tracing::info!(agent = %acting.caller.agent, tool = %request.name, %scope, "tool call outside the caller's scopes");
            return Ok(
                ToolError::forbidden(&request.name, &acting.caller.agent, scope)
                    .into_result()
                    .into(),
            );
        }
        // An agent limited to some senders: checked here, once, for every tool.
        if let Some(refused) = self.sender_refusal(&acting.caller, &request) {
            return Ok(refused.into_result().into());
        }
        let call = ToolCallContext::new(self, request, context);
        Gateway::scoped(acting, self.tool_router.call(call)).await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        need_read(&self.acting(&context))?;
        Ok(resources::list())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let acting = self.acting(&context);
        need_read(&acting)?;
        let target = ResourceUri::parse(&request.uri)?;
        Ok(resources::read(&acting.core, &request.uri, &target)
            .await?
            .into())
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        need_read(&self.acting(&context))?;
        Ok(resources::templates())
    }

    /// `logging/setLevel` (2025-11-25 and older): accepted; the gateway sends the client no
    /// log messages at any level (its logs go to stderr / the log pipeline).
    #[allow(deprecated)]
    async fn set_level(
        &self,
        _request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        Ok(())
    }

    /// Protocol 2025-11-25 and older: updates go to this session until unsubscribed.
    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let acting = self.acting(&context);
        need_read(&acting)?;
        let target = ResourceUri::parse(&request.uri)?;
        self.subscriptions
            .subscribe(
                &request.uri,
                target,
                context.peer.clone(),
                acting.core.reach().clone(),
            )
            .await
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        // Over HTTP the session may move to another replica: it subscribes again there.
        if let (Some(redis), Some(session)) = (self.inner.core.redis(), session_of(&context))
            && let Err(e) = session_subscriptions::remember(redis, &session, &request.uri).await
        {
            tracing::warn!(error = %e, "could not record a session's subscription in Redis; it stays on this replica");
        }
        Ok(())
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let target = ResourceUri::parse(&request.uri)?;
        self.subscriptions.unsubscribe(&target);
        if let (Some(redis), Some(session)) = (self.inner.core.redis(), session_of(&context))
            && let Err(e) = session_subscriptions::forget(redis, &session, &request.uri).await
        {
            tracing::warn!(error = %e, "could not drop a session's subscription from Redis");
        }
        Ok(())
    }

    /// A legacy HTTP session restored on this replica: subscribe it again to what it had.
    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let (Some(redis), Some(session)) = (self.inner.core.redis(), restored_session(&context))
        else {
            return;
        };
        let uris = match session_subscriptions::recall(redis, &session).await {
            Ok(uris) => uris,
            Err(e) => {
                tracing::warn!(error = %e, "could not read a restored session's subscriptions");
                return;
            }
        };
        // The restored session's caller, as the transport authenticated this request.
        let caller = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Caller>())
            .cloned();
        let reach = match caller {
            Some(caller) => Acting::new(&self.inner.core, caller).core.reach().clone(),
            None => self.local.core.reach().clone(),
        };
        for uri in uris {
            let Ok(target) = ResourceUri::parse(&uri) else {
                continue;
            };
            if let Err(e) = self
                .subscriptions
                .subscribe(&uri, target, context.peer.clone(), reach.clone())
                .await
            {
                tracing::warn!(error = %e, "could not restore a session's subscription");
            }
        }
    }

    /// Protocol 2026-07-28 (`subscriptions/listen`): the resource URIs this server serves.
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let mut accepted = requested.supported_by(&self.get_info().capabilities);
        accepted.resource_subscriptions = accepted.resource_subscriptions.map(|uris| {
            uris.into_iter()
                .filter(|u| ResourceUri::parse(u).is_ok())
                .collect()
        });
        Some(accepted)
    }

    /// One `subscriptions/listen` request: its resource updates until it is cancelled.
    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let acting = self.acting(context.request_context());
        need_read(&acting)?;
        let uris: Vec<(String, ResourceUri)> = context
            .accepted()
            .resource_subscriptions
            .iter()
            .flatten()
            .filter_map(|u| ResourceUri::parse(u).ok().map(|t| (u.clone(), t)))
            .collect();
        if uris.is_empty() {
            context.cancelled().await;
            return Ok(());
        }
        let ids = self
            .subscriptions
            .listen(uris, context.sink().clone(), acting.core.reach().clone())
            .await
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        context.cancelled().await;
        self.subscriptions.end(&ids);
        Ok(())
    }
}
