//! `warden-admin customers import FILE`: upsert customers from CSV or JSON lines.
//!
//! The file is streamed row by row and written in batches of [`BATCH`] rows, so memory
//! stays bounded whatever the file size. Bad rows are reported as `line N: reason` and
//! skipped; good rows are kept. Re-importing a file changes nothing (upsert by customer).
//! A row that would opt a customer back in to what they opted out of themselves (STOP,
//! the platform's preference event) is skipped and reported: only the customer lifts it.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::Path;
use std::time::Instant;

use diesel::prelude::*;
use diesel::upsert::excluded;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use indicatif::{ProgressBar, ProgressStyle};
use warden_rules::import::{ImportError, ImportFormat, ImportRow, RowError, csv_rows, jsonl_rows};
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
    let mut summary = ImportSummary::default();
    let mut batch: Vec<(u64, ImportRow)> = Vec::with_capacity(BATCH);
    let rows: Box<dyn Iterator<Item = (u64, Result<ImportRow, RowError>)>> = match format {
        ImportFormat::Csv => Box::new(csv_rows(reader)?),
        ImportFormat::JsonLines => Box::new(jsonl_rows(reader)),
    };
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
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// An existing customer whose own opt-out the import must not lift.
#[derive(Queryable)]
struct Consent {
    phone: String,
    opt_in_marketing: bool,
    opt_in_utility: bool,
    opt_change_reason: Option<String>,
}

/// Why `row` may not be written over `current`, if it may not: it would opt the customer
/// back in to something they opted out of themselves (CONTRACT.md: only the customer lifts
/// their own opt-out).
fn lifts_own_opt_out(row: &ImportRow, current: &Consent) -> Option<String> {
    if !warden_rules::keywords::is_customer_opt_out(current.opt_change_reason.as_deref()) {
        return None;
    }
    let mut lifted = Vec::new();
    if row.opt_in_marketing && !current.opt_in_marketing {
        lifted.push("marketing");
    }
    if row.opt_in_utility && !current.opt_in_utility {
        lifted.push("utility");
    }
    if lifted.is_empty() {
        return None;
    }
    Some(format!(
        "customer {} opted out of {} themselves ({}); an import cannot opt them back in, only the customer can (START/UNSTOP); row skipped",
        current.phone,
        lifted.join(" and "),
        current.opt_change_reason.as_deref().unwrap_or_default()
    ))
}

async fn write_batch(
    conn: &mut AsyncPgConnection,
    batch: &mut Vec<(u64, ImportRow)>,
    summary: &mut ImportSummary,
    report: &mut dyn Write,
) -> Result<(), ImportFailure> {
    if batch.is_empty() {
        return Ok(());
    }
    // One INSERT cannot touch a row twice: the last line for a customer wins.
    let mut last: HashMap<&str, (u64, &ImportRow)> = HashMap::with_capacity(batch.len());
    for (line, row) in batch.iter() {
        last.insert(row.phone.digits(), (*line, row));
    }
    let phones: Vec<&str> = last.keys().copied().collect();
    // Read and write under the rows' locks, so a STOP arriving meanwhile is either seen
    // here or applied after the import (never overwritten by it).
    let (inserted, refused) = conn
        .transaction::<_, diesel::result::Error, _>(async |c| {
            let current: Vec<Consent> = customers::table
                .filter(customers::phone.eq_any(&phones))
                .select((
                    customers::phone,
                    customers::opt_in_marketing,
                    customers::opt_in_utility,
                    customers::opt_change_reason,
                ))
                .for_update()
                .load(c)
                .await?;
            let current: HashMap<&str, &Consent> =
                current.iter().map(|k| (k.phone.as_str(), k)).collect();
            let mut refused: Vec<(u64, String)> = Vec::new();
            let mut keep: Vec<&ImportRow> = Vec::with_capacity(last.len());
            for (phone, (line, row)) in &last {
                match current.get(phone).and_then(|k| lifts_own_opt_out(row, k)) {
                    Some(reason) => refused.push((*line, reason)),
                    None => keep.push(row),
                }
            }
            if keep.is_empty() {
                return Ok((Vec::new(), refused));
            }
            let values: Vec<_> = keep
                .iter()
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
                .get_results(c)
                .await?;
            Ok((inserted, refused))
        })
        .await?;
    summary.imported += inserted.len() as u64;
    summary.created += inserted.iter().filter(|new| **new).count() as u64;
    let mut refused = refused;
    refused.sort();
    for (line, reason) in refused {
        summary.skipped += 1;
        summary.kept_opt_outs += 1;
        let _ = writeln!(report, "line {line}: {reason}");
    }
    batch.clear();
    Ok(())
}
