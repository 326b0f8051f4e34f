//! `warden-admin customers import FILE`: upsert customers from CSV or JSON lines.
//!
//! The file is streamed row by row and written in batches of [`BATCH`] rows, so memory
//! stays bounded whatever the file size. Bad rows are reported as `line N: reason` and
//! skipped; good rows are kept. Re-importing a file changes nothing (upsert by customer).

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::Path;
use std::time::Instant;

use diesel::prelude::*;
use diesel::upsert::excluded;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use indicatif::{ProgressBar, ProgressStyle};
use warden_rules::import::{ImportError, ImportFormat, ImportRow, csv_rows, jsonl_rows};
use warden_store::schema::customers;

/// Rows per INSERT: large enough to amortise round trips, small enough for bounded memory.
pub const BATCH: usize = 1000;

#[derive(Debug, thiserror::Error)]
pub enum ImportFailure {
    #[error("cannot open {path}: {reason}")]
    Open { path: String, reason: String },
    #[error("{0}")]
    Format(#[from] ImportError),
    #[error("database: {0}")]
    Database(#[from] diesel::result::Error),
}

#[derive(Debug, Default, Clone, PartialEq)]
pub struct ImportSummary {
    /// Valid rows written (inserted or updated).
    pub imported: u64,
    /// Rows that created a new customer.
    pub created: u64,
    /// Bad rows reported and skipped.
    pub skipped: u64,
    pub seconds: f64,
}

impl std::fmt::Display for ImportSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "imported {} customers ({} new, {} updated), skipped {} bad rows in {:.1}s",
            self.imported,
            self.created,
            self.imported - self.created,
            self.skipped,
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
    let mut summary = ImportSummary::default();
    let mut batch: Vec<ImportRow> = Vec::with_capacity(BATCH);
    let rows: Box<dyn Iterator<Item = (u64, Result<ImportRow, String>)>> = match format {
        ImportFormat::Csv => Box::new(csv_rows(reader)?),
        ImportFormat::JsonLines => Box::new(jsonl_rows(reader)),
    };
    for (line, row) in rows {
        match row {
            Ok(row) => {
                batch.push(row);
                if batch.len() == BATCH {
                    write_batch(conn, &mut batch, &mut summary).await?;
                }
            }
            Err(reason) => {
                summary.skipped += 1;
                let _ = writeln!(report, "line {line}: {reason}");
            }
        }
    }
    write_batch(conn, &mut batch, &mut summary).await?;
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}

async fn write_batch(
    conn: &mut AsyncPgConnection,
    batch: &mut Vec<ImportRow>,
    summary: &mut ImportSummary,
) -> Result<(), ImportFailure> {
    if batch.is_empty() {
        return Ok(());
    }
    // One INSERT cannot touch a row twice: the last line for a customer wins.
    let mut last: HashMap<&str, &ImportRow> = HashMap::with_capacity(batch.len());
    for row in batch.iter() {
        last.insert(row.phone.digits(), row);
    }
    let values: Vec<_> = last
        .values()
        .map(|r| {
            (
                customers::phone.eq(r.phone.digits()),
                customers::country.eq(r.phone.pricing_country()),
                customers::opt_in_marketing.eq(r.opt_in_marketing),
                customers::opt_in_utility.eq(r.opt_in_utility),
                customers::tags.eq(&r.tags),
                customers::engagement_score.eq(r.engagement_score),
            )
        })
        .collect();
    // `xmax = 0` is true for freshly inserted rows, false for updated ones.
    let inserted: Vec<bool> = diesel::insert_into(customers::table)
        .values(values)
        .on_conflict(customers::phone)
        .do_update()
        .set((
            customers::opt_in_marketing.eq(excluded(customers::opt_in_marketing)),
            customers::opt_in_utility.eq(excluded(customers::opt_in_utility)),
            customers::tags.eq(excluded(customers::tags)),
            customers::engagement_score.eq(excluded(customers::engagement_score)),
            customers::country.eq(excluded(customers::country)),
            customers::updated_at.eq(diesel::dsl::now),
        ))
        .returning(diesel::dsl::sql::<diesel::sql_types::Bool>("(xmax = 0)"))
        .get_results(conn)
        .await?;
    summary.imported += inserted.len() as u64;
    summary.created += inserted.iter().filter(|new| **new).count() as u64;
    batch.clear();
    Ok(())
}
