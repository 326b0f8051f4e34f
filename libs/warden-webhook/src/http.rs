//! The HTTP face: GET /webhook (handshake), POST /webhook (events), /health, /metrics.
//!
//! POST order: size limit (413) -> signature over the raw bytes (401, nothing written)
//! -> parse (400) -> one transaction (503 when Postgres is unavailable) -> 200
//! `EVENT_RECEIVED`, only after the commit.
//!
//! With several senders (numbers), a POST must be signed with the app secret of a sender
//! whose number it names; only the events of the numbers sharing that secret are stored,
//! the others (another business's, or no sender's) are acknowledged and counted.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use actix_web::http::header::{ContentType, HeaderValue, RETRY_AFTER};
use actix_web::{HttpRequest, HttpResponse, web};
use chrono::Utc;
use tracing::Instrument;
use warden_core::Core;
use warden_platform::signature::{HEADER as SIGNATURE_HEADER, Signer};
use warden_service::{Dependencies, admin};

use crate::coalesce::Coalescer;
use crate::events;
use crate::ingest;
use crate::metrics;

/// Largest POST body accepted (the platform's batches stay far below it).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
/// The acknowledgement the platform expects.
pub const ACK: &str = "EVENT_RECEIVED";

/// Everything a request needs; cheap to clone (one per worker).
#[derive(Clone)]
pub struct AppState {
    core: Core,
    signers: Signers,
    verify_token: Arc<str>,
    health: admin::HealthCheck,
    /// The worker's lanes (see `coalesce`); None: each POST is its own transaction.
    coalescer: Option<Coalescer>,
}

/// Whose app secret may sign a POST: every sender's number, and each distinct secret with
/// the numbers it signs for (built once; a POST only looks them up).
#[derive(Clone)]
struct Signers {
    /// (phone_number_id, index into `secrets`), one per sender.
    numbers: Arc<Vec<(String, usize)>>,
    /// Each distinct app secret and its numbers (empty ids left out: nothing to filter by).
    secrets: Arc<Vec<(Signer, Vec<String>)>>,
}

impl Signers {
    fn new(senders: &warden_settings::Senders) -> Result<Self, MissingSecret> {
        let mut distinct: Vec<(&str, Vec<String>)> = Vec::new();
        let mut numbers = Vec::new();
        for sender in senders.all() {
            let secret = sender.app_secret.as_ref().ok_or(MissingSecret)?.expose();
            let index = distinct
                .iter()
                .position(|(known, _)| *known == secret)
                .unwrap_or_else(|| {
                    distinct.push((secret, Vec::new()));
                    distinct.len() - 1
                });
            let number = sender.phone_number_id.trim();
            if !number.is_empty() {
                distinct[index].1.push(number.to_string());
            }
            numbers.push((number.to_string(), index));
        }
        let secrets = distinct
            .into_iter()
            .map(|(secret, numbers)| (Signer::new(secret.as_bytes()), numbers))
            .collect();
        Ok(Signers {
            numbers: Arc::new(numbers),
            secrets: Arc::new(secrets),
        })
    }

    /// The numbers whose events this POST may carry: those of the app secret that made
    /// `signature`, chosen among the secrets of the numbers the body names (all secrets
    /// when it names none of ours). None: no secret of ours made it.
    fn verify(&self, body: &[u8], signature: &str) -> Option<&[String]> {
        if let [(only, numbers)] = self.secrets.as_slice() {
            return only.verify(body, signature).then_some(numbers.as_slice());
        }
        let mut candidates: Vec<usize> = Vec::new();
        for named in events::named_numbers(body) {
            if let Some((_, secret)) = self.numbers.iter().find(|(n, _)| *n == named)
                && !candidates.contains(secret)
            {
                candidates.push(*secret);
            }
        }
        if candidates.is_empty() {
            candidates = (0..self.secrets.len()).collect();
        }
        candidates
            .into_iter()
            .map(|i| &self.secrets[i])
            .find(|(signer, _)| signer.verify(body, signature))
            .map(|(_, numbers)| numbers.as_slice())
    }
}

