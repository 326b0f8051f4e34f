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
//! Choices the contract leaves open:
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

use std::io::{BufRead, BufReader, ErrorKind, Read};

use crate::phone::PhoneNumber;

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

/// Parses an import boolean: `true`/`false`, `1`/`0`, `yes`/`no`, any case, trimmed.
pub fn parse_bool(field: &str, value: &str) -> Result<bool, RowError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => Ok(true),
        "false" | "0" | "no" => Ok(false),
        "" => Err(RowError::EmptyBool {
            field: field.to_string(),
        }),
        _ => Err(RowError::NotABool {
            field: field.to_string(),
            value: shorten(value),
        }),
    }
}

fn shorten(s: &str) -> String {
    if s.chars().count() > 40 {
        format!("{}...", s.chars().take(40).collect::<String>())
    } else {
        s.to_string()
    }
}

/// A phone number or a BSUID (`crate::bsuid::customer_key`).
fn parse_phone(raw: &str) -> Result<PhoneNumber, RowError> {
    crate::bsuid::customer_key(raw).map_err(|source| RowError::CustomerId {
        raw: shorten(raw),
        source,
    })
}

fn parse_score(raw: &str) -> Result<f64, RowError> {
    let t = raw.trim();
    if t.is_empty() {
        return Ok(0.0);
    }
    let v: f64 = t
        .parse()
        .map_err(|_| RowError::ScoreNotANumber { raw: shorten(raw) })?;
    check_score(v)
}

fn check_score(v: f64) -> Result<f64, RowError> {
    if !v.is_finite() || v < 0.0 {
        return Err(RowError::ScoreOutOfRange {
            value: v.to_string(),
        });
    }
    Ok(if v == 0.0 { 0.0 } else { v })
}

/// Tags are case-insensitive: stored lower-cased (`VIP` and `vip` are one tag).
fn push_tag(tags: &mut Vec<String>, tag: &str) {
    let t = crate::tags::normalize(tag);
    if !t.is_empty() && !tags.contains(&t) {
        tags.push(t);
    }
}

fn parse_tags(raw: &str) -> Vec<String> {
    let mut tags = Vec::new();
    for part in raw.split('|') {
        push_tag(&mut tags, part);
    }
    tags
}

/// Parses the five fields of one CSV data row.
pub fn parse_csv_fields<S: AsRef<str>>(fields: &[S]) -> Result<ImportRow, RowError> {
    if fields.len() != CSV_HEADER.len() {
        return Err(RowError::FieldCount {
            found: fields.len(),
        });
    }
    let f = |i: usize| fields[i].as_ref();
    Ok(ImportRow {
        phone: parse_phone(f(0))?,
        opt_in_marketing: parse_bool("opt_in_marketing", f(1))?,
        opt_in_utility: parse_bool("opt_in_utility", f(2))?,
        tags: parse_tags(f(3)),
        engagement_score: parse_score(f(4))?,
    })
}

/// Parses one CSV data line (not the header) on its own, with CSV quoting rules.
pub fn parse_csv_line(line: &str) -> Result<ImportRow, RowError> {
    parse_csv_record(line.as_bytes())
}

fn read_single_record(text: &[u8]) -> Result<csv::ByteRecord, RowError> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(text);
    let mut record = csv::ByteRecord::new();
    match reader.read_byte_record(&mut record) {
        Ok(true) => {}
        Ok(false) => return Err(RowError::EmptyLine),
        Err(e) => return Err(RowError::NotCsv(e.to_string())),
    }
    if !matches!(
        reader.read_byte_record(&mut csv::ByteRecord::new()),
        Ok(false)
    ) {
        return Err(RowError::SeveralRows);
    }
    Ok(record)
}

fn parse_csv_record(text: &[u8]) -> Result<ImportRow, RowError> {
    let record = read_single_record(text)?;
    let mut fields = Vec::with_capacity(record.len());
    for f in record.iter() {
        fields.push(std::str::from_utf8(f).map_err(|_| RowError::RowNotUtf8)?);
    }
    parse_csv_fields(&fields)
}

