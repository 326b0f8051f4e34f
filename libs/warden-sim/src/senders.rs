//! The numbers the sim serves: `SIM_SENDERS`, a JSON file listing several numbers of one or
//! more businesses, or (unset) the one number the `PLATFORM_*` settings describe.
//!
//! ```json
//! [{"phone_number_id": "100000000000001", "display_phone_number": "15550100000",
//!   "waba_id": "200000000000001", "portfolio_id": "300000000000001",
//!   "access_token": "token-a", "app_secret": "secret-a",
//!   "throughput_mps": 80, "quality": "GREEN"}]
//! ```
//!
//! The file is read by hand rather than by serde derive so that every refusal names the
//! entry and the field (`entry 1: field access_token: is required`).

use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

use crate::config::SimConfig;

/// The quality ratings a number can start with (and `/sim/quality` can set).
pub const QUALITIES: [&str; 3] = ["GREEN", "YELLOW", "RED"];

/// The fields an entry may have; any other is refused (a misspelt optional field would
/// otherwise be silently ignored).
const FIELDS: [&str; 8] = [
    "phone_number_id",
    "display_phone_number",
    "waba_id",
    "portfolio_id",
    "access_token",
    "app_secret",
    "throughput_mps",
    "quality",
];

/// One business phone number as the sim serves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SenderSpec {
    pub phone_number_id: String,
    pub display_phone_number: String,
    /// The WhatsApp Business Account the number belongs to: its templates, and `entry[].id`
    /// of its webhooks.
    pub waba_id: String,
    /// The business portfolio owning the account, when given.
    pub portfolio_id: Option<String>,
    /// The bearer token this number (and its account's endpoints) accept.
    pub access_token: String,
    /// The secret of the HMAC signing this number's webhooks.
    pub app_secret: String,
    /// Sends per second the number takes before answering 130429; `None`: no limit.
    pub throughput_mps: Option<u32>,
    /// The quality rating it starts with (GREEN, YELLOW, RED).
    pub quality: String,
}

impl SenderSpec {
    /// The one number of the `PLATFORM_*` settings (no throughput limit, GREEN), used when
    /// `SIM_SENDERS` is unset.
    pub fn from_config(config: &SimConfig) -> Self {
        Self {
            phone_number_id: config.phone_number_id.clone(),
            display_phone_number: config.display_phone_number.clone(),
            waba_id: config.waba_id.clone(),
            portfolio_id: None,
            access_token: config.access_token.clone(),
            app_secret: config.app_secret.clone(),
            throughput_mps: None,
            quality: "GREEN".to_owned(),
        }
    }
}

/// Why the `SIM_SENDERS` file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum SendersFileError {
    #[error("cannot read SIM_SENDERS file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("SIM_SENDERS file {path}: {problem}")]
    Invalid {
        path: PathBuf,
        problem: SendersError,
    },
}

/// What is wrong with the text of a senders file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendersError {
    #[error("not valid JSON: {0}")]
    Json(String),
    #[error(
        "must be a JSON array of numbers, e.g. [{{\"phone_number_id\": \"...\", \"waba_id\": \"...\", ...}}]"
    )]
    NotArray,
    #[error("the array is empty: list at least one number")]
    Empty,
    #[error("entry {index}: must be a JSON object")]
    NotObject { index: usize },
    #[error("entry {index}: field {field}: {problem}")]
    Field {
        index: usize,
        field: String,
        problem: String,
    },
}

fn field_error(index: usize, field: &str, problem: impl Into<String>) -> SendersError {
    SendersError::Field {
        index,
        field: field.to_owned(),
        problem: problem.into(),
    }
}

/// The numbers to serve: the `SIM_SENDERS` file when set, else the one of the settings.
pub fn from_config(config: &SimConfig) -> Result<Vec<SenderSpec>, SendersFileError> {
    match &config.senders {
        Some(path) if !path.as_os_str().is_empty() => load(path),
        _ => Ok(vec![SenderSpec::from_config(config)]),
    }
}

/// Reads and checks a senders file.
pub fn load(path: &Path) -> Result<Vec<SenderSpec>, SendersFileError> {
    let text = std::fs::read_to_string(path).map_err(|source| SendersFileError::Read {
        path: path.to_owned(),
        source,
    })?;
    parse(&text).map_err(|problem| SendersFileError::Invalid {
        path: path.to_owned(),
        problem,
    })
}

