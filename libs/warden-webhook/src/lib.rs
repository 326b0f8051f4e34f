//! The webhook server: the door the platform knocks on.

use actix_web::middleware::from_fn;
use actix_web::{App, HttpServer, web};
use warden_service::{Dependencies, admin};

/// Serve the webhook endpoints on SERVER_HTTP_PORT until SIGTERM/SIGINT.
pub async fn run(binary: &'static str, deps: Dependencies) -> anyhow::Result<()> {
    let listener = admin::bind(binary, "SERVER_HTTP_PORT", deps.settings.http_port);
    tracing::info!(addr = %listener.local_addr()?, "webhook HTTP listening");
    let check = web::Data::new(admin::postgres_check(deps.pg.clone()));
    let server = HttpServer::new(move || {
        App::new()
            .app_data(check.clone())
            .wrap(from_fn(admin::track_requests))
            .route("/health", web::get().to(health))
            .route("/metrics", web::get().to(admin::metrics))
    })
    .disable_signals()
    .listen(listener)?
    .run();
    let handle = server.handle();
    let served = tokio::spawn(server);
    warden_service::shutdown_signal().await;
    handle.stop(true).await;
    served.await??;
    tracing::info!("stopped");
    Ok(())
}

async fn health(check: web::Data<admin::HealthCheck>) -> actix_web::HttpResponse {
    match (check.get_ref())().await {
        Ok(()) => actix_web::HttpResponse::Ok()
            .content_type("text/plain")
            .body("OK"),
        Err(reason) => actix_web::HttpResponse::ServiceUnavailable().body(reason),
    }
}
