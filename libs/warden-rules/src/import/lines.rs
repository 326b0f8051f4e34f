//! Physical lines of the input, each at most [`MAX_LINE_BYTES`], counted, without ever
//! buffering a longer one.

use std::io::{BufRead, ErrorKind};

use super::{ImportError, MAX_LINE_BYTES};

/// Reads physical lines (split on `\n`, a trailing `\r` dropped) of at most
/// [`MAX_LINE_BYTES`], counting them, without ever buffering a longer line.
pub(super) struct LineReader<R: BufRead> {
    input: R,
    /// Lines read so far: the number of the last one.
    pub(super) line: u64,
    /// The last line read, without its line break.
    pub(super) buf: Vec<u8>,
    /// The read error that ended the input.
    pub(super) failed: Option<ImportError>,
    finished: bool,
}

impl<R: BufRead> LineReader<R> {
    pub(super) fn new(input: R) -> Self {
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
    pub(super) fn next_line(&mut self) -> Option<bool> {
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
