//! HTTP plumbing shared by the processes that listen: request metrics middleware,
//! `/metrics`, and the admin server (`/health`, `/metrics`) of dispatcher and scheduler.

use std::future::Future;
use std::net::TcpListener;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::{Next, from_fn};
use actix_web::{App, HttpResponse, HttpServer, web};

/// Why a process cannot do its work (the body of a 503 from `/health`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unhealthy(pub String);

impl From<String> for Unhealthy {
    fn from(reason: String) -> Self {
        Unhealthy(reason)
    }
}

impl From<&str> for Unhealthy {
    fn from(reason: &str) -> Self {
        Unhealthy(reason.to_string())
    }
}

/// A health probe: Ok when the process can do its work, Err(why) otherwise.
pub type HealthCheck =
    Arc<dyn Fn() -> Pin<Box<dyn Future<Output = Result<(), Unhealthy>> + Send>> + Send + Sync>;

/// Count and time every request by its route pattern (not the raw path: bounded labels).
pub async fn track_requests(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let started = Instant::now();
    let method = req.method().to_string();
    let route = req
        .match_pattern()
        .unwrap_or_else(|| "unmatched".to_string());
    let res = next.call(req).await?;
    warden_telemetry::metrics::observe_http(
        &method,
        &route,
        res.status().as_u16(),
        started.elapsed().as_secs_f64(),
    );
    Ok(res)
}

/// GET /metrics: the process's Prometheus registry in text format.
pub async fn metrics() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(warden_telemetry::metrics::render())
}

async fn health(check: web::Data<HealthCheck>) -> HttpResponse {
    match (check.get_ref())().await {
        Ok(()) => HttpResponse::Ok().content_type("text/plain").body("OK"),
        Err(reason) => {
            tracing::warn!(%reason, "health check failed");
            HttpResponse::ServiceUnavailable()
                .content_type("text/plain")
                .body(reason.0)
        }
    }
}

/// Serve `/health` and `/metrics` on `listener` until the returned server is stopped.
pub fn serve(listener: TcpListener, check: HealthCheck) -> std::io::Result<actix_web::dev::Server> {
    let check = web::Data::new(check);
    let server = HttpServer::new(move || {
        App::new()
            .app_data(check.clone())
            .wrap(from_fn(track_requests))
            .route("/health", web::get().to(health))
            .route("/metrics", web::get().to(metrics))
    })
    .workers(1)
    .disable_signals()
    .listen(listener)?
    .run();
    Ok(server)
}

/// A health check that runs `SELECT 1` on the pool.
pub fn postgres_check(pg: warden_store::PgPool) -> HealthCheck {
    Arc::new(move || {
        let pg = pg.clone();
        Box::pin(async move {
            let mut conn = pg
                .get()
                .await
                .map_err(|e| Unhealthy(format!("postgres: {e}")))?;
            warden_store::pool::ping(&mut conn)
                .await
                .map_err(|e| Unhealthy(format!("postgres: {e}")))
        })
    })
}

/// Bind `0.0.0.0:port`; the error names the variable that chose the port.
pub fn bind(variable: &'static str, port: u16) -> Result<TcpListener, crate::StartError> {
    TcpListener::bind(("0.0.0.0", port)).map_err(|source| crate::StartError::Listen {
        variable,
        port,
        source,
    })
}

/// The admin listener of a process: `ADMIN_HTTP_PORT` from `settings`, else `default_port`.
pub fn listener(
    settings: &warden_settings::Settings,
    default_port: u16,
) -> Result<TcpListener, crate::StartError> {
    bind(
        "ADMIN_HTTP_PORT",
        settings.admin_port.unwrap_or(default_port),
    )
}
