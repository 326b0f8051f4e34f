//! warden-store's integration tests, one binary: a module per topic, against a real Postgres
//! (`make test` starts it; `scripts/services.sh` alone does too).

mod pool;
mod startup;
