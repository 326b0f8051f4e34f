//! The JSON-lines format: one object per line.

use std::io::{BufReader, Read};

use super::fields::{
    check_score, parse_bool, parse_phone, parse_score, parse_tags, push_tag, shorten,
};
use super::lines::LineReader;
use super::{ImportError, ImportRow, RowError};

/// Parses one JSON line (see the module docs for what is accepted).
pub fn parse_jsonl_line(line: &str) -> Result<ImportRow, RowError> {
    use serde_json::Value as J;
    let value: J = serde_json::from_str(line).map_err(|e| RowError::NotJson(e.to_string()))?;
    let J::Object(map) = value else {
        return Err(RowError::NotAnObject);
    };
    const KEYS: [&str; 6] = [
        "customer_id",
        "opt_in",
        "tags",
        "engagement_score",
        "opt_in_marketing",
        "opt_in_utility",
    ];
    if let Some(k) = map.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(RowError::UnknownKey { key: shorten(k) });
    }
    let phone = match map.get("customer_id") {
        None | Some(J::Null) => return Err(RowError::MissingCustomerId),
        Some(J::String(s)) => parse_phone(s)?,
        // A JSON number is refused like on every other path: `14155550101.0` would
        // otherwise name a different customer than "+14155550101".
        Some(other) => {
            return Err(RowError::CustomerIdNotText {
                got: shorten(&other.to_string()),
            });
        }
    };
    let json_bool = |field: &str, v: Option<&J>| -> Result<bool, RowError> {
        match v {
            None | Some(J::Null) => Err(RowError::Missing {
                field: field.to_string(),
            }),
            Some(J::Bool(b)) => Ok(*b),
            Some(J::Number(n)) if n.as_u64() == Some(1) => Ok(true),
            Some(J::Number(n)) if n.as_u64() == Some(0) => Ok(false),
            Some(J::String(s)) => parse_bool(field, s),
            Some(other) => Err(RowError::NotTrueOrFalse {
                field: field.to_string(),
                got: shorten(&other.to_string()),
            }),
        }
    };
    let flat = map.contains_key("opt_in_marketing") || map.contains_key("opt_in_utility");
    let (marketing, utility) = match map.get("opt_in") {
        Some(J::Object(o)) if !flat => {
            if let Some(k) = o.keys().find(|k| *k != "marketing" && *k != "utility") {
                return Err(RowError::OptInKey { key: shorten(k) });
            }
            (
                json_bool("opt_in.marketing", o.get("marketing"))?,
                json_bool("opt_in.utility", o.get("utility"))?,
            )
        }
        Some(_) if flat => {
            return Err(RowError::OptInBoth);
        }
        Some(other) => {
            return Err(RowError::OptInShape {
                got: shorten(&other.to_string()),
            });
        }
        None if flat => (
            json_bool("opt_in_marketing", map.get("opt_in_marketing"))?,
            json_bool("opt_in_utility", map.get("opt_in_utility"))?,
        ),
        None => return Err(RowError::MissingOptIn),
    };
    let mut tags = Vec::new();
    match map.get("tags") {
        None | Some(J::Null) => {}
        Some(J::String(s)) => tags = parse_tags(s),
        Some(J::Array(items)) => {
            for item in items {
                match item {
                    J::String(s) => push_tag(&mut tags, s),
                    other => {
                        return Err(RowError::TagNotText {
                            got: shorten(&other.to_string()),
                        });
                    }
                }
            }
        }
        Some(other) => {
            return Err(RowError::TagsShape {
                got: shorten(&other.to_string()),
            });
        }
    }
    let engagement_score = match map.get("engagement_score") {
        None | Some(J::Null) => 0.0,
        Some(J::Number(n)) => check_score(n.as_f64().unwrap_or(f64::NAN))?,
        Some(J::String(s)) => parse_score(s)?,
        Some(other) => {
            return Err(RowError::ScoreShape {
                got: shorten(&other.to_string()),
            });
        }
    };
    Ok(ImportRow {
        phone,
        opt_in_marketing: marketing,
        opt_in_utility: utility,
        tags,
        engagement_score,
    })
}

/// Streaming JSON-lines rows; see the module docs. Built by [`jsonl_rows`].
pub struct JsonlRows<R: Read> {
    lines: LineReader<BufReader<R>>,
}

/// An iterator over the rows of a JSON-lines input as `(line, Result<ImportRow, reason>)`.
pub fn jsonl_rows<R: Read>(input: R) -> JsonlRows<R> {
    JsonlRows {
        lines: LineReader::new(BufReader::with_capacity(64 * 1024, input)),
    }
}

impl<R: Read> JsonlRows<R> {
    /// The read error that ended the iteration early, if any.
    pub fn read_error(&self) -> Option<&ImportError> {
        self.lines.failed.as_ref()
    }
}

