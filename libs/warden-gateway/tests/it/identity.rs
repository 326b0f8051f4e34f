//! Authentication of HTTP callers, transport-independent: API keys (suspend/revoke seen
//! by every replica within a second) and OAuth access tokens from a local test issuer
//! (forged, expired, wrong audience, wrong issuer, insufficient scope, key rotation).

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{
    ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair, RSA_PKCS1_SHA256, RsaKeyPair,
    RsaPublicKeyComponents,
};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use warden_core::agents::{self, AgentStatus, Guardrails};
use warden_gateway::auth::{AuthFailure, Authenticator, KEY_CACHE_TTL};
use warden_gateway::caller::Scope;
use warden_settings::{Identity, OAuth};
use warden_store::PgPool;
use warden_store::testing::TestDatabase;

const AUDIENCE: &str = "https://warden.test/mcp";

async fn pool() -> (TestDatabase, PgPool) {
    let db = common::prepared_db().await;
    let pg = warden_store::connect(&db.settings.database, 4, Duration::from_secs(10))
        .await
        .unwrap();
    (db, pg)
}

fn keys_only() -> Identity {
    Identity::default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_keys_and_their_revocation_on_two_replicas() {
    assert!(KEY_CACHE_TTL <= Duration::from_secs(1));
    let (_db, pg) = pool().await;
    let created = agents::create(
        &pg,
        "support-bot",
        vec!["read".into(), "send".into()],
        Guardrails::default(),
        "test",
    )
    .await
    .unwrap();
    assert!(created.key.starts_with("wdn_") && created.key.len() >= 4 + 16 + 43);
    // Only a salted hash is stored: the key's secret appears in no column.
    let replicas = [
        Authenticator::new(pg.clone(), &keys_only()),
        Authenticator::new(pg.clone(), &keys_only()),
    ];
    let header = format!("Bearer {}", created.key);
    for r in &replicas {
        let caller = r.authenticate(Some(&header)).await.unwrap();
        assert_eq!(caller.agent, "support-bot");
        assert_eq!(
            caller.scopes.iter().copied().collect::<Vec<_>>(),
            vec![Scope::Read, Scope::Send]
        );
    }
    let refused_everywhere = |expect: bool| {
        let header = header.clone();
        let replicas = &replicas;
        async move {
            for r in replicas {
                if r.authenticate(Some(&header)).await.is_ok() == expect {
                    return false;
                }
            }
            true
        }
    };
    agents::set_status(&pg, "support-bot", AgentStatus::Suspended, "test")
        .await
        .unwrap();
    // Refused once the (≤ 1 s) cache entry is gone; the deadline only bounds a loaded box.
    warden_test_support::wait::until(Duration::from_secs(10), "suspended key refused", || {
        refused_everywhere(true)
    })
    .await;
    let failure = replicas[0].authenticate(Some(&header)).await.unwrap_err();
    assert_eq!(failure.status, 401);
    assert!(
        failure.www_authenticate.contains("invalid_token"),
        "{failure:?}"
    );
    agents::set_status(&pg, "support-bot", AgentStatus::Active, "test")
        .await
        .unwrap();
    warden_test_support::wait::until(Duration::from_secs(10), "resumed key accepted", || {
        refused_everywhere(false)
    })
    .await;
    agents::set_status(&pg, "support-bot", AgentStatus::Revoked, "test")
        .await
        .unwrap();
    warden_test_support::wait::until(Duration::from_secs(10), "revoked key refused", || {
        refused_everywhere(true)
    })
    .await;
    // Revoked is final.
    assert!(
        agents::set_status(&pg, "support-bot", AgentStatus::Active, "test")
            .await
            .is_err()
    );
    let listed = agents::list(&pg).await.unwrap();
    assert_eq!(listed[0].status, AgentStatus::Revoked);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_or_bad_credentials_are_401_with_a_challenge() {
    let (_db, pg) = pool().await;
    let created = agents::create(
        &pg,
        "bot",
        vec!["read".into()],
        Guardrails::default(),
        "test",
    )
    .await
    .unwrap();
    let auth = Authenticator::new(pg.clone(), &keys_only());
    let tampered = {
        let mut k = created.key.clone();
        let last = k.pop().unwrap();
        k.push(if last == 'A' { 'B' } else { 'A' });
        k
    };
    let cases = [
        None,
        Some(String::new()),
        Some(format!("Basic {}", created.key)),
        Some("Bearer".to_string()),
        Some("Bearer wdn_0123456789abcdefnotakey".to_string()),
        Some(format!("Bearer {tampered}")),
        Some("Bearer eyJhbGciOiJFUzI1NiJ9.e30.c2ln".to_string()),
    ];
    for case in &cases {
        let f: AuthFailure = auth.authenticate(case.as_deref()).await.unwrap_err();
        assert_eq!(f.status, 401, "{case:?}");
        assert!(f.www_authenticate.starts_with("Bearer "), "{f:?}");
        assert!(f.www_authenticate.contains("scope=\""), "{f:?}");
    }
    // Scheme names are case-insensitive.
    let ok = auth
        .authenticate(Some(&format!("bearer {}", created.key)))
        .await
        .unwrap();
    assert_eq!(ok.agent, "bot");
}

/// A local OAuth issuer: RFC 8414 metadata and a JWKS that tests can rotate.
struct Issuer {
    url: String,
    jwks: Arc<Mutex<Value>>,
    jwks_fetches: Arc<AtomicUsize>,
}

async fn issuer() -> Issuer {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let jwks = Arc::new(Mutex::new(json!({"keys": []})));
    let jwks_fetches = Arc::new(AtomicUsize::new(0));
    let (base, keys, fetches) = (url.clone(), jwks.clone(), jwks_fetches.clone());
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let (base, keys, fetches) = (base.clone(), keys.clone(), fetches.clone());
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 1024];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&buf);
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
                let (status, body) = match path.as_str() {
                    "/.well-known/oauth-authorization-server" => (
                        "200 OK",
                        json!({"issuer": base, "jwks_uri": format!("{base}/jwks")}).to_string(),
                    ),
                    "/jwks" => {
                        fetches.fetch_add(1, Ordering::SeqCst);
                        ("200 OK", keys.lock().unwrap().to_string())
                    }
                    _ => ("404 Not Found", "{}".to_string()),
                };
                let resp = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(resp.as_bytes()).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    Issuer {
        url,
        jwks,
        jwks_fetches,
    }
}

