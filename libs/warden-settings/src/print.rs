//! `--print-config`: the effective settings as a config file (keys are the variable names
//! in lower case), secrets redacted.

use std::fmt::Write as _;

use crate::duration::format_duration;
use crate::{Dispatch, Settings};

/// What a secret's value prints as.
pub const REDACTED: &str = "<redacted>";

/// Secrets: passwords, tokens, secrets (`DB_PASSWORD`, `PLATFORM_ACCESS_TOKEN`,
/// `PLATFORM_APP_SECRET`, any `*_TOKEN` / `*_SECRET` / `*_PASSWORD`).
pub fn is_secret(variable: &str) -> bool {
    let v = variable.to_ascii_uppercase();
    ["_PASSWORD", "_TOKEN", "_SECRET"]
        .iter()
        .any(|suffix| v.ends_with(suffix))
        || matches!(v.as_str(), "PASSWORD" | "TOKEN" | "SECRET")
}

enum Value {
    Number(String),
    Text(String),
    Unset(&'static str),
}

fn text(v: impl Into<String>) -> Value {
    Value::Text(v.into())
}

fn number(v: impl ToString) -> Value {
    Value::Number(v.to_string())
}

fn duration(d: std::time::Duration) -> Value {
    Value::Text(format_duration(d))
}

impl Settings {
    /// Every variable of the tree with its effective value, in the documented order.
    fn entries(&self) -> Vec<(&'static str, Value)> {
        let p = &self.platform;
        let mut out = vec![
            ("SERVER_HTTP_PORT", number(self.http_port)),
            (
                "ADMIN_HTTP_PORT",
                self.admin_port.map_or(
                    Value::Unset("each binary's default: dispatcher 9090, scheduler 9091"),
                    number,
                ),
            ),
            ("SERVER_MCP_NAME", text(&self.mcp_name)),
            ("SERVER_MCP_VERSION", text(&self.mcp_version)),
            ("TIER", text(self.tier.as_str())),
            ("DB_HOST", text(&self.database.host)),
            ("DB_PORT", number(self.database.port)),
            ("DB_USER", text(&self.database.user)),
            ("DB_PASSWORD", text(&self.database.password)),
            ("DB_NAME", text(&self.database.name)),
            ("DB_SSLMODE", text(self.database.sslmode.as_str())),
            ("REDIS_ADDR", text(&self.redis.addr)),
            ("REDIS_PASSWORD", text(&self.redis.password)),
            ("REDIS_DB", number(self.redis.db)),
            ("NATS_URL", text(&self.nats_url)),
            ("DELIVERY_STREAM", text(&self.delivery_stream)),
            ("PLATFORM_API_URL", text(&p.api_url)),
            ("PLATFORM_API_VERSION", text(&p.api_version)),
            ("PLATFORM_ACCESS_TOKEN", text(&p.access_token)),
            ("PLATFORM_PHONE_NUMBER_ID", text(&p.phone_number_id)),
            ("PLATFORM_ACCOUNT_ID", text(&p.account_id)),
            (
                "PLATFORM_WEBHOOK_VERIFY_TOKEN",
                text(&p.webhook_verify_token),
            ),
            (
                "PLATFORM_APP_SECRET",
                p.app_secret
                    .as_ref()
                    .map_or(Value::Unset("webhook refuses to start without it"), text),
            ),
            (
                "POLICIES_PATH",
                text(self.policies_path.display().to_string()),
            ),
            (
                "PRICING_PATH",
                self.pricing_path
                    .as_ref()
                    .map_or(Value::Unset("the built-in per-message rate card"), |p| {
                        text(p.display().to_string())
                    }),
            ),
            (
                "SENDERS_PATH",
                self.senders_path.as_ref().map_or(
                    Value::Unset("one sender, `default`, from the PLATFORM_* variables"),
                    |p| text(p.display().to_string()),
                ),
            ),
            (
                "SCHEDULER_POLL_INTERVAL",
                duration(self.scheduler_poll_interval),
            ),
            (
                "MESSAGE_CONTENT_RETENTION",
                duration(self.message_content_retention),
            ),
            ("HUMAN_TAKEOVER_TTL", duration(self.human_takeover_ttl)),
            ("RATE_LIMIT_MPS", number(self.rate_limit_mps)),
            (
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                self.otlp_endpoint
                    .as_ref()
                    .map_or(Value::Unset("traces are off"), text),
            ),
            ("MEDIA_MAX_BYTES", number(self.media_max_bytes)),
        ];
        out.extend(dispatch_entries(&self.dispatch));
        out.extend(mcp_http_entries(&self.mcp_http));
        out.extend(identity_entries(&self.identity));
        out.extend(console_entries(&self.console));
        out
    }

