//! `idempotency_key`: what a key may be, and when two calls are "the same".

use serde_json::Value;

/// Longest key accepted.
pub const MAX_KEY_CHARS: usize = 128;
/// How long a key is remembered, in hours (a later call with it is a new call).
pub const KEY_TTL_HOURS: i64 = 24;

/// Why a key is not usable (the tool answers `INVALID_ARGUMENT` naming `idempotency_key`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`idempotency_key` must be 1 to 128 printable ASCII characters (letters, digits, punctuation; no spaces or control characters), got {got}"
)]
pub struct KeyError {
    /// What was given, described without echoing a long value.
    pub got: String,
}

/// Checks a key: 1..=128 printable ASCII characters (`!`..=`~`).
pub fn check_key(key: &str) -> Result<(), KeyError> {
    let len = key.chars().count();
    if len == 0 || len > MAX_KEY_CHARS || !key.bytes().all(|b| b.is_ascii_graphic()) {
        let got = if len > MAX_KEY_CHARS {
            format!("{len} characters")
        } else if len == 0 {
            "an empty key".to_string()
        } else {
            "a key with spaces, control or non-ASCII characters".to_string()
        };
        return Err(KeyError { got });
    }
    Ok(())
}

/// The fingerprint of a call: the tool and its arguments (without the key itself), with
/// object keys sorted, so the same call written in another key order is the same call.
/// 128 bits of two FNV-1a hashes: stable across builds and replicas (std's hasher is not
/// promised to be), and a collision needs the same agent's same key anyway.
pub fn fingerprint(tool: &str, args: &Value) -> String {
    let mut canonical = String::with_capacity(256);
    canonical.push_str(tool);
    canonical.push('\n');
    write_canonical(args, &mut canonical, true);
    let a = fnv1a(canonical.as_bytes(), 0xcbf2_9ce4_8422_2325);
    let b = fnv1a(canonical.as_bytes(), 0x6c62_272e_07bb_0142);
    format!("{a:016x}{b:016x}")
}

fn fnv1a(bytes: &[u8], seed: u64) -> u64 {
    let mut h = seed;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn write_canonical(v: &Value, out: &mut String, top: bool) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map
                .keys()
                .filter(|k| !(top && k.as_str() == "idempotency_key"))
                .collect();
            keys.sort();
            out.push('{');
            for k in keys {
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_canonical(&map[k], out, false);
                out.push(',');
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for item in items {
                write_canonical(item, out, false);
                out.push(',');
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn keys() {
        assert!(check_key("a").is_ok());
        assert!(check_key(&"k".repeat(128)).is_ok());
        assert!(check_key("order-42:retry/1~!").is_ok());
        for bad in ["", " ", "a b", "é", "a\n", &"k".repeat(129)] {
            let e = check_key(bad).unwrap_err().to_string();
            assert!(e.contains("idempotency_key"), "{e}");
        }
    }

    #[test]
    fn same_call_same_fingerprint() {
        let a = json!({"to": "+1", "text": "hi", "idempotency_key": "k1"});
        let b = json!({"text": "hi", "idempotency_key": "k2", "to": "+1"});
        assert_eq!(
            fingerprint("send_message", &a),
            fingerprint("send_message", &b)
        );
        assert_ne!(
            fingerprint("send_message", &a),
            fingerprint("reply_customer", &a)
        );
        let c = json!({"to": "+1", "text": "hi!", "idempotency_key": "k1"});
        assert_ne!(
            fingerprint("send_message", &a),
            fingerprint("send_message", &c)
        );
        // Only the top-level key is left out.
        let d = json!({"x": {"idempotency_key": 1}});
        let e = json!({"x": {"idempotency_key": 2}});
        assert_ne!(fingerprint("t", &d), fingerprint("t", &e));
    }

    proptest! {
        #[test]
        fn printable_ascii_keys_are_accepted(key in "[!-~]{1,128}") {
            prop_assert!(check_key(&key).is_ok());
        }

        #[test]
        fn different_texts_differ(a in "\\PC{0,40}", b in "\\PC{0,40}") {
            prop_assume!(a != b);
            prop_assert_ne!(
                fingerprint("send_message", &json!({"text": a})),
                fingerprint("send_message", &json!({"text": b}))
            );
        }
    }
}
