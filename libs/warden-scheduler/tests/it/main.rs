//! warden-scheduler's integration tests, one binary: the scheduler in process over a fresh database
//! per test, real Redis and NATS (a stream of its own); `common` holds the harness, which writes
//! rows the way the gateway would.

mod campaign_control;
mod campaigns;
mod common;
mod content_decides;
mod holders;
mod platform_limits;
mod relay;
mod retention;
mod scheduled;