/// Parses and checks the text of a senders file.
pub fn parse(text: &str) -> Result<Vec<SenderSpec>, SendersError> {
    let v: Value = serde_json::from_str(text).map_err(|e| SendersError::Json(e.to_string()))?;
    let Value::Array(entries) = v else {
        return Err(SendersError::NotArray);
    };
    if entries.is_empty() {
        return Err(SendersError::Empty);
    }
    let mut specs: Vec<SenderSpec> = Vec::with_capacity(entries.len());
    for (index, entry) in entries.iter().enumerate() {
        let Value::Object(obj) = entry else {
            return Err(SendersError::NotObject { index });
        };
        let spec = entry_spec(index, obj)?;
        check_against(index, &spec, &specs)?;
        specs.push(spec);
    }
    Ok(specs)
}

fn entry_spec(index: usize, obj: &Map<String, Value>) -> Result<SenderSpec, SendersError> {
    if let Some(unknown) = obj.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(field_error(
            index,
            unknown,
            format!("unknown field (known: {})", FIELDS.join(", ")),
        ));
    }
    let required = |field: &str| {
        optional_text(index, obj, field)?.ok_or_else(|| field_error(index, field, "is required"))
    };
    let id = |field: &str| -> Result<String, SendersError> {
        let v = required(field)?;
        // Ids are path segments of the platform's URLs.
        if v.contains(|c: char| c == '/' || c.is_whitespace()) {
            return Err(field_error(
                index,
                field,
                format!("{v:?} must not hold '/' or spaces"),
            ));
        }
        Ok(v)
    };
    let throughput_mps = match obj.get("throughput_mps") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => match n.as_u64().and_then(|n| u32::try_from(n).ok()) {
            Some(n) if n > 0 => Some(n),
            _ => {
                return Err(field_error(
                    index,
                    "throughput_mps",
                    format!(
                        "{n} is not a whole number of messages per second of at least 1 (leave it out for no limit)"
                    ),
                ));
            }
        },
        Some(other) => {
            return Err(field_error(
                index,
                "throughput_mps",
                format!("{other} is not a number"),
            ));
        }
    };
    let quality = match optional_text(index, obj, "quality")? {
        None => "GREEN".to_owned(),
        Some(q) => {
            let q = q.to_ascii_uppercase();
            if !QUALITIES.contains(&q.as_str()) {
                return Err(field_error(
                    index,
                    "quality",
                    format!("{q:?} is not GREEN, YELLOW or RED"),
                ));
            }
            q
        }
    };
    Ok(SenderSpec {
        phone_number_id: id("phone_number_id")?,
        display_phone_number: required("display_phone_number")?,
        waba_id: id("waba_id")?,
        portfolio_id: optional_text(index, obj, "portfolio_id")?,
        access_token: required("access_token")?,
        app_secret: required("app_secret")?,
        throughput_mps,
        quality,
    })
}

/// A string field (a JSON number is taken as its digits: ids are often written as
/// numbers); `None` when absent, null or blank.
fn optional_text(
    index: usize,
    obj: &Map<String, Value>,
    field: &str,
) -> Result<Option<String>, SendersError> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.trim().to_owned()).filter(|s| !s.is_empty())),
        Some(Value::Number(n)) if n.is_u64() => Ok(Some(n.to_string())),
        Some(other) => Err(field_error(
            index,
            field,
            format!("{other} is not a string"),
        )),
    }
}

