//! What every test crate shares, so a test says what it checks and nothing else:
//! - [`migrated_pool`]: a migrated, seeded pool on a `warden_store::testing::TestDatabase`
//!   (a fresh Postgres database per test, dropped afterwards; every test takes it from there);
//! - [`wait`]: wait for a condition with a deadline (never sleep to prove something);
//! - [`procs`]: the workspace's built binaries as processes, ports, `/health`, SIGTERM;
//! - [`redis`]: a private `redis-server` a test may stop and restart;
//! - [`platform`]: the platform account (number, WABA, token, secrets) sim and settings share;
//! - [`POLICIES`] / [`policies_path`]: the policy file the tests run under;
//! - [`rule_table`]: the rule table by hand, the oracle of the compliance property tests.
//!
//! A test that needs a service fails loudly, naming the set-up step, when it is missing.

pub mod platform;
pub mod procs;
pub mod redis;
pub mod rule_table;
pub mod wait;

pub use procs::{binary, free_port, repo_path, workspace_root};
use warden_store::testing::TestDatabase;

/// The tests' policy file (`policies/tests.yaml` of this crate): a marketing cap of 2 a day,
/// `vip` excluded from marketing, no marketing to +1, `blocked` excluded from everything.
pub const POLICIES: &str = include_str!("../policies/tests.yaml");

/// Where [`POLICIES`] is, for settings and processes that read a file (`POLICIES_PATH`).
pub fn policies_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("policies/tests.yaml")
}

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