    /// The effective settings as TOML a `--config` file accepts; secrets print as
    /// [`REDACTED`] (an empty one as `""`, which is not a secret), unset ones as comments.
    pub fn print_config(&self) -> String {
        let mut out = String::from(
            "# Effective settings: defaults, then the config file, then the environment.\n",
        );
        for (variable, value) in self.entries() {
            let key = variable.to_ascii_lowercase();
            let _ = match value {
                Value::Unset(why) => writeln!(out, "# {key} is not set ({why})"),
                Value::Text(v) if is_secret(variable) && !v.is_empty() => {
                    writeln!(out, "{key} = {}", quote(REDACTED))
                }
                Value::Number(v) => writeln!(out, "{key} = {v}"),
                Value::Text(v) => writeln!(out, "{key} = {}", quote(&v)),
            };
        }
        out
    }
}

fn identity_entries(i: &crate::Identity) -> Vec<(&'static str, Value)> {
    let oauth = i.oauth.as_ref();
    let unset = || Value::Unset("API keys only");
    vec![
        ("MCP_AGENT", text(&i.agent)),
        (
            "MCP_OAUTH_ISSUER",
            oauth.map_or_else(unset, |o| text(&o.issuer)),
        ),
        (
            "MCP_OAUTH_AUDIENCE",
            oauth.map_or_else(unset, |o| text(&o.audience)),
        ),
        (
            "MCP_OAUTH_JWKS_URL",
            oauth
                .and_then(|o| o.jwks_url.as_ref())
                .map_or(Value::Unset("from the issuer's metadata"), text),
        ),
    ]
}

fn console_entries(c: &crate::Console) -> Vec<(&'static str, Value)> {
    vec![
        ("CONSOLE_HTTP_ADDR", text(c.addr.to_string())),
        (
            "CONSOLE_SECURE_COOKIES",
            text(if c.secure_cookies { "true" } else { "false" }),
        ),
        ("CAMPAIGN_APPROVAL", text(c.campaign_approval.as_str())),
    ]
}

fn dispatch_entries(d: &Dispatch) -> Vec<(&'static str, Value)> {
    vec![
        ("DISPATCHER_REPLICAS", number(d.replicas)),
        ("DISPATCH_CONCURRENCY", number(d.concurrency)),
        ("PAIR_RATE_INTERVAL", duration(d.pair_interval)),
        ("DISPATCH_MAX_ATTEMPTS", number(d.max_attempts)),
        ("DISPATCH_LEASE", duration(d.lease)),
        ("DISPATCH_ACK_WAIT", duration(d.ack_wait)),
        ("DISPATCH_MAX_ACK_PENDING", number(d.max_ack_pending)),
        ("DISPATCH_BACKOFF_BASE", duration(d.backoff_base)),
        ("DISPATCH_BACKOFF_CAP", duration(d.backoff_cap)),
        ("DISPATCH_UNKNOWN_SETTLE", duration(d.unknown_settle)),
        ("DISPATCH_UNKNOWN_MAX_WAIT", duration(d.unknown_max_wait)),
        ("DISPATCH_SWEEP_INTERVAL", duration(d.sweep_interval)),
        ("DISPATCH_DRAIN_TIMEOUT", duration(d.drain_timeout)),
        ("PLATFORM_TIMEOUT", duration(d.platform_timeout)),
    ]
}

/// A TOML basic string.
fn mcp_http_entries(m: &crate::McpHttp) -> Vec<(&'static str, Value)> {
    vec![
        (
            "MCP_TRANSPORT",
            text(match m.transport {
                crate::McpTransport::Stdio => "stdio",
                crate::McpTransport::Http => "http",
            }),
        ),
        ("MCP_HTTP_ADDR", text(m.addr.to_string())),
        ("MCP_ALLOWED_ORIGINS", text(m.allowed_origins.join(","))),
        (
            "MCP_ALLOWED_HOSTS",
            text(if m.allowed_hosts.is_empty() {
                "*".to_string()
            } else {
                m.allowed_hosts.join(",")
            }),
        ),
        ("MCP_HTTP_AUTH", text(m.auth.as_str())),
    ]
}

fn quote(v: &str) -> String {
    let mut out = String::with_capacity(v.len() + 2);
    out.push('"');
    for c in v.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
