//! The field types of tool inputs: what a parameter accepts, leniently, and the refusal that
//! names it. Each publishes the schema of the plain type it stands for (a string, an
//! integer), so the JSON Schema agents read stays the standard one.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use chrono::{DateTime, Utc};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use uuid::Uuid;
use warden_rules::phone::PhoneNumber;

use super::parsers::parse_phone;
use super::{PARAM, lift, refuse};
use crate::quoting::{detail, echo};

/// One JSON scalar as given, or what else it was.
enum Scalar {
    Text(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Other(&'static str),
}

impl Scalar {
    fn read<'de, D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }

    /// How a message names what was given instead of what it wanted.
    fn kind(&self) -> &'static str {
        match self {
            Scalar::Text(_) => "a string",
            Scalar::Int(_) | Scalar::Float(_) => "a number",
            Scalar::Bool(_) => "a boolean",
            Scalar::Other(kind) => kind,
        }
    }
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string, number or boolean")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Scalar, E> {
        Ok(Scalar::Text(v.to_string()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Scalar, E> {
        Ok(Scalar::Text(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Scalar, E> {
        Ok(Scalar::Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalar, E> {
        Ok(i64::try_from(v).map_or(Scalar::Float(v as f64), Scalar::Int))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Scalar, E> {
        Ok(Scalar::Float(v))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Scalar, E> {
        Ok(Scalar::Bool(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Scalar, E> {
        Ok(Scalar::Other("null"))
    }
    fn visit_none<E: de::Error>(self) -> Result<Scalar, E> {
        Ok(Scalar::Other("null"))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Scalar, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Scalar::Other("an array"))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scalar, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Scalar::Other("an object"))
    }
}

/// NUL and other control characters the platform refuses (line breaks and tabs are allowed:
/// free text may carry them; stricter parameters check again).
fn check_chars<E: de::Error>(s: &str) -> Result<(), E> {
    warden_rules::text::check(s, warden_rules::text::TextKind::FreeText).map_err(|e| {
        refuse(
            format!("The parameter `{PARAM}` {e}."),
            format!("Remove control characters from `{PARAM}` and call again."),
        )
    })
}

/// A string parameter, trimmed. A number or boolean is taken as its text (`131047`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Text(pub String);
schema_of!(Text => String);

impl Text {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Scalar::read(d)? {
            Scalar::Text(s) => {
                check_chars(&s)?;
                Ok(Text(s.trim().to_string()))
            }
            Scalar::Int(i) => Ok(Text(i.to_string())),
            Scalar::Float(f) => Ok(Text(f.to_string())),
            Scalar::Bool(b) => Ok(Text(b.to_string())),
            other => Err(refuse(
                format!(
                    "The parameter `{PARAM}` must be a string, not {}.",
                    other.kind()
                ),
                format!("Pass `{PARAM}` as a string."),
            )),
        }
    }
}

/// Optional text as `Option<String>`.
pub fn opt_string(text: &Option<Text>) -> Option<String> {
    text.as_ref().map(|t| t.0.clone())
}

/// A customer: a phone number in any accepted spelling (canonicalised) or a BSUID. A JSON
/// number is refused: `14155550101.0` would silently name another customer.
#[derive(Clone, Debug)]
pub struct Customer(pub PhoneNumber);
schema_of!(Customer => String);

impl<'de> Deserialize<'de> for Customer {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Scalar::read(d)? {
            Scalar::Text(s) => {
                check_chars(&s)?;
                parse_phone(PARAM, s.trim()).map(Customer).map_err(lift)
            }
            Scalar::Int(_) | Scalar::Float(_) => Err(refuse(
                format!(
                    "The parameter `{PARAM}` must be a phone number written as a string, not a JSON number."
                ),
                format!("Pass `{PARAM}` as a string with the country code, e.g. \"+14155550101\"."),
            )),
            other => Err(refuse(
                format!(
                    "The parameter `{PARAM}` must be a string, not {}.",
                    other.kind()
                ),
                format!(
                    "Pass `{PARAM}` as the customer's phone number with country code (e.g. +6281234567890) or BSUID (e.g. US.13491208655302741918)."
                ),
            )),
        }
    }
}

/// A whole number (a JSON number without fraction, or a numeric string such as `"50"`),
/// published with the schema of `S` (its type and bounds); the tool checks its own range.
pub struct Whole<S>(i64, PhantomData<S>);

impl<S> Whole<S> {
    pub fn get(&self) -> i64 {
        self.0
    }
}

impl<S> Clone for Whole<S> {
    fn clone(&self) -> Self {
        Whole(self.0, PhantomData)
    }
}

impl<S> fmt::Debug for Whole<S> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<S: JsonSchema> JsonSchema for Whole<S> {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        S::schema_name()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        S::json_schema(generator)
    }
}

/// The value of an optional whole number.
pub fn opt_whole<S>(n: &Option<Whole<S>>) -> Option<i64> {
    n.as_ref().map(Whole::get)
}

fn whole(f: f64) -> Option<i64> {
    (f.is_finite() && f.fract() == 0.0 && f.abs() < 9e15).then_some(f as i64)
}

impl<'de, S> Deserialize<'de> for Whole<S> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let bad = |got: String| {
            refuse(
                format!("The parameter `{PARAM}` must be a whole number, got {got}."),
                format!(
                    "Pass `{PARAM}` as a number such as 50 (a numeric string like \"50\" also works)."
                ),
            )
        };
        let n = match Scalar::read(d)? {
            Scalar::Int(i) => Some(i),
            Scalar::Float(f) => whole(f).ok_or_else(|| bad(f.to_string()))?.into(),
            Scalar::Text(s) => {
                let t = s.trim();
                t.parse::<i64>()
                    .ok()
                    .or_else(|| t.parse::<f64>().ok().and_then(whole))
                    .ok_or_else(|| bad(echo(&s)))?
                    .into()
            }
            other => return Err(bad(other.kind().to_string())),
        };
        Ok(Whole(n.unwrap_or_default(), PhantomData))
    }
}

/// A number (a JSON number or a numeric string such as `"-6.2"`).
#[derive(Clone, Copy, Debug)]
pub struct Decimal(pub f64);
schema_of!(Decimal => f64);

impl<'de> Deserialize<'de> for Decimal {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let got = match Scalar::read(d)? {
            Scalar::Int(i) => return Ok(Decimal(i as f64)),
            Scalar::Float(f) => return Ok(Decimal(f)),
            Scalar::Text(s) => match s.trim().parse::<f64>() {
                Ok(f) if f.is_finite() => return Ok(Decimal(f)),
                _ => echo(&s),
            },
            other => other.kind().to_string(),
        };
        Err(refuse(
            format!("The parameter `{PARAM}` must be a number, got {got}."),
            format!("Pass `{PARAM}` as a number such as -6.2."),
        ))
    }
}

/// A boolean (`true`/`false`, or the strings "true"/"false").
#[derive(Clone, Copy, Debug)]
pub struct Flag(pub bool);
schema_of!(Flag => bool);

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Scalar::read(d)? {
            Scalar::Bool(b) => Ok(Flag(b)),
            Scalar::Text(s) if s.trim().eq_ignore_ascii_case("true") => Ok(Flag(true)),
            Scalar::Text(s) if s.trim().eq_ignore_ascii_case("false") => Ok(Flag(false)),
            other => Err(refuse(
                format!(
                    "The parameter `{PARAM}` must be true or false, got {}.",
                    match &other {
                        Scalar::Text(s) => echo(s),
                        other => other.kind().to_string(),
                    }
                ),
                format!("Pass `{PARAM}` as true or false, or leave it out."),
            )),
        }
    }
}

/// A JSON parameter: a string holding JSON, or the JSON value itself; published as a string
/// (what every client can send). No string inside may hold a control character (Postgres
/// refuses NUL in jsonb).
#[derive(Clone, Debug)]
pub struct Json(pub Value);
schema_of!(Json => String);

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = match Value::deserialize(d)? {
            Value::String(s) => serde_json::from_str::<Value>(&s).map_err(|e| {
                refuse(
                    format!("The parameter `{PARAM}` is not valid JSON: {}.", detail(e)),
                    "",
                )
            })?,
            other => other,
        };
        warden_rules::text::check_json(&value).map_err(|(at, e)| {
            let place = if at.is_empty() {
                format!("`{PARAM}`")
            } else {
                format!("`{PARAM}` (at {at})")
            };
            refuse(
                format!("The parameter {place} {e}."),
                format!("Remove control characters from `{PARAM}` and call again."),
            )
        })?;
        Ok(Json(value))
    }
}

/// An identifier a tool returned (a UUID).
#[derive(Clone, Copy, Debug)]
pub struct Id(pub Uuid);
schema_of!(Id => String);

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let Text(raw) = Text::deserialize(d)?;
        Uuid::parse_str(&raw).map(Id).map_err(|_| {
            refuse(
                format!("The parameter `{PARAM}` must be a UUID, got {}.", echo(&raw)),
                format!(
                    "Pass `{PARAM}` exactly as a tool returned it, e.g. 0192f3c4-5d6e-7f80-9a1b-2c3d4e5f6a7b."
                ),
            )
        })
    }
}

