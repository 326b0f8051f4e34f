//! warden-sim's integration tests, one binary: platform-sim on port 0 and a webhook receiver per
//! test, in process (no services needed); `common` holds the harness.

mod client;
mod commerce;
mod common;
mod media;
mod retry_stats;
mod senders;
mod sim;
mod templates;
mod webhooks;
