//! Settings of the sim, from flags or environment variables.

use clap::Parser;
use std::path::PathBuf;
use std::time::Duration;

pub const DEFAULT_HTTP_PORT: u16 = 8089;
pub const DEFAULT_ACCESS_TOKEN: &str = "dev-access-token";
pub const DEFAULT_APP_SECRET: &str = "dev-app-secret";
pub const DEFAULT_PHONE_NUMBER_ID: &str = "100000000000001";
pub const DEFAULT_ACCOUNT_ID: &str = "200000000000001";
pub const DEFAULT_DISPLAY_PHONE_NUMBER: &str = "15550100000";
/// Where the default template set lives, relative to the working directory.
pub const DEFAULT_TEMPLATES_PATH: &str = "templates/sim-templates.json";

/// platform-sim: a local, in-memory stand-in for the messaging platform API (served under any `/vNN.0/` version prefix).
#[derive(Debug, Clone, Parser)]
#[command(name = "platform-sim", version, about, long_about = None)]
pub struct SimConfig {
    /// Address to listen on.
    #[arg(long, env = "SIM_HTTP_HOST", default_value = "0.0.0.0")]
    pub http_host: String,

    /// Port to listen on.
    #[arg(long, env = "SIM_HTTP_PORT", default_value_t = DEFAULT_HTTP_PORT)]
    pub http_port: u16,

    /// Where signed webhooks go (e.g. http://127.0.0.1:8080/webhook); none when unset.
    #[arg(long, env = "SIM_WEBHOOK_URL")]
    pub webhook_url: Option<String>,

    /// JSON file of the templates the sim starts with [default: templates/sim-templates.json,
    /// or a built-in copy when that file is missing].
    #[arg(long, env = "SIM_TEMPLATES")]
    pub templates: Option<PathBuf>,

    /// How long a created template stays PENDING before it is APPROVED (e.g. 2s, 500ms).
    #[arg(long, env = "SIM_APPROVAL_DELAY", default_value = "2s", value_parser = parse_duration)]
    pub approval_delay: Duration,

    /// Bearer token every platform (`/vNN.0/`) call must present.
    #[arg(long, env = "PLATFORM_ACCESS_TOKEN", default_value = DEFAULT_ACCESS_TOKEN, hide_env_values = true)]
    pub access_token: String,

    /// Secret of the X-Hub-Signature-256 HMAC on webhooks.
    #[arg(long, env = "PLATFORM_APP_SECRET", default_value = DEFAULT_APP_SECRET, hide_env_values = true)]
    pub app_secret: String,

    /// The business phone number id.
    #[arg(long, env = "PLATFORM_PHONE_NUMBER_ID", default_value = DEFAULT_PHONE_NUMBER_ID)]
    pub phone_number_id: String,

    /// The business account (WABA) id.
    #[arg(long, env = "PLATFORM_ACCOUNT_ID", default_value = DEFAULT_ACCOUNT_ID)]
    pub waba_id: String,

    /// Display number reported in webhook metadata and phone number reads.
    #[arg(long, env = "SIM_DISPLAY_PHONE_NUMBER", default_value = DEFAULT_DISPLAY_PHONE_NUMBER)]
    pub display_phone_number: String,

    /// JSON file of the numbers to serve (`[{"phone_number_id", "display_phone_number",
    /// "waba_id", "portfolio_id", "access_token", "app_secret", "throughput_mps", "quality"}]`);
    /// unset: the one number of PLATFORM_ACCESS_TOKEN, PLATFORM_APP_SECRET,
    /// PLATFORM_PHONE_NUMBER_ID, PLATFORM_ACCOUNT_ID and SIM_DISPLAY_PHONE_NUMBER.
    #[arg(long, env = "SIM_SENDERS")]
    pub senders: Option<PathBuf>,

    /// Webhook changes held in memory at most; the oldest is dropped past it.
    #[arg(long, env = "SIM_WEBHOOK_QUEUE", default_value_t = 100_000)]
    pub webhook_queue: usize,

    /// Changes per webhook POST at most.
    #[arg(long, env = "SIM_WEBHOOK_BATCH", default_value_t = 100)]
    pub webhook_batch: usize,

    /// How long a failing webhook POST is retried before its changes are dropped.
    #[arg(long, env = "SIM_WEBHOOK_RETRY_FOR", default_value = "10m", value_parser = parse_duration)]
    pub webhook_retry_for: Duration,

    /// HTTP worker threads (0: one per CPU core).
    #[arg(long, env = "SIM_WORKERS", default_value_t = 0)]
    pub workers: usize,
}

impl Default for SimConfig {
    /// The documented defaults, without reading the environment (tests rely on that).
    fn default() -> Self {
        Self {
            http_host: "0.0.0.0".to_owned(),
            http_port: DEFAULT_HTTP_PORT,
            webhook_url: None,
            templates: None,
            approval_delay: Duration::from_secs(2),
            access_token: DEFAULT_ACCESS_TOKEN.to_owned(),
            app_secret: DEFAULT_APP_SECRET.to_owned(),
            phone_number_id: DEFAULT_PHONE_NUMBER_ID.to_owned(),
            waba_id: DEFAULT_ACCOUNT_ID.to_owned(),
            display_phone_number: DEFAULT_DISPLAY_PHONE_NUMBER.to_owned(),
            senders: None,
            webhook_queue: 100_000,
            webhook_batch: 100,
            webhook_retry_for: Duration::from_secs(600),
            workers: 0,
        }
    }
}

