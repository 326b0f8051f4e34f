//! The MCP gateway's HTTP transport (docs/remote-agents.md): where it listens, which
//! browser origins and host names it accepts, and how callers authenticate.

use std::net::SocketAddr;

use crate::source::Source;

/// The transport's variables and what each means.
pub const MCP_HTTP_VARIABLES: &[(&str, &str)] = &[
    (
        "MCP_TRANSPORT",
        "`stdio` (default) or `http` (Streamable HTTP at /mcp; same as `mcp-gateway --http`)",
    ),
    (
        "MCP_HTTP_ADDR",
        "address the HTTP transport listens on (default 127.0.0.1:8765)",
    ),
    (
        "MCP_ALLOWED_ORIGINS",
        "comma-separated browser origins allowed to call /mcp, e.g. `https://app.example.com,http://localhost:*`; a request with any other Origin is refused with 403 (default: loopback origins only)",
    ),
    (
        "MCP_ALLOWED_HOSTS",
        "comma-separated Host header values accepted (names or host:port); `*` accepts any (default: localhost, 127.0.0.1, ::1)",
    ),
    (
        "MCP_HTTP_AUTH",
        "`api_key` (default), `oauth`, or `none` (loopback addresses only: no credentials, every caller is agent `http`)",
    ),
];

/// The default `MCP_ALLOWED_ORIGINS`: pages served from this machine only.
pub const DEFAULT_ALLOWED_ORIGINS: &[&str] =
    &["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"];

/// The default `MCP_ALLOWED_HOSTS`.
pub const DEFAULT_ALLOWED_HOSTS: &[&str] = &["localhost", "127.0.0.1", "::1"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum McpTransport {
    Stdio,
    Http,
}

/// How HTTP callers prove who they are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum McpHttpAuth {
    /// `Authorization: Bearer <api key>` (`warden-admin agents`).
    ApiKey,
    /// `Authorization: Bearer <JWT>` from `MCP_OAUTH_ISSUER`.
    OAuth,
    /// No credentials (loopback only): local development and the conformance suite.
    None,
}

