//! Warden's settings: one typed tree loaded once per process.
//!
//! Sources, later wins: built-in defaults (docs/configuration.md), an optional TOML config file
//! (keys are the environment variable names in lower case, e.g. `db_host = "..."`), then
//! the environment. Every bad value is one line naming the variable, all of them reported
//! by one load ([`SettingsError`]); the binaries turn it into exit code 2.
//! [`Settings::print_config`] shows the effective values with secrets redacted
//! (`--print-config` on every binary). Nothing else in the workspace reads the environment.
//! The senders (the phone numbers this deployment speaks for) are [`Settings::senders`]:
//! the `SENDERS_PATH` file's, checked at load, else one made of the `PLATFORM_*` variables.

mod console;
mod dispatch;
mod duration;
mod error;
mod identity;
mod mcp_http;
mod print;
mod secret;
pub mod senders;
mod source;

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use console::{CONSOLE_VARIABLES, CampaignApproval, Console};
pub use dispatch::{DISPATCH_VARIABLES, Dispatch};
pub use duration::{format_duration, parse_duration};
pub use error::{DurationError, Problem, Problems, SettingsError};
pub use identity::{IDENTITY_VARIABLES, Identity, OAuth};
pub use mcp_http::{
    DEFAULT_ALLOWED_HOSTS, DEFAULT_ALLOWED_ORIGINS, MCP_HTTP_VARIABLES, McpHttp, McpHttpAuth,
    McpTransport,
};
pub use print::{REDACTED, is_secret};
pub use secret::Secret;
pub use senders::{
    DEFAULT_SENDER_ID, STORED_DEFAULT, Sender, SenderProblem, Senders, SendersError, StoreKeys,
    is_stored_default,
};

use source::Source;

/// The single messaging channel (not configurable).
pub const DEFAULT_CHANNEL: &str = "whatsapp";

/// Every variable Warden reads, in the order docs/configuration.md documents them.
/// The platform API version when `PLATFORM_API_VERSION` is unset (v20.0 was retired on
/// 2026-09-24).
pub const DEFAULT_API_VERSION: &str = "v25.0";

/// `v` + one to three digits + `.0`: the platform's version prefix.
pub fn is_api_version(version: &str) -> bool {
    version
        .strip_prefix('v')
        .and_then(|rest| rest.strip_suffix(".0"))
        .is_some_and(|major| {
            !major.is_empty() && major.len() <= 3 && major.bytes().all(|b| b.is_ascii_digit())
        })
}

/// `MEDIA_MAX_BYTES` when unset: 5 MiB.
pub const DEFAULT_MEDIA_MAX_BYTES: u64 = 5 * 1024 * 1024;

pub const VARIABLES: &[&str] = &[
    "SERVER_HTTP_PORT",
    "ADMIN_HTTP_PORT",
    "SERVER_MCP_NAME",
    "SERVER_MCP_VERSION",
    "TIER",
    "DB_HOST",
    "DB_PORT",
    "DB_USER",
    "DB_PASSWORD",
    "DB_NAME",
    "DB_SSLMODE",
    "REDIS_ADDR",
    "REDIS_PASSWORD",
    "REDIS_DB",
    "NATS_URL",
    "DELIVERY_STREAM",
    "PLATFORM_API_URL",
    "PLATFORM_API_VERSION",
    "PLATFORM_ACCESS_TOKEN",
    "PLATFORM_PHONE_NUMBER_ID",
    "PLATFORM_ACCOUNT_ID",
    "PLATFORM_WEBHOOK_VERIFY_TOKEN",
    "PLATFORM_APP_SECRET",
    "POLICIES_PATH",
    "PRICING_PATH",
    "SENDERS_PATH",
    "SCHEDULER_POLL_INTERVAL",
    "MESSAGE_CONTENT_RETENTION",
    "HUMAN_TAKEOVER_TTL",
    "RATE_LIMIT_MPS",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "MEDIA_MAX_BYTES",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tier {
    Oss,
    Pro,
}

impl Tier {
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Oss => "oss",
            Tier::Pro => "pro",
        }
    }
    pub fn is_pro_or_higher(self) -> bool {
        matches!(self, Tier::Pro)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Prefer,
}

impl SslMode {
    pub fn as_str(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
        }
    }
}

#[derive(Clone)]
pub struct Database {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub password: String,
    pub name: String,
    pub sslmode: SslMode,
}

