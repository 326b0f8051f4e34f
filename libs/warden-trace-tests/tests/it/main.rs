//! warden-trace-tests' test, one binary: the built binaries (mcp-gateway, dispatcher, webhook,
//! platform-sim) exporting OTLP to a receiver here, against real Postgres and NATS (`make test`
//! starts the services and runs `cargo build --bins` first).

mod trace;
