//! JWT access tokens (RFC 9068 style) checked with `ring` against JSON Web Keys: RS256/384/512,
//! PS256/384/512, ES256 and ES384. Pure: keys in, claims out; fetching the keys is
//! [`super::oauth`]'s job. `none` and HMAC algorithms are never accepted (a resource server
//! holds no shared secret with the issuer).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::signature::{self, RsaPublicKeyComponents, UnparsedPublicKey, VerificationAlgorithm};
use serde::Deserialize;
use serde_json::Value;

/// Clock skew tolerated on `exp` and `nbf`.
pub const LEEWAY_SECS: i64 = 60;

/// Why a token was refused (never echoes the token).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum JwtError {
    #[error("the token is not a JWT")]
    Malformed,
    #[error("the token's algorithm `{0}` is not accepted")]
    Algorithm(String),
    #[error("the issuer has no key `{0}`")]
    UnknownKey(String),
    #[error("the token's signature does not verify")]
    Signature,
    #[error("the token has expired")]
    Expired,
    #[error("the token is not valid yet")]
    NotYetValid,
    #[error("the token was issued by another issuer")]
    Issuer,
    #[error("the token is meant for another resource (aud)")]
    Audience,
}

#[derive(Deserialize)]
struct Header {
    alg: String,
    #[serde(default)]
    kid: Option<String>,
}

/// One key of a JWKS (only what verification needs).
#[derive(Clone, Debug, Deserialize)]
pub struct Jwk {
    pub kty: String,
    #[serde(default)]
    pub kid: Option<String>,
    #[serde(default)]
    pub alg: Option<String>,
    #[serde(default, rename = "use")]
    pub use_: Option<String>,
    #[serde(default)]
    pub n: Option<String>,
    #[serde(default)]
    pub e: Option<String>,
    #[serde(default)]
    pub crv: Option<String>,
    #[serde(default)]
    pub x: Option<String>,
    #[serde(default)]
    pub y: Option<String>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct JwkSet {
    pub keys: Vec<Jwk>,
}

/// The claims Warden reads from a verified token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claims {
    /// Who is calling: `client_id`, else `azp`, else `sub`.
    pub subject: String,
    /// The `scope` claim, split on spaces.
    pub scopes: Vec<String>,
}

fn b64(part: &str) -> Result<Vec<u8>, JwtError> {
    URL_SAFE_NO_PAD
        .decode(part.trim_end_matches('='))
        .map_err(|_| JwtError::Malformed)
}

fn rsa_alg(alg: &str) -> Option<&'static signature::RsaParameters> {
    Some(match alg {
        "RS256" => &signature::RSA_PKCS1_2048_8192_SHA256,
        "RS384" => &signature::RSA_PKCS1_2048_8192_SHA384,
        "RS512" => &signature::RSA_PKCS1_2048_8192_SHA512,
        "PS256" => &signature::RSA_PSS_2048_8192_SHA256,
        "PS384" => &signature::RSA_PSS_2048_8192_SHA384,
        "PS512" => &signature::RSA_PSS_2048_8192_SHA512,
        _ => return None,
    })
}

fn ec_alg(alg: &str) -> Option<(&'static str, &'static dyn VerificationAlgorithm)> {
    Some(match alg {
        "ES256" => ("P-256", &signature::ECDSA_P256_SHA256_FIXED),
        "ES384" => ("P-384", &signature::ECDSA_P384_SHA384_FIXED),
        _ => return None,
    })
}

/// Whether `key` may verify a token signed with `alg`.
fn fits(key: &Jwk, alg: &str) -> bool {
    if key.use_.as_deref().is_some_and(|u| u != "sig") {
        return false;
    }
    if key.alg.as_deref().is_some_and(|a| a != alg) {
        return false;
    }
    match key.kty.as_str() {
        "RSA" => rsa_alg(alg).is_some(),
        "EC" => ec_alg(alg).is_some_and(|(crv, _)| key.crv.as_deref() == Some(crv)),
        _ => false,
    }
}

fn verify_with(key: &Jwk, alg: &str, message: &[u8], sig: &[u8]) -> Result<(), JwtError> {
    if let Some(params) = rsa_alg(alg) {
        let (Some(n), Some(e)) = (&key.n, &key.e) else {
            return Err(JwtError::Signature);
        };
        let components = RsaPublicKeyComponents {
            n: b64(n)?,
            e: b64(e)?,
        };
        return components
            .verify(params, message, sig)
            .map_err(|_| JwtError::Signature);
    }
    if let Some((_, algorithm)) = ec_alg(alg) {
        let (Some(x), Some(y)) = (&key.x, &key.y) else {
            return Err(JwtError::Signature);
        };
        let mut point = vec![0x04];
        point.extend(b64(x)?);
        point.extend(b64(y)?);
        return UnparsedPublicKey::new(algorithm, point)
            .verify(message, sig)
            .map_err(|_| JwtError::Signature);
    }
    Err(JwtError::Algorithm(alg.to_string()))
}

/// The `kid` a token names (to look it up in a fresher JWKS when it is unknown).
pub fn key_id(token: &str) -> Option<String> {
    let header = token.split('.').next()?;
    serde_json::from_slice::<Header>(&b64(header).ok()?)
        .ok()?
        .kid
}

