//! Why a process could not start, or stopped with an error.

use warden_core::account::rate_card::PricingFileError;
use warden_core::deps::RedisConnectError;
use warden_core::policy_file::PolicyFileError;
use warden_settings::SettingsError;
use warden_store::StoreError;
use warden_stream::StreamError;

/// Whose fault a [`StartError`] is: the binaries map it to an exit code
/// (configuration 2, dependency 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// A bad or missing setting, or a bad policy file: the operator must fix it.
    Config,
    /// Postgres, Redis or NATS unreachable, a port taken, or the process failed later.
    Dependency,
}

impl Failure {
    /// The exit code a binary uses for it (2 configuration, 1 dependency; docs/operations.md).
    pub fn exit_code(self) -> i32 {
        match self {
            Failure::Config => crate::exit::CONFIG,
            Failure::Dependency => crate::exit::DEPENDENCY,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{0}")]
    Settings(#[from] SettingsError),
    #[error("telemetry: {0}")]
    Telemetry(anyhow::Error),
    #[error("POLICIES_PATH: {0}")]
    Policies(PolicyFileError),
    #[error("PRICING_PATH: {0}")]
    Pricing(PricingFileError),
    /// Another configuration problem a service found before it started (e.g. the
    /// webhook's missing app secret).
    #[error("{0}")]
    Config(Box<dyn std::error::Error + Send + Sync>),
    #[error("{0}")]
    Postgres(#[from] StoreError),
    #[error("{0}")]
    Redis(#[from] RedisConnectError),
    #[error("{0}")]
    Nats(#[from] StreamError),
    #[error("{variable}: cannot listen on port {port}: {source}")]
    Listen {
        variable: &'static str,
        port: u16,
        source: std::io::Error,
    },
    /// The process started, then failed.
    #[error("{0:#}")]
    Failed(#[from] anyhow::Error),
}

impl StartError {
    /// A configuration error found by a service (exit code 2).
    pub fn config(error: impl std::error::Error + Send + Sync + 'static) -> StartError {
        StartError::Config(Box::new(error))
    }

    pub fn failure(&self) -> Failure {
        match self {
            StartError::Settings(_)
            | StartError::Telemetry(_)
            | StartError::Policies(_)
            | StartError::Pricing(_)
            | StartError::Config(_) => Failure::Config,
            StartError::Postgres(_)
            | StartError::Redis(_)
            | StartError::Nats(_)
            | StartError::Listen { .. }
            | StartError::Failed(_) => Failure::Dependency,
        }
    }

    /// What the operator reads: one line per settings problem, else one line (whitespace,
    /// newlines included, collapsed).
    pub fn lines(&self) -> Vec<String> {
        let lines = match self {
            StartError::Settings(e) => e.problems(),
            other => vec![other.to_string()],
        };
        lines
            .iter()
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn settings_problems_are_one_line_each_and_a_config_failure() {
        let env: HashMap<String, String> = [("TIER", "gold"), ("DB_PORT", "x")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let err =
            StartError::from(warden_settings::Settings::from_sources(None, &env).unwrap_err());
        assert_eq!(err.failure(), Failure::Config);
        let lines = err.lines();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].starts_with("TIER: "), "{lines:?}");
        assert!(lines[1].starts_with("DB_PORT: "), "{lines:?}");
    }

    #[test]
    fn other_failures_are_one_line() {
        let err = StartError::Failed(anyhow::anyhow!("first\nsecond").context("outer"));
        assert_eq!(err.failure(), Failure::Dependency);
        assert_eq!(err.lines(), vec!["outer: first second".to_string()]);
        let listen = StartError::Listen {
            variable: "ADMIN_HTTP_PORT",
            port: 9090,
            source: std::io::Error::from(std::io::ErrorKind::AddrInUse),
        };
        assert_eq!(listen.failure(), Failure::Dependency);
        assert!(listen.lines()[0].starts_with("ADMIN_HTTP_PORT: cannot listen on port 9090: "));
    }
}
