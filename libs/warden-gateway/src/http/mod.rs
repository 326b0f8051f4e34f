//! The gateway over Streamable HTTP (`mcp-gateway --http`): `/mcp` (rmcp's Streamable
//! HTTP service), `/health` and `/metrics` beside it.
//!
//! rmcp serves both protocol revisions: 2026-07-28 requests statelessly (any replica
//! answers; it validates `MCP-Protocol-Version` / `Mcp-Method` / `Mcp-Name` against the
//! body and answers unsupported versions with the supported list), 2025-11-25 clients with
//! `initialize` and `Mcp-Session-Id` sessions whose state is kept in Redis
//! ([`session_store`]) so another replica can take a session over. It also refuses
//! `Origin` and `Host` values outside `MCP_ALLOWED_ORIGINS` / `MCP_ALLOWED_HOSTS` (403).
//!
//! This module adds what rmcp leaves to the server: authentication ([`auth`]) before
//! anything runs, the [`Caller`] in the request's extensions, and the process endpoints.

pub mod auth;
pub mod session_store;
pub(crate) mod session_subscriptions;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use warden_core::RedisPool;
use warden_settings::{McpHttp, McpHttpAuth};

use crate::Gateway;
pub use crate::auth::AuthFailure;
use crate::caller::Caller;
pub use auth::{Authenticate, NoAuth};

type Body = BoxBody<Bytes, Infallible>;
type McpService = StreamableHttpService<Gateway, LocalSessionManager>;

/// The path agents connect to.
pub const MCP_PATH: &str = "/mcp";

/// Where OAuth clients discover the authorization server (RFC 9728).
pub const PROTECTED_RESOURCE_PATH: &str = "/.well-known/oauth-protected-resource";

/// How long in-flight requests may take to finish after SIGTERM.
const DRAIN: Duration = Duration::from_secs(10);

/// Why the HTTP transport could not start.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("cannot listen on MCP_HTTP_ADDR {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("the HTTP transport keeps legacy sessions in Redis, and this gateway has no Redis")]
    NoRedis,
}

pub use warden_service::admin::HealthCheck;

/// Everything one request needs; shared by every connection.
struct App {
    mcp: McpService,
    authenticator: Box<dyn Authenticate>,
    health: HealthCheck,
}

/// The transport, bound and ready to serve.
pub struct HttpServer {
    listener: TcpListener,
    app: Arc<App>,
    cancel: CancellationToken,
}

