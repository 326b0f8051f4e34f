//! The Postgres connection pool (diesel-async over bb8).

use std::time::{Duration, Instant};

use diesel_async::AsyncPgConnection;
use diesel_async::pooled_connection::AsyncDieselConnectionManager;
use diesel_async::pooled_connection::bb8::{Pool, PooledConnection};
use warden_settings::Database;

pub type PgPool = Pool<AsyncPgConnection>;
pub type PgConn<'a> = PooledConnection<'a, AsyncPgConnection>;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot reach Postgres at {target}: {reason}")]
    Unreachable { target: String, reason: String },
    #[error("database start-up failed: {0}")]
    Startup(String),
    #[error(transparent)]
    Query(#[from] diesel::result::Error),
    #[error("no database connection available: {0}")]
    Pool(String),
}

impl<E: std::error::Error + 'static> From<bb8::RunError<E>> for StoreError {
    fn from(err: bb8::RunError<E>) -> Self {
        StoreError::Pool(err.to_string())
    }
}

/// The connection manager every Warden pool uses. A checkout proves the connection is
/// open without a round trip: diesel-async's default runs `SELECT 1` on every checkout,
/// which doubled the statements of a short use case (a compliance check took five round
/// trips for three queries). A connection whose socket Postgres closed (a restart) is
/// refused at checkout and replaced; one that dies mid-statement fails that statement,
/// which every caller already handles (nothing is half-written: each write is one
/// transaction), and is dropped on return.
pub fn manager(url: impl Into<String>) -> AsyncDieselConnectionManager<AsyncPgConnection> {
    use diesel_async::pooled_connection::{ManagerConfig, PoolableConnection, RecyclingMethod};
    let mut config = ManagerConfig::<AsyncPgConnection>::default();
    config.recycling_method = RecyclingMethod::CustomFunction(Box::new(|conn| {
        let closed = conn.is_broken();
        Box::pin(async move {
            if closed {
                Err(diesel::result::Error::BrokenTransactionManager)
            } else {
                Ok(())
            }
        })
    }));
    AsyncDieselConnectionManager::new_with_config(url, config)
}

/// Build the pool and prove one connection works, retrying for up to `wait` so a process
/// that starts just before Postgres does not give up at once.
pub async fn connect(db: &Database, max_size: u32, wait: Duration) -> Result<PgPool, StoreError> {
    let manager = manager(db.url());
    let pool = Pool::builder()
        .max_size(max_size)
        .connection_timeout(Duration::from_secs(5))
        .build(manager)
        .await
        .map_err(|e| StoreError::Unreachable {
            target: db.display_target(),
            reason: e.to_string(),
        })?;
    let deadline = Instant::now() + wait;
    loop {
        match pool.dedicated_connection().await {
            Ok(_) => return Ok(pool),
            Err(err) if Instant::now() >= deadline => {
                // The pool's error hides the cause; a plain TCP probe names it when the
                // server is simply not there.
                let reason = match tokio::net::TcpStream::connect((db.host.as_str(), db.port)).await
                {
                    Err(io) => format!("{}: {io}", one_line(&error_chain(&err))),
                    Ok(_) => one_line(&error_chain(&err)),
                };
                return Err(StoreError::Unreachable {
                    target: db.display_target(),
                    reason,
                });
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    }
}

/// An error and its sources, `a: b: c` (drivers often hide the useful part in a source).
pub(crate) fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(inner) = source {
        let next = inner.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = inner.source();
    }
    text
}

/// Collapse a multi-line driver error into one line for the operator.
pub(crate) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `SELECT 1`: proves the connection is alive (health checks).
pub async fn ping(conn: &mut diesel_async::AsyncPgConnection) -> Result<(), diesel::result::Error> {
    use diesel_async::RunQueryDsl;
    diesel::sql_query("SELECT 1")
        .execute(conn)
        .await
        .map(|_| ())
}
