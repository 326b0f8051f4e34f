//! [`Settings::read`]: every variable of the tree, each bad value one [`Source::problem`].
//! The steps read in a fixed order, so a load's problems are always listed the same way.

use std::path::PathBuf;
use std::time::Duration;

use crate::source::Source;
use crate::{
    Console, DEFAULT_API_VERSION, DEFAULT_CONTENT_RETENTION, DEFAULT_HUMAN_TAKEOVER_TTL,
    DEFAULT_MEDIA_MAX_BYTES, DEFAULT_POLICIES_PATH, Database, Dispatch, Identity, McpHttp,
    McpHttpAuth, Platform, Redis, Senders, Settings, SslMode, Tier, is_api_version,
};

impl Settings {
    pub(crate) fn read(src: &mut Source<'_>) -> Settings {
        let sslmode = sslmode(src);
        let tier = tier(src);
        let (redis_addr, nats_url, delivery_stream) = messaging(src);
        let (api_url, api_version) = platform_api(src);
        let rate_limit_mps = src.number::<u32>("RATE_LIMIT_MPS", 80);
        if rate_limit_mps == 0 {
            src.problem("RATE_LIMIT_MPS", "must be at least 1");
        }
        let db_port = src.number::<u16>("DB_PORT", 5432);
        let media_max_bytes = src.number::<u64>("MEDIA_MAX_BYTES", DEFAULT_MEDIA_MAX_BYTES);
        if media_max_bytes == 0 {
            src.problem("MEDIA_MAX_BYTES", "must be at least 1");
        }
        let scheduler_poll_interval =
            positive_duration(src, "SCHEDULER_POLL_INTERVAL", "2s", Duration::from_secs(2));
        let message_content_retention = positive_duration(
            src,
            "MESSAGE_CONTENT_RETENTION",
            "90d",
            DEFAULT_CONTENT_RETENTION,
        );
        let human_takeover_ttl =
            match src.duration("HUMAN_TAKEOVER_TTL", DEFAULT_HUMAN_TAKEOVER_TTL) {
                d if d.is_zero() => {
                    src.problem("HUMAN_TAKEOVER_TTL", "must be greater than zero");
                    DEFAULT_HUMAN_TAKEOVER_TTL
                }
                d => d,
            };
        let senders_path = src.trimmed("SENDERS_PATH").map(PathBuf::from);
        let senders_file = senders_file(src, senders_path.as_deref());
        let (mcp_http, identity) = callers(src);
        // The rest reads in the order the tree lists it (only numbers can be refused here).
        let http_port = src.number::<u16>("SERVER_HTTP_PORT", 8080);
        let admin_port = src.optional_number::<u16>("ADMIN_HTTP_PORT");
        let mcp_name = src.string("SERVER_MCP_NAME", "warden");
        let mcp_version = src.string("SERVER_MCP_VERSION", env!("CARGO_PKG_VERSION"));
        let database = database(src, db_port, sslmode);
        let redis = Redis {
            addr: redis_addr,
            password: src.string("REDIS_PASSWORD", ""),
            db: src.number::<u8>("REDIS_DB", 0),
        };
        let platform = platform(src, api_url, api_version);
        Settings {
            http_port,
            admin_port,
            mcp_name,
            mcp_version,
            tier,
            database,
            redis,
            nats_url,
            delivery_stream,
            platform,
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

fn sslmode(src: &mut Source<'_>) -> SslMode {
    match src.get("DB_SSLMODE").as_deref().unwrap_or("prefer") {
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
    }
}

fn tier(src: &mut Source<'_>) -> Tier {
    match src
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
    }
}

/// REDIS_ADDR, NATS_URL and DELIVERY_STREAM, each checked for its shape.
fn messaging(src: &mut Source<'_>) -> (String, String, String) {
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
    (redis_addr, nats_url, delivery_stream)
}

/// PLATFORM_API_URL (http or https) and PLATFORM_API_VERSION (`vNN.0`).
fn platform_api(src: &mut Source<'_>) -> (String, String) {
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
    (api_url, api_version)
}

/// A duration written as text (`2s`, `90d`) that must be above zero; `default` otherwise.
fn positive_duration(
    src: &mut Source<'_>,
    variable: &str,
    unset: &str,
    default: Duration,
) -> Duration {
    let raw = src.string(variable, unset);
    match crate::parse_duration(&raw) {
        Ok(d) if d.is_zero() => {
            src.problem(variable, "must be greater than zero");
            default
        }
        Ok(d) => d,
        Err(e) => {
            src.problem(variable, e.to_string());
            default
        }
    }
}

/// The senders file at `path`, checked; each of its problems is one SENDERS_PATH line.
fn senders_file(src: &mut Source<'_>, path: Option<&std::path::Path>) -> Option<Senders> {
    let path = path?;
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
}

/// The gateway's HTTP transport and its callers, which must agree on OAuth.
fn callers(src: &mut Source<'_>) -> (McpHttp, Identity) {
    let mcp_http = McpHttp::read(src);
    let identity = Identity::read(src);
    if mcp_http.auth == McpHttpAuth::OAuth && identity.oauth.is_none() {
        src.problem(
            "MCP_HTTP_AUTH",
            "`oauth` needs MCP_OAUTH_ISSUER and MCP_OAUTH_AUDIENCE (or use `api_key`)",
        );
    }
    (mcp_http, identity)
}

fn database(src: &Source<'_>, port: u16, sslmode: SslMode) -> Database {
    Database {
        host: src.string("DB_HOST", "127.0.0.1"),
        port,
        user: src.string("DB_USER", "warden"),
        password: src.string("DB_PASSWORD", "warden"),
        name: src.string("DB_NAME", "warden"),
        sslmode,
    }
}

fn platform(src: &Source<'_>, api_url: String, api_version: String) -> Platform {
    Platform {
        api_url: api_url.trim_end_matches('/').to_string(),
        api_version,
        access_token: src.string("PLATFORM_ACCESS_TOKEN", "dev-access-token"),
        phone_number_id: src.string("PLATFORM_PHONE_NUMBER_ID", "100000000000001"),
        account_id: src.string("PLATFORM_ACCOUNT_ID", "200000000000001"),
        webhook_verify_token: src.string("PLATFORM_WEBHOOK_VERIFY_TOKEN", "dev-verify-token"),
        app_secret: src.get("PLATFORM_APP_SECRET").filter(|s| !s.is_empty()),
    }
}
