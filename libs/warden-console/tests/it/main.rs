//! warden-console's integration tests, one binary: the real console on 127.0.0.1:0 over a
//! fresh database per test; `common` holds the harness (a logged-in HTTP client without
//! a browser); `browser` drives headless Chromium through every page.

mod access;
mod browser;
mod common;
mod live;
mod pages;
