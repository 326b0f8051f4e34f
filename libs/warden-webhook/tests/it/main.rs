//! warden-webhook's integration tests, one binary: the real webhook server on port 0 over a fresh
//! database per test (some with NATS, Redis, platform-sim and a dispatcher in process);
//! `common` holds the harness and the platform's payload shapes; recorded payloads are in
//! `tests/fixtures/`.

mod bsuid;
mod common;
mod core_batch;
mod events;
mod flow_replies;
mod fuzz;
mod http;
mod messaging_limit;
mod platform_limits;
mod pricing;
mod retry_by_webhook;
mod senders;
mod shared_numbers;
mod template_order;
mod window_rules;