/// `PLATFORM_APP_SECRET` is not set: the server must not start.
#[derive(Debug, thiserror::Error)]
#[error(
    "PLATFORM_APP_SECRET is not set: without it X-Hub-Signature-256 cannot be verified, so the webhook refuses to start"
)]
pub struct MissingSecret;

impl AppState {
    pub fn new(core: Core) -> Result<Self, MissingSecret> {
        crate::ingest::use_retry_policy(
            warden_core::delivery::platform_errors::RetryPolicy::from_settings(
                &core.settings().dispatch,
            ),
        );
        let platform = &core.settings().platform;
        let signers = Signers::new(&core.settings().senders())?;
        Ok(AppState {
            signers,
            verify_token: Arc::from(platform.webhook_verify_token.as_str()),
            health: admin::postgres_check(core.pg().clone()),
            core,
            coalescer: None,
        })
    }

    pub fn core(&self) -> &Core {
        &self.core
    }

    /// The same state over connection pools of the calling worker's own.
    ///
    /// actix runs each worker on its own single-threaded runtime, and a pooled
    /// connection's I/O task lives on the runtime that opened it. With one pool shared
    /// by all workers, every query hops threads twice (request -> connection task ->
    /// request), and context switches cost more than the queries. Pools built here open
    /// their connections from this worker, so a request and its connections share a
    /// thread. Call it on the worker (inside the `HttpServer` factory).
    pub fn for_worker(&self) -> AppState {
        let deps = self.core.dependencies().clone();
        let manager = warden_store::pool::manager(deps.settings.database.url());
        let pg = diesel_async::pooled_connection::bb8::Pool::builder()
            .max_size(WORKER_PG_CONNECTIONS)
            .connection_timeout(Duration::from_secs(5))
            .build_unchecked(manager);
        let redis = deps.redis.as_ref().and_then(|_| {
            let manager = bb8_redis::RedisConnectionManager::new(deps.settings.redis.url()).ok()?;
            Some(
                bb8::Pool::builder()
                    .max_size(WORKER_REDIS_CONNECTIONS)
                    // Short: the window cache is a copy, never worth waiting for.
                    .connection_timeout(Duration::from_millis(500))
                    .build_unchecked(manager),
            )
        });
        let deps = Dependencies { pg, redis, ..deps };
        let core = Core::new(deps, ingest::ACTOR);
        AppState {
            health: admin::postgres_check(core.pg().clone()),
            coalescer: Some(Coalescer::start(core.clone(), LANES_PER_WORKER)),
            core,
            signers: self.signers.clone(),
            verify_token: self.verify_token.clone(),
        }
    }
}

/// Postgres connections per HTTP worker: one per lane, one for careful mode and health.
pub const WORKER_PG_CONNECTIONS: u32 = 4;
/// Transactions a worker runs at once; concurrent POSTs beyond that share them.
pub const LANES_PER_WORKER: usize = 2;
/// Redis connections per HTTP worker (window cache writes).
const WORKER_REDIS_CONNECTIONS: u32 = 8;

/// The routes, for `App::configure` (tests build the real app with it).
pub fn app_config(state: AppState) -> impl FnOnce(&mut web::ServiceConfig) {
    move |cfg: &mut web::ServiceConfig| {
        cfg.app_data(web::Data::new(state))
            .app_data(web::PayloadConfig::new(MAX_BODY_BYTES))
            .route("/webhook", web::get().to(verify))
            .route("/webhook", web::post().to(receive))
            .route("/health", web::get().to(health))
            .route("/metrics", web::get().to(admin::metrics));
    }
}

fn text(mut builder: actix_web::HttpResponseBuilder, body: impl Into<String>) -> HttpResponse {
    builder
        .content_type(ContentType::plaintext())
        .body(body.into())
}