impl HttpServer {
    /// Bind `settings.addr` and build the `/mcp` service. `authenticator` checks every
    /// `/mcp` request; see [`authenticator_for`].
    pub async fn bind(
        gateway: Gateway,
        settings: &McpHttp,
        redis: Option<RedisPool>,
        authenticator: Box<dyn Authenticate>,
        health: HealthCheck,
    ) -> Result<HttpServer, HttpError> {
        let redis = redis.ok_or(HttpError::NoRedis)?;
        let cancel = CancellationToken::new();
        let mut config = StreamableHttpServerConfig::default()
            .with_cancellation_token(cancel.clone())
            .with_allowed_origins(settings.allowed_origins.clone())
            .enforce_origin_validation()
            // A stateless request whose handler emits nothing before its result is
            // answered as plain JSON: an SSE stream per call (chunked body, keep-alive
            // timer, a second write) cost more than a compliance check itself. A handler
            // that sends progress or a log first still gets a stream (rmcp falls back).
            .with_json_response(true);
        config = if settings.allowed_hosts.is_empty() {
            config.disable_allowed_hosts()
        } else {
            config.with_allowed_hosts(settings.allowed_hosts.clone())
        };
        config.session_store = Some(Arc::new(session_store::RedisSessionStore::new(redis)));
        let mcp = StreamableHttpService::new(
            move || Ok(gateway.for_session()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let listener =
            TcpListener::bind(settings.addr)
                .await
                .map_err(|source| HttpError::Bind {
                    addr: settings.addr,
                    source,
                })?;
        Ok(HttpServer {
            listener,
            app: Arc::new(App {
                mcp,
                authenticator,
                health,
            }),
            cancel,
        })
    }

    /// Where it listens (the real port when `MCP_HTTP_ADDR` named port 0).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serve until `stop` resolves, then let in-flight requests finish (bounded).
    pub async fn serve(self, stop: impl std::future::Future<Output = ()>) {
        let graceful = hyper_util::server::graceful::GracefulShutdown::new();
        tokio::pin!(stop);
        loop {
            tokio::select! {
                accepted = self.listener.accept() => {
                    let (stream, _) = match accepted {
                        Ok(a) => a,
                        Err(e) => {
                            tracing::warn!(error = %e, "accept failed");
                            continue;
                        }
                    };
                    // Small JSON-RPC answers go out at once (no 40 ms delayed-ACK wait).
                    if let Err(e) = stream.set_nodelay(true) {
                        tracing::debug!(error = %e, "TCP_NODELAY not set");
                    }
                    let app = self.app.clone();
                    let service = hyper::service::service_fn(move |req| {
                        let app = app.clone();
                        async move { Ok::<_, Infallible>(app.route(req).await) }
                    });
                    let conn = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service);
                    let conn = graceful.watch(conn);
                    tokio::spawn(async move {
                        if let Err(e) = conn.await {
                            tracing::debug!(error = %e, "connection ended");
                        }
                    });
                }
                _ = &mut stop => break,
            }
        }
        // Ends open SSE streams and sessions, so draining does not wait on them.
        self.cancel.cancel();
        if tokio::time::timeout(DRAIN, graceful.shutdown())
            .await
            .is_err()
        {
            tracing::warn!("in-flight requests did not finish within {DRAIN:?}");
        }
    }
}

impl App {
    async fn route(&self, req: Request<Incoming>) -> Response<Body> {
        let started = Instant::now();
        let method = req.method().to_string();
        let (route, response) = match req.uri().path() {
            MCP_PATH => (MCP_PATH, self.mcp(req).await),
            "/health" => ("/health", self.health().await),
            PROTECTED_RESOURCE_PATH => (PROTECTED_RESOURCE_PATH, self.resource_metadata()),
            "/metrics" => (
                "/metrics",
                text(
                    StatusCode::OK,
                    "text/plain; version=0.0.4; charset=utf-8",
                    warden_telemetry::metrics::render(),
                ),
            ),
            _ => (
                "unmatched",
                text(StatusCode::NOT_FOUND, "text/plain", "Not Found"),
            ),
        };
        warden_telemetry::metrics::observe_http(
            &method,
            route,
            response.status().as_u16(),
            started.elapsed().as_secs_f64(),
        );
        response
    }

    /// Authenticate, then hand the request (with its [`Caller`]) to rmcp.
    async fn mcp(&self, mut req: Request<Incoming>) -> Response<Body> {
        let authorization = req
            .headers()
            .get(header::AUTHORIZATION)
            .map(|v| v.to_str().unwrap_or_default().to_string());
        match self
            .authenticator
            .authenticate(authorization.as_deref())
            .await
        {
            Ok(caller) => {
                req.extensions_mut().insert::<Caller>(caller);
                self.mcp.handle(req).await
            }
            Err(failure) => refusal(failure),
        }
    }

    /// RFC 9728 metadata when OAuth is configured; 404 otherwise.
    fn resource_metadata(&self) -> Response<Body> {
        match self.authenticator.protected_resource_metadata() {
            Some(doc) => text(StatusCode::OK, "application/json", doc.to_string()),
            None => text(StatusCode::NOT_FOUND, "text/plain", "Not Found"),
        }
    }

    async fn health(&self) -> Response<Body> {
        match (self.health)().await {
            Ok(()) => text(StatusCode::OK, "text/plain", "OK"),
            Err(reason) => {
                tracing::warn!(%reason, "health check failed");
                text(StatusCode::SERVICE_UNAVAILABLE, "text/plain", reason.0)
            }
        }
    }
}

fn text(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response<Body> {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, content_type)
        .body(Full::new(body.into()).boxed())
        .expect("valid response")
}

fn refusal(failure: AuthFailure) -> Response<Body> {
    let status = StatusCode::from_u16(failure.status).unwrap_or(StatusCode::UNAUTHORIZED);
    let mut response = text(status, "text/plain; charset=utf-8", failure.body);
    if let Some(value) = Some(failure.www_authenticate)
        .filter(|v| !v.is_empty())
        .and_then(|v| http::HeaderValue::from_str(&v).ok())
    {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// The authenticator `MCP_HTTP_AUTH` asks for (API keys are checked against `pg`).
pub fn authenticator_for(
    mode: McpHttpAuth,
    pg: warden_store::PgPool,
    identity: &warden_settings::Identity,
) -> Box<dyn Authenticate> {
    auth::for_mode(mode, pg, identity)
}
