//! warden-dispatcher's integration tests, one binary: an in-process dispatcher (and in `crash`, the
//! built `dispatcher` binary) against real Postgres, Redis and NATS and platform-sim on port 0;
//! `common` holds the harness (warden-bench's `dispatch_bench` compiles it too, so it uses
//! only crates warden-bench depends on, not warden-test-support).

mod common;
mod crash;
mod dispatch;
mod hot_pair;
mod marketing_api;
mod marketing_limit;
mod recheck;
mod senders;
mod sweep;
mod template_components;
