//! warden-ratelimit's integration tests, one binary: a module per topic, against a real Redis
//! (`make test` starts it; `scripts/services.sh` alone does too).

mod bucket;