/// Refusals that need the entries before this one: a number listed twice, an id that is
/// both a number and an account (the sim could not tell which one a path names), an
/// account placed in two portfolios.
fn check_against(
    index: usize,
    spec: &SenderSpec,
    earlier: &[SenderSpec],
) -> Result<(), SendersError> {
    for (i, e) in earlier.iter().enumerate() {
        if e.phone_number_id == spec.phone_number_id {
            return Err(field_error(
                index,
                "phone_number_id",
                format!("{:?} is already entry {i}", spec.phone_number_id),
            ));
        }
        if e.waba_id == spec.phone_number_id {
            return Err(field_error(
                index,
                "phone_number_id",
                format!("{:?} is the waba_id of entry {i}", spec.phone_number_id),
            ));
        }
        if e.phone_number_id == spec.waba_id {
            return Err(field_error(
                index,
                "waba_id",
                format!("{:?} is the phone_number_id of entry {i}", spec.waba_id),
            ));
        }
        if e.waba_id == spec.waba_id
            && spec.portfolio_id.is_some()
            && e.portfolio_id.is_some()
            && e.portfolio_id != spec.portfolio_id
        {
            return Err(field_error(
                index,
                "portfolio_id",
                format!(
                    "account {} is in portfolio {:?} at entry {i}",
                    spec.waba_id,
                    e.portfolio_id.as_deref().unwrap_or_default()
                ),
            ));
        }
    }
    if spec.phone_number_id == spec.waba_id {
        return Err(field_error(
            index,
            "waba_id",
            "must differ from phone_number_id",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = r#"[
        {"phone_number_id": "111", "display_phone_number": "15550001111", "waba_id": "911",
         "portfolio_id": "811", "access_token": "tok-a", "app_secret": "sec-a",
         "throughput_mps": 5, "quality": "yellow"},
        {"phone_number_id": 222, "display_phone_number": "15550002222", "waba_id": "922",
         "access_token": "tok-b", "app_secret": "sec-b"}
    ]"#;

    fn field_of(text: &str) -> (usize, String) {
        match parse(text) {
            Err(SendersError::Field { index, field, .. }) => (index, field),
            other => panic!("expected a field error, got {other:?}"),
        }
    }

    #[test]
    fn parses_two_numbers_with_defaults() {
        let s = parse(TWO).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].throughput_mps, Some(5));
        assert_eq!(s[0].quality, "YELLOW");
        assert_eq!(s[0].portfolio_id.as_deref(), Some("811"));
        assert_eq!(s[1].phone_number_id, "222");
        assert_eq!(s[1].throughput_mps, None);
        assert_eq!(s[1].quality, "GREEN");
        assert_eq!(s[1].portfolio_id, None);
    }

    #[test]
    fn unset_is_the_one_number_of_the_settings() {
        let config = SimConfig::default();
        let s = from_config(&config).unwrap();
        assert_eq!(s, vec![SenderSpec::from_config(&config)]);
        assert_eq!(s[0].phone_number_id, crate::config::DEFAULT_PHONE_NUMBER_ID);
        assert_eq!(s[0].throughput_mps, None);
    }

    #[test]
    fn refusals_name_the_entry_and_the_field() {
        assert!(matches!(parse("{"), Err(SendersError::Json(_))));
        assert_eq!(parse(r#"{"a": 1}"#), Err(SendersError::NotArray));
        assert_eq!(parse("[]"), Err(SendersError::Empty));
        assert_eq!(parse("[1]"), Err(SendersError::NotObject { index: 0 }));
        let base = r#"{"phone_number_id": "1", "display_phone_number": "155", "waba_id": "9", "access_token": "t", "app_secret": "s""#;
        let one = |extra: &str| format!("[{base}{extra}}}]");
        let second = |extra: &str| format!("[{base}}}, {base}{extra}}}]");
        assert_eq!(
            field_of(
                r#"[{"phone_number_id": "1", "waba_id": "9", "access_token": "t", "app_secret": "s"}]"#
            ),
            (0, "display_phone_number".into())
        );
        assert_eq!(
            field_of(&one(r#", "acces_token": "x""#)),
            (0, "acces_token".into())
        );
        assert_eq!(
            field_of(&one(r#", "throughput_mps": 0"#)),
            (0, "throughput_mps".into())
        );
        assert_eq!(
            field_of(&one(r#", "throughput_mps": "fast""#)),
            (0, "throughput_mps".into())
        );
        assert_eq!(
            field_of(&one(r#", "quality": "BLUE""#)),
            (0, "quality".into())
        );
        assert_eq!(
            field_of(&one(r#", "portfolio_id": ["x"]"#)),
            (0, "portfolio_id".into())
        );
        // The same phone number twice: the second entry is named.
        assert_eq!(field_of(&second("")), (1, "phone_number_id".into()));
        assert_eq!(
            field_of(
                r#"[{"phone_number_id": "1", "display_phone_number": "155", "waba_id": "1", "access_token": "t", "app_secret": "s"}]"#
            ),
            (0, "waba_id".into())
        );
        assert_eq!(
            field_of(
                r#"[{"phone_number_id": "a/b", "display_phone_number": "155", "waba_id": "9", "access_token": "t", "app_secret": "s"}]"#
            ),
            (0, "phone_number_id".into())
        );
    }

    #[test]
    fn the_message_names_path_entry_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("senders.json");
        std::fs::write(
            &path,
            r#"[{"phone_number_id": "1", "display_phone_number": "155", "waba_id": "9", "app_secret": "s"}]"#,
        )
        .unwrap();
        let message = load(&path).unwrap_err().to_string();
        assert!(message.contains(&path.display().to_string()), "{message}");
        assert!(
            message.contains("entry 0: field access_token: is required"),
            "{message}"
        );
        let missing = load(&dir.path().join("none.json")).unwrap_err();
        assert!(matches!(missing, SendersFileError::Read { .. }));
    }
}