impl Database {
    /// A libpq-style URL for `name` (the configured database unless another is given).
    pub fn url_for(&self, name: &str) -> String {
        format!(
            "postgres://{}:{}@{}:{}/{}?sslmode={}",
            encode(&self.user),
            encode(&self.password),
            self.host,
            self.port,
            encode(name),
            self.sslmode.as_str()
        )
    }
    pub fn url(&self) -> String {
        self.url_for(&self.name)
    }
    /// Where the database lives, without credentials (safe to log).
    pub fn display_target(&self) -> String {
        format!("{}:{}/{}", self.host, self.port, self.name)
    }
}

impl fmt::Debug for Database {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Database")
            .field("target", &self.display_target())
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

#[derive(Clone)]
pub struct Redis {
    pub addr: String,
    pub password: String,
    pub db: u8,
}

impl Redis {
    pub fn url(&self) -> String {
        if self.password.is_empty() {
            format!("redis://{}/{}", self.addr, self.db)
        } else {
            format!(
                "redis://:{}@{}/{}",
                encode(&self.password),
                self.addr,
                self.db
            )
        }
    }
}

impl fmt::Debug for Redis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redis")
            .field("addr", &self.addr)
            .field("db", &self.db)
            .finish_non_exhaustive()
    }
}

#[derive(Clone)]
pub struct Platform {
    pub api_url: String,
    /// Graph API version prefix of every call (`v25.0`).
    pub api_version: String,
    pub access_token: String,
    pub phone_number_id: String,
    pub account_id: String,
    pub webhook_verify_token: String,
    /// None: the webhook server refuses to start.
    pub app_secret: Option<String>,
}

impl fmt::Debug for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Secrets never reach a log line.
        f.debug_struct("Platform")
            .field("api_url", &self.api_url)
            .field("api_version", &self.api_version)
            .field("phone_number_id", &self.phone_number_id)
            .field("account_id", &self.account_id)
            .field("app_secret_set", &self.app_secret.is_some())
            .finish_non_exhaustive()
    }
}

/// HUMAN_TAKEOVER_TTL when not set: a Business-app reply holds the conversation 30 minutes.
pub const DEFAULT_HUMAN_TAKEOVER_TTL: Duration = Duration::from_secs(30 * 60);
/// MESSAGE_CONTENT_RETENTION when not set: 90 days.
pub const DEFAULT_CONTENT_RETENTION: Duration = Duration::from_secs(90 * 86_400);
/// POLICIES_PATH when not set (relative to the working directory).
pub const DEFAULT_POLICIES_PATH: &str = "policies/default.yaml";

#[derive(Clone, Debug)]
pub struct Settings {
    pub http_port: u16,
    /// ADMIN_HTTP_PORT when set; each binary has its own default.
    pub admin_port: Option<u16>,
    pub mcp_name: String,
    pub mcp_version: String,
    pub tier: Tier,
    pub database: Database,
    pub redis: Redis,
    pub nats_url: String,
    pub delivery_stream: String,
    pub platform: Platform,
    pub policies_path: PathBuf,
    /// POLICIES_PATH was given (environment or config file). When it was not and the
    /// default file is absent, the built-in default policy file is used instead.
    pub policies_path_set: bool,
    /// PRICING_PATH: the rate card file (YAML or JSON, dated cards); None: the built-in
    /// per-message card (`warden_rules::pricing::BUILTIN`).
    pub pricing_path: Option<PathBuf>,
    /// SENDERS_PATH: the senders file (YAML); None: one sender, `default`, from the
    /// `PLATFORM_*` variables.
    pub senders_path: Option<PathBuf>,
    /// The senders file's registry, checked at load (its secrets read from the variables it
    /// names); None without the file. Read it through [`Settings::senders`].
    pub senders_file: Option<Senders>,
    pub scheduler_poll_interval: Duration,
    /// MESSAGE_CONTENT_RETENTION: message content older than this is redacted by the
    /// scheduler (type, status and timestamps stay).
    pub message_content_retention: Duration,
    /// HUMAN_TAKEOVER_TTL: after a person's reply from the WhatsApp Business app (a message
    /// echo) the conversation is theirs for this long after their last one.
    pub human_takeover_ttl: Duration,
    pub rate_limit_mps: u32,
    pub otlp_endpoint: Option<String>,
    /// The largest media get_media downloads (`MEDIA_MAX_BYTES`, default 5 MiB).
    pub media_max_bytes: u64,
    /// The dispatcher's knobs (its retry bound is the webhook's too).
    pub dispatch: Dispatch,
    /// The MCP gateway's HTTP transport (docs/remote-agents.md).
    pub mcp_http: McpHttp,
    /// The host name (`HOSTNAME`), part of the lease owner ids; `None` when unset.
    pub hostname: Option<String>,
    /// The gateway's callers: stdio's agent name, the optional OAuth issuer.
    pub identity: Identity,
    /// The operator console and the campaign approval gate (docs/console.md).
    pub console: Console,
}