/// GET /webhook: the subscription handshake.
async fn verify(state: web::Data<AppState>, req: HttpRequest) -> HttpResponse {
    let query = web::Query::<HashMap<String, String>>::from_query(req.query_string());
    let Ok(query) = query else {
        return text(HttpResponse::Forbidden(), "Forbidden");
    };
    let mode_ok = query.get("hub.mode").map(String::as_str) == Some("subscribe");
    let token_ok = query
        .get("hub.verify_token")
        .is_some_and(|t| constant_time_eq(t.as_bytes(), state.verify_token.as_bytes()));
    if mode_ok && token_ok {
        let challenge = query.get("hub.challenge").cloned().unwrap_or_default();
        text(HttpResponse::Ok(), challenge)
    } else {
        tracing::warn!(mode_ok, token_ok, "webhook verification refused");
        text(HttpResponse::Forbidden(), "Forbidden")
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// POST /webhook: verify, parse, store, acknowledge.
async fn receive(state: web::Data<AppState>, req: HttpRequest, body: web::Bytes) -> HttpResponse {
    let signature = req
        .headers()
        .get(SIGNATURE_HEADER)
        .and_then(|v| v.to_str().ok());
    let Some(signature) = signature else {
        metrics::SIGNATURE_FAILURES.inc();
        tracing::warn!(
            bytes = body.len(),
            "webhook POST without X-Hub-Signature-256"
        );
        return text(HttpResponse::Unauthorized(), "Unauthorized");
    };
    let Some(ours) = state.signers.verify(&body, signature) else {
        metrics::SIGNATURE_FAILURES.inc();
        tracing::warn!(bytes = body.len(), "webhook POST with a wrong signature");
        return text(HttpResponse::Unauthorized(), "Unauthorized");
    };
    // No number configured at all (an empty PLATFORM_PHONE_NUMBER_ID): nothing is filtered.
    let filter = (!ours.is_empty()).then_some(ours);
    let extracted = match events::extract_for(&body, Utc::now(), filter) {
        Ok(x) => x,
        Err(e) => {
            tracing::info!(error = %e, bytes = body.len(), "webhook POST refused");
            return text(HttpResponse::BadRequest(), format!("Bad Request: {e}"));
        }
    };
    for s in &extracted.skipped {
        tracing::debug!(reason = s.reason, detail = %s.detail, "webhook item skipped");
    }
    metrics::ignored(extracted.skipped.len() as u64);
    metrics::REPLAYS.inc_by(extracted.duplicates as u64);
    if extracted.foreign > 0 {
        tracing::info!(
            events = extracted.foreign,
            "events for a business number we do not serve; acknowledged, not stored"
        );
        metrics::FOREIGN.inc_by(extracted.foreign);
    }

    let span = tracing::info_span!("webhook.post", events = extracted.events.len());
    let stored = match &state.coalescer {
        Some(lanes) => lanes.store(extracted.events).instrument(span.clone()).await,
        None => ingest::ingest(&state.core, extracted.events)
            .instrument(span.clone())
            .await
            .map(|_| ()),
    };
    match stored {
        Ok(()) => text(HttpResponse::Ok(), ACK),
        Err(e) => {
            tracing::error!(parent: &span, error = %e, "webhook events not stored; answering 503");
            let mut res = text(HttpResponse::ServiceUnavailable(), "Service Unavailable");
            res.headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from_static("5"));
            res
        }
    }
}

async fn health(state: web::Data<AppState>) -> HttpResponse {
    match (state.health)().await {
        Ok(()) => text(HttpResponse::Ok(), "OK"),
        Err(reason) => {
            tracing::warn!(%reason, "health check failed");
            text(HttpResponse::ServiceUnavailable(), reason.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::constant_time_eq;

    #[test]
    fn token_comparison() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
        assert!(constant_time_eq(b"", b""));
    }
}
