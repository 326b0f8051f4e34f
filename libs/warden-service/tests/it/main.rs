//! warden-service's integration tests, one binary: the built binaries as processes against a real
//! Postgres (`make test` starts the services and runs `cargo build --bins` first).

mod binaries;
