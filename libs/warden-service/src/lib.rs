//! Start-up wiring shared by every binary, above the core: load settings, start telemetry,
//! reach Postgres/Redis/NATS, run migrations and seeds, and later stop cleanly on
//! SIGTERM/SIGINT. Nothing here exits the process: failures are a [`StartError`], whose
//! [`Failure`] kind the binaries turn into their exit codes.

pub mod admin;
mod error;
pub mod platform;
pub mod policies;
pub mod redis_pool;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

pub use warden_settings::Settings;
use warden_stream::DeliveryStream;
use warden_telemetry::TelemetryGuard;

pub use error::{Failure, StartError};
pub use warden_core::{Dependencies, RedisPool};
pub use warden_telemetry::install_crypto_provider;

/// Exit codes shared by every binary (docs/operations.md, Processes); the binaries choose them.
pub mod exit {
    /// Bad or missing configuration (a variable or the policy file).
    pub const CONFIG: i32 = 2;
    /// A dependency (Postgres, Redis, NATS) is unreachable or start-up failed.
    pub const DEPENDENCY: i32 = 1;
}

/// The settings tree (defaults, `config_file`, environment), every problem reported.
pub fn load_settings(config_file: Option<&Path>) -> Result<Arc<Settings>, StartError> {
    install_crypto_provider();
    Ok(Arc::new(Settings::load(config_file)?))
}

/// JSON logs on stderr and, when configured, OTLP traces.
pub fn telemetry(binary: &'static str, settings: &Settings) -> Result<TelemetryGuard, StartError> {
    warden_telemetry::init(binary, settings.otlp_endpoint.as_deref()).map_err(StartError::Telemetry)
}

/// Print `error` as the operator sees it: one line per problem, each `binary: problem`
/// (to stderr and to the log). The binary then exits with the code it chose.
pub fn report(binary: &str, code: i32, error: &StartError) {
    for line in error.lines() {
        tracing::error!(binary, exit_code = code, "{line}");
        eprintln!("{binary}: {line}");
    }
}

/// Which dependencies a process needs at start-up.
#[derive(Clone, Copy, Debug)]
pub struct Needs {
    pub redis: bool,
    pub nats: bool,
    pub pool_size: u32,
}

/// Load the policy file, reach every dependency, migrate and seed. Each failure is one
/// [`StartError`] naming what failed, so binaries never show a panic for an operator's
/// mistake.
pub async fn start(settings: Arc<Settings>, needs: Needs) -> Result<Dependencies, StartError> {
    let (policies, seeds, _) =
        policies::load_configured(&settings.policies_path, settings.policies_path_set)
            .map_err(StartError::Policies)?;
    let card = warden_core::account::rate_card::load(settings.pricing_path.as_deref())
        .map_err(StartError::Pricing)?;
    let wait = Duration::from_secs(10);
    let pg = warden_store::connect(&settings.database, needs.pool_size, wait).await?;
    let cards = card.cards.len();
    let report = warden_store::prepare_with_card(&settings.database, seeds, card).await?;
    tracing::info!(
        pricing_path = %settings.pricing_path.as_ref().map_or("built-in".to_string(), |p| p.display().to_string()),
        cards,
        rows = report.pricing_rows,
        "rate card installed"
    );
    tracing::info!(
        migrations_applied = report.migrations_applied,
        error_codes = report.error_codes,
        pricing_rows = report.pricing_rows,
        policies = report.policies,
        "database ready"
    );
    let redis = if needs.redis {
        Some(redis_pool::connect(&settings.redis, wait).await?)
    } else {
        None
    };
    let stream = if needs.nats {
        Some(DeliveryStream::connect(&settings).await?)
    } else {
        None
    };
    Ok(Dependencies {
        settings,
        pg,
        redis,
        stream,
        policies: Arc::new(policies),
    })
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
