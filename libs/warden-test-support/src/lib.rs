//! What every test crate shares, so a test says what it checks and nothing else:
//! - [`TestDatabase`]: a fresh Postgres database per test, dropped afterwards;
//! - [`wait`]: wait for a condition with a deadline (never sleep to prove something);
//! - [`procs`]: the workspace's built binaries as processes, ports, `/health`, SIGTERM;
//! - [`redis`]: a private `redis-server` a test may stop and restart.
//!
//! A test that needs a service fails loudly, naming the set-up step, when it is missing.

pub mod procs;
pub mod redis;
pub mod wait;

pub use procs::{binary, free_port, repo_path, workspace_root};
pub use warden_store::testing::TestDatabase;

/// A pool of `size` connections on `db`, migrated and seeded (as a process starts).
pub async fn migrated_pool(db: &TestDatabase, size: u32) -> warden_store::PgPool {
    warden_store::prepare(&db.settings.database, vec![])
        .await
        .expect("migrate the test database");
    warden_store::connect(
        &db.settings.database,
        size,
        std::time::Duration::from_secs(5),
    )
    .await
    .expect("connect to the test database")
}
