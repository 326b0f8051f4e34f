//! The OAuth 2.1 resource server: the issuer's signing keys (JWKS), fetched from
//! `MCP_OAUTH_JWKS_URL` or the `jwks_uri` of the issuer's metadata (RFC 8414, then OpenID
//! discovery), cached, and fetched again when a token names a key we do not know (key
//! rotation) — at most once per [`REFETCH_EVERY`], so a flood of made-up `kid`s cannot
//! turn into a flood of requests to the issuer.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Mutex;
use warden_settings::OAuth;

use super::jwt::{self, Claims, JwkSet, JwtError};

/// The shortest time between two fetches of the JWKS.
pub const REFETCH_EVERY: Duration = Duration::from_secs(5);
/// Keys older than this are fetched again before use (rotation without a new `kid` race).
pub const MAX_AGE: Duration = Duration::from_secs(3600);

#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    #[error(transparent)]
    Token(#[from] JwtError),
    /// The issuer's keys could not be fetched (a server-side problem, not the caller's).
    #[error("the authorization server's keys are unavailable: {0}")]
    Keys(KeysError),
}

/// Why the issuer's keys could not be fetched; each names the URL that failed.
#[derive(Debug, thiserror::Error)]
pub enum KeysError {
    #[error("{url}: {error}")]
    Request { url: String, error: reqwest::Error },
    #[error("{url}: HTTP {status}")]
    Status {
        url: String,
        status: reqwest::StatusCode,
    },
    #[error("{url}: not a JWKS: {error}")]
    NotJwks { url: String, error: reqwest::Error },
    /// No metadata URL gave a `jwks_uri`: what each answered.
    #[error("{}", tried.join("; "))]
    NoJwksUri { tried: Vec<String> },
}

struct Cached {
    keys: Option<Arc<JwkSet>>,
    fetched_at: Option<Instant>,
    jwks_url: Option<String>,
}

pub struct OAuthVerifier {
    config: OAuth,
    http: reqwest::Client,
    cache: Mutex<Cached>,
}

impl OAuthVerifier {
    pub fn new(config: OAuth) -> OAuthVerifier {
        // reqwest is built without a default rustls provider (idempotent).
        warden_service::install_crypto_provider();
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .build()
            .unwrap_or_default();
        OAuthVerifier {
            cache: Mutex::new(Cached {
                keys: None,
                fetched_at: None,
                jwks_url: config.jwks_url.clone(),
            }),
            config,
            http,
        }
    }

    pub fn config(&self) -> &OAuth {
        &self.config
    }

    /// Verify an access token: signature by one of the issuer's keys, `iss`, `aud`, `exp`,
    /// `nbf`.
    pub async fn verify(&self, token: &str) -> Result<Claims, OAuthError> {
        let now = chrono::Utc::now().timestamp();
        let keys = self.keys(false).await?;
        match jwt::verify(
            token,
            &keys,
            &self.config.issuer,
            &self.config.audience,
            now,
        ) {
            Err(JwtError::UnknownKey(_)) => {
                // Perhaps the issuer rotated its keys: look again (rate-limited).
                let keys = self.keys(true).await?;
                Ok(jwt::verify(
                    token,
                    &keys,
                    &self.config.issuer,
                    &self.config.audience,
                    now,
                )?)
            }
            other => Ok(other?),
        }
    }

    /// The cached keys; fetched when missing, too old, or (`unknown_kid`) when a token
    /// named a key we lack and the last fetch is at least [`REFETCH_EVERY`] ago.
    async fn keys(&self, unknown_kid: bool) -> Result<Arc<JwkSet>, OAuthError> {
        let mut cache = self.cache.lock().await;
        let age = cache.fetched_at.map(|t| t.elapsed());
        let stale = match (&cache.keys, age) {
            (Some(_), Some(age)) if unknown_kid => age >= REFETCH_EVERY,
            (Some(_), Some(age)) => age >= MAX_AGE,
            _ => age.is_none_or(|a| a >= Duration::from_secs(1)),
        };
        if !stale && let Some(keys) = &cache.keys {
            return Ok(Arc::clone(keys));
        }
        cache.fetched_at = Some(Instant::now());
        match self.fetch(&mut cache).await {
            Ok(keys) => {
                let keys = Arc::new(keys);
                cache.keys = Some(Arc::clone(&keys));
                Ok(keys)
            }
            Err(e) => {
                tracing::warn!(error = %e, issuer = %self.config.issuer, "could not fetch the OAuth issuer's keys");
                // Keep serving with the keys we had.
                cache.keys.clone().ok_or(OAuthError::Keys(e))
            }
        }
    }

    async fn fetch(&self, cache: &mut Cached) -> Result<JwkSet, KeysError> {
        let url = match &cache.jwks_url {
            Some(u) => u.clone(),
            None => {
                let u = self.discover_jwks_url().await?;
                cache.jwks_url = Some(u.clone());
                u
            }
        };
        let resp = self
            .http
            .get(&url)
            .send()
            .await
            .map_err(|error| KeysError::Request {
                url: url.clone(),
                error,
            })?;
        if !resp.status().is_success() {
            return Err(KeysError::Status {
                url,
                status: resp.status(),
            });
        }
        resp.json::<JwkSet>()
            .await
            .map_err(|error| KeysError::NotJwks { url, error })
    }

    /// `jwks_uri` from the issuer's metadata: RFC 8414 first, then OpenID discovery.
    async fn discover_jwks_url(&self) -> Result<String, KeysError> {
        let issuer = self.config.issuer.trim_end_matches('/');
        let mut tried = Vec::new();
        for url in metadata_urls(issuer) {
            match self.http.get(&url).send().await {
                Ok(resp) if resp.status().is_success() => {
                    if let Ok(doc) = resp.json::<serde_json::Value>().await
                        && let Some(jwks) = doc["jwks_uri"].as_str()
                    {
                        return Ok(jwks.to_string());
                    }
                    tried.push(format!("{url}: no jwks_uri"));
                }
                Ok(resp) => tried.push(format!("{url}: HTTP {}", resp.status())),
                Err(e) => tried.push(format!("{url}: {e}")),
            }
        }
        Err(KeysError::NoJwksUri { tried })
    }
}

/// Where an issuer publishes its metadata: RFC 8414 puts the well-known segment before
/// the issuer's path; OpenID discovery appends it.
pub fn metadata_urls(issuer: &str) -> Vec<String> {
    let issuer = issuer.trim_end_matches('/');
    let (origin, path) = match issuer.find("://").map(|i| i + 3) {
        Some(start) => match issuer[start..].find('/') {
            Some(slash) => issuer.split_at(start + slash),
            None => (issuer, ""),
        },
        None => (issuer, ""),
    };
    vec![
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!("{issuer}/.well-known/openid-configuration"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_urls_follow_both_specs() {
        assert_eq!(
            metadata_urls("https://auth.example.com/tenant1/"),
            vec![
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            metadata_urls("https://auth.example.com")[0],
            "https://auth.example.com/.well-known/oauth-authorization-server"
        );
    }
}