struct EcKey {
    kid: String,
    pair: EcdsaKeyPair,
}

impl EcKey {
    fn new(kid: &str) -> EcKey {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        EcKey {
            kid: kid.into(),
            pair,
        }
    }
    fn jwk(&self) -> Value {
        let p = self.pair.public_key().as_ref();
        json!({"kty": "EC", "crv": "P-256", "kid": self.kid, "alg": "ES256", "use": "sig",
               "x": URL_SAFE_NO_PAD.encode(&p[1..33]), "y": URL_SAFE_NO_PAD.encode(&p[33..65])})
    }
    /// A token signed by this key, naming `kid` (which may be another key's).
    fn token_as(&self, kid: &str, claims: &Value) -> String {
        let signing_input = signing_input("ES256", kid, claims);
        let sig = self
            .pair
            .sign(&SystemRandom::new(), signing_input.as_bytes())
            .unwrap();
        format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()))
    }
    fn token(&self, claims: &Value) -> String {
        self.token_as(&self.kid, claims)
    }
}

fn signing_input(alg: &str, kid: &str, claims: &Value) -> String {
    let header = json!({"alg": alg, "typ": "at+jwt", "kid": kid});
    format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    )
}

fn claims(issuer: &str, extra: Value) -> Value {
    let now = chrono::Utc::now().timestamp();
    let mut c = json!({"iss": issuer, "aud": AUDIENCE, "sub": "user-7", "client_id": "claude-host",
                       "iat": now, "exp": now + 600, "scope": "read send"});
    for (k, v) in extra.as_object().unwrap() {
        c[k] = v.clone();
    }
    c
}