/// Reads physical lines (split on `\n`, a trailing `\r` dropped) of at most
/// [`MAX_LINE_BYTES`], counting them, without ever buffering a longer line.
struct LineReader<R: BufRead> {
    input: R,
    line: u64,
    buf: Vec<u8>,
    failed: Option<ImportError>,
    finished: bool,
}

impl<R: BufRead> LineReader<R> {
    fn new(input: R) -> Self {
        Self {
            input,
            line: 0,
            buf: Vec::new(),
            failed: None,
            finished: false,
        }
    }

    /// Reads the next line into `buf` and counts it. `Some(too_long)` for a line
    /// (`buf` is empty when too long), `None` at the end or after a read error.
    fn next_line(&mut self) -> Option<bool> {
        if self.finished || self.failed.is_some() {
            return None;
        }
        self.buf.clear();
        let mut too_long = false;
        let mut any = false;
        loop {
            let chunk = match self.input.fill_buf() {
                Ok(c) => c,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.failed = Some(ImportError::Read {
                        line: self.line + 1,
                        message: e.to_string(),
                    });
                    return None;
                }
            };
            if chunk.is_empty() {
                self.finished = true;
                if !any {
                    return None;
                }
                break;
            }
            any = true;
            let (take, newline) = match chunk.iter().position(|b| *b == b'\n') {
                Some(i) => (i, true),
                None => (chunk.len(), false),
            };
            if !too_long {
                if self.buf.len() + take > MAX_LINE_BYTES {
                    too_long = true;
                    self.buf.clear();
                } else {
                    self.buf.extend_from_slice(&chunk[..take]);
                }
            }
            self.input.consume(take + usize::from(newline));
            if newline {
                break;
            }
        }
        self.line += 1;
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
        }
        Some(too_long)
    }
}

/// Where a CSV scan is, to tell whether a line break ends the record or sits inside
/// a quoted field (the csv crate's rules: quotes open a field only at its start,
/// `""` inside quotes is a literal quote).
#[derive(Clone, Copy, PartialEq, Eq)]
enum QuoteState {
    FieldStart,
    Unquoted,
    Quoted,
    QuoteInQuoted,
}

fn scan_quotes(mut state: QuoteState, bytes: &[u8]) -> QuoteState {
    use QuoteState::*;
    for &b in bytes {
        state = match (state, b) {
            (FieldStart, b'"') => Quoted,
            (FieldStart | Unquoted, b',') => FieldStart,
            (FieldStart | Unquoted, _) => Unquoted,
            (Quoted, b'"') => QuoteInQuoted,
            (Quoted, _) => Quoted,
            (QuoteInQuoted, b'"') => Quoted,
            (QuoteInQuoted, b',') => FieldStart,
            (QuoteInQuoted, _) => Unquoted,
        };
    }
    state
}

/// Streaming CSV rows; see the module docs. Built by [`csv_rows`].
pub struct CsvRows<R: Read> {
    lines: LineReader<BufReader<R>>,
    record: Vec<u8>,
}

/// Reads and checks the header from `input` (the first non-blank line), then returns
/// an iterator over the data rows as `(line, Result<ImportRow, reason>)`.
pub fn csv_rows<R: Read>(input: R) -> Result<CsvRows<R>, ImportError> {
    let mut rows = CsvRows {
        lines: LineReader::new(BufReader::with_capacity(64 * 1024, input)),
        record: Vec::new(),
    };
    let bad = |found: String| ImportError::BadHeader {
        found: shorten(&found),
    };
    match rows.next_record() {
        None => Err(rows
            .lines
            .failed
            .take()
            .unwrap_or(ImportError::MissingHeader)),
        Some((_, Err(reason))) => Err(bad(reason.to_string())),
        Some((_, Ok(()))) => {
            let record = read_single_record(&rows.record)
                .map_err(|_| bad(String::from_utf8_lossy(&rows.record).into()))?;
            let names: Vec<String> = record
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let s = String::from_utf8_lossy(f);
                    let s = if i == 0 {
                        s.trim_start_matches('\u{feff}')
                    } else {
                        &s
                    };
                    s.trim().to_ascii_lowercase()
                })
                .collect();
            if names != CSV_HEADER {
                return Err(bad(names.join(",")));
            }
            Ok(rows)
        }
    }
}

