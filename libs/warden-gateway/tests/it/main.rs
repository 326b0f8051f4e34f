//! warden-gateway's integration tests, one binary: the gateway served in process to an rmcp
//! client (`common`: a database, a stream and optionally platform-sim per test;
//! `common::stack`: the whole pipeline in process), the built `mcp-gateway` over Streamable
//! HTTP (`http_support`), and the official Python MCP SDK and conformance suite against the
//! built binary (`make test` installs them and builds the binaries first). Support files stay
//! beside this folder: `tests/python/`, `tests/conformance/`, `tests/fixtures/`.

mod agent_safety;
mod agents;
mod calls;
mod campaign_control;
mod catalogue;
mod commerce;
mod common;
mod compliance_holes;
mod compliance_paths;
mod flows;
mod holders;
mod http_support;
mod http_transport;
mod identifiers;
mod identity;
mod isolation;
mod listen;
mod live_updates;
mod marketing_api;
mod mcp_conformance;
mod platform;
mod privacy;
mod python_http;
mod python_sdk;
mod reading;
mod rich;
mod scheduling;
mod senders;
mod senders_platform;
mod sending;
mod start_elsewhere;
mod template_components;
mod template_formats;
