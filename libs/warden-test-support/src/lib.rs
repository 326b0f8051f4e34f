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
