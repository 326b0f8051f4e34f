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

mod connections;
mod console;
mod dispatch;
mod duration;
mod error;
mod identity;
mod mcp_http;
mod print;
mod read;
mod secret;
pub mod senders;
mod source;

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use connections::{DEFAULT_API_VERSION, Database, Platform, Redis, SslMode, is_api_version};
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
pub use senders::ProductPolicy;
pub use senders::{
    DEFAULT_SENDER_ID, STORED_DEFAULT, Sender, SenderProblem, Senders, SendersError, StoreKeys,
    is_stored_default,
};

use source::Source;

/// The single messaging channel (not configurable).
pub const DEFAULT_CHANNEL: &str = "whatsapp";

/// `MEDIA_MAX_BYTES` when unset: 5 MiB.
pub const DEFAULT_MEDIA_MAX_BYTES: u64 = 5 * 1024 * 1024;

/// Every variable Warden reads, in the order docs/configuration.md documents them.
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

#[cfg(test)]
mod tests;
