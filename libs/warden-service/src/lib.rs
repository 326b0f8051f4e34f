//! What every Warden binary does before its real work: load settings (exit 2 on a bad
//! value), start telemetry, reach Postgres/Redis/NATS (exit 1 with one clear line when one
//! is unreachable), run migrations and seeds, and later stop cleanly on SIGTERM/SIGINT.

pub mod admin;
pub mod platform;
pub mod policies;
pub mod redis_pool;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use warden_rules::policy::PolicySet;
use warden_settings::Settings;
use warden_store::PgPool;
use warden_stream::DeliveryStream;
use warden_telemetry::TelemetryGuard;

pub use redis_pool::RedisPool;

/// Exit codes shared by every binary.
pub mod exit {
    /// Bad or missing configuration (a variable or the policy file).
    pub const CONFIG: i32 = 2;
    /// A dependency (Postgres, Redis, NATS) is unreachable or start-up failed.
    pub const DEPENDENCY: i32 = 1;
}

/// Print one line to stderr and exit. Used before and instead of a panic backtrace.
pub fn die(binary: &str, code: i32, message: impl std::fmt::Display) -> ! {
    let line = message
        .to_string()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    tracing::error!(binary, exit_code = code, "{line}");
    eprintln!("{binary}: {line}");
    std::process::exit(code)
}

/// rustls needs exactly one crypto provider; reqwest and async-nats would each bring one.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Settings and telemetry: the first two steps of every `main`.
pub fn bootstrap(
    binary: &'static str,
    config_file: Option<&Path>,
) -> (Arc<Settings>, TelemetryGuard) {
    install_crypto_provider();
    let settings = Settings::load(config_file).unwrap_or_else(|e| die(binary, exit::CONFIG, e));
    let guard = warden_telemetry::init(binary, settings.otlp_endpoint.as_deref())
        .unwrap_or_else(|e| die(binary, exit::CONFIG, format!("telemetry: {e}")));
    (Arc::new(settings), guard)
}

/// Which dependencies a process needs at start-up.
#[derive(Clone, Copy, Debug)]
pub struct Needs {
    pub redis: bool,
    pub nats: bool,
    pub pool_size: u32,
}

/// The connected dependencies of a process (the app state's raw parts).
#[derive(Clone)]
pub struct Dependencies {
    pub settings: Arc<Settings>,
    pub pg: PgPool,
    pub redis: Option<RedisPool>,
    pub stream: Option<DeliveryStream>,
    pub policies: Arc<PolicySet>,
}

/// Load the policy file, reach every dependency, migrate and seed. Exits the process with
/// one line on any failure, so binaries never show a panic for an operator's mistake.
pub async fn start(binary: &'static str, settings: Arc<Settings>, needs: Needs) -> Dependencies {
    let (policies, seeds) = policies::load(&settings.policies_path)
        .unwrap_or_else(|e| die(binary, exit::CONFIG, format!("POLICIES_PATH: {e}")));
    let wait = Duration::from_secs(10);
    let pg = warden_store::connect(&settings.database, needs.pool_size, wait)
        .await
        .unwrap_or_else(|e| die(binary, exit::DEPENDENCY, e));
    let report = warden_store::prepare(&settings.database, seeds)
        .await
        .unwrap_or_else(|e| die(binary, exit::DEPENDENCY, e));
    tracing::info!(
        migrations_applied = report.migrations_applied,
        error_codes = report.error_codes,
        pricing_rows = report.pricing_rows,
        policies = report.policies,
        "database ready"
    );
    let redis = if needs.redis {
        Some(
            redis_pool::connect(&settings.redis, wait)
                .await
                .unwrap_or_else(|e| die(binary, exit::DEPENDENCY, e)),
        )
    } else {
        None
    };
    let stream = if needs.nats {
        Some(
            DeliveryStream::connect(&settings)
                .await
                .unwrap_or_else(|e| die(binary, exit::DEPENDENCY, e)),
        )
    } else {
        None
    };
    Dependencies {
        settings,
        pg,
        redis,
        stream,
        policies: Arc::new(policies),
    }
}

/// Resolves on SIGTERM or SIGINT.
pub async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("SIGTERM handler");
        tokio::select! {
            _ = ctrl_c => {},
            _ = term.recv() => {},
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
    tracing::info!("shutdown signal received");
}
