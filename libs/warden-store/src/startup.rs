//! Start-up: embedded migrations and seeds, run under a Postgres advisory lock so any
//! number of processes can start at once (diesel_migrations itself takes no lock).

use diesel::prelude::*;
use diesel_async::AsyncPgConnection;
use diesel_async::async_connection_wrapper::AsyncConnectionWrapper;
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};
use warden_rules::pricing::RateCard;
use warden_settings::Database;

use crate::pool::{StoreError, error_chain, one_line};
use crate::seeds::{self, PolicySeed};

pub const MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations");

/// Arbitrary constant identifying Warden's start-up lock ("WARDEN" in ASCII).
const STARTUP_LOCK_KEY: i64 = 0x5741_5244_454E;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SeedReport {
    pub migrations_applied: usize,
    pub error_codes: usize,
    pub pricing_rows: usize,
    pub policies: usize,
}

type SyncPg = AsyncConnectionWrapper<AsyncPgConnection>;

/// Migrate and seed the database with the built-in rate card. Safe to call from several
/// processes at once.
pub async fn prepare(db: &Database, policies: Vec<PolicySeed>) -> Result<SeedReport, StoreError> {
    prepare_with_card(db, policies, warden_rules::pricing::builtin()).await
}

/// [`prepare`] with the process's rate card (PRICING_PATH, read by the caller).
pub async fn prepare_with_card(
    db: &Database,
    policies: Vec<PolicySeed>,
    card: RateCard,
) -> Result<SeedReport, StoreError> {
    let url = db.url();
    let target = db.display_target();
    // The migration harness blocks, and panics on a current-thread runtime: run it on a
    // blocking thread of its own.
    tokio::task::spawn_blocking(move || prepare_blocking(&url, &target, &policies, &card))
        .await
        .map_err(|e| StoreError::Startup(format!("start-up task failed: {e}")))?
}

fn prepare_blocking(
    url: &str,
    target: &str,
    policies: &[PolicySeed],
    card: &RateCard,
) -> Result<SeedReport, StoreError> {
    let mut conn = <SyncPg as Connection>::establish(url).map_err(|e| StoreError::Unreachable {
        target: target.to_string(),
        reason: one_line(&error_chain(&e)),
    })?;
    diesel::sql_query(format!("SELECT pg_advisory_lock({STARTUP_LOCK_KEY})")).execute(&mut conn)?;
    let outcome = migrate_and_seed(&mut conn, policies, card);
    let unlock = diesel::sql_query(format!("SELECT pg_advisory_unlock({STARTUP_LOCK_KEY})"))
        .execute(&mut conn);
    let report = outcome?;
    unlock?;
    Ok(report)
}

fn migrate_and_seed(
    conn: &mut SyncPg,
    policies: &[PolicySeed],
    card: &RateCard,
) -> Result<SeedReport, StoreError> {
    let applied = conn
        .run_pending_migrations(MIGRATIONS)
        .map_err(|e| {
            StoreError::Startup(format!("migrations failed: {}", one_line(&e.to_string())))
        })?
        .len();
    conn.transaction(|conn| {
        Ok(SeedReport {
            migrations_applied: applied,
            error_codes: seeds::seed_errors(conn)?,
            pricing_rows: seeds::seed_rate_card(conn, card)?,
            policies: seeds::seed_policies(conn, policies)?,
        })
    })
    .map_err(StoreError::Query)
}
