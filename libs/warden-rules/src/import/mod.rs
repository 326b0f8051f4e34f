//! Customer import rows (`warden-admin customers import FILE`), parsed as a stream.
//!
//! Formats (docs/operations.md, Operator CLI):
//! - CSV with the header `customer_id,opt_in_marketing,opt_in_utility,tags,engagement_score`;
//!   booleans `true`/`false`, `1`/`0`, `yes`/`no` (any case); tags joined with `|`.
//! - JSON lines: one object per line with `customer_id`, `opt_in: {marketing, utility}`,
//!   `tags: [..]`, `engagement_score`.
//!
//! The iterators yield `(line, Result<ImportRow, reason>)` one row at a time, so a file
//! of millions of rows is read in bounded memory; lines count from 1 and the CSV header
//! is line 1. Bad rows are reported and the caller skips them; only a missing or wrong
//! header, or a read failure, concerns the whole file ([`ImportError`]).
//!
//! The rules for what the file format leaves open:
//! - an empty `engagement_score` (or a missing/null one in JSON) is `0.0`; any finite
//!   number `>= 0` is accepted (no upper bound, scores are the operator's scale);
//! - an empty opt-in value is an error, not a default: importing consent must be explicit;
//! - tags are trimmed, empty parts dropped and duplicates removed, order kept;
//! - the CSV header is the first non-blank line, matched in order after trimming and
//!   ignoring case and a UTF-8 BOM;
//! - a row (a CSV record may span lines inside quotes) longer than [`MAX_LINE_BYTES`]
//!   is a bad row; it is skipped without being held in memory;
//! - JSON lines also accept flat `opt_in_marketing`/`opt_in_utility`, a `customer_id`
//!   given as a number, and booleans as `0`/`1` or the CSV words; unknown keys are errors;
//! - blank lines are skipped (they still count for line numbers).
//!
//! By concern: the rows and errors here, the fields of a row (`fields`), bounded line
//! reading (`lines`), the CSV format (`csv_format`) and the JSON-lines format (`jsonl`).

mod csv_format;
mod fields;
mod jsonl;
mod lines;

use crate::phone::PhoneNumber;

pub use csv_format::{CsvRows, csv_rows, parse_csv_fields, parse_csv_line};
pub use fields::parse_bool;
pub use jsonl::{JsonlRows, jsonl_rows, parse_jsonl_line};

/// The CSV header, in order.
pub const CSV_HEADER: [&str; 5] = [
    "customer_id",
    "opt_in_marketing",
    "opt_in_utility",
    "tags",
    "engagement_score",
];

/// Longest row accepted (a JSON line or a CSV record); longer ones are reported as
/// bad rows without being buffered, which keeps memory bounded on any input.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// One valid customer row.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportRow {
    /// The customer (canonical).
    pub phone: PhoneNumber,
    /// Opted in to marketing.
    pub opt_in_marketing: bool,
    /// Opted in to utility.
    pub opt_in_utility: bool,
    /// Tags, trimmed and de-duplicated.
    pub tags: Vec<String>,
    /// Finite, `>= 0`.
    pub engagement_score: f64,
}

/// A problem with the file as a whole: the import cannot go on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImportError {
    /// Nothing in the file.
    #[error(
        "the file is empty; a CSV import needs the header customer_id,opt_in_marketing,opt_in_utility,tags,engagement_score on line 1"
    )]
    MissingHeader,
    /// Line 1 is not the header.
    #[error(
        "line 1: the header must be customer_id,opt_in_marketing,opt_in_utility,tags,engagement_score, found {found:?}"
    )]
    BadHeader {
        /// What line 1 holds (shortened).
        found: String,
    },
    /// The input could not be read.
    #[error("cannot read the file at line {line}: {message}")]
    Read {
        /// The line being read.
        line: u64,
        /// The I/O error.
        message: String,
    },
}