impl Settings {
    /// Load from the process environment and an optional config file.
    pub fn load(config_file: Option<&Path>) -> Result<Self, SettingsError> {
        Self::from_sources(config_file, &process_env())
    }

    /// The senders this deployment speaks for: the `SENDERS_PATH` file's, else one sender,
    /// `default`, made of `platform` as it is now ([`Senders::single_default`]).
    pub fn senders(&self) -> Cow<'_, Senders> {
        match &self.senders_file {
            Some(senders) => Cow::Borrowed(senders),
            None => Cow::Owned(Senders::single_default(&self.platform)),
        }
    }

    /// The send rate the dispatcher starts from until the platform says what the number's
    /// throughput is: the default sender's `mps` when the senders file gives one, else
    /// `RATE_LIMIT_MPS`; with the setting that gave it (for `get_rate_limit`).
    pub fn configured_mps(&self) -> (u32, String) {
        self.configured_mps_of(self.senders().default())
    }

    /// [`Settings::configured_mps`] of `sender`: its `mps`, else `RATE_LIMIT_MPS`.
    pub fn configured_mps_of(&self, sender: &Sender) -> (u32, String) {
        match sender.mps {
            Some(mps) => (
                mps,
                format!("senders file: mps {mps} of sender {}", sender.id),
            ),
            None => (
                self.rate_limit_mps,
                format!("RATE_LIMIT_MPS={}", self.rate_limit_mps),
            ),
        }
    }

    /// The channel every tool defaults to.
    pub fn channel(&self) -> &'static str {
        DEFAULT_CHANNEL
    }

    /// The JetStream subject messages for `channel` are published on.
    pub fn delivery_subject(&self, channel: &str) -> String {
        format!(
            "{}.outbound.{}",
            self.delivery_stream.to_lowercase(),
            channel
        )
    }

    /// Defaults, then `config_file`, then `env`. Every bad variable is reported (one
    /// [`Problem`] each), not just the first.
    pub fn from_sources(
        config_file: Option<&Path>,
        env: &HashMap<String, String>,
    ) -> Result<Self, SettingsError> {
        let file = match config_file {
            Some(path) => source::read_file(path, is_variable)?,
            None => HashMap::new(),
        };
        let mut src = Source::new(file, env);
        let settings = Self::read(&mut src);
        src.finish(settings)
    }

    fn read(src: &mut Source<'_>) -> Settings {
        let sslmode = match src.get("DB_SSLMODE").as_deref().unwrap_or("prefer") {
            "disable" => SslMode::Disable,
            "prefer" | "allow" => SslMode::Prefer,
            other => {
                src.problem(
                    "DB_SSLMODE",
                    format!(
                        "`{other}` is not supported; use `disable` or `prefer` (TLS to Postgres is not built in, terminate it with a proxy)"
                    ),
                );
                SslMode::Prefer
            }
        };
        let tier = match src
            .get("TIER")
            .unwrap_or_else(|| "oss".into())
            .to_ascii_lowercase()
            .as_str()
        {
            "oss" => Tier::Oss,
            "pro" => Tier::Pro,
            other => {
                src.problem(
                    "TIER",
                    format!("`{other}` is not a tier; use `oss` or `pro`"),
                );
                Tier::Oss
            }
        };
        let redis_addr = src.string("REDIS_ADDR", "127.0.0.1:6379");
        if !redis_addr.contains(':') {
            src.problem("REDIS_ADDR", format!("`{redis_addr}` is not host:port"));
        }
        let nats_url = src.string("NATS_URL", "nats://127.0.0.1:4222");
        if nats_url.trim().is_empty() {
            src.problem("NATS_URL", "must not be empty");
        }
        let delivery_stream = src.string("DELIVERY_STREAM", "DELIVERY");
        if delivery_stream.is_empty()
            || !delivery_stream
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            src.problem(
                "DELIVERY_STREAM",
                format!("`{delivery_stream}` must be letters, digits, `_` or `-`"),
            );
        }
        let api_url = src.string("PLATFORM_API_URL", "http://127.0.0.1:8089");
        if !(api_url.starts_with("http://") || api_url.starts_with("https://")) {
            src.problem(
                "PLATFORM_API_URL",
                format!("`{api_url}` must start with http:// or https://"),
            );
        }
        let api_version = src.string("PLATFORM_API_VERSION", DEFAULT_API_VERSION);
        if !is_api_version(&api_version) {
            src.problem(
                "PLATFORM_API_VERSION",
                format!(
                    "`{api_version}` is not an API version; use `vNN.0`, e.g. `{DEFAULT_API_VERSION}`"
                ),
            );
        }
        let rate_limit_mps = src.number::<u32>("RATE_LIMIT_MPS", 80);
        if rate_limit_mps == 0 {
            src.problem("RATE_LIMIT_MPS", "must be at least 1");
        }
        let db_port = src.number::<u16>("DB_PORT", 5432);
        let media_max_bytes = src.number::<u64>("MEDIA_MAX_BYTES", DEFAULT_MEDIA_MAX_BYTES);
        if media_max_bytes == 0 {
            src.problem("MEDIA_MAX_BYTES", "must be at least 1");
        }
        let default_poll = Duration::from_secs(2);
        let poll = src.string("SCHEDULER_POLL_INTERVAL", "2s");
        let scheduler_poll_interval = match parse_duration(&poll) {
            Ok(d) if d.is_zero() => {
                src.problem("SCHEDULER_POLL_INTERVAL", "must be greater than zero");
                default_poll
            }
            Ok(d) => d,
            Err(e) => {
                src.problem("SCHEDULER_POLL_INTERVAL", e.to_string());
                default_poll
            }
        };
        let default_retention = DEFAULT_CONTENT_RETENTION;
        let retention = src.string("MESSAGE_CONTENT_RETENTION", "90d");
        let message_content_retention = match parse_duration(&retention) {
            Ok(d) if d.is_zero() => {
                src.problem("MESSAGE_CONTENT_RETENTION", "must be greater than zero");
                default_retention
            }
            Ok(d) => d,
            Err(e) => {
                src.problem("MESSAGE_CONTENT_RETENTION", e.to_string());
                default_retention
            }
        };
        let human_takeover_ttl =
            match src.duration("HUMAN_TAKEOVER_TTL", DEFAULT_HUMAN_TAKEOVER_TTL) {
                d if d.is_zero() => {
                    src.problem("HUMAN_TAKEOVER_TTL", "must be greater than zero");
                    DEFAULT_HUMAN_TAKEOVER_TTL
                }
                d => d,
            };

        let senders_path = src.trimmed("SENDERS_PATH").map(PathBuf::from);
        let senders_file = senders_path.as_deref().and_then(|path| {
            // The secrets come from the environment only, never from the config file.
            let loaded = Senders::load(path, &|name| src.env_only(name));
            match loaded {
                Ok(senders) => Some(senders),
                Err(e) => {
                    for line in e.lines() {
                        src.problem("SENDERS_PATH", line);
                    }
                    None
                }
            }
        });

        let mcp_http = McpHttp::read(src);
        let identity = Identity::read(src);
        if mcp_http.auth == McpHttpAuth::OAuth && identity.oauth.is_none() {
            src.problem(
                "MCP_HTTP_AUTH",
                "`oauth` needs MCP_OAUTH_ISSUER and MCP_OAUTH_AUDIENCE (or use `api_key`)",
            );
        }
        Settings {
            http_port: src.number::<u16>("SERVER_HTTP_PORT", 8080),
            admin_port: src.optional_number::<u16>("ADMIN_HTTP_PORT"),
            mcp_name: src.string("SERVER_MCP_NAME", "warden"),
            mcp_version: src.string("SERVER_MCP_VERSION", env!("CARGO_PKG_VERSION")),
            tier,
            database: Database {
                host: src.string("DB_HOST", "127.0.0.1"),
                port: db_port,
                user: src.string("DB_USER", "warden"),
                password: src.string("DB_PASSWORD", "warden"),
                name: src.string("DB_NAME", "warden"),
                sslmode,
            },
            redis: Redis {
                addr: redis_addr,
                password: src.string("REDIS_PASSWORD", ""),
                db: src.number::<u8>("REDIS_DB", 0),
            },
            nats_url,
            delivery_stream,
            platform: Platform {
                api_url: api_url.trim_end_matches('/').to_string(),
                api_version,
                access_token: src.string("PLATFORM_ACCESS_TOKEN", "dev-access-token"),
                phone_number_id: src.string("PLATFORM_PHONE_NUMBER_ID", "100000000000001"),
                account_id: src.string("PLATFORM_ACCOUNT_ID", "200000000000001"),
                webhook_verify_token: src
                    .string("PLATFORM_WEBHOOK_VERIFY_TOKEN", "dev-verify-token"),
                app_secret: src.get("PLATFORM_APP_SECRET").filter(|s| !s.is_empty()),
            },
            policies_path: PathBuf::from(src.string("POLICIES_PATH", DEFAULT_POLICIES_PATH)),
            policies_path_set: src.get("POLICIES_PATH").is_some(),
            pricing_path: src
                .get("PRICING_PATH")
                .filter(|s| !s.trim().is_empty())
                .map(PathBuf::from),
            senders_path,
            senders_file,
            scheduler_poll_interval,
            message_content_retention,
            human_takeover_ttl,
            rate_limit_mps,
            otlp_endpoint: src
                .get("OTEL_EXPORTER_OTLP_ENDPOINT")
                .filter(|s| !s.is_empty()),
            media_max_bytes,
            dispatch: Dispatch::read(src),
            mcp_http,
            // The environment only: it names this host, not the deployment.
            hostname: src.env_only("HOSTNAME").filter(|h| !h.is_empty()),
            identity,
            console: Console::read(src),
        }
    }
}

