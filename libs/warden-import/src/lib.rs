//! `warden-admin customers import FILE`: upsert customers from CSV or JSON lines.
//!
//! The file is streamed row by row and written in batches of [`BATCH`] rows, so memory
//! stays bounded whatever the file size. Bad rows are reported as `line N: reason` and
//! skipped; good rows are kept. Re-importing a file changes nothing (upsert by customer).
//! A row that would opt a customer back in to what they opted out of themselves (STOP,
//! the platform's preference event) is skipped and reported: only the customer lifts it.

use std::fmt::Display;
use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::Path;
use std::time::Instant;

use diesel_async::AsyncPgConnection;
use indicatif::{ProgressBar, ProgressStyle};
use warden_rules::import::{ImportError, ImportFormat, ImportRow, csv_rows, jsonl_rows};
use warden_store::DbError;

/// Rows per INSERT: large enough to amortise round trips, small enough for bounded memory.
pub const BATCH: usize = 1000;

#[derive(Debug, thiserror::Error)]
pub enum ImportFailure {
    #[error("cannot open {path}: {reason}")]
    Open { path: String, reason: String },
    #[error("{0}")]
    Format(#[from] ImportError),
    #[error("database: {0}")]
    Database(#[from] DbError),
}

#[derive(Debug, Default, Clone, PartialEq)]
pub struct ImportSummary {
    /// Valid rows written (inserted or updated).
    pub imported: u64,
    /// Rows that created a new customer.
    pub created: u64,
    /// Rows reported and skipped: bad rows, and rows that would lift a customer's own
    /// opt-out (only the customer lifts it).
    pub skipped: u64,
    /// Of `skipped`, the rows skipped to keep a customer's own opt-out.
    pub kept_opt_outs: u64,
    pub seconds: f64,
}

impl std::fmt::Display for ImportSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "imported {} customers ({} new, {} updated), skipped {} rows ({} kept a customer's own opt-out) in {:.1}s",
            self.imported,
            self.created,
            self.imported - self.created,
            self.skipped,
            self.kept_opt_outs,
            self.seconds
        )
    }
}

/// Import `path` (format from its extension: `.jsonl`/`.ndjson` are JSON lines, else CSV).
/// Bad rows go to `report` as `line N: reason`; a progress bar goes to stderr on a terminal.
pub async fn import_file(
    conn: &mut AsyncPgConnection,
    path: &Path,
    report: &mut dyn Write,
) -> Result<ImportSummary, ImportFailure> {
    let file = File::open(path).map_err(|e| ImportFailure::Open {
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let progress = ProgressBar::new(size).with_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} ({eta})",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let reader = BufReader::with_capacity(256 * 1024, progress.wrap_read(file));
    let format = ImportFormat::from_file_name(&path.to_string_lossy());
    let result = import_reader(conn, reader, format, report).await;
    progress.finish_and_clear();
    result
}

/// Import from any reader (tests, stdin).
pub async fn import_reader<R: Read>(
    conn: &mut AsyncPgConnection,
    reader: R,
    format: ImportFormat,
    report: &mut dyn Write,
) -> Result<ImportSummary, ImportFailure> {
    let started = Instant::now();
    let mut summary = match format {
        ImportFormat::Csv => import_rows(conn, csv_rows(reader)?, report).await?,
        ImportFormat::JsonLines => import_rows(conn, jsonl_rows(reader), report).await?,
    };
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// Parsed rows (`(line, row or why it is bad)`) written in batches of [`BATCH`].
async fn import_rows<E: Display>(
    conn: &mut AsyncPgConnection,
    rows: impl Iterator<Item = (u64, Result<ImportRow, E>)>,
    report: &mut dyn Write,
) -> Result<ImportSummary, ImportFailure> {
    let mut summary = ImportSummary::default();
    let mut batch: Vec<(u64, ImportRow)> = Vec::with_capacity(BATCH);
    for (line, row) in rows {
        match row {
            Ok(row) => {
                batch.push((line, row));
                if batch.len() == BATCH {
                    write_batch(conn, &mut batch, &mut summary, report).await?;
                }
            }
            Err(reason) => {
                summary.skipped += 1;
                let _ = writeln!(report, "line {line}: {reason}");
            }
        }
    }
    write_batch(conn, &mut batch, &mut summary, report).await?;
    Ok(summary)
}

/// Write one batch through the core's import use case and report what it kept out.
async fn write_batch(
    conn: &mut AsyncPgConnection,
    batch: &mut Vec<(u64, ImportRow)>,
    summary: &mut ImportSummary,
    report: &mut dyn Write,
) -> Result<(), ImportFailure> {
    if batch.is_empty() {
        return Ok(());
    }
    let outcome = warden_core::customers::import::import_batch(conn, batch).await?;
    summary.imported += outcome.imported;
    summary.created += outcome.created;
    for kept in outcome.kept_opt_outs {
        summary.skipped += 1;
        summary.kept_opt_outs += 1;
        let _ = writeln!(report, "line {}: {kept}", kept.line);
    }
    batch.clear();
    Ok(())
}
