//! `X-Hub-Signature-256`: `sha256=<hex HMAC-SHA256(app secret, raw body)>`.
//!
//! Verify the raw bytes before parsing them; the comparison is constant-time
//! (`ring::hmac::verify`).

use ring::hmac;

/// The header carrying the signature.
pub const HEADER: &str = "X-Hub-Signature-256";
const PREFIX: &str = "sha256=";

/// Signs `body`: `sha256=<64 lower-case hex digits>`.
pub fn sign(secret: &[u8], body: &[u8]) -> String {
    Signer::new(secret).sign(body)
}

/// True when `header_value` is the signature of `body` under `secret`.
pub fn verify(secret: &[u8], body: &[u8], header_value: &str) -> bool {
    Signer::new(secret).verify(body, header_value)
}

/// A keyed signer, for callers that sign or check many bodies with one secret.
#[derive(Clone)]
pub struct Signer {
    key: hmac::Key,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print key material.
        f.write_str("Signer(..)")
    }
}

impl Signer {
    pub fn new(secret: &[u8]) -> Self {
        Self {
            key: hmac::Key::new(hmac::HMAC_SHA256, secret),
        }
    }

    pub fn sign(&self, body: &[u8]) -> String {
        let tag = hmac::sign(&self.key, body);
        let mut out = String::with_capacity(PREFIX.len() + 64);
        out.push_str(PREFIX);
        out.push_str(&hex::encode(tag.as_ref()));
        out
    }

    /// Accepts the prefix in any case and hex in either case; anything malformed is
    /// simply not valid.
    pub fn verify(&self, body: &[u8], header_value: &str) -> bool {
        let value = header_value.trim();
        let Some(prefix) = value.get(..PREFIX.len()) else {
            return false;
        };
        if !prefix.eq_ignore_ascii_case(PREFIX) {
            return false;
        }
        let Ok(tag) = hex::decode(&value[PREFIX.len()..]) else {
            return false;
        };
        hmac::verify(&self.key, body, &tag).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_vector() {
        // HMAC-SHA256("key", "The quick brown fox jumps over the lazy dog"), a published vector.
        assert_eq!(
            sign(b"key", b"The quick brown fox jumps over the lazy dog"),
            "sha256=f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8"
        );
    }

    #[test]
    fn rejects_malformed_headers() {
        let good = sign(b"s", b"body");
        assert!(verify(b"s", b"body", &good));
        assert!(verify(
            b"s",
            b"body",
            &good.to_uppercase().replace("SHA256=", "sha256=")
        ));
        assert!(verify(b"s", b"body", &format!(" {good} ")));
        for bad in [
            "",
            "sha256=",
            "sha256=zz",
            "sha1=abcd",
            &good[7..],
            &good[..good.len() - 2],
        ] {
            assert!(!verify(b"s", b"body", bad), "{bad:?} verified");
        }
        assert!(!verify(b"other", b"body", &good));
    }

    proptest! {
        #[test]
        fn sign_then_verify_round_trips(secret in proptest::collection::vec(any::<u8>(), 0..64),
                                        body in proptest::collection::vec(any::<u8>(), 0..512)) {
            let sig = sign(&secret, &body);
            prop_assert!(sig.starts_with("sha256=") && sig.len() == 71);
            prop_assert!(verify(&secret, &body, &sig));
        }

        #[test]
        fn any_other_body_fails(secret in proptest::collection::vec(any::<u8>(), 1..64),
                                body in proptest::collection::vec(any::<u8>(), 0..512),
                                other in proptest::collection::vec(any::<u8>(), 0..512)) {
            prop_assume!(body != other);
            let sig = sign(&secret, &body);
            prop_assert!(!verify(&secret, &other, &sig));
        }
    }
}
