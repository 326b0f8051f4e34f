//! Serde helpers that accept both numbers and strings.
//!
//! The platform is inconsistent: message timestamps are strings of unix seconds,
//! user-preference timestamps are numbers, template ids are numbers in webhooks and
//! strings in API answers. Test tools and mirrors vary further, so every id and
//! timestamp goes through these helpers.

use serde::de::{self, Deserializer, Visitor};
use serde::ser::Serializer;
use std::fmt;

struct StringOrNumber;

impl Visitor<'_> for StringOrNumber {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string or a number")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
        Ok(v.to_owned())
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<String, E> {
        Ok(v)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<String, E> {
        Ok(v.to_string())
    }
}

struct IntOrString;

impl Visitor<'_> for IntOrString {
    type Value = i64;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an integer or a string holding one")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<i64, E> {
        Ok(v)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<i64, E> {
        i64::try_from(v).map_err(|_| E::custom("integer out of range"))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<i64, E> {
        if v.is_finite() {
            Ok(v.trunc() as i64)
        } else {
            Err(E::custom("not a finite number"))
        }
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<i64, E> {
        let t = v.trim();
        t.parse::<i64>()
            .or_else(|_| t.parse::<f64>().map(|f| f.trunc() as i64))
            .map_err(|_| E::custom(format!("not an integer: {v:?}")))
    }
}

/// A string, or a number rendered as a string.
pub fn string<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    d.deserialize_any(StringOrNumber)
}

/// Like [`string`], for optional fields (`null` and absence are `None`).
pub fn opt_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    struct Opt;
    impl<'de> Visitor<'de> for Opt {
        type Value = Option<String>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a string, a number or null")
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            string(d).map(Some)
        }
    }
    d.deserialize_option(Opt)
}

/// An integer, or a string holding one.
pub fn int<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    d.deserialize_any(IntOrString)
}

/// Like [`int`], for optional fields.
pub fn opt_int<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    struct Opt;
    impl<'de> Visitor<'de> for Opt {
        type Value = Option<i64>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an integer, a string holding one, or null")
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            int(d).map(Some)
        }
    }
    d.deserialize_option(Opt)
}

/// Writes an integer as a decimal string (the platform's shape for message timestamps).
pub fn int_as_string<S: Serializer>(v: &i64, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

/// Writes an all-digit id as a JSON number (the platform's shape for template ids in
/// webhooks), anything else as a string.
pub fn digits_as_number<S: Serializer>(v: &str, s: S) -> Result<S::Ok, S::Error> {
    // Only canonical digits round-trip as a number ("007" stays a string).
    match v.parse::<u64>() {
        Ok(n) if v.bytes().all(|b| b.is_ascii_digit()) && (v == "0" || !v.starts_with('0')) => {
            s.serialize_u64(n)
        }
        _ => s.serialize_str(v),
    }
}
