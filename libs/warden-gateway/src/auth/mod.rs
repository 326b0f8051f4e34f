//! Who is calling over HTTP: the `Authorization: Bearer ...` of a request turned into a
//! [`Caller`], or into the HTTP refusal to answer (status, `WWW-Authenticate`, body).
//! Transport-independent: the HTTP transport calls [`Authenticator::authenticate`] with the
//! raw header value and puts the caller into the request's extensions.
//!
//! - API keys (`wdn_...`, `warden-admin agents create`): checked against the stored salted
//!   hash. Answers are cached for at most [`KEY_CACHE_TTL`], so a revoked or suspended
//!   agent is refused within a second on every replica, with no invalidation messages.
//! - OAuth 2.1 access tokens (when `MCP_OAUTH_ISSUER` and `MCP_OAUTH_AUDIENCE` are set):
//!   JWTs verified against the issuer's JWKS ([`oauth`]), scopes from the `scope` claim.
//!   Such callers act as `oauth:<client_id | azp | sub>`.

pub mod jwt;
pub mod oauth;

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use warden_core::agents::{self, KeyCheck};
use warden_settings::Identity;
use warden_store::PgPool;

use crate::caller::{Caller, Scope};
use oauth::{OAuthError, OAuthVerifier};

/// How long an API key's answer (valid, unknown, suspended, revoked) is reused.
pub const KEY_CACHE_TTL: Duration = Duration::from_millis(500);
/// Entries kept before expired ones are swept.
const KEY_CACHE_MAX: usize = 10_000;

/// A refused request: what the HTTP transport answers (and nothing is executed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthFailure {
    /// 401 (no or bad credentials) or 403 (valid, but no scope Warden serves).
    pub status: u16,
    /// The `WWW-Authenticate` header value.
    pub www_authenticate: String,
    /// A short plain-text body.
    pub body: String,
}

pub struct Authenticator {
    pg: PgPool,
    oauth: Option<OAuthVerifier>,
    /// `MCP_HTTP_AUTH=api_key` (true) or `oauth` (false: access tokens only).
    api_keys: bool,
    /// Answers by SHA-256 of the presented key (the key itself is not kept).
    keys: Mutex<HashMap<[u8; 32], (Instant, KeyCheck)>>,
}

impl Authenticator {
    pub fn new(pg: PgPool, identity: &Identity) -> Authenticator {
        Authenticator {
            pg,
            oauth: identity.oauth.clone().map(OAuthVerifier::new),
            api_keys: true,
            keys: Mutex::new(HashMap::new()),
        }
    }

    /// Refuse API keys: OAuth access tokens only (`MCP_HTTP_AUTH=oauth`).
    pub fn without_api_keys(mut self) -> Authenticator {
        self.api_keys = false;
        self
    }

    /// The caller behind an `Authorization` header value, or the refusal to answer.
    pub async fn authenticate(&self, authorization: Option<&str>) -> Result<Caller, AuthFailure> {
        let Some(value) = authorization.map(str::trim).filter(|v| !v.is_empty()) else {
            return Err(self.unauthorized(None, "authentication required"));
        };
        let token = match value.split_once(' ') {
            Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => token.trim(),
            _ => {
                return Err(self.unauthorized(
                    Some(("invalid_request", "use the Bearer scheme")),
                    "use Authorization: Bearer <key or token>",
                ));
            }
        };
        if token.starts_with(agents::KEY_PREFIX) {
            if !self.api_keys {
                return Err(self.invalid_token("API keys are off (MCP_HTTP_AUTH=oauth)"));
            }
            return self.api_key(token).await;
        }
        match &self.oauth {
            Some(verifier) => self.access_token(verifier, token).await,
            None => Err(self.invalid_token("unknown API key")),
        }
    }

    async fn api_key(&self, key: &str) -> Result<Caller, AuthFailure> {
        let digest: [u8; 32] = ring::digest::digest(&ring::digest::SHA256, key.as_bytes())
            .as_ref()
            .try_into()
            .unwrap_or([0; 32]);
        let cached = {
            let cache = self.keys.lock().unwrap_or_else(|p| p.into_inner());
            cache
                .get(&digest)
                .filter(|(at, _)| at.elapsed() < KEY_CACHE_TTL)
                .map(|(_, check)| check.clone())
        };
        let check = match cached {
            Some(check) => check,
            None => {
                let check = agents::verify_key(&self.pg, key).await.map_err(|e| {
                    tracing::warn!(error = %e, "API key check failed");
                    AuthFailure {
                        status: 503,
                        www_authenticate: String::new(),
                        body: "authentication is unavailable; try again shortly".into(),
                    }
                })?;
                let mut cache = self.keys.lock().unwrap_or_else(|p| p.into_inner());
                if cache.len() >= KEY_CACHE_MAX {
                    cache.retain(|_, (at, _)| at.elapsed() < KEY_CACHE_TTL);
                }
                cache.insert(digest, (Instant::now(), check.clone()));
                check
            }
        };
        match check {
            KeyCheck::Valid {
                agent,
                scopes,
                senders,
            } => Ok(Caller {
                agent,
                scopes: scopes.iter().filter_map(|s| Scope::parse(s)).collect(),
                senders,
            }),
            KeyCheck::Unknown => Err(self.invalid_token("unknown API key")),
            KeyCheck::Inactive { agent, status } => {
                tracing::info!(%agent, status = status.as_str(), "refused a key of an inactive agent");
                Err(self.invalid_token(&format!("agent {agent} is {}", status.as_str())))
            }
        }
    }

