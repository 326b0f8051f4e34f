//! Who the gateway's callers are (docs/remote-agents.md): the local agent's name over
//! stdio, and the optional OAuth 2.1 issuer whose access tokens the HTTP gateway accepts
//! beside API keys.

use crate::source::Source;

/// The identity variables and what each means.
pub const IDENTITY_VARIABLES: &[(&str, &str)] = &[
    (
        "MCP_AGENT",
        "the agent name stdio sessions act as, recorded as actor and sent_by (default stdio)",
    ),
    (
        "MCP_OAUTH_ISSUER",
        "OAuth 2.1 authorization server whose JWT access tokens are accepted (unset: API keys only)",
    ),
    (
        "MCP_OAUTH_AUDIENCE",
        "this server's resource URI (e.g. https://warden.example.com/mcp): required `aud` of tokens and `resource` of the protected resource metadata",
    ),
    (
        "MCP_OAUTH_JWKS_URL",
        "the issuer's JWKS (unset: `jwks_uri` from the issuer's metadata)",
    ),
];

/// OAuth resource-server settings (all present, or OAuth is off).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OAuth {
    pub issuer: String,
    pub audience: String,
    pub jwks_url: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// MCP_AGENT: the local (stdio) caller's name.
    pub agent: String,
    pub oauth: Option<OAuth>,
}

impl Default for Identity {
    fn default() -> Self {
        Identity {
            agent: "stdio".into(),
            oauth: None,
        }
    }
}

fn is_url(s: &str) -> bool {
    s.starts_with("https://") || s.starts_with("http://")
}

impl Identity {
    pub(crate) fn read(src: &mut Source<'_>) -> Identity {
        let agent = src.trimmed("MCP_AGENT").filter(|a| !a.is_empty());
        let agent = match agent {
            Some(a) if a.len() > 64 || a.chars().any(char::is_control) => {
                src.problem("MCP_AGENT", "must be at most 64 printable characters");
                "stdio".to_string()
            }
            Some(a) => a,
            None => "stdio".to_string(),
        };
        let issuer = src.trimmed("MCP_OAUTH_ISSUER").filter(|s| !s.is_empty());
        let audience = src.trimmed("MCP_OAUTH_AUDIENCE").filter(|s| !s.is_empty());
        let jwks_url = src.trimmed("MCP_OAUTH_JWKS_URL").filter(|s| !s.is_empty());
        let oauth = match (issuer, audience) {
            (None, None) => {
                if jwks_url.is_some() {
                    src.problem(
                        "MCP_OAUTH_JWKS_URL",
                        "needs MCP_OAUTH_ISSUER and MCP_OAUTH_AUDIENCE",
                    );
                }
                None
            }
            (Some(_), None) => {
                src.problem(
                    "MCP_OAUTH_AUDIENCE",
                    "must be set with MCP_OAUTH_ISSUER: this server's resource URI",
                );
                None
            }
            (None, Some(_)) => {
                src.problem("MCP_OAUTH_ISSUER", "must be set with MCP_OAUTH_AUDIENCE");
                None
            }
            (Some(issuer), Some(audience)) => {
                for (var, v) in [
                    ("MCP_OAUTH_ISSUER", Some(&issuer)),
                    ("MCP_OAUTH_AUDIENCE", Some(&audience)),
                    ("MCP_OAUTH_JWKS_URL", jwks_url.as_ref()),
                ] {
                    if let Some(v) = v
                        && !is_url(v)
                    {
                        src.problem(var, format!("`{v}` is not an http(s) URL"));
                    }
                }
                Some(OAuth {
                    issuer,
                    audience,
                    jwks_url,
                })
            }
        };
        Identity { agent, oauth }
    }
}