/// Verify `token` against `keys` and check `iss`, `aud`, `exp`, `nbf` at `now` (seconds).
pub fn verify(
    token: &str,
    keys: &JwkSet,
    issuer: &str,
    audience: &str,
    now: i64,
) -> Result<Claims, JwtError> {
    let mut parts = token.split('.');
    let (Some(h), Some(p), Some(s), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(JwtError::Malformed);
    };
    let header: Header = serde_json::from_slice(&b64(h)?).map_err(|_| JwtError::Malformed)?;
    let alg = header.alg.as_str();
    if rsa_alg(alg).is_none() && ec_alg(alg).is_none() {
        return Err(JwtError::Algorithm(header.alg.clone()));
    }
    let candidates: Vec<&Jwk> = keys
        .keys
        .iter()
        .filter(|k| fits(k, alg))
        .filter(|k| match &header.kid {
            Some(kid) => k.kid.as_deref() == Some(kid.as_str()),
            None => true,
        })
        .collect();
    // Without a `kid` only an unambiguous key set is usable.
    let key = match (candidates.as_slice(), &header.kid) {
        ([key], _) => *key,
        ([], Some(kid)) => return Err(JwtError::UnknownKey(kid.clone())),
        _ => return Err(JwtError::UnknownKey(String::new())),
    };
    let signed = &token[..h.len() + 1 + p.len()];
    verify_with(key, alg, signed.as_bytes(), &b64(s)?)?;
    let claims: Value = serde_json::from_slice(&b64(p)?).map_err(|_| JwtError::Malformed)?;
    check_claims(&claims, issuer, audience, now)
}

fn check_claims(
    claims: &Value,
    issuer: &str,
    audience: &str,
    now: i64,
) -> Result<Claims, JwtError> {
    if claims["iss"].as_str() != Some(issuer) {
        return Err(JwtError::Issuer);
    }
    let aud_ok = match &claims["aud"] {
        Value::String(a) => a == audience,
        Value::Array(list) => list.iter().any(|a| a.as_str() == Some(audience)),
        _ => false,
    };
    if !aud_ok {
        return Err(JwtError::Audience);
    }
    // An access token without an expiry is refused: it could never be retired.
    let exp = claims["exp"].as_i64().ok_or(JwtError::Expired)?;
    if now >= exp + LEEWAY_SECS {
        return Err(JwtError::Expired);
    }
    if let Some(nbf) = claims.get("nbf").and_then(Value::as_i64)
        && now + LEEWAY_SECS < nbf
    {
        return Err(JwtError::NotYetValid);
    }
    let subject = ["client_id", "azp", "sub"]
        .iter()
        .find_map(|c| claims[*c].as_str().filter(|s| !s.is_empty()))
        .unwrap_or("unknown");
    let subject: String = subject
        .chars()
        .filter(|c| !c.is_control())
        .take(128)
        .collect();
    let scopes = claims["scope"]
        .as_str()
        .unwrap_or("")
        .split(' ')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    Ok(Claims { subject, scopes })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    const NOW: i64 = 1_800_000_000;

    fn claims(extra: Value) -> Value {
        let mut base = json!({"iss": "https://issuer.test", "aud": "https://warden.test/mcp",
                              "exp": NOW + 300, "sub": "user-1", "scope": "read send"});
        for (k, v) in extra.as_object().unwrap() {
            base[k] = v.clone();
        }
        base
    }

    fn check(extra: Value) -> Result<Claims, JwtError> {
        check_claims(
            &claims(extra),
            "https://issuer.test",
            "https://warden.test/mcp",
            NOW,
        )
    }

    #[test]
    fn claims_are_enforced() {
        let ok = check(json!({})).unwrap();
        assert_eq!(ok.subject, "user-1");
        assert_eq!(ok.scopes, vec!["read", "send"]);
        assert_eq!(check(json!({"client_id": "bot"})).unwrap().subject, "bot");
        assert_eq!(
            check(json!({"aud": ["x", "https://warden.test/mcp"]})).map(|c| c.subject),
            Ok("user-1".into())
        );
        assert_eq!(
            check(json!({"iss": "https://evil.test"})),
            Err(JwtError::Issuer)
        );
        assert_eq!(
            check(json!({"aud": "https://other.test/mcp"})),
            Err(JwtError::Audience)
        );
        assert_eq!(check(json!({"exp": NOW - 61})), Err(JwtError::Expired));
        assert_eq!(check(json!({"exp": null})), Err(JwtError::Expired));
        assert_eq!(check(json!({"nbf": NOW + 600})), Err(JwtError::NotYetValid));
    }

    #[test]
    fn none_and_hmac_are_refused() {
        let keys = JwkSet { keys: vec![] };
        for alg in ["none", "HS256"] {
            let h = URL_SAFE_NO_PAD.encode(json!({"alg": alg}).to_string());
            let p = URL_SAFE_NO_PAD.encode(claims(json!({})).to_string());
            let token = format!("{h}.{p}.");
            assert_eq!(
                verify(
                    &token,
                    &keys,
                    "https://issuer.test",
                    "https://warden.test/mcp",
                    NOW
                ),
                Err(JwtError::Algorithm(alg.into()))
            );
        }
    }

    proptest! {
        /// Whatever arrives as a bearer token, verification answers without panicking.
        #[test]
        fn garbage_never_panics(token in "\\PC{0,200}") {
            let keys = JwkSet { keys: vec![] };
            prop_assert!(verify(&token, &keys, "i", "a", NOW).is_err());
            let _ = key_id(&token);
        }
    }
}
