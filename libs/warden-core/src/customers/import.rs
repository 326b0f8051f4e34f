//! Bulk customer import (`warden-admin customers import`): one batch of parsed rows
//! written with one upsert. A row that would opt a customer back in to what they opted out
//! of themselves (STOP, the platform's preference event) is kept out and reported: only
//! the customer lifts their own opt-out (docs/compliance.md). Tags arrive lower-cased from the
//! parser (`warden_rules::import`).

use std::collections::HashMap;
use std::sync::Arc;

use diesel::prelude::*;
use diesel::upsert::excluded;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures::FutureExt;
use warden_rules::import::ImportRow;
use warden_store::DbError;
use warden_store::schema::customers;
use warden_store::tx::{Abort, transact_on};

use crate::db::infallible;

/// A row kept out because it would lift the customer's own opt-out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptOptOut {
    /// The row's line in the file.
    pub line: u64,
    pub phone: String,
    /// What the row would have opted them back in to: "marketing", "utility".
    pub lifted: Vec<&'static str>,
    /// The customer's own opt-out on record (e.g. "STOP keyword").
    pub opt_out: String,
}

impl std::fmt::Display for KeptOptOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "customer {} opted out of {} themselves ({}); an import cannot opt them back in, only the customer can (START/UNSTOP); row skipped",
            self.phone,
            self.lifted.join(" and "),
            self.opt_out
        )
    }
}

/// What one batch did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BatchOutcome {
    /// Rows written (inserted or updated), one per customer.
    pub imported: u64,
    /// Of `imported`, rows that created a new customer.
    pub created: u64,
    /// Rows kept out, by line.
    pub kept_opt_outs: Vec<KeptOptOut>,
}

/// An existing customer's consent, as the import must respect it.
#[derive(Queryable)]
struct Consent {
    phone: String,
    opt_in_marketing: bool,
    opt_in_utility: bool,
    opt_change_reason: Option<String>,
}

/// Why `row` (at `line`) may not be written over `current`, if it may not.
fn lifts_own_opt_out(line: u64, row: &ImportRow, current: &Consent) -> Option<KeptOptOut> {
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
    Some(KeptOptOut {
        line,
        phone: current.phone.clone(),
        lifted,
        opt_out: current.opt_change_reason.clone().unwrap_or_default(),
    })
}

/// Upsert one batch of rows (`(line, row)`) in one transaction on `conn`: the last line
/// for a customer wins; existing customers are read under their rows' locks, so a STOP
/// arriving meanwhile is either seen here or applied after the import (never overwritten
/// by it). Kept-out rows come back sorted by line.
pub async fn import_batch(
    conn: &mut AsyncPgConnection,
    batch: &[(u64, ImportRow)],
) -> Result<BatchOutcome, DbError> {
    if batch.is_empty() {
        return Ok(BatchOutcome::default());
    }
    // One INSERT cannot touch a row twice: the last line for a customer wins.
    let mut last: HashMap<&str, (u64, &ImportRow)> = HashMap::with_capacity(batch.len());
    for (line, row) in batch {
        last.insert(row.phone.digits(), (*line, row));
    }
    let rows: Arc<Vec<(u64, ImportRow)>> = Arc::new(
        last.into_values()
            .map(|(line, row)| (line, row.clone()))
            .collect(),
    );
    let written = transact_on(conn, "import_customers", move |c| {
        let rows = Arc::clone(&rows);
        async move {
            // A row naming a customer by BSUID lands on that customer (known by phone or
            // not); the last line for a customer still wins.
            let mut by_key: HashMap<String, (u64, ImportRow)> = HashMap::new();
            for (line, row) in rows.iter() {
                let mut row = row.clone();
                row.phone = crate::customers::identity::resolve(c, &row.phone).await?;
                match by_key.get(row.phone.digits()) {
                    Some((seen, _)) if *seen > *line => {}
                    _ => {
                        by_key.insert(row.phone.digits().to_owned(), (*line, row));
                    }
                }
            }
            let rows: Vec<(u64, ImportRow)> = by_key.into_values().collect();
            let phones: Vec<&str> = rows.iter().map(|(_, r)| r.phone.digits()).collect();
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
            let mut kept_out = Vec::new();
            let mut keep: Vec<&ImportRow> = Vec::with_capacity(rows.len());
            for (line, row) in rows.iter() {
                match current
                    .get(row.phone.digits())
                    .and_then(|k| lifts_own_opt_out(*line, row, k))
                {
                    Some(kept) => kept_out.push(kept),
                    None => keep.push(row),
                }
            }
            if keep.is_empty() {
                return Ok::<_, Abort<std::convert::Infallible>>((Vec::new(), kept_out));
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
                        customers::bsuid.eq(r.phone.bsuid()),
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
            Ok((inserted, kept_out))
        }
        .boxed()
    })
    .await;
    let (inserted, mut kept_opt_outs) = infallible(written)?;
    kept_opt_outs.sort_by_key(|k| k.line);
    Ok(BatchOutcome {
        imported: inserted.len() as u64,
        created: inserted.iter().filter(|new| **new).count() as u64,
        kept_opt_outs,
    })
}
