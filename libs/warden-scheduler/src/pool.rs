//! The scheduler's Postgres pool.
//!
//! `warden_store::connect` builds a pool that runs `SELECT 1` on every checkout; the send
//! path checks a connection out twice per message, so on a campaign that is two extra
//! round trips per recipient. The scheduler's pool skips the checkout test: a connection
//! that broke (Postgres restarted) fails the statement that uses it, bb8 drops it
//! (`has_broken`), and the scheduler retries at its next poll — nothing is half-written,
//! every write is one transaction.

use std::time::{Duration, Instant};

use diesel_async::AsyncPgConnection;
use diesel_async::pooled_connection::AsyncDieselConnectionManager;
use diesel_async::pooled_connection::bb8::Pool;
use warden_settings::Database;
use warden_store::PgPool;

/// Build the pool and prove one connection works (retrying for up to `wait`).
pub async fn connect(db: &Database, max_size: u32, wait: Duration) -> anyhow::Result<PgPool> {
    let manager = AsyncDieselConnectionManager::<AsyncPgConnection>::new(db.url());
    let pool = Pool::builder()
        .max_size(max_size)
        .connection_timeout(Duration::from_secs(5))
        .test_on_check_out(false)
        .build(manager)
        .await?;
    let deadline = Instant::now() + wait;
    loop {
        match pool.dedicated_connection().await {
            Ok(_) => return Ok(pool),
            Err(e) if Instant::now() >= deadline => {
                anyhow::bail!("cannot reach Postgres at {}: {e}", db.display_target())
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    }
}
