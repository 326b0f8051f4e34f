//! The authenticator seam of the HTTP transport: `Authorization` in, a [`Caller`] or a
//! refusal out. The transport answers a refusal itself (nothing reaches rmcp); a caller is
//! put into the request's extensions, where [`Caller::of_request`] finds it.

use futures::future::BoxFuture;
use warden_settings::McpHttpAuth;

use crate::caller::Caller;

/// Why a request was refused before anything ran (an HTTP answer, not a JSON-RPC one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthFailure {
    /// 401 (no or bad credentials) or 403 (insufficient scope).
    pub status: u16,
    /// The `WWW-Authenticate` header of the answer, when there is one.
    pub www_authenticate: Option<String>,
    /// The body (plain text); never echoes the credential.
    pub body: String,
}

impl AuthFailure {
    /// 401 with `WWW-Authenticate: Bearer`.
    pub fn unauthorized(body: impl Into<String>) -> AuthFailure {
        AuthFailure {
            status: 401,
            www_authenticate: Some("Bearer".into()),
            body: body.into(),
        }
    }
}

/// Turns a request's `Authorization` header into the [`Caller`] it acts as.
pub trait Authenticate: Send + Sync + 'static {
    /// `authorization` is the header's value, `None` when the request has none.
    fn authenticate(
        &self,
        authorization: Option<&str>,
    ) -> BoxFuture<'_, Result<Caller, AuthFailure>>;
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

/// An authentication mode this build cannot check yet: every request is refused with 401,
/// so turning authentication on never lets anyone in by accident.
pub struct Unavailable {
    pub mode: McpHttpAuth,
}

impl Authenticate for Unavailable {
    fn authenticate(&self, _: Option<&str>) -> BoxFuture<'_, Result<Caller, AuthFailure>> {
        let body = format!(
            "authentication `{}` is not available in this build; every request is refused",
            self.mode.as_str()
        );
        Box::pin(async move { Err(AuthFailure::unauthorized(body)) })
    }
}

/// The authenticator for `mode` that this build has, or `None` when it has none (the
/// caller then starts with [`Unavailable`] and says so in its start-up log).
pub fn for_mode(mode: McpHttpAuth) -> Option<Box<dyn Authenticate>> {
    match mode {
        McpHttpAuth::None => Some(Box::new(NoAuth)),
        McpHttpAuth::ApiKey | McpHttpAuth::OAuth => None,
    }
}