    async fn access_token(
        &self,
        verifier: &OAuthVerifier,
        token: &str,
    ) -> Result<Caller, AuthFailure> {
        match verifier.verify(token).await {
            Ok(claims) => {
                let scopes: BTreeSet<Scope> = claims
                    .scopes
                    .iter()
                    .filter_map(|s| Scope::parse(s))
                    .collect();
                if scopes.is_empty() {
                    return Err(self.insufficient_scope(Scope::Read));
                }
                Ok(Caller {
                    agent: format!("oauth:{}", claims.subject),
                    scopes,
                    // OAuth callers have no guardrails (docs/remote-agents.md).
                    senders: None,
                })
            }
            Err(OAuthError::Token(e)) => Err(self.invalid_token(&e.to_string())),
            Err(e @ OAuthError::Keys(_)) => Err(AuthFailure {
                status: 503,
                www_authenticate: String::new(),
                body: format!("{e}; try again shortly"),
            }),
        }
    }

    /// The URL of this server's Protected Resource Metadata, when the resource URI is
    /// known (`MCP_OAUTH_AUDIENCE`): its origin + `/.well-known/oauth-protected-resource`.
    pub fn resource_metadata_url(&self) -> Option<String> {
        let resource = &self.oauth.as_ref()?.config().audience;
        let start = resource.find("://")? + 3;
        let origin = match resource[start..].find('/') {
            Some(i) => &resource[..start + i],
            None => resource.as_str(),
        };
        Some(format!("{origin}/.well-known/oauth-protected-resource"))
    }

    /// RFC 9728 Protected Resource Metadata (`/.well-known/oauth-protected-resource`);
    /// `None` when OAuth is not configured.
    pub fn protected_resource_metadata(&self) -> Option<Value> {
        let config = self.oauth.as_ref()?.config();
        Some(json!({
            "resource": config.audience,
            "authorization_servers": [config.issuer],
            "scopes_supported": Scope::ALL.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
            "bearer_methods_supported": ["header"],
            "resource_name": "Warden",
        }))
    }

    fn challenge(&self, error: Option<(&str, &str)>, scope: &str) -> String {
        let mut parts = Vec::new();
        if let Some(url) = self.resource_metadata_url() {
            parts.push(format!("resource_metadata=\"{url}\""));
        } else {
            parts.push("realm=\"warden\"".to_string());
        }
        parts.push(format!("scope=\"{scope}\""));
        if let Some((code, description)) = error {
            parts.push(format!("error=\"{code}\""));
            parts.push(format!("error_description=\"{}\"", quoted(description)));
        }
        format!("Bearer {}", parts.join(", "))
    }

    fn unauthorized(&self, error: Option<(&str, &str)>, body: &str) -> AuthFailure {
        let all: Vec<&str> = Scope::ALL.iter().map(|s| s.as_str()).collect();
        AuthFailure {
            status: 401,
            www_authenticate: self.challenge(error, &all.join(" ")),
            body: body.to_string(),
        }
    }

    fn invalid_token(&self, why: &str) -> AuthFailure {
        self.unauthorized(
            Some(("invalid_token", why)),
            &format!("invalid credentials: {why}"),
        )
    }

    /// 403 `insufficient_scope`: the credentials are good but lack `needed`.
    pub fn insufficient_scope(&self, needed: Scope) -> AuthFailure {
        AuthFailure {
            status: 403,
            www_authenticate: self.challenge(
                Some((
                    "insufficient_scope",
                    &format!("the `{needed}` scope is needed"),
                )),
                needed.as_str(),
            ),
            body: format!("insufficient scope: `{needed}` is needed"),
        }
    }
}

/// A header quoted-string's content: no quotes, backslashes or control characters.
fn quoted(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_control() && *c != '"' && *c != '\\')
        .take(200)
        .collect()
}
