//! The CSV format: the header, records (a quoted field may hold line breaks) and their
//! five fields.

use std::io::{BufReader, Read};

use super::fields::{parse_bool, parse_phone, parse_score, parse_tags, shorten};
use super::lines::LineReader;
use super::{CSV_HEADER, ImportError, ImportRow, MAX_LINE_BYTES, RowError};

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

#[cfg(test)]
mod tests {
    use super::super::fields::push_tag;
    use super::super::test_input::{HEADER, Trickle};
    use super::*;
    use proptest::prelude::*;

    fn rows_of(text: &str) -> Vec<(u64, Result<ImportRow, RowError>)> {
        csv_rows(text.as_bytes()).unwrap().collect()
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