fn oauth_identity(issuer: &str, jwks_url: Option<String>) -> Identity {
    Identity {
        agent: "stdio".into(),
        oauth: Some(OAuth {
            issuer: issuer.into(),
            audience: AUDIENCE.into(),
            jwks_url,
        }),
    }
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oauth_tokens_from_the_issuer_are_accepted_and_bad_ones_refused() {
    let (_db, pg) = pool().await;
    let iss = issuer().await;
    let key = EcKey::new("k1");
    *iss.jwks.lock().unwrap() = json!({"keys": [key.jwk()]});
    // No MCP_OAUTH_JWKS_URL: found through the issuer's metadata.
    let auth = Authenticator::new(pg.clone(), &oauth_identity(&iss.url, None));

    let good = key.token(&claims(&iss.url, json!({})));
    let caller = auth.authenticate(Some(&bearer(&good))).await.unwrap();
    assert_eq!(caller.agent, "oauth:claude-host");
    assert!(caller.may(Scope::Read) && caller.may(Scope::Send) && !caller.may(Scope::Admin));

    let forger = EcKey::new("k1");
    let now = chrono::Utc::now().timestamp();
    let refused = [
        (
            "forged signature",
            forger.token(&claims(&iss.url, json!({}))),
        ),
        (
            "expired",
            key.token(&claims(&iss.url, json!({"exp": now - 3600}))),
        ),
        (
            "wrong audience",
            key.token(&claims(&iss.url, json!({"aud": "https://other.test/mcp"}))),
        ),
        (
            "wrong issuer",
            key.token(&claims("https://evil.test", json!({}))),
        ),
        (
            "not yet valid",
            key.token(&claims(&iss.url, json!({"nbf": now + 3600}))),
        ),
    ];
    for (what, token) in &refused {
        let f = auth.authenticate(Some(&bearer(token))).await.unwrap_err();
        assert_eq!(f.status, 401, "{what}: {f:?}");
        assert!(
            f.www_authenticate.contains("error=\"invalid_token\""),
            "{what}: {f:?}"
        );
        assert!(
            f.www_authenticate.contains(
                "resource_metadata=\"https://warden.test/.well-known/oauth-protected-resource\""
            ),
            "{what}: {f:?}"
        );
    }
    // A good token without any of Warden's scopes: 403 insufficient_scope.
    let f = auth
        .authenticate(Some(&bearer(
            &key.token(&claims(&iss.url, json!({"scope": "profile email"}))),
        )))
        .await
        .unwrap_err();
    assert_eq!(f.status, 403, "{f:?}");
    assert!(
        f.www_authenticate.contains("error=\"insufficient_scope\""),
        "{f:?}"
    );

    // RFC 9728 metadata names the resource and the issuer.
    let meta = auth.protected_resource_metadata().unwrap();
    assert_eq!(meta["resource"], AUDIENCE);
    assert_eq!(meta["authorization_servers"][0], iss.url.as_str());
    assert!(meta["scopes_supported"].as_array().unwrap().len() == 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_key_is_fetched_once_and_made_up_kids_are_rate_limited() {
    let (_db, pg) = pool().await;
    let iss = issuer().await;
    let old = EcKey::new("old");
    *iss.jwks.lock().unwrap() = json!({"keys": [old.jwk()]});
    let auth = Authenticator::new(
        pg.clone(),
        &oauth_identity(&iss.url, Some(format!("{}/jwks", iss.url))),
    );
    auth.authenticate(Some(&bearer(&old.token(&claims(&iss.url, json!({}))))))
        .await
        .unwrap();
    assert_eq!(iss.jwks_fetches.load(Ordering::SeqCst), 1);
    // Made-up kids: at most one refetch per interval, however many arrive.
    for i in 0..20 {
        let f = auth
            .authenticate(Some(&bearer(
                &old.token_as(&format!("nope-{i}"), &claims(&iss.url, json!({}))),
            )))
            .await
            .unwrap_err();
        assert_eq!(f.status, 401);
    }
    assert!(iss.jwks_fetches.load(Ordering::SeqCst) <= 2);

    // RS256 keys work too (a fixed test key: ring does not generate RSA keys).
    let rsa = RsaKeyPair::from_pkcs8(include_bytes!("../fixtures/test_rsa_key.pk8")).unwrap();
    let parts = RsaPublicKeyComponents::<Vec<u8>>::from(rsa.public());
    let rsa_jwk = json!({"kty": "RSA", "kid": "rsa1", "alg": "RS256",
                         "n": URL_SAFE_NO_PAD.encode(&parts.n), "e": URL_SAFE_NO_PAD.encode(&parts.e)});
    let input = signing_input(
        "RS256",
        "rsa1",
        &claims(&iss.url, json!({"scope": "admin"})),
    );
    let mut sig = vec![0u8; rsa.public().modulus_len()];
    rsa.sign(
        &RSA_PKCS1_SHA256,
        &SystemRandom::new(),
        input.as_bytes(),
        &mut sig,
    )
    .unwrap();
    let rsa_token = format!("{input}.{}", URL_SAFE_NO_PAD.encode(&sig));
    // The issuer rotates: the new key is found once the refetch interval allows.
    *iss.jwks.lock().unwrap() = json!({"keys": [old.jwk(), rsa_jwk]});
    let caller = warden_test_support::wait::until_some(
        Duration::from_secs(30),
        "the rotated key is fetched",
        || {
            let h = bearer(&rsa_token);
            let auth = &auth;
            async move { auth.authenticate(Some(&h)).await.ok() }
        },
    )
    .await;
    assert_eq!(caller.agent, "oauth:claude-host");
    assert!(caller.may(Scope::Admin) && !caller.may(Scope::Read));
}