impl<R: Read> CsvRows<R> {
    /// The read error that ended the iteration early, if any (the file is then
    /// incomplete and the import should fail).
    pub fn read_error(&self) -> Option<&ImportError> {
        self.lines.failed.as_ref()
    }

    /// Assembles the next non-blank record (one line, or several when a quoted field
    /// holds line breaks) into `self.record`; returns its first line.
    fn next_record(&mut self) -> Option<(u64, Result<(), RowError>)> {
        loop {
            let too_long = self.lines.next_line()?;
            let start = self.lines.line;
            self.record.clear();
            if too_long {
                return Some((start, Err(RowError::RowTooLong)));
            }
            if self.lines.buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            self.record.extend_from_slice(&self.lines.buf);
            let mut state = scan_quotes(QuoteState::FieldStart, &self.lines.buf);
            let mut over = false;
            while state == QuoteState::Quoted {
                match self.lines.next_line() {
                    None if self.lines.failed.is_some() => return None,
                    // End of input inside quotes: the csv parser closes the field.
                    None => break,
                    // A too-long physical line: give up on this record there.
                    Some(true) => {
                        over = true;
                        break;
                    }
                    Some(false) => {
                        if over || self.record.len() + 1 + self.lines.buf.len() > MAX_LINE_BYTES {
                            over = true;
                        } else {
                            self.record.push(b'\n');
                            self.record.extend_from_slice(&self.lines.buf);
                        }
                        state = scan_quotes(state, &self.lines.buf);
                    }
                }
            }
            if over {
                self.record.clear();
                return Some((start, Err(RowError::RowTooLong)));
            }
            return Some((start, Ok(())));
        }
    }
}

impl<R: Read> Iterator for CsvRows<R> {
    type Item = (u64, Result<ImportRow, RowError>);