impl<R: Read> Iterator for JsonlRows<R> {
    type Item = (u64, Result<ImportRow, RowError>);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let too_long = self.lines.next_line()?;
            let line = self.lines.line;
            if too_long {
                return Some((line, Err(RowError::LineTooLong)));
            }
            let Ok(text) = std::str::from_utf8(&self.lines.buf) else {
                return Some((line, Err(RowError::LineNotUtf8)));
            };
            let text = if line == 1 {
                text.trim_start_matches('\u{feff}')
            } else {
                text
            };
            if text.trim().is_empty() {
                continue;
            }
            return Some((line, parse_jsonl_line(text)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::MAX_LINE_BYTES;
    use super::super::test_input::Trickle;
    use super::*;

    #[test]
    fn jsonl_lines() {
        let ok = parse_jsonl_line(
            r#"{"customer_id": "+628123456789", "opt_in": {"marketing": true, "utility": false}, "tags": ["vip", "vip", " b "], "engagement_score": 0.75}"#,
        )
        .unwrap();
        assert_eq!(ok.phone.digits(), "628123456789");
        assert!(ok.opt_in_marketing && !ok.opt_in_utility);
        assert_eq!(ok.tags, ["vip", "b"]);
        assert_eq!(ok.engagement_score, 0.75);
        let flat = parse_jsonl_line(
            r#"{"customer_id": "628123456789", "opt_in_marketing": "yes", "opt_in_utility": 0}"#,
        )
        .unwrap();
        for number in ["628123456789", "14155550101.0"] {
            let err = parse_jsonl_line(&format!(
                r#"{{"customer_id": {number}, "opt_in": {{"marketing": true, "utility": true}}}}"#
            ))
            .unwrap_err()
            .to_string();
            assert!(err.contains("must be text"), "{err}");
        }
        let upper = parse_jsonl_line(
            r#"{"customer_id": "628123456789", "opt_in": {"marketing": true, "utility": true}, "tags": ["VIP", "vip", "Beta"]}"#,
        )
        .unwrap();
        assert_eq!(upper.tags, ["vip", "beta"]);
        assert!(flat.opt_in_marketing && !flat.opt_in_utility);
        assert_eq!(flat.engagement_score, 0.0);
        let cases = [
            ("not json", "not valid JSON"),
            ("[1]", "JSON object"),
            (
                r#"{"opt_in": {"marketing": true, "utility": true}}"#,
                "missing customer_id",
            ),
            (
                r#"{"customer_id": "x", "opt_in": {"marketing": true, "utility": true}}"#,
                "customer_id \"x\"",
            ),
            (r#"{"customer_id": "628123456789"}"#, "missing opt_in"),
            (
                r#"{"customer_id": "628123456789", "opt_in": {"marketing": true}}"#,
                "missing opt_in.utility",
            ),
            (
                r#"{"customer_id": "628123456789", "opt_in": {"marketing": true, "utility": true, "sms": true}}"#,
                "\"sms\"",
            ),
            (
                r#"{"customer_id": "628123456789", "opt_in": true}"#,
                "opt_in must be an object",
            ),
            (
                r#"{"customer_id": "628123456789", "opt_in": {"marketing": "perhaps", "utility": true}}"#,
                "not a boolean",
            ),
            (
                r#"{"customer_id": "628123456789", "opt_in": {"marketing": true, "utility": true}, "tags": [1]}"#,
                "tags must be",
            ),
            (
                r#"{"customer_id": "628123456789", "opt_in": {"marketing": true, "utility": true}, "engagement_score": -0.5}"#,
                "at least 0",
            ),
            (
                r#"{"customer_id": "628123456789", "opt_in": {"marketing": true, "utility": true}, "name": "Ana"}"#,
                "unknown key \"name\"",
            ),
            (
                r#"{"customer_id": "628123456789", "opt_in": {"marketing": true, "utility": true}, "opt_in_marketing": true}"#,
                "not both",
            ),
        ];
        for (line, want) in cases {
            let e = parse_jsonl_line(line).unwrap_err().to_string();
            assert!(e.contains(want), "{line}: {e}");
        }
    }

    #[test]
    fn jsonl_stream_counts_lines_and_bounds_them() {
        let good = r#"{"customer_id": "628123456789", "opt_in": {"marketing": true, "utility": true}, "tags": [], "engagement_score": 0.5}"#;
        let huge = format!("{{\"customer_id\": \"{}\"}}", "9".repeat(MAX_LINE_BYTES));
        let text = format!("\u{feff}{good}\r\n\n   \nnope\n{huge}\n{good}");
        let mut it = jsonl_rows(Trickle(text.as_bytes()));
        let rows: Vec<_> = it.by_ref().collect();
        let lines: Vec<u64> = rows.iter().map(|(l, _)| *l).collect();
        assert_eq!(lines, [1, 4, 5, 6]);
        assert!(rows[0].1.is_ok());
        assert!(
            rows[1]
                .1
                .as_ref()
                .unwrap_err()
                .to_string()
                .contains("not valid JSON")
        );
        assert!(
            rows[2]
                .1
                .as_ref()
                .unwrap_err()
                .to_string()
                .contains("longer than")
        );
        assert!(rows[3].1.is_ok(), "last line without newline");
        assert!(it.read_error().is_none());
        assert_eq!(jsonl_rows("".as_bytes()).count(), 0);
    }
}
