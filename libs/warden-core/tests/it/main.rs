//! warden-core's integration tests, one binary: the use cases against real Postgres, Redis and
//! NATS (a database and a stream per test), every module on the one harness in `common`.

mod agent_safety;
mod batch;
mod common;
mod number_change;
mod pool_use;
mod portfolio_limit;
mod read_models;
mod send_path;
mod senders;
mod template_status;
