//! The one way a use case writes: [`transact`] runs a closure in a transaction and, when
//! Postgres aborts it with a serialization failure (40001) or a deadlock (40P01), rolls
//! back and runs it again after a jittered back-off, a bounded number of times. Only then
//! does the conflict surface, as [`crate::error::DbError::Busy`] with a `retry_after_secs` hint; the
//! transaction was rolled back, so nothing is ever half-written.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use diesel::result::Error as DieselError;
use diesel_async::{AsyncConnection, AsyncPgConnection};
use futures::future::BoxFuture;
use rand::Rng;

use crate::PgPool;
use crate::error::{DbError, RETRY_AFTER_SECS, is_transient};

/// Attempts in all (the first plus retries) before a conflict is reported.
pub const MAX_ATTEMPTS: u32 = 8;
/// First back-off; doubles each retry (jittered between half and all of it).
const BASE_BACKOFF: Duration = Duration::from_millis(10);
/// The longest single back-off.
const MAX_BACKOFF: Duration = Duration::from_millis(500);

static RETRIED: AtomicU64 = AtomicU64::new(0);

/// Transient conflicts retried by this process so far (tests and drills report it).
pub fn retried_total() -> u64 {
    RETRIED.load(Ordering::Relaxed)
}

/// Why the closure stopped: a database error (maybe transient) or the use case's own
/// refusal (never retried). `?` on a diesel call gives `Db`.
#[derive(Debug)]
pub enum Abort<E> {
    Db(DieselError),
    App(E),
}

impl<E> From<DieselError> for Abort<E> {
    fn from(e: DieselError) -> Self {
        Abort::Db(e)
    }
}

/// What [`transact`] returns when the closure did not commit (always rolled back).
#[derive(Debug, thiserror::Error)]
pub enum TxError<E> {
    /// The use case refused (its own error).
    #[error("{0}")]
    App(E),
    /// The database failed, classified once ([`DbError`]); a persisting conflict is
    /// [`DbError::Busy`].
    #[error(transparent)]
    Db(DbError),
}

fn backoff(retry: u32) -> Duration {
    let full = BASE_BACKOFF
        .saturating_mul(1 << retry.min(10))
        .min(MAX_BACKOFF);
    let ms = full.as_millis() as u64;
    Duration::from_millis(rand::rng().random_range(ms / 2..=ms.max(1)))
}

/// Run `f` in a transaction on a connection from `pool`, retrying transient conflicts
/// (see the module doc). `what` names the use case in logs.
pub async fn transact<R, E, F>(pool: &PgPool, what: &str, f: F) -> Result<R, TxError<E>>
where
    F: for<'r> Fn(&'r mut AsyncPgConnection) -> BoxFuture<'r, Result<R, Abort<E>>> + Send + Sync,
    R: Send,
    E: Send,
{
    let mut conn = pool
        .get()
        .await
        .map_err(|e| TxError::Db(DbError::from(e)))?;
    run(&mut conn, what, &f).await
}

/// [`transact`] on a connection the caller holds (not inside another transaction).
pub async fn transact_on<R, E, F>(
    conn: &mut AsyncPgConnection,
    what: &str,
    f: F,
) -> Result<R, TxError<E>>
where
    F: for<'r> Fn(&'r mut AsyncPgConnection) -> BoxFuture<'r, Result<R, Abort<E>>> + Send + Sync,
    R: Send,
    E: Send,
{
    run(conn, what, &f).await
}

async fn run<R, E, F>(conn: &mut AsyncPgConnection, what: &str, f: &F) -> Result<R, TxError<E>>
where
    F: for<'r> Fn(&'r mut AsyncPgConnection) -> BoxFuture<'r, Result<R, Abort<E>>> + Send + Sync,
    R: Send,
    E: Send,
{
    let mut attempt = 1;
    loop {
        match conn
            .transaction::<R, Abort<E>, _>(async |c| f(c).await)
            .await
        {
            Ok(r) => return Ok(r),
            Err(Abort::App(e)) => return Err(TxError::App(e)),
            Err(Abort::Db(e)) if is_transient(&e) && attempt < MAX_ATTEMPTS => {
                RETRIED.fetch_add(1, Ordering::Relaxed);
                let wait = backoff(attempt - 1);
                tracing::info!(use_case = what, attempt, error = %e, wait_ms = wait.as_millis() as u64,
                    "transient database conflict; retrying");
                tokio::time::sleep(wait).await;
                attempt += 1;
            }
            Err(Abort::Db(e)) if is_transient(&e) => {
                tracing::warn!(use_case = what, attempts = attempt, error = %e,
                    "database conflict persisted; reporting it");
                return Err(TxError::Db(DbError::Busy {
                    attempts: attempt,
                    retry_after_secs: RETRY_AFTER_SECS,
                    last: e.to_string(),
                }));
            }
            Err(Abort::Db(e)) => return Err(TxError::Db(DbError::from(e))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_is_bounded_and_jittered() {
        for retry in 0..20 {
            let d = backoff(retry);
            assert!(d <= MAX_BACKOFF, "{retry}: {d:?}");
            assert!(d >= BASE_BACKOFF / 2, "{retry}: {d:?}");
        }
    }
}