impl SimConfig {
    /// The effective settings as `key = value` lines (the variable names in lower case),
    /// secrets redacted (`platform-sim --print-config`).
    pub fn print_config(&self) -> String {
        let text = |v: &str| format!("{v:?}");
        let secret = |variable: &str, v: &str| {
            if warden_settings::is_secret(variable) && !v.is_empty() {
                text(warden_settings::REDACTED)
            } else {
                text(v)
            }
        };
        let duration = |d: Duration| text(&warden_settings::format_duration(d));
        let entries = [
            ("SIM_HTTP_HOST", text(&self.http_host)),
            ("SIM_HTTP_PORT", self.http_port.to_string()),
            (
                "SIM_WEBHOOK_URL",
                self.webhook_target().map_or_else(String::new, text),
            ),
            (
                "SIM_TEMPLATES",
                self.templates
                    .as_ref()
                    .map_or_else(String::new, |p| text(&p.display().to_string())),
            ),
            ("SIM_APPROVAL_DELAY", duration(self.approval_delay)),
            (
                "PLATFORM_ACCESS_TOKEN",
                secret("PLATFORM_ACCESS_TOKEN", &self.access_token),
            ),
            (
                "PLATFORM_APP_SECRET",
                secret("PLATFORM_APP_SECRET", &self.app_secret),
            ),
            ("PLATFORM_PHONE_NUMBER_ID", text(&self.phone_number_id)),
            ("PLATFORM_ACCOUNT_ID", text(&self.waba_id)),
            ("SIM_DISPLAY_PHONE_NUMBER", text(&self.display_phone_number)),
            (
                "SIM_SENDERS",
                self.senders
                    .as_ref()
                    .filter(|p| !p.as_os_str().is_empty())
                    .map_or_else(String::new, |p| text(&p.display().to_string())),
            ),
            ("SIM_WEBHOOK_QUEUE", self.webhook_queue.to_string()),
            ("SIM_WEBHOOK_BATCH", self.webhook_batch.to_string()),
            ("SIM_WEBHOOK_RETRY_FOR", duration(self.webhook_retry_for)),
            ("SIM_WORKERS", self.workers.to_string()),
        ];
        let mut out = String::from(
            "# Effective platform-sim settings: defaults, then the environment, then flags.\n",
        );
        for (variable, value) in entries {
            let key = variable.to_ascii_lowercase();
            if value.is_empty() {
                out.push_str(&format!("# {key} is not set\n"));
            } else {
                out.push_str(&format!("{key} = {value}\n"));
            }
        }
        out
    }

    /// The webhook URL, treating an empty variable as unset.
    pub fn webhook_target(&self) -> Option<&str> {
        self.webhook_url
            .as_deref()
            .map(str::trim)
            .filter(|u| !u.is_empty())
    }
}

/// Why a sim duration flag did not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("invalid duration {0:?} (use e.g. 500ms, 2s, 1m)")]
    NotADuration(String),
    #[error("invalid duration unit {unit:?} in {raw:?}")]
    UnknownUnit { unit: String, raw: String },
    #[error("invalid duration {0:?}")]
    OutOfRange(String),
}

/// `1500ms`, `2s`, `1.5s`, `5m`, `1h`, or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, DurationError> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| DurationError::NotADuration(s.to_string()))?;
    let secs = match unit.trim() {
        "" | "s" | "sec" | "secs" => n,
        "ms" => n / 1000.0,
        "us" => n / 1_000_000.0,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        other => {
            return Err(DurationError::UnknownUnit {
                unit: other.to_string(),
                raw: s.to_string(),
            });
        }
    };
    if !secs.is_finite() || secs < 0.0 {
        return Err(DurationError::OutOfRange(s.to_string()));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_durations() {
        assert_eq!(parse_duration("2s").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("3").unwrap(), Duration::from_secs(3));
        assert_eq!(parse_duration("1m").unwrap(), Duration::from_secs(60));
        assert_eq!(parse_duration("0s").unwrap(), Duration::ZERO);
        assert!(parse_duration("fast").is_err());
        assert!(parse_duration("2 weeks").is_err());
    }

    #[test]
    fn print_config_redacts_the_secrets() {
        let config = SimConfig {
            access_token: "tok-1".into(),
            app_secret: "secret-2".into(),
            ..SimConfig::default()
        };
        let text = config.print_config();
        assert!(
            !text.contains("tok-1") && !text.contains("secret-2"),
            "{text}"
        );
        assert!(
            text.contains("platform_app_secret = \"<redacted>\""),
            "{text}"
        );
        assert!(text.contains("sim_http_port = 8089"), "{text}");
        assert!(text.contains("sim_approval_delay = \"2s\""), "{text}");
        assert!(text.contains("# sim_webhook_url is not set"), "{text}");
        assert!(text.contains("# sim_senders is not set"), "{text}");
        let with_file = SimConfig {
            senders: Some("/etc/sim/senders.json".into()),
            ..SimConfig::default()
        };
        assert!(
            with_file
                .print_config()
                .contains("sim_senders = \"/etc/sim/senders.json\""),
            "{}",
            with_file.print_config()
        );
    }

    #[test]
    fn clap_definition_is_valid() {
        use clap::CommandFactory;
        SimConfig::command().debug_assert();
    }
}