/// Whether `key` (any case) is a variable of the tree, i.e. a valid config file key.
fn is_variable(key: &str) -> bool {
    VARIABLES
        .iter()
        .chain(DISPATCH_VARIABLES.iter().map(|(name, _)| name))
        .chain(MCP_HTTP_VARIABLES.iter().map(|(name, _)| name))
        .chain(IDENTITY_VARIABLES.iter().map(|(name, _)| name))
        .chain(CONSOLE_VARIABLES.iter().map(|(name, _)| name))
        .any(|v| v.eq_ignore_ascii_case(key))
}

/// The process environment (the one place Warden reads it).
pub fn process_env() -> HashMap<String, String> {
    std::env::vars().collect()
}

/// Percent-encode a URL component (user, password, database name).
fn encode(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for b in raw.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_follow_the_contract() {
        let s = Settings::from_sources(None, &env(&[])).unwrap();
        assert_eq!(s.http_port, 8080);
        assert_eq!(s.database.user, "warden");
        assert_eq!(s.database.password, "warden");
        assert_eq!(s.database.name, "warden");
        assert_eq!(s.redis.addr, "127.0.0.1:6379");
        assert_eq!(s.nats_url, "nats://127.0.0.1:4222");
        assert_eq!(s.platform.api_url, "http://127.0.0.1:8089");
        assert_eq!(s.rate_limit_mps, 80);
        assert_eq!(s.delivery_stream, "DELIVERY");
        assert_eq!(s.delivery_subject("whatsapp"), "delivery.outbound.whatsapp");
        assert!(s.platform.app_secret.is_none());
        assert_eq!(s.tier, Tier::Oss);
    }

    #[test]
    fn api_version_defaults_to_v25_and_takes_any_vnn() {
        let s = Settings::from_sources(None, &env(&[])).unwrap();
        assert_eq!(s.platform.api_version, "v25.0");
        let s = Settings::from_sources(None, &env(&[("PLATFORM_API_VERSION", "v24.0")])).unwrap();
        assert_eq!(s.platform.api_version, "v24.0");
        for ok in ["v25.0", "v20.0", "v1.0", "v100.0"] {
            assert!(is_api_version(ok), "{ok}");
        }
        for bad in [
            "25.0", "v25", "v25.1", "v.0", "vx.0", "v1000.0", "V25.0", "", "sim",
        ] {
            assert!(!is_api_version(bad), "{bad}");
            if !bad.is_empty() {
                let err = Settings::from_sources(None, &env(&[("PLATFORM_API_VERSION", bad)]))
                    .unwrap_err();
                assert!(err.to_string().contains("PLATFORM_API_VERSION"), "{err}");
            }
        }
    }

    #[test]
    fn bad_values_name_the_variable() {
        for (var, value) in [
            ("SERVER_HTTP_PORT", "eighty"),
            ("SERVER_HTTP_PORT", "70000"),
            ("DB_PORT", "-1"),
            ("REDIS_DB", "x"),
            ("TIER", "gold"),
            ("RATE_LIMIT_MPS", "0"),
            ("SCHEDULER_POLL_INTERVAL", "soon"),
            ("MESSAGE_CONTENT_RETENTION", "forever"),
            ("MESSAGE_CONTENT_RETENTION", "0d"),
            ("DB_SSLMODE", "verify-full"),
            ("PLATFORM_API_URL", "ftp://x"),
            ("DELIVERY_STREAM", "a.b"),
        ] {
            let err = Settings::from_sources(None, &env(&[(var, value)])).unwrap_err();
            let line = err.to_string();
            assert!(line.starts_with(var), "{line}");
            assert!(!line.contains('\n'));
        }
    }

    #[test]
    fn content_retention_defaults_to_90_days() {
        let s = Settings::from_sources(None, &env(&[])).unwrap();
        assert_eq!(s.message_content_retention, DEFAULT_CONTENT_RETENTION);
        let s =
            Settings::from_sources(None, &env(&[("MESSAGE_CONTENT_RETENTION", "30d")])).unwrap();
        assert_eq!(
            s.message_content_retention,
            Duration::from_secs(30 * 86_400)
        );
    }

    #[test]
    fn config_file_is_overridden_by_env() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("warden.toml");
        std::fs::write(
            &path,
            "db_host = \"db.internal\"\nserver_http_port = 9000\ntier = \"pro\"\n",
        )
        .unwrap();
        let s = Settings::from_sources(Some(&path), &env(&[("SERVER_HTTP_PORT", "9100")])).unwrap();
        assert_eq!(s.database.host, "db.internal");
        assert_eq!(s.http_port, 9100);
        assert_eq!(s.tier, Tier::Pro);
    }

    #[test]
    fn config_file_rejects_unknown_keys() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("warden.toml");
        std::fs::write(&path, "db_hots = \"x\"\n").unwrap();
        let err = Settings::from_sources(Some(&path), &env(&[])).unwrap_err();
        assert!(err.to_string().contains("db_hots"));
    }

    #[test]
    fn urls_encode_credentials_and_debug_hides_them() {
        let s = Settings::from_sources(
            None,
            &env(&[("DB_PASSWORD", "p@ss:word/"), ("REDIS_PASSWORD", "r p")]),
        )
        .unwrap();
        assert!(s.database.url().contains("p%40ss%3Aword%2F"));
        assert!(s.redis.url().starts_with("redis://:r%20p@"));
        let dbg = format!("{s:?}");
        assert!(!dbg.contains("p@ss"));
        assert!(!dbg.contains("dev-access-token"));
    }

    #[test]
    fn every_bad_variable_is_one_line() {
        let err = Settings::from_sources(
            None,
            &env(&[
                ("SERVER_HTTP_PORT", "eighty"),
                ("TIER", "gold"),
                ("DISPATCH_MAX_ATTEMPTS", "0"),
                ("PAIR_RATE_INTERVAL", "soon"),
            ]),
        )
        .unwrap_err();
        assert_eq!(
            err.problems(),
            vec![
                "TIER: `gold` is not a tier; use `oss` or `pro`",
                "SERVER_HTTP_PORT: `eighty` is not a valid number (expected an integer from 0 to 65535)",
                "DISPATCH_MAX_ATTEMPTS: `0` is not a whole number in range",
                "PAIR_RATE_INTERVAL: `soon` is not a duration like 30s, 500ms, 2m or 1h",
            ]
        );
        assert_eq!(err.to_string().lines().count(), 4);
    }

    #[test]
    fn dispatch_defaults_and_overrides() {
        let s = Settings::from_sources(None, &env(&[])).unwrap();
        assert_eq!(s.dispatch, Dispatch::default());
        assert_eq!(s.dispatch.max_attempts, 8);
        assert_eq!(s.dispatch.pair_interval, Duration::from_secs(6));
        assert_eq!(s.dispatch.unknown_max_wait, Duration::from_secs(900));
        let s = Settings::from_sources(
            None,
            &env(&[
                ("PAIR_RATE_INTERVAL", "0"),
                ("DISPATCH_MAX_ATTEMPTS", " 3 "),
                ("DISPATCHER_REPLICAS", "2"),
                ("DISPATCH_BACKOFF_BASE", "100ms"),
                ("DISPATCH_CONCURRENCY", ""),
            ]),
        )
        .unwrap();
        assert_eq!(s.dispatch.pair_interval, Duration::ZERO);
        assert_eq!(s.dispatch.max_attempts, 3);
        assert_eq!(s.dispatch.replicas, 2);
        assert_eq!(s.dispatch.backoff_base, Duration::from_millis(100));
        assert_eq!(s.dispatch.concurrency, 64);
    }

    #[test]
    fn dispatch_messages_keep_their_wording() {
        for (pairs, line) in [
            (
                vec![("DISPATCHER_REPLICAS", "0")],
                "DISPATCHER_REPLICAS: `0` is not a whole number of at least 1",
            ),
            (
                vec![("DISPATCH_ACK_WAIT", "500ms")],
                "DISPATCH_ACK_WAIT: must be at least 1s",
            ),
            (
                vec![("DISPATCH_LEASE", "0")],
                "DISPATCH_LEASE: must be at least 1s",
            ),
            (
                vec![("PLATFORM_TIMEOUT", "0s")],
                "PLATFORM_TIMEOUT: must be more than 0",
            ),
            (
                vec![
                    ("DISPATCH_BACKOFF_BASE", "10m"),
                    ("DISPATCH_BACKOFF_CAP", "1m"),
                ],
                "DISPATCH_BACKOFF_CAP: must not be shorter than DISPATCH_BACKOFF_BASE",
            ),
            (
                vec![("SCHEDULER_POLL_INTERVAL", "0s")],
                "SCHEDULER_POLL_INTERVAL: must be greater than zero",
            ),
        ] {
            let err = Settings::from_sources(None, &env(&pairs)).unwrap_err();
            assert_eq!(err.to_string(), line);
        }
    }

    #[test]
    fn config_file_takes_dispatch_keys() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("warden.toml");
        std::fs::write(
            &path,
            "dispatch_lease = \"90s\"\ndispatch_concurrency = 8\n",
        )
        .unwrap();
        let s =
            Settings::from_sources(Some(&path), &env(&[("DISPATCH_CONCURRENCY", "16")])).unwrap();
        assert_eq!(s.dispatch.lease, Duration::from_secs(90));
        assert_eq!(s.dispatch.concurrency, 16);
    }

    #[test]
    fn hostname_comes_from_the_environment_only() {
        let s = Settings::from_sources(None, &env(&[("HOSTNAME", "node-7")])).unwrap();
        assert_eq!(s.hostname.as_deref(), Some("node-7"));
        let s = Settings::from_sources(None, &env(&[("HOSTNAME", "")])).unwrap();
        assert_eq!(s.hostname, None);
    }

    #[test]
    fn print_config_redacts_secrets() {
        let s = Settings::from_sources(
            None,
            &env(&[
                ("DB_PASSWORD", "db-pw-1"),
                ("REDIS_PASSWORD", "redis-pw-2"),
                ("PLATFORM_ACCESS_TOKEN", "tok-3"),
                ("PLATFORM_WEBHOOK_VERIFY_TOKEN", "verify-4"),
                ("PLATFORM_APP_SECRET", "app-secret-5"),
                ("DB_HOST", "db.internal"),
            ]),
        )
        .unwrap();
        let text = s.print_config();
        for secret in ["db-pw-1", "redis-pw-2", "tok-3", "verify-4", "app-secret-5"] {
            assert!(!text.contains(secret), "{secret} leaked:\n{text}");
        }
        for line in [
            "db_password = \"<redacted>\"",
            "redis_password = \"<redacted>\"",
            "platform_access_token = \"<redacted>\"",
            "platform_webhook_verify_token = \"<redacted>\"",
            "platform_app_secret = \"<redacted>\"",
            "db_host = \"db.internal\"",
            "server_http_port = 8080",
            "dispatch_backoff_cap = \"5m\"",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing:\n{text}");
        }
        for variable in [
            "DB_PASSWORD",
            "PLATFORM_ACCESS_TOKEN",
            "PLATFORM_APP_SECRET",
            "X_TOKEN",
        ] {
            assert!(is_secret(variable), "{variable}");
        }
        assert!(!is_secret("DB_HOST"));
        // Unset ones are comments; an empty password is not hidden.
        let text = Settings::from_sources(None, &env(&[]))
            .unwrap()
            .print_config();
        assert!(text.contains("# platform_app_secret is not set"), "{text}");
        assert!(text.lines().any(|l| l == "redis_password = \"\""), "{text}");
    }

    #[test]
    fn without_senders_path_one_default_sender_from_platform() {
        let mut s = Settings::from_sources(
            None,
            &env(&[
                ("PLATFORM_ACCESS_TOKEN", "tok-1"),
                ("PLATFORM_PHONE_NUMBER_ID", "555"),
                ("PLATFORM_APP_SECRET", "app-2"),
            ]),
        )
        .unwrap();
        assert_eq!(s.senders_path, None);
        assert!(s.senders_file.is_none());
        let senders = s.senders();
        assert_eq!(senders.ids(), ["default"]);
        assert_eq!(senders.default().phone_number_id, "555");
        assert_eq!(senders.default().access_token.expose(), "tok-1");
        assert!(s.print_config().contains(
            "# senders_path is not set (one sender, `default`, from the PLATFORM_* variables)"
        ));
        // Follows `platform` as it is now (tests change it after loading).
        s.platform.access_token = "tok-3".into();
        assert_eq!(s.senders().default().access_token.expose(), "tok-3");
    }

    #[test]
    fn senders_path_is_loaded_and_checked_at_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("senders.yaml");
        std::fs::write(&path, include_str!("../../../examples/senders.yaml")).unwrap();
        let shown = path.display().to_string();
        let vars = [
            ("SENDERS_PATH", shown.as_str()),
            ("SENDER_A1_TOKEN", "tok-a1"),
            ("SENDER_A2_TOKEN", "tok-a2"),
            ("SENDER_B1_TOKEN", "tok-b1"),
            ("SENDER_A_APP_SECRET", "app-a"),
            ("SENDER_B_APP_SECRET", "app-b"),
        ];
        let s = Settings::from_sources(None, &env(&vars)).unwrap();
        assert_eq!(s.senders_path.as_deref(), Some(path.as_path()));
        assert_eq!(s.senders().ids(), ["a1", "a2", "b1"]);
        assert_eq!(s.senders().default().access_token.expose(), "tok-a1");
        // The default sender's mps, not RATE_LIMIT_MPS, until the platform says.
        let with_limit = [&vars[..], &[("RATE_LIMIT_MPS", "25")]].concat();
        let limited = Settings::from_sources(None, &env(&with_limit)).unwrap();
        assert_eq!(
            limited.configured_mps(),
            (80, "senders file: mps 80 of sender a1".to_string())
        );
        let plain = Settings::from_sources(None, &env(&[("RATE_LIMIT_MPS", "25")])).unwrap();
        assert_eq!(
            plain.configured_mps(),
            (25, "RATE_LIMIT_MPS=25".to_string())
        );
        let text = s.print_config();
        assert!(
            text.lines()
                .any(|l| l == format!("senders_path = \"{shown}\"")),
            "{text}"
        );
        for secret in ["tok-a1", "tok-a2", "app-a"] {
            assert!(!text.contains(secret));
            assert!(!format!("{s:?}").contains(secret));
        }

        // Missing variables: every one is a problem of SENDERS_PATH, with the other bad
        // settings; never a value.
        let mut bad = vars[..2].to_vec();
        bad.push(("TIER", "gold"));
        let err = Settings::from_sources(None, &env(&bad)).unwrap_err();
        let problems = err.problems();
        assert_eq!(problems.len(), 6, "{problems:#?}");
        assert!(problems[0].starts_with("TIER: "), "{problems:#?}");
        assert_eq!(
            problems[1],
            format!(
                "SENDERS_PATH: {shown}: line 12: senders[0].app_secret_env: `SENDER_A_APP_SECRET` is not set"
            )
        );
        assert!(
            problems[1..]
                .iter()
                .all(|p| p.starts_with("SENDERS_PATH: "))
        );
        assert!(!err.to_string().contains("tok-a1"));

        // The secrets come from the environment only, not from the config file.
        let config = dir.path().join("warden.toml");
        std::fs::write(&config, "sender_a1_token = \"tok\"\n").unwrap();
        assert!(Settings::from_sources(Some(&config), &env(&vars)).is_err());

        // A path that is set but missing stops start-up too.
        let err = Settings::from_sources(None, &env(&[("SENDERS_PATH", "/nonexistent/s.yaml")]))
            .unwrap_err();
        assert_eq!(err.problems().len(), 1);
        assert!(
            err.to_string()
                .starts_with("SENDERS_PATH: cannot read /nonexistent/s.yaml: "),
            "{err}"
        );
    }

    #[test]
    fn printed_config_reads_back_as_the_same_settings() {
        let s = Settings::from_sources(
            None,
            &env(&[
                ("DB_HOST", "db \"quoted\" host"),
                ("SCHEDULER_POLL_INTERVAL", "500ms"),
                ("ADMIN_HTTP_PORT", "9191"),
                ("DISPATCH_UNKNOWN_MAX_WAIT", "1h"),
            ]),
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("printed.toml");
        // Secrets are redacted: drop their lines, the defaults fill them in again.
        let printed: String = s
            .print_config()
            .lines()
            .filter(|l| !l.contains(REDACTED))
            .map(|l| format!("{l}\n"))
            .collect();
        std::fs::write(&path, printed).unwrap();
        let back = Settings::from_sources(Some(&path), &env(&[])).unwrap();
        assert_eq!(back.print_config(), s.print_config());
    }
}