    fn next(&mut self) -> Option<Self::Item> {
        let (line, assembled) = self.next_record()?;
        Some((
            line,
            assembled.and_then(|()| parse_csv_record(&self.record)),
        ))
    }
}

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
    use super::*;
    use proptest::prelude::*;

    const HEADER: &str = "customer_id,opt_in_marketing,opt_in_utility,tags,engagement_score";

    fn rows_of(text: &str) -> Vec<(u64, Result<ImportRow, String>)> {
        csv_rows(text.as_bytes())
            .unwrap()
            .map(|(line, row)| (line, row.map_err(|e| e.to_string())))
            .collect()
    }

    #[test]
    fn csv_rows_with_line_numbers() {
        let text = format!(
            "{HEADER}\n+628123456789,true,false,vip|beta,0.5\n628111111111,YES,No,,\nbad,true,true,,0.1\n\n14155550100,1,0,\" a | b |a\",1e-05\n"
        );
        let rows = rows_of(&text);
        assert_eq!(rows.len(), 4, "{rows:?}");
        let (l, r) = &rows[0];
        assert_eq!(*l, 2);
        let r = r.as_ref().unwrap();
        assert_eq!(r.phone.digits(), "628123456789");
        assert!(r.opt_in_marketing && !r.opt_in_utility);
        assert_eq!(r.tags, ["vip", "beta"]);
        assert_eq!(r.engagement_score, 0.5);
        let (l, r) = &rows[1];
        assert_eq!(*l, 3);
        let r = r.as_ref().unwrap();
        assert!(r.tags.is_empty());
        assert_eq!(r.engagement_score, 0.0);
        assert_eq!(rows[2].0, 4);
        assert!(
            rows[2]
                .1
                .as_ref()
                .unwrap_err()
                .to_string()
                .contains("customer_id \"bad\"")
        );
        assert_eq!(rows[3].0, 6, "blank line 5 is skipped but counted");
        let r = rows[3].1.as_ref().unwrap();
        assert_eq!(r.tags, ["a", "b"]);
        assert_eq!(r.engagement_score, 1e-05);
    }

    #[test]
    fn csv_row_errors() {
        let cases = [
            ("628123456789,true,false,vip", "expected 5 fields"),
            ("628123456789,true,false,vip,0.5,extra", "found 6"),
            (
                "628123456789,maybe,false,,0.5",
                "opt_in_marketing \"maybe\" is not a boolean",
            ),
            ("628123456789,true,,,0.5", "opt_in_utility is empty"),
            ("628123456789,true,true,,-1", "at least 0"),
            ("628123456789,true,true,,NaN", "finite"),
            ("628123456789,true,true,,inf", "finite"),
            ("628123456789,true,true,,high", "not a number"),
            ("0812345678,true,true,,1", "starts with 0"),
        ];
        for (line, want) in cases {
            let e = parse_csv_line(line).unwrap_err().to_string();
            assert!(e.contains(want), "{line}: {e}");
            let rows = rows_of(&format!("{HEADER}\n{line}\n"));
            assert_eq!(rows[0].0, 2);
            assert!(rows[0].1.as_ref().unwrap_err().to_string().contains(want));
        }
        assert!(parse_csv_line("").is_err());
        assert!(
            parse_csv_line("a\nb")
                .unwrap_err()
                .to_string()
                .contains("more than one")
        );
    }

    #[test]
    fn multi_line_quoted_fields_keep_line_numbers() {
        let text =
            format!("{HEADER}\n628123456789,true,true,\"a\nb\",0.1\n628123456780,true,true,,0.2\n");
        let rows = rows_of(&text);
        assert_eq!(rows[0].0, 2);
        assert_eq!(rows[1].0, 4);
        assert!(rows[1].1.is_ok());
    }

    #[test]
    fn header_errors() {
        assert_eq!(
            csv_rows("".as_bytes()).err(),
            Some(ImportError::MissingHeader)
        );
        assert_eq!(
            csv_rows("\n\n".as_bytes()).err(),
            Some(ImportError::MissingHeader)
        );
        let e = csv_rows("phone,opt_in_marketing\n1,2\n".as_bytes())
            .err()
            .unwrap();
        assert!(matches!(e, ImportError::BadHeader { .. }));
        assert!(e.to_string().starts_with("line 1: the header must be"));
        let e = csv_rows("+628123456789,true,true,,0.5\n".as_bytes())
            .err()
            .unwrap();
        assert!(
            matches!(e, ImportError::BadHeader { .. }),
            "data without header"
        );
        let ok = "\u{feff} Customer_ID , opt_in_marketing,opt_in_utility,tags,engagement_score\r\n628123456789,true,true,,0.5\r\n";
        let rows = rows_of(ok);
        assert_eq!(rows.len(), 1);
        assert!(rows[0].1.is_ok());
        let reordered = "opt_in_marketing,customer_id,opt_in_utility,tags,engagement_score\n";
        assert!(csv_rows(reordered.as_bytes()).is_err());
    }

    #[test]
    fn invalid_utf8_is_a_row_error() {
        let mut bytes = format!("{HEADER}\n").into_bytes();
        bytes.extend_from_slice(b"628123456789,true,true,\xff,0.5\n628123456780,true,true,,0.5\n");
        let rows: Vec<_> = csv_rows(&bytes[..]).unwrap().collect();
        assert_eq!(rows.len(), 2);
        assert!(
            rows[0]
                .1
                .as_ref()
                .unwrap_err()
                .to_string()
                .contains("UTF-8")
        );
        assert!(rows[1].1.is_ok());
    }

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

    /// Hands out at most 7 bytes per read, to cross every buffer boundary.
    struct Trickle<'a>(&'a [u8]);
    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(7).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn quotes_decide_where_a_csv_record_ends() {
        // A stray quote inside an unquoted field is literal and does not swallow the next row.
        let text = format!(
            "{HEADER}\n628123456789,true,true,o\"brien,0.5\n628123456780,true,true,\"x\"\"y\",0.5\n"
        );
        let rows: Vec<_> = csv_rows(Trickle(text.as_bytes())).unwrap().collect();
        assert_eq!(rows.len(), 2, "{rows:?}");
        assert_eq!(rows[0].1.as_ref().unwrap().tags, ["o\"brien"]);
        assert_eq!(rows[1].0, 3);
        assert_eq!(rows[1].1.as_ref().unwrap().tags, ["x\"y"]);
        // An unterminated quote at the end of input closes at the end.
        let text = format!("{HEADER}\n628123456789,true,true,\"a,0.5");
        let rows = rows_of(&text);
        assert_eq!(rows.len(), 1);
        assert!(
            rows[0]
                .1
                .as_ref()
                .unwrap_err()
                .to_string()
                .contains("expected 5 fields")
        );
    }

    #[test]
    fn overlong_csv_rows_are_skipped() {
        let long = "a".repeat(MAX_LINE_BYTES);
        let text = format!(
            "{HEADER}\n628123456789,true,true,{long},0.5\n628123456780,true,true,\"x\n{long}\ny\",0.5\n628123456781,yes,no,,1\n"
        );
        let rows: Vec<_> = csv_rows(Trickle(text.as_bytes())).unwrap().collect();
        let lines: Vec<u64> = rows.iter().map(|(l, _)| *l).collect();
        assert_eq!(lines, [2, 3, 6]);
        assert!(
            rows[0]
                .1
                .as_ref()
                .unwrap_err()
                .to_string()
                .contains("longer than")
        );
        assert!(
            rows[1]
                .1
                .as_ref()
                .unwrap_err()
                .to_string()
                .contains("longer than")
        );
        assert!(rows[2].1.is_ok());
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

    fn arb_row() -> impl Strategy<Value = (String, bool, bool, Vec<String>, f64)> {
        (
            "[1-9][0-9]{7,14}",
            any::<bool>(),
            any::<bool>(),
            prop::collection::vec("[a-z][a-z0-9_,\" ]{0,8}[a-z]", 0..4),
            0.0f64..1000.0,
        )
    }

    proptest! {
        #[test]
        fn line_parsers_never_panic(s in "\\PC{0,200}") {
            let _ = parse_csv_line(&s);
            let _ = parse_jsonl_line(&s);
            let _ = csv_rows(s.as_bytes()).map(|r| r.count());
            let _ = jsonl_rows(s.as_bytes()).count();
        }

        #[test]
        fn csv_written_by_a_csv_writer_reads_back(rows in prop::collection::vec(arb_row(), 0..20), bad_at in 0usize..20) {
            let mut w = csv::WriterBuilder::new().terminator(csv::Terminator::Any(b'\n')).from_writer(Vec::new());
            w.write_record(CSV_HEADER).unwrap();
            let mut expected_lines = Vec::new();
            let mut line = 1u64;
            let mut bad_line = None;
            for (i, (id, m, u, tags, score)) in rows.iter().enumerate() {
                if i == bad_at {
                    w.flush().unwrap();
                    w.write_record(["nope", "true", "true", "", "0"]).unwrap();
                    line += 1;
                    bad_line = Some(line);
                }
                let joined = tags.join("|");
                w.write_record([id.as_str(), if *m { "true" } else { "0" }, if *u { "YES" } else { "no" }, joined.as_str(), &score.to_string()]).unwrap();
                line += 1;
                expected_lines.push(line);
            }
            let bytes = w.into_inner().unwrap();
            let parsed: Vec<_> = csv_rows(&bytes[..]).unwrap().collect();
            let mut good = 0;
            for (l, r) in &parsed {
                match r {
                    Ok(row) => {
                        let (id, m, u, tags, score) = &rows[good];
                        prop_assert_eq!(*l, expected_lines[good]);
                        prop_assert_eq!(row.phone.digits(), id.as_str());
                        prop_assert_eq!((row.opt_in_marketing, row.opt_in_utility), (*m, *u));
                        prop_assert_eq!(row.engagement_score, *score);
                        let mut want: Vec<String> = Vec::new();
                        for t in tags { push_tag(&mut want, t); }
                        prop_assert_eq!(&row.tags, &want);
                        good += 1;
                    }
                    Err(_) => prop_assert_eq!(Some(*l), bad_line),
                }
            }
            prop_assert_eq!(good, rows.len());
        }
    }
}
