//! Consumes the delivery stream, rate-limits and calls the platform.

use warden_service::{Dependencies, admin};

/// ADMIN_HTTP_PORT default (CONTRACT.md).
pub const DEFAULT_ADMIN_PORT: u16 = 9090;

/// Serve `/health` and `/metrics` and work until SIGTERM/SIGINT.
pub async fn run(binary: &'static str, deps: Dependencies) -> anyhow::Result<()> {
    let settings = deps.settings.clone();
    let listener = admin::bind(
        binary,
        "ADMIN_HTTP_PORT",
        settings.admin_port.unwrap_or(DEFAULT_ADMIN_PORT),
    );
    tracing::info!(addr = %listener.local_addr()?, "admin HTTP listening");
    let server = admin::serve(listener, admin::postgres_check(deps.pg.clone()))?;
    let handle = server.handle();
    let served = tokio::spawn(server);
    warden_service::shutdown_signal().await;
    handle.stop(true).await;
    served.await??;
    tracing::info!("stopped");
    Ok(())
}
