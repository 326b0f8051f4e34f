//! No library code: `tests/it/trace.rs` starts the built binaries (platform-sim, webhook,
//! dispatcher, mcp-gateway) with `OTEL_EXPORTER_OTLP_ENDPOINT` pointing at a small OTLP/HTTP
//! receiver inside the test, sends one template message through the gateway, and checks
//! that the gateway's send, the dispatcher's platform call and the webhook's status update
//! land in one trace.