/// An RFC 3339 timestamp.
#[derive(Clone, Copy, Debug)]
pub struct Timestamp(pub DateTime<Utc>);
schema_of!(Timestamp => String);

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let Text(raw) = Text::deserialize(d)?;
        DateTime::parse_from_rfc3339(&raw)
            .map(|t| Timestamp(t.with_timezone(&Utc)))
            .map_err(|e| {
                refuse(
                    format!(
                        "The parameter `{PARAM}` is not an RFC 3339 timestamp ({}: {}).",
                        echo(&raw),
                        detail(e)
                    ),
                    format!(
                        "Pass `{PARAM}` like 2030-01-31T09:00:00Z or 2030-01-31T16:00:00+07:00."
                    ),
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;
    use crate::input::parse;

    #[derive(Deserialize, JsonSchema)]
    struct Probe {
        /// A text.
        text: Option<Text>,
        /// A number.
        n: Option<Whole<u32>>,
        /// A flag.
        flag: Option<Flag>,
        /// Some JSON.
        json: Option<Json>,
        /// A customer.
        customer: Option<Customer>,
        /// An id.
        id: Option<Id>,
        /// A time.
        at: Option<Timestamp>,
    }

    #[derive(Deserialize, JsonSchema)]
    struct Needs {
        /// The message text.
        text: Text,
    }

    fn probe(v: serde_json::Value) -> Result<Probe, crate::error::ToolError> {
        parse::<Probe>(v.as_object().cloned().unwrap()).map(|i| i.into_inner())
    }

    fn refusal(v: serde_json::Value) -> String {
        match probe(v) {
            Ok(_) => panic!("accepted"),
            Err(e) => {
                assert_eq!(e.code, "INVALID_ARGUMENT");
                format!("{} | {}", e.message, e.suggested_action)
            }
        }
    }

    #[test]
    fn strings_are_trimmed_numbers_taken_as_text_and_blank_is_absent() {
        let p = probe(json!({"text": "  x "})).unwrap();
        assert_eq!(p.text.unwrap().0, "x");
        assert_eq!(
            probe(json!({"text": 131047})).unwrap().text.unwrap().0,
            "131047"
        );
        assert!(probe(json!({"text": " "})).unwrap().text.is_none());
        assert!(probe(json!({"text": null})).unwrap().text.is_none());
        assert!(refusal(json!({"text": [1]})).contains("`text` must be a string, not an array"));
        let given = parse::<Needs>(json!({"text": " a "}).as_object().cloned().unwrap());
        assert_eq!(given.ok().unwrap().into_inner().text.0, "a");
        let missing = parse::<Needs>(json!({"text": ""}).as_object().cloned().unwrap())
            .err()
            .unwrap();
        assert_eq!(
            missing.message,
            "The parameter `text` is required and must not be empty."
        );
        assert_eq!(missing.suggested_action, "Pass `text`: The message text.");
    }

    #[test]
    fn whole_numbers_accept_numeric_strings() {
        for (v, n) in [(json!(50), 50), (json!("50"), 50), (json!(2.0), 2)] {
            assert_eq!(opt_whole(&probe(json!({ "n": v })).unwrap().n), Some(n));
        }
        for bad in [json!("2.5"), json!("x"), json!(1.5), json!(true)] {
            assert!(refusal(json!({ "n": bad })).contains("`n` must be a whole number"));
        }
        assert!(probe(json!({"n": ""})).unwrap().n.is_none());
    }

    #[test]
    fn json_takes_strings_or_values() {
        let p = probe(json!({"json": "[\"x\"]"})).unwrap();
        assert_eq!(p.json.unwrap().0, json!(["x"]));
        assert_eq!(
            probe(json!({"json": ["y"]})).unwrap().json.unwrap().0,
            json!(["y"])
        );
        let e = refusal(json!({"json": "{nope"}));
        assert!(e.contains("`json` is not valid JSON"), "{e}");
        assert!(e.contains("Pass `json`: Some JSON."), "{e}");
        assert!(refusal(json!({"json": ["a\u{0}b"]})).contains("`json` (at "));
    }

    #[test]
    fn customers_ids_flags_and_times() {
        let p = probe(json!({"customer": "+62 812-3456-7890", "flag": "TRUE"})).unwrap();
        assert_eq!(p.customer.unwrap().0.digits(), "6281234567890");
        assert!(p.flag.unwrap().0);
        assert!(refusal(json!({"customer": 14155550101u64})).contains("not a JSON number"));
        assert!(refusal(json!({"customer": "not-a-phone"})).contains("`customer`"));
        assert!(refusal(json!({"id": "nope"})).contains("`id` must be a UUID"));
        let id = "0192f3c4-5d6e-7f80-9a1b-2c3d4e5f6a7b";
        let p = probe(json!({"id": id, "at": "2030-01-01T07:00:00+07:00"})).unwrap();
        assert_eq!(p.id.unwrap().0.to_string(), id);
        assert_eq!(p.at.unwrap().0.to_rfc3339(), "2030-01-01T00:00:00+00:00");
        assert!(refusal(json!({"at": "tomorrow"})).contains("`at` is not an RFC 3339"));
        assert!(refusal(json!({"flag": "maybe"})).contains("`flag` must be true or false"));
        assert!(refusal(json!({"text": "a\u{0}b"})).contains("`text`"));
    }

    #[test]
    fn echoes_stay_short() {
        let long = "x".repeat(100_000);
        for key in ["id", "at", "n", "customer"] {
            let e = refusal(json!({ key: long }));
            assert!(e.len() < 600, "{key}: {e}");
        }
    }
}