impl McpHttpAuth {
    pub fn as_str(self) -> &'static str {
        match self {
            McpHttpAuth::ApiKey => "api_key",
            McpHttpAuth::OAuth => "oauth",
            McpHttpAuth::None => "none",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpHttp {
    pub transport: McpTransport,
    pub addr: SocketAddr,
    pub allowed_origins: Vec<String>,
    /// Empty: any Host (`MCP_ALLOWED_HOSTS=*`).
    pub allowed_hosts: Vec<String>,
    pub auth: McpHttpAuth,
}

impl Default for McpHttp {
    fn default() -> Self {
        McpHttp {
            transport: McpTransport::Stdio,
            addr: SocketAddr::from(([127, 0, 0, 1], 8765)),
            allowed_origins: DEFAULT_ALLOWED_ORIGINS
                .iter()
                .map(|s| s.to_string())
                .collect(),
            allowed_hosts: DEFAULT_ALLOWED_HOSTS
                .iter()
                .map(|s| s.to_string())
                .collect(),
            auth: McpHttpAuth::ApiKey,
        }
    }
}

fn list(raw: &str) -> Vec<String> {
    raw.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

impl McpHttp {
    pub(crate) fn read(src: &mut Source<'_>) -> McpHttp {
        let d = McpHttp::default();
        let transport = match src.trimmed("MCP_TRANSPORT").as_deref() {
            None | Some("stdio") => McpTransport::Stdio,
            Some("http") => McpTransport::Http,
            Some(other) => {
                src.problem(
                    "MCP_TRANSPORT",
                    format!("`{other}` is not a transport; use `stdio` or `http`"),
                );
                d.transport
            }
        };
        let addr = match src.trimmed("MCP_HTTP_ADDR") {
            None => d.addr,
            Some(raw) => raw.parse::<SocketAddr>().unwrap_or_else(|_| {
                src.problem(
                    "MCP_HTTP_ADDR",
                    format!("`{raw}` is not an address; use ip:port, e.g. 127.0.0.1:8765"),
                );
                d.addr
            }),
        };
        let auth = match src.trimmed("MCP_HTTP_AUTH").as_deref() {
            None | Some("api_key") => McpHttpAuth::ApiKey,
            Some("oauth") => McpHttpAuth::OAuth,
            Some("none") => McpHttpAuth::None,
            Some(other) => {
                src.problem(
                    "MCP_HTTP_AUTH",
                    format!("`{other}` is not supported; use `api_key`, `oauth` or `none`"),
                );
                d.auth
            }
        };
        if auth == McpHttpAuth::None && !addr.ip().is_loopback() {
            src.problem(
                "MCP_HTTP_AUTH",
                format!(
                    "`none` is refused on {addr}: without authentication the gateway listens only on a loopback address (set MCP_HTTP_ADDR=127.0.0.1:PORT)"
                ),
            );
        }
        let allowed_origins = match src.get("MCP_ALLOWED_ORIGINS") {
            None => d.allowed_origins,
            Some(raw) => {
                let origins = list(&raw);
                for o in &origins {
                    if o != "null" && !(o.starts_with("http://") || o.starts_with("https://")) {
                        src.problem(
                            "MCP_ALLOWED_ORIGINS",
                            format!("`{o}` must start with http:// or https:// (or be `null`)"),
                        );
                    }
                }
                origins
            }
        };
        let allowed_hosts = match src.get("MCP_ALLOWED_HOSTS") {
            None => d.allowed_hosts,
            Some(raw) if raw.trim() == "*" => Vec::new(),
            Some(raw) => {
                let hosts = list(&raw);
                if hosts.is_empty() {
                    src.problem(
                        "MCP_ALLOWED_HOSTS",
                        "must name at least one host (or `*` for any)",
                    );
                }
                hosts
            }
        };
        McpHttp {
            transport,
            addr,
            allowed_origins,
            allowed_hosts,
            auth,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::Settings;

    fn load(pairs: &[(&str, &str)]) -> Result<Settings, crate::SettingsError> {
        let env: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::from_sources(None, &env)
    }

    #[test]
    fn defaults_are_stdio_loopback_and_api_keys() {
        let s = load(&[]).unwrap();
        assert_eq!(s.mcp_http, McpHttp::default());
        assert_eq!(s.mcp_http.addr.to_string(), "127.0.0.1:8765");
        assert_eq!(s.mcp_http.auth, McpHttpAuth::ApiKey);
    }

    #[test]
    fn overrides_are_read() {
        let s = load(&[
            ("MCP_TRANSPORT", "http"),
            ("MCP_HTTP_ADDR", "0.0.0.0:9000"),
            (
                "MCP_ALLOWED_ORIGINS",
                "https://a.example, http://localhost:*",
            ),
            ("MCP_ALLOWED_HOSTS", "*"),
            ("MCP_HTTP_AUTH", "oauth"),
            ("MCP_OAUTH_ISSUER", "https://issuer.example"),
            ("MCP_OAUTH_AUDIENCE", "https://warden.example/mcp"),
        ])
        .unwrap();
        assert_eq!(s.mcp_http.transport, McpTransport::Http);
        assert_eq!(s.mcp_http.addr.port(), 9000);
        assert_eq!(
            s.mcp_http.allowed_origins,
            vec!["https://a.example", "http://localhost:*"]
        );
        assert!(s.mcp_http.allowed_hosts.is_empty());
        assert_eq!(s.mcp_http.auth, McpHttpAuth::OAuth);
    }

    #[test]
    fn oauth_needs_an_issuer() {
        let err = load(&[("MCP_HTTP_AUTH", "oauth")]).unwrap_err().to_string();
        assert!(err.contains("MCP_HTTP_AUTH"), "{err}");
        assert!(err.contains("MCP_OAUTH_ISSUER"), "{err}");
    }

    #[test]
    fn no_auth_is_refused_off_loopback() {
        let e = load(&[("MCP_HTTP_AUTH", "none"), ("MCP_HTTP_ADDR", "0.0.0.0:8765")])
            .err()
            .unwrap();
        assert!(e.to_string().contains("MCP_HTTP_AUTH"), "{e}");
        let s = load(&[("MCP_HTTP_AUTH", "none"), ("MCP_HTTP_ADDR", "[::1]:8765")]).unwrap();
        assert_eq!(s.mcp_http.auth, McpHttpAuth::None);
    }

    #[test]
    fn bad_values_name_their_variable() {
        let e = load(&[
            ("MCP_TRANSPORT", "ws"),
            ("MCP_HTTP_ADDR", "localhost"),
            ("MCP_HTTP_AUTH", "basic"),
            ("MCP_ALLOWED_ORIGINS", "example.com"),
        ])
        .err()
        .unwrap()
        .to_string();
        for v in [
            "MCP_TRANSPORT",
            "MCP_HTTP_ADDR",
            "MCP_HTTP_AUTH",
            "MCP_ALLOWED_ORIGINS",
        ] {
            assert!(e.contains(v), "{v} missing from {e}");
        }
    }
}
