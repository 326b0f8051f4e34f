//! The authenticator seam of the HTTP transport: `Authorization` in, a [`Caller`] or a
//! refusal out. The transport answers a refusal itself (nothing reaches rmcp); a caller is
//! put into the request's extensions, where [`Caller::of_request`] finds it.

use futures::future::BoxFuture;
use serde_json::Value;
use warden_settings::{Identity, McpHttpAuth};
use warden_store::PgPool;

use crate::auth::{AuthFailure, Authenticator};
use crate::caller::Caller;

/// Turns a request's `Authorization` header into the [`Caller`] it acts as.
pub trait Authenticate: Send + Sync + 'static {
    /// `authorization` is the header's value, `None` when the request has none.
    fn authenticate(
        &self,
        authorization: Option<&str>,
    ) -> BoxFuture<'_, Result<Caller, AuthFailure>>;

    /// RFC 9728 Protected Resource Metadata, served at
    /// `/.well-known/oauth-protected-resource` (`None`: not served, 404).
    fn protected_resource_metadata(&self) -> Option<Value> {
        None
    }
}

/// `MCP_HTTP_AUTH=none`: every request acts as the local agent `http` with every scope
/// (loopback addresses only; the settings refuse it elsewhere).
pub struct NoAuth;

/// The agent a request acts as when authentication is off.
pub const NO_AUTH_AGENT: &str = "http";

impl Authenticate for NoAuth {
    fn authenticate(&self, _: Option<&str>) -> BoxFuture<'_, Result<Caller, AuthFailure>> {
        Box::pin(async { Ok(Caller::local(NO_AUTH_AGENT)) })
    }
}

impl Authenticate for Authenticator {
    fn authenticate(
        &self,
        authorization: Option<&str>,
    ) -> BoxFuture<'_, Result<Caller, AuthFailure>> {
        let authorization = authorization.map(str::to_owned);
        Box::pin(async move { Authenticator::authenticate(self, authorization.as_deref()).await })
    }

    fn protected_resource_metadata(&self) -> Option<Value> {
        Authenticator::protected_resource_metadata(self)
    }
}

/// The authenticator `mode` asks for: none, API keys (and OAuth access tokens beside them
/// when an issuer is configured), or OAuth access tokens only.
pub fn for_mode(mode: McpHttpAuth, pg: PgPool, identity: &Identity) -> Box<dyn Authenticate> {
    match mode {
        McpHttpAuth::None => Box::new(NoAuth),
        McpHttpAuth::ApiKey => Box::new(Authenticator::new(pg, identity)),
        McpHttpAuth::OAuth => Box::new(Authenticator::new(pg, identity).without_api_keys()),
    }
}
