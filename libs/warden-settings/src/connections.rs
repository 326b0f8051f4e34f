//! Where Warden connects: Postgres, Redis and the platform's API (whose `Debug` never
//! shows a secret).

use std::fmt;

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