/// Why one row was skipped (`line N: reason`); the text says what to fix.
// Each variant is documented by its message.
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RowError {
    #[error("{field} is empty; use true/false, 1/0 or yes/no")]
    EmptyBool { field: String },
    #[error("{field} {value:?} is not a boolean; use true/false, 1/0 or yes/no")]
    NotABool { field: String, value: String },
    #[error("customer_id {raw:?}: {source}")]
    CustomerId {
        raw: String,
        source: crate::bsuid::CustomerIdError,
    },
    #[error("engagement_score {raw:?} is not a number")]
    ScoreNotANumber { raw: String },
    #[error("engagement_score {value} must be a finite number of at least 0")]
    ScoreOutOfRange { value: String },
    #[error(
        "expected 5 fields (customer_id,opt_in_marketing,opt_in_utility,tags,engagement_score), found {found}"
    )]
    FieldCount { found: usize },
    #[error("the line is empty")]
    EmptyLine,
    #[error("not a CSV row: {0}")]
    NotCsv(String),
    #[error("the text holds more than one CSV row")]
    SeveralRows,
    #[error("the row is not valid UTF-8")]
    RowNotUtf8,
    #[error("the row is longer than {MAX_LINE_BYTES} bytes")]
    RowTooLong,
    #[error("not valid JSON: {0}")]
    NotJson(String),
    #[error("each line must be a JSON object")]
    NotAnObject,
    #[error(
        "unknown key {key:?}; allowed: customer_id, opt_in {{marketing, utility}}, tags, engagement_score"
    )]
    UnknownKey { key: String },
    #[error("missing customer_id")]
    MissingCustomerId,
    #[error("customer_id must be text (a quoted phone number), got {got}")]
    CustomerIdNotText { got: String },
    #[error("missing {field}")]
    Missing { field: String },
    #[error("{field} must be true or false, got {got}")]
    NotTrueOrFalse { field: String, got: String },
    #[error("opt_in has unknown key {key:?}; allowed: marketing, utility")]
    OptInKey { key: String },
    #[error("give opt_in {{marketing, utility}} or opt_in_marketing/opt_in_utility, not both")]
    OptInBoth,
    #[error("opt_in must be an object {{\"marketing\": true, \"utility\": true}}, got {got}")]
    OptInShape { got: String },
    #[error("missing opt_in {{\"marketing\": .., \"utility\": ..}}")]
    MissingOptIn,
    #[error("tags must be a list of strings, found {got}")]
    TagNotText { got: String },
    #[error("tags must be a list of strings, got {got}")]
    TagsShape { got: String },
    #[error("engagement_score must be a number, got {got}")]
    ScoreShape { got: String },
    #[error("the line is longer than {MAX_LINE_BYTES} bytes")]
    LineTooLong,
    #[error("the line is not valid UTF-8")]
    LineNotUtf8,
}

/// The two import formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImportFormat {
    /// Comma-separated with the header.
    Csv,
    /// One JSON object per line.
    JsonLines,
}

impl ImportFormat {
    /// `.jsonl` / `.ndjson` (any case) are JSON lines; everything else is CSV.
    pub fn from_file_name(name: &str) -> ImportFormat {
        let lower = name.to_ascii_lowercase();
        if lower.ends_with(".jsonl") || lower.ends_with(".ndjson") {
            ImportFormat::JsonLines
        } else {
            ImportFormat::Csv
        }
    }
}

#[cfg(test)]
mod test_input {
    use std::io::Read;

    /// The CSV header line.
    pub(super) const HEADER: &str =
        "customer_id,opt_in_marketing,opt_in_utility,tags,engagement_score";

    /// Hands out at most 7 bytes per read, to cross every buffer boundary.
    pub(super) struct Trickle<'a>(pub(super) &'a [u8]);
    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(7).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_input::HEADER;
    use super::*;
    use proptest::prelude::*;
    use std::io::Read;

    #[test]
    fn read_errors_stop_the_stream() {
        struct Failing(bool);
        impl Read for Failing {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                if self.0 {
                    return Err(std::io::Error::other("disk on fire"));
                }
                self.0 = true;
                let text = format!("{HEADER}\n628123456789,true,true,,0.5\n");
                buf[..text.len()].copy_from_slice(text.as_bytes());
                Ok(text.len())
            }
        }
        let mut rows = csv_rows(Failing(false)).unwrap();
        assert!(rows.next().unwrap().1.is_ok());
        assert!(rows.next().is_none());
        assert!(
            rows.read_error()
                .unwrap()
                .to_string()
                .contains("disk on fire")
        );
        let mut j = jsonl_rows(std::io::BufReader::new(Failing(true)));
        assert!(j.next().is_none());
        assert!(j.read_error().is_some());
    }

    #[test]
    fn formats_by_file_name() {
        assert_eq!(
            ImportFormat::from_file_name("a.jsonl"),
            ImportFormat::JsonLines
        );
        assert_eq!(
            ImportFormat::from_file_name("A.NDJSON"),
            ImportFormat::JsonLines
        );
        assert_eq!(ImportFormat::from_file_name("a.csv"), ImportFormat::Csv);
        assert_eq!(ImportFormat::from_file_name("a"), ImportFormat::Csv);
    }

    proptest! {
        #[test]
        fn line_parsers_never_panic(s in "\\PC{0,200}") {
            let _ = parse_csv_line(&s);
            let _ = parse_jsonl_line(&s);
            let _ = csv_rows(s.as_bytes()).map(|r| r.count());
            let _ = jsonl_rows(s.as_bytes()).count();
        }

    }
}
